#include "kernels/families/exp.hpp"

#include <cmath>

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

// Verification work budget in elements (functional simulation and reference).
constexpr double kVerificationElements = 1e6;

ExpShape exp_shape(const Shape& s) { return {int_arg(s, "rows"), int_arg(s, "cols")}; }
double elements(const Shape& s) { return double(s.at("rows")) * double(s.at("cols")); }

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description = "load the whole tensor, then exp every tile, then store everything (no overlap)";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype, [&]<Dtype D>() { exp_naive<D>(kernel, exp_shape(s), ExpNaiveParams{}); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return tiled_verification_shape(full, {{"rows", 128, 128}}, elements, kVerificationElements,
                                    {{"cols", 515}});
  };
  v.template_name = "autotune::kernels::exp_naive";
  v.params_struct = "autotune::kernels::ExpNaiveParams";
  return v;
}

VariantSpec tiled_variant() {
  VariantSpec v;
  v.name = "tiled";
  v.description =
      "[128, unroll_factor * tile_size] tiles (unroll_factor rows per partition) streamed through rotating "
      "buffers: loads overlap exp and stores";
  v.params = {
      param("tile_size", "columns per tile and per DMA transfer", {64, 128, 256, 512, 1024, 2048, 4096, 8192},
            ExpTiledParams{}.tile_size, ParamRole::tile),
      param("pipeline_depth", "rotating buffers per stream, in loop steps", {1, 2, 3, 4, 6, 8},
            ExpTiledParams{}.pipeline_depth, ParamRole::pipeline_depth),
      param("unroll_factor",
            "consecutive rows per partition in a tile: row tiles folded into one DMA and one exp",
            {1, 2, 4, 8}, ExpTiledParams{}.unroll_factor, ParamRole::unroll),
  };
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const ExpTiledParams params{int_param(p, "tile_size"), int_param(p, "pipeline_depth"),
                                int_param(p, "unroll_factor")};
    dispatch_dtype(dtype, [&]<Dtype D>() { exp_tiled<D>(kernel, exp_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    const std::int64_t rows_per_tile = 128 * p.at("unroll_factor");
    return tiled_verification_shape(
        full, {{"rows", rows_per_tile, rows_per_tile}, {"cols", p.at("tile_size"), p.at("tile_size")}},
        elements, kVerificationElements);
  };
  v.template_name = "autotune::kernels::exp_tiled";
  v.params_struct = "autotune::kernels::ExpTiledParams";
  return v;
}

FamilySpec exp_family() {
  FamilySpec f;
  f.name = "exp";
  f.description = "element-wise exp over a [rows, cols] tensor (the Neuron profiler example)";
  f.shape_args = {"rows", "cols"};
  f.default_shape = {{"rows", 250}, {"cols", 512}};
  f.shape_struct = "autotune::kernels::ExpShape";
  f.dtypes = {Dtype::fp32, Dtype::bf16, Dtype::fp16};
  f.inputs = {{"in_tensor", [](const Shape& s) { return std::pair{s.at("rows"), s.at("cols")}; }, -3.0, 3.0}};
  f.outputs = {{"out_tensor", [](const Shape& s) { return std::pair{s.at("rows"), s.at("cols")}; }}};
  f.variants = {naive_variant(), tiled_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/exp.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "tiled";
  f.check_shape = [](const Shape& s) -> std::string {
    if (s.at("rows") < 1 || s.at("rows") > (1 << 20)) return "rows must be in [1, 1048576]";
    if (s.at("cols") < 1 || s.at("cols") > (1 << 20)) return "cols must be in [1, 1048576]";
    return "";
  };
  f.reference = [](const Shape&, const HostTensors& in) {
    std::vector<double> out(in[0].size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::exp(in[0][i]);
    return HostTensors{std::move(out)};
  };
  f.flops = elements;  // one transcendental per element
  f.hbm_bytes = [](const Shape& s, Dtype dtype) { return 2.0 * elements(s) * sim::dtype_bytes(dtype); };
  f.tensor_engine_bound = false;
  f.tolerance = {{Dtype::fp32, 1e-5}, {Dtype::bf16, 1e-2}, {Dtype::fp16, 2e-3}};
  return f;
}

const FamilyRegistration registration(exp_family());

}  // namespace
}  // namespace autotune::kernels
