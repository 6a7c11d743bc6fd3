#include "kernels/calibration.hpp"

#include "kernels/evaluate.hpp"

namespace autotune::kernels {

std::vector<CalibrationRow> run_calibration(const sim::TargetSpec& target) {
  const auto& gemm = family_registry().get("gemm");
  const Shape shape = {{"M", 4096}, {"N", 8192}, {"K", 8192}};
  std::vector<CalibrationRow> rows = {{"tiled", "nki_matmul_tiled_", 51.80},
                                      {"hoisted", "nki_matmul_hoist_load_", 42.96},
                                      {"blocked_mn", "nki_matmul_block_free_dimension_", 22.07},
                                      {"blocked_mnk", "nki_matmul_fully_optimized_", 6.97}};
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
