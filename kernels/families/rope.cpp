#include "kernels/families/rope.hpp"

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

constexpr double kVerificationElements = 5e5;

RopeShape rope_shape(const Shape& s) {
  return {int_arg(s, "seq"), int_arg(s, "heads"), int_arg(s, "head_dim")};
}
double elements(const Shape& s) {
  return double(s.at("seq")) * double(s.at("heads")) * double(s.at("head_dim"));
}

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description = "per row tile and head, six instructions on [rows, head_dim / 2] slices; single buffers";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype, [&]<Dtype D>() { rope_naive<D>(kernel, rope_shape(s), RopeNaiveParams{}); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return tiled_verification_shape(full, {{"seq", 128, 128}}, elements, kVerificationElements);
  };
  v.template_name = "autotune::kernels::rope_naive";
  v.params_struct = "autotune::kernels::RopeNaiveParams";
  return v;
}

VariantSpec wide_variant() {
  const RopeWideParams defaults;
  VariantSpec v;
  v.name = "wide";
  v.description =
      "tables widened to every head once per row tile, halves gathered, six instructions over all heads at "
      "once; rotating buffers";
  v.params = {
      param("pipeline_depth", "rotating buffers per stream, in row tiles", {1, 2, 3, 4},
            defaults.pipeline_depth, ParamRole::pipeline_depth),
      param("engine_split", "0: all arithmetic on the vector engine; 1: the sin products on GpSimd", {0, 1},
            defaults.engine_split, ParamRole::placement),
      param("unroll_factor", "consecutive tokens per partition in a row tile", {1, 2, 4},
            defaults.unroll_factor, ParamRole::unroll),
      param("gather_by_dma", "halves gathered and scattered by 1: SBUF-to-SBUF DMAs, 0: scalar-engine copies",
            {0, 1}, defaults.gather_by_dma, ParamRole::placement),
  };
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const RopeWideParams params{int_param(p, "pipeline_depth"), int_param(p, "engine_split"),
                                int_param(p, "unroll_factor"), int_param(p, "gather_by_dma")};
    dispatch_dtype(dtype, [&]<Dtype D>() { rope_wide<D>(kernel, rope_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    const std::int64_t rows = 128 * p.at("unroll_factor");
    return tiled_verification_shape(full, {{"seq", rows, rows}}, elements, kVerificationElements);
  };
  v.template_name = "autotune::kernels::rope_wide";
  v.params_struct = "autotune::kernels::RopeWideParams";
  return v;
}

FamilySpec rope_family() {
  FamilySpec f;
  f.name = "rope";
  f.description =
      "rotary position embedding (rotate-half, as Qwen3 and Llama) of x [seq, heads*head_dim] with cos/sin "
      "tables [seq, head_dim/2]";
  f.shape_args = {"seq", "heads", "head_dim"};
  f.default_shape = {{"seq", 16384}, {"heads", 16}, {"head_dim", 128}};
  f.shape_struct = "autotune::kernels::RopeShape";
  f.dtypes = {Dtype::bf16, Dtype::fp32, Dtype::fp16};
  f.inputs = {{"x",
               [](const Shape& s) {
                 return std::pair{s.at("seq"), s.at("heads") * s.at("head_dim")};
               }},
              {"cos",
               [](const Shape& s) {
                 return std::pair{s.at("seq"), s.at("head_dim") / 2};
               }},
              {"sin", [](const Shape& s) {
                 return std::pair{s.at("seq"), s.at("head_dim") / 2};
               }}};
  f.outputs = {{"y", [](const Shape& s) {
                  return std::pair{s.at("seq"), s.at("heads") * s.at("head_dim")};
                }}};
  f.variants = {naive_variant(), wide_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/rope.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "wide";
  f.check_shape = [](const Shape& s) -> std::string {
    if (s.at("seq") < 1 || s.at("seq") > (1 << 20)) return "seq must be in [1, 1048576]";
    if (s.at("heads") < 1 || s.at("heads") > 256) return "heads must be in [1, 256]";
    if (s.at("head_dim") < 2 || s.at("head_dim") > 512 || s.at("head_dim") % 2 != 0)
      return "head_dim must be even, in [2, 512]";
    return "";
  };
  f.reference = [](const Shape& s, const HostTensors& in) {
    const std::int64_t seq = s.at("seq"), heads = s.at("heads"), d = s.at("head_dim"), half = d / 2;
    const auto &x = in[0], &cos = in[1], &sin = in[2];
    std::vector<double> y(x.size());
    for (std::int64_t t = 0; t < seq; ++t)
      for (std::int64_t h = 0; h < heads; ++h)
        for (std::int64_t i = 0; i < half; ++i) {
          const std::int64_t at = t * heads * d + h * d + i;
          const double c = cos[t * half + i], n = sin[t * half + i], x1 = x[at], x2 = x[at + half];
          y[at] = x1 * c - x2 * n;
          y[at + half] = x2 * c + x1 * n;
        }
    return HostTensors{std::move(y)};
  };
  f.flops = [](const Shape& s) { return 3.0 * elements(s); };  // two products and a sum per output
  f.hbm_bytes = [](const Shape& s, Dtype dtype) {
    return (2.0 * elements(s) + double(s.at("seq")) * double(s.at("head_dim"))) * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = false;
  f.tolerance = {{Dtype::fp32, 1e-5}, {Dtype::bf16, 2e-2}, {Dtype::fp16, 4e-3}};
  return f;
}

const FamilyRegistration registration(rope_family());

}  // namespace
}  // namespace autotune::kernels
