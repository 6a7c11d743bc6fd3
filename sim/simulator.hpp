#pragma once
// The NeuronCore simulator: validates a traced Program against a target,
// schedules it in time, optionally executes it on host buffers, and profiles
// it. See docs/simulator.md for the model (what is simulated, the cost
// formulas, which constants are physical and which are fitted).
//
// A program that does not fit the target (SBUF/PSUM overflow, tile limits,
// reading unwritten data, a trace error) is data: `valid = false` with a rule
// id and a one-line error naming the kernel source line; never an exception.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sim/critical_path.hpp"
#include "sim/program.hpp"
#include "sim/target.hpp"

namespace autotune::sim {

// Part of every result-cache key: bump whenever simulated times can change,
// through the model or through a built-in kernel (sim-1.2: folded HBM views,
// element-wise unroll_factor folds rows, naive attention keeps scores in SBUF
// where they fit; sim-1.3: trn2's DMA transposer; sim-1.4: the critical path in
// the profile, which cached profiles must carry; sim-1.5: the path's waits on
// buffer reuse and DMA fixed costs, and how it reached each step; sim-1.6:
// programs past kMaxInstructions are invalid, program_too_large; sim-2.3: a
// tensor_scalar's power costs the engine's documented transcendental rate;
// sim-2.4: a target file's figures are bounded, so the set of targets it
// accepts changed; every target it still accepts simulates the same cycles).
constexpr std::string_view kSimulatorVersion = "sim-2.4";

struct SimOptions {
  bool functional = true;       // execute the arithmetic (needs HostIo); false: timing only, no host storage
  bool record_timeline = true;  // per-instruction timeline and DMA queue slices
};

struct HostIo {
  // One per Role::input buffer, in buffer order, row-major [rows * cols].
  std::vector<std::vector<float>> inputs;
  // Filled by simulate(): one per Role::output buffer in buffer order,
  // poisoned with NaN before execution so an unwritten element shows up.
  std::vector<std::vector<float>> outputs;
};

// One instruction in time. Times are seconds from kernel start (after launch).
struct TimelineEntry {
  InstructionId instruction = 0;
  Opcode opcode = Opcode::memset;
  Engine engine = Engine::vector;
  int dma_queue = -1;       // DMA: the first queue used; -1 otherwise
  int dma_queue_count = 0;  // DMA: number of queues the transfer was spread over
  double start_s = 0, end_s = 0;
  double dependency_wait_s = 0;  // time the instruction waited on dependencies after its engine was free
  std::int64_t bytes = 0;        // DMA: bytes moved
  std::uint32_t location = 0;    // index into Program::locations()
};

// The part of one DMA transfer carried by one queue.
struct DmaSlice {
  InstructionId instruction = 0;
  int queue = 0;
  double start_s = 0, end_s = 0;
};

// Busy time summed per kernel source line.
struct HotLine {
  std::uint32_t location = 0;
  std::string file;
  std::uint32_t line = 0;
  std::string function;
  double busy_s = 0;
  std::int64_t instructions = 0;
  double percent_of_total = 0;  // busy_s / total time
};

struct SimResult {
  bool valid = false;
  std::string rule;   // short id of the violated rule, e.g. "sbuf_overflow"
  std::string error;  // one line, naming the kernel source line (file:line)
  std::uint32_t error_location = 0;
  std::string target;

  double total_time_s = 0;  // launch overhead + makespan
  std::int64_t cycles = 0;  // neuroncore_cycle_count
  // NEURONCORE.md's profile fields (total_time, mfu_estimated_percent, ...)
  // plus analyzer figures; see docs/simulator.md for every key.
  nlohmann::json summary;
  std::vector<TimelineEntry> timeline;  // program order; empty unless record_timeline
  std::vector<DmaSlice> dma_slices;     // empty unless record_timeline
  std::vector<HotLine> hot_lines;       // all source lines with instructions, hottest first
  CriticalPath critical_path;           // also in summary["critical_path"]; timing-only mode too
};

// Functional mode needs `io` (its inputs; a UserError when missing or of the
// wrong size); timing-only mode takes an optional `io` and leaves its outputs
// empty. A program that does not fit the target is returned with valid = false.
SimResult simulate(const Program& program, const TargetSpec& target, const SimOptions& options = {},
                   HostIo* io = nullptr);

// What the schedule of `program` depends on beyond its instructions: whether
// it fits the target (the rule it breaks, if any) and the dependency graph
// derived from where its buffers are placed. Two programs with equal
// layout_free_hash() and equal signatures simulate to the same times and
// outputs. The high-water marks are the program's own.
struct DependencySignature {
  std::uint64_t hash = 0;
  std::int64_t sbuf_peak_bytes_per_partition = 0;
  int psum_peak_banks = 0;
};
DependencySignature dependency_signature(const Program& program, const TargetSpec& target);

// Human-readable profile: latency, MFU, engine active %, DMA figures, SBUF
// peak, the hottest source lines and the critical path.
std::string format_profile_text(const SimResult& result, std::size_t hot_lines = 5);

// Chrome trace-event JSON (opens in ui.perfetto.dev): one track per engine and
// per DMA queue. Needs a result simulated with record_timeline. Throws
// UserError when the file cannot be written.
void write_perfetto_trace(const SimResult& result, const Program& program, const std::string& path);
nlohmann::json perfetto_trace_json(const SimResult& result, const Program& program);

// "dst sbuf 'a#3'[0:128, 0:512] bf16 <- src hbm 'x'[...]": the operands of one instruction.
std::string operands_summary(const Program& program, InstructionId instruction);
// "file:line" of a location id.
std::string location_text(const Program& program, std::uint32_t location);

}  // namespace autotune::sim
