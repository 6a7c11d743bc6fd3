#include "kernels/calibration.hpp"

#include "kernels/evaluate.hpp"

namespace autotune::kernels {

std::vector<CalibrationRow> run_calibration(const sim::TargetSpec& target) {
  const auto& gemm = family_registry().get("gemm");
  const Shape shape = {{"M", 4096}, {"N", 8192}, {"K", 8192}};
  std::vector<CalibrationRow> rows = {
      {.variant = "tiled", .tutorial = "nki_matmul_tiled_", .measured_ms = 51.80},
      {.variant = "hoisted", .tutorial = "nki_matmul_hoist_load_", .measured_ms = 42.96},
      {.variant = "blocked_mn", .tutorial = "nki_matmul_block_free_dimension_", .measured_ms = 22.07},
      {.variant = "blocked_mnk", .tutorial = "nki_matmul_fully_optimized_", .measured_ms = 6.97}};
  for (CalibrationRow& row : rows) {
    EvaluateOptions options;
    options.verify = false;
    const Evaluation e = evaluate(gemm, row.variant, shape, sim::Dtype::bf16,
                                  resolve_params(gemm.variant(row.variant), ParamValues{}), target, options);
    row.valid = e.sim.valid;
    row.error = e.error;
    row.simulated_ms = e.latency_s * 1e3;
    row.sim = e.sim;
  }
  return rows;
}

}  // namespace autotune::kernels
