// The attention family's `cte` variant (the NKI library's attention_cte
// structure): it matches the double reference on small and ragged shapes,
// grouped or not, head_dim 64 and 128, every dtype, on trn1 and trn2, through
// its single-section and its sectioned (flash across K/V sections) paths; it
// is valid at the Qwen3-0.6B shapes of the published hardware timings; it
// skips the fully masked tiles of the causal mask. No winner between variants
// is asserted.
#include "kernels/families/attention_cte.hpp"

#include <doctest/doctest.h>

#include <string>

#include "core/rng.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"
#include "tests/unit/kernels/checked_run.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

namespace {

using namespace autotune;
using namespace autotune::kernels;

const FamilySpec& family() { return family_registry().get("attention"); }

Shape heads_shape(std::int64_t seq, std::int64_t q_heads, std::int64_t kv_heads, std::int64_t head_dim) {
  return {{"seq", seq}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"head_dim", head_dim}};
}

// Qwen3-0.6B: 16 query heads, 8 kv heads, head_dim 128.
Shape qwen3(std::int64_t seq) { return heads_shape(seq, 16, 8, 128); }

AttentionShape attention_shape(const Shape& s) {
  return {.seq = static_cast<int>(s.at("seq")),
          .q_heads = static_cast<int>(s.at("q_heads")),
          .kv_heads = static_cast<int>(s.at("kv_heads")),
          .head_dim = static_cast<int>(s.at("head_dim"))};
}

ParamValues cte_params(int kv_tile, int q_grps_per_load, int pipeline_depth) {
  return {{"kv_tile", kv_tile}, {"q_grps_per_load", q_grps_per_load}, {"pipeline_depth", pipeline_depth}};
}

using testing::CheckedRun;

CheckedRun run_checked(const sim::Program& program, const sim::TargetSpec& target, const Shape& shape,
                       Dtype dtype, std::uint64_t seed = 1) {
  return testing::run_checked(family(), program, target, shape, dtype, seed);
}

// The registered variant with these parameters.
CheckedRun run_variant(const char* target_name, const Shape& shape, const ParamValues& params, Dtype dtype) {
  const sim::TargetSpec target = sim::load_target(target_name);
  const sim::Program program = trace_program(family(), family().variant("cte"), shape, dtype, params, target);
  return run_checked(program, target, shape, dtype);
}

// The template itself, for the library constants the variant does not expose
// (the K/V section threshold and length), at a size a functional simulation
// can afford.
CheckedRun run_template(const char* target_name, const Shape& shape, const CteAttentionParams& params) {
  const sim::TargetSpec target = sim::load_target(target_name);
  sim::Program program;
  {
    Kernel kernel(program, kernel_limits(target));
    attention_cte<Dtype::bf16>(kernel, attention_shape(shape), params);
  }
  return run_checked(program, target, shape, Dtype::bf16);
}

void check_matches(const CheckedRun& c) {
  REQUIRE_MESSAGE(c.sim.valid, c.sim.error);
  INFO("max rel " << c.verification.max_rel_error << " mse " << c.verification.mse << " cos "
                  << c.verification.cosine_similarity);
  CHECK_MESSAGE(c.verification.passed, c.verification.error);
  CHECK(c.verification.cosine_similarity > 0.9999);
}

}  // namespace

TEST_CASE("attention cte: matches the reference on small and ragged shapes, every dtype, trn1 and trn2") {
  struct Case {
    Shape shape;
    ParamValues params;
    Dtype dtype;
    const char* target;
  };
  const std::vector<Case> cases = {
      // Qwen3 head_dim 128, grouped queries; three 512-key tiles (the last ragged) in two large tiles,
      // 11 query groups (the last ragged), three Q loads.
      {heads_shape(1400, 4, 2, 128), cte_params(1024, 4, 2), Dtype::bf16, "trn2"},
      {heads_shape(1400, 4, 2, 128), cte_params(1024, 4, 2), Dtype::bf16, "trn1"},
      // head_dim 64 without grouped queries, one group per Q load, deeper buffers.
      {heads_shape(700, 2, 2, 64), cte_params(512, 1, 3), Dtype::bf16, "trn1"},
      {heads_shape(700, 2, 2, 64), cte_params(512, 16, 4), Dtype::bf16, "trn2"},
      // One query group (no software pipeline) and two groups (the pipeline's prologue and epilogue only).
      {heads_shape(77, 2, 1, 128), cte_params(2048, 8, 2), Dtype::bf16, "trn2"},
      {heads_shape(200, 2, 1, 64), cte_params(2048, 8, 2), Dtype::bf16, "trn1"},
      // fp16, and fp32 (no DMA transposer for 4-byte data: element-wise transposes, slow but exact).
      {heads_shape(600, 4, 2, 64), cte_params(512, 2, 2), Dtype::fp16, "trn2"},
      {heads_shape(300, 2, 1, 32), cte_params(512, 4, 2), Dtype::fp32, "trn2"},
  };
  for (const Case& c : cases) {
    INFO("seq " << c.shape.at("seq") << " heads " << c.shape.at("q_heads") << "/" << c.shape.at("kv_heads")
                << " d " << c.shape.at("head_dim") << " " << sim::dtype_name(c.dtype) << " on " << c.target
                << " kv_tile " << c.params.at("kv_tile") << " q_grps_per_load "
                << c.params.at("q_grps_per_load") << " depth " << c.params.at("pipeline_depth"));
    check_matches(run_variant(c.target, c.shape, c.params, c.dtype));
  }
}

