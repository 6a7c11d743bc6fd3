// The three NKIBench families of RMSNorm fused with a matmul
// (kernels/families/norm_matmul.hpp): rmsnorm_matmul, add_rmsnorm_matmul and
// matmul_add_rmsnorm, declared and registered together because they share
// their shape, operands, checks and roofline.
#include "kernels/families/norm_matmul.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/families/family_support.hpp"

namespace autotune::kernels {
namespace {

// Verification work budget in multiply-accumulates (functional simulation and the double reference).
constexpr double kVerificationMacs = 4e7;

NormMatmulShape norm_matmul_shape(const Shape& s) {
  return {int_arg(s, "M"), int_arg(s, "N"), int_arg(s, "K")};
}
double macs(const Shape& s) { return double(s.at("M")) * double(s.at("N")) * double(s.at("K")); }

// Which of the three tasks a family is.
enum class Task { rmsnorm_matmul, add_rmsnorm_matmul, matmul_add_rmsnorm };

const char* header = "kernels/families/norm_matmul.hpp";

VariantSpec naive_variant(Task task) {
  VariantSpec v;
  v.name = "naive";
  switch (task) {
    case Task::rmsnorm_matmul:
      v.description =
          "NKIBench's starting kernel: per 1024 rows, the statistics per 512-column half in four "
          "instructions, x loaded twice, scaled and transposed [128, 128] at a time; w's [K, 1024] slices "
          "loaded per 1024 rows; single buffers";
      v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
        dispatch_dtype(dtype, [&]<Dtype D>() {
          rmsnorm_matmul_naive<D>(kernel, norm_matmul_shape(s), RmsnormMatmulNaiveParams{});
        });
      };
      v.verification_shape = [](const Shape& full, const ParamValues&) {
        return tiled_verification_shape(full, {{"M", 128, 1024}, {"N", 512, 1024}, {"K", 128, 512}}, macs,
                                        kVerificationMacs);
      };
      v.template_name = "autotune::kernels::rmsnorm_matmul_naive";
      v.params_struct = "autotune::kernels::RmsnormMatmulNaiveParams";
      break;
    case Task::add_rmsnorm_matmul:
      v.description =
          "NKIBench's starting kernel: per row tile one instruction per step of the normalisation; per "
          "[128, 512] output tile and K tile a tile of w loaded and the row slice transposed again; single "
          "buffers";
      v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
        dispatch_dtype(dtype, [&]<Dtype D>() {
          add_rmsnorm_matmul_naive<D>(kernel, norm_matmul_shape(s), AddRmsnormMatmulNaiveParams{});
        });
      };
      v.verification_shape = [](const Shape& full, const ParamValues&) {
        return tiled_verification_shape(full, {{"M", 128, 128}, {"N", 512, 512}, {"K", 128, 128}}, macs,
                                        kVerificationMacs);
      };
      v.template_name = "autotune::kernels::add_rmsnorm_matmul_naive";
      v.params_struct = "autotune::kernels::AddRmsnormMatmulNaiveParams";
      break;
    case Task::matmul_add_rmsnorm:
      v.description =
          "NKIBench's starting kernel: per [128, 512] product tile and K tile a tile of w loaded and x's "
          "slice transposed again; the row of products through SBUF, then one instruction per step of the "
          "residual add and normalisation; single buffers";
      v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues&) {
        dispatch_dtype(dtype, [&]<Dtype D>() {
          matmul_add_rmsnorm_naive<D>(kernel, norm_matmul_shape(s), MatmulAddRmsnormNaiveParams{});
        });
      };
      v.verification_shape = [](const Shape& full, const ParamValues&) {
        return tiled_verification_shape(full, {{"M", 128, 128}, {"N", 512, 512}, {"K", 128, 128}}, macs,
                                        kVerificationMacs);
      };
      v.template_name = "autotune::kernels::matmul_add_rmsnorm_naive";
      v.params_struct = "autotune::kernels::MatmulAddRmsnormNaiveParams";
      break;
  }
  return v;
}

