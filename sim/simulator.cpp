#include "sim/simulator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <queue>

#include "core/error.hpp"
#include "sim/access.hpp"
#include "sim/dependency_tracker.hpp"
#include "sim/execute.hpp"
#include "sim/validate.hpp"

namespace autotune::sim {

namespace {

constexpr int kComputeEngines = 4;  // tensor, vector, scalar, gpsimd
using Interval = std::pair<double, double>;

// Length of the union of intervals sorted by start (they may overlap), merged
// into `merged` when given.
double merge_sorted(const std::vector<Interval>& sorted, std::vector<Interval>* merged) {
  double total = 0;
  double cur_start = 0, cur_end = -1;
  bool open = false;
  for (const auto& [s, e] : sorted) {
    if (!open || s > cur_end) {
      if (open) {
        total += cur_end - cur_start;
        if (merged) merged->push_back({cur_start, cur_end});
      }
      cur_start = s;
      cur_end = e;
      open = true;
    } else {
      cur_end = std::max(cur_end, e);
    }
  }
  if (open) {
    total += cur_end - cur_start;
    if (merged) merged->push_back({cur_start, cur_end});
  }
  return total;
}

// Length of the intersection of two unions of disjoint sorted intervals.
double intersection_length(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  double total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const double lo = std::max(a[i].first, b[j].first);
    const double hi = std::min(a[i].second, b[j].second);
    if (hi > lo) total += hi - lo;
    if (a[i].second < b[j].second)
      ++i;
    else
      ++j;
  }
  return total;
}

// Sweeps `count` lists of intervals, each sorted and disjoint (an in-order
// engine's busy times), in one linear merge: returns the time at least two
// are busy, and appends the union of all of them to `merged`.
double sweep_busy(const std::vector<Interval>* lists, int count, std::vector<Interval>& merged) {
  constexpr int kMaxLists = 8;
  std::size_t index[kMaxLists] = {};
  bool inside[kMaxLists] = {};
  int active = 0;
  double last = 0, multi = 0, open_start = 0;
  for (;;) {
    int next = -1;
    double when = INFINITY;
    for (int k = 0; k < count; ++k) {
      if (index[k] >= lists[k].size()) continue;
      const Interval& i = lists[k][index[k]];
      const double t = inside[k] ? i.second : i.first;
      // Ends before starts at equal times keep `active` exact.
      if (t < when || (t == when && inside[k] && next >= 0 && !inside[next])) {
        when = t;
        next = k;
      }
    }
    if (next < 0) break;
    if (active >= 2) multi += when - last;
    last = when;
    if (inside[next]) {
      inside[next] = false;
      ++index[next];
      if (--active == 0) merged.push_back({open_start, when});
    } else {
      inside[next] = true;
      if (active++ == 0) {
        if (!merged.empty() && merged.back().second >= when) {
          open_start = merged.back().first;
          merged.pop_back();
        } else {
          open_start = when;
        }
      }
    }
  }
  return multi;
}

class Scheduler {
 public:
  Scheduler(const Program& program, const TargetSpec& target, const ValidationResult& validation, bool record)
      : program_(program), t_(target), record_(record) {
    for (int e = 0; e < kComputeEngines; ++e) {
      cycle_ns_[e] = 1e9 / t_.clock_hz[e];
      semaphore_ns_[e] = t_.cross_engine_dependency_cycles * cycle_ns_[e];
    }
    cycle_ns_[static_cast<int>(Engine::dma)] = 0;
    semaphore_ns_[static_cast<int>(Engine::dma)] = 0;
    sbuf_ =
        DependencyTracker(t_.partitions, std::max<std::int64_t>(validation.sbuf_peak_bytes_per_partition, 1),
                          t_.partitions, 1024);
    psum_ =
        DependencyTracker(t_.partitions, std::max<std::int64_t>(validation.psum_peak_bytes_per_partition, 1),
                          t_.partitions, t_.psum_bank_bytes);
    // Only HBM tensors that some instruction writes can carry a dependency.
    hbm_index_.assign(program.buffers().size(), -1);
    for (const Instruction& in : program.instructions()) {
      const Buffer& b = program.buffer(in.dst.buffer);
      if (b.space == MemorySpace::hbm && hbm_index_[in.dst.buffer] < 0) {
        hbm_index_[in.dst.buffer] = static_cast<int>(hbm_.size());
        hbm_.emplace_back(b.rows, b.cols, 128, 512);
      }
    }
    queues_.resize(static_cast<std::size_t>(t_.dma_queues));
    dge_.resize(static_cast<std::size_t>(std::max(t_.dge_instances, 0)));
    if (!dge_.empty()) descriptors_ready_.assign(program.size(), 0.0);
    if (t_.vector_scalar_psum_bank_conflicts)
      psum_bank_ports_.resize(static_cast<std::size_t>(t_.psum_banks));
    location_busy_ns_.assign(program.locations().size(), 0.0);
    location_count_.assign(program.locations().size(), 0);
    std::size_t per_engine[kEngineCount] = {};
    for (const Instruction& in : program.instructions()) ++per_engine[static_cast<int>(in.engine)];
    for (int e = 0; e < kComputeEngines; ++e) compute_busy_[e].reserve(per_engine[e]);
    dma_busy_.reserve(per_engine[static_cast<int>(Engine::dma)]);
    if (record_) timeline_.resize(program.size());
    // The shortest PE instruction: a matmul at the documented fixed minimum
    // plus the access start-up every instruction pays. Nothing documents how
    // fast the engine accepts instructions for tiles side by side; taking its
    // whole-array rate as the limit is the less favourable reading (tiling
    // then helps only matmuls longer than the minimum).
    pe_issue_ns_ =
        (t_.matmul_min_cycles + t_.access_startup_cycles) * cycle_ns_[static_cast<int>(Engine::tensor)];
    const bool tiled = std::any_of(program.instructions().begin(), program.instructions().end(),
                                   [](const Instruction& in) { return !in.pe_tile.whole(); });
    // Without a tiled matmul every PE instruction takes the whole array: one
    // cell group schedules the same and keeps the per-instruction work flat.
    pe_group_size_ = tiled ? std::clamp(t_.pe_tile_min, 1, t_.max_contraction) : t_.max_contraction;
    pe_grid_ = std::max(1, t_.max_contraction / pe_group_size_);
    pe_cells_.assign(std::size_t(pe_grid_) * std::size_t(pe_grid_), PeCells{});
    if (tiled) {
      pe_bound_.assign(program.size(), kNoInstruction);
      pe_bound_time_.assign(program.size(), 0.0);
    }
  }

