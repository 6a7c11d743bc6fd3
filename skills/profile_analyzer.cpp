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

// What the rules read, derived once from the metrics, the profile and the
// target's facts. The profile's percentages are of the whole latency, launch
// floor included; what the kernel can change is its own time, so activity is
// judged against the kernel time (a DMA busy for all of it is busy, however
// long the launch).
struct Reading {
  const Json& profile;
  const Json& metrics;
  const Json& facts;
  std::optional<double> latency;
  double headroom = 0;  // latency / roofline bound; 0 when unknown
  std::string bound = "unknown";
  // From the profile (all zero without one):
  double to_kernel_time = 1.0;
  double busiest_compute = 0;
  std::string busiest_engine;
  double dma_active = 0;
  double overlap = 0;
  std::optional<double> mfu;
  std::optional<double> launch;  // the target's kernel launch floor

  std::optional<double> active_percent(const std::string& key) const {
    const auto value = number(profile, key);
    if (!value) return std::nullopt;
    return std::min(100.0, *value * to_kernel_time);
  }
};

// The schedule's critical path (sim/critical_path.hpp): the chain of
// instructions that sets the kernel time, cut into busy time per engine and
// waits by kind, and by how the path reached each step (engine order, a data
// dependency, the reuse of a buffer). Its shares are of the kernel time.
struct CriticalPath {
  std::string top_engine;
  double top_share = 0, tensor_share = 0, transposes = 0;
  double dma_busy = 0, dma_fixed = 0, dma_queue = 0, dma_descriptors = 0;
  double semaphores = 0, startup = 0, via_buffer = 0, buffer_waits = 0;
  double busy_total = 0;    // every engine and the DMA
  std::string top_link;     // the heaviest link in words
  std::string buffer_link;  // the heaviest link through a buffer's reuse
};

double rounded(double percent) { return std::round(percent * 10) / 10; }

std::string with_link(std::string text, const std::string& link) {
  return link.empty() ? text : text + "; " + link;
}

Reading read_profile(const AnalysisRequest& request, const AnalyzerThresholds& t, Json& evidence) {
  Reading r{request.profile, request.metrics, request.target_facts};
  r.latency =
      number(r.metrics, "latency_s") ? number(r.metrics, "latency_s") : number(r.profile, "total_time");
  const auto bound_s = number(r.metrics, "roofline_bound_s");
  if (r.latency) evidence["latency_s"] = *r.latency;
  if (r.latency && bound_s && *bound_s > 0) {
    r.headroom = *r.latency / *bound_s;
    evidence["roofline_bound_s"] = *bound_s;
    evidence["headroom"] = r.headroom;
  }
  if (!r.profile.is_object()) return r;

  const auto kernel_time = number(r.profile, "kernel_time");
  if (r.latency && kernel_time && *kernel_time > 0 && *kernel_time < *r.latency)
    r.to_kernel_time = *r.latency / *kernel_time;
  if (kernel_time) evidence["kernel_time_s"] = *kernel_time;
  Json engines = Json::object();
  for (const char* engine : kComputeEngines) {
    const auto active = r.active_percent(std::string(engine) + "_engine_active_time_percent");
    if (!active) continue;
    engines[engine] = *active;
    if (*active > r.busiest_compute) r.busiest_compute = *active, r.busiest_engine = engine;
  }
  r.dma_active = r.active_percent("dma_active_time_percent").value_or(0);
  r.overlap = r.active_percent("dma_compute_overlap_percent").value_or(0);
  r.mfu = number(r.profile, "mfu_estimated_percent");
  evidence["engine_active_percent"] = engines;
  evidence["dma_active_time_percent"] = r.dma_active;
  evidence["dma_compute_overlap_percent"] = r.overlap;
  if (r.mfu) evidence["mfu_estimated_percent"] = *r.mfu;

  r.launch = number(r.facts, "kernel_launch_s");
  if (r.latency && r.launch && *r.latency <= *r.launch * t.fixed_overhead_factor)
    r.bound = "fixed_overhead";
  else if (r.busiest_compute >= t.busy_percent && r.busiest_compute >= r.dma_active)
    r.bound = "compute";
  else if (r.dma_active >= t.busy_percent)
    r.bound = "memory";
  else if (r.busiest_compute < t.busy_percent && r.dma_active < t.busy_percent)
    r.bound = "dependency";
  return r;
}

