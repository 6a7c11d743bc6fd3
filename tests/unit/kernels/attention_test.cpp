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
#include "tests/unit/kernels/checked_run.hpp"

namespace {

using namespace autotune;
using namespace autotune::kernels;

const FamilySpec& attention_family() { return family_registry().get("attention"); }

ParamValues with_defaults(const VariantSpec& variant, ParamValues params) {
  for (const auto& p : variant.params) params.emplace(p.name, p.default_value);
  return params;
}

using testing::CheckedRun;

// Simulates `variant` functionally on exactly `shape` (fresh random inputs
// rounded to the dtype) and compares its output with the double reference.
CheckedRun run_checked_on(const sim::TargetSpec& target, const std::string& variant_name, const Shape& shape,
                          ParamValues params, Dtype dtype = Dtype::bf16, std::uint64_t seed = 1) {
  const FamilySpec& family = attention_family();
  const VariantSpec& variant = family.variant(variant_name);
  params = with_defaults(variant, params);
  const sim::Program program = trace_program(family, variant, shape, dtype, params, target);
  return testing::run_checked(family, program, target, shape, dtype, seed);
}

CheckedRun run_checked(const std::string& variant_name, const Shape& shape, ParamValues params,
                       Dtype dtype = Dtype::bf16, std::uint64_t seed = 1) {
  return run_checked_on(sim::load_target("trn1"), variant_name, shape, std::move(params), dtype, seed);
}

Shape qwen_like(std::int64_t seq, std::int64_t q_heads = 4, std::int64_t kv_heads = 2,
                std::int64_t head_dim = 128) {
  return {{"seq", seq}, {"q_heads", q_heads}, {"kv_heads", kv_heads}, {"head_dim", head_dim}};
}

AttentionShape attention_shape(const Shape& s) {
  return {.seq = static_cast<int>(s.at("seq")),
          .q_heads = static_cast<int>(s.at("q_heads")),
          .kv_heads = static_cast<int>(s.at("kv_heads")),
          .head_dim = static_cast<int>(s.at("head_dim"))};
}

double hbm_bytes_moved(const sim::SimResult& r) {
  return r.summary.value("hbm_read_bytes", 0.0) + r.summary.value("hbm_write_bytes", 0.0);
}

std::int64_t sbuf_peak(const sim::SimResult& r) {
  return r.summary.value("sbuf_peak_bytes_per_partition", std::int64_t{0});
}

// Bytes of every head's S (fp32) and P (`dtype`) written to HBM once and read back once.
double score_round_trip_bytes(const Shape& s, Dtype dtype) {
  const double seq = static_cast<double>(s.at("seq"));
  return 2.0 * static_cast<double>(s.at("q_heads")) * seq * seq *
         (sim::dtype_bytes(Dtype::fp32) + sim::dtype_bytes(dtype));
}

// What naive moves besides the scores: Q, K and V read once per query head, O written once.
double naive_io_bytes(const Shape& s, Dtype dtype) {
  return 4.0 * static_cast<double>(s.at("q_heads") * s.at("seq") * s.at("head_dim")) *
         sim::dtype_bytes(dtype);
}

void check_matches(const CheckedRun& o) {
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
    CHECK(e.status == Outcome::ok);
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
    // Two key tiles where the variant tiles keys, and no more than that.
    const std::int64_t kv_tile = params.count("kv_tile") ? params.at("kv_tile") : 512;
    CHECK(shape.at("seq") <= kv_tile + 200);
    CHECK(shape.at("head_dim") <= 64);
    CHECK(shape.at("q_heads") <= 4);
    CHECK(shape.at("q_heads") / shape.at("kv_heads") == 2);
    if (params.count("kv_tile")) CHECK(shape.at("seq") > kv_tile);
  }
}

