// The attention_full family (non-causal attention, NKIBench's gqa_full): every
// variant matches the double non-causal reference over a spread of shapes
// (ragged, grouped or not), parameters, dtypes and targets; the mask is what
// separates the two families (each family's kernels fail the other's
// reference); every key tile is computed and the FLOPs and the roofline count
// the whole score matrix. No winner between variants is asserted.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "kernels/evaluate.hpp"
#include "kernels/families/attention.hpp"
#include "kernels/family.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"
#include "tests/unit/kernels/checked_run.hpp"

namespace {

using namespace autotune;
using namespace autotune::kernels;

const FamilySpec& full_family() { return family_registry().get("attention_full"); }
const FamilySpec& causal_family() { return family_registry().get("attention"); }

Shape heads(std::int64_t seq, std::int64_t q_heads, std::int64_t kv_heads, std::int64_t head_dim) {
  return {{"seq", seq}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"head_dim", head_dim}};
}

sim::Program trace(const FamilySpec& family, const std::string& variant, const Shape& shape, Dtype dtype,
                   const ParamValues& params, const sim::TargetSpec& target) {
  const VariantSpec& v = family.variant(variant);
  return trace_program(family, v, shape, dtype, resolve_params(v, params), target);
}

// `variant` of `traced`, run functionally, against `reference`'s reference.
testing::CheckedRun run_against(const FamilySpec& traced, const FamilySpec& reference,
                                const std::string& variant, const Shape& shape, const ParamValues& params,
                                Dtype dtype, const char* target_name) {
  const sim::TargetSpec target = sim::load_target(target_name);
  return testing::run_checked(reference, trace(traced, variant, shape, dtype, params, target), target, shape,
                              dtype);
}

struct Case {
  std::string variant;
  Shape shape;
  ParamValues params;
  Dtype dtype;
  const char* target;
};

std::string describe(const Case& c) {
  std::string text = c.variant + " " + shape_text(c.shape, full_family()) + " " +
                     std::string(sim::dtype_name(c.dtype)) + " on " + c.target;
  for (const auto& [name, value] : c.params) text += " " + name + "=" + std::to_string(value);
  return text;
}

// Several key tiles in every case; ragged last query and key tiles in most.
const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"naive", heads(520, 4, 2, 64), {}, Dtype::bf16, "trn1"},
      {"naive", heads(300, 2, 1, 32), {}, Dtype::fp32, "trn2"},
      {"flash",
       heads(700, 4, 1, 64),
       {{"kv_tile", 256}, {"q_tile", 64}, {"unroll_factor", 2}},
       Dtype::fp32,
       "trn1"},
      {"flash",
       heads(600, 2, 2, 128),
       {{"kv_tile", 512}, {"q_tile", 128}, {"pipeline_depth", 1}},
       Dtype::bf16,
       "trn2"},
      {"flash",
       heads(333, 4, 2, 64),
       {{"kv_tile", 128}, {"q_tile", 32}, {"pipeline_depth", 4}, {"unroll_factor", 8}},
       Dtype::fp16,
       "trn1"},
      {"flash_banked",
       heads(1400, 4, 2, 128),
       {{"kv_tile", 1024}, {"q_tiles", 2}, {"pipeline_depth", 3}, {"dma_transpose", 1}},
       Dtype::bf16,
       "trn2"},
      {"flash_banked",
       heads(700, 2, 2, 64),
       {{"kv_tile", 512}, {"q_tiles", 4}, {"stats_on_gpsimd", 1}, {"evacuate_on_scalar", 1}},
       Dtype::fp32,
       "trn1"},
      {"flash_banked",
       heads(1300, 2, 2, 32),
       {{"kv_tile", 2048}, {"q_tiles", 2}, {"pe_row_tiles", 4}, {"dma_transpose", 4}},
       Dtype::bf16,
       "trn2"},
      {"flash_banked", heads(77, 2, 1, 128), {{"kv_tile", 512}, {"pipeline_depth", 1}}, Dtype::fp32, "trn2"},
      {"cte", heads(1400, 4, 2, 128), {{"kv_tile", 1024}, {"q_grps_per_load", 4}}, Dtype::bf16, "trn2"},
      {"cte",
       heads(700, 2, 2, 64),
       {{"kv_tile", 512}, {"q_grps_per_load", 1}, {"pipeline_depth", 3}},
       Dtype::fp16,
       "trn1"},
      {"cte", heads(300, 2, 1, 32), {{"kv_tile", 512}, {"q_grps_per_load", 16}}, Dtype::fp32, "trn2"},
  };
  return all;
}

}  // namespace

TEST_CASE("attention_full: every variant matches the non-causal reference over shapes, parameters, dtypes") {
  for (const Case& c : cases()) {
    const testing::CheckedRun run =
        run_against(full_family(), full_family(), c.variant, c.shape, c.params, c.dtype, c.target);
    INFO(describe(c) << ": max rel " << run.verification.max_rel_error << ", cos "
                     << run.verification.cosine_similarity);
    REQUIRE_MESSAGE(run.sim.valid, run.sim.error);
    CHECK_MESSAGE(run.verification.passed, run.verification.error);
    CHECK(run.verification.cosine_similarity > 0.9999);
  }
}