std::optional<CriticalPath> read_critical_path(const Json& profile, Json& evidence) {
  if (!profile.is_object() || !profile.contains("critical_path") ||
      !profile["critical_path"].contains("busy_percent"))
    return std::nullopt;
  const Json& path = profile["critical_path"];
  const Json& busy = path["busy_percent"];
  const Json empty = Json::object();
  const Json& waits = path.contains("wait_percent") ? path["wait_percent"] : empty;
  const Json& reached = path.contains("reached_by_percent") ? path["reached_by_percent"] : empty;
  auto share = [](const Json& object, const char* key) { return number(object, key).value_or(0); };
  CriticalPath c;
  for (const char* engine : kComputeEngines)
    if (share(busy, engine) > c.top_share) c.top_share = share(busy, engine), c.top_engine = engine;
  c.tensor_share = share(busy, "tensor");
  c.transposes = share(path, "tensor_transpose_percent");
  c.dma_busy = share(busy, "dma");
  c.dma_fixed = share(waits, "dma_fixed");
  c.dma_queue = share(waits, "dma_queue");
  c.dma_descriptors = share(waits, "dma_descriptor");
  c.buffer_waits = share(waits, "buffer");
  c.semaphores = share(waits, "semaphore") + c.buffer_waits;
  c.startup = share(path, "startup_percent");
  c.via_buffer = share(reached, "buffer");
  c.busy_total = c.dma_busy;
  for (const char* engine : kComputeEngines) c.busy_total += share(busy, engine);
  // The heaviest link, or the heaviest of one kind, in words.
  auto link_text = [&](const char* kind) -> std::string {
    if (!path.contains("links") || !path["links"].is_array()) return "";
    for (const Json& link : path["links"]) {
      if (kind != nullptr && link.value("kind", "") != kind) continue;
      auto side = [](const Json& s) {
        return s.value("engine", "") + " " + s.value("opcode", "") + " at " + s.value("source", "");
      };
      return side(link["waiter"]) + " waits on " + side(link["waits_on"]) + " (" + link.value("kind", "") +
             format("): %.0f%% of the path", link.value("percent", 0.0));
    }
    return "";
  };
  c.top_link = link_text(nullptr);
  c.buffer_link = link_text("buffer");

  Json path_evidence = Json::object();
  for (const char* engine : {"tensor", "vector", "scalar", "gpsimd", "dma"})
    path_evidence[std::string(engine) + "_busy_percent"] = rounded(share(busy, engine));
  for (const auto& [kind, value] : waits.items())
    if (value.is_number()) path_evidence["wait_" + kind + "_percent"] = rounded(value.get<double>());
  if (path.contains("reached_by_percent")) path_evidence["via_buffer_percent"] = rounded(c.via_buffer);
  path_evidence["tensor_transpose_percent"] = rounded(c.transposes);
  if (!c.top_link.empty()) path_evidence["top_link"] = c.top_link;
  evidence["critical_path"] = path_evidence;
  return c;
}

// --- The rules: one finding each, in the order findings are reported on ties.

using Thresholds = AnalyzerThresholds;
using MaybeFinding = std::optional<Finding>;

// At the roofline: nothing any action can buy beyond the remaining headroom.
MaybeFinding at_roofline(const Reading& r, const Thresholds& t, Json&) {
  if (!(r.headroom > 0 && r.headroom <= t.at_roofline_headroom)) return std::nullopt;
  return Finding{
      finding::kAtRoofline,
      format("latency is %.2fx the roofline bound (threshold %.2fx)", r.headroom, t.at_roofline_headroom),
      {{"headroom", r.headroom}, {"threshold", t.at_roofline_headroom}},
      "stop",
      {},
      0};
}

// Within reach of the launch floor: what is left is fixed cost.
MaybeFinding fixed_overhead(const Reading& r, const Thresholds& t, Json&) {
  if (r.bound != "fixed_overhead") return std::nullopt;
  const double launch = *r.launch;
  return Finding{finding::kFixedOverhead,
                 format("latency %.3g s is within %.2fx of the kernel launch floor %.3g s", *r.latency,
                        t.fixed_overhead_factor, launch),
                 {{"latency_s", *r.latency}, {"kernel_launch_s", launch}},
                 "stop",
                 {},
                 0};
}