ParamSpec depth_param(std::int64_t default_value) {
  return param("pipeline_depth",
               "row tiles transposed ahead of the matmuls, plus one: rotating transposed row tiles",
               {1, 2, 3, 4}, default_value, ParamRole::pipeline_depth);
}
ParamSpec unroll_param(std::int64_t default_value) {
  return param("unroll_factor", "PSUM banks of 512 columns per matmul step, drained by one instruction",
               {1, 2, 3}, default_value, ParamRole::unroll);
}
ParamSpec transpose_engine_param(std::int64_t default_value) {
  return param("transpose_engine",
               "transposed x drained from PSUM by 0: the vector engine, 1: the scalar engine", {0, 1},
               default_value, ParamRole::placement);
}
// The two rotating output PSUM tiles and the two banks of transposes.
const char* psum_constraint = "2 * unroll_factor + 2 <= psum_banks";

// The fused variants' paths at a verification cost like the other families':
// two row tiles (the second ragged, transposed ahead of the first's matmuls
// from pipeline_depth 2), two PSUM banks of N (the second ragged: two steps
// at unroll_factor 1, one ragged step above), x's columns over two PSUM banks
// of transposes with a ragged K tile; at most the full shape.
Shape fused_verification_shape(const Shape& full, const ParamValues&) {
  Shape shape = full;
  shape["M"] = std::min<std::int64_t>(full.at("M"), 128 + 65);
  shape["N"] = std::min<std::int64_t>(full.at("N"), 512 + 257);
  shape["K"] = std::min<std::int64_t>(full.at("K"), 512 + 65);
  return shape;
}

VariantSpec fused_variant(Task task) {
  VariantSpec v;
  v.name = "fused";
  v.verification_shape = fused_verification_shape;
  if (task == Task::matmul_add_rmsnorm) {
    const MatmulAddRmsnormFusedParams d;
    v.description =
        "w resident in SBUF; x transposed per 512-column chunk, staged ahead of the matmuls; each step of "
        "banks drained with the residual added and its squares summed; the row scaled by 1/rms and g once";
    v.params = {
        depth_param(d.pipeline_depth), unroll_param(d.unroll_factor),
        transpose_engine_param(d.transpose_engine),
        param("scale_engine",
              "y * 1/rms * g by 0: one vector instruction, 1: * 1/rms on the scalar engine, * g on GpSimd",
              {0, 1}, d.scale_engine, ParamRole::placement)};
    // w resident; g broadcast; xT per staged row tile, y per staged row tile and one more (finalize
    // runs a row tile late); two x chunks; the squares of a bank.
    v.constraints = {psum_constraint,
                     "(K * N / partitions + N + pipeline_depth * K + (pipeline_depth + 1) * N + 1024) * "
                     "dtype_bytes + 2048 + 64 * pipeline_depth <= sbuf_bytes_per_partition"};
    v.trace = [](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
      const MatmulAddRmsnormFusedParams params{int_param(p, "pipeline_depth"), int_param(p, "unroll_factor"),
                                               int_param(p, "transpose_engine"),
                                               int_param(p, "scale_engine")};
      dispatch_dtype(dtype,
                     [&]<Dtype D>() { matmul_add_rmsnorm_fused<D>(kernel, norm_matmul_shape(s), params); });
    };
    v.template_name = "autotune::kernels::matmul_add_rmsnorm_fused";
    v.params_struct = "autotune::kernels::MatmulAddRmsnormFusedParams";
    return v;
  }
  const bool residual = task == Task::add_rmsnorm_matmul;
  const NormMatmulFusedParams d;
  v.description = std::string("w resident in SBUF") + (residual ? " with g folded into its rows" : "") +
                  "; per row tile " + (residual ? "x + z, " : "") +
                  "the sum of squares in one activation, 1/rms in another, the rows transposed four to a "
                  "PSUM bank, staged ahead of the matmuls; the product drained scaled by 1/rms";
  v.params = {
      depth_param(d.pipeline_depth), unroll_param(d.unroll_factor),
      transpose_engine_param(d.transpose_engine),
      param("drain_engine", "output banks drained (scaled by 1/rms) by 0: vector, 1: scalar, 2: alternating",
            {0, 1, 2}, d.drain_engine, ParamRole::placement)};
  // w resident; two x (and z) rows; xT per staged row tile; the squares in fp32; two output rows.
  v.constraints = {psum_constraint,
                   residual ? "(K * N / partitions + (4 + pipeline_depth) * K + 2 * N) * dtype_bytes + "
                              "4 * K + 64 * pipeline_depth <= sbuf_bytes_per_partition"
                            : "(K * N / partitions + (2 + pipeline_depth) * K + 2 * N) * dtype_bytes + "
                              "4 * K + 64 * pipeline_depth <= sbuf_bytes_per_partition"};
  v.trace = [residual](Kernel& kernel, const Shape& s, Dtype dtype, const ParamValues& p) {
    const NormMatmulFusedParams params{int_param(p, "pipeline_depth"), int_param(p, "unroll_factor"),
                                       int_param(p, "transpose_engine"), int_param(p, "drain_engine")};
    dispatch_dtype(dtype, [&]<Dtype D>() {
      if (residual)
        add_rmsnorm_matmul_fused<D>(kernel, norm_matmul_shape(s), params);
      else
        rmsnorm_matmul_fused<D>(kernel, norm_matmul_shape(s), params);
    });
  };
  v.template_name =
      residual ? "autotune::kernels::add_rmsnorm_matmul_fused" : "autotune::kernels::rmsnorm_matmul_fused";
  v.params_struct = "autotune::kernels::NormMatmulFusedParams";
  return v;
}

