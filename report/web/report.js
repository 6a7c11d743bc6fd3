// Draws autotune runs (report/report_data.hpp's documents) with ECharts: the
// convergence, parameter importance and slices, the baseline's and the best
// trial's engine timelines, and the decision chain. In a served page
// (`autotune serve`) it asks the server for new trials every second and adds
// them without a reload.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("autotune-data").textContent);
  var runs = data.runs;
  var charts = {};        // name -> echarts instance
  var pointCounts = {};   // chart name -> points drawn (what the browser tests compare)
  var palette = ["#1a5fb4", "#e66100", "#26a269", "#9141ac", "#c01c28", "#865e3c", "#0e7c86", "#a51d2d",
                 "#613583", "#3d3846", "#b5835a", "#2ec27e"];
  var statusSymbol = { ok: "circle", invalid: "triangle", wrong_answer: "diamond", failed: "rect", timeout: "pin" };
  var evidenceChars = 600;  // a decision's evidence shown in full up to this length, else a preview
  window.__autotuneCharts = charts;  // for the browser tests

  // A variant's colour, the same on every chart of a run: its index in run.variants (first appearance).
  function variantColour(variantIndex, runIndex) { return palette[(variantIndex + runIndex * 3) % palette.length]; }

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }
  // Text for a tooltip, which ECharts reads as HTML: every stored string (a kernel, variant or parameter
  // name, a value, an error) may hold markup. ([<]: this script is embedded where "<" + "/" would end it.)
  function esc(text) {
    return String(text).replace(/&/g, "&amp;").replace(/[<]/g, "&lt;").replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;").replace(/'/g, "&#39;");
  }
  function seconds(s) {
    if (s === null || s === undefined) return "-";
    if (s >= 1) return s.toPrecision(4) + " s";
    if (s >= 1e-3) return (s * 1e3).toPrecision(4) + " ms";
    return (s * 1e6).toPrecision(4) + " us";
  }
  function params(p) {
    if (!p || typeof p !== "object") return "";
    return Object.keys(p).filter(function (k) { return k !== "_"; }).map(function (k) { return k + "=" + p[k]; }).join(" ");
  }
  function fact(label, value) { return el("div", {}, [el("b", { text: label }), el("span", { text: value })]); }
  function chart(name, node) {
    var c = echarts.init(node, null, { renderer: "canvas" });
    charts[name] = c;
    window.addEventListener("resize", function () { c.resize(); });
    return c;
  }

  // " [low, high]": a noisy measurement's interval of its median.
  function withInterval(m) { return m.interval ? " [" + seconds(m.interval[0]) + ", " + seconds(m.interval[1]) + "]" : ""; }

  // ---- convergence: one chart for every run shown, points coloured by variant
  function convergenceSeries(run, runIndex, many) {
    var measured = run.points.filter(function (p) { return p.latency_s !== null; });
    var top = measured.reduce(function (m, p) { return Math.max(m, p.latency_s); }, run.baseline ? run.baseline.latency_s : 0);
    var failY = (top || 1) * 1.6;   // unmeasured trials sit on a band above the highest latency
    var series = [];
    run.variants.forEach(function (variant, vi) {
      var pts = run.points.filter(function (p) { return p.variant === vi; }).map(function (p) {
        return { value: [p.n, p.latency_s !== null ? p.latency_s : failY], trial: p.trial, status: p.status,
                 params: p.params, error: p.error, interval: p.interval, symbol: statusSymbol[p.status] || "circle",
                 itemStyle: p.status === "ok" ? undefined : { color: "#b3261e", opacity: 0.8 } };
      });
      series.push({ name: (many ? "run " + run.id + " " : "") + variant, type: "scatter", symbolSize: 7,
                    data: pts, itemStyle: { color: variantColour(vi, runIndex), opacity: 0.75 },
                    runId: run.id, kind: "points" });
    });
    // A noisy target's trials: the interval of each median as a vertical bar behind its point.
    var bars = run.points.filter(function (p) { return p.interval && p.latency_s !== null; })
                         .map(function (p) { return [p.n, p.interval[0], p.interval[1]]; });
    if (bars.length) {
      series.push({ name: (many ? "run " + run.id + " " : "") + "interval of the median", type: "custom", silent: true,
                    data: bars, encode: { x: 0, y: [1, 2] }, z: 1, kind: "intervals",
                    itemStyle: { color: "#6b7280" },
                    renderItem: function (params, api) {
                      var low = api.coord([api.value(0), api.value(1)]), high = api.coord([api.value(0), api.value(2)]);
                      return { type: "group", children: [
                        { type: "line", shape: { x1: low[0], y1: low[1], x2: high[0], y2: high[1] },
                          style: { stroke: "#6b7280", lineWidth: 1.5 } },
                        { type: "line", shape: { x1: low[0] - 3, y1: low[1], x2: low[0] + 3, y2: low[1] },
                          style: { stroke: "#6b7280", lineWidth: 1.5 } },
                        { type: "line", shape: { x1: high[0] - 3, y1: high[1], x2: high[0] + 3, y2: high[1] },
                          style: { stroke: "#6b7280", lineWidth: 1.5 } }] };
                    } });
    }
    var line = run.best_so_far.map(function (b) { return [b[0], b[1]]; });
    if (line.length) line.push([run.evaluations, line[line.length - 1][1]]);
    var marks = [];
    if (run.baseline && run.baseline.latency_s) marks.push({ yAxis: run.baseline.latency_s, name: "baseline" });
    if (run.goal_latency_s) marks.push({ yAxis: run.goal_latency_s, name: "goal" });
    series.push({ name: (many ? "run " + run.id + " " : "") + "best so far", type: "line", step: "end", data: line,
                  showSymbol: false, lineStyle: { width: 2, color: many ? variantColour(0, runIndex) : "#1d232a" },
                  markLine: marks.length ? { symbol: "none", label: { formatter: "{b}" }, lineStyle: { type: "dashed" },
                                              data: marks } : undefined,
                  kind: "best" });
    return series;
  }
  function drawConvergence(node, shown) {
    var c = chart("convergence", node);
    var series = [];
    shown.forEach(function (run, i) { series = series.concat(convergenceSeries(run, i, shown.length > 1)); });
    c.setOption({
      animation: false,
      tooltip: { trigger: "item", formatter: function (p) {
        var d = p.data || {};
        if (d.trial === undefined) return esc(p.seriesName);
        return "trial " + esc(d.trial) + " (" + esc(p.seriesName) + ")<br>" + esc(d.status === "ok" ? seconds(d.value[1]) : d.status) +
               (d.interval ? esc(" (median; interval " + seconds(d.interval[0]) + " to " + seconds(d.interval[1]) + ")") : "") +
               "<br>" + esc(params(d.params)) + (d.error ? "<br>" + esc(d.error) : "");
      } },
      legend: { type: "scroll", top: 0 },
      grid: { left: 84, right: 60, top: 40, bottom: 50 },
      xAxis: { type: "value", name: "evaluations", nameLocation: "middle", nameGap: 28, minInterval: 1 },
      yAxis: { type: "log", name: "latency", axisLabel: { formatter: function (v) { return seconds(v); } },
               min: function (v) { return v.min * 0.85; }, max: function (v) { return v.max * 1.15; } },
      dataZoom: [{ type: "inside" }, { type: "slider", height: 16, bottom: 6 }],
      series: series
    });
    c.on("click", function (p) { if (p.data && p.data.trial !== undefined) showTrial(p.data.trial); });
    countPoints();
  }
  function countPoints() {
    if (!charts.convergence) return publish();
    var n = 0;
    (charts.convergence.getOption().series || []).forEach(function (s) { if (s.kind === "points") n += s.data.length; });
    pointCounts.convergence = n;
    publish();
  }
  function showTrial(trialId) {
    var link = document.getElementById("trial-" + trialId);
    if (link) { link.scrollIntoView({ block: "center" }); link.style.background = "#fff3bf"; }
  }
  function highlightTrial(trialId) {
    var option = charts.convergence.getOption();
    option.series.forEach(function (s, si) {
      if (s.kind !== "points") return;
      s.data.forEach(function (d, di) {
        if (d.trial === trialId) {
          charts.convergence.dispatchAction({ type: "showTip", seriesIndex: si, dataIndex: di });
          charts.convergence.dispatchAction({ type: "highlight", seriesIndex: si, dataIndex: di });
        }
      });
    });
    document.getElementById("convergence").scrollIntoView({ block: "center" });
  }

  // ---- parameter importance and slices (of the first run)
  // ---- the screen: simulated against measured latency of every device trial (log axes)
  function drawScreen(run, node, runIndex) {
    var c = chart("screen-" + run.id, node);
    var names = [];
    run.screen.forEach(function (p) { if (names.indexOf(p[3]) < 0) names.push(p[3]); });
    var all = run.screen.reduce(function (v, p) { return v.concat([p[1], p[2]]); }, []);
    var lo = Math.min.apply(null, all) * 0.9, hi = Math.max.apply(null, all) * 1.1;
    var series = names.map(function (name) {
      var vi = run.variants.indexOf(name);
      return { type: "scatter", name: name, symbolSize: 7, itemStyle: { color: variantColour(vi < 0 ? 0 : vi, runIndex) },
               data: run.screen.filter(function (p) { return p[3] === name; }).map(function (p) { return { value: [p[1], p[2]], trial: p[0] }; }) };
    });
    series.push({ type: "line", name: "simulated = measured", data: [[lo, lo], [hi, hi]], symbol: "none",
                  lineStyle: { type: "dashed", color: "#888" } });
    c.setOption({
      legend: { top: 0 },
      tooltip: { trigger: "item", formatter: function (p) {
        return p.data && p.data.trial !== undefined ? "trial " + p.data.trial + "<br>simulated " + seconds(p.data.value[0]) + "<br>measured " + seconds(p.data.value[1]) : ""; } },
      xAxis: { type: "log", name: "simulated", min: lo, max: hi, axisLabel: { formatter: function (v) { return seconds(v); } } },
      yAxis: { type: "log", name: "measured", min: lo, max: hi, axisLabel: { formatter: function (v) { return seconds(v); } } },
      series: series
    });
    pointCounts["screen-" + run.id] = run.screen.length;
  }

  function drawImportance(run, node) {
    var items = (run.importance && run.importance.parameters) || [];
    var c = chart("importance-" + run.id, node);
    c.setOption({
      animation: false, grid: { left: 140, right: 30, top: 20, bottom: 44 },
      tooltip: { formatter: function (p) { var it = items[items.length - 1 - p.dataIndex];
        return esc(it.name) + " alone explains " + (100 * it.fraction).toFixed(1) + "% of the variance of log latency (" + esc(it.levels) +
               " values, " + esc(it.trials) + " trials)"; } },
      xAxis: { type: "value", max: 1, name: "share of the variance explained alone", nameLocation: "middle", nameGap: 22,
               axisLabel: { formatter: function (v) { return (100 * v).toFixed(0) + "%"; } } },
      yAxis: { type: "category", data: items.map(function (i) { return i.name; }).reverse() },
      series: [{ type: "bar", data: items.map(function (i) { return i.fraction; }).reverse(), itemStyle: { color: "#1a5fb4" } }]
    });
    pointCounts["importance-" + run.id] = items.length;
  }
  function drawSlices(run, container, runIndex) {
    var names = ((run.importance && run.importance.parameters) || []).map(function (i) { return i.name; })
      .filter(function (n) { return n !== "variant"; }).slice(0, 6);
    names.forEach(function (name) {
      var node = el("div", { class: "chart small", id: "slice-" + run.id + "-" + name });
      container.appendChild(node);
      var pts = run.points.filter(function (p) { return p.latency_s !== null && p.params && p.params[name] !== undefined; });
      // Few values (flags, small sets): one column each; many positive numbers: a log axis.
      var distinct = {};
      pts.forEach(function (p) { distinct[JSON.stringify(p.params[name])] = p.params[name]; });
      var levels = Object.keys(distinct).map(function (k) { return distinct[k]; });
      var numeric = levels.length > 12 && levels.every(function (v) { return typeof v === "number" && v > 0; });
      if (!numeric) levels.sort(function (a, b) { return typeof a === "number" && typeof b === "number" ? a - b : String(a) < String(b) ? -1 : 1; });
      // One series per variant that has the parameter, in the variant's colour on the convergence chart.
      var series = [];
      run.variants.forEach(function (variant, vi) {
        var mine = pts.filter(function (p) { return p.variant === vi; });
        if (!mine.length) return;
        series.push({ name: variant, type: "scatter", symbolSize: 6, itemStyle: { opacity: 0.7, color: variantColour(vi, runIndex) },
                      data: mine.map(function (p) { return { value: [numeric ? p.params[name] : String(p.params[name]), p.latency_s], trial: p.trial }; }) });
      });
      var c = chart("slice-" + run.id + "-" + name, node);
      c.setOption({
        animation: false, title: { text: name, left: "center", textStyle: { fontSize: 13 } },
        grid: { left: 84, right: 20, top: 34, bottom: 30 },
        tooltip: { formatter: function (p) { return "trial " + esc(p.data.trial) + " (" + esc(p.seriesName) + ")<br>" + esc(name + "=" + p.data.value[0]) + "<br>" + seconds(p.data.value[1]); } },
        xAxis: numeric ? { type: "log", logBase: 2, scale: true } : { type: "category", data: levels.map(String) },
        yAxis: { type: "log", axisLabel: { formatter: function (v) { return seconds(v); } },
                 min: function (v) { return v.min * 0.85; }, max: function (v) { return v.max * 1.15; } },
        series: series
      });
      pointCounts["slice-" + run.id + "-" + name] = pts.length;
    });
  }

  // ---- engine timelines (Gantt), the critical path's heaviest sites marked
  function drawTimeline(name, timeline, node, figuresNode, makespan) {
    if (!timeline || timeline.unavailable) {
      node.appendChild(el("p", { class: "note", text: timeline ? timeline.unavailable : "no trial" }));
      node.style.height = "auto";
      return;
    }
    var rows = timeline.rows;
    var c = chart(name, node);
    c.setOption({
      animation: false,
      title: { text: "trial " + timeline.trial + " " + timeline.variant, left: "center", textStyle: { fontSize: 13 } },
      tooltip: { formatter: function (p) { return esc(rows[p.value[0]]) + "<br>" + p.value[1].toFixed(2) + " - " + p.value[2].toFixed(2) + " us" + (p.value[3] ? "<br>critical-path site" : ""); } },
      grid: { left: 100, right: 20, top: 34, bottom: 62 },
      // Bars are in microseconds from the kernel's start; the unit is on every tick, and the axis is named
      // above the zoom slider, not behind it.
      xAxis: { type: "value", min: 0, max: makespan, name: "time since the kernel's start", nameLocation: "middle", nameGap: 22,
               axisLabel: { formatter: function (v) { return v + " us"; } } },
      yAxis: { type: "category", data: rows, inverse: true },
      dataZoom: [{ type: "inside", filterMode: "weakFilter" }, { type: "slider", height: 14, bottom: 4, filterMode: "weakFilter" }],
      series: [{
        type: "custom", encode: { x: [1, 2], y: 0 }, data: timeline.bars,
        renderItem: function (params, api) {
          var row = api.value(0), start = api.coord([api.value(1), row]), end = api.coord([api.value(2), row]);
          var height = api.size([0, 1])[1] * 0.7;
          var rect = echarts.graphic.clipRectByRect({ x: start[0], y: start[1] - height / 2, width: Math.max(end[0] - start[0], 0.5), height: height },
            { x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height });
          return rect && { type: "rect", shape: rect, style: { fill: api.value(3) ? "#c01c28" : (row < 4 ? "#1a5fb4" : "#26a269") } };
        }
      }]
    });
    pointCounts[name] = timeline.bars.length;
    var f = timeline.figures || {};
    var table = el("table", {}, [
      row("latency", seconds(f.latency_s)), row("MFU", pct(f.mfu_estimated_percent)),
      row("DMA efficiency", pct(f.dma_average_efficiency_percent)), row("DMA/compute overlap", pct(f.dma_compute_overlap_percent)),
      row("SBUF peak", f.sbuf_peak_bytes_per_partition !== undefined ? (f.sbuf_peak_bytes_per_partition / 1024).toFixed(1) + " KiB of " +
          (f.sbuf_usable_bytes_per_partition / 1024).toFixed(0) + " KiB per partition" : "-"),
      row("instructions", String(timeline.instructions) + (timeline.coalesced ? " (bars closer than a pixel merged)" : ""))
    ]);
    figuresNode.appendChild(table);
  }
  function row(k, v) { return el("tr", {}, [el("th", { text: k }), el("td", { text: v })]); }
  function pct(v) { return v === undefined ? "-" : v.toFixed(1) + " %"; }

  // ---- the decision chain
  function drawDecisions(run, container) {
    var byIteration = {};
    (run.decisions || []).forEach(function (d) { (byIteration[d.iteration] = byIteration[d.iteration] || []).push(d); });
    Object.keys(byIteration).sort(function (a, b) { return a - b; }).forEach(function (it) {
      var box = el("div", { class: "iteration" }, [el("h3", { text: it === "0" ? "iteration 0: the baseline" : "iteration " + it })]);
      byIteration[it].forEach(function (d) {
        var node = el("div", { class: "decision" }, [
          el("div", { class: "what", text: "#" + d.seq + " " + d.skill + " / " + d.action + " (" + d.proposer + ")" }),
          d.rationale ? el("div", { text: d.rationale }) : null,
          d.outcome ? el("div", { class: "muted", text: "outcome: " + d.outcome }) : null,
          d.evidence ? evidence(d.evidence) : null
        ]);
        if (d.trials && d.trials.length) {
          var links = el("div", {}, [el("span", { class: "muted", text: "tried: " })]);
          d.trials.forEach(function (t) {
            var a = el("a", { class: "trial", id: "trial-" + t, text: "trial " + t });
            a.addEventListener("click", function () { highlightTrial(t); });
            links.appendChild(a);
          });
          if (d.trials_proposed > d.trials.length) links.appendChild(el("span", { class: "muted", text: "and " + (d.trials_proposed - d.trials.length) + " more" }));
          node.appendChild(links);
        }
        box.appendChild(node);
      });
      container.appendChild(box);
    });
  }

  // A decision's evidence as JSON on a line or two: whole when short; else cut after the last complete
  // member or element that fits (never inside a string, a number or a name), with how much more there
  // is, and the whole of it, indented, a click away.
  function evidence(value) {
    var text = JSON.stringify(value);
    if (text.length <= evidenceChars) return el("div", { class: "evidence", text: text });
    var cut = 0, inString = false;
    for (var i = 0; i < evidenceChars; ++i) {
      var ch = text.charAt(i);
      if (inString) { if (ch === "\\") ++i; else if (ch === "\"") inString = false; }
      else if (ch === "\"") inString = true;
      else if (ch === ",") cut = i + 1;
    }
    var box = el("details", { class: "evidence" }, [
      el("summary", {}, [el("span", { class: "preview", text: text.slice(0, cut) + " " }),
                         el("span", { class: "more", text: "\u2026 " + (text.length - cut) + " more characters (click for all)" })]),
      el("pre", { class: "full", text: JSON.stringify(value, null, 1) })
    ]);
    box.addEventListener("toggle", function () { box.querySelector("summary .preview").hidden = box.open; });
    return box;
  }

  // ---- a model goal's run: the forward before and after, a row per operator, the kernel runs
  function modelHeader(run) {
    var m = run.model;
    var runsText = m.kernel_runs.length ? m.kernel_runs.map(function (k) { return "run " + k.run; }).join(", ") : "none yet";
    var facts = el("div", { class: "facts" }, [
      fact("status", run.status + (run.stop_reason ? " (" + run.stop_reason + ")" : "")),
      fact("model / target", run.kernel + " on " + run.target),
      fact("evaluations", String(run.evaluations) + " in " + m.kernel_runs.length + " kernel runs"),
      fact("forward before", seconds(m.forward_before_s) + (m.mfu_before_percent !== null ? ", MFU " + m.mfu_before_percent.toFixed(1) + " %" : "")),
      fact("forward after", seconds(m.forward_after_s) + (m.mfu_after_percent !== null ? ", MFU " + m.mfu_after_percent.toFixed(1) + " %" : "")),
      fact("speedup", m.forward_before_s && m.forward_after_s ? (m.forward_before_s / m.forward_after_s).toFixed(2) + "x" : "-"),
      fact("kernel runs", runsText),
      fact("seed / simulator", run.seed + " / " + run.simulator_version)
    ]);
    facts.id = "facts-" + run.id;
    return facts;
  }
  function table(id, head, rows) {
    var t = el("table", { class: "rows", id: id }, [el("tr", {}, head.map(function (h) { return el("th", { text: h }); }))]);
    rows.forEach(function (r) { t.appendChild(el("tr", {}, r.map(function (c) { return el("td", { text: c }); }))); });
    return t;
  }
  function drawModel(run, section) {
    var box = el("div", { id: "model-" + run.id });
    section.appendChild(box);
    fillModel(run, box);
  }
  function fillModel(run, section) {
    var m = run.model;
    section.textContent = "";
    section.appendChild(el("h2", { text: "run " + run.id + ": the forward, operator by operator" }));
    section.appendChild(el("p", { class: "note", text: "latency per call before (every operator at its family's baseline) and after the run; the share is of the forward after; evaluations are those of the kernel run that tuned the operator" }));
    section.appendChild(table("operators-" + run.id,
      ["operator", "kernel", "shape", "calls", "baseline", "tuned", "speedup", "share", "evaluations", "configuration"],
      m.operators.map(function (o) {
        return [o.operator, o.family, o.shape, String(o.calls), seconds(o.baseline_latency_s), seconds(o.latency_s),
                o.speedup ? o.speedup.toFixed(2) + "x" : "-", o.share_percent.toFixed(1) + " %",
                o.run !== null ? o.evaluations + " (run " + o.run + ")" : "-", o.configuration + " (" + o.source + ")"];
      })));
    pointCounts["operators-" + run.id] = m.operators.length;
    section.appendChild(el("h2", { text: "run " + run.id + ": its kernel runs" }));
    section.appendChild(table("kernel-runs-" + run.id,
      ["run", "goal", "kernel", "status", "evaluations", "baseline", "best", "speedup"],
      m.kernel_runs.map(function (k) {
        return ["run " + k.run, k.goal_name, k.kernel, k.status + (k.stop_reason ? " (" + k.stop_reason + ")" : ""),
                String(k.evaluations), seconds(k.baseline_latency_s), seconds(k.best_latency_s),
                k.speedup ? k.speedup.toFixed(2) + "x" : "-"];
      })));
    pointCounts["kernel-runs-" + run.id] = m.kernel_runs.length;
  }

  // ---- a suite (autotune report --suite): a row per task and target, linking the run's section
  function percent(f) { return f === null || f === undefined ? "-" : (100 * f).toFixed(1) + " %"; }
  function drawSuite(suite, app) {
    app.appendChild(el("h2", { text: "suite " + suite.suite + ": " + suite.rows.length + " rows, " + suite.budget.evaluations + " evaluations per task" }));
    app.appendChild(el("p", { class: "note", text: "fraction of peak: the task's roofline bound on the target over its latency (baseline, then tuned). Click a run for its section." }));
    var t = el("table", { class: "rows", id: "suite-rows" }, [el("tr", {}, ["task", "target", "family", "shape", "dtype", "baseline", "peak", "tuned", "peak", "evaluations", "wall", "run"].map(function (h) { return el("th", { text: h }); }))]);
    var shown = {};
    runs.forEach(function (run) { shown[run.id] = true; });
    suite.rows.forEach(function (r) {
      var runCell = el("td", {});
      if (r.run !== null && shown[r.run]) runCell.appendChild(el("a", { class: "trial", href: "#run-" + r.run, text: "run " + r.run }));
      else runCell.textContent = r.status === "not yet a family" ? "not yet a family: " + r.reason : r.status + (r.reason ? ": " + r.reason : "");
      if (r.run !== null && r.status !== "completed") runCell.appendChild(el("span", { text: " (" + r.status + ")" }));
      var cells = [r.task, r.target, r.family || "-", r.shape || "-", r.dtype || "-", seconds(r.baseline_latency_s), percent(r.baseline_fraction_of_peak),
                   seconds(r.tuned_latency_s), percent(r.fraction_of_peak), String(r.evaluations), r.wall_time_s.toFixed(1) + " s"];
      var tr = el("tr", {}, cells.map(function (c) { return el("td", { text: c }); }));
      tr.appendChild(runCell);
      t.appendChild(tr);
    });
    app.appendChild(t);
    pointCounts["suite-rows"] = suite.rows.length;
    suite.means.forEach(function (m) {
      app.appendChild(el("p", { text: "mean fraction of peak on " + m.target + ": " + percent(m.fraction_of_peak) + " over " + m.tasks + " tasks (baseline " + percent(m.baseline_fraction_of_peak) + ")" }));
    });
  }

  function header(run) {
    if (run.model) return modelHeader(run);
    var facts = el("div", { class: "facts" }, [
      fact("status", run.status + (run.stop_reason ? " (" + run.stop_reason + ")" : "")),
      fact("kernel / target", run.kernel + " on " + run.target),
      fact("evaluations", String(run.evaluations)),
      fact("baseline", run.baseline ? seconds(run.baseline.latency_s) + withInterval(run.baseline) + " (trial " + run.baseline.trial + ")" : "-"),
      fact("best", run.best ? seconds(run.best.latency_s) + withInterval(run.best) + " (trial " + run.best.trial + ")" : "-"),
      fact("improvement", run.improvement !== undefined ? (100 * run.improvement).toFixed(1) + " %" : "-"),
      fact("goal", run.goal ? run.goal + (run.goal_latency_s ? " (" + seconds(run.goal_latency_s) + ")" : "")
                            : run.goal_latency_s ? seconds(run.goal_latency_s) : "-"),
      fact("seed / simulator", run.seed + " / " + run.simulator_version)
    ]);
    facts.id = "facts-" + run.id;
    return facts;
  }

  function publish() {
    var status = { charts: pointCounts, errors: window.__autotuneErrors, trials: runs.map(function (r) { return r.evaluations; }) };
    window.__autotuneRender = status;
    document.getElementById("render-status").textContent = JSON.stringify(status);
  }

  function render() {
    document.title = data.title;
    document.getElementById("title").textContent = data.title;
    document.getElementById("subtitle").textContent = data.subtitle || "";
    if (data.live) document.getElementById("title").appendChild(el("span", { class: "live", text: "live" }));
    var app = document.getElementById("app");
    if (data.suite) drawSuite(data.suite, app);
    runs.forEach(function (run) {
      var section = el("section", { class: "run", id: "run-" + run.id }, [el("h2", { text: "run " + run.id + ": " + run.goal_name }), header(run)]);
      if (run.sampled) section.appendChild(el("p", { class: "note", text: "points: " + run.sampled.shown + " of " + run.sampled.of + " trials shown (" + run.sampled.how + ")" }));
      app.appendChild(section);
    });
    // A model goal's run has no trials of its own: its kernel runs have them (their own reports).
    var kernelRuns = runs.filter(function (run) { return !run.model; });
    if (kernelRuns.length) {
      app.appendChild(el("h2", { text: kernelRuns.length > 1 ? "convergence, side by side" : "convergence" }));
      app.appendChild(el("p", { class: "note", text: "every trial is a point coloured by variant; failed and invalid trials are marked in red on a band above the highest latency; the line is the best so far; dashed: baseline and goal; grey bars: the interval of a noisy measurement's median (a trial improves on the best only beyond them). Click a point for its decision." }));
      var conv = el("div", { class: "chart", id: "convergence" });
      app.appendChild(conv);
      drawConvergence(conv, kernelRuns);
    }
    runs.forEach(function (run) {
      var runIndex = kernelRuns.indexOf(run);
      var section = el("section", { class: "run" });
      app.appendChild(section);
      if (run.model) {
        drawModel(run, section);
        section.appendChild(el("h2", { text: "run " + run.id + ": the decision chain" }));
        var modelChain = el("div", { id: "decisions-" + run.id });
        section.appendChild(modelChain);
        drawDecisions(run, modelChain);
        return;
      }
      section.appendChild(el("h2", { text: "run " + run.id + ": what mattered" }));
      if (run.importance) {
        var shares = (run.importance.parameters || []).reduce(function (sum, i) { return sum + i.fraction; }, 0);
        section.appendChild(el("p", { class: "note importance", text: "parameter importance: " + run.importance.method +
          ". Each bar is a separate share, measured alone: parameters the search varied together explain the same " +
          "variance twice, so the shares need not sum to 100%" + (run.importance.parameters && run.importance.parameters.length > 1
            ? " (here they sum to " + (100 * shares).toFixed(0) + "%)." : ".") }));
      }
      var grid = el("div", { class: "grid2" });
      section.appendChild(grid);
      var imp = el("div", { class: "chart small", id: "importance-" + run.id });
      grid.appendChild(imp);
      drawImportance(run, imp);
      var slices = el("div", { class: "grid3" });
      section.appendChild(el("h3", { text: "slices: latency against each of the most important parameters" }));
      section.appendChild(el("p", { class: "note", text: "points coloured by variant, as on the convergence chart" }));
      section.appendChild(slices);
      drawSlices(run, slices, runIndex);
      if (run.screen && run.screen.length) {
        section.appendChild(el("h2", { text: "run " + run.id + ": the screen, simulated against measured" }));
        section.appendChild(el("p", { class: "note", text: "every device trial: the screen's simulated latency (before the trial corrected it) against the device's measurement, coloured by variant; the dashed line is simulated = measured" }));
        var scatter = el("div", { class: "chart small", id: "screen-" + run.id });
        section.appendChild(scatter);
        drawScreen(run, scatter, runIndex);
      }
      if (run.timelines) {
        section.appendChild(el("h2", { text: "run " + run.id + ": engine timelines, baseline and best" }));
        section.appendChild(el("p", { class: "note", text: "re-simulated from the stored configurations: one row per engine and DMA queue; red: instructions at the critical path's heaviest sites (source line, engine, opcode). Both timelines share one time axis, in microseconds (us) from the kernel's start, as long as the longer of the two." }));
        var tl = el("div", { class: "grid2" });
        section.appendChild(tl);
        var makespan = Math.max(run.timelines.baseline && run.timelines.baseline.makespan_us || 0,
                                run.timelines.best && run.timelines.best.makespan_us || 0);
        ["baseline", "best"].forEach(function (which) {
          var col = el("div", {});
          var node = el("div", { class: "chart timeline", id: "timeline-" + run.id + "-" + which });
          var figs = el("div", {});
          col.appendChild(el("h3", { text: which }));
          col.appendChild(node);
          col.appendChild(figs);
          tl.appendChild(col);
          drawTimeline("timeline-" + run.id + "-" + which, run.timelines[which], node, figs, makespan || undefined);
        });
      }
      section.appendChild(el("h2", { text: "run " + run.id + ": the decision chain" }));
      var chain = el("div", { id: "decisions-" + run.id });
      section.appendChild(chain);
      drawDecisions(run, chain);
    });
    publish();
  }

  // ---- live updates (autotune serve): new trials every second, the rest every 5 s
  function live() {
    var run = runs[0];
    var ticks = 0;
    // A model goal's run: its whole document again (its kernel runs and rows change), every 2 s.
    function pollModel() {
      fetch(data.api).then(function (r) { return r.json(); }).then(function (doc) {
        ["model", "evaluations", "status", "stop_reason", "baseline", "best", "improvement"].forEach(function (k) { run[k] = doc[k]; });
        var facts = document.getElementById("facts-" + run.id);
        facts.parentNode.replaceChild(header(run), facts);
        fillModel(run, document.getElementById("model-" + run.id));
        publish();
      }).catch(function (e) { console.warn("autotune: update failed", e); })
        .then(function () { setTimeout(pollModel, 2000); });
    }
    if (run.model) { setTimeout(pollModel, 2000); return; }
    function poll() {
      ticks += 1;
      fetch(data.api + "/trials?after=" + run.last_trial).then(function (r) { return r.json(); }).then(function (update) {
        if (update.points.length) {
          run.points = run.points.concat(update.points);
          run.best_so_far = update.best_so_far;
          run.variants = update.variants;
          run.evaluations = update.evaluations;
          run.last_trial = update.last_trial;
          run.best = update.best; run.status = update.status; run.stop_reason = update.stop_reason;
          run.improvement = update.improvement;
          charts.convergence.setOption({ series: convergenceSeries(run, 0, false) }, { replaceMerge: ["series"] });
          var facts = document.getElementById("facts-" + run.id);
          facts.parentNode.replaceChild(header(run), facts);
          countPoints();
        }
      }).catch(function (e) { console.warn("autotune: update failed", e); })
        .then(function () { setTimeout(poll, 1000); });
    }
    setTimeout(poll, 1000);
  }

  render();
  if (data.live) live();
})();