  // Event-driven schedule. Dependencies are first derived in program order
  // (edges from each instruction to the earlier ones it must wait for); then
  // instructions are placed in the order they become ready: each compute
  // engine takes its own instructions in program order, a DMA transfer may
  // start as soon as its dependencies are done, and shared resources (DMA
  // queues, ports) are granted in order of readiness.
  void run() {
    derive_dependencies();
    const auto& instructions = program_.instructions();
    const std::size_t n = instructions.size();
    timing_.assign(n, InstructionTiming{});
    dep_ready_.assign(n, 0.0);
    stationary_ready_.assign(n, 0.0);
    std::vector<std::uint32_t>& engine_position = engine_position_;
    engine_position.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
      const int e = static_cast<int>(instructions[i].engine);
      if (e < kComputeEngines) {
        engine_position[i] = static_cast<std::uint32_t>(engine_order_[e].size());
        engine_order_[e].push_back(static_cast<InstructionId>(i));
      }
    }
    using Candidate =
        std::pair<double, InstructionId>;  // (ready time, id): earliest first, then program order
    std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> ready;
    for (std::size_t i = 0; i < n; ++i) {
      if (remaining_[i] != 0) continue;
      const int e = static_cast<int>(instructions[i].engine);
      if (e == static_cast<int>(Engine::dma) || engine_position[i] == 0)
        ready.push({0.0, static_cast<InstructionId>(i)});
    }
    std::size_t engine_head[kComputeEngines] = {};
    std::size_t scheduled = 0;
    while (!ready.empty()) {
      const InstructionId id = ready.top().second;
      ready.pop();
      const Instruction& in = instructions[id];
      schedule(id, in);
      ++scheduled;
      const int e = static_cast<int>(in.engine);
      if (e < kComputeEngines) {
        // The engine's next instruction may now issue, if its data is ready.
        const std::size_t next = ++engine_head[e];
        if (next < engine_order_[e].size()) {
          const InstructionId successor = engine_order_[e][next];
          if (remaining_[successor] == 0)
            ready.push({std::max(dep_ready_[successor], engine_free_[e]), successor});
        }
      }
      for (std::uint32_t k = successor_begin_[id]; k < successor_begin_[id + 1]; ++k) {
        const Edge& edge = successors_[k];
        const Engine consumer = instructions[edge.instruction].engine;
        const double t = dependency_ready_time(timing_[id].finish, in.engine, consumer, semaphore_ns_);
        dep_ready_[edge.instruction] = std::max(dep_ready_[edge.instruction], t);
        if (edge.stationary)
          stationary_ready_[edge.instruction] = std::max(stationary_ready_[edge.instruction], t);
        if (--remaining_[edge.instruction] != 0) continue;
        const int ce = static_cast<int>(consumer);
        if (consumer == Engine::dma) {
          ready.push({dep_ready_[edge.instruction], edge.instruction});
        } else if (engine_position[edge.instruction] == engine_head[ce]) {
          ready.push({std::max(dep_ready_[edge.instruction], engine_free_[ce]), edge.instruction});
        }
      }
    }
    AUTOTUNE_CHECK(scheduled == n, "the dependency graph left instructions unscheduled");
  }

  void fill(SimResult& result, const ValidationResult& validation) const;

  // A hash of the derived dependency graph: each instruction's predecessors
  // with their kinds.
  std::uint64_t dependency_hash() {
    derive_dependencies();
    std::uint64_t h = 0xcbf29ce484222325ULL;
    auto mix = [&h](std::uint64_t v) {
      for (int byte = 0; byte < 8; ++byte) {
        h ^= (v >> (8 * byte)) & 0xff;
        h *= 0x100000001b3ULL;
      }
    };
    mix(edge_begin_.size());
    for (const std::uint32_t begin : edge_begin_) mix(begin);
    for (const Dependency& e : edges_)
      mix(e.from()), mix(e.stationary()), mix(static_cast<std::uint64_t>(e.kind()));
    return h;
  }

 private:
  struct Located {
    DependencyTracker* tracker;
    Region region;
    bool write;
  };

  Located locate(const View& v, bool write) {
    const Buffer& b = program_.buffer(v.buffer);
    if (b.space == MemorySpace::hbm) {
      const int index = hbm_index_[v.buffer];
      return {index < 0 ? nullptr : &hbm_[static_cast<std::size_t>(index)],
              Region{v.row_begin, v.row_end, v.col_begin, v.col_end}, write};
    }
    const std::int64_t eb = dtype_bytes(b.dtype);
    return {b.space == MemorySpace::sbuf ? &sbuf_ : &psum_,
            Region{b.partition_offset + v.row_begin, b.partition_offset + v.row_end,
                   b.byte_offset + v.col_begin * eb, b.byte_offset + v.col_end * eb},
            write};
  }

  struct Edge {
    InstructionId instruction;
    bool stationary;  // the dependency is on the matmul's stationary operand
  };
  void derive_dependencies();
  // `vector_speedup`: vector_mode_speedup(in), computed once by the caller.
  double compute_cycles(const Instruction& in, double vector_speedup) const;
  // The vector engine's performance-mode multiplier for `in` (1 outside the
  // documented cases and on other engines).
  double vector_mode_speedup(const Instruction& in) const;
  void schedule(InstructionId id, const Instruction& in);
  double schedule_dma(InstructionId id, const Instruction& in, double ready, TimelineEntry& entry);
  // Whether a transposing copy goes through the target's hardware transposer.
  bool uses_transposer(const Instruction& in) const;

  const Program& program_;
  const TargetSpec& t_;
  bool record_;
  double cycle_ns_[kEngineCount] = {};
  std::array<double, kEngineCount> semaphore_ns_{};
  DependencyTracker sbuf_, psum_;
  std::vector<int> hbm_index_;
  std::vector<DependencyTracker> hbm_;
  std::vector<ResourceCalendar> queues_;
  ResourceCalendar all_queues_;
  std::vector<ResourceCalendar> dge_;      // descriptor generators
  std::vector<double> descriptors_ready_;  // per instruction, when its descriptors exist (with generators)
  double dge_instructions_ = 0;
  double dge_busy_ns_ = 0;
  bool queues_in_sync_ = true;
  int queue_cursor_ = 0;
  ResourceCalendar sbuf_port_, psum_port_;
  std::vector<ResourceCalendar> psum_bank_ports_;
  std::vector<ResourceCalendar*> held_;  // the resources the instruction being placed holds