TEST_CASE("attention cte: the sectioned path (flash attention across K/V sections) matches the reference") {
  // The library sections K/V above 10K keys into 8K sections; the same code with smaller sections: three
  // sections (the last ragged), and two where the second holds only the ragged rest.
  CteAttentionParams params;
  params.kv_tile = 512;
  params.q_grps_per_load = 2;
  params.section_threshold = 1280;
  params.section_len = 1024;
  check_matches(run_template("trn2", heads_shape(2300, 4, 2, 64), params));
  check_matches(run_template("trn1", heads_shape(1300, 2, 1, 128), params));
  // At the threshold itself the kernel keeps one section.
  check_matches(run_template("trn2", heads_shape(1280, 2, 1, 64), params));
}

TEST_CASE("attention cte: evaluation verifies its default configuration on a ragged verification shape") {
  const VariantSpec& cte = family().variant("cte");
  const ParamValues params = resolve_params(cte, ParamValues{});
  const Shape verification = cte.verification_shape(qwen3(4096), params);
  // Two large tiles, the second ragged, and more than two Q loads of 8 groups.
  CHECK(verification.at("seq") == 2048 + 200);
  CHECK(verification.at("q_heads") / verification.at("kv_heads") == 2);
  EvaluateOptions options;
  options.seed = 5;
  const Evaluation e =
      evaluate(family(), "cte", qwen3(4096), Dtype::bf16, params, sim::load_target("trn2"), options);
  INFO(e.status << " " << e.error << "; verified at " << shape_text(e.verification.shape, family())
                << ", max rel " << e.verification.max_rel_error << ", cos "
                << e.verification.cosine_similarity);
  REQUIRE(e.status == Outcome::ok);
  CHECK(e.verification.ran);
  CHECK(e.verification.shape == verification);
}

TEST_CASE("attention cte: valid at the Qwen3-0.6B shapes of the hardware timings (trn2, bf16, 512-4096)") {
  const sim::TargetSpec trn2 = sim::load_target("trn2");
  const VariantSpec& cte = family().variant("cte");
  const ParamValues params = resolve_params(cte, ParamValues{});
  for (const std::int64_t seq : {512, 1024, 2048, 3072, 4096}) {
    const Shape shape = qwen3(seq);
    const sim::Program program = trace_program(family(), cte, shape, Dtype::bf16, params, trn2);
    const sim::SimResult r = sim::simulate(program, trn2, sim::SimOptions{false, false});
    INFO("seq " << seq << ": " << r.error);
    REQUIRE(r.valid);
    CHECK(r.total_time_s >= roofline_bound_s(family(), shape, Dtype::bf16, trn2));
    // The library loads K and V once per query head: Q, K, V read and O written once per query head.
    const double io_bytes = 4.0 * 16 * static_cast<double>(seq) * 128 * sim::dtype_bytes(Dtype::bf16);
    CHECK(r.summary.value("hbm_read_bytes", 0.0) == doctest::Approx(0.75 * io_bytes));
    // P^T is made by transposing DMAs only: the tensor engine runs matmuls alone.
    CHECK(r.summary.value("dma_transposed_transfer_count", 0) > 0);
  }
}

TEST_CASE("attention cte: fully masked tiles are skipped (matmul FLOPs under 60% of the unmasked count)") {
  const sim::TargetSpec trn2 = sim::load_target("trn2");
  const VariantSpec& cte = family().variant("cte");
  const Shape shape = qwen3(4096);
  const sim::Program program =
      trace_program(family(), cte, shape, Dtype::bf16, resolve_params(cte, ParamValues{}), trn2);
  const sim::SimResult r = sim::simulate(program, trn2, sim::SimOptions{false, false});
  REQUIRE_MESSAGE(r.valid, r.error);
  const double seq = 4096, unmasked = 2.0 * 2.0 * 16 * seq * seq * 128;  // Q K^T and P V, every pair
  const double flops = r.summary.value("matmul_flops", 0.0);
  INFO("matmul FLOPs " << flops << " of " << unmasked << " unmasked");
  CHECK(flops < 0.6 * unmasked);
  // ... and no pair below the diagonal is dropped: at least the causal count.
  CHECK(flops >= family().flops(shape));
}
