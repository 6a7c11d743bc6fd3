// The report and the live dashboard in a real browser (headless Chromium): every chart renders with the
// run's data (as many points as trials), the page logs no script error, and a trial committed while the
// dashboard is open appears on it.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { SOURCE, autotune, browser, check, openPage, startAutotune, tempdir } from "./browser_support.mjs";

const dir = tempdir();
const db = join(dir, "runs.db");
const quickstart = join(SOURCE, "configs", "goals", "quickstart.yaml");

// Two runs of the quickstart goal (different seeds) and a sweep of an exp space.
const first = JSON.parse(autotune(["run", quickstart, "--json"], db));
const second = JSON.parse(autotune(["run", quickstart, "--json", "--seed", "7", "--no-cache"], db));
const chrome = await browser();

// What the page says besides its points: the goal in the header, slices coloured as the convergence
// chart colours each variant, importance shares said not to sum to 100%, the timelines' unit, and decision
// evidence cut between JSON tokens with the whole of it a click away.
async function checkReadings(page, runId) {
  const goal = await page.evaluate((id) => [...document.querySelectorAll(`#facts-${id} div`)]
    .find((d) => d.querySelector("b").textContent === "goal").querySelector("span").textContent, runId);
  check(goal.startsWith("20% lower latency than the baseline ("), `the header's goal reads ${JSON.stringify(goal)}`);

  const colours = await page.evaluate(() => {
    const charts = window.__autotuneCharts;
    const colourOf = (s) => s.itemStyle && s.itemStyle.color;
    const convergence = {};
    for (const s of charts.convergence.getOption().series) if (s.kind === "points") convergence[s.name] = colourOf(s);
    const slices = {};
    for (const name of Object.keys(charts).filter((n) => n.startsWith("slice-")))
      slices[name] = charts[name].getOption().series.map((s) => [s.name, colourOf(s), s.data.length]);
    return { convergence, slices };
  });
  check(Object.keys(colours.slices).length > 0, "no slices");
  for (const [slice, series] of Object.entries(colours.slices))
    for (const [variant, colour, points] of series)
      check(points > 0 && colours.convergence[variant] !== undefined && colours.convergence[variant] === colour,
            `${slice}: variant ${variant} is ${colour}, ${colours.convergence[variant]} on the convergence chart`);

  const importance = await page.locator("p.note.importance").textContent();
  check(importance.includes("need not sum to 100%"), `the importance note: ${importance}`);
  const shares = await page.evaluate(() => window.__autotuneCharts[Object.keys(window.__autotuneCharts)
    .find((n) => n.startsWith("importance-"))].getOption().series[0].data.reduce((a, b) => a + b, 0));
  if (shares > 1.005) check(importance.includes(`here they sum to ${(100 * shares).toFixed(0)}%`),
                            `shares summing to ${shares} not said: ${importance}`);

  for (const which of ["baseline", "best"]) {
    const tick = await page.evaluate((name) => window.__autotuneCharts[name].getOption().xAxis[0].axisLabel.formatter(5),
                                     `timeline-${runId}-${which}`);
    check(tick === "5 us", `the ${which} timeline's ticks read ${JSON.stringify(tick)}`);
  }

  const evidence = await page.evaluate(() => [...document.querySelectorAll(".decision .evidence")].map((e) =>
    e.tagName === "DETAILS"
      ? { preview: e.querySelector(".preview").textContent, more: e.querySelector(".more").textContent,
          full: e.querySelector(".full").textContent }
      : { whole: e.textContent }));
  check(evidence.some((e) => e.full !== undefined), "no evidence long enough to be cut");
  for (const e of evidence) {
    if (e.whole !== undefined) {
      JSON.parse(e.whole);
      continue;
    }
    const compact = JSON.stringify(JSON.parse(e.full));
    const preview = e.preview.trimEnd();
    check(compact.startsWith(preview) && /[,]$/.test(preview), `evidence cut inside a token: ...${preview.slice(-40)}`);
    check(e.more.includes(`${compact.length - preview.length} more characters`), `evidence marker: ${e.more}`);
  }
}
try {
  // One run: every chart drawn, points = trials, timelines for baseline and best, a decision chain.
  const one = join(dir, "one.html");
  autotune(["report", String(first.run_id), "-o", one], db);
  {
    const { page, errors } = await openPage(chrome, "file://" + one);
    const status = await page.evaluate(() => window.__autotuneRender);
    check(errors.length === 0 && status.errors.length === 0, `script errors: ${errors} ${status.errors}`);
    check(status.charts.convergence === first.evaluations,
          `convergence shows ${status.charts.convergence} points for ${first.evaluations} trials`);
    check(status.charts[`importance-${first.run_id}`] > 0, `no parameter importance: ${JSON.stringify(status)}`);
    check(Object.keys(status.charts).some((k) => k.startsWith("slice-")), "no slices");
    for (const which of ["baseline", "best"])
      check(status.charts[`timeline-${first.run_id}-${which}`] > 0, `the ${which} timeline has no bars`);
    const canvases = await page.locator("canvas").count();
    check(canvases >= 5, `${canvases} charts drawn`);
    const links = await page.locator("a.trial").count();
    check(links >= first.evaluations - 1, `${links} trial links in the decision chain`);
    // A trial link highlights its point on the convergence chart.
    await page.locator("a.trial").first().click();
    await checkReadings(page, first.run_id);
  }
  // Two runs side by side: both curves, every trial of each.
  const two = join(dir, "two.html");
  autotune(["report", String(first.run_id), String(second.run_id), "-o", two], db);
  {
    const { page, errors } = await openPage(chrome, "file://" + two);
    const status = await page.evaluate(() => window.__autotuneRender);
    check(errors.length === 0, `script errors: ${errors}`);
    check(status.charts.convergence === first.evaluations + second.evaluations,
          `two runs: ${status.charts.convergence} points for ${first.evaluations + second.evaluations} trials`);
  }

  // A model goal's run has no trials of its own: its report draws the forward, a row per operator and its
  // kernel runs instead of empty charts.
  const modelGoal = join(dir, "model.yaml");
  writeFileSync(modelGoal, `name: tiny-model\nmodel: {file: ${join(SOURCE, "configs", "models", "qwen3-0.6b.yaml")}, layers: 1, seq: 128}\n` +
    "target: trn2\ngoal: {improvement: 0.9}\nmax_iterations: 1\nper_kernel: {iterations: 1, evaluations: 2}\n" +
    "budget: {evaluations: 2}\nverify: false\nseed: 1\n");
  const model = JSON.parse(autotune(["run", modelGoal, "--json"], db));
  const modelPage = join(dir, "model.html");
  autotune(["report", String(model.run_id), "-o", modelPage], db);
  {
    const { page, errors } = await openPage(chrome, "file://" + modelPage);
    const status = await page.evaluate(() => window.__autotuneRender);
    check(errors.length === 0 && status.errors.length === 0, `model report script errors: ${errors} ${status.errors}`);
    const rows = await page.locator(`#operators-${model.run_id} tr`).count();
    check(rows === model.operators.length + 1 && rows > 20, `${rows - 1} operator rows for ${model.operators.length} operators`);
    const kernelRuns = await page.locator(`#kernel-runs-${model.run_id} tr`).count();
    check(kernelRuns === model.kernel_runs.length + 1, `${kernelRuns - 1} kernel-run rows for ${model.kernel_runs}`);
    const facts = await page.locator(`#facts-${model.run_id}`).innerText();
    check(facts.includes(`${model.evaluations} in ${model.kernel_runs.length} kernel runs`), `model facts: ${facts}`);
    check((await page.locator(".note", { hasText: "no trial" }).count()) === 0, "the model report shows empty timelines");
  }

  // A suite's page: a row per task and target, each run's link landing on that run's section, and the
  // task without a family said so.
  const suite = join(dir, "suite.yaml");
  writeFileSync(suite, "name: tiny-suite\ntargets: [trn1, trn2]\nbudget: {evaluations: 3}\nmax_iterations: 1\ntasks:\n" +
    "  - name: act\n    kernel: {family: silu, shape: {rows: 256, cols: 512}, dtype: fp32}\n" +
    "  - name: later\n    unavailable: needs a family\n");
  const suiteRun = JSON.parse(autotune(["suite", suite, "--json"], db));
  const suitePage = join(dir, "suite.html");
  autotune(["report", "--suite", suite, "--no-timelines", "-o", suitePage], db);
  {
    const { page, errors } = await openPage(chrome, "file://" + suitePage);
    const status = await page.evaluate(() => window.__autotuneRender);
    check(errors.length === 0 && status.errors.length === 0, `suite report script errors: ${errors} ${status.errors}`);
    check((await page.locator("#suite-rows tr").count()) === 5, "four suite rows and a header");
    for (const row of suiteRun.rows.filter((r) => r.run !== null)) {
      const link = page.locator(`#suite-rows a[href="#run-${row.run}"]`);
      check((await link.count()) === 1, `a link to run ${row.run}`);
      check((await page.locator(`section#run-${row.run}`).count()) === 1, `run ${row.run}'s section`);
    }
    check((await page.locator("#suite-rows td", { hasText: "not yet a family: needs a family" }).count()) === 2,
          "the unavailable task on both targets");
  }

  // The live dashboard: a sweep whose measurements take a while; its page gains trials without a reload.
  writeFileSync(join(dir, "slow.py"), 'import sys, time\ntime.sleep(0.3)\nprint(\'{"latency_s": %g}\' % (1e-3 * int(sys.argv[1])))\n');
  const goal = join(dir, "slow.yaml");
  writeFileSync(goal, `name: slow\ntarget: {kind: command, argv: [python3, slow.py, "{x}"]}\nsearch:\n  space: {x: [${Array.from({ length: 40 }, (_, i) => i + 1).join(", ")}]}\n`);
  const server = startAutotune(["serve", "--port", "0"], db);
  const url = await new Promise((resolve, reject) => {
    let text = "";
    server.stdout.on("data", (chunk) => {
      text += chunk;
      const m = text.match(/at (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`serve exited ${code}`)));
  });
  const runId = Math.max(...JSON.parse(autotune(["runs", "--json"], db)).map((r) => r.id)) + 1;  // the sweep's
  const sweep = startAutotune(["sweep", goal, "--json"], db);
  try {
    const home = await chrome.newPage();
    await home.goto(url);
    await home.waitForFunction((n) => document.querySelectorAll("#runs tbody tr").length >= n, runId, { timeout: 30_000 });
    let page;
    for (let i = 0; i < 100 && !page; ++i) {
      const r = await fetch(`${url}api/run/${runId}/trials?after=0`).catch(() => null);
      if (r && r.ok && (await r.json()).points.length > 0) ({ page } = await openPage(chrome, `${url}run/${runId}`));
      else await new Promise((res) => setTimeout(res, 100));
    }
    check(page, "the sweep's run never appeared on the dashboard");
    const before = (await page.evaluate(() => window.__autotuneRender)).charts.convergence;
    await page.waitForFunction((n) => window.__autotuneRender.charts.convergence > n, before, { timeout: 30_000 });
    await new Promise((resolve) => sweep.on("exit", resolve));
    const total = JSON.parse(autotune(["runs", "--json"], db)).find((r) => r.id === runId).evaluations;
    await page.waitForFunction((n) => window.__autotuneRender.charts.convergence === n, total, { timeout: 10_000 });
    const status = await page.evaluate(() => window.__autotuneRender);
    check(status.errors.length === 0, `dashboard script errors: ${status.errors}`);
    const api = await (await fetch(`${url}api/run/${runId}`)).json();
    check(api.points.length === total && api.evaluations === total, "the JSON endpoint disagrees with the store");
    const missing = await fetch(`${url}run/99999`);
    check(missing.status === 404, `an unknown run answered ${missing.status}`);
  } finally {
    sweep.kill();
    server.kill();
  }
} finally {
  await chrome.close();
}
console.log("ok");
