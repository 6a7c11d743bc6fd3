// The attention family: both variants match the double reference (causal,
// grouped-query, ragged tiles) over a spread of parameters; flash is not
// slower than naive at a moderate length; no variant beats the roofline.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/rng.hpp"
#include "kernels/families/attention.hpp"
#include "kernels/family.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace autotune::kernels {
FamilySpec attention_family();
}

namespace {

using namespace autotune;
using namespace autotune::kernels;

struct Outcome {
  sim::SimResult sim;
  double max_relative_error = 0, mse = 0, cosine = 0;
};

ParamValues with_defaults(const VariantSpec& variant, ParamValues params) {
  for (const auto& p : variant.params) params.emplace(p.name, p.default_value);
  return params;
}

sim::Program trace(const FamilySpec& family, const std::string& variant_name, const Shape& shape, Dtype dtype,
                   const ParamValues& params) {
  sim::Program program;
  Kernel kernel(program);
  family.variant(variant_name).trace(kernel, shape, dtype, params);
  return program;
}

// Traces, simulates functionally on fresh random inputs and compares the
// output with the family's double reference.
Outcome run_checked(const std::string& variant_name, const Shape& shape, ParamValues params,
                    Dtype dtype = Dtype::bf16, std::uint64_t seed = 1) {
  const FamilySpec family = attention_family();
  params = with_defaults(family.variant(variant_name), params);
  const sim::Program program = trace(family, variant_name, shape, dtype, params);
  Rng rng(seed);
  sim::HostIo io;
  HostTensors host_inputs;
  for (const TensorSpec& spec : family.inputs) {
    const auto [rows, cols] = spec.dims(shape);
    std::vector<float> values(static_cast<std::size_t>(rows * cols));
    std::vector<double> as_double(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
      values[i] = sim::round_to_dtype(static_cast<float>(rng.uniform(spec.low, spec.high)), dtype);
      as_double[i] = values[i];
    }
    io.inputs.push_back(std::move(values));
    host_inputs.push_back(std::move(as_double));
  }
  Outcome out;
  out.sim = sim::simulate(program, sim::load_target("trn1"), sim::SimOptions{true, false}, &io);
  if (!out.sim.valid) return out;
  const HostTensors reference = family.reference(shape, host_inputs);
  const std::vector<double>& r = reference.at(0);
  const std::vector<float>& a = io.outputs.at(0);
  REQUIRE(a.size() == r.size());
  double sum_sq_ref = 0, sum_sq_out = 0, dot = 0, sum_sq_err = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    sum_sq_ref += r[i] * r[i];
    sum_sq_out += double(a[i]) * a[i];
    dot += r[i] * a[i];
    sum_sq_err += (a[i] - r[i]) * (a[i] - r[i]);
  }
  const double rms = std::sqrt(sum_sq_ref / r.size());
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double err = std::abs(a[i] - r[i]) / std::max(std::abs(r[i]), rms);
    out.max_relative_error = std::isnan(err) ? INFINITY : std::max(out.max_relative_error, err);
  }
  out.mse = sum_sq_err / r.size();
  out.cosine = dot / std::sqrt(sum_sq_ref * sum_sq_out);
  return out;
}

Shape qwen_like(std::int64_t seq, std::int64_t q_heads = 4, std::int64_t kv_heads = 2, std::int64_t head_dim = 128) {
  return {{"seq", seq}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"head_dim", head_dim}};
}

void check_matches(const Outcome& o, double tolerance) {
  REQUIRE_MESSAGE(o.sim.valid, o.sim.error);
  CHECK(o.max_relative_error < tolerance);
  CHECK(o.cosine > 0.999);
  CHECK(o.mse < 1e-4);
}

}  // namespace

TEST_CASE("attention: naive matches the reference on a ragged causal GQA shape") {
  const FamilySpec family = attention_family();
  const Shape shape = family.variant("naive").verification_shape(family.default_shape, {});
  const Outcome o = run_checked("naive", shape, {});
  INFO("max rel " << o.max_relative_error << " mse " << o.mse << " cos " << o.cosine);
  check_matches(o, attention_family().tolerance.at(Dtype::bf16));
}

