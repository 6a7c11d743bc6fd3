// autotune targets [--json]: the registered target kinds a goal can name, and
// the simulated NeuronCores, read from their target files
// (configs/targets/*.yaml), with their key figures.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "orchestrator/target_kind.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace autotune::cli {
namespace {

nlohmann::json target_json(const sim::TargetSpec& t) {
  using sim::Engine;
  return {
      {"name", t.name},
      {"description", t.description},
      {"file", t.source_file},
      {"clocks_ghz",
       {{"tensor", t.clock(Engine::tensor) * 1e-9},
        {"vector", t.clock(Engine::vector) * 1e-9},
        {"scalar", t.clock(Engine::scalar) * 1e-9},
        {"gpsimd", t.clock(Engine::gpsimd) * 1e-9}}},
      {"peak_tflops", {{"bf16", t.peak_flops_16bit * 1e-12}, {"fp32", t.peak_flops_fp32 * 1e-12}}},
      {"vector_gelems_per_s",
       {{"fp32", t.elements_per_s(Engine::vector, sim::Dtype::fp32) * 1e-9},
        {"bf16", t.elements_per_s(Engine::vector, sim::Dtype::bf16) * 1e-9}}},
      {"scalar_gelems_per_s", t.elements_per_s(Engine::scalar, sim::Dtype::fp32) * 1e-9},
      {"hbm_gb_per_s", t.hbm_bytes_per_s * 1e-9},
      {"dma",
       {{"queues", t.dma_queues},
        {"gb_per_s_per_queue", t.dma_queue_bytes_per_s * 1e-9},
        {"fixed_cost_us", t.dma_fixed_cost_s * 1e6},
        {"efficiency_half_bytes", t.dma_efficiency_half_bytes}}},
      {"launch_overhead_us", t.launch_overhead_s * 1e6},
      {"shared_ports",
       {{"vector_gpsimd_sbuf", t.vector_gpsimd_share_sbuf_port},
        {"vector_scalar_psum", t.vector_scalar_share_psum_port}}},
      {"constants", t.constants()},
  };
}

std::string target_text(const sim::TargetSpec& t) {
  using sim::Engine;
  char line[512];
  std::string out = t.name + "  " + t.description + "\n";
  std::snprintf(line, sizeof line,
                "  engines     tensor %.2f GHz, vector %.2f GHz, scalar %.2f GHz, gpsimd %.2f GHz\n",
                t.clock(Engine::tensor) * 1e-9, t.clock(Engine::vector) * 1e-9,
                t.clock(Engine::scalar) * 1e-9, t.clock(Engine::gpsimd) * 1e-9);
  out += line;
  std::snprintf(line, sizeof line,
                "  peak        %.2f TFLOPS bf16, %.2f TFLOPS fp32; vector %.0f Gelem/s (bf16 %.0f)\n",
                t.peak_flops_16bit * 1e-12, t.peak_flops_fp32 * 1e-12,
                t.elements_per_s(Engine::vector, sim::Dtype::fp32) * 1e-9,
                t.elements_per_s(Engine::vector, sim::Dtype::bf16) * 1e-9);
  out += line;
  std::snprintf(line, sizeof line,
                "  memory      %d partitions, SBUF %lld B usable per partition, PSUM %d x %lld B banks\n",
                t.partitions, static_cast<long long>(t.sbuf_bytes_per_partition), t.psum_banks,
                static_cast<long long>(t.psum_bank_bytes));
  out += line;
  std::snprintf(line, sizeof line,
                "  HBM / DMA   %.0f GB/s HBM; %d DMA queues x %.0f GB/s, %.2f us fixed per transfer\n",
                t.hbm_bytes_per_s * 1e-9, t.dma_queues, t.dma_queue_bytes_per_s * 1e-9,
                t.dma_fixed_cost_s * 1e6);
  out += line;
  std::snprintf(line, sizeof line,
                "  launch      %.1f us; shared ports: vector+gpsimd SBUF %s, vector+scalar PSUM %s\n",
                t.launch_overhead_s * 1e6, t.vector_gpsimd_share_sbuf_port ? "yes" : "no",
                t.vector_scalar_share_psum_port ? "yes" : "no");
  out += line;
  out += "  file        " + t.source_file + "\n";
  return out;
}

const CommandRegistration registration{
    "targets", "List the simulated targets and their key figures", [](CLI::App& command) -> CommandAction {
      auto json = std::make_shared<bool>(false);
      command.add_flag("--json", *json, "Print the targets as one JSON object");
      return [json] {
        const auto names = sim::list_targets();
        if (*json) {
          nlohmann::json out = {{"simulator_version", std::string(sim::kSimulatorVersion)},
                                {"directory", sim::targets_directory().string()},
                                {"kinds", nlohmann::json::array()},
                                {"targets", nlohmann::json::array()}};
          for (const auto& [name, kind] : orchestrator::target_kind_registry().entries())
            out["kinds"].push_back({{"kind", name}, {"description", kind.description}});
          for (const auto& name : names) out["targets"].push_back(target_json(sim::load_target(name)));
          std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
          return 0;
        }
        std::printf("target kinds (target: {kind: ...})\n");
        for (const auto& [name, kind] : orchestrator::target_kind_registry().entries())
          std::printf("  %-8s %s\n", name.c_str(), kind.description.c_str());
        std::printf("\nsimulated targets (kind sim)\n");
        if (names.empty()) {
          std::cout << "no targets found (set AUTOTUNE_CONFIG_DIR to the directory holding targets/)\n";
          return 0;
        }
        for (std::size_t i = 0; i < names.size(); ++i)
          std::cout << (i ? "\n" : "") << target_text(sim::load_target(names[i]));
        return 0;
      };
    }};

}  // namespace
}  // namespace autotune::cli
