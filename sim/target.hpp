#pragma once
// A simulated NeuronCore as data: every figure the simulator uses comes from a
// target file (configs/targets/<name>.yaml), never from code.
//
// Where a bare target name is looked up (the first directory that exists):
//   1. $AUTOTUNE_CONFIG_DIR/targets/<name>.yaml when the variable is set;
//   2. <directory of the executable>/../share/autotune/configs/targets: an
//      install reads its own files, whether or not its source tree exists;
//   3. the repository's configs/targets, compiled in as AUTOTUNE_DEFAULT_CONFIG_DIR,
//      when that directory exists (a build used in place);
//   4. <directory of the executable>/../configs/targets.
// A name containing '/' or ending in ".yaml" is a file path.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "sim/program.hpp"

namespace autotune::sim {

struct TargetSpec {
  std::string name;
  std::string description;
  std::string source_file;  // the YAML file it was read from

  // Clocks (Hz) of the compute engines, indexed by Engine (tensor..gpsimd);
  // the DMA entry is unused.
  double clock_hz[kEngineCount] = {};
  double cycle_count_clock_hz = 0;  // the clock neuroncore_cycle_count counts
  // Elements per partition lane and cycle for the vector, scalar and GpSimd
  // engines outside any performance mode.
  double vector_elements_per_cycle = 1;
  double scalar_elements_per_cycle = 1, gpsimd_elements_per_cycle = 1;
  // The vector engine's performance modes (NeuronCore-v3): throughput
  // multipliers over vector_elements_per_cycle, each granted only in the
  // documented case (1: no such mode):
  //  - tensor_copy / tensor_scalar with every operand 2-byte and in SBUF;
  //  - the same with one operand in PSUM;
  //  - tensor_tensor with both inputs in SBUF and every operand 2-byte.
  double vector_mode_copy_scalar_sbuf = 1;
  double vector_mode_copy_scalar_psum = 1;
  double vector_mode_tensor_tensor_sbuf = 1;

  // Memory.
  int partitions = 128;
  std::int64_t sbuf_bytes_per_partition = 0;  // usable
  int psum_banks = 8;
  std::int64_t psum_bank_bytes = 2048;

  // Tensor engine.
  int max_contraction = 128;      // K
  int max_stationary_free = 128;  // M
  int max_moving_free = 512;      // N
  double matmul_fp32_factor = 4;  // fp32 operands take this many times longer
  double matmul_min_cycles = 64;
  double stationary_load_fraction = 0.25;
  // The smallest PE tile of the row and column tiling modes
  // (nki.isa.nc_matmul tile_size): 64 on NeuronCore-v2, 32 on v3; 128 when
  // the target has no tiling mode. Tile sizes are this times a power of two,
  // up to the whole array.
  int pe_tile_min = 128;
  double peak_flops_16bit = 0;  // bf16 / fp16 on the tensor engine, FLOP/s
  double peak_flops_fp32 = 0;

  // Instruction costs, in cycles of the engine that runs the instruction.
  double instruction_min_cycles = 64;
  double access_startup_cycles = 60;
  double cross_engine_dependency_cycles = 100;
  double tensor_tensor_cycles_per_element = 2;
  double tensor_tensor_scan_cycles_per_element = 2;  // the vector engine's scan along the free axis
  double reciprocal_cycles_per_element = 8;          // also a tensor_scalar's power on the vector engine
  double gpsimd_power_cycles_per_element = 4;        // a tensor_scalar's power on GpSimd
  double gpsimd_fixed_cycles = 150;

  // DMA.
  int dma_queues = 16;
  double dma_queue_bytes_per_s = 0;
  double dma_fixed_cost_s = 0;
  double dma_efficiency_half_bytes = 768;  // b / (b + this)
  double dma_min_bytes_per_queue = 2048;   // a transfer is split over queues no finer than this
  std::int64_t dma_small_transfer_bytes = 512;
  // A hardware transposer in the DMA path (trn2's hardware-DGE transpose,
  // nki.isa.dma_transpose): a transposing copy into SBUF of elements of
  // exactly this many bytes, from a source of a multiple of `block_rows`
  // partitions and at most `block_cols` elements per partition, moves blocks
  // of block_rows x block_cols as one chunk each instead of element by
  // element, at no more than `hbm_efficiency` (from HBM) or `sbuf_efficiency`
  // (SBUF to SBUF) of the queues' bandwidth. Other transposing copies are
  // element-wise. 0: no transposer.
  int dma_transpose_element_bytes = 0;
  int dma_transpose_block_rows = 0, dma_transpose_block_cols = 0;
  double dma_transpose_hbm_efficiency = 1, dma_transpose_sbuf_efficiency = 1;
  // Descriptor generation (hardware DGE): every transfer through the
  // transposer first takes one of `dge_instances` generators for
  // `dge_instruction_s` per DGE instruction: one per
  // `dge_source_partitions` source partitions from SBUF (at least one), one
  // from HBM. 0 instances: not modelled.
  int dge_instances = 0;
  double dge_instruction_s = 0;
  double dge_source_partitions = 16;
  double hbm_bytes_per_s = 0;

  double launch_overhead_s = 0;

  // Shared ports (trn1): these engines cannot access the memory at the same time.
  bool vector_gpsimd_share_sbuf_port = false;
  bool vector_scalar_share_psum_port = false;
  // trn2: the vector engine's performance modes use a bus shared with GpSimd's
  // SBUF accesses (arbitrated: one at a time); the vector and scalar engines
  // access PSUM in parallel unless they touch the same bank.
  bool vector_mode_shares_gpsimd_sbuf_bus = false;
  bool vector_scalar_psum_bank_conflicts = false;

  double clock(Engine engine) const { return clock_hz[static_cast<int>(engine)]; }
  // Peak tensor-engine FLOP/s for matmul operands of `dtype`.
  double peak_flops(Dtype dtype) const { return dtype == Dtype::fp32 ? peak_flops_fp32 : peak_flops_16bit; }
  // Peak elementwise throughput (elements/s over all partitions) of a
  // non-tensor engine for operands of `dtype`: the best performance mode it
  // may reach (an upper bound, for rooflines).
  double elements_per_s(Engine engine, Dtype dtype) const;
  // Named figures usable in search-space constraints: sbuf_bytes_per_partition,
  // psum_bank_bytes, psum_banks, partitions, max_moving_free,
  // max_stationary_free, max_contraction, dma_queues, ...
  std::map<std::string, double> constants() const;
};

// Reads a target by name (see the lookup order above) or by path. Misuse
// (unknown name, bad file, unknown key) is a UserError naming file:line:key.
TargetSpec load_target(const std::string& name_or_path);
// The file load_target reads for `name_or_path`, without reading it: a path
// as given, a name in targets_directory(). What identifies a target whichever
// way it was written (`trn2`, `configs/targets/trn2.yaml`). UserError for an
// unknown name.
std::filesystem::path target_file(const std::string& name_or_path);
// Reads and validates one target file.
TargetSpec load_target_file(const std::filesystem::path& path);
// Names of the targets in the first existing configs directory, sorted.
std::vector<std::string> list_targets();
// The directory bare names are looked up in (empty when none exists).
std::filesystem::path targets_directory();

}  // namespace autotune::sim
