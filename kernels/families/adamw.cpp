#include "kernels/families/adamw.hpp"

#include <cmath>

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

constexpr double kVerificationElements = 1e6;

AdamwShape adamw_shape(const Shape& s) { return {int_arg(s, "M"), int_arg(s, "N")}; }
double elements(const Shape& s) { return double(s.at("M")) * double(s.at("N")); }

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description =
      "NKIBench's starting kernel: [128, 1024] loads, fifteen one-operation instructions per [128, 512] "
      "half, "
      "single buffers: nothing overlaps";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype, [&]<Dtype D>() { adamw_naive<D>(kernel, adamw_shape(s), AdamwNaiveParams{}); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return tiled_verification_shape(full, {{"M", 128, 128}, {"N", 1024, 1024}}, elements,
                                    kVerificationElements);
  };
  v.template_name = "autotune::kernels::adamw_naive";
  v.params_struct = "autotune::kernels::AdamwNaiveParams";
  return v;
}

VariantSpec fused_variant() {
  const AdamwFusedParams d;
  VariantSpec v;
  v.name = "fused";
  v.description =
      "[128, unroll_factor * tile_size] tiles through rotating buffers; seven wide fused instructions per "
      "tile "
      "placed across the vector, scalar and GpSimd engines";
  v.params = {
      param("tile_size", "columns per tile, DMA and instruction", {256, 512, 1024, 2048}, d.tile_size,
            ParamRole::tile),
      param("pipeline_depth", "rotating buffers per input and output stream, in loop steps", {1, 2, 3, 4},
            d.pipeline_depth, ParamRole::pipeline_depth),
      param("unroll_factor", "consecutive rows per partition in a tile: row tiles folded into one DMA",
            {1, 2, 4}, d.unroll_factor, ParamRole::unroll),
      param("square_engine", "0.001 g^2 on 0: the scalar engine (square activation), 1: the vector engine",
            {0, 1}, d.square_engine, ParamRole::placement),
      param("recip_engine", "(d + eps)^-1 on 0: the vector engine, 1: the scalar engine, 2: GpSimd",
            {0, 1, 2}, d.recip_engine, ParamRole::placement),
      param("update_engine",
            "m_t times the reciprocal on 0: the vector engine, 1: GpSimd, 2: alternating by tile", {0, 1, 2},
            d.update_engine, ParamRole::placement),
      param("final_engine",
            "theta_t minus the update: 0 one vector instruction; 1 the scaling on the scalar engine, the "
            "subtract on GpSimd",
            {0, 1}, d.final_engine, ParamRole::placement),
  };
  // Five streams of pipeline_depth tiles in the dtype, up to six fp32 work tiles.
  v.constraints = {
      "(5 * pipeline_depth * dtype_bytes + 6 * 4) * unroll_factor * tile_size <= "
      "sbuf_bytes_per_partition"};
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const AdamwFusedParams params{int_param(p, "tile_size"),     int_param(p, "pipeline_depth"),
                                  int_param(p, "unroll_factor"), int_param(p, "square_engine"),
                                  int_param(p, "recip_engine"),  int_param(p, "update_engine"),
                                  int_param(p, "final_engine")};
    dispatch_dtype(dtype, [&]<Dtype D>() { adamw_fused<D>(kernel, adamw_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    const std::int64_t rows_per_tile = 128 * p.at("unroll_factor");
    return tiled_verification_shape(
        full, {{"M", rows_per_tile, rows_per_tile}, {"N", p.at("tile_size"), p.at("tile_size")}}, elements,
        kVerificationElements);
  };
  v.template_name = "autotune::kernels::adamw_fused";
  v.params_struct = "autotune::kernels::AdamwFusedParams";
  return v;
}

FamilySpec adamw_family() {
  FamilySpec f;
  f.name = "adamw";
  f.description =
      "one AdamW step (t = 1, lr 1e-3, betas 0.9 / 0.999, eps 1e-8, weight decay 0.01) over [M, N]: "
      "theta, g, m, v -> the new theta (NKIBench's adamw)";
  f.shape_args = {"M", "N"};
  f.default_shape = Shape{{"M", 10944}, {"N", 2048}};
  f.shape_struct = "autotune::kernels::AdamwShape";
  f.dtypes = {Dtype::fp32, Dtype::bf16, Dtype::fp16};
  auto dims = [](const Shape& s) { return std::pair{s.at("M"), s.at("N")}; };
  // v is a second moment: non-negative, as NKIBench draws it (|N(0, 1)|).
  f.inputs = {
      {"theta", dims, -1.0, 1.0}, {"g", dims, -1.0, 1.0}, {"m", dims, -1.0, 1.0}, {"v", dims, 0.0, 2.0}};
  f.outputs = {{"out", dims}};
  f.variants = {naive_variant(), fused_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/adamw.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "fused";
  f.check_shape = [](const Shape& s) -> std::string {
    if (s.at("M") < 1 || s.at("M") > (1 << 20)) return "M must be in [1, 1048576]";
    if (s.at("N") < 1 || s.at("N") > (1 << 20)) return "N must be in [1, 1048576]";
    return "";
  };
  f.reference = [](const Shape&, const HostTensors& in) {
    const auto &theta = in[0], &g = in[1], &m = in[2], &v = in[3];
    std::vector<double> out(theta.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double theta_t = theta[i] - 1e-5 * theta[i];
      const double m_t = 0.9 * m[i] + 0.1 * g[i];
      const double v_t = 0.999 * v[i] + 0.001 * g[i] * g[i];
      out[i] = theta_t - 0.01 * m_t / (std::sqrt(v_t * 1000.0) + 1e-8);
    }
    return HostTensors{std::move(out)};
  };
  // The reference's operations per element: theta_t 2, m_t 3, v_t 4, the
  // scaling by 1000, sqrt, + eps, 0.01 *, the divide and the subtract.
  f.flops = [](const Shape& s) { return 15.0 * elements(s); };
  // Four inputs read once, the new theta written once.
  f.hbm_bytes = [](const Shape& s, Dtype dtype) { return 5.0 * elements(s) * sim::dtype_bytes(dtype); };
  f.tensor_engine_bound = false;
  f.tolerance = {{Dtype::fp32, 1e-5}, {Dtype::bf16, 2e-2}, {Dtype::fp16, 4e-3}};
  return f;
}

const FamilyRegistration registration(adamw_family());

}  // namespace
}  // namespace autotune::kernels