  // The dependency graph: successors of instruction i are
  // successors_[successor_begin_[i] .. successor_begin_[i + 1]); its
  // dependencies are edges_[edge_begin_[i] .. edge_begin_[i + 1]).
  std::vector<std::uint32_t> successor_begin_;
  std::vector<Edge> successors_;
  std::vector<Dependency> edges_;
  std::vector<std::uint32_t> edge_begin_;
  // Per instruction: when it ran and its site (with the dependencies and the
  // engine order, what the critical path walks back through), when its
  // dependencies were done, how many are unfinished.
  std::vector<InstructionTiming> timing_;
  std::vector<double> dep_ready_;
  std::vector<std::uint32_t> remaining_;  // unfinished dependencies per instruction
  std::vector<double> stationary_ready_;
  std::vector<std::uint32_t> engine_position_;
  std::vector<InstructionId> engine_order_[kComputeEngines];
  InstructionId last_ = 0;  // the instruction that finishes last

  double engine_free_[kEngineCount] = {};
  // The tensor engine's PE array as a grid of cell groups, each the target's
  // smallest PE tile square (one group when it has no tiling mode): per
  // group, when its last instruction finishes and started, which it was, and
  // the stationary operand loaded there.
  struct PeCells {
    double free = 0, last_start = 0;
    InstructionId last = kNoInstruction;
    View stationary{UINT32_MAX, 0, 0, 0, 0};
  };
  int pe_grid_ = 1;          // groups per side
  int pe_group_size_ = 128;  // PE rows (and columns) per group
  std::vector<PeCells> pe_cells_;
  // Consecutive PE instructions start at least pe_issue_ns_ apart (program
  // order); when the next may issue, and the last PE instruction.
  double pe_issue_ns_ = 0, pe_issue_free_ = 0;
  InstructionId last_pe_ = kNoInstruction;
  // With tiled matmuls in the program: per instruction, the earlier PE
  // instruction whose cells or issue slot bound its start, and when that
  // freed it (for the critical path); empty otherwise.
  std::vector<InstructionId> pe_bound_;
  std::vector<double> pe_bound_time_;
  // The PE cell groups `in` occupies: [row_begin, row_end) x [col_begin, col_end).
  struct CellRange {
    int row_begin, row_end, col_begin, col_end;
  };
  CellRange pe_cells_of(const Instruction& in) const;
  // The earliest start of a PE instruction no earlier than `start` (its
  // engine and dependencies): its cells free, the issue interval after the
  // previous PE instruction, and a new stationary operand loaded.
  double place_on_pe_array(InstructionId id, const Instruction& in, double start, double stationary_ready);
  void occupy_pe_array(InstructionId id, const Instruction& in, double start, double end);
  // When the next PE instruction could start at the earliest: the issue
  // interval and the first cell group to come free.
  double pe_next_free() const;

  // Statistics.
  double makespan_ = 0;
  double busy_ns_[kEngineCount] = {};
  double stall_ns_[kEngineCount] = {};
  std::int64_t count_[kEngineCount] = {};
  double elements_[kEngineCount] = {};
  std::vector<Interval> compute_busy_[kComputeEngines];
  std::vector<Interval> dma_busy_;
  double queue_busy_ns_ = 0;
  std::int64_t hbm_read_bytes_ = 0, hbm_write_bytes_ = 0, dma_bytes_ = 0, small_dma_ = 0, transposed_dma_ = 0;
  double dma_efficiency_weighted_ = 0;
  double matmul_flops_ = 0, pe_ideal_ns_ = 0;
  std::int64_t exposed_stationary_loads_ = 0;
  std::vector<double> location_busy_ns_;
  std::vector<std::int64_t> location_count_;
  std::vector<TimelineEntry> timeline_;
  std::vector<DmaSlice> slices_;
};

Scheduler::CellRange Scheduler::pe_cells_of(const Instruction& in) const {
  if (in.opcode != Opcode::matmul || in.pe_tile.whole()) return {0, pe_grid_, 0, pe_grid_};
  const PeTile& tile = in.pe_tile;
  auto clamp = [&](int v) { return std::clamp(v, 0, pe_grid_); };
  // Validation keeps tiles on group boundaries; rounding outwards covers the rest.
  return {clamp(tile.row_start / pe_group_size_),
          clamp((tile.row_start + tile.row_size + pe_group_size_ - 1) / pe_group_size_),
          clamp(tile.col_start / pe_group_size_),
          clamp((tile.col_start + tile.col_size + pe_group_size_ - 1) / pe_group_size_)};
}

double Scheduler::place_on_pe_array(InstructionId id, const Instruction& in, double start,
                                    double stationary_ready) {
  const CellRange cells = pe_cells_of(in);
  double cells_free = 0, last_start = 0;
  InstructionId cells_bound = kNoInstruction;
  const View& st = in.src[0];
  bool same = true;
  for (int r = cells.row_begin; r < cells.row_end; ++r)
    for (int c = cells.col_begin; c < cells.col_end; ++c) {
      const PeCells& cell = pe_cells_[std::size_t(r * pe_grid_ + c)];
      if (cell.last != kNoInstruction && (cells_bound == kNoInstruction || cell.free > cells_free))
        cells_free = cell.free, cells_bound = cell.last;
      last_start = std::max(last_start, cell.last_start);
      same = same && st.buffer == cell.stationary.buffer && st.row_begin == cell.stationary.row_begin &&
             st.row_end == cell.stationary.row_end && st.col_begin == cell.stationary.col_begin &&
             st.col_end == cell.stationary.col_end;
    }
  if (!pe_bound_.empty()) {
    // What bound the start on the engine: its cells, else the issue slot.
    const bool by_cells = cells_bound != kNoInstruction && cells_free >= pe_issue_free_;
    pe_bound_[id] = by_cells ? cells_bound : last_pe_;
    pe_bound_time_[id] = by_cells ? cells_free : (last_pe_ == kNoInstruction ? 0.0 : pe_issue_free_);
  }
  start = std::max({start, cells_free, pe_issue_free_});
  if (!same) {
    // Loading a new stationary operand takes a fraction of a matmul of its
    // size and overlaps the previous instruction on the same cells once its
    // data is ready.
    const int e = static_cast<int>(Engine::tensor);
    const bool fp32 = program_.buffer(st.buffer).dtype == Dtype::fp32;
    const double load_ns = t_.stationary_load_fraction * std::max(t_.matmul_min_cycles, double(st.cols())) *
                           (fp32 ? t_.matmul_fp32_factor : 1.0) * cycle_ns_[e];
    const double loaded = std::max(stationary_ready, last_start) + load_ns;
    if (loaded > start) ++exposed_stationary_loads_;
    start = std::max(start, loaded);
  }
  return start;
}

