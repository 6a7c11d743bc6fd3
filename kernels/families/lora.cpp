#include "kernels/families/lora.hpp"

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

LoraShape lora_shape(const Shape& s) {
  return {int_arg(s, "M"), int_arg(s, "N"), int_arg(s, "K"), int_arg(s, "R")};
}
double macs(const Shape& s) {
  const double M = s.at("M"), N = s.at("N"), K = s.at("K"), R = s.at("R");
  return M * N * K + M * K * R + M * R * N;
}

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description =
      "NKIBench's starting kernel: the low-rank product first, transposed, through HBM; then x . w "
      "transposed, "
      "x transposed again per 1024-column chunk, K chunks summed in SBUF, the sum transposed back and stored "
      "in [128, 128] tiles; single buffers";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype, [&]<Dtype D>() { lora_naive<D>(kernel, lora_shape(s), LoraNaiveParams{}); });
  };
  // Two 512-row blocks of M, two 1024-column chunks of N, two 640-row chunks of K; the last tile of each
  // ragged. (The low-rank pass's 2048-row halves: one at this shape.)
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return ragged_blocks(full, {{"M", 512}, {"N", 1024}, {"K", 640}});
  };
  v.template_name = "autotune::kernels::lora_naive";
  v.params_struct = "autotune::kernels::LoraNaiveParams";
  return v;
}

VariantSpec fused_variant() {
  const LoraFusedParams d;
  VariantSpec v;
  v.name = "fused";
  v.description =
      "per block of rows: x transposed once and (x . a)^T computed once; per step of N each row tile's PSUM "
      "tile accumulates x . w over all of K, w streamed, then (x . a) . b into the same PSUM tile";
  v.params = {
      param("tiles_in_block_m", "128-row tiles of x per block: the rows each streamed w tile serves",
            {1, 2, 3, 4}, d.tiles_in_block_m, ParamRole::block),
      param("unroll_factor", "512-column matmuls per PSUM tile, drain and store", {1, 2}, d.unroll_factor,
            ParamRole::unroll),
      param("pipeline_depth", "rotating w tiles (128 rows of K each) in flight", {2, 4, 8, 12, 16},
            d.pipeline_depth, ParamRole::pipeline_depth),
      param("drain_engine", "PSUM -> SBUF on 0: the vector engine, 1: the scalar engine, 2: alternating",
            {0, 1, 2}, d.drain_engine, ParamRole::placement),
  };
  v.constraints = {
      // two banks of x transposes, (x . a)^T, and one more result tile than the block's row tiles
      "3 + (tiles_in_block_m + 1) * unroll_factor <= psum_banks",
      "128 * tiles_in_block_m * 4 <= psum_bank_bytes",
      // x row staging, a, x^T, (x . a)^T, the w tiles, b, the output tiles
      "(2 * tiles_in_block_m * 512 + K / 128 * R + K * tiles_in_block_m + 128 * tiles_in_block_m + "
      "(pipeline_depth + 2 + tiles_in_block_m + 1) * 512 * unroll_factor) * dtype_bytes <= "
      "sbuf_bytes_per_partition"};
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const LoraFusedParams params{int_param(p, "tiles_in_block_m"), int_param(p, "unroll_factor"),
                                 int_param(p, "pipeline_depth"), int_param(p, "drain_engine")};
    dispatch_dtype(dtype, [&]<Dtype D>() { lora_fused<D>(kernel, lora_shape(s), params); });
  };
  // Two row blocks, two steps of N, two 512-column chunks of the x transposes; the last tile of each ragged.
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return ragged_blocks(
        full, {{"M", 128 * p.at("tiles_in_block_m")}, {"N", 512 * p.at("unroll_factor")}, {"K", 512}});
  };
  v.template_name = "autotune::kernels::lora_fused";
  v.params_struct = "autotune::kernels::LoraFusedParams";
  return v;
}

FamilySpec lora_family() {
  FamilySpec f;
  f.name = "lora";
  f.description =
      "a linear layer with a low-rank adapter out[M,N] = x . w + (x . a) . b, x [M,K], w [K,N], a [K,R], "
      "b [R,N] (NKIBench's lora)";
  f.shape_args = {"M", "N", "K", "R"};
  f.default_shape = Shape{{"M", 4096}, {"N", 12288}, {"K", 5120}, {"R", 128}};
  f.shape_struct = "autotune::kernels::LoraShape";
  f.dtypes = {Dtype::fp32, Dtype::bf16, Dtype::fp16};
  f.inputs = {{"x",
               [](const Shape& s) {
                 return std::pair{s.at("M"), s.at("K")};
               }},
              {"w",
               [](const Shape& s) {
                 return std::pair{s.at("K"), s.at("N")};
               }},
              {"a",
               [](const Shape& s) {
                 return std::pair{s.at("K"), s.at("R")};
               }},
              {"b", [](const Shape& s) {
                 return std::pair{s.at("R"), s.at("N")};
               }}};
  f.outputs = {{"out", [](const Shape& s) { return std::pair{s.at("M"), s.at("N")}; }}};
  f.variants = {naive_variant(), fused_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/lora.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "fused";
  f.check_shape = [](const Shape& s) -> std::string {
    for (const char* a : {"M", "N", "K"})
      if (s.at(a) < 1 || s.at(a) > (1 << 16)) return std::string(a) + " must be in [1, 65536]";
    if (s.at("R") < 1 || s.at("R") > 128) return "R must be in [1, 128] (the rank fits the partitions)";
    return "";
  };
  f.reference = [](const Shape& s, const HostTensors& in) {
    const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K"), R = s.at("R");
    const auto &x = in[0], &w = in[1], &a = in[2], &b = in[3];
    std::vector<double> out(std::size_t(M * N), 0.0), xa(std::size_t(M * R), 0.0);
    for (std::int64_t i = 0; i < M; ++i) {
      double* o = &out[std::size_t(i * N)];
      for (std::int64_t k = 0; k < K; ++k) {
        const double xv = x[std::size_t(i * K + k)];
        const double* row = &w[std::size_t(k * N)];
        for (std::int64_t j = 0; j < N; ++j) o[j] += xv * row[j];
        for (std::int64_t r = 0; r < R; ++r) xa[std::size_t(i * R + r)] += xv * a[std::size_t(k * R + r)];
      }
      for (std::int64_t r = 0; r < R; ++r) {
        const double v = xa[std::size_t(i * R + r)];
        const double* row = &b[std::size_t(r * N)];
        for (std::int64_t j = 0; j < N; ++j) o[j] += v * row[j];
      }
    }
    return HostTensors{std::move(out)};
  };
  f.flops = [](const Shape& s) { return 2.0 * macs(s); };
  f.hbm_bytes = [](const Shape& s, Dtype dtype) {
    const double M = s.at("M"), N = s.at("N"), K = s.at("K"), R = s.at("R");
    return (M * K + K * N + K * R + R * N + M * N) * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = true;
  // bf16/fp16: x . a is stored in the dtype before its product with b.
  f.tolerance = {{Dtype::fp32, 1e-4}, {Dtype::bf16, 3e-2}, {Dtype::fp16, 5e-3}};
  return f;
}

const FamilyRegistration registration(lora_family());

}  // namespace
}  // namespace autotune::kernels