TEST_CASE("attention: flash_banked matches the reference across shapes, dtypes and structures") {
  struct Case {
    Shape shape;
    ParamValues params;
    Dtype dtype;
    const char* target;
  };
  auto banked = [](int kv_tile, int q_tiles, int depth, int dma_transpose, int stats_on_gpsimd,
                   int pe_row_tiles = 1) {
    return ParamValues{{"kv_tile", kv_tile},
                       {"q_tiles", q_tiles},
                       {"pipeline_depth", depth},
                       {"dma_transpose", dma_transpose},
                       {"stats_on_gpsimd", stats_on_gpsimd},
                       {"pe_row_tiles", pe_row_tiles}};
  };
  const std::vector<Case> cases = {
      // Qwen3 head_dim 128, grouped queries, transposes on DMA (trn2), three banks with a ragged one.
      {qwen_like(1400, 4, 2, 128), banked(1024, 2, 3, 1, 0), Dtype::bf16, "trn2"},
      // head_dim 64 without grouped queries (as many kv heads as query heads), PE transposes.
      {qwen_like(700, 2, 2, 64), banked(512, 4, 2, 0, 1), Dtype::bf16, "trn1"},
      // Below one key tile and one query tile, serial pipeline.
      {qwen_like(77, 2, 1, 128), banked(2048, 1, 1, 1, 1), Dtype::bf16, "trn2"},
      // fp32 (no transposer: element-wise DMA transposes) and fp16.
      {qwen_like(300, 2, 1, 32), banked(512, 2, 4, 1, 0), Dtype::fp32, "trn2"},
      {qwen_like(600, 2, 1, 64), banked(512, 1, 2, 0, 0), Dtype::fp16, "trn1"},
      // Score matmuls on PE row tiles: two of 64 rows (a ragged bank, a diagonal mid-bank), four of 32 on
      // trn2.
      {qwen_like(1400, 2, 2, 64), banked(2048, 2, 2, 1, 0, 2), Dtype::bf16, "trn2"},
      {qwen_like(700, 2, 1, 64), banked(1024, 4, 3, 0, 0, 2), Dtype::fp16, "trn1"},
      {qwen_like(1300, 2, 2, 32), banked(2048, 2, 2, 0, 1, 4), Dtype::bf16, "trn2"},
  };
  for (const Case& c : cases) {
    INFO("seq " << c.shape.at("seq") << " heads " << c.shape.at("q_heads") << "/" << c.shape.at("kv_heads")
                << " d " << c.shape.at("head_dim") << " on " << c.target);
    check_matches(run_checked_on(sim::load_target(c.target), "flash_banked", c.shape, c.params, c.dtype));
  }
}

TEST_CASE("attention: naive verifies on the full shape's path, scores on chip or spilled, on each target") {
  const FamilySpec& family = attention_family();
  const VariantSpec& naive = family.variant("naive");
  REQUIRE(naive.verification_limits);
  for (const char* target_name : {"trn1", "trn2"}) {
    const KernelLimits target = kernel_limits(sim::load_target(target_name));
    for (const Dtype dtype : family.dtypes) {
      for (const std::int64_t seq : {100, 520, 1024, 1800, 2048, 3000, 16384}) {
        Shape full = family.default_shape;
        full["seq"] = seq;
        const Shape shape = naive.verification_shape(full, {});
        const KernelLimits limits = naive.verification_limits(full, shape, {}, dtype, target);
        INFO(target_name << " " << sim::dtype_name(dtype) << " " << shape_text(full, family)
                         << " verifies at " << shape_text(shape, family) << " with "
                         << limits.sbuf_bytes_per_partition << " bytes of SBUF per partition");
        CHECK(naive_keeps_scores_on_chip(attention_shape(shape), dtype, limits) ==
              naive_keeps_scores_on_chip(attention_shape(full), dtype, target));
        CHECK(limits.sbuf_bytes_per_partition <= target.sbuf_bytes_per_partition);
        CHECK(limits.partitions == target.partitions);
        CHECK(limits.psum_bank_bytes == target.psum_bank_bytes);
      }
    }
  }
}

