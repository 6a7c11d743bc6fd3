#pragma once
// ProfileAnalyzer: the built-in analyzer. Reads a measured candidate's
// profile summary (NEURONCORE.md field names) and metrics, and returns
// findings with the numbers behind them, strongest first.
//
// The rules and their thresholds are documented in docs/loop.md. Each finding
// names an action over parameter roles or variants, never over parameter
// names: the analyzer does not know which kernel it is looking at.
#include "skills/skill.hpp"

namespace autotune::skills {

// The findings' names (Finding::kind) as the decision log, `explain`, the
// generator's ideas and plugins see them; one rule of the analyzer each.
namespace finding {
inline constexpr const char* kAtRoofline = "at_roofline";
inline constexpr const char* kFixedOverhead = "fixed_overhead";
inline constexpr const char* kComputeBoundHighMfu = "compute_bound_high_mfu";
inline constexpr const char* kRepeatedLoads = "repeated_loads";
inline constexpr const char* kDmaBoundNoOverlap = "dma_bound_no_overlap";
inline constexpr const char* kMemoryBoundDmaIdle = "memory_bound_dma_idle";
inline constexpr const char* kSmallTransfers = "small_transfers";
inline constexpr const char* kSmallInstructions = "small_instructions";
inline constexpr const char* kDependencyStalls = "dependency_stalls";
inline constexpr const char* kEngineBound = "engine_bound";
inline constexpr const char* kCriticalPathEngine = "critical_path_engine";
inline constexpr const char* kCriticalPathBufferWaits = "critical_path_buffer_waits";
inline constexpr const char* kCriticalPathDmaWaits = "critical_path_dma_waits";
inline constexpr const char* kCriticalPathLatency = "critical_path_latency";
inline constexpr const char* kCriticalPathDmaQueues = "critical_path_dma_queues";
inline constexpr const char* kCriticalPathDmaDescriptors = "critical_path_dma_descriptors";
inline constexpr const char* kCriticalPathFixedCosts = "critical_path_fixed_costs";
inline constexpr const char* kSbufPressure = "sbuf_pressure";
}  // namespace finding

struct AnalyzerThresholds {
  // latency / roofline bound at or below: at the bound. Tighter would stop
  // nowhere (a schedule's fixed costs keep the best kernels 2-4% above it);
  // looser stops with a reachable tenth left (bmm on trn2: 1.14x, its optimum 1.035x).
  double at_roofline_headroom = 1.05;
  double high_mfu_percent = 80;      // compute-bound at this MFU: stop
  double busy_percent = 50;          // an engine (or DMA) this active is a bottleneck candidate
  double poor_overlap_percent = 50;  // DMA/compute overlap below this is "no overlap"
  double dma_idle_percent = 10;      // memory-bound with the DMA idle this share of the kernel: gaps to fill
  double repeated_traffic_ratio = 1.5;  // HBM traffic / compulsory traffic above this: repeated loads
  double efficient_dma_bytes_per_partition = 2048;  // NEURONCORE.md: near peak at >= 2 KiB per partition
  double dma_half_efficiency_bytes = 768;           // NEURONCORE.md: bw * b / (b + ~768 B)
  double small_instruction_cycles = 256;            // average busy cycles per instruction below this: small
  double sbuf_pressure_fraction = 0.85;             // peak SBUF / usable above this: little room to grow
  double fixed_overhead_factor = 1.25;              // latency within this factor of the launch floor: stop
  double min_expected_gain = 0.02;                  // findings promising less are reported but not acted on
  // Shares of the schedule's critical path (percent of the kernel time):
  double critical_path_engine_percent = 30;      // a non-tensor engine busy this much, more than any other
  double critical_path_transpose_percent = 15;   // tensor-engine transposes
  double critical_path_buffer_percent = 25;      // reached through the reuse of a buffer (WAR/WAW)
  double critical_path_dma_percent = 30;         // DMA transfers (data and fixed cost)
  double critical_path_queue_percent = 15;       // waits for a free DMA queue
  double critical_path_descriptor_percent = 15;  // transposing transfers waiting for descriptor generation
  double critical_path_fixed_cost_percent = 25;  // semaphores, DMA fixed costs, instruction start-up
  double critical_path_wait_percent = 35;        // no engine and no transfer busy: the chain waits
};

class ProfileAnalyzer : public AnalyzerSkill {
 public:
  explicit ProfileAnalyzer(AnalyzerThresholds thresholds = {}) : thresholds_(thresholds) {}
  std::string name() const override { return kProfileAnalyzer; }
  SkillResult<Analysis> analyze(const AnalysisRequest& request) override;

 private:
  AnalyzerThresholds thresholds_;
};

}  // namespace autotune::skills
