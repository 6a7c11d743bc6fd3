#include "sim/target.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "core/config_reader.hpp"
#include "core/text.hpp"

namespace autotune::sim {

namespace fs = std::filesystem;

double TargetSpec::elements_per_s(Engine engine, Dtype dtype) const {
  double per_cycle = 1;
  switch (engine) {
    case Engine::vector:
      per_cycle = vector_elements_per_cycle;
      if (dtype_bytes(dtype) == 2)
        per_cycle *= std::max(
            {vector_mode_copy_scalar_sbuf, vector_mode_copy_scalar_psum, vector_mode_tensor_tensor_sbuf});
      break;
    case Engine::scalar:
      per_cycle = scalar_elements_per_cycle;
      break;
    case Engine::gpsimd:
      per_cycle = gpsimd_elements_per_cycle;
      break;
    default:
      break;
  }
  return per_cycle * partitions * clock(engine);
}

std::map<std::string, double> TargetSpec::constants() const {
  return {
      {"partitions", partitions},
      {"sbuf_bytes_per_partition", static_cast<double>(sbuf_bytes_per_partition)},
      {"psum_banks", psum_banks},
      {"psum_bank_bytes", static_cast<double>(psum_bank_bytes)},
      {"psum_bytes_per_partition", static_cast<double>(psum_bank_bytes * psum_banks)},
      {"max_contraction", max_contraction},
      {"max_stationary_free", max_stationary_free},
      {"max_moving_free", max_moving_free},
      {"pe_tile_min", pe_tile_min},
      {"dma_queues", dma_queues},
      {"dma_small_transfer_bytes", static_cast<double>(dma_small_transfer_bytes)},
  };
}

namespace {

fs::path executable_directory() {
  std::error_code error;
  fs::path exe = fs::read_symlink("/proc/self/exe", error);
  return error ? fs::path() : exe.parent_path();
}

// In the order of sim/target.hpp: an installed executable reads the files
// installed with it, even while the source tree it was built from exists
// (and may have moved on); only a build used in place reads the source tree.
std::vector<fs::path> candidate_directories() {
  std::vector<fs::path> out;
  if (const char* env = std::getenv("AUTOTUNE_CONFIG_DIR"); env != nullptr && *env != '\0')
    out.push_back(fs::path(env) / "targets");
  const fs::path exe_dir = executable_directory();
  if (!exe_dir.empty()) out.push_back(exe_dir / ".." / "share" / "autotune" / "configs" / "targets");
#ifdef AUTOTUNE_DEFAULT_CONFIG_DIR
  out.push_back(fs::path(AUTOTUNE_DEFAULT_CONFIG_DIR) / "targets");
#endif
  if (!exe_dir.empty()) out.push_back(exe_dir / ".." / "configs" / "targets");
  return out;
}

// Figures of a NeuronCore are far inside these bounds; beyond them the
// simulator's cycle counts overflow (a DMA queue of 1e-300 B/ns) or its
// per-partition and per-queue state exhausts memory (2e9 partitions).
constexpr double kSmallestFigure = 1e-6;
constexpr double kLargestFigure = 1e9;
constexpr int kLargestCount = 65536;

double positive(ConfigReader& reader, const std::string& key) {
  const double value = reader.required<double>(key, "a positive number");
  if (!(value >= kSmallestFigure && value <= kLargestFigure))
    reader.fail(key,
                "must be a positive number from " + number_text(kSmallestFigure) + " to " +
                    number_text(kLargestFigure) + ", got " + number_text(value),
                nullptr);
  return value;
}

double non_negative(ConfigReader& reader, const std::string& key) {
  const double value = reader.required<double>(key, "a number >= 0");
  if (!(value >= 0 && value <= kLargestFigure))
    reader.fail(key,
                "must be >= 0 and at most " + number_text(kLargestFigure) + ", got " + number_text(value),
                nullptr);
  return value;
}

double fraction(ConfigReader& reader, const std::string& key) {
  const double value = reader.required<double>(key, "a number in (0, 1]");
  if (!(value > 0 && value <= 1)) reader.fail(key, "must be in (0, 1], got " + number_text(value), nullptr);
  return value;
}

int positive_int(ConfigReader& reader, const std::string& key) {
  const int value = reader.required<int>(key, "a positive integer");
  if (value <= 0 || value > kLargestCount)
    reader.fail(key,
                "must be a positive integer, at most " + std::to_string(kLargestCount) + ", got " +
                    std::to_string(value),
                nullptr);
  return value;
}

}  // namespace

fs::path targets_directory() {
  for (const auto& dir : candidate_directories()) {
    std::error_code error;
    if (fs::is_directory(dir, error)) return fs::weakly_canonical(dir, error);
  }
  return {};
}

std::vector<std::string> list_targets() {
  std::vector<std::string> names;
  const fs::path dir = targets_directory();
  if (dir.empty()) return names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

TargetSpec load_target(const std::string& name_or_path) {
  return load_target_file(target_file(name_or_path));
}

fs::path target_file(const std::string& name_or_path) {
  const bool is_path = name_or_path.find('/') != std::string::npos ||
                       (name_or_path.size() > 5 && name_or_path.ends_with(".yaml"));
  if (is_path) return name_or_path;
  if (name_or_path.empty()) throw UserError("empty target name; accepted: a target name or a .yaml path");
  const fs::path dir = targets_directory();
  if (dir.empty()) {
    throw UserError("no targets directory found (set AUTOTUNE_CONFIG_DIR to the directory holding targets/)");
  }
  const fs::path file = dir / (name_or_path + ".yaml");
  if (!fs::exists(file))
    throw UserError("unknown target '" + name_or_path + "' (accepted: " + join(list_targets(), ", ") + ")");
  return file;
}

TargetSpec load_target_file(const fs::path& path) {
  ConfigReader root(load_yaml_file(path), path.string());
  TargetSpec t;
  t.source_file = path.string();
  t.name = root.name("name");
  t.description = root.optional<std::string>("description", "");

  {
    ConfigReader clocks = root.child("clocks_ghz");
    t.clock_hz[static_cast<int>(Engine::tensor)] = positive(clocks, "tensor") * 1e9;
    t.clock_hz[static_cast<int>(Engine::vector)] = positive(clocks, "vector") * 1e9;
    t.clock_hz[static_cast<int>(Engine::scalar)] = positive(clocks, "scalar") * 1e9;
    t.clock_hz[static_cast<int>(Engine::gpsimd)] = positive(clocks, "gpsimd") * 1e9;
    t.cycle_count_clock_hz = positive(clocks, "cycle_count") * 1e9;
    clocks.finish({"tensor", "vector", "scalar", "gpsimd", "cycle_count"});
  }
  {
    ConfigReader lanes = root.child("elements_per_lane_cycle");
    t.vector_elements_per_cycle = positive(lanes, "vector");
    t.scalar_elements_per_cycle = positive(lanes, "scalar");
    t.gpsimd_elements_per_cycle = positive(lanes, "gpsimd");
    lanes.finish({"vector", "scalar", "gpsimd"});
  }
  if (auto modes = root.maybe_child("vector_performance_mode")) {
    t.vector_mode_copy_scalar_sbuf = positive(*modes, "copy_scalar_sbuf_16bit");
    t.vector_mode_copy_scalar_psum = positive(*modes, "copy_scalar_psum_16bit");
    t.vector_mode_tensor_tensor_sbuf = positive(*modes, "tensor_tensor_sbuf_16bit");
    modes->finish({"copy_scalar_sbuf_16bit", "copy_scalar_psum_16bit", "tensor_tensor_sbuf_16bit"});
  }
  {
    ConfigReader memory = root.child("memory");
    t.partitions = positive_int(memory, "partitions");
    t.sbuf_bytes_per_partition =
        static_cast<std::int64_t>(positive(memory, "sbuf_usable_bytes_per_partition"));
    t.psum_banks = positive_int(memory, "psum_banks");
    t.psum_bank_bytes = static_cast<std::int64_t>(positive(memory, "psum_bank_bytes"));
    memory.finish({"partitions", "sbuf_usable_bytes_per_partition", "psum_banks", "psum_bank_bytes"});
  }
  {
    ConfigReader mm = root.child("tensor_engine");
    t.max_contraction = positive_int(mm, "max_contraction");
    t.max_stationary_free = positive_int(mm, "max_stationary_free");
    t.max_moving_free = positive_int(mm, "max_moving_free");
    t.matmul_min_cycles = positive(mm, "matmul_min_cycles");
    t.matmul_fp32_factor = positive(mm, "fp32_cycle_factor");
    t.stationary_load_fraction = non_negative(mm, "stationary_load_fraction");
    t.peak_flops_16bit = positive(mm, "peak_tflops_bf16") * 1e12;
    t.peak_flops_fp32 = positive(mm, "peak_tflops_fp32") * 1e12;
    t.pe_tile_min = mm.optional<int>("min_tile", 128);
    if (t.pe_tile_min != 32 && t.pe_tile_min != 64 && t.pe_tile_min != 128)
      mm.fail("min_tile",
              "must be 32, 64 or 128 (the PE array's smallest row/column tile), got " +
                  std::to_string(t.pe_tile_min),
              nullptr);
    mm.finish({"max_contraction", "max_stationary_free", "max_moving_free", "matmul_min_cycles",
               "fp32_cycle_factor", "stationary_load_fraction", "peak_tflops_bf16", "peak_tflops_fp32",
               "min_tile"});
  }
  {
    ConfigReader costs = root.child("instruction_cycles");
    t.instruction_min_cycles = non_negative(costs, "minimum");
    t.access_startup_cycles = non_negative(costs, "access_startup");
    t.cross_engine_dependency_cycles = non_negative(costs, "cross_engine_dependency");
    t.tensor_tensor_cycles_per_element = positive(costs, "tensor_tensor_per_element");
    // Optional: target files written before the scan was modelled take the documented 2.
    if (costs.has("tensor_tensor_scan_per_element"))
      t.tensor_tensor_scan_cycles_per_element = positive(costs, "tensor_tensor_scan_per_element");
    t.reciprocal_cycles_per_element = positive(costs, "reciprocal_per_element");
    // Optional, like the scan's: files written before powers were charged take the documented 4.
    if (costs.has("gpsimd_power_per_element"))
      t.gpsimd_power_cycles_per_element = positive(costs, "gpsimd_power_per_element");
    t.gpsimd_fixed_cycles = non_negative(costs, "gpsimd_fixed");
    costs.finish({"minimum", "access_startup", "cross_engine_dependency", "tensor_tensor_per_element",
                  "tensor_tensor_scan_per_element", "reciprocal_per_element", "gpsimd_power_per_element",
                  "gpsimd_fixed"});
  }
  {
    ConfigReader dma = root.child("dma");
    t.dma_queues = positive_int(dma, "queues");
    t.dma_queue_bytes_per_s = positive(dma, "queue_bytes_per_ns") * 1e9;
    t.dma_fixed_cost_s = non_negative(dma, "fixed_cost_us") * 1e-6;
    t.dma_efficiency_half_bytes = non_negative(dma, "efficiency_half_bytes");
    t.dma_min_bytes_per_queue = positive(dma, "min_bytes_per_queue");
    t.dma_small_transfer_bytes = static_cast<std::int64_t>(positive(dma, "small_transfer_bytes"));
    if (auto transposer = dma.maybe_child("transpose")) {
      t.dma_transpose_element_bytes = positive_int(*transposer, "element_bytes");
      t.dma_transpose_block_rows = positive_int(*transposer, "block_rows");
      t.dma_transpose_block_cols = positive_int(*transposer, "block_cols");
      t.dma_transpose_hbm_efficiency = fraction(*transposer, "hbm_to_sbuf_efficiency");
      t.dma_transpose_sbuf_efficiency = fraction(*transposer, "sbuf_to_sbuf_efficiency");
      transposer->finish(
          {"element_bytes", "block_rows", "block_cols", "hbm_to_sbuf_efficiency", "sbuf_to_sbuf_efficiency"});
    }
    if (auto dge = dma.maybe_child("descriptor_generation")) {
      t.dge_instances = positive_int(*dge, "instances");
      t.dge_instruction_s = non_negative(*dge, "instruction_ns") * 1e-9;
      t.dge_source_partitions = positive(*dge, "sbuf_partitions_per_instruction");
      dge->finish({"instances", "instruction_ns", "sbuf_partitions_per_instruction"});
    }
    dma.finish({"queues", "queue_bytes_per_ns", "fixed_cost_us", "efficiency_half_bytes",
                "min_bytes_per_queue", "small_transfer_bytes", "transpose", "descriptor_generation"});
  }
  t.hbm_bytes_per_s = positive(root, "hbm_bytes_per_ns") * 1e9;
  t.launch_overhead_s = non_negative(root, "launch_overhead_us") * 1e-6;
  {
    ConfigReader ports = root.child("shared_ports");
    t.vector_gpsimd_share_sbuf_port = ports.required<bool>("vector_gpsimd_sbuf");
    t.vector_scalar_share_psum_port = ports.required<bool>("vector_scalar_psum");
    t.vector_mode_shares_gpsimd_sbuf_bus = ports.optional<bool>("vector_mode_gpsimd_sbuf_bus", false);
    t.vector_scalar_psum_bank_conflicts = ports.optional<bool>("vector_scalar_psum_bank", false);
    ports.finish({"vector_gpsimd_sbuf", "vector_scalar_psum", "vector_mode_gpsimd_sbuf_bus",
                  "vector_scalar_psum_bank"});
  }
  root.finish({"name", "description", "clocks_ghz", "elements_per_lane_cycle", "vector_performance_mode",
               "memory", "tensor_engine", "instruction_cycles", "dma", "hbm_bytes_per_ns",
               "launch_overhead_us", "shared_ports"});
  return t;
}

}  // namespace autotune::sim
