#include "kernels/families/bmm.hpp"

#include "kernels/families/bmm_spec.hpp"
#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

constexpr double kVerificationMacs = 4e7;

VariantSpec naive_variant() {
  VariantSpec v;
  v.name = "naive";
  v.description =
      "NKIBench's starting kernel: per batch and 1024-column chunk of rhs, every lhs tile loaded and "
      "transposed "
      "again; [128, 512] products drained by the vector engine; single buffers";
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
    dispatch_dtype(dtype, [&]<Dtype D>() { bmm_naive<D>(kernel, bmm_shape(s), BmmNaiveParams{}); });
  };
  // Two batches; M over two 1024-row blocks and a ragged tile, N over two chunks and a ragged one.
  v.verification_shape = [](const Shape& full, const ParamValues&) {
    return tiled_verification_shape(full, {{"M", 128, 1024}, {"N", 512, 1024}, {"K", 128, 128}}, bmm_macs,
                                    kVerificationMacs, {{"B", 2}});
  };
  v.template_name = "autotune::kernels::bmm_naive";
  v.params_struct = "autotune::kernels::BmmNaiveParams";
  return v;
}

VariantSpec paired_variant() {
  const BmmPairedParams d;
  VariantSpec v;
  v.name = "paired";
  v.description =
      "each batch's rhs loaded once; per M tile the group's lhs tiles transposed once; pe_row_tiles batches' "
      "matmuls side by side on PE row tiles; unroll_factor 512-column matmuls per PSUM tile, drain and store";
  v.params = {
      param(
          "pe_row_tiles",
          "batches whose matmuls run side by side on PE row tiles (nc_matmul tile_position/tile_size); needs "
          "K <= 128 / pe_row_tiles and a target whose smallest PE tile is at most 128 / pe_row_tiles",
          {1, 2, 4}, d.pe_row_tiles, ParamRole::placement),
      param("unroll_factor", "512-column matmuls per PSUM tile and drain instruction", {1, 2, 4},
            d.unroll_factor, ParamRole::unroll),
      param("store_factor", "PSUM tiles drained into one output tile per batch, stored by one DMA",
            {1, 2, 4, 8}, d.store_factor, ParamRole::block),
      param("pipeline_depth", "rotating output tiles per batch between drain and store", {1, 2, 3, 4},
            d.pipeline_depth, ParamRole::pipeline_depth),
      param("drain_engine", "PSUM -> SBUF on 0: the vector engine, 1: the scalar engine, 2: alternating",
            {0, 1, 2}, d.drain_engine, ParamRole::placement),
      param("dma_transpose", "1: lhs transposed by a transposing DMA; 0: by the tensor engine", {0, 1},
            d.dma_transpose, ParamRole::placement),
  };
  v.constraints = {
      "pe_row_tiles * K <= max_contraction || pe_row_tiles == 1",
      "pe_row_tiles * pe_tile_min <= max_contraction",
      // two rotating PSUM tiles per batch of the group, and a bank for the PE transposes
      "2 * pe_row_tiles * unroll_factor * 512 * 4 + (1 - dma_transpose) * psum_bank_bytes <= "
      "psum_banks * psum_bank_bytes",
      // each batch's rhs twice, and pipeline_depth output tiles per batch of the group
      "(2 * N + pipeline_depth * pe_row_tiles * store_factor * unroll_factor * 512) * dtype_bytes "
      "<= sbuf_bytes_per_partition"};
  v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const BmmPairedParams params{int_param(p, "pe_row_tiles"), int_param(p, "unroll_factor"),
                                 int_param(p, "store_factor"), int_param(p, "pipeline_depth"),
                                 int_param(p, "drain_engine"), int_param(p, "dma_transpose")};
    dispatch_dtype(dtype, [&]<Dtype D>() { bmm_paired<D>(kernel, bmm_shape(s), params); });
  };
  // A whole group and a ragged one; M two tiles and a ragged one; N two output blocks and a ragged one.
  v.verification_shape = [](const Shape& full, const ParamValues& p) {
    const std::int64_t group = p.at("pe_row_tiles");
    return tiled_verification_shape(
        full,
        {{"M", 128, 128},
         {"N", 512 * p.at("unroll_factor"), 512 * p.at("unroll_factor") * p.at("store_factor")}},
        bmm_macs, kVerificationMacs, {{"B", group + 1}});
  };
  v.template_name = "autotune::kernels::bmm_paired";
  v.params_struct = "autotune::kernels::BmmPairedParams";
  return v;
}

