#include "kernels/families/gemm.hpp"

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

// Verification work budget in multiply-accumulates: the functional simulation
// and the double reference both scale with M * N * K.
constexpr double kVerificationMacs = 4e7;

GemmShape gemm_shape(const Shape& s) { return {int_arg(s, "M"), int_arg(s, "N"), int_arg(s, "K")}; }

double macs(const Shape& s) { return double(s.at("M")) * double(s.at("N")) * double(s.at("K")); }

std::vector<ParamSpec> tile_params() {
  return {
      param("tile_m", "M tile: free size of the stationary operand (tensor engine: at most 128)",
            {32, 64, 128}, 128, ParamRole::tile),
      param("tile_n", "N tile: free size of the moving operand (tensor engine: at most 512)",
            {64, 128, 256, 512}, 512, ParamRole::tile),
      param("tile_k", "K tile: contraction rows per matmul (partitions: at most 128)", {32, 64, 128}, 128,
            ParamRole::tile),
  };
}

ParamSpec unroll_param() {
  return param(
      "unroll_factor",
      "adjacent N tiles per step: one PSUM tile, one drain instruction and one store for all of them",
      {1, 2, 4}, 1, ParamRole::unroll);
}

std::vector<std::string> tile_constraints() {
  return {"tile_m <= max_stationary_free", "tile_n <= max_moving_free", "tile_k <= partitions",
          // the two rotating PSUM tiles of unroll_factor * tile_n fp32 columns
          "2 * unroll_factor * tile_n * 4 <= psum_banks * psum_bank_bytes"};
}

