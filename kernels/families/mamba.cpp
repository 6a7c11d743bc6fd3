#include "kernels/families/mamba.hpp"

#include <cmath>

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

// (channel, state, step) triples checked per verification run.
constexpr double kVerificationTriples = 1.5e6;

MambaShape mamba_shape(const Shape& s) { return {int_arg(s, "M"), int_arg(s, "C"), int_arg(s, "S")}; }
double triples(const Shape& s) { return double(s.at("M")) * double(s.at("C")) * double(s.at("S")); }

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description =
      "NKIBench's starting kernel: states outer, channel tiles inner, delta and u reloaded per state, "
      "b and c broadcast per state and tile, five one-operation instructions and the scan per step "
      "chunk, single buffers";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype, [&]<Dtype D>() { mamba_naive<D>(kernel, mamba_shape(s), MambaNaiveParams{}); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    // Two channel tiles (a ragged one) and two step chunks (a ragged one): the scan carried across.
    return tiled_verification_shape(full, {{"M", kMambaNaiveChunk, kMambaNaiveChunk}, {"C", 128, 128}},
                                    triples, kVerificationTriples, {{"S", 3}});
  };
  v.template_name = "autotune::kernels::mamba_naive";
  v.params_struct = "autotune::kernels::MambaNaiveParams";
  return v;
}