void Scheduler::occupy_pe_array(InstructionId id, const Instruction& in, double start, double end) {
  const CellRange cells = pe_cells_of(in);
  for (int r = cells.row_begin; r < cells.row_end; ++r)
    for (int c = cells.col_begin; c < cells.col_end; ++c) {
      PeCells& cell = pe_cells_[std::size_t(r * pe_grid_ + c)];
      cell.free = end;
      cell.last_start = start;
      cell.last = id;
      cell.stationary = in.src[0];
    }
  pe_issue_free_ = start + pe_issue_ns_;
  last_pe_ = id;
}

double Scheduler::pe_next_free() const {
  double first_free = INFINITY;
  for (const PeCells& cell : pe_cells_) first_free = std::min(first_free, cell.free);
  return std::max(pe_issue_free_, first_free);
}

double Scheduler::vector_mode_speedup(const Instruction& in) const {
  if (in.engine != Engine::vector) return 1;
  const bool copy_or_scalar =
      in.opcode == Opcode::tensor_copy || (in.opcode == Opcode::tensor_scalar && !in.accumulate_dst);
  if (!copy_or_scalar && in.opcode != Opcode::tensor_tensor) return 1;
  // Every tensor operand 2-byte; count those in PSUM.
  int in_psum = 0;
  auto operand = [&](const View& view) {
    const Buffer& b = program_.buffer(view.buffer);
    if (b.space == MemorySpace::psum) ++in_psum;
    return dtype_bytes(b.dtype) == 2;
  };
  bool all_16bit = operand(in.dst);
  for (int s = 0; s < in.src_count; ++s) all_16bit = operand(in.src[s]) && all_16bit;
  if (!all_16bit) return 1;
  if (in.opcode == Opcode::tensor_tensor) {
    // Both inputs in SBUF; the output may be anywhere.
    const bool inputs_in_sbuf = program_.buffer(in.src[0].buffer).space == MemorySpace::sbuf &&
                                program_.buffer(in.src[1].buffer).space == MemorySpace::sbuf;
    return inputs_in_sbuf ? t_.vector_mode_tensor_tensor_sbuf : 1;
  }
  if (in_psum == 0) return t_.vector_mode_copy_scalar_sbuf;
  return in_psum == 1 ? t_.vector_mode_copy_scalar_psum : 1;
}

double Scheduler::compute_cycles(const Instruction& in, double vector_speedup) const {
  const double min_cycles = t_.instruction_min_cycles;
  const View& src = in.src_count > 0 ? in.src[0] : in.dst;
  bool psum_input = false;
  for (int s = 0; s < in.src_count; ++s)
    psum_input = psum_input || program_.buffer(in.src[s].buffer).space == MemorySpace::psum;
  double per_cycle = 1;
  switch (in.engine) {
    case Engine::vector:
      per_cycle = t_.vector_elements_per_cycle * vector_speedup;
      break;
    case Engine::scalar:
      per_cycle = t_.scalar_elements_per_cycle;
      break;
    case Engine::gpsimd:
      per_cycle = t_.gpsimd_elements_per_cycle;
      break;
    default:
      break;
  }
  const double n = static_cast<double>(src.cols()) / per_cycle;
  switch (in.opcode) {
    case Opcode::matmul: {
      // max(min(64, M), N) with a fixed minimum of 64 PE cycles.
      const double m = in.src[0].cols();
      const double moving = in.src[1].cols();
      const double cycles =
          std::max(t_.matmul_min_cycles, std::max(std::min(t_.matmul_min_cycles, m), moving));
      const bool fp32 = program_.buffer(in.src[0].buffer).dtype == Dtype::fp32;
      return cycles * (fp32 ? t_.matmul_fp32_factor : 1.0);
    }
    case Opcode::transpose: {
      // A matmul against the identity: the source [P, F] is the stationary
      // operand (M = F), the identity [P, P] moves.
      const double cycles =
          std::max(t_.matmul_min_cycles,
                   std::max(std::min(t_.matmul_min_cycles, double(src.cols())), double(src.rows())));
      const bool fp32 = program_.buffer(src.buffer).dtype == Dtype::fp32;
      return cycles * (fp32 ? t_.matmul_fp32_factor : 1.0);
    }
    case Opcode::tensor_scalar: {
      // With a reduction of the result (nki.isa.tensor_scalar_reduce): one more minimum.
      const double reduction = in.accumulate_dst ? min_cycles : 0.0;
      if (in.alu0 == AluOp::pow || in.alu1 == AluOp::pow) {
        // A power (a reciprocal, a reciprocal square root) is no cheaper than
        // the engine's documented transcendental: the vector engine's
        // reciprocal, max(MIN_II, 8N), and GpSimd's rsqrt, 4x the scalar
        // engine's (NKI engine selection notes); no performance mode.
        const double elements = static_cast<double>(src.cols());
        if (in.engine == Engine::vector)
          return std::max(min_cycles, t_.reciprocal_cycles_per_element * elements) + reduction;
        if (in.engine == Engine::gpsimd)
          return std::max(min_cycles, t_.gpsimd_power_cycles_per_element * elements) + reduction;
      }
      return std::max(min_cycles, n) + reduction;
    }
    case Opcode::activation:
      // With a row sum (nki.isa.activation_reduce): the hardware runs a
      // second instruction, ActReadAccumulator, "roughly 64 ScalarE cycles"
      // (Trainium architecture guide), to write the sum out.
      return std::max(min_cycles, n) + (in.accumulate_dst ? min_cycles : 0.0);
    case Opcode::tensor_copy:
    case Opcode::memset:
      return std::max(min_cycles, n);
    case Opcode::tensor_tensor:
    case Opcode::scalar_tensor_tensor:  // the scalar op rides along (nki.isa.scalar_tensor_tensor)
      return std::max(min_cycles, psum_input ? n : t_.tensor_tensor_cycles_per_element * n);
    case Opcode::tensor_tensor_scan:
      // The legacy nki.isa cost notes: max(MIN_II, 2N) vector cycles,
      // wherever its inputs are.
      return std::max(min_cycles, t_.tensor_tensor_scan_cycles_per_element * n);
    case Opcode::tensor_reduce:
      return n;
    case Opcode::reciprocal:
      return std::max(min_cycles, t_.reciprocal_cycles_per_element * n);
    case Opcode::iota:
    case Opcode::affine_select:
      return t_.gpsimd_fixed_cycles + n;
    case Opcode::dma_copy:
      break;
  }
  return min_cycles;
}