TEST_CASE("attention: flash matches the reference over a spread of parameters") {
  const FamilySpec family = attention_family();
  const double tolerance = family.tolerance.at(Dtype::bf16);
  struct Case {
    int kv_tile, q_tile, pipeline_depth, unroll_factor;
  };
  for (const Case c : {Case{128, 128, 1, 1}, Case{256, 64, 2, 2}, Case{512, 128, 3, 1}, Case{512, 32, 2, 4},
                       Case{128, 64, 4, 8}, Case{256, 128, 2, 8}}) {
    const ParamValues params{{"kv_tile", c.kv_tile},
                             {"q_tile", c.q_tile},
                             {"pipeline_depth", c.pipeline_depth},
                             {"unroll_factor", c.unroll_factor}};
    const Shape shape = family.variant("flash").verification_shape(family.default_shape, params);
    const Outcome o = run_checked("flash", shape, params);
    INFO("kv_tile " << c.kv_tile << " q_tile " << c.q_tile << " depth " << c.pipeline_depth << " unroll "
                    << c.unroll_factor << " seq " << shape.at("seq") << ": max rel " << o.max_relative_error
                    << " mse " << o.mse << " cos " << o.cosine);
    check_matches(o, tolerance);
  }
}

TEST_CASE("attention: flash handles a sequence shorter than one tile, one head pair, and fp32") {
  const ParamValues params{{"kv_tile", 512}, {"q_tile", 128}, {"pipeline_depth", 2}, {"unroll_factor", 2}};
  check_matches(run_checked("flash", qwen_like(77, 2, 1), params), 3e-2);
  const Outcome fp32 = run_checked("flash", qwen_like(300, 2, 1, 32), params, Dtype::fp32);
  INFO("fp32 max rel " << fp32.max_relative_error);
  check_matches(fp32, attention_family().tolerance.at(Dtype::fp32));
}

TEST_CASE("attention: the verification shapes are small and exercise several key tiles") {
  const FamilySpec family = attention_family();
  for (const VariantSpec& v : family.variants) {
    const ParamValues params = with_defaults(v, {});
    const Shape shape = v.verification_shape(family.default_shape, params);
    CHECK(shape.at("seq") <= 600);
    CHECK(shape.at("head_dim") <= 64);
    CHECK(shape.at("q_heads") <= 4);
    CHECK(shape.at("q_heads") / shape.at("kv_heads") == 2);
    if (v.name == "flash") CHECK(shape.at("seq") > params.at("kv_tile"));
  }
}

TEST_CASE("attention: flash is not slower than naive at a moderate length, and neither beats the roofline") {
  const FamilySpec family = attention_family();
  const Shape shape = qwen_like(2048, 2, 1);
  const sim::TargetSpec target = sim::load_target("trn1");
  const double bound = std::max(family.flops(shape) / target.peak_flops(Dtype::bf16),
                                family.hbm_bytes(shape, Dtype::bf16) / target.hbm_bytes_per_s);
  double time_s[2] = {};
  int i = 0;
  for (const std::string variant : {"naive", "flash"}) {
    const sim::Program program = trace(family, variant, shape, Dtype::bf16, with_defaults(family.variant(variant), {}));
    const sim::SimResult r = sim::simulate(program, target, sim::SimOptions{false, false});
    REQUIRE_MESSAGE(r.valid, r.error);
    CHECK(r.total_time_s >= bound);
    time_s[i++] = r.total_time_s;
  }
  CHECK(time_s[1] <= time_s[0]);
}

TEST_CASE("attention: shape checks name what is wrong") {
  const FamilySpec family = attention_family();
  CHECK(family.check_shape(qwen_like(1024)).empty());
  CHECK(family.check_shape(qwen_like(1024, 3, 2)).find("multiple of kv_heads") != std::string::npos);
  Shape wide = qwen_like(64);
  wide["head_dim"] = 256;
  CHECK(family.check_shape(wide).find("head_dim") != std::string::npos);
  CHECK(family.flops(qwen_like(4, 1, 1)) == doctest::Approx(4.0 * 128 * 10));
}
