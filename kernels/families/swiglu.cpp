#include "kernels/families/swiglu.hpp"

#include <cmath>

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

SwigluShape swiglu_shape(const Shape& s) { return {int_arg(s, "M"), int_arg(s, "N"), int_arg(s, "K")}; }
double macs(const Shape& s) { return 3.0 * double(s.at("M")) * double(s.at("N")) * double(s.at("K")); }

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description =
      "NKIBench's starting kernel: gate, up and down in three passes; x transposed tile by tile again per "
      "1024-column chunk and pass; gate and h through HBM; silu in four instructions; single buffers";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype, [&]<Dtype D>() { swiglu_naive<D>(kernel, swiglu_shape(s), SwigluNaiveParams{}); });
  };
  // Two 512-row blocks of M, two 1024-column chunks of N, two 512-column steps of the down product;
  // the last tile of each ragged.
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return ragged_blocks(full, {{"M", 512}, {"N", 1024}, {"K", 512}});
  };
  v.template_name = "autotune::kernels::swiglu_naive";
  v.params_struct = "autotune::kernels::SwigluNaiveParams";
  return v;
}

VariantSpec fused_variant() {
  const SwigluFusedParams d;
  VariantSpec v;
  v.name = "fused";
  v.description =
      "per block of rows: x transposed once, gate and up of an N tile in PSUM, silu(gate) * up into h^T "
      "kept on chip, then the down product accumulated over N in PSUM; weights streamed";
  v.params = {
      param("tiles_in_block_m",
            "128-row tiles of x per block: the moving size of the gate and up matmuls, the rows each "
            "streamed weight serves",
            {1, 2, 3, 4}, d.tiles_in_block_m, ParamRole::block),
      param("tiles_in_block_n", "128-column tiles of w_gate and w_up loaded per group", {1, 2, 4, 8},
            d.tiles_in_block_n, ParamRole::block),
      param("pipeline_depth", "weight groups in flight (w_down: as many 128-row tiles per group)",
            {1, 2, 3, 4, 6}, d.pipeline_depth, ParamRole::pipeline_depth),
      param("drain_engine", "out PSUM -> SBUF on 0: the vector engine, 1: the scalar engine, 2: alternating",
            {0, 1, 2}, d.drain_engine, ParamRole::placement),
  };
  v.constraints = {
      // two banks of x transposes, gate, up, and one down accumulator per row tile
      "4 + tiles_in_block_m <= psum_banks", "128 * tiles_in_block_m * 4 <= psum_bank_bytes",
      // x row staging, x^T, the w_gate/w_up groups, the w_down tiles, h^T, silu work, output rows
      "(2 * tiles_in_block_m * 512 + K * tiles_in_block_m + 2 * pipeline_depth * K * tiles_in_block_n + "
      "pipeline_depth * tiles_in_block_n * 512 + N * tiles_in_block_m + tiles_in_block_m * K) * dtype_bytes "
      "+ "
      "2 * 128 * tiles_in_block_m * 4 <= sbuf_bytes_per_partition"};
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const SwigluFusedParams params{int_param(p, "tiles_in_block_m"), int_param(p, "tiles_in_block_n"),
                                   int_param(p, "pipeline_depth"), int_param(p, "drain_engine")};
    dispatch_dtype(dtype, [&]<Dtype D>() { swiglu_fused<D>(kernel, swiglu_shape(s), params); });
  };
  // Two row blocks, two groups of N tiles, two 512-column steps of the down product (and of the x
  // transposes); the last tile of each ragged.
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return ragged_blocks(
        full, {{"M", 128 * p.at("tiles_in_block_m")}, {"N", 128 * p.at("tiles_in_block_n")}, {"K", 512}});
  };
  v.template_name = "autotune::kernels::swiglu_fused";
  v.params_struct = "autotune::kernels::SwigluFusedParams";
  return v;
}

FamilySpec swiglu_family() {
  FamilySpec f;
  f.name = "swiglu";
  f.description =
      "the gated MLP out[M,K] = (silu(x . w_gate) * (x . w_up)) . w_down, x [M,K], w_up and w_gate [K,N], "
      "w_down [N,K] (NKIBench's swiglu)";
  f.shape_args = {"M", "N", "K"};
  f.default_shape = Shape{{"M", 4096}, {"N", 3072}, {"K", 1024}};
  f.shape_struct = "autotune::kernels::SwigluShape";
  f.dtypes = {Dtype::fp32, Dtype::bf16, Dtype::fp16};
  f.inputs = {{"x",
               [](const Shape& s) {
                 return std::pair{s.at("M"), s.at("K")};
               }},
              {"w_up",
               [](const Shape& s) {
                 return std::pair{s.at("K"), s.at("N")};
               }},
              {"w_down",
               [](const Shape& s) {
                 return std::pair{s.at("N"), s.at("K")};
               }},
              {"w_gate", [](const Shape& s) {
                 return std::pair{s.at("K"), s.at("N")};
               }}};
  f.outputs = {{"out", [](const Shape& s) { return std::pair{s.at("M"), s.at("K")}; }}};
  f.variants = {naive_variant(), fused_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/swiglu.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "fused";
  f.check_shape = [](const Shape& s) -> std::string {
    for (const char* a : {"M", "N", "K"})
      if (s.at(a) < 1 || s.at(a) > (1 << 16)) return std::string(a) + " must be in [1, 65536]";
    return "";
  };
  f.reference = [](const Shape& s, const HostTensors& in) {
    const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
    const auto &x = in[0], &w_up = in[1], &w_down = in[2], &w_gate = in[3];
    std::vector<double> gate(std::size_t(M * N), 0.0), up(std::size_t(M * N), 0.0),
        out(std::size_t(M * K), 0.0);
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t k = 0; k < K; ++k) {
        const double a = x[std::size_t(i * K + k)];
        for (std::int64_t j = 0; j < N; ++j) {
          gate[std::size_t(i * N + j)] += a * w_gate[std::size_t(k * N + j)];
          up[std::size_t(i * N + j)] += a * w_up[std::size_t(k * N + j)];
        }
      }
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t j = 0; j < N; ++j) {
        const double g = gate[std::size_t(i * N + j)];
        const double h = g / (1.0 + std::exp(-g)) * up[std::size_t(i * N + j)];
        const double* row = &w_down[std::size_t(j * K)];
        double* o = &out[std::size_t(i * K)];
        for (std::int64_t k = 0; k < K; ++k) o[k] += h * row[k];
      }
    return HostTensors{std::move(out)};
  };
  f.flops = [](const Shape& s) { return 2.0 * macs(s); };
  f.hbm_bytes = [](const Shape& s, Dtype dtype) {
    const double M = s.at("M"), N = s.at("N"), K = s.at("K");
    return (2 * M * K + 3 * K * N) * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = true;
  // bf16/fp16: h is stored in the dtype before the down product.
  f.tolerance = {{Dtype::fp32, 1e-4}, {Dtype::bf16, 3e-2}, {Dtype::fp16, 5e-3}};
  return f;
}

const FamilyRegistration registration(swiglu_family());

}  // namespace
}  // namespace autotune::kernels
