#include "kernels/families/transpose.hpp"

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

constexpr double kVerificationElements = 5e5;

TransposeShape transpose_shape(const Shape& s) {
  return {int_arg(s, "batch"), int_arg(s, "rows"), int_arg(s, "cols")};
}
double elements(const Shape& s) {
  return double(s.at("batch")) * double(s.at("rows")) * double(s.at("cols"));
}

// Two matrices of ragged tiles along both axes (or the full extents when smaller).
Shape verification_for(const Shape& full, std::int64_t row_tile, std::int64_t col_tile) {
  Shape shape = tiled_verification_shape(full, {{"rows", row_tile, row_tile}, {"cols", col_tile, col_tile}},
                                         elements, kVerificationElements);
  shape["batch"] = std::min<std::int64_t>(full.at("batch"), 2);
  return shape;
}

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description = "one 128 x 128 block at a time through the tensor engine, single buffers";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(
        dtype, [&]<Dtype D>() { transpose_naive<D>(kernel, transpose_shape(s), TransposeNaiveParams{}); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return verification_for(full, 128, 128);
  };
  v.template_name = "autotune::kernels::transpose_naive";
  v.params_struct = "autotune::kernels::TransposeNaiveParams";
  return v;
}

VariantSpec pe_variant() {
  const TransposePeParams defaults;
  VariantSpec v;
  v.name = "pe";
  v.description =
      "tensor-engine transposes, pipelined: strips of tile_size columns loaded at once, blocks_per_bank row "
      "tiles transposed into one PSUM bank, drained by one instruction and stored by one DMA";
  v.params = {
      param("tile_size", "columns of x per load", {128, 256, 512, 1024, 2048}, defaults.tile_size,
            ParamRole::tile),
      param("blocks_per_bank", "row tiles transposed into one PSUM bank, drained and stored together",
            {1, 2, 4}, defaults.blocks_per_bank, ParamRole::unroll),
      param("pipeline_depth", "rotating buffers for loaded strips and drained pieces", {1, 2, 3, 4},
            defaults.pipeline_depth, ParamRole::pipeline_depth),
      param("evacuate_engine", "who drains PSUM: 0 the vector engine, 1 the scalar engine, 2 GpSimd",
            {0, 1, 2}, defaults.evacuate_engine, ParamRole::placement),
  };
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const TransposePeParams params{int_param(p, "tile_size"), int_param(p, "blocks_per_bank"),
                                   int_param(p, "pipeline_depth"), int_param(p, "evacuate_engine")};
    dispatch_dtype(dtype, [&]<Dtype D>() { transpose_pe<D>(kernel, transpose_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return verification_for(full, 128 * p.at("blocks_per_bank"), p.at("tile_size"));
  };
  v.template_name = "autotune::kernels::transpose_pe";
  v.params_struct = "autotune::kernels::TransposePeParams";
  return v;
}

VariantSpec dma_variant() {
  const TransposeDmaParams defaults;
  VariantSpec v;
  v.name = "dma";
  v.description =
      "transposing DMAs (the hardware transposer for 2-byte data on trn2): no engine touches the data";
  v.params = {
      param("tile_size", "rows of x per transposing transfer", {128, 256, 512, 1024, 2048},
            defaults.tile_size, ParamRole::tile),
      param("pipeline_depth", "rotating buffers", {1, 2, 3, 4, 6}, defaults.pipeline_depth,
            ParamRole::pipeline_depth),
  };
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const TransposeDmaParams params{int_param(p, "tile_size"), int_param(p, "pipeline_depth")};
    dispatch_dtype(dtype, [&]<Dtype D>() { transpose_dma<D>(kernel, transpose_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return verification_for(full, p.at("tile_size"), 128);
  };
  v.template_name = "autotune::kernels::transpose_dma";
  v.params_struct = "autotune::kernels::TransposeDmaParams";
  return v;
}

FamilySpec transpose_family() {
  FamilySpec f;
  f.name = "transpose";
  f.description =
      "a batch of matrix transposes, x [batch*rows, cols] -> y [batch*cols, rows] (layout changes)";
  f.shape_args = {"batch", "rows", "cols"};
  f.default_shape = {{"batch", 1}, {"rows", 16384}, {"cols", 1024}};
  f.shape_struct = "autotune::kernels::TransposeShape";
  f.dtypes = {Dtype::bf16, Dtype::fp32, Dtype::fp16};
  f.inputs = {{"x", [](const Shape& s) { return std::pair{s.at("batch") * s.at("rows"), s.at("cols")}; }}};
  f.outputs = {{"y", [](const Shape& s) { return std::pair{s.at("batch") * s.at("cols"), s.at("rows")}; }}};
  f.variants = {naive_variant(), pe_variant(), dma_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/transpose.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "pe";
  f.check_shape = [](const Shape& s) -> std::string {
    if (s.at("batch") < 1 || s.at("batch") > 4096) return "batch must be in [1, 4096]";
    if (s.at("rows") < 1 || s.at("rows") > (1 << 20)) return "rows must be in [1, 1048576]";
    if (s.at("cols") < 1 || s.at("cols") > (1 << 20)) return "cols must be in [1, 1048576]";
    return "";
  };
  f.reference = [](const Shape& s, const HostTensors& in) {
    const std::int64_t batch = s.at("batch"), rows = s.at("rows"), cols = s.at("cols");
    std::vector<double> y(in[0].size());
    for (std::int64_t b = 0; b < batch; ++b)
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0; c < cols; ++c)
          y[(b * cols + c) * rows + r] = in[0][(b * rows + r) * cols + c];
    return HostTensors{std::move(y)};
  };
  // No arithmetic: the roofline is the traffic, one read and one write.
  f.flops = [](const Shape&) { return 0.0; };
  f.hbm_bytes = [](const Shape& s, Dtype dtype) { return 2.0 * elements(s) * sim::dtype_bytes(dtype); };
  f.tensor_engine_bound = false;
  // A transpose moves values: they must come out exactly.
  f.tolerance = {{Dtype::fp32, 0.0}, {Dtype::bf16, 0.0}, {Dtype::fp16, 0.0}};
  return f;
}

const FamilyRegistration registration(transpose_family());

}  // namespace
}  // namespace autotune::kernels