TEST_CASE(
    "attention_full: the mask separates the families: each family's kernels fail the other's reference") {
  std::set<std::string> seen;  // the first case of each variant: three functional runs each
  for (const Case& c : cases()) {
    if (!seen.insert(c.variant).second) continue;
    INFO(describe(c));
    const testing::CheckedRun full_as_causal =
        run_against(full_family(), causal_family(), c.variant, c.shape, c.params, c.dtype, c.target);
    const testing::CheckedRun causal_as_full =
        run_against(causal_family(), full_family(), c.variant, c.shape, c.params, c.dtype, c.target);
    const testing::CheckedRun causal =
        run_against(causal_family(), causal_family(), c.variant, c.shape, c.params, c.dtype, c.target);
    REQUIRE(full_as_causal.sim.valid);
    REQUIRE(causal_as_full.sim.valid);
    CHECK_FALSE(full_as_causal.verification.passed);
    CHECK_FALSE(causal_as_full.verification.passed);
    // The causal kernels, traced through the same templates, still compute causal attention.
    REQUIRE_MESSAGE(causal.sim.valid, causal.sim.error);
    CHECK_MESSAGE(causal.verification.passed, causal.verification.error);
  }
}

TEST_CASE("attention_full: evaluation verifies every variant at its defaults on NKIBench's shape") {
  const FamilySpec& family = full_family();
  const Shape gqa_full = heads(4096, 16, 8, 128);
  for (const char* target_name : {"trn1", "trn2"}) {
    const sim::TargetSpec target = sim::load_target(target_name);
    for (const VariantSpec& v : family.variants) {
      const ParamValues params = resolve_params(v, ParamValues{});
      // cte at its defaults transposes fp32 by element-wise DMA on trn1: minutes of simulation for nothing.
      const Dtype dtype = v.name == "cte" && std::string(target_name) == "trn1" ? Dtype::bf16 : Dtype::fp32;
      EvaluateOptions options;
      options.seed = 11;
      const Evaluation e = evaluate(family, v.name, gqa_full, dtype, params, target, options);
      const Shape verification = v.verification_shape(gqa_full, params);
      INFO(target_name << " " << v.name << ": " << e.status << " " << e.error << "; verified at "
                       << shape_text(e.verification.shape, family) << ", max rel "
                       << e.verification.max_rel_error << ", cos " << e.verification.cosine_similarity);
      REQUIRE(e.status == Outcome::ok);
      CHECK(e.verification.ran);
      CHECK(e.verification.shape == verification);
      // Several key tiles at the verification shape: beyond one key tile (naive: one 512-column chunk).
      CHECK(verification.at("seq") > (params.count("kv_tile") ? params.at("kv_tile") : 512));
      CHECK(e.sim.total_time_s >= roofline_bound_s(family, gqa_full, dtype, target));
    }
  }
}

TEST_CASE(
    "attention_full: every key tile is computed, and FLOPs and the roofline count the whole score matrix") {
  const Shape shape = heads(2048, 4, 2, 128);
  const sim::TargetSpec trn2 = sim::load_target("trn2");
  const double seq = 2048, whole = 4.0 * 4 * 128 * seq * seq;  // Q K^T and P V over every (query, key) pair
  CHECK(full_family().flops(shape) == doctest::Approx(whole));
  CHECK(causal_family().flops(shape) == doctest::Approx(whole * (seq + 1) / (2 * seq)));
  CHECK(full_family().flops(heads(4, 1, 1, 128)) == doctest::Approx(4.0 * 128 * 16));
  // The bound is compute at this shape: twice the causal one, up to the diagonal.
  CHECK(roofline_bound_s(full_family(), shape, Dtype::bf16, trn2) ==
        doctest::Approx(roofline_bound_s(causal_family(), shape, Dtype::bf16, trn2) * 2 * seq / (seq + 1)));
  CHECK(full_family().hbm_bytes(shape, Dtype::bf16) == causal_family().hbm_bytes(shape, Dtype::bf16));
  for (const VariantSpec& v : full_family().variants) {
    const sim::Program full = trace(full_family(), v.name, shape, Dtype::bf16, {}, trn2);
    const sim::Program causal = trace(causal_family(), v.name, shape, Dtype::bf16, {}, trn2);
    const sim::SimResult r_full = sim::simulate(full, trn2, sim::SimOptions{false, false});
    const sim::SimResult r_causal = sim::simulate(causal, trn2, sim::SimOptions{false, false});
    REQUIRE_MESSAGE(r_full.valid, r_full.error);
    REQUIRE_MESSAGE(r_causal.valid, r_causal.error);
    const double flops_full = r_full.summary.value("matmul_flops", 0.0);
    const double flops_causal = r_causal.summary.value("matmul_flops", 0.0);
    INFO(v.name << ": matmul FLOPs " << flops_full << " non-causal, " << flops_causal << " causal, of "
                << whole);
    CHECK(flops_full >= whole);
    if (v.name != "naive") CHECK(flops_causal < 0.75 * flops_full);  // naive computes the masked half too
    CHECK(r_full.total_time_s >= roofline_bound_s(full_family(), shape, Dtype::bf16, trn2));
  }
}

TEST_CASE(
    "attention_full: the same shape arguments, dtypes and variants as attention, with its own shape struct") {
  const FamilySpec& full = full_family();
  const FamilySpec& causal = causal_family();
  CHECK(full.shape_args == causal.shape_args);
  CHECK(full.default_shape == causal.default_shape);
  CHECK(full.dtypes == causal.dtypes);
  REQUIRE(full.variants.size() == causal.variants.size());
  for (std::size_t i = 0; i < full.variants.size(); ++i)
    CHECK(full.variants[i].name == causal.variants[i].name);
  CHECK(full.shape_struct == "autotune::kernels::FullAttentionShape");
  const AttentionShape converted = FullAttentionShape{.seq = 5, .q_heads = 4, .kv_heads = 2, .head_dim = 64};
  CHECK_FALSE(converted.causal);
  CHECK(converted.seq == 5);
  CHECK(converted.group() == 2);
  CHECK(AttentionShape{}.causal);
  CHECK(full.check_shape(heads(1024, 3, 2, 128)).find("multiple of kv_heads") != std::string::npos);
}