VariantSpec tiled_variant() {
  VariantSpec v;
  v.name = "tiled";
  v.description = "tutorial step 1: both operand tiles loaded inside the K loop";
  v.params = tile_params();
  v.params.push_back(unroll_param());
  v.params.push_back(param("pipeline_depth", "rotating buffers per operand tile stream", {1, 2, 3, 4, 6, 8},
                           GemmTiledParams{}.pipeline_depth, ParamRole::pipeline_depth));
  v.constraints = tile_constraints();
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const GemmTiledParams params{int_param(p, "tile_m"), int_param(p, "tile_n"), int_param(p, "tile_k"),
                                 int_param(p, "unroll_factor"), int_param(p, "pipeline_depth")};
    dispatch_dtype(dtype, [&]<Dtype D>() { gemm_tiled<D>(kernel, gemm_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return tiled_verification_shape(full,
                                    {{"M", p.at("tile_m"), p.at("tile_m")},
                                     {"N", p.at("tile_n"), p.at("tile_n") * p.at("unroll_factor")},
                                     {"K", p.at("tile_k"), p.at("tile_k")}},
                                    macs, kVerificationMacs);
  };
  v.template_name = "autotune::kernels::gemm_tiled";
  v.params_struct = "autotune::kernels::GemmTiledParams";
  return v;
}

VariantSpec hoisted_variant() {
  VariantSpec v;
  v.name = "hoisted";
  v.description = "tutorial step 2: operand loads hoisted out of the innermost loop (lhsT once per M tile)";
  v.params = tile_params();
  v.params.push_back(unroll_param());
  v.params.push_back(param("pipeline_depth", "rotating buffers per loaded K column of operand tiles",
                           {1, 2, 3}, GemmHoistedParams{}.pipeline_depth, ParamRole::pipeline_depth));
  v.constraints = tile_constraints();
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const GemmHoistedParams params{int_param(p, "tile_m"), int_param(p, "tile_n"), int_param(p, "tile_k"),
                                   int_param(p, "unroll_factor"), int_param(p, "pipeline_depth")};
    dispatch_dtype(dtype, [&]<Dtype D>() { gemm_hoisted<D>(kernel, gemm_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return tiled_verification_shape(full,
                                    {{"M", p.at("tile_m"), p.at("tile_m")},
                                     {"N", p.at("tile_n"), p.at("tile_n") * p.at("unroll_factor")},
                                     {"K", p.at("tile_k"), p.at("tile_k")}},
                                    macs, kVerificationMacs);
  };
  v.template_name = "autotune::kernels::gemm_hoisted";
  v.params_struct = "autotune::kernels::GemmHoistedParams";
  return v;
}

VariantSpec blocked_mn_variant() {
  VariantSpec v;
  v.name = "blocked_mn";
  v.description = "tutorial step 3: free dimensions M and N blocked, loads shared within a block";
  v.params = tile_params();
  v.params.push_back(param("tiles_in_block_m", "M tiles per block", {1, 2, 4, 8}, 2, ParamRole::block));
  v.params.push_back(param("tiles_in_block_n", "N tiles per block", {1, 2, 4, 8}, 2, ParamRole::block));
  v.params.push_back(unroll_param());
  v.params.push_back(param("pipeline_depth", "rotating buffers per loaded block of operand columns", {1, 2},
                           GemmBlockedMnParams{}.pipeline_depth, ParamRole::pipeline_depth));
  v.constraints = tile_constraints();
  v.constraints.push_back("unroll_factor <= tiles_in_block_n");
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const GemmBlockedMnParams params{int_param(p, "tile_m"),           int_param(p, "tile_n"),
                                     int_param(p, "tile_k"),           int_param(p, "tiles_in_block_m"),
                                     int_param(p, "tiles_in_block_n"), int_param(p, "unroll_factor"),
                                     int_param(p, "pipeline_depth")};
    dispatch_dtype(dtype, [&]<Dtype D>() { gemm_blocked_mn<D>(kernel, gemm_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return tiled_verification_shape(full,
                                    {{"M", p.at("tile_m"), p.at("tile_m") * p.at("tiles_in_block_m")},
                                     {"N", p.at("tile_n"), p.at("tile_n") * p.at("tiles_in_block_n")},
                                     {"K", p.at("tile_k"), p.at("tile_k")}},
                                    macs, kVerificationMacs);
  };
  v.template_name = "autotune::kernels::gemm_blocked_mn";
  v.params_struct = "autotune::kernels::GemmBlockedMnParams";
  return v;
}

VariantSpec blocked_mnk_variant() {
  VariantSpec v;
  v.name = "blocked_mnk";
  v.description = "tutorial step 4: M, N and K blocked, large operand transfers, partial sums kept in SBUF";
  v.params = tile_params();
  v.params.push_back(
      param("tiles_in_block_m", "M tiles per block", {1, 2, 4, 8, 16, 32}, 16, ParamRole::block));
  v.params.push_back(param("tiles_in_block_n", "N tiles per block", {1, 2, 4, 8}, 2, ParamRole::block));
  v.params.push_back(param("tiles_in_block_k", "K tiles per block", {1, 2, 4, 8, 16}, 8, ParamRole::block));
  v.params.push_back(unroll_param());
  v.params.push_back(param("pipeline_depth", "rotating buffers per loaded operand block", {1, 2, 3},
                           GemmBlockedMnkParams{}.pipeline_depth, ParamRole::pipeline_depth));
  v.constraints = tile_constraints();
  v.constraints.push_back("unroll_factor <= tiles_in_block_n");
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const GemmBlockedMnkParams params{int_param(p, "tile_m"),           int_param(p, "tile_n"),
                                      int_param(p, "tile_k"),           int_param(p, "tiles_in_block_m"),
                                      int_param(p, "tiles_in_block_n"), int_param(p, "tiles_in_block_k"),
                                      int_param(p, "unroll_factor"),    int_param(p, "pipeline_depth")};
    dispatch_dtype(dtype, [&]<Dtype D>() { gemm_blocked_mnk<D>(kernel, gemm_shape(s), params); });
  };
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    return tiled_verification_shape(full,
                                    {{"M", p.at("tile_m"), p.at("tile_m") * p.at("tiles_in_block_m")},
                                     {"N", p.at("tile_n"), p.at("tile_n") * p.at("tiles_in_block_n")},
                                     {"K", p.at("tile_k"), p.at("tile_k") * p.at("tiles_in_block_k")}},
                                    macs, kVerificationMacs);
  };
  v.template_name = "autotune::kernels::gemm_blocked_mnk";
  v.params_struct = "autotune::kernels::GemmBlockedMnkParams";
  return v;
}

FamilySpec gemm_family() {
  FamilySpec f;
  f.name = "gemm";
  f.description = "matrix multiplication result[M,N] = lhsT[K,M]^T . rhs[K,N] (the NKI matmul tutorial)";
  f.shape_args = {"M", "N", "K"};
  f.default_shape = {{"M", 4096}, {"N", 8192}, {"K", 8192}};
  f.shape_struct = "autotune::kernels::GemmShape";
  f.dtypes = {Dtype::bf16, Dtype::fp32, Dtype::fp16};
  f.inputs = {{"lhsT",
               [](const Shape& s) {
                 return std::pair{s.at("K"), s.at("M")};
               }},
              {"rhs", [](const Shape& s) {
                 return std::pair{s.at("K"), s.at("N")};
               }}};
  f.outputs = {{"result", [](const Shape& s) { return std::pair{s.at("M"), s.at("N")}; }}};
  f.variants = {tiled_variant(), hoisted_variant(), blocked_mn_variant(), blocked_mnk_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/gemm.hpp";
  f.baseline_variant = "tiled";
  f.default_variant = "blocked_mnk";
  f.check_shape = [](const Shape& s) -> std::string {
    for (const char* arg : {"M", "N", "K"})
      if (s.at(arg) < 1 || s.at(arg) > 65536) return std::string(arg) + " must be in [1, 65536]";
    return "";
  };
  f.reference = [](const Shape& s, const HostTensors& in) {
    const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
    const auto& lhsT = in[0];
    const auto& rhs = in[1];
    std::vector<double> result(static_cast<std::size_t>(M * N), 0.0);
    for (std::int64_t k = 0; k < K; ++k)
      for (std::int64_t m = 0; m < M; ++m) {
        const double a = lhsT[k * M + m];
        double* row = &result[m * N];
        const double* b = &rhs[k * N];
        for (std::int64_t n = 0; n < N; ++n) row[n] += a * b[n];
      }
    return HostTensors{std::move(result)};
  };
  f.flops = [](const Shape& s) { return 2.0 * macs(s); };
  f.hbm_bytes = [](const Shape& s, Dtype dtype) {
    const double M = s.at("M"), N = s.at("N"), K = s.at("K");
    return (K * M + K * N + M * N) * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = true;
  // bf16/fp16: operands and stored results are rounded to 8 (11) significant
  // bits, and blocked_mnk sums its K blocks in the output dtype, as the tutorial does.
  f.tolerance = {{Dtype::fp32, 1e-4}, {Dtype::bf16, 3e-2}, {Dtype::fp16, 5e-3}};
  return f;
}

const FamilyRegistration registration(gemm_family());

}  // namespace
}  // namespace autotune::kernels
