#include "kernels/families/rmsnorm.hpp"

#include <cmath>

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

constexpr double kVerificationElements = 1e6;

RmsnormShape rmsnorm_shape(const Shape& s) { return {int_arg(s, "rows"), int_arg(s, "cols")}; }
double elements(const Shape& s) { return double(s.at("rows")) * double(s.at("cols")); }

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description =
      "one instruction per formula step, two passes, 1/rms round-trips through HBM, single buffers";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype,
                   [&]<Dtype D>() { rmsnorm_naive<D>(kernel, rmsnorm_shape(s), RmsnormNaiveParams{}); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return tiled_verification_shape(full, {{"rows", 128, 128}}, elements, kVerificationElements,
                                    {{"cols", 515}});
  };
  v.template_name = "autotune::kernels::rmsnorm_naive";
  v.params_struct = "autotune::kernels::RmsnormNaiveParams";
  return v;
}

VariantSpec fused_variant() {
  VariantSpec v;
  v.name = "fused";
  v.description =
      "square+row-sum in one activation, one rsqrt pass, scale and gamma per chunk; pipelined row tiles";
  v.params = {
      param("tile_size", "columns per chunk: per DMA transfer and per instruction",
            {128, 256, 512, 1024, 2048, 4096, 8192}, RmsnormFusedParams{}.tile_size, ParamRole::tile),
      param("pipeline_depth", "rotating row-tile buffers, in loop steps", {1, 2, 3, 4},
            RmsnormFusedParams{}.pipeline_depth, ParamRole::pipeline_depth),
      param("unroll_factor", "consecutive rows per partition: row tiles folded into one DMA each way",
            {1, 2, 4}, RmsnormFusedParams{}.unroll_factor, ParamRole::unroll),
  };
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const RmsnormFusedParams params{int_param(p, "tile_size"), int_param(p, "pipeline_depth"),
                                    int_param(p, "unroll_factor")};
    dispatch_dtype(dtype, [&]<Dtype D>() { rmsnorm_fused<D>(kernel, rmsnorm_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return tiled_verification_shape(full,
                                    {{"rows", 128 * p.at("unroll_factor"), 128 * p.at("unroll_factor")},
                                     {"cols", p.at("tile_size"), p.at("tile_size")}},
                                    elements, kVerificationElements);
  };
  v.template_name = "autotune::kernels::rmsnorm_fused";
  v.params_struct = "autotune::kernels::RmsnormFusedParams";
  return v;
}

FamilySpec rmsnorm_family() {
  FamilySpec f;
  f.name = "rmsnorm";
  f.description = "row normalisation y = x / sqrt(mean(x^2) + 1e-6) * gamma over [rows, cols]";
  f.shape_args = {"rows", "cols"};
  f.default_shape = {{"rows", 4096}, {"cols", 4096}};
  f.shape_struct = "autotune::kernels::RmsnormShape";
  f.dtypes = {Dtype::fp32, Dtype::bf16, Dtype::fp16};
  f.inputs = {{"x",
               [](const Shape& s) {
                 return std::pair{s.at("rows"), s.at("cols")};
               },
               -2.0, 2.0},
              {"gamma",
               [](const Shape& s) {
                 return std::pair{std::int64_t{1}, s.at("cols")};
               },
               0.5, 1.5}};
  f.outputs = {{"y", [](const Shape& s) { return std::pair{s.at("rows"), s.at("cols")}; }}};
  f.variants = {naive_variant(), fused_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/rmsnorm.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "fused";
  f.check_shape = [](const Shape& s) -> std::string {
    if (s.at("rows") < 1 || s.at("rows") > (1 << 20)) return "rows must be in [1, 1048576]";
    if (s.at("cols") < 1 || s.at("cols") > 65536) return "cols must be in [1, 65536]";
    return "";
  };
  f.reference = [](const Shape& s, const HostTensors& in) {
    const std::int64_t rows = s.at("rows"), cols = s.at("cols");
    const auto& x = in[0];
    const auto& gamma = in[1];
    std::vector<double> y(x.size());
    for (std::int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (std::int64_t c = 0; c < cols; ++c) sum += x[r * cols + c] * x[r * cols + c];
      const double inv_rms = 1.0 / std::sqrt(sum / double(cols) + double(kRmsnormEpsilon));
      for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * inv_rms * gamma[c];
    }
    return HostTensors{std::move(y)};
  };
  // Per element: square, add (row sum), scale, gamma multiply.
  f.flops = [](const Shape& s) { return 4.0 * elements(s); };
  f.hbm_bytes = [](const Shape& s, Dtype dtype) {
    return (2.0 * elements(s) + double(s.at("cols"))) * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = false;
  f.tolerance = {{Dtype::fp32, 1e-4}, {Dtype::bf16, 2e-2}, {Dtype::fp16, 4e-3}};
  return f;
}

const FamilyRegistration registration(rmsnorm_family());

}  // namespace
}  // namespace autotune::kernels