TEST_CASE("attention: naive verifies with its scores in SBUF, and spilled where SBUF is one byte short") {
  const sim::TargetSpec trn1 = sim::load_target("trn1");
  // Two 512-column score chunks and two PSUM banks of transposed blocks, the
  // second of each ragged, and a ragged last row tile.
  const Shape shape = qwen_like(520, 2, 1, 64);
  const std::int64_t need = naive_on_chip_sbuf_bytes(attention_shape(shape), Dtype::bf16);
  REQUIRE(need <= trn1.sbuf_bytes_per_partition);

  const CheckedRun on_chip = run_checked_on(trn1, "naive", shape, {});
  check_matches(on_chip);
  // naive_on_chip_sbuf_bytes counts exactly what the on-chip path allocates.
  CHECK(sbuf_peak(on_chip.sim) == need);
  CHECK(hbm_bytes_moved(on_chip.sim) == doctest::Approx(naive_io_bytes(shape, Dtype::bf16)));

  sim::TargetSpec exact = trn1;
  exact.sbuf_bytes_per_partition = need;
  const CheckedRun fits = run_checked_on(exact, "naive", shape, {});
  check_matches(fits);
  CHECK(hbm_bytes_moved(fits.sim) == doctest::Approx(naive_io_bytes(shape, Dtype::bf16)));

  sim::TargetSpec short_by_one = trn1;
  short_by_one.sbuf_bytes_per_partition = need - 1;
  const CheckedRun spilled = run_checked_on(short_by_one, "naive", shape, {});
  check_matches(spilled);
  CHECK(sbuf_peak(spilled.sim) < need);
  CHECK(hbm_bytes_moved(spilled.sim) ==
        doctest::Approx(naive_io_bytes(shape, Dtype::bf16) + score_round_trip_bytes(shape, Dtype::bf16)));

  // fp32 scores beside fp32 probabilities, both paths.
  const Shape fp32_shape = qwen_like(200, 2, 1, 32);
  check_matches(run_checked_on(trn1, "naive", fp32_shape, {}, Dtype::fp32));
  sim::TargetSpec fp32_short = trn1;
  fp32_short.sbuf_bytes_per_partition =
      naive_on_chip_sbuf_bytes(attention_shape(fp32_shape), Dtype::fp32) - 1;
  check_matches(run_checked_on(fp32_short, "naive", fp32_shape, {}, Dtype::fp32));
}

TEST_CASE("attention: on trn1 naive moves score bytes through HBM only once its SBUF cannot hold them") {
  const FamilySpec& family = attention_family();
  const sim::TargetSpec trn1 = sim::load_target("trn1");
  const KernelLimits limits = kernel_limits(trn1);
  // The shortest Qwen3-shaped sequence whose per-head S and P no longer fit.
  std::int64_t spill_seq = 1;
  while (naive_keeps_scores_on_chip(attention_shape(qwen_like(spill_seq, 2, 1)), Dtype::bf16, limits))
    ++spill_seq;
  INFO("naive spills from seq " << spill_seq);
  CHECK(spill_seq > 1024);
  CHECK(spill_seq < 4096);
  const VariantSpec& naive = family.variant("naive");
  for (const std::int64_t seq : {spill_seq - 1, spill_seq}) {
    const Shape shape = qwen_like(seq, 2, 1);
    const sim::Program program = trace_program(family, naive, shape, Dtype::bf16, {}, trn1);
    const sim::SimResult r = sim::simulate(program, trn1, sim::SimOptions{false, false});
    REQUIRE_MESSAGE(r.valid, r.error);
    CHECK(sbuf_peak(r) <= trn1.sbuf_bytes_per_partition);
    const double scores = seq < spill_seq ? 0.0 : score_round_trip_bytes(shape, Dtype::bf16);
    CHECK(hbm_bytes_moved(r) == doctest::Approx(naive_io_bytes(shape, Dtype::bf16) + scores));
  }
}

