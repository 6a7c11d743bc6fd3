#pragma once
// The schedule's critical path: the chain of instructions that sets the
// kernel time, and where its time goes.
//
// While scheduling, the simulator records for every instruction what bound
// its start (ScheduleRecord): its engine's previous instruction, or the
// dependency that became ready last and whether that dependency is on data
// (read after write) or on the reuse of an address (write after read, write
// after write: "waiting on a buffer"); whatever time lies between that and
// the start is a wait for a resource (a DMA queue, a shared port, the tensor
// engine's stationary load). find_critical_path walks back from the
// instruction that finishes last and cuts the path into busy time per engine
// and waits by kind, which add up to the makespan. See docs/simulator.md
// (Profile) for every figure.
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string_view>
#include <vector>

#include "sim/program.hpp"

namespace autotune::sim {

inline constexpr InstructionId kNoInstruction = UINT32_MAX;

// What an instruction waited for on an earlier instruction it depends on.
enum class DependencyKind : std::uint8_t {
  data,    // read after write: it reads what the other wrote
  buffer,  // write after read or write after write: it reuses an address the other still holds
};
std::string_view dependency_kind_name(DependencyKind kind);

// One dependency of an instruction, in one word: the instruction it waits
// for, its kind, and whether it is on a matmul's stationary operand.
class Dependency {
 public:
  Dependency() = default;
  Dependency(InstructionId from, DependencyKind kind, bool stationary)
      : bits_(from | (kind == DependencyKind::buffer ? kBuffer : 0u) | (stationary ? kStationary : 0u)) {}
  InstructionId from() const { return bits_ & ~(kBuffer | kStationary); }
  DependencyKind kind() const { return bits_ & kBuffer ? DependencyKind::buffer : DependencyKind::data; }
  bool stationary() const { return (bits_ & kStationary) != 0; }
  void set_kind(DependencyKind kind) { *this = Dependency(from(), kind, stationary()); }
  static constexpr InstructionId kMaxInstructions = 1u << 30;