MaybeFinding compute_bound_high_mfu(const Reading& r, const Thresholds& t, Json&) {
  if (!(r.mfu && *r.mfu >= t.high_mfu_percent && r.busiest_engine == "tensor")) return std::nullopt;
  return Finding{
      finding::kComputeBoundHighMfu,
      format("tensor engine %.0f%% active at %.1f%% MFU (threshold %.0f%%)", r.busiest_compute, *r.mfu,
             t.high_mfu_percent),
      {{"mfu_estimated_percent", *r.mfu}, {"tensor_engine_active_time_percent", r.busiest_compute}},
      "stop",
      {},
      0};
}

// Repeated loads: more HBM traffic than the compulsory minimum means the
// same data is fetched again and again (low arithmetic intensity); only a
// different structure (hoisting, blocking) removes that.
MaybeFinding repeated_loads(const Reading& r, const Thresholds& t, Json& evidence) {
  const auto read_bytes = number(r.profile, "hbm_read_bytes");
  const auto write_bytes = number(r.profile, "hbm_write_bytes");
  const auto compulsory = number(r.metrics, "compulsory_bytes");
  if (!(read_bytes && compulsory && *compulsory > 0)) return std::nullopt;
  const double traffic = *read_bytes + write_bytes.value_or(0);
  const double ratio = traffic / *compulsory;
  evidence["hbm_traffic_ratio"] = ratio;
  if (ratio < t.repeated_traffic_ratio) return std::nullopt;
  const double gain = (r.dma_active / 100.0) * (1.0 - 1.0 / ratio);
  return Finding{finding::kRepeatedLoads,
                 format("HBM traffic is %.1fx the compulsory bytes (DMA %.0f%% active): data is reloaded",
                        ratio, r.dma_active),
                 {{"hbm_read_bytes", *read_bytes},
                  {"hbm_write_bytes", write_bytes.value_or(0)},
                  {"compulsory_bytes", *compulsory},
                  {"traffic_ratio", ratio},
                  {"dma_active_time_percent", r.dma_active}},
                 "structural",
                 {},
                 gain};
}

double compute_active_percent(const Reading& r) {
  return r.active_percent("compute_active_time_percent").value_or(r.busiest_compute);
}

// The share of the time that could overlap at most (the shorter of DMA and
// compute) that does.
double overlap_fraction(const Reading& r) {
  const double overlappable = std::min(r.dma_active, compute_active_percent(r));
  return overlappable > 0 ? std::min(1.0, r.overlap / overlappable) : 1.0;
}

// DMA-bound without overlap: rotating buffers let the next tile's load run
// under the current tile's compute.
MaybeFinding dma_bound_no_overlap(const Reading& r, const Thresholds& t, Json& evidence) {
  const double compute_active = compute_active_percent(r);
  const double overlappable = std::min(r.dma_active, compute_active);
  const double fraction = overlap_fraction(r);
  evidence["overlap_fraction"] = fraction;
  if (!(r.dma_active >= t.busy_percent && fraction * 100 < t.poor_overlap_percent)) return std::nullopt;
  const double hidden = overlappable / 100.0 * (1.0 - fraction);
  return Finding{finding::kDmaBoundNoOverlap,
                 format("DMA %.0f%% active, compute %.0f%%, only %.0f%% of what could overlap does",
                        r.dma_active, compute_active, fraction * 100),
                 {{"dma_active_time_percent", r.dma_active},
                  {"compute_active_time_percent", compute_active},
                  {"dma_compute_overlap_percent", r.overlap},
                  {"overlap_fraction", fraction}},
                 "raise",
                 {kRolePipelineDepth},
                 std::max(hidden, 0.05)};
}

// Memory-bound, above the roofline, and yet the DMA idles a share of the
// kernel although it overlaps compute (poor overlap is dma_bound_no_overlap):
// between transfers the queues wait, for a rotating buffer to be free or for
// the compute that feeds a store. More buffers in flight let the next
// transfers start inside those gaps. At most the idle share can be gained,
// and no more than the roofline leaves.
MaybeFinding memory_bound_dma_idle(const Reading& r, const Thresholds& t, Json& evidence) {
  if (r.bound != "memory" || r.headroom <= t.at_roofline_headroom ||
      overlap_fraction(r) * 100 < t.poor_overlap_percent)
    return std::nullopt;
  const double idle = 100.0 - r.dma_active;
  evidence["dma_idle_percent"] = idle;
  if (idle < t.dma_idle_percent) return std::nullopt;
  return Finding{
      finding::kMemoryBoundDmaIdle,
      format("memory-bound %.2fx from the roofline, yet the DMA is idle %.0f%% of the kernel", r.headroom,
             idle),
      {{"dma_active_time_percent", r.dma_active}, {"dma_idle_percent", idle}, {"headroom", r.headroom}},
      "raise",
      {kRolePipelineDepth},
      std::min(idle / 100.0, 1.0 - 1.0 / r.headroom)};
}