TEST_CASE("attention: naive at 16K still spills its scores to HBM, and its evaluation verifies that path") {
  const FamilySpec& family = attention_family();
  const VariantSpec& naive = family.variant("naive");
  const Shape full = family.default_shape;  // Qwen3-0.6B at 16K
  REQUIRE(full.at("seq") == 16384);
  for (const char* target_name : {"trn1", "trn2"})
    CHECK_FALSE(naive_keeps_scores_on_chip(attention_shape(full), Dtype::bf16,
                                           kernel_limits(sim::load_target(target_name))));
  const sim::TargetSpec trn1 = sim::load_target("trn1");
  EvaluateOptions options;
  options.seed = 3;
  const Evaluation e = evaluate(family, "naive", full, Dtype::bf16, {}, trn1, options);
  INFO(e.status << " " << e.error << "; verified at " << shape_text(e.verification.shape, family)
                << ", max rel " << e.verification.max_rel_error << ", cos "
                << e.verification.cosine_similarity);
  REQUIRE(e.status == Outcome::ok);
  CHECK(e.verification.ran);
  CHECK(e.verification.cosine_similarity > 0.999);
  CHECK(hbm_bytes_moved(e.sim) ==
        doctest::Approx(naive_io_bytes(full, Dtype::bf16) + score_round_trip_bytes(full, Dtype::bf16)));
  // The verification ran the same spilling program at its shape.
  const Shape shape = e.verification.shape;
  const KernelLimits limits = naive.verification_limits(full, shape, {}, Dtype::bf16, kernel_limits(trn1));
  const sim::Program check = trace_program(family, naive, shape, Dtype::bf16, {}, limits);
  const sim::SimResult r = sim::simulate(check, trn1, sim::SimOptions{false, false});
  REQUIRE_MESSAGE(r.valid, r.error);
  CHECK(hbm_bytes_moved(r) ==
        doctest::Approx(naive_io_bytes(shape, Dtype::bf16) + score_round_trip_bytes(shape, Dtype::bf16)));
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

TEST_CASE("attention: flash_banked's score matmuls on PE row tiles overlap at head_dim 64, invalid at 128") {
  const FamilySpec& family = attention_family();
  const VariantSpec& variant = family.variant("flash_banked");
  const sim::TargetSpec trn2 = sim::load_target("trn2");
  auto simulate_with = [&](std::int64_t head_dim, int pe_row_tiles) {
    const ParamValues params = with_defaults(variant, {{"pe_row_tiles", pe_row_tiles}});
    const sim::Program program =
        trace_program(family, variant, qwen_like(2048, 4, 4, head_dim), Dtype::bf16, params, trn2);
    sim::SimOptions options;
    options.functional = false;
    return sim::simulate(program, trn2, options);
  };
  const sim::SimResult whole = simulate_with(64, 1), halves = simulate_with(64, 2);
  REQUIRE_MESSAGE(whole.valid, whole.error);
  REQUIRE_MESSAGE(halves.valid, halves.error);
  // The same matmul work in less tensor-engine time: score matmuls side by side.
  CHECK(halves.summary["matmul_flops"].get<double>() == whole.summary["matmul_flops"].get<double>());
  CHECK(halves.summary["tensor_engine_active_time_percent"].get<double>() * halves.total_time_s <
        0.95 * whole.summary["tensor_engine_active_time_percent"].get<double>() * whole.total_time_s);
  // Four tiles of 32 rows cannot hold a contraction over 64, nor two of 64 one over 128.
  CHECK_FALSE(simulate_with(64, 4).valid);
  CHECK_FALSE(simulate_with(128, 2).valid);
  // The declared constraints prune those before any simulation.
  bool pruned = false;
  for (const std::string& c : variant.constraints) pruned = pruned || c.find("pe_row_tiles * head_dim") == 0;
  CHECK(pruned);
}