// out = (rows . w) with rows [M, K] already normalised, in double.
std::vector<double> product(const Shape& s, const std::vector<double>& rows, const std::vector<double>& w) {
  const std::int64_t M = s.at("M"), N = s.at("N"), K = s.at("K");
  std::vector<double> out(static_cast<std::size_t>(M * N), 0.0);
  for (std::int64_t m = 0; m < M; ++m)
    for (std::int64_t k = 0; k < K; ++k) {
      const double a = rows[m * K + k];
      const double* b = &w[k * N];
      double* o = &out[m * N];
      for (std::int64_t n = 0; n < N; ++n) o[n] += a * b[n];
    }
  return out;
}

// Each row of `rows` [rows, cols] times 1 / sqrt(mean(row^2) + epsilon), and times gamma [cols] when given.
void normalise_rows(std::vector<double>& rows, std::int64_t cols, double epsilon,
                    const std::vector<double>* gamma) {
  for (std::size_t r = 0; r < rows.size(); r += std::size_t(cols)) {
    double sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) sum += rows[r + c] * rows[r + c];
    const double inv = 1.0 / std::sqrt(sum / double(cols) + epsilon);
    for (std::int64_t c = 0; c < cols; ++c) rows[r + c] *= inv * (gamma ? (*gamma)[c] : 1.0);
  }
}