// Small transfers: each DMA pays a fixed cost; efficiency follows
// b / (b + 768 B) per partition (NEURONCORE.md).
MaybeFinding small_transfers(const Reading& r, const Thresholds& t, Json& evidence) {
  const auto average_bytes = number(r.profile, "dma_transfer_average_bytes");
  const auto transfers = number(r.profile, "dma_transfer_count");
  if (!(average_bytes && transfers && *transfers > 0)) return std::nullopt;
  const double partitions = number(r.facts, "partitions").value_or(128);
  const double per_partition =
      number(r.profile, "dma_transfer_average_bytes_per_partition").value_or(*average_bytes / partitions);
  evidence["dma_bytes_per_partition"] = per_partition;
  if (per_partition >= t.efficient_dma_bytes_per_partition) return std::nullopt;
  const double half = number(r.facts, "dma_efficiency_half_bytes").value_or(t.dma_half_efficiency_bytes);
  const auto measured_efficiency = number(r.profile, "dma_average_efficiency_percent");
  const double overhead =
      measured_efficiency ? 1.0 - *measured_efficiency / 100.0 : half / (per_partition + half);
  return Finding{finding::kSmallTransfers,
                 format("%.0f DMA transfers averaging %.0f B per partition (efficient from %.0f B)",
                        *transfers, per_partition, t.efficient_dma_bytes_per_partition),
                 {{"dma_transfer_count", *transfers},
                  {"dma_transfer_average_bytes", *average_bytes},
                  {"bytes_per_partition", per_partition},
                  {"dma_efficiency", 1.0 - overhead}},
                 "raise",
                 {kRoleTile, kRoleUnroll, kRoleBlock},
                 (r.dma_active / 100.0) * overhead};
}

// Small instructions: every instruction pays a fixed start-up (64-cycle
// minimum, ~60 cycles SBUF access); larger tiles or unrolling amortise it.
MaybeFinding small_instructions(const Reading& r, const Thresholds& t, Json& evidence) {
  double instructions = 0;
  for (const auto& [key, value] : r.profile.items())
    if (value.is_number() && key.size() > 18 && key.rfind("_instruction_count") == key.size() - 18 &&
        key.rfind("dma", 0) != 0)
      instructions += value.get<double>();
  if (instructions == 0) instructions = number(r.profile, "instruction_count").value_or(0);
  if (!(r.latency && instructions > 0)) return std::nullopt;
  double busy_s = 0;
  for (const char* engine : kComputeEngines)
    busy_s += number(r.profile, std::string(engine) + "_engine_active_time_percent").value_or(0) / 100.0 *
              *r.latency;
  const double clock = number(r.facts, "engine_clock_hz").value_or(1.4e9);
  const double cycles_per_instruction = busy_s * clock / instructions;
  evidence["compute_instructions"] = instructions;
  evidence["busy_cycles_per_instruction"] = cycles_per_instruction;
  if (cycles_per_instruction >= t.small_instruction_cycles) return std::nullopt;
  const double fixed = std::min(1.0, 160.0 / std::max(cycles_per_instruction, 1.0));
  return Finding{finding::kSmallInstructions,
                 format("%.0f compute instructions averaging %.0f busy cycles (small below %.0f)",
                        instructions, cycles_per_instruction, t.small_instruction_cycles),
                 {{"instructions", instructions}, {"busy_cycles_per_instruction", cycles_per_instruction}},
                 "raise",
                 {kRoleTile, kRoleUnroll},
                 0.5 * fixed * r.busiest_compute / 100.0};
}

// Engines mostly idle and DMA idle too: time goes into dependency waits;
// more buffers and unrolling let independent work interleave.
MaybeFinding dependency_stalls(const Reading& r, const Thresholds&, Json&) {
  if (r.bound != "dependency") return std::nullopt;
  return Finding{
      finding::kDependencyStalls,
      format("no engine is busy (busiest compute %.0f%%, DMA %.0f%%): waiting on dependencies",
             r.busiest_compute, r.dma_active),
      {{"busiest_compute_engine_percent", r.busiest_compute}, {"dma_active_time_percent", r.dma_active}},
      "raise",
      {kRolePipelineDepth, kRoleUnroll},
      0.5 * (1.0 - std::max(r.busiest_compute, r.dma_active) / 100.0)};
}