bool Scheduler::uses_transposer(const Instruction& in) const {
  const View& src = in.src[0];
  const Buffer& sb = program_.buffer(src.buffer);
  const Buffer& db = program_.buffer(in.dst.buffer);
  const int element = t_.dma_transpose_element_bytes;
  return element > 0 && db.space == MemorySpace::sbuf && dtype_bytes(sb.dtype) == element &&
         dtype_bytes(db.dtype) == element && src.rows() % t_.dma_transpose_block_rows == 0 &&
         in.dst.rows() <= t_.dma_transpose_block_cols;
}

double Scheduler::schedule_dma(InstructionId id, const Instruction& in, double ready, TimelineEntry& entry) {
  const View& src = in.src[0];
  const Buffer& sb = program_.buffer(src.buffer);
  const Buffer& db = program_.buffer(in.dst.buffer);
  const std::int64_t elem_bytes = std::max(dtype_bytes(sb.dtype), dtype_bytes(db.dtype));
  const std::int64_t elements = src.elements();
  const std::int64_t bytes = elements * elem_bytes;
  // Contiguous chunks: a partition's slice where both sides hold it in one
  // piece (a folded HBM view over part of its rows breaks it into row
  // pieces), or one per element for a transposing copy, which moves data
  // element by element.
  const std::int64_t run = std::min(src.contiguous_elements(sb.cols), in.dst.contiguous_elements(db.cols));
  std::int64_t chunk_bytes = run * elem_bytes, chunks = elements / run;
  const bool touches_hbm = sb.space == MemorySpace::hbm || db.space == MemorySpace::hbm;
  double efficiency_cap = 1;
  double descriptor_instructions = 0;
  if (in.transpose) {
    // The hardware transposer takes whole blocks (trn2: 16 partitions x up
    // to 128 two-byte elements) of a source whose shape meets its rules, at
    // no more than the documented share of the queues' bandwidth, after a
    // descriptor generator has issued it; any other transposing copy moves
    // one element per chunk.
    if (uses_transposer(in)) {
      // Blocks of block_rows source partitions x (destination partitions)
      // elements; a transfer of n [R, P] blocks is one DGE instruction per
      // dge_source_partitions source partitions from SBUF, one from HBM (a
      // strided 3-d pattern covers every row).
      const std::int64_t block_rows = t_.dma_transpose_block_rows;
      const std::int64_t block_cols = in.dst.rows();
      chunks = (src.rows() / block_rows) * ((src.cols() + block_cols - 1) / block_cols);
      chunk_bytes = std::max<std::int64_t>(1, bytes / chunks);
      const bool from_hbm = sb.space == MemorySpace::hbm;
      efficiency_cap = from_hbm ? t_.dma_transpose_hbm_efficiency : t_.dma_transpose_sbuf_efficiency;
      if (t_.dge_instances > 0)
        descriptor_instructions =
            from_hbm ? 1.0 : std::max(1.0, double(src.rows()) / t_.dge_source_partitions);
    } else {
      chunk_bytes = elem_bytes;
      chunks = elements;
    }
  }
  double bytes_per_ns = t_.dma_queue_bytes_per_s * 1e-9;
  // The HBM ceiling, shared by all queues when they all stream.
  if (touches_hbm) bytes_per_ns = std::min(bytes_per_ns, t_.hbm_bytes_per_s * 1e-9 / t_.dma_queues);
  const double curve = double(chunk_bytes) / (double(chunk_bytes) + t_.dma_efficiency_half_bytes);
  const double efficiency = std::min(efficiency_cap, curve);
  const double work_ns =
      efficiency < curve
          ? double(bytes) / (bytes_per_ns * efficiency)
          : double(chunks) * (double(chunk_bytes) + t_.dma_efficiency_half_bytes) / bytes_per_ns;
  const std::int64_t split_limit =
      std::max<std::int64_t>(chunks, static_cast<std::int64_t>(double(bytes) / t_.dma_min_bytes_per_queue));
  const int parts = static_cast<int>(std::clamp<std::int64_t>(split_limit, 1, t_.dma_queues));
  const double part_ns = work_ns / parts;

  if (descriptor_instructions > 0) {
    // The transfer's DGE instructions, split evenly over the generators when
    // there are enough of them to go round (else on the one free first), each
    // share at its generator's earliest gap; the data moves once every
    // descriptor exists. The count may be fractional: the partitions per
    // instruction is an estimate the calibration may fit.
    const double total_ns = descriptor_instructions * t_.dge_instruction_s * 1e9;
    const int shares = descriptor_instructions >= double(dge_.size()) ? int(dge_.size()) : 1;
    const double share_ns = total_ns / shares;
    double generated = ready;
    std::vector<bool> used(dge_.size(), false);
    for (int k = 0; k < shares; ++k) {
      std::size_t best = dge_.size();
      double best_start = INFINITY;
      for (std::size_t g = 0; g < dge_.size(); ++g) {
        if (used[g]) continue;
        const double start = dge_[g].earliest(ready, share_ns);
        if (start < best_start) best = g, best_start = start;
      }
      used[best] = true;
      dge_[best].reserve(best_start, best_start + share_ns);
      generated = std::max(generated, best_start + share_ns);
    }
    ready = generated;
    if (!descriptors_ready_.empty()) descriptors_ready_[id] = generated;
    dge_instructions_ += descriptor_instructions;
    dge_busy_ns_ += total_ns;
  }
  double first_start = INFINITY, data_end = 0;
  if (parts == t_.dma_queues && queues_in_sync_) {
    // Every transfer so far used all queues alike, so their calendars are
    // identical: one calendar stands for all of them.
    const double start = all_queues_.earliest(ready, part_ns);
    all_queues_.reserve(start, start + part_ns);
    first_start = start;
    data_end = start + part_ns;
    if (record_)
      for (int q = 0; q < t_.dma_queues; ++q)
        slices_.push_back({id, q, start * 1e-9, (start + part_ns) * 1e-9});
  } else {
    if (queues_in_sync_) {
      queues_in_sync_ = false;
      for (auto& queue : queues_) queue = all_queues_;
    }
    for (int p = 0; p < parts; ++p) {
      const int q = (queue_cursor_ + p) % t_.dma_queues;
      ResourceCalendar& queue = queues_[static_cast<std::size_t>(q)];
      const double start = queue.earliest(ready, part_ns);
      queue.reserve(start, start + part_ns);
      first_start = std::min(first_start, start);
      data_end = std::max(data_end, start + part_ns);
      if (record_) slices_.push_back({id, q, start * 1e-9, (start + part_ns) * 1e-9});
    }
  }
  entry.dma_queue = queue_cursor_;
  entry.dma_queue_count = parts;
  queue_cursor_ = (queue_cursor_ + parts) % t_.dma_queues;
  const double end = data_end + t_.dma_fixed_cost_s * 1e9;

  queue_busy_ns_ += work_ns;
  dma_busy_.push_back({first_start, end});
  dma_bytes_ += bytes;
  if (sb.space == MemorySpace::hbm) hbm_read_bytes_ += bytes;
  if (db.space == MemorySpace::hbm) hbm_write_bytes_ += bytes;
  if (chunk_bytes < t_.dma_small_transfer_bytes) ++small_dma_;
  if (in.transpose) ++transposed_dma_;
  dma_efficiency_weighted_ += efficiency * double(bytes);
  entry.bytes = bytes;
  entry.start_s = first_start;
  return end;
}

