#include "kernels/calibration.hpp"

#include "kernels/evaluate.hpp"

namespace autotune::kernels {

std::vector<CalibrationRow> run_calibration(const sim::TargetSpec& target) {
  const auto& gemm = family_registry().get("gemm");
  const Shape shape = {{"M", 4096}, {"N", 8192}, {"K", 8192}};
  const auto step = [](std::string variant, std::string tutorial, double measured_ms) {
    CalibrationRow row;
    row.variant = std::move(variant);
    row.tutorial = std::move(tutorial);
    row.measured_ms = measured_ms;
    return row;
  };
  std::vector<CalibrationRow> rows = {step("tiled", "nki_matmul_tiled_", 51.80),
                                      step("hoisted", "nki_matmul_hoist_load_", 42.96),
                                      step("blocked_mn", "nki_matmul_block_free_dimension_", 22.07),
                                      step("blocked_mnk", "nki_matmul_fully_optimized_", 6.97)};
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