 private:
  static constexpr std::uint32_t kBuffer = 1u << 31, kStationary = 1u << 30;
  std::uint32_t bits_ = 0;
};

// How the path reached an instruction: what bound its start.
enum class PathStep : std::uint8_t {
  start,         // nothing: kernel start (after a resource wait, if any)
  engine_order,  // its engine's previous instruction (engines issue in program order)
  data,          // a read-after-write dependency
  buffer,        // a write-after-read or write-after-write dependency
};
inline constexpr int kPathSteps = 4;
std::string_view path_step_name(PathStep step);

// Waits on the path, by kind.
enum class PathWait : std::uint8_t {
  semaphore,        // the cross-engine latency of a data dependency
  buffer,           // the cross-engine latency of a buffer-reuse dependency
  dma_fixed,        // a transfer's fixed cost (descriptor, completion semaphore)
  dma_queue,        // a transfer waiting for a free DMA queue
  port,             // a vector/scalar/GpSimd instruction waiting for a shared SBUF or PSUM port
  stationary_load,  // the tensor engine loading a stationary operand that arrived late
  dma_descriptor,   // a transposing transfer waiting for its descriptors (descriptor generators)
};
inline constexpr int kPathWaits = 7;
std::string_view path_wait_name(PathWait wait);

// An instruction kind at a source line: what links and lines are grouped by.
struct PathSite {
  Engine engine = Engine::tensor;
  Opcode opcode = Opcode::matmul;
  std::uint32_t location = 0;  // index into Program::locations()
};

// The path crossing a dependency: `waiter` started when `waits_on` finished.
struct PathLink {
  PathSite waiter, waits_on;
  DependencyKind kind = DependencyKind::data;
  double time_s = 0;  // path time of the waiters: their wait and their own time
};

struct PathLine {
  PathSite site;
  double time_s = 0;  // path time of its instructions (a transfer's fixed cost included)
};

struct CriticalPath {
  static constexpr std::size_t kTopLinks = 5, kTopLines = 5;
  double length_s = 0;  // the makespan
  std::int64_t instructions = 0;
  // Busy time per engine (Engine order); a transfer's fixed cost is a wait,
  // not DMA busy time.
  std::array<double, kEngineCount> busy_s{};
  double tensor_transpose_s = 0;  // the part of the tensor engine's busy time in transposes
  double startup_s = 0;           // the part of compute busy time in per-instruction access start-up
  std::array<double, kPathWaits> wait_s{};  // sum(busy_s) + sum(wait_s) = length_s
  // The same waits by the engine of the instruction that waited (a transfer's
  // fixed cost: DMA); sum(waiting_s) = sum(wait_s).
  std::array<double, kEngineCount> waiting_s{};
  // Path time (each instruction's wait and own time) by how the path reached
  // it; sums to length_s.
  std::array<double, kPathSteps> reached_by_s{};
  std::vector<PathLink> links;  // the heaviest first
  std::vector<PathLine> lines;  // the heaviest first
};

// An instruction's site as one number: what the path's links and lines are
// grouped by, recorded by the scheduler so that the walk reads no
// instruction.
inline std::uint32_t path_site_code(const Instruction& in) {
  return (in.location * kEngineCount + static_cast<std::uint32_t>(in.engine)) * kOpcodeCount +
         static_cast<std::uint32_t>(in.opcode);
}

// When an instruction on `consumer` may start, as far as a dependency on an
// instruction of `producer` that finished at `finish` goes: a compute engine
// waiting on another compute engine also waits for its semaphore.
inline double dependency_ready_time(double finish, Engine producer, Engine consumer,
                                    const std::array<double, kEngineCount>& semaphore_ns) {
  if (consumer != producer && consumer != Engine::dma && producer != Engine::dma)
    return finish + semaphore_ns[static_cast<std::size_t>(consumer)];
  return finish;
}

// When an instruction ran (ns from kernel start) and its site.
struct InstructionTiming {
  double start = 0, finish = 0;
  std::uint32_t site = 0;  // path_site_code
};

// What the scheduler recorded, per instruction in program order. The walk
// finds what bound each start on the path from these alone, so scheduling
// does no bookkeeping for it beyond a start time and a site.
struct ScheduleRecord {
  std::span<const InstructionTiming> timing;
  // Every instruction's dependencies, grouped by the waiting instruction:
  // those of instruction i are edges[edge_begin[i] .. edge_begin[i + 1]).
  std::span<const Dependency> edges;
  std::span<const std::uint32_t> edge_begin;
  // Each compute engine's instructions in program order, and each
  // instruction's position in its engine's list (DMA transfers are not
  // ordered by engine).
  std::array<std::span<const InstructionId>, kEngineCount> engine_order;
  std::span<const std::uint32_t> engine_position;
  InstructionId last = 0;  // the instruction that finishes last
  // A compute engine waiting on another compute engine's instruction waits
  // this much more after it finishes (the semaphore; DMA transfers include
  // theirs in the fixed cost).
  std::array<double, kEngineCount> semaphore_ns{};
  double dma_fixed_ns = 0;  // every transfer ends this long after its data
  // Per instruction, when its descriptors were generated (transfers through
  // a descriptor generator); empty when the target has none.
  std::span<const double> descriptors_ready;
  std::array<double, kEngineCount> startup_ns{};  // per-instruction access start-up per engine
  // When tensor-engine instructions may overlap (matmuls on disjoint PE
  // tiles): per instruction, the earlier instruction of its engine whose PE
  // cells or issue slot it waited for (kNoInstruction: none), and when that
  // one freed them (its finish, or its start plus the issue interval). Empty:
  // every engine runs one instruction at a time, after its previous one.
  std::span<const InstructionId> engine_bound;
  std::span<const double> engine_bound_time;
};

// Walks back from the instruction that finishes last. O(instructions on the
// path and their dependencies); builds no strings.
CriticalPath find_critical_path(const Program& program, const ScheduleRecord& record);

// The summary's `critical_path` object: shares in percent of the length,
// sources as "file:line".
nlohmann::json critical_path_json(const CriticalPath& path, const Program& program);

}  // namespace autotune::sim