void Scheduler::derive_dependencies() {
  const auto& instructions = program_.instructions();
  const std::size_t n = instructions.size();
  AUTOTUNE_CHECK(n < Dependency::kMaxInstructions, "a program of 2^30 instructions or more");
  std::vector<Dependency>& edges = edges_;
  edges.clear();
  edges.reserve(n * 3);
  edge_begin_.resize(n + 1);
  remaining_.assign(n, 0);
  struct Seen {
    InstructionId from;
    std::uint32_t edge;
  };
  Seen seen[8];
  for (std::size_t i = 0; i < n; ++i) {
    edge_begin_[i] = static_cast<std::uint32_t>(edges.size());
    const Instruction& in = instructions[i];
    const AccessList accesses = instruction_accesses(in);
    Located located[7];
    int seen_count = 0;
    for (int a = 0; a < accesses.count; ++a) {
      located[a] = locate(*accesses.items[a].view, accesses.items[a].write);
      if (located[a].tracker == nullptr) continue;
      const bool stationary = a == 0 && in.opcode == Opcode::matmul;
      // A read conflicts with earlier writes (read after write: data); a
      // write with earlier reads and writes of the address (its reuse).
      const DependencyKind kind = located[a].write ? DependencyKind::buffer : DependencyKind::data;
      located[a].tracker->conflicts(located[a].region, located[a].write, [&](InstructionId from) {
        // Drop repeats of the last few predecessors (one record spans several
        // buckets); a predecessor both read and overwritten is a data dependency.
        for (int k = 0; k < seen_count; ++k)
          if (seen[k].from == from && !stationary) {
            if (kind == DependencyKind::data) edges[seen[k].edge].set_kind(kind);
            return;
          }
        if (seen_count < 8) seen[seen_count++] = {from, static_cast<std::uint32_t>(edges.size())};
        edges.emplace_back(from, kind, stationary);
      });
    }
    for (int a = 0; a < accesses.count; ++a)
      if (located[a].tracker != nullptr)
        located[a].tracker->record(located[a].region, located[a].write, in.engine,
                                   static_cast<InstructionId>(i));
  }
  AUTOTUNE_CHECK(edges.size() < UINT32_MAX, "more dependencies than 32 bits count");
  edge_begin_[n] = static_cast<std::uint32_t>(edges.size());
  successor_begin_.assign(n + 1, 0);
  for (const Dependency& e : edges) ++successor_begin_[e.from() + 1];
  for (std::size_t i = 0; i < n; ++i) successor_begin_[i + 1] += successor_begin_[i];
  successors_.resize(edges.size());
  std::vector<std::uint32_t> fill = successor_begin_;
  for (std::size_t i = 0; i < n; ++i) {
    remaining_[i] = edge_begin_[i + 1] - edge_begin_[i];
    for (std::uint32_t k = edge_begin_[i]; k < edge_begin_[i + 1]; ++k)
      successors_[fill[edges[k].from()]++] = Edge{static_cast<InstructionId>(i), edges[k].stationary()};
  }
}

