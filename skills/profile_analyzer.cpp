#include "skills/profile_analyzer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

namespace autotune::skills {

namespace {

std::optional<double> number(const Json& object, const std::string& key) {
  if (!object.is_object()) return std::nullopt;
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::string format(const char* pattern, double a, double b = 0, double c = 0, double d = 0) {
  char buffer[256];
  std::snprintf(buffer, sizeof buffer, pattern, a, b, c, d);
  return buffer;
}

const char* const kComputeEngines[] = {"tensor", "vector", "scalar", "gpsimd"};

const SkillRegistration registration(
    kProfileAnalyzer,
    {1,
     "reads the best candidate's profile and returns findings with evidence (bound, engine activity, "
     "DMA/compute overlap, small transfers, SBUF/PSUM pressure, roofline headroom), each mapped to an action",
     "replaces or after", ""});

}  // namespace

SkillResult<Analysis> ProfileAnalyzer::analyze(const AnalysisRequest& request) {
  const auto& t = thresholds_;
  const Json& profile = request.profile;
  const Json& metrics = request.metrics;
  const Json& facts = request.target_facts;
  Analysis analysis;
  analysis.bound = "unknown";
  Json evidence = Json::object();

  const auto latency =
      number(metrics, "latency_s") ? number(metrics, "latency_s") : number(profile, "total_time");
  const auto bound_s = number(metrics, "roofline_bound_s");
  if (latency) evidence["latency_s"] = *latency;
  if (latency && bound_s && *bound_s > 0) {
    analysis.headroom = *latency / *bound_s;
    evidence["roofline_bound_s"] = *bound_s;
    evidence["headroom"] = analysis.headroom;
  }

  auto add = [&](Finding finding) { analysis.findings.push_back(std::move(finding)); };

  // At the roofline: nothing any action can buy beyond the remaining headroom.
  if (analysis.headroom > 0 && analysis.headroom <= t.at_roofline_headroom) {
    analysis.at_roofline = true;
    add({"at_roofline",
         format("latency is %.2fx the roofline bound (threshold %.2fx)", analysis.headroom,
                t.at_roofline_headroom),
         {{"headroom", analysis.headroom}, {"threshold", t.at_roofline_headroom}},
         "stop",
         {},
         0});
  }

  if (profile.is_object()) {
    // The profile's percentages are of the whole latency, launch floor
    // included; what the kernel can change is its own time, so activity is
    // judged against the kernel time (a DMA busy for all of it is busy, however
    // long the launch).
    const auto kernel_time = number(profile, "kernel_time");
    const double to_kernel_time =
        latency && kernel_time && *kernel_time > 0 && *kernel_time < *latency ? *latency / *kernel_time : 1.0;
    if (kernel_time) evidence["kernel_time_s"] = *kernel_time;
    auto active_percent = [&](const std::string& key) -> std::optional<double> {
      const auto value = number(profile, key);
      if (!value) return std::nullopt;
      return std::min(100.0, *value * to_kernel_time);
    };
    double busiest_compute = 0;
    std::string busiest_engine;
    Json engines = Json::object();
    for (const char* engine : kComputeEngines) {
      const auto active = active_percent(std::string(engine) + "_engine_active_time_percent");
      if (!active) continue;
      engines[engine] = *active;
      if (*active > busiest_compute) busiest_compute = *active, busiest_engine = engine;
    }
    const double dma_active = active_percent("dma_active_time_percent").value_or(0);
    const double overlap = active_percent("dma_compute_overlap_percent").value_or(0);
    const auto mfu = number(profile, "mfu_estimated_percent");
    evidence["engine_active_percent"] = engines;
    evidence["dma_active_time_percent"] = dma_active;
    evidence["dma_compute_overlap_percent"] = overlap;
    if (mfu) evidence["mfu_estimated_percent"] = *mfu;

    const auto launch = number(facts, "kernel_launch_s");
    if (latency && launch && *latency <= *launch * t.fixed_overhead_factor) {
      analysis.bound = "fixed_overhead";
      add({"fixed_overhead",
           format("latency %.3g s is within %.2fx of the kernel launch floor %.3g s", *latency,
                  t.fixed_overhead_factor, *launch),
           {{"latency_s", *latency}, {"kernel_launch_s", *launch}},
           "stop",
           {},
           0});
    } else if (busiest_compute >= t.busy_percent && busiest_compute >= dma_active) {
      analysis.bound = "compute";
    } else if (dma_active >= t.busy_percent) {
      analysis.bound = "memory";
    } else if (busiest_compute < t.busy_percent && dma_active < t.busy_percent) {
      analysis.bound = "dependency";
    }

    if (mfu && *mfu >= t.high_mfu_percent && busiest_engine == "tensor") {
      add({"compute_bound_high_mfu",
           format("tensor engine %.0f%% active at %.1f%% MFU (threshold %.0f%%)", busiest_compute, *mfu,
                  t.high_mfu_percent),
           {{"mfu_estimated_percent", *mfu}, {"tensor_engine_active_time_percent", busiest_compute}},
           "stop",
           {},
           0});
    }

    // Repeated loads: more HBM traffic than the compulsory minimum means the
    // same data is fetched again and again (low arithmetic intensity); only a
    // different structure (hoisting, blocking) removes that.
    const auto read_bytes = number(profile, "hbm_read_bytes");
    const auto write_bytes = number(profile, "hbm_write_bytes");
    const auto compulsory = number(metrics, "compulsory_bytes");
    if (read_bytes && compulsory && *compulsory > 0) {
      const double traffic = *read_bytes + write_bytes.value_or(0);
      const double ratio = traffic / *compulsory;
      evidence["hbm_traffic_ratio"] = ratio;
      if (ratio >= t.repeated_traffic_ratio) {
        const double gain = (dma_active / 100.0) * (1.0 - 1.0 / ratio);
        add({"repeated_loads",
             format("HBM traffic is %.1fx the compulsory bytes (DMA %.0f%% active): data is reloaded", ratio,
                    dma_active),
             {{"hbm_read_bytes", *read_bytes},
              {"hbm_write_bytes", write_bytes.value_or(0)},
              {"compulsory_bytes", *compulsory},
              {"traffic_ratio", ratio},
              {"dma_active_time_percent", dma_active}},
             "structural",
             {},
             gain});
      }
    }

    // DMA-bound without overlap: rotating buffers let the next tile's load
    // run under the current tile's compute. Overlap is measured against the
    // time that could overlap at most (the shorter of DMA and compute).
    const double compute_active = active_percent("compute_active_time_percent").value_or(busiest_compute);
    const double overlappable = std::min(dma_active, compute_active);
    const double overlap_fraction = overlappable > 0 ? std::min(1.0, overlap / overlappable) : 1.0;
    evidence["overlap_fraction"] = overlap_fraction;
    if (dma_active >= t.busy_percent && overlap_fraction * 100 < t.poor_overlap_percent) {
      const double hidden = overlappable / 100.0 * (1.0 - overlap_fraction);
      add({"dma_bound_no_overlap",
           format("DMA %.0f%% active, compute %.0f%%, only %.0f%% of what could overlap does", dma_active,
                  compute_active, overlap_fraction * 100),
           {{"dma_active_time_percent", dma_active},
            {"compute_active_time_percent", compute_active},
            {"dma_compute_overlap_percent", overlap},
            {"overlap_fraction", overlap_fraction}},
           "raise",
           {kRolePipelineDepth},
           std::max(hidden, 0.05)});
    }

    // Small transfers: each DMA pays a fixed cost; efficiency follows
    // b / (b + 768 B) per partition (NEURONCORE.md).
    const auto average_bytes = number(profile, "dma_transfer_average_bytes");
    const auto transfers = number(profile, "dma_transfer_count");
    if (average_bytes && transfers && *transfers > 0) {
      const double partitions = number(facts, "partitions").value_or(128);
      const double per_partition =
          number(profile, "dma_transfer_average_bytes_per_partition").value_or(*average_bytes / partitions);
      evidence["dma_bytes_per_partition"] = per_partition;
      if (per_partition < t.efficient_dma_bytes_per_partition) {
        const double half = number(facts, "dma_efficiency_half_bytes").value_or(t.dma_half_efficiency_bytes);
        const auto measured_efficiency = number(profile, "dma_average_efficiency_percent");
        const double overhead =
            measured_efficiency ? 1.0 - *measured_efficiency / 100.0 : half / (per_partition + half);
        add({"small_transfers",
             format("%.0f DMA transfers averaging %.0f B per partition (efficient from %.0f B)", *transfers,
                    per_partition, t.efficient_dma_bytes_per_partition),
             {{"dma_transfer_count", *transfers},
              {"dma_transfer_average_bytes", *average_bytes},
              {"bytes_per_partition", per_partition},
              {"dma_efficiency", 1.0 - overhead}},
             "raise",
             {kRoleTile, kRoleUnroll, kRoleBlock},
             (dma_active / 100.0) * overhead});
      }
    }

    // Small instructions: every instruction pays a fixed start-up (64-cycle
    // minimum, ~60 cycles SBUF access); larger tiles or unrolling amortise it.
    double instructions = 0;
    for (const auto& [key, value] : profile.items())
      if (value.is_number() && key.size() > 18 && key.rfind("_instruction_count") == key.size() - 18 &&
          key.rfind("dma", 0) != 0)
        instructions += value.get<double>();
    if (instructions == 0) instructions = number(profile, "instruction_count").value_or(0);
    if (latency && instructions > 0) {
      double busy_s = 0;
      for (const char* engine : kComputeEngines)
        busy_s += number(profile, std::string(engine) + "_engine_active_time_percent").value_or(0) / 100.0 *
                  *latency;
      const double clock = number(facts, "engine_clock_hz").value_or(1.4e9);
      const double cycles_per_instruction = busy_s * clock / instructions;
      evidence["compute_instructions"] = instructions;
      evidence["busy_cycles_per_instruction"] = cycles_per_instruction;
      if (cycles_per_instruction < t.small_instruction_cycles) {
        const double fixed = std::min(1.0, 160.0 / std::max(cycles_per_instruction, 1.0));
        add({"small_instructions",
             format("%.0f compute instructions averaging %.0f busy cycles (small below %.0f)", instructions,
                    cycles_per_instruction, t.small_instruction_cycles),
             {{"instructions", instructions}, {"busy_cycles_per_instruction", cycles_per_instruction}},
             "raise",
             {kRoleTile, kRoleUnroll},
             0.5 * fixed * busiest_compute / 100.0});
      }
    }

    // Engines mostly idle and DMA idle too: time goes into dependency waits;
    // more buffers and unrolling let independent work interleave.
    if (analysis.bound == "dependency") {
      add({"dependency_stalls",
           format("no engine is busy (busiest compute %.0f%%, DMA %.0f%%): waiting on dependencies",
                  busiest_compute, dma_active),
           {{"busiest_compute_engine_percent", busiest_compute}, {"dma_active_time_percent", dma_active}},
           "raise",
           {kRolePipelineDepth, kRoleUnroll},
           0.5 * (1.0 - std::max(busiest_compute, dma_active) / 100.0)});
    }

    // A non-tensor compute engine is the bottleneck: less work on it needs a
    // different structure (fused instructions), not other parameters.
    if (analysis.bound == "compute" && busiest_engine != "tensor" &&
        analysis.headroom > t.at_roofline_headroom) {
      add({"engine_bound",
           "the " + busiest_engine + " engine is " +
               format("%.0f%% active, %.1fx from the roofline", busiest_compute, analysis.headroom),
           {{"engine", busiest_engine}, {"active_percent", busiest_compute}, {"headroom", analysis.headroom}},
           "structural",
           {},
           0.5 * (1.0 - 1.0 / analysis.headroom)});
    }

    // The critical path (sim/critical_path.hpp): the chain of instructions
    // that sets the kernel time, cut into busy time per engine and waits by
    // kind, and by how the path reached each step (engine order, a data
    // dependency, the reuse of a buffer). Its shares are of the kernel time.
    if (profile.contains("critical_path") && profile["critical_path"].contains("busy_percent")) {
      const Json& path = profile["critical_path"];
      const Json& busy = path["busy_percent"];
      const Json empty = Json::object();
      const Json& waits = path.contains("wait_percent") ? path["wait_percent"] : empty;
      const Json& reached = path.contains("reached_by_percent") ? path["reached_by_percent"] : empty;
      auto share = [](const Json& object, const char* key) { return number(object, key).value_or(0); };
      std::string top_engine;
      double top_share = 0;
      for (const char* engine : kComputeEngines)
        if (share(busy, engine) > top_share) top_share = share(busy, engine), top_engine = engine;
      const double tensor_share = share(busy, "tensor");
      const double transposes = share(path, "tensor_transpose_percent");
      const double dma_busy = share(busy, "dma"), dma_fixed = share(waits, "dma_fixed");
      const double dma_queue = share(waits, "dma_queue");
      const double semaphores = share(waits, "semaphore") + share(waits, "buffer");
      const double startup = share(path, "startup_percent");
      const double via_buffer = share(reached, "buffer");
      // The heaviest link, or the heaviest of one kind, in words.
      auto link_text = [&](const char* kind) -> std::string {
        if (!path.contains("links") || !path["links"].is_array()) return "";
        for (const Json& link : path["links"]) {
          if (kind != nullptr && link.value("kind", "") != kind) continue;
          auto side = [](const Json& s) {
            return s.value("engine", "") + " " + s.value("opcode", "") + " at " + s.value("source", "");
          };
          return side(link["waiter"]) + " waits on " + side(link["waits_on"]) + " (" +
                 link.value("kind", "") + format("): %.0f%% of the path", link.value("percent", 0.0));
        }
        return "";
      };
      const std::string top_link = link_text(nullptr);
      auto with_link = [](std::string text, const std::string& link) {
        return link.empty() ? text : text + "; " + link;
      };
      auto rounded = [](double percent) { return std::round(percent * 10) / 10; };
      Json path_evidence = Json::object();
      for (const char* engine : {"tensor", "vector", "scalar", "gpsimd", "dma"})
        path_evidence[std::string(engine) + "_busy_percent"] = rounded(share(busy, engine));
      for (const auto& [kind, value] : waits.items())
        if (value.is_number()) path_evidence["wait_" + kind + "_percent"] = rounded(value.get<double>());
      if (path.contains("reached_by_percent")) path_evidence["via_buffer_percent"] = rounded(via_buffer);
      path_evidence["tensor_transpose_percent"] = rounded(transposes);
      if (!top_link.empty()) path_evidence["top_link"] = top_link;
      evidence["critical_path"] = path_evidence;

      // An engine other than the tensor engine carries the path (more than
      // any other engine, the DMA's transfers included), or the tensor engine
      // does with transposes, which other engines or transposing DMAs could
      // make: vary the parameters that place work (role placement). What
      // could move is the engine's share above the tensor engine's (the FLOPs
      // stay there), or the transposes.
      if (!top_engine.empty() && top_engine != "tensor" && top_share >= t.critical_path_engine_percent &&
          top_share >= dma_busy + dma_fixed) {
        add({"critical_path_engine",
             with_link(
                 "the " + top_engine + " engine is busy " +
                     format("%.0f%% of the critical path (tensor engine %.0f%%)", top_share, tensor_share),
                 top_link),
             {{"engine", top_engine},
              {"engine_busy_percent", rounded(top_share)},
              {"tensor_busy_percent", rounded(tensor_share)},
              {"movable_percent", rounded(top_share - tensor_share)},
              {"top_link", top_link}},
             "vary",
             {kRolePlacement},
             0.5 * std::max(0.0, top_share - tensor_share) / 100.0});
      } else if (top_engine == "tensor" && transposes >= t.critical_path_transpose_percent) {
        add({"critical_path_engine",
             with_link(format("the tensor engine is busy %.0f%% of the critical path, %.0f%% in transposes",
                              top_share, transposes),
                       top_link),
             {{"engine", "tensor"},
              {"engine_busy_percent", rounded(top_share)},
              {"tensor_transpose_percent", rounded(transposes)},
              {"movable_percent", rounded(transposes)},
              {"top_link", top_link}},
             "vary",
             {kRolePlacement},
             0.5 * transposes / 100.0});
      }

      // The path runs through the reuse of buffers: a rotating buffer's next
      // writer waits for its last reader, so work that could overlap is
      // serialised. More rotating buffers let the steps reached that way run
      // beside the rest: at most the smaller of the two overlaps.
      if (via_buffer >= t.critical_path_buffer_percent) {
        const std::string link = link_text("buffer");
        add({"critical_path_buffer_waits",
             with_link(format("%.0f%% of the critical path is reached through the reuse of a buffer (a write "
                              "waiting for the last use of its address)",
                              via_buffer),
                       link),
             {{"via_buffer_percent", rounded(via_buffer)},
              {"wait_buffer_percent", rounded(share(waits, "buffer"))},
              {"top_buffer_link", link}},
             "raise",
             {kRolePipelineDepth},
             0.5 * std::min(via_buffer, 100.0 - via_buffer) / 100.0});
      }

      // The path runs through DMA transfers (their data and fixed cost):
      // more transfers in flight overlap them with the rest of the path, and
      // larger ones pay the fixed cost less often.
      const double dma_share = dma_busy + dma_fixed;
      if (dma_share >= t.critical_path_dma_percent) {
        const double overlappable = std::min(dma_share, std::max(0.0, 100.0 - dma_share - dma_queue));
        add({"critical_path_dma_waits",
             with_link(format("DMA transfers are %.0f%% of the critical path (%.0f%% of it their fixed cost)",
                              dma_share, dma_fixed),
                       top_link),
             {{"dma_busy_percent", rounded(dma_busy)},
              {"wait_dma_fixed_percent", rounded(dma_fixed)},
              {"wait_dma_queue_percent", rounded(dma_queue)},
              {"top_link", top_link}},
             "raise",
             {kRolePipelineDepth, kRoleTile},
             0.5 * std::max(overlappable, dma_fixed) / 100.0});
      }

      // The path mostly waits: no engine computes and no transfer moves data
      // for much of its length (hand-offs between engines, DMA queues and
      // fixed costs, semaphores). A chain of dependent steps whose latency
      // is exposed; more steps in flight run the next steps' work inside
      // those waits. At most about the waiting share can be hidden.
      double busy_total = dma_busy;
      for (const char* engine : kComputeEngines) busy_total += share(busy, engine);
      const double waiting = std::max(0.0, 100.0 - busy_total);
      if (waiting >= t.critical_path_wait_percent)
        add({"critical_path_latency",
             with_link(
                 format("the critical path waits %.0f%% of its length (no engine or transfer busy on it)",
                        waiting),
                 top_link),
             {{"waiting_percent", rounded(waiting)},
              {"busy_percent", rounded(busy_total)},
              {"wait_dma_queue_percent", rounded(dma_queue)},
              {"wait_dma_fixed_percent", rounded(dma_fixed)},
              {"semaphore_percent", rounded(semaphores)},
              {"top_link", top_link}},
             "raise",
             {kRolePipelineDepth},
             0.5 * waiting / 100.0});

      // Waits for a free DMA queue: more bytes or more transfers than the
      // queues carry; reuse loads longer (block) and move larger pieces (tile).
      if (dma_queue >= t.critical_path_queue_percent)
        add({"critical_path_dma_queues",
             format("the critical path waits %.0f%% of its length for a free DMA queue", dma_queue),
             {{"wait_dma_queue_percent", rounded(dma_queue)}, {"dma_busy_percent", rounded(dma_busy)}},
             "raise",
             {kRoleBlock, kRoleTile},
             0.5 * dma_queue / 100.0});

      // Costs paid per instruction or per hand-off rather than per element:
      // cross-engine semaphores, transfers' fixed costs, compute
      // instructions' access start-up. Fewer, larger instructions pay them
      // less often.
      const double fixed_costs = semaphores + dma_fixed + startup;
      if (fixed_costs >= t.critical_path_fixed_cost_percent)
        add({"critical_path_fixed_costs",
             with_link(
                 format("fixed costs are %.0f%% of the critical path (semaphores %.0f%%, DMA fixed cost "
                        "%.0f%%, instruction start-up %.0f%%)",
                        fixed_costs, semaphores, dma_fixed, startup),
                 top_link),
             {{"fixed_cost_percent", rounded(fixed_costs)},
              {"semaphore_percent", rounded(semaphores)},
              {"wait_dma_fixed_percent", rounded(dma_fixed)},
              {"startup_percent", rounded(startup)},
              {"top_link", top_link}},
             "raise",
             {kRoleTile, kRoleUnroll},
             0.5 * fixed_costs / 100.0});
    }

    const auto sbuf_peak = number(profile, "sbuf_peak_bytes_per_partition");
    const auto sbuf_usable = number(facts, "sbuf_usable_bytes_per_partition");
    if (sbuf_peak && sbuf_usable && *sbuf_usable > 0) {
      const double fraction = *sbuf_peak / *sbuf_usable;
      evidence["sbuf_fraction"] = fraction;
      if (fraction >= t.sbuf_pressure_fraction)
        add({"sbuf_pressure",
             format("SBUF %.0f%% full at peak (%.0f of %.0f B per partition): little room for larger tiles "
                    "or deeper pipelines",
                    fraction * 100, *sbuf_peak, *sbuf_usable),
             {{"sbuf_peak_bytes_per_partition", *sbuf_peak},
              {"sbuf_usable_bytes_per_partition", *sbuf_usable}},
             // A raise may still fit if what is kept resident beyond the
             // working set (a block of tiles) shrinks one step.
             "make_room",
             {kRoleBlock},
             0});
    }
  }

  // Strongest first: stops before everything, then by expected gain.
  std::stable_sort(analysis.findings.begin(), analysis.findings.end(),
                   [](const Finding& a, const Finding& b) {
                     const bool stop_a = a.action == "stop", stop_b = b.action == "stop";
                     if (stop_a != stop_b) return stop_a;
                     return a.expected_gain > b.expected_gain;
                   });
  for (auto& finding : analysis.findings)
    if ((finding.action == "raise" || finding.action == "vary" || finding.action == "structural") &&
        finding.expected_gain < t.min_expected_gain)
      finding.action = "none";

  SkillResult<Analysis> out;
  out.result = analysis;
  auto& decision = out.decision;
  decision.action =
      analysis.findings.empty() ? kNoFindings : std::string(kFindingsPrefix) + analysis.findings.front().kind;
  decision.inputs = {{"candidate", request.candidate.key()}};
  decision.evidence = evidence;
  decision.evidence["bound"] = analysis.bound;
  Json findings = Json::array();
  for (const auto& f : analysis.findings) findings.push_back(f);
  decision.alternatives = findings;
  std::string rationale = "bound: " + analysis.bound;
  for (const auto& f : analysis.findings) rationale += "; " + f.kind + " (" + f.summary + ")";
  if (!profile.is_object()) rationale += "; the target gives no profile, so only the metrics were read";
  decision.rationale = rationale;
  return out;
}

}  // namespace autotune::skills