FamilySpec bmm_family() {
  FamilySpec f;
  f.name = "bmm";
  f.description = "a batched matmul out[b] = lhs[b] [M, K] . rhs[b] [K, N] for b < B (NKIBench's bmm)";
  set_bmm_operands(f);
  f.shape_struct = "autotune::kernels::BmmShape";
  f.variants = {naive_variant(), paired_variant()};
  for (auto& v : f.variants) v.header = "kernels/families/bmm.hpp";
  f.baseline_variant = "naive";
  f.default_variant = "paired";
  f.reference = [](const Shape& s, const HostTensors& in) { return HostTensors{bmm_products(s, in)}; };
  return f;
}

}  // namespace

BmmShape bmm_shape(const Shape& s) {
  return {int_arg(s, "B"), int_arg(s, "M"), int_arg(s, "K"), int_arg(s, "N")};
}

double bmm_macs(const Shape& s) {
  return double(s.at("B")) * double(s.at("M")) * double(s.at("K")) * double(s.at("N"));
}

void set_bmm_operands(FamilySpec& f) {
  f.shape_args = {"B", "M", "K", "N"};
  f.default_shape = Shape{{"B", 16}, {"M", 4096}, {"K", 64}, {"N", 4096}};
  f.dtypes = {Dtype::fp32, Dtype::bf16, Dtype::fp16};
  f.inputs = {{"lhs",
               [](const Shape& s) {
                 return std::pair{s.at("B") * s.at("M"), s.at("K")};
               }},
              {"rhs", [](const Shape& s) {
                 return std::pair{s.at("B") * s.at("K"), s.at("N")};
               }}};
  f.outputs = {{"out", [](const Shape& s) { return std::pair{s.at("B") * s.at("M"), s.at("N")}; }}};
  f.check_shape = [](const Shape& s) -> std::string {
    if (s.at("B") < 1 || s.at("B") > 4096) return "B must be in [1, 4096]";
    for (const char* a : {"M", "K", "N"})
      if (s.at(a) < 1 || s.at(a) > (1 << 16)) return std::string(a) + " must be in [1, 65536]";
    return "";
  };
  f.flops = [](const Shape& s) { return 2.0 * bmm_macs(s); };
  f.hbm_bytes = [](const Shape& s, Dtype dtype) {
    const double B = s.at("B"), M = s.at("M"), K = s.at("K"), N = s.at("N");
    return (B * M * K + B * K * N + B * M * N) * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = true;
  f.tolerance = {{Dtype::bf16, 3e-2}, {Dtype::fp16, 5e-3}, {Dtype::fp32, 1e-4}};
}

std::vector<double> bmm_products(const Shape& s, const HostTensors& in) {
  const std::int64_t B = s.at("B"), M = s.at("M"), K = s.at("K"), N = s.at("N");
  std::vector<double> out(std::size_t(B * M * N), 0.0);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t i = 0; i < M; ++i)
      for (std::int64_t k = 0; k < K; ++k) {
        const double a = in[0][std::size_t((b * M + i) * K + k)];
        const double* row = &in[1][std::size_t((b * K + k) * N)];
        double* o = &out[std::size_t((b * M + i) * N)];
        for (std::int64_t j = 0; j < N; ++j) o[j] += a * row[j];
      }
  return out;
}

namespace {

const FamilyRegistration registration(bmm_family());

}  // namespace
}  // namespace autotune::kernels