void Scheduler::schedule(InstructionId id, const Instruction& in) {
  bool touches_sbuf = false, touches_psum = false;
  const AccessList accesses = instruction_accesses(in);
  for (int a = 0; a < accesses.count; ++a) {
    const MemorySpace space = program_.buffer(accesses.items[a].view->buffer).space;
    touches_sbuf = touches_sbuf || space == MemorySpace::sbuf;
    touches_psum = touches_psum || space == MemorySpace::psum;
  }
  const double ready = dep_ready_[id];
  const double stationary_ready = stationary_ready_[id];

  TimelineEntry entry;
  entry.instruction = id;
  entry.opcode = in.opcode;
  entry.engine = in.engine;
  entry.location = in.location;
  const int e = static_cast<int>(in.engine);
  double start = 0, end = 0;
  if (in.engine == Engine::dma) {
    end = schedule_dma(id, in, ready, entry);
    start = entry.start_s;
    // Waiting for a queue, once the descriptors exist.
    stall_ns_[e] += start - (descriptors_ready_.empty() ? ready : std::max(ready, descriptors_ready_[id]));
    entry.dependency_wait_s = 0;
  } else {
    const double vector_speedup = vector_mode_speedup(in);
    const double duration = (compute_cycles(in, vector_speedup) + t_.access_startup_cycles) * cycle_ns_[e];
    start = std::max(engine_free_[e], ready);
    if (in.engine == Engine::tensor) start = place_on_pe_array(id, in, start, stationary_ready);
    // Shared ports and buses: trn1's SBUF port (vector, GpSimd) and PSUM port
    // (vector, scalar); trn2's bus between the vector performance modes and
    // GpSimd, and its PSUM banks (vector and scalar collide on a bank).
    const bool vector = in.engine == Engine::vector, gpsimd = in.engine == Engine::gpsimd;
    const bool sbuf_port =
        touches_sbuf && ((t_.vector_gpsimd_share_sbuf_port && (vector || gpsimd)) ||
                         (t_.vector_mode_shares_gpsimd_sbuf_bus && (gpsimd || vector_speedup > 1)));
    const bool psum_port =
        t_.vector_scalar_share_psum_port && touches_psum && (vector || in.engine == Engine::scalar);
    held_.clear();
    if (sbuf_port) held_.push_back(&sbuf_port_);
    if (psum_port) held_.push_back(&psum_port_);
    if (t_.vector_scalar_psum_bank_conflicts && touches_psum && (vector || in.engine == Engine::scalar))
      for (int a = 0; a < accesses.count; ++a) {
        const View& v = *accesses.items[a].view;
        const Buffer& b = program_.buffer(v.buffer);
        if (b.space != MemorySpace::psum) continue;
        const std::int64_t eb = dtype_bytes(b.dtype);
        const std::int64_t first = (b.byte_offset + v.col_begin * eb) / t_.psum_bank_bytes;
        const std::int64_t last = (b.byte_offset + v.col_end * eb - 1) / t_.psum_bank_bytes;
        for (std::int64_t bank = first; bank <= last && bank < std::int64_t(psum_bank_ports_.size()); ++bank)
          if (std::find(held_.begin(), held_.end(), &psum_bank_ports_[std::size_t(bank)]) == held_.end())
            held_.push_back(&psum_bank_ports_[std::size_t(bank)]);
      }
    if (!held_.empty()) {
      // The earliest start at which every held resource is free for the whole duration.
      for (;;) {
        double s = start;
        for (ResourceCalendar* r : held_) s = r->earliest(s, duration);
        if (s == start) break;
        start = s;
      }
      for (ResourceCalendar* r : held_) r->reserve(start, start + duration);
    }
    end = start + duration;
    if (in.engine == Engine::tensor) {
      occupy_pe_array(id, in, start, end);
      if (in.opcode == Opcode::matmul) {
        const double k = in.src[0].rows(), m = in.src[0].cols(), n = in.src[1].cols();
        const double flops = 2.0 * k * m * n;
        matmul_flops_ += flops;
        pe_ideal_ns_ += flops / t_.peak_flops(program_.buffer(in.src[0].buffer).dtype) * 1e9;
      }
    }
    stall_ns_[e] += start - engine_free_[e];
    entry.dependency_wait_s = std::max(0.0, start - std::max(engine_free_[e], 0.0)) * 1e-9;
    elements_[e] += (in.src_count > 0 ? in.src[in.opcode == Opcode::matmul ? 1 : 0] : in.dst).cols();
    std::vector<Interval>& busy = compute_busy_[e];
    if (!busy.empty() && start < busy.back().second) {
      // Overlaps the engine's previous busy time (matmuls on disjoint PE
      // tiles): busy time is the union, and the list stays sorted and disjoint.
      busy_ns_[e] += std::max(0.0, end - busy.back().second);
      busy.back().second = std::max(busy.back().second, end);
    } else {
      busy_ns_[e] += duration;
      busy.push_back({start, end});
    }
    engine_free_[e] = in.engine == Engine::tensor ? pe_next_free() : end;
  }
  ++count_[e];
  if (in.engine == Engine::dma) busy_ns_[e] += end - start;
  if (end > makespan_) {
    makespan_ = end;
    last_ = id;
  }
  if (in.location < location_busy_ns_.size()) {
    location_busy_ns_[in.location] += end - start;
    ++location_count_[in.location];
  }

  timing_[id] = {start, end, path_site_code(in)};
  if (record_) {
    entry.start_s = start * 1e-9;
    entry.end_s = end * 1e-9;
    timeline_[id] = entry;
  }
}

