#include "kernels/families/elementwise.hpp"

#include <cmath>

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

constexpr double kVerificationElements = 1e6;

ElementwiseShape elementwise_shape(const Shape& s) { return {int_arg(s, "rows"), int_arg(s, "cols")}; }
double elements(const Shape& s) { return double(s.at("rows")) * double(s.at("cols")); }

VariantSpec naive_variant(ElementwiseOp op, const std::string& family) {
  VariantSpec v;
  v.name = "naive";
  v.description = "one row tile at a time, whole rows, single buffers: nothing overlaps";
  v.trace = [op](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype, [&]<Dtype D>() {
      elementwise_naive<D>(kernel, op, elementwise_shape(s), ElementwiseNaiveParams{});
    });
  };
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return tiled_verification_shape(full, {{"rows", 128, 128}}, elements, kVerificationElements,
                                    {{"cols", 515}});
  };
  v.template_name = "autotune::kernels::" + family + "_naive";
  v.params_struct = "autotune::kernels::ElementwiseNaiveParams";
  return v;
}

VariantSpec tiled_variant(ElementwiseOp op, const std::string& family) {
  const ElementwiseTiledParams defaults;
  VariantSpec v;
  v.name = "tiled";
  v.description =
      "[128, unroll_factor * tile_size] tiles (unroll_factor rows per partition) through rotating buffers: "
      "loads overlap compute and stores";
  v.params = {
      param("tile_size", "columns per tile and per DMA transfer", {128, 256, 512, 1024, 2048, 4096},
            defaults.tile_size, ParamRole::tile),
      param("pipeline_depth", "rotating buffers per stream, in loop steps", {1, 2, 3, 4},
            defaults.pipeline_depth, ParamRole::pipeline_depth),
      param("unroll_factor", "consecutive rows per partition in a tile: row tiles folded into one DMA",
            {1, 2, 4, 8}, defaults.unroll_factor, ParamRole::unroll),
      param("engine",
            op == ElementwiseOp::add
                ? "the add on 0: the vector engine, 1: GpSimd, 2: alternating by tile"
                : "the multiply on 0: the vector engine, 1: GpSimd, 2: alternating by tile",
            {0, 1, 2}, defaults.engine, ParamRole::placement),
  };
  v.trace = [op](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const ElementwiseTiledParams params{int_param(p, "tile_size"), int_param(p, "pipeline_depth"),
                                        int_param(p, "unroll_factor"), int_param(p, "engine")};
    dispatch_dtype(dtype, [&]<Dtype D>() { elementwise_tiled<D>(kernel, op, elementwise_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    const std::int64_t rows_per_tile = 128 * p.at("unroll_factor");
    return tiled_verification_shape(
        full, {{"rows", rows_per_tile, rows_per_tile}, {"cols", p.at("tile_size"), p.at("tile_size")}},
        elements, kVerificationElements);
  };
  v.template_name = "autotune::kernels::" + family + "_tiled";
  v.params_struct = "autotune::kernels::ElementwiseTiledParams";
  return v;
}

FamilySpec elementwise_family(ElementwiseOp op) {
  const bool silu = op == ElementwiseOp::silu_mul;
  FamilySpec f;
  f.name = silu ? "silu_mul" : "add";
  f.description = silu ? "the gated MLP's activation out = silu(gate) * up over [rows, cols]"
                       : "the residual add out = a + b over [rows, cols]";
  f.shape_args = {"rows", "cols"};
  f.default_shape = silu ? Shape{{"rows", 3072}, {"cols", 16384}} : Shape{{"rows", 16384}, {"cols", 1024}};
  f.shape_struct = "autotune::kernels::ElementwiseShape";
  f.dtypes = {Dtype::bf16, Dtype::fp32, Dtype::fp16};
  auto dims = [](const Shape& s) { return std::pair{s.at("rows"), s.at("cols")}; };
  f.inputs = {{silu ? "gate" : "a", dims, -3.0, 3.0}, {silu ? "up" : "b", dims, -2.0, 2.0}};
  f.outputs = {{"out", dims}};
  f.variants = {naive_variant(op, f.name), tiled_variant(op, f.name)};
  for (auto& v : f.variants) v.header = "kernels/families/elementwise.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "tiled";
  f.check_shape = [](const Shape& s) -> std::string {
    if (s.at("rows") < 1 || s.at("rows") > (1 << 20)) return "rows must be in [1, 1048576]";
    if (s.at("cols") < 1 || s.at("cols") > (1 << 20)) return "cols must be in [1, 1048576]";
    return "";
  };
  f.reference = [silu](const Shape&, const HostTensors& in) {
    std::vector<double> out(in[0].size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double a = in[0][i], b = in[1][i];
      out[i] = silu ? a / (1.0 + std::exp(-a)) * b : a + b;
    }
    return HostTensors{std::move(out)};
  };
  // add: one per element; silu_mul: sigmoid, multiply by x, multiply by up.
  f.flops = [silu](const Shape& s) { return (silu ? 3.0 : 1.0) * elements(s); };
  f.hbm_bytes = [](const Shape& s, Dtype dtype) { return 3.0 * elements(s) * sim::dtype_bytes(dtype); };
  f.tensor_engine_bound = false;
  f.tolerance = {{Dtype::fp32, 1e-5}, {Dtype::bf16, 2e-2}, {Dtype::fp16, 4e-3}};
  return f;
}

const FamilyRegistration add_registration(elementwise_family(ElementwiseOp::add));
const FamilyRegistration silu_mul_registration(elementwise_family(ElementwiseOp::silu_mul));

}  // namespace
}  // namespace autotune::kernels
