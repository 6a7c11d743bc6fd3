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
            op == ElementwiseOp::add ? "the add on 0: the vector engine, 1: GpSimd, 2: alternating by tile"
            : op == ElementwiseOp::silu_mul
                ? "the multiply on 0: the vector engine, 1: GpSimd, 2: alternating by tile"
                : "0: one silu activation on the scalar engine; a sigmoid there and the product with x on "
                  "1: the vector engine, 2: GpSimd",
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

const char* family_name(ElementwiseOp op) {
  switch (op) {
    case ElementwiseOp::add:
      return "add";
    case ElementwiseOp::silu_mul:
      return "silu_mul";
    case ElementwiseOp::silu:
      return "silu";
  }
  return "?";
}

FamilySpec elementwise_family(ElementwiseOp op) {
  FamilySpec f;
  f.name = family_name(op);
  switch (op) {
    case ElementwiseOp::add:
      f.description = "the residual add out = a + b over [rows, cols]";
      f.default_shape = Shape{{"rows", 16384}, {"cols", 1024}};
      break;
    case ElementwiseOp::silu_mul:
      f.description = "the gated MLP's activation out = silu(gate) * up over [rows, cols]";
      f.default_shape = Shape{{"rows", 3072}, {"cols", 16384}};
      break;
    case ElementwiseOp::silu:
      f.description = "the activation out = silu(x) = x / (1 + exp(-x)) over [rows, cols] (NKIBench's silu)";
      f.default_shape = Shape{{"rows", 4096}, {"cols", 7168}};
      break;
  }
  f.shape_args = {"rows", "cols"};
  f.shape_struct = "autotune::kernels::ElementwiseShape";
  f.dtypes = {Dtype::bf16, Dtype::fp32, Dtype::fp16};
  auto dims = [](const Shape& s) { return std::pair{s.at("rows"), s.at("cols")}; };
  const auto names = elementwise_inputs(op);
  // silu's input spans both signs well past the sigmoid's knee; the others as before.
  if (op == ElementwiseOp::silu)
    f.inputs = {{names[0], dims, -6.0, 6.0}};
  else
    f.inputs = {{names[0], dims, -3.0, 3.0}, {names[1], dims, -2.0, 2.0}};
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
  f.reference = [op](const Shape&, const HostTensors& in) {
    std::vector<double> out(in[0].size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      const double a = in[0][i];
      switch (op) {
        case ElementwiseOp::add:
          out[i] = a + in[1][i];
          break;
        case ElementwiseOp::silu_mul:
          out[i] = a / (1.0 + std::exp(-a)) * in[1][i];
          break;
        case ElementwiseOp::silu:
          out[i] = a / (1.0 + std::exp(-a));
          break;
      }
    }
    return HostTensors{std::move(out)};
  };
  // add: one per element; silu_mul: sigmoid, multiply by x, multiply by up;
  // silu: sigmoid, multiply by x.
  const double per_element = op == ElementwiseOp::add ? 1.0 : op == ElementwiseOp::silu_mul ? 3.0 : 2.0;
  f.flops = [per_element](const Shape& s) { return per_element * elements(s); };
  // Every input read once and the output written once.
  const double tensors = double(names.size()) + 1.0;
  f.hbm_bytes = [tensors](const Shape& s, Dtype dtype) {
    return tensors * elements(s) * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = false;
  f.tolerance = {{Dtype::fp32, 1e-5}, {Dtype::bf16, 2e-2}, {Dtype::fp16, 4e-3}};
  return f;
}

const FamilyRegistration add_registration(elementwise_family(ElementwiseOp::add));
const FamilyRegistration silu_mul_registration(elementwise_family(ElementwiseOp::silu_mul));
const FamilyRegistration silu_registration(elementwise_family(ElementwiseOp::silu));

}  // namespace
}  // namespace autotune::kernels