void Scheduler::fill(SimResult& result, const ValidationResult& validation) const {
  const double kernel_ns = makespan_;
  const double total_ns = kernel_ns + t_.launch_overhead_s * 1e9;
  const double total_s = total_ns * 1e-9;
  result.total_time_s = total_s;
  result.cycles = static_cast<std::int64_t>(std::llround(total_s * t_.cycle_count_clock_hz));
  auto percent = [&](double ns) { return total_ns > 0 ? 100.0 * ns / total_ns : 0.0; };

  // Overlap figures.
  std::vector<Interval> compute_union, dma_union;
  const double engine_overlap = sweep_busy(compute_busy_, kComputeEngines, compute_union);
  double compute_active = 0;
  for (const auto& [a, b] : compute_union) compute_active += b - a;
  std::vector<Interval> dma_sorted = dma_busy_;
  std::sort(dma_sorted.begin(), dma_sorted.end());
  const double dma_active = merge_sorted(dma_sorted, &dma_union);
  const double dma_compute_overlap = intersection_length(compute_union, dma_union);

  nlohmann::json s;
  s["total_time"] = total_s;
  s["kernel_time"] = kernel_ns * 1e-9;
  s["launch_overhead_time"] = t_.launch_overhead_s;
  s["neuroncore_cycle_count"] = result.cycles;
  s["mfu_estimated_percent"] = percent(pe_ideal_ns_);
  const double hbm_bytes = double(hbm_read_bytes_ + hbm_write_bytes_);
  s["mbu_estimated_percent"] = total_s > 0 ? 100.0 * hbm_bytes / (t_.hbm_bytes_per_s * total_s) : 0.0;
  static constexpr const char* kNames[] = {"tensor", "vector", "scalar", "gpsimd"};
  std::int64_t instructions = 0;
  for (int e = 0; e < kComputeEngines; ++e) {
    const std::string name = kNames[e];
    s[name + "_engine_active_time_percent"] = percent(busy_ns_[e]);
    s[name + "_engine_instruction_count"] = count_[e];
    s[name + "_engine_average_elements_per_instruction"] = count_[e] ? elements_[e] / double(count_[e]) : 0.0;
    s[name + "_engine_dependency_stall_time"] = stall_ns_[e] * 1e-9;
    s[name + "_engine_dependency_stall_percent"] = percent(stall_ns_[e]);
    instructions += count_[e];
  }
  const int dma = static_cast<int>(Engine::dma);
  instructions += count_[dma];
  s["instruction_count"] = instructions;
  s["dma_active_time_percent"] = percent(dma_active);
  s["dma_queue_utilization_percent"] =
      total_ns > 0 ? 100.0 * queue_busy_ns_ / (total_ns * t_.dma_queues) : 0.0;
  s["dma_queue_wait_time"] = stall_ns_[dma] * 1e-9;
  s["hbm_read_bytes"] = hbm_read_bytes_;
  s["hbm_write_bytes"] = hbm_write_bytes_;
  s["dma_transfer_count"] = count_[dma];
  s["dma_transfer_bytes"] = dma_bytes_;
  s["dma_transfer_average_bytes"] = count_[dma] ? double(dma_bytes_) / double(count_[dma]) : 0.0;
  s["dma_small_transfer_count"] = small_dma_;
  s["dma_transposed_transfer_count"] = transposed_dma_;
  s["dma_descriptor_generation_count"] = std::llround(dge_instructions_);
  s["dma_descriptor_generation_time"] = dge_busy_ns_ * 1e-9;
  s["dma_average_efficiency_percent"] =
      dma_bytes_ ? 100.0 * dma_efficiency_weighted_ / double(dma_bytes_) : 0.0;
  s["dma_compute_overlap_percent"] = percent(dma_compute_overlap);
  s["compute_active_time_percent"] = percent(compute_active);
  s["engine_overlap_percent"] = percent(engine_overlap);
  s["matmul_flops"] = matmul_flops_;
  s["tensor_engine_ideal_time"] = pe_ideal_ns_ * 1e-9;
  s["stationary_load_exposed_count"] = exposed_stationary_loads_;
  s["sbuf_peak_bytes_per_partition"] = validation.sbuf_peak_bytes_per_partition;
  s["sbuf_usable_bytes_per_partition"] = t_.sbuf_bytes_per_partition;
  s["psum_peak_banks"] = validation.psum_peak_banks;
  s["psum_banks"] = t_.psum_banks;
  ScheduleRecord record;
  record.timing = timing_;
  record.edges = edges_;
  record.edge_begin = edge_begin_;
  record.semaphore_ns = semaphore_ns_;
  for (int e = 0; e < kComputeEngines; ++e)
    record.engine_order[static_cast<std::size_t>(e)] = engine_order_[e];
  record.engine_position = engine_position_;
  record.last = last_;
  record.dma_fixed_ns = t_.dma_fixed_cost_s * 1e9;
  record.descriptors_ready = descriptors_ready_;
  record.engine_bound = pe_bound_;
  record.engine_bound_time = pe_bound_time_;
  for (int e = 0; e < kComputeEngines; ++e) record.startup_ns[e] = t_.access_startup_cycles * cycle_ns_[e];
  result.critical_path = find_critical_path(program_, record);
  s["critical_path"] = critical_path_json(result.critical_path, program_);
  result.summary = std::move(s);

  // Hot source lines.
  const auto& locations = program_.locations();
  for (std::uint32_t l = 0; l < location_count_.size(); ++l) {
    if (location_count_[l] == 0) continue;
    HotLine h;
    h.location = l;
    h.file = locations[l].file;
    h.line = locations[l].line;
    h.function = locations[l].function;
    h.busy_s = location_busy_ns_[l] * 1e-9;
    h.instructions = location_count_[l];
    h.percent_of_total = percent(location_busy_ns_[l]);
    result.hot_lines.push_back(std::move(h));
  }
  std::stable_sort(result.hot_lines.begin(), result.hot_lines.end(),
                   [](const HotLine& a, const HotLine& b) { return a.busy_s > b.busy_s; });
  if (record_) {
    result.timeline = timeline_;
    result.dma_slices = slices_;
  }
}

}  // namespace

DependencySignature dependency_signature(const Program& program, const TargetSpec& target) {
  const ValidationResult validation = validate_program(program, target);
  DependencySignature signature;
  signature.sbuf_peak_bytes_per_partition = validation.sbuf_peak_bytes_per_partition;
  signature.psum_peak_banks = validation.psum_peak_banks;
  if (!validation.valid) {
    signature.hash = std::hash<std::string>{}("invalid: " + validation.rule + ": " + validation.error);
    return signature;
  }
  Scheduler scheduler(program, target, validation, /*record=*/false);
  signature.hash = scheduler.dependency_hash();
  return signature;
}

SimResult simulate(const Program& program, const TargetSpec& target, const SimOptions& options, HostIo* io) {
  SimResult result;
  result.target = target.name;
  const ValidationResult validation = validate_program(program, target);
  if (!validation.valid) {
    result.valid = false;
    result.rule = validation.rule;
    result.error = validation.error;
    result.error_location = validation.location;
    result.summary = {{"valid", false},
                      {"rule", validation.rule},
                      {"error", validation.error},
                      {"sbuf_peak_bytes_per_partition", validation.sbuf_peak_bytes_per_partition},
                      {"sbuf_usable_bytes_per_partition", target.sbuf_bytes_per_partition},
                      {"psum_peak_banks", validation.psum_peak_banks},
                      {"psum_banks", target.psum_banks}};
    return result;
  }
  result.valid = true;
  {
    Scheduler scheduler(program, target, validation, options.record_timeline);
    scheduler.run();
    scheduler.fill(result, validation);
  }
  if (options.functional) {
    if (io == nullptr) throw UserError("simulate: functional mode needs host inputs (HostIo)");
    execute_program(program, *io);
  } else if (io != nullptr) {
    // Timing only: no arithmetic; outputs stay poisoned so nobody mistakes them for results.
    io->outputs.clear();
    for (const Buffer& b : program.buffers())
      if (b.space == MemorySpace::hbm && b.role == Buffer::Role::output) io->outputs.emplace_back();
  }
  return result;
}

}  // namespace autotune::sim