// A non-tensor compute engine is the bottleneck: less work on it needs a
// different structure (fused instructions), not other parameters.
MaybeFinding engine_bound(const Reading& r, const Thresholds& t, Json&) {
  if (!(r.bound == "compute" && r.busiest_engine != "tensor" && r.headroom > t.at_roofline_headroom))
    return std::nullopt;
  return Finding{
      finding::kEngineBound,
      "the " + r.busiest_engine + " engine is " +
          format("%.0f%% active, %.1fx from the roofline", r.busiest_compute, r.headroom),
      {{"engine", r.busiest_engine}, {"active_percent", r.busiest_compute}, {"headroom", r.headroom}},
      "structural",
      {},
      0.5 * (1.0 - 1.0 / r.headroom)};
}

// An engine other than the tensor engine carries the critical path (more
// than any other engine, the DMA's transfers included), or the tensor engine
// does with transposes, which other engines or transposing DMAs could make:
// vary the parameters that place work (role placement). What could move is
// the engine's share above the tensor engine's (the FLOPs stay there), or
// the transposes.
MaybeFinding critical_path_engine(const CriticalPath& c, const Thresholds& t) {
  if (!c.top_engine.empty() && c.top_engine != "tensor" && c.top_share >= t.critical_path_engine_percent &&
      c.top_share >= c.dma_busy + c.dma_fixed)
    return Finding{finding::kCriticalPathEngine,
                   with_link("the " + c.top_engine + " engine is busy " +
                                 format("%.0f%% of the critical path (tensor engine %.0f%%)", c.top_share,
                                        c.tensor_share),
                             c.top_link),
                   {{"engine", c.top_engine},
                    {"engine_busy_percent", rounded(c.top_share)},
                    {"tensor_busy_percent", rounded(c.tensor_share)},
                    {"movable_percent", rounded(c.top_share - c.tensor_share)},
                    {"top_link", c.top_link}},
                   "vary",
                   {kRolePlacement},
                   0.5 * std::max(0.0, c.top_share - c.tensor_share) / 100.0};
  if (c.top_engine == "tensor" && c.transposes >= t.critical_path_transpose_percent)
    return Finding{
        finding::kCriticalPathEngine,
        with_link(format("the tensor engine is busy %.0f%% of the critical path, %.0f%% in transposes",
                         c.top_share, c.transposes),
                  c.top_link),
        {{"engine", "tensor"},
         {"engine_busy_percent", rounded(c.top_share)},
         {"tensor_transpose_percent", rounded(c.transposes)},
         {"movable_percent", rounded(c.transposes)},
         {"top_link", c.top_link}},
        "vary",
        {kRolePlacement},
        0.5 * c.transposes / 100.0};
  return std::nullopt;
}

// The path runs through the reuse of buffers: a rotating buffer's next writer
// waits for its last reader, so work that could overlap is serialised. More
// rotating buffers let the steps reached that way run beside the rest: at
// most the smaller of the two overlaps.
MaybeFinding critical_path_buffer_waits(const CriticalPath& c, const Thresholds& t) {
  if (c.via_buffer < t.critical_path_buffer_percent) return std::nullopt;
  return Finding{
      finding::kCriticalPathBufferWaits,
      with_link(format("%.0f%% of the critical path is reached through the reuse of a buffer (a write "
                       "waiting for the last use of its address)",
                       c.via_buffer),
                c.buffer_link),
      {{"via_buffer_percent", rounded(c.via_buffer)},
       {"wait_buffer_percent", rounded(c.buffer_waits)},
       {"top_buffer_link", c.buffer_link}},
      "raise",
      {kRolePipelineDepth},
      0.5 * std::min(c.via_buffer, 100.0 - c.via_buffer) / 100.0};
}