FamilySpec norm_matmul_family(Task task) {
  FamilySpec f;
  const bool after = task == Task::matmul_add_rmsnorm;
  const bool residual = task != Task::rmsnorm_matmul;
  switch (task) {
    case Task::rmsnorm_matmul:
      f.name = "rmsnorm_matmul";
      f.description = "out = (x / sqrt(mean(x^2))) . w, x [M, K], w [K, N] (NKIBench's rmsnorm_matmul)";
      f.default_shape = {{"M", 4096}, {"N", 2048}, {"K", 1024}};
      break;
    case Task::add_rmsnorm_matmul:
      f.name = "add_rmsnorm_matmul";
      f.description =
          "a = x + z; out = (a / sqrt(mean(a^2) + 1e-5) * g) . w, x and z [M, K], g [1, K], w [K, N] "
          "(NKIBench's add_rmsnorm_matmul)";
      f.default_shape = {{"M", 4096}, {"N", 2048}, {"K", 1024}};
      break;
    case Task::matmul_add_rmsnorm:
      f.name = "matmul_add_rmsnorm";
      f.description =
          "y = x . w + z; out = y / sqrt(mean(y^2) + 1e-5) * g over each row, x [M, K], w [K, N], z [M, N], "
          "g [1, N] (NKIBench's matmul_add_rmsnorm)";
      f.default_shape = {{"M", 4096}, {"N", 2048}, {"K", 2048}};
      break;
  }
  f.shape_args = {"M", "N", "K"};
  f.shape_struct = "autotune::kernels::NormMatmulShape";
  f.dtypes = {Dtype::fp32, Dtype::bf16};
  auto dims = [](const char* rows, const char* cols) {
    return [rows, cols](const Shape& s) { return std::pair{s.at(rows), s.at(cols)}; };
  };
  auto one_row = [](const char* cols) {
    return [cols](const Shape& s) { return std::pair{std::int64_t{1}, s.at(cols)}; };
  };
  f.inputs = {{"x", dims("M", "K")}, {"w", dims("K", "N")}};
  if (residual) {
    f.inputs.push_back({"z", after ? dims("M", "N") : dims("M", "K")});
    f.inputs.push_back({"g", one_row(after ? "N" : "K"), 0.5, 1.5});
  }
  f.outputs = {{"out", dims("M", "N")}};
  f.variants = {naive_variant(task), fused_variant(task)};
  for (auto& v : f.variants) v.header = header;
  f.baseline_variant = "naive";
  f.default_variant = "fused";
  f.check_shape = [](const Shape& s) -> std::string {
    for (const char* arg : {"M", "N", "K"})
      if (s.at(arg) < 1 || s.at(arg) > 65536) return std::string(arg) + " must be in [1, 65536]";
    return "";
  };
  f.reference = [task](const Shape& s, const HostTensors& in) {
    const std::int64_t N = s.at("N"), K = s.at("K");
    if (task == Task::matmul_add_rmsnorm) {
      std::vector<double> y = product(s, in[0], in[1]);
      for (std::size_t i = 0; i < y.size(); ++i) y[i] += in[2][i];
      normalise_rows(y, N, kNormMatmulEpsilon, &in[3]);
      return HostTensors{std::move(y)};
    }
    std::vector<double> rows = in[0];
    if (task == Task::add_rmsnorm_matmul) {
      for (std::size_t i = 0; i < rows.size(); ++i) rows[i] += in[2][i];
      normalise_rows(rows, K, kNormMatmulEpsilon, &in[3]);
    } else {
      normalise_rows(rows, K, 0.0, nullptr);
    }
    return HostTensors{product(s, rows, in[1])};
  };
  // The products at the tensor engine's peak; the normalisation's element
  // work runs on the other engines and is left out so that the bound stays a bound.
  f.flops = [](const Shape& s) { return 2.0 * macs(s); };
  f.hbm_bytes = [task](const Shape& s, Dtype dtype) {
    const double M = s.at("M"), N = s.at("N"), K = s.at("K");
    double elements = M * K + K * N + M * N;
    if (task == Task::add_rmsnorm_matmul) elements += M * K + K;
    if (task == Task::matmul_add_rmsnorm) elements += M * N + N;
    return elements * sim::dtype_bytes(dtype);
  };
  f.tensor_engine_bound = true;
  f.tolerance = {{Dtype::fp32, 1e-4}, {Dtype::bf16, 3e-2}};
  return f;
}

const FamilyRegistration rmsnorm_matmul(norm_matmul_family(Task::rmsnorm_matmul));
const FamilyRegistration add_rmsnorm_matmul(norm_matmul_family(Task::add_rmsnorm_matmul));
const FamilyRegistration matmul_add_rmsnorm(norm_matmul_family(Task::matmul_add_rmsnorm));

}  // namespace
}  // namespace autotune::kernels
