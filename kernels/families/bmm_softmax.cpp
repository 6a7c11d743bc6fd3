#include "kernels/families/bmm_softmax.hpp"

#include <cmath>

#include "kernels/families/bmm_spec.hpp"
#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

constexpr double kVerificationMacs = 4e7;

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description =
      "NKIBench's starting kernel: bmm's starting structure with a running row max per [128, 512] score "
      "tile; "
      "the scores through HBM to a second pass (exp, sums, reciprocal, scaling); single buffers";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype,
                   [&]<Dtype D>() { bmm_softmax_naive<D>(kernel, bmm_shape(s), BmmSoftmaxNaiveParams{}); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return tiled_verification_shape(full, {{"M", 128, 1024}, {"N", 512, 1024}, {"K", 128, 128}}, bmm_macs,
                                    kVerificationMacs, {{"B", 2}});
  };
  v.template_name = "autotune::kernels::bmm_softmax_naive";
  v.params_struct = "autotune::kernels::BmmSoftmaxNaiveParams";
  return v;
}

VariantSpec fused_variant() {
  const BmmSoftmaxFusedParams d;
  VariantSpec v;
  v.name = "fused";
  v.description =
      "whole score rows on chip: banks drained with their row max, one exp with its row sum per row tile, "
      "scaled in place; pe_row_tiles batches' matmuls side by side on PE row tiles";
  v.params = {
      param(
          "pe_row_tiles",
          "batches whose matmuls run side by side on PE row tiles (nc_matmul tile_position/tile_size); needs "
          "K <= 128 / pe_row_tiles and a target whose smallest PE tile is at most 128 / pe_row_tiles",
          {1, 2, 4}, d.pe_row_tiles, ParamRole::placement),
      param("pipeline_depth", "rotating score-row tiles per batch", {1, 2, 3, 4}, d.pipeline_depth,
            ParamRole::pipeline_depth),
      param("scale_engine", "the scaling by 1 / sum on 0: the vector engine, 1: GpSimd, 2: the scalar engine",
            {0, 1, 2}, d.scale_engine, ParamRole::placement),
      param("dma_transpose", "1: lhs transposed by a transposing DMA; 0: by the tensor engine", {0, 1},
            d.dma_transpose, ParamRole::placement),
  };
  v.constraints = {"pe_row_tiles * K <= max_contraction || pe_row_tiles == 1",
                   "pe_row_tiles * pe_tile_min <= max_contraction",
                   // each batch's rhs twice; pipeline_depth fp32 score rows per batch, and as many rows
                   // in the dtype when it is not fp32 (8 - dtype_bytes: 4 + 2 for 2-byte dtypes, 4 for fp32)
                   "2 * N * dtype_bytes + pipeline_depth * pe_row_tiles * N * (8 - dtype_bytes) <= "
                   "sbuf_bytes_per_partition"};
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const BmmSoftmaxFusedParams params{int_param(p, "pe_row_tiles"), int_param(p, "pipeline_depth"),
                                       int_param(p, "scale_engine"), int_param(p, "dma_transpose")};
    dispatch_dtype(dtype, [&]<Dtype D>() { bmm_softmax_fused<D>(kernel, bmm_shape(s), params); });
  };
  // A whole group and a ragged one; M two tiles and a ragged one; N two banks and a ragged one.
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return tiled_verification_shape(full, {{"M", 128, 128}, {"N", 512, 512}}, bmm_macs, kVerificationMacs,
                                    {{"B", p.at("pe_row_tiles") + 1}});
  };
  v.template_name = "autotune::kernels::bmm_softmax_fused";
  v.params_struct = "autotune::kernels::BmmSoftmaxFusedParams";
  return v;
}

FamilySpec bmm_softmax_family() {
  FamilySpec f;
  f.name = "bmm_softmax";
  f.description =
      "a batched matmul with a row softmax: out[b] = softmax(lhs[b] [M, K] . rhs[b] [K, N]) over N "
      "(NKIBench's bmm_softmax)";
  // The products at the tensor engine's peak bound it (set_bmm_operands'
  // flops): the softmax's element work (max, exp, sum, scaling: 5 per score)
  // runs on the other engines and is left out so that the bound stays a
  // bound; at NKIBench's shape the output's HBM bytes bound the kernel anyway.
  set_bmm_operands(f);
  f.shape_struct = "autotune::kernels::BmmSoftmaxShape";
  f.variants = {naive_variant(), fused_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/bmm_softmax.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "fused";
  f.reference = [](const Shape& s, const HostTensors& in) {
    std::vector<double> out = bmm_products(s, in);
    const std::int64_t N = s.at("N");
    for (std::size_t row = 0; row < out.size(); row += std::size_t(N)) {
      double* o = &out[row];
      double max = o[0], sum = 0;
      for (std::int64_t j = 0; j < N; ++j) max = std::max(max, o[j]);
      for (std::int64_t j = 0; j < N; ++j) sum += (o[j] = std::exp(o[j] - max));
      for (std::int64_t j = 0; j < N; ++j) o[j] /= sum;
    }
    return HostTensors{std::move(out)};
  };
  return f;
}

const FamilyRegistration registration(bmm_softmax_family());

}  // namespace
}  // namespace autotune::kernels