// The path runs through DMA transfers (their data, fixed cost and descriptor
// generation: latencies every transfer pays): more transfers in flight
// overlap them with the rest of the path, and larger ones pay the per-transfer
// costs less often.
MaybeFinding critical_path_dma_waits(const CriticalPath& c, const Thresholds& t) {
  const double dma_share = c.dma_busy + c.dma_fixed + c.dma_descriptors;
  if (dma_share < t.critical_path_dma_percent) return std::nullopt;
  const double overlappable = std::min(dma_share, std::max(0.0, 100.0 - dma_share - c.dma_queue));
  return Finding{
      finding::kCriticalPathDmaWaits,
      with_link(c.dma_descriptors >= 0.5
                    ? format("DMA transfers are %.0f%% of the critical path (%.0f%% of it their fixed cost, "
                             "%.0f%% descriptor generation)",
                             dma_share, c.dma_fixed, c.dma_descriptors)
                    : format("DMA transfers are %.0f%% of the critical path (%.0f%% of it their fixed cost)",
                             dma_share, c.dma_fixed),
                c.top_link),
      {{"dma_busy_percent", rounded(c.dma_busy)},
       {"wait_dma_fixed_percent", rounded(c.dma_fixed)},
       {"wait_dma_descriptor_percent", rounded(c.dma_descriptors)},
       {"wait_dma_queue_percent", rounded(c.dma_queue)},
       {"top_link", c.top_link}},
      "raise",
      {kRolePipelineDepth, kRoleTile},
      0.5 * std::max(overlappable, c.dma_fixed) / 100.0};
}

// The path mostly waits: no engine computes and no transfer moves data for
// much of its length (hand-offs between engines, DMA queues and fixed costs,
// semaphores). A chain of dependent steps whose latency is exposed; more
// steps in flight run the next steps' work inside those waits. At most about
// the waiting share can be hidden.
MaybeFinding critical_path_latency(const CriticalPath& c, const Thresholds& t) {
  const double waiting = std::max(0.0, 100.0 - c.busy_total);
  if (waiting < t.critical_path_wait_percent) return std::nullopt;
  return Finding{
      finding::kCriticalPathLatency,
      with_link(
          format("the critical path waits %.0f%% of its length (no engine or transfer busy on it)", waiting),
          c.top_link),
      {{"waiting_percent", rounded(waiting)},
       {"busy_percent", rounded(c.busy_total)},
       {"wait_dma_queue_percent", rounded(c.dma_queue)},
       {"wait_dma_fixed_percent", rounded(c.dma_fixed)},
       {"semaphore_percent", rounded(c.semaphores)},
       {"top_link", c.top_link}},
      "raise",
      {kRolePipelineDepth},
      0.5 * waiting / 100.0};
}

// Waits for a free DMA queue: more bytes or more transfers than the queues
// carry; reuse loads longer (block) and move larger pieces (tile).
MaybeFinding critical_path_dma_queues(const CriticalPath& c, const Thresholds& t) {
  if (c.dma_queue < t.critical_path_queue_percent) return std::nullopt;
  return Finding{
      finding::kCriticalPathDmaQueues,
      format("the critical path waits %.0f%% of its length for a free DMA queue", c.dma_queue),
      {{"wait_dma_queue_percent", rounded(c.dma_queue)}, {"dma_busy_percent", rounded(c.dma_busy)}},
      "raise",
      {kRoleBlock, kRoleTile},
      0.5 * c.dma_queue / 100.0};
}

// Transposing transfers waiting for the descriptor generators, whose cost is
// per DGE instruction, not per byte: fewer, larger transposing transfers
// (tile, block), or transposes elsewhere (placement), pay it less often.
MaybeFinding critical_path_dma_descriptors(const CriticalPath& c, const Thresholds& t) {
  if (c.dma_descriptors < t.critical_path_descriptor_percent) return std::nullopt;
  return Finding{finding::kCriticalPathDmaDescriptors,
                 format("the critical path waits %.0f%% of its length for DMA descriptor generation "
                        "(transposing transfers)",
                        c.dma_descriptors),
                 {{"wait_dma_descriptor_percent", rounded(c.dma_descriptors)},
                  {"dma_busy_percent", rounded(c.dma_busy)}},
                 "vary",
                 {kRolePlacement, kRoleTile},
                 0.5 * c.dma_descriptors / 100.0};
}

