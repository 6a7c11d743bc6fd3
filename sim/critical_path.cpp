#include "sim/critical_path.hpp"

#include <algorithm>
#include <unordered_map>

#include "core/error.hpp"
#include "sim/simulator.hpp"

namespace autotune::sim {

std::string_view dependency_kind_name(DependencyKind kind) {
  return kind == DependencyKind::data ? "data" : "buffer";
}

std::string_view path_step_name(PathStep step) {
  switch (step) {
    case PathStep::start:
      return "start";
    case PathStep::engine_order:
      return "engine_order";
    case PathStep::data:
      return "data";
    case PathStep::buffer:
      return "buffer";
  }
  return "?";
}

std::string_view path_wait_name(PathWait wait) {
  switch (wait) {
    case PathWait::semaphore:
      return "semaphore";
    case PathWait::buffer:
      return "buffer";
    case PathWait::dma_fixed:
      return "dma_fixed";
    case PathWait::dma_queue:
      return "dma_queue";
    case PathWait::port:
      return "port";
    case PathWait::stationary_load:
      return "stationary_load";
    case PathWait::dma_descriptor:
      return "dma_descriptor";
  }
  return "?";
}

namespace {

// The resource an engine's instruction may wait for once its engine and its
// dependencies are ready.
PathWait resource_wait(Engine engine) {
  switch (engine) {
    case Engine::dma:
      return PathWait::dma_queue;
    case Engine::tensor:
      return PathWait::stationary_load;
    default:
      return PathWait::port;
  }
}

// Sites are numbered densely (path_site_code), so path time per site is a
// flat array and a link is a pair of numbers: no map per step.
PathSite site_of(std::uint64_t index) {
  PathSite site;
  site.opcode = static_cast<Opcode>(index % kOpcodeCount);
  index /= kOpcodeCount;
  site.engine = static_cast<Engine>(index % kEngineCount);
  site.location = static_cast<std::uint32_t>(index / kEngineCount);
  return site;
}

Engine engine_of(std::uint32_t site) { return static_cast<Engine>(site / kOpcodeCount % kEngineCount); }

template <class T, class Less>
void keep_top(std::vector<T>& items, std::size_t count, Less less) {
  const std::size_t kept = std::min(count, items.size());
  std::partial_sort(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(kept), items.end(), less);
  items.resize(kept);
}

}  // namespace

CriticalPath find_critical_path(const Program& program, const ScheduleRecord& record) {
  CriticalPath path;
  if (program.instructions().empty()) return path;
  AUTOTUNE_CHECK(program.locations().size() < UINT32_MAX / (kEngineCount * kOpcodeCount),
                 "too many source locations to number the path's sites");
  InstructionId i = record.last;
  const double length = record.timing[i].finish;
  // The time up to which the instruction at hand counts on the path: its
  // finish, or, reached through the issue slot of an instruction that
  // overlapped it on the tensor engine, when that one could issue.
  double until = length;

  std::array<double, kEngineCount> busy{}, waiting{};
  std::array<double, kPathWaits> wait{};
  std::array<double, kPathSteps> reached{};
  double transpose = 0, startup = 0;
  const std::size_t sites =
      std::max<std::size_t>(program.locations().size(), 1) * kEngineCount * kOpcodeCount;
  std::vector<double> site_time(sites, 0.0);
  // Path time per link: a small direct-mapped cache in front of the map,
  // since a path crosses a few links over and over (a pipeline's hand-offs).
  std::unordered_map<std::uint64_t, double> link_time;
  struct Slot {
    std::uint64_t key = UINT64_MAX;
    double ns = 0;
  };
  std::array<Slot, 64> recent{};
  auto add_link = [&](std::uint64_t key, double ns) {
    Slot& slot = recent[(key * 0x9E3779B97F4A7C15ull) >> 58];
    if (slot.key != key) {
      if (slot.key != UINT64_MAX) link_time[slot.key] += slot.ns;
      slot = {key, 0.0};
    }
    slot.ns += ns;
  };

  for (;;) {
    ++path.instructions;
    const InstructionTiming& at = record.timing[i];
    const Opcode opcode = static_cast<Opcode>(at.site % kOpcodeCount);
    const Engine engine = engine_of(at.site);
    const int e = static_cast<int>(engine);
    const double own = until - at.start;
    const double fixed = engine == Engine::dma ? std::min(own, record.dma_fixed_ns) : 0.0;
    busy[e] += own - fixed;
    wait[static_cast<int>(PathWait::dma_fixed)] += fixed;
    if (engine != Engine::dma) startup += std::min(own, record.startup_ns[e]);
    if (opcode == Opcode::transpose) transpose += own;
    site_time[at.site] += own;

    // What bound the start: the engine's previous instruction when it
    // finished no earlier than the dependencies were ready (issue order wins
    // ties), else the dependency that was ready last, else nothing. Between
    // that bound and the start the instruction waited for a resource.
    const std::uint32_t position = record.engine_position[i];
    InstructionId previous = engine != Engine::dma && position > 0
                                 ? record.engine_order[static_cast<std::size_t>(e)][position - 1]
                                 : kNoInstruction;
    double previous_free = previous != kNoInstruction ? record.timing[previous].finish : 0.0;
    if (engine == Engine::tensor && !record.engine_bound.empty()) {
      previous = record.engine_bound[i];
      previous_free = record.engine_bound_time[i];
    }
    // The dependency ready last, as the scheduler computed it (a data
    // dependency over a buffer reuse ready at the same time).
    InstructionId dependency = kNoInstruction;
    DependencyKind kind = DependencyKind::data;
    double ready = 0;
    for (std::uint32_t k = record.edge_begin[i]; k < record.edge_begin[i + 1]; ++k) {
      const Dependency edge = record.edges[k];
      const InstructionTiming& producer = record.timing[edge.from()];
      const double t =
          dependency_ready_time(producer.finish, engine_of(producer.site), engine, record.semaphore_ns);
      if (dependency == kNoInstruction || t > ready ||
          (t == ready && edge.kind() == DependencyKind::data && kind == DependencyKind::buffer)) {
        dependency = edge.from();
        kind = edge.kind();
        ready = t;
      }
    }
    InstructionId next = kNoInstruction;
    PathStep step = PathStep::start;
    double bound = 0;
    if (previous != kNoInstruction && previous_free >= ready) {
      step = PathStep::engine_order;
      next = previous;
      bound = previous_free;
    } else if (dependency != kNoInstruction) {
      step = kind == DependencyKind::data ? PathStep::data : PathStep::buffer;
      next = dependency;
      bound = ready;
      const double latency = ready - record.timing[dependency].finish;
      wait[static_cast<int>(kind == DependencyKind::data ? PathWait::semaphore : PathWait::buffer)] +=
          latency;
      add_link((std::uint64_t(at.site) * sites + record.timing[dependency].site) * 2 +
                   static_cast<std::uint64_t>(kind),
               latency + (at.start - bound) + own);
    }
    // A transfer's wait for its descriptors (generators busy, then the
    // generation itself) comes before its wait for a queue.
    double resource = at.start - bound;
    if (engine == Engine::dma && !record.descriptors_ready.empty() && record.descriptors_ready[i] > bound) {
      const double descriptors = std::min(resource, record.descriptors_ready[i] - bound);
      wait[static_cast<int>(PathWait::dma_descriptor)] += descriptors;
      resource -= descriptors;
    }
    wait[static_cast<int>(resource_wait(engine))] += resource;
    const double next_until = next == kNoInstruction           ? 0.0
                              : step == PathStep::engine_order ? bound
                                                               : record.timing[next].finish;
    const double gap = at.start - next_until;
    waiting[e] += gap + fixed;
    reached[static_cast<int>(step)] += gap + own;
    if (next == kNoInstruction) break;
    AUTOTUNE_CHECK(next < i && gap >= 0 && next_until >= record.timing[next].start,
                   "critical path: an instruction starts before what bound it finished");
    i = next;
    until = next_until;
  }
  for (const Slot& slot : recent)
    if (slot.key != UINT64_MAX) link_time[slot.key] += slot.ns;

  const double to_s = 1e-9;
  path.length_s = length * to_s;
  for (int e = 0; e < kEngineCount; ++e) {
    path.busy_s[static_cast<std::size_t>(e)] = busy[e] * to_s;
    path.waiting_s[static_cast<std::size_t>(e)] = waiting[e] * to_s;
  }
  for (int w = 0; w < kPathWaits; ++w) path.wait_s[static_cast<std::size_t>(w)] = wait[w] * to_s;
  for (int s = 0; s < kPathSteps; ++s) path.reached_by_s[static_cast<std::size_t>(s)] = reached[s] * to_s;
  path.tensor_transpose_s = transpose * to_s;
  path.startup_s = startup * to_s;

  for (const auto& [key, ns] : link_time) {
    const std::uint64_t pair = key / 2;
    path.links.push_back(PathLink{site_of(pair / sites), site_of(pair % sites),
                                  static_cast<DependencyKind>(key % 2), ns * to_s});
  }
  keep_top(path.links, CriticalPath::kTopLinks,
           [](const PathLink& a, const PathLink& b) { return a.time_s > b.time_s; });
  for (std::size_t s = 0; s < sites; ++s)
    if (site_time[s] > 0) path.lines.push_back(PathLine{site_of(s), site_time[s] * to_s});
  keep_top(path.lines, CriticalPath::kTopLines,
           [](const PathLine& a, const PathLine& b) { return a.time_s > b.time_s; });
  return path;
}

nlohmann::json critical_path_json(const CriticalPath& path, const Program& program) {
  auto percent = [&](double s) { return path.length_s > 0 ? 100.0 * s / path.length_s : 0.0; };
  auto site = [&](const PathSite& s) {
    return nlohmann::json{{"engine", engine_name(s.engine)},
                          {"opcode", opcode_name(s.opcode)},
                          {"source", location_text(program, s.location)}};
  };
  nlohmann::json out = nlohmann::json::object();
  out["length_s"] = path.length_s;
  out["instructions"] = path.instructions;
  for (int e = 0; e < kEngineCount; ++e) {
    const std::string name(engine_name(static_cast<Engine>(e)));
    out["busy_percent"][name] = percent(path.busy_s[static_cast<std::size_t>(e)]);
    out["busy_s"][name] = path.busy_s[static_cast<std::size_t>(e)];
    out["waiting_percent"][name] = percent(path.waiting_s[static_cast<std::size_t>(e)]);
  }
  out["tensor_transpose_percent"] = percent(path.tensor_transpose_s);
  out["startup_percent"] = percent(path.startup_s);
  for (int w = 0; w < kPathWaits; ++w)
    out["wait_percent"][std::string(path_wait_name(static_cast<PathWait>(w)))] =
        percent(path.wait_s[static_cast<std::size_t>(w)]);
  for (int s = 0; s < kPathSteps; ++s)
    out["reached_by_percent"][std::string(path_step_name(static_cast<PathStep>(s)))] =
        percent(path.reached_by_s[static_cast<std::size_t>(s)]);
  nlohmann::json links = nlohmann::json::array();
  for (const PathLink& link : path.links)
    links.push_back({{"waiter", site(link.waiter)},
                     {"waits_on", site(link.waits_on)},
                     {"kind", dependency_kind_name(link.kind)},
                     {"percent", percent(link.time_s)}});
  out["links"] = links;
  nlohmann::json lines = nlohmann::json::array();
  for (const PathLine& line : path.lines) {
    nlohmann::json entry = site(line.site);
    entry["percent"] = percent(line.time_s);
    lines.push_back(entry);
  }
  out["lines"] = lines;
  return out;
}

}  // namespace autotune::sim
