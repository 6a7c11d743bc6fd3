// The attention family: both variants match the double reference (causal,
// grouped-query, ragged tiles) over a spread of parameters; flash is not
// slower than naive at a moderate length; no variant beats the roofline.
#include "kernels/families/attention.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/rng.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace {

using namespace autotune;
using namespace autotune::kernels;

const FamilySpec& attention_family() { return family_registry().get("attention"); }

ParamValues with_defaults(const VariantSpec& variant, ParamValues params) {
  for (const auto& p : variant.params) params.emplace(p.name, p.default_value);
  return params;
}

struct Outcome {
  sim::SimResult sim;
  Verification verification;
};

// Simulates `variant` functionally on exactly `shape` (fresh random inputs
// rounded to the dtype) and compares its output with the double reference.
Outcome run_checked(const std::string& variant_name, const Shape& shape, ParamValues params,
                    Dtype dtype = Dtype::bf16, std::uint64_t seed = 1) {
  const FamilySpec& family = attention_family();
  const sim::TargetSpec target = sim::load_target("trn1");
  const VariantSpec& variant = family.variant(variant_name);
  params = with_defaults(variant, params);
  const sim::Program program = trace_program(family, variant, shape, dtype, params, target);
  Rng rng(seed);
  sim::HostIo io;
  HostTensors host_inputs;
  for (const TensorSpec& spec : family.inputs) {
    const auto [rows, cols] = spec.dims(shape);
    std::vector<float> values(static_cast<std::size_t>(rows * cols));
    for (float& x : values)
      x = sim::round_to_dtype(static_cast<float>(rng.uniform(spec.low, spec.high)), dtype);
    host_inputs.emplace_back(values.begin(), values.end());
    io.inputs.push_back(std::move(values));
  }
  Outcome out;
  out.sim = sim::simulate(program, target, sim::SimOptions{true, false}, &io);
  if (out.sim.valid)
    out.verification =
        compare_outputs(family.reference(shape, host_inputs), io.outputs, family.tolerance.at(dtype));
  return out;
}

Shape qwen_like(std::int64_t seq, std::int64_t q_heads = 4, std::int64_t kv_heads = 2,
                std::int64_t head_dim = 128) {
  return {{"seq", seq}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"head_dim", head_dim}};
}

void check_matches(const Outcome& o) {
  REQUIRE_MESSAGE(o.sim.valid, o.sim.error);
  INFO("max rel " << o.verification.max_rel_error << " mse " << o.verification.mse << " cos "
                  << o.verification.cosine_similarity);
  CHECK_MESSAGE(o.verification.passed, o.verification.error);
  CHECK(o.verification.cosine_similarity > 0.999);
  CHECK(o.verification.mse < 1e-4);
}

}  // namespace

TEST_CASE(
    "attention: both variants pass evaluation (ragged causal GQA verification) over a spread of parameters") {
  const FamilySpec& family = attention_family();
  const sim::TargetSpec target = sim::load_target("trn1");
  const Shape shape = qwen_like(1024);
  struct Case {
    std::string variant;
    ParamValues params;
  };
  const std::vector<Case> cases = {
      {"naive", {}},
      {"flash", {{"kv_tile", 128}, {"q_tile", 128}, {"pipeline_depth", 1}, {"unroll_factor", 1}}},
      {"flash", {{"kv_tile", 256}, {"q_tile", 64}, {"pipeline_depth", 2}, {"unroll_factor", 2}}},
      {"flash", {{"kv_tile", 512}, {"q_tile", 128}, {"pipeline_depth", 3}, {"unroll_factor", 1}}},
      {"flash", {{"kv_tile", 512}, {"q_tile", 32}, {"pipeline_depth", 2}, {"unroll_factor", 4}}},
      {"flash", {{"kv_tile", 128}, {"q_tile", 64}, {"pipeline_depth", 4}, {"unroll_factor", 8}}},
  };
  for (const Case& c : cases) {
    const ParamValues params = with_defaults(family.variant(c.variant), c.params);
    EvaluateOptions options;
    options.seed = 7;
    const Evaluation e = evaluate(family, c.variant, shape, Dtype::bf16, params, target, options);
    std::string text = c.variant;
    for (const auto& [name, value] : params) text += " " + name + "=" + std::to_string(value);
    INFO(text << ": " << e.status << " " << e.error << "; verified at "
              << shape_text(e.verification.shape, family) << ", max rel " << e.verification.max_rel_error
              << ", mse " << e.verification.mse << ", cos " << e.verification.cosine_similarity);
    CHECK(e.status == "ok");
    CHECK(e.verification.ran);
    CHECK(e.verification.cosine_similarity > 0.999);
    CHECK(e.verification.mse < 1e-4);
  }
}

TEST_CASE("attention: flash matches the reference at head_dim 128, below one tile, and in fp32") {
  const ParamValues params{{"kv_tile", 512}, {"q_tile", 128}, {"pipeline_depth", 2}, {"unroll_factor", 2}};
  check_matches(run_checked("flash", qwen_like(77, 2, 1), params));
  check_matches(run_checked("flash", qwen_like(300, 2, 1, 32), params, Dtype::fp32));
  check_matches(run_checked("naive", qwen_like(150, 2, 1, 128), {}));
}

TEST_CASE("attention: the verification shapes are small and exercise several key tiles") {
  const FamilySpec& family = attention_family();
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
  const FamilySpec& family = attention_family();
  const Shape shape = qwen_like(2048, 2, 1);
  const sim::TargetSpec target = sim::load_target("trn1");
  const double bound = roofline_bound_s(family, shape, Dtype::bf16, target);
  CHECK(bound > 0);
  double time_s[2] = {};
  int i = 0;
  for (const std::string variant : {"naive", "flash"}) {
    const VariantSpec& v = family.variant(variant);
    const sim::Program program = trace_program(family, v, shape, Dtype::bf16, with_defaults(v, {}), target);
    const sim::SimResult r = sim::simulate(program, target, sim::SimOptions{false, false});
    REQUIRE_MESSAGE(r.valid, r.error);
    CHECK(r.total_time_s >= bound);
    time_s[i++] = r.total_time_s;
  }
  CHECK(time_s[1] <= time_s[0]);
}

TEST_CASE("attention: shape checks name what is wrong") {
  const FamilySpec& family = attention_family();
  CHECK(family.check_shape(qwen_like(1024)).empty());
  CHECK(family.check_shape(qwen_like(1024, 3, 2)).find("multiple of kv_heads") != std::string::npos);
  Shape wide = qwen_like(64);
  wide["head_dim"] = 256;
  CHECK(family.check_shape(wide).find("head_dim") != std::string::npos);
  CHECK(family.flops(qwen_like(4, 1, 1)) == doctest::Approx(4.0 * 128 * 10));
}