// Costs paid per instruction or per hand-off rather than per element:
// cross-engine semaphores, transfers' fixed costs, compute instructions'
// access start-up. Fewer, larger instructions pay them less often.
MaybeFinding critical_path_fixed_costs(const CriticalPath& c, const Thresholds& t) {
  const double fixed_costs = c.semaphores + c.dma_fixed + c.startup;
  if (fixed_costs < t.critical_path_fixed_cost_percent) return std::nullopt;
  return Finding{
      finding::kCriticalPathFixedCosts,
      with_link(format("fixed costs are %.0f%% of the critical path (semaphores %.0f%%, DMA fixed cost "
                       "%.0f%%, instruction start-up %.0f%%)",
                       fixed_costs, c.semaphores, c.dma_fixed, c.startup),
                c.top_link),
      {{"fixed_cost_percent", rounded(fixed_costs)},
       {"semaphore_percent", rounded(c.semaphores)},
       {"wait_dma_fixed_percent", rounded(c.dma_fixed)},
       {"startup_percent", rounded(c.startup)},
       {"top_link", c.top_link}},
      "raise",
      {kRoleTile, kRoleUnroll},
      0.5 * fixed_costs / 100.0};
}

MaybeFinding sbuf_pressure(const Reading& r, const Thresholds& t, Json& evidence) {
  const auto sbuf_peak = number(r.profile, "sbuf_peak_bytes_per_partition");
  const auto sbuf_usable = number(r.facts, "sbuf_usable_bytes_per_partition");
  if (!(sbuf_peak && sbuf_usable && *sbuf_usable > 0)) return std::nullopt;
  const double fraction = *sbuf_peak / *sbuf_usable;
  evidence["sbuf_fraction"] = fraction;
  if (fraction < t.sbuf_pressure_fraction) return std::nullopt;
  return Finding{
      finding::kSbufPressure,
      format("SBUF %.0f%% full at peak (%.0f of %.0f B per partition): little room for larger tiles "
             "or deeper pipelines",
             fraction * 100, *sbuf_peak, *sbuf_usable),
      {{"sbuf_peak_bytes_per_partition", *sbuf_peak}, {"sbuf_usable_bytes_per_partition", *sbuf_usable}},
      // A raise may still fit if what is kept resident beyond the
      // working set (a block of tiles) shrinks one step.
      "make_room",
      {kRoleBlock},
      0};
}

using ProfileRule = MaybeFinding (*)(const Reading&, const Thresholds&, Json& evidence);
using PathRule = MaybeFinding (*)(const CriticalPath&, const Thresholds&);

// Rules over the profile's figures, before the critical path's rules.
constexpr ProfileRule kProfileRules[] = {fixed_overhead,       compute_bound_high_mfu, repeated_loads,
                                         dma_bound_no_overlap, memory_bound_dma_idle,  small_transfers,
                                         small_instructions,   dependency_stalls,      engine_bound};
// Rules over the critical path, when the profile has one.
constexpr PathRule kPathRules[] = {
    critical_path_engine,     critical_path_buffer_waits,    critical_path_dma_waits,  critical_path_latency,
    critical_path_dma_queues, critical_path_dma_descriptors, critical_path_fixed_costs};
// Rules after the critical path's.
constexpr ProfileRule kLateProfileRules[] = {sbuf_pressure};

}  // namespace

SkillResult<Analysis> ProfileAnalyzer::analyze(const AnalysisRequest& request) {
  const auto& t = thresholds_;
  Json evidence = Json::object();
  const Reading reading = read_profile(request, t, evidence);
  Analysis analysis;
  analysis.bound = reading.bound;
  analysis.headroom = reading.headroom;
  auto add = [&](MaybeFinding finding) {
    if (finding) analysis.findings.push_back(std::move(*finding));
  };
  // At the roofline whatever the target reports; the rest reads its profile.
  add(at_roofline(reading, t, evidence));
  analysis.at_roofline = !analysis.findings.empty();
  if (reading.profile.is_object()) {
    for (ProfileRule rule : kProfileRules) add(rule(reading, t, evidence));
    if (const auto path = read_critical_path(reading.profile, evidence))
      for (PathRule rule : kPathRules) add(rule(*path, t));
    for (ProfileRule rule : kLateProfileRules) add(rule(reading, t, evidence));
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
  decision.inputs = {{"candidate", request.candidate.text()}};
  decision.evidence = evidence;
  decision.evidence["bound"] = analysis.bound;
  Json findings = Json::array();
  for (const auto& f : analysis.findings) findings.push_back(f);
  decision.alternatives = findings;
  std::string rationale = "bound: " + analysis.bound;
  for (const auto& f : analysis.findings) rationale += "; " + f.kind + " (" + f.summary + ")";
  if (!request.profile.is_object())
    rationale += "; the target gives no profile, so only the metrics were read";
  decision.rationale = rationale;
  return out;
}

}  // namespace autotune::skills