VariantSpec fused_variant() {
  const MambaFusedParams d;
  VariantSpec v;
  v.name = "fused";
  v.description =
      "chunks of tile_size steps, channel tiles inner: delta, u and delta * u once per chunk for every "
      "state, b_s and c_s broadcast once per chunk on the tensor engine, the scan carried from chunk to "
      "chunk; products and the sum over states placed across vector, GpSimd and the tensor engine";
  v.params = {
      param("tile_size", "steps per chunk: per DMA, instruction and scan", {256, 512, 1024, 2048},
            d.tile_size, ParamRole::tile),
      param("pipeline_depth", "rotating buffers per stream, in chunks and steps", {1, 2, 3}, d.pipeline_depth,
            ParamRole::pipeline_depth),
      param("bcast_in_psum",
            "1: the products read b_s and c_s where the tensor engine broadcast them (PSUM); 0: drained to "
            "SBUF by the scalar engine",
            {0, 1}, d.bcast_in_psum, ParamRole::placement),
      param(
          "product_engine",
          "delta u * b_s and h * c_s (from SBUF) on 0: the vector engine, 1: GpSimd, 2: alternating by state",
          {0, 1, 2}, d.product_engine, ParamRole::placement),
      param("acc_engine",
            "the sum over states on 0: the vector engine, 1: GpSimd, 2: the tensor engine (identity matmuls "
            "accumulating in PSUM)",
            {0, 1, 2}, d.acc_engine, ParamRole::placement),
  };
  v.constraints = {
      // GpSimd cannot read PSUM: its products take the broadcasts from SBUF.
      "bcast_in_psum == 0 || product_engine == 0",
      // The broadcasts of two states (b and c, a bank per 512 steps) and, accumulating on the tensor
      // engine, a tile per channel tile.
      "4 * max(1, tile_size * 4 / psum_bank_bytes) <= psum_banks",
      "acc_engine != 2 || (4 + C / 128) * max(1, tile_size * 4 / psum_bank_bytes) <= psum_banks",
      // b and c rows; delta, delta * u and the accumulators per channel tile; u; the exp and scan tiles;
      // the drained broadcasts.
      "(4 * dtype_bytes + pipeline_depth * C / 128 * (dtype_bytes + 8) + pipeline_depth * (dtype_bytes + 8) "
      "+ "
      "16 * (1 - bcast_in_psum)) * tile_size <= sbuf_bytes_per_partition"};
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const MambaFusedParams params{int_param(p, "tile_size"), int_param(p, "pipeline_depth"),
                                  int_param(p, "bcast_in_psum"), int_param(p, "product_engine"),
                                  int_param(p, "acc_engine")};
    dispatch_dtype(dtype, [&]<Dtype D>() { mamba_fused<D>(kernel, mamba_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    const std::int64_t tile = p.at("tile_size");
    return tiled_verification_shape(full, {{"M", tile, tile}, {"C", 128, 128}}, triples, kVerificationTriples,
                                    {{"S", 3}});
  };
  v.template_name = "autotune::kernels::mamba_fused";
  v.params_struct = "autotune::kernels::MambaFusedParams";
  return v;
}

FamilySpec mamba_family() {
  FamilySpec f;
  f.name = "mamba";
  f.description =
      "the selective scan of a Mamba layer over M steps, C channels, S states: delta, u [C, M], a [C, S], "
      "b, c [S, M] -> sum_s c * scan(exp(delta a), delta u b) [C, M] (NKIBench's mamba)";
  f.shape_args = {"M", "C", "S"};
  f.default_shape = Shape{{"M", 7168}, {"C", 256}, {"S", 16}};
  f.shape_struct = "autotune::kernels::MambaShape";
  f.dtypes = {Dtype::fp32, Dtype::bf16};
  const auto by_steps = [](const Shape& s) { return std::pair{s.at("C"), s.at("M")}; };
  // NKIBench draws every input from N(0, 0.05); uniform on [-0.1, 0.1] has a
  // like spread, so exp(delta a) stays near 1 and the state bounded.
  f.inputs = {{"delta", by_steps, -0.1, 0.1},
              {"u", by_steps, -0.1, 0.1},
              {"a",
               [](const Shape& s) {
                 return std::pair{s.at("C"), s.at("S")};
               },
               -0.1, 0.1},
              {"b",
               [](const Shape& s) {
                 return std::pair{s.at("S"), s.at("M")};
               },
               -0.1, 0.1},
              {"c",
               [](const Shape& s) {
                 return std::pair{s.at("S"), s.at("M")};
               },
               -0.1, 0.1}};
  f.outputs = {{"out", by_steps}};
  f.variants = {naive_variant(), fused_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/mamba.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "fused";
  f.check_shape = [](const Shape& s) -> std::string {
    if (s.at("M") < 1 || s.at("M") > (1 << 20)) return "M must be in [1, 1048576]";
    if (s.at("C") < 1 || s.at("C") > (1 << 16)) return "C must be in [1, 65536]";
    if (s.at("S") < 1 || s.at("S") > 128) return "S must be in [1, 128] (states per partition row of b, c)";
    return "";
  };
  f.reference = [](const Shape& s, const HostTensors& in) {
    const std::size_t M = std::size_t(s.at("M")), C = std::size_t(s.at("C")), S = std::size_t(s.at("S"));
    const auto &delta = in[0], &u = in[1], &a = in[2], &b = in[3], &c = in[4];
    std::vector<double> out(C * M, 0.0);
    for (std::size_t ch = 0; ch < C; ++ch)
      for (std::size_t st = 0; st < S; ++st) {
        double h = 0;
        for (std::size_t m = 0; m < M; ++m) {
          const double d = delta[ch * M + m];
          h = std::exp(d * a[ch * S + st]) * h + d * b[st * M + m] * u[ch * M + m];
          out[ch * M + m] += c[st * M + m] * h;
        }
      }
    return HostTensors{std::move(out)};
  };
  // Per (channel, state, step): delta * a, exp, * b (delta * u is made once
  // per channel and step), the scan's multiply and add, * c, the sum over
  // states; plus delta * u per channel and step.
  f.flops = [](const Shape& s) { return 7.0 * triples(s) + double(s.at("C")) * double(s.at("M")); };
  // delta, u, a, b, c read once, the output written once.
  f.hbm_bytes = [](const Shape& s, Dtype dtype) {
    const double M = double(s.at("M")), C = double(s.at("C")), S = double(s.at("S"));
    return (3 * C * M + C * S + 2 * S * M) * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = false;
  // Relative to the output's RMS: the scan's state sums thousands of terms.
  f.tolerance = {{Dtype::fp32, 2e-5}, {Dtype::bf16, 3e-2}};
  return f;
}

const FamilyRegistration registration(mamba_family());

}  // namespace
}  // namespace autotune::kernels
