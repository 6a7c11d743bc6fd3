// Every family, variant and a spread of parameter values computes the
// reference's answer on fresh random inputs (NaN-poisoned outputs), ragged
// shapes included; and the check itself catches wrong kernels.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "kernels/evaluate.hpp"
#include "kernels/families/exp.hpp"
#include "sim/target.hpp"

using namespace autotune;
using namespace autotune::kernels;

namespace {

const sim::TargetSpec& trn1() {
  static const sim::TargetSpec target = sim::load_target("trn1");
  return target;
}

struct Case {
  const char* family;
  const char* variant;
  Shape shape;
  sim::Dtype dtype;
  ParamValues params;  // the rest take their defaults
};

void check_case(const Case& c, std::uint64_t seed) {
  const FamilySpec& family = family_registry().get(c.family);
  const ParamValues params = resolve_params(family.variant(c.variant), c.params);
  EvaluateOptions options;
  options.seed = seed;
  const Evaluation e = evaluate(family, c.variant, c.shape, c.dtype, params, trn1(), options);
  INFO(c.family, "/", c.variant, " ", shape_text(c.shape, family), " ", sim::dtype_name(c.dtype), " -> ",
       e.status, ": ", e.error);
  for (const auto& [name, value] : params) INFO(name, "=", value);
  REQUIRE(e.status == Outcome::ok);
  CHECK(e.verification.ran);
  CHECK(e.verification.passed);
  CHECK(e.verification.cosine_similarity > 0.999);
  CHECK(e.verification.max_rel_error <= e.verification.tolerance);
  CHECK(e.latency_s >= e.roofline_bound_s);
}

}  // namespace

TEST_CASE("exp variants match the reference, ragged row and column tiles included") {
  const std::vector<Case> cases = {
      {"exp", "naive", {{"rows", 250}, {"cols", 512}}, sim::Dtype::fp32, {}},
      {"exp", "naive", {{"rows", 130}, {"cols", 77}}, sim::Dtype::bf16, {}},
      {"exp", "tiled", {{"rows", 250}, {"cols", 512}}, sim::Dtype::fp32, {}},
      {"exp",
       "tiled",
       {{"rows", 300}, {"cols", 1000}},
       sim::Dtype::fp32,
       {{"tile_size", 128}, {"pipeline_depth", 3}, {"unroll_factor", 4}}},
      {"exp",
       "tiled",
       {{"rows", 129}, {"cols", 200}},
       sim::Dtype::bf16,
       {{"tile_size", 64}, {"pipeline_depth", 1}, {"unroll_factor", 2}}},
      {"exp",
       "tiled",
       {{"rows", 257}, {"cols", 333}},
       sim::Dtype::fp16,
       {{"tile_size", 256}, {"pipeline_depth", 2}, {"unroll_factor", 8}}},
  };
  std::uint64_t seed = 1;
  for (const auto& c : cases) check_case(c, seed++);
}

TEST_CASE("gemm variants match the reference on ragged M, N and K") {
  const Shape ragged = {{"M", 200}, {"N", 600}, {"K", 300}};
  const std::vector<Case> cases = {
      {"gemm", "tiled", ragged, sim::Dtype::bf16, {}},
      {"gemm",
       "tiled",
       ragged,
       sim::Dtype::fp32,
       {{"tile_m", 64}, {"tile_n", 128}, {"tile_k", 32}, {"unroll_factor", 2}, {"pipeline_depth", 1}}},
      {"gemm",
       "tiled",
       ragged,
       sim::Dtype::bf16,
       {{"tile_m", 32}, {"tile_n", 256}, {"tile_k", 64}, {"unroll_factor", 4}, {"pipeline_depth", 3}}},
      {"gemm", "hoisted", ragged, sim::Dtype::bf16, {}},
      {"gemm",
       "hoisted",
       ragged,
       sim::Dtype::fp32,
       {{"tile_m", 64}, {"tile_n", 64}, {"tile_k", 128}, {"unroll_factor", 4}, {"pipeline_depth", 2}}},
      {"gemm", "blocked_mn", ragged, sim::Dtype::bf16, {}},
      {"gemm",
       "blocked_mn",
       {{"M", 330}, {"N", 900}, {"K", 200}},
       sim::Dtype::fp16,
       {{"tile_m", 64},
        {"tile_n", 128},
        {"tile_k", 64},
        {"tiles_in_block_m", 2},
        {"tiles_in_block_n", 4},
        {"unroll_factor", 2},
        {"pipeline_depth", 2}}},
      {"gemm", "blocked_mnk", ragged, sim::Dtype::bf16, {}},
      {"gemm",
       "blocked_mnk",
       {{"M", 330}, {"N", 700}, {"K", 420}},
       sim::Dtype::bf16,
       {{"tile_m", 64},
        {"tile_n", 128},
        {"tile_k", 64},
        {"tiles_in_block_m", 2},
        {"tiles_in_block_n", 2},
        {"tiles_in_block_k", 2},
        {"unroll_factor", 2},
        {"pipeline_depth", 1}}},
      {"gemm",
       "blocked_mnk",
       {{"M", 300}, {"N", 1100}, {"K", 300}},
       sim::Dtype::fp32,
       {{"tile_m", 128},
        {"tile_n", 256},
        {"tile_k", 128},
        {"tiles_in_block_m", 1},
        {"tiles_in_block_n", 4},
        {"tiles_in_block_k", 1},
        {"unroll_factor", 4},
        {"pipeline_depth", 3}}},
  };
  std::uint64_t seed = 100;
  for (const auto& c : cases) check_case(c, seed++);
}

TEST_CASE("rmsnorm variants match the reference") {
  const std::vector<Case> cases = {
      {"rmsnorm", "naive", {{"rows", 300}, {"cols", 700}}, sim::Dtype::fp32, {}},
      {"rmsnorm", "naive", {{"rows", 130}, {"cols", 256}}, sim::Dtype::bf16, {}},
      {"rmsnorm", "fused", {{"rows", 300}, {"cols", 700}}, sim::Dtype::fp32, {}},
      {"rmsnorm",
       "fused",
       {{"rows", 300}, {"cols", 700}},
       sim::Dtype::fp32,
       {{"tile_size", 128}, {"pipeline_depth", 1}, {"unroll_factor", 2}}},
      {"rmsnorm",
       "fused",
       {{"rows", 520}, {"cols", 1100}},
       sim::Dtype::bf16,
       {{"tile_size", 512}, {"pipeline_depth", 3}, {"unroll_factor", 4}}},
  };
  std::uint64_t seed = 200;
  for (const auto& c : cases) check_case(c, seed++);
}

TEST_CASE("large shapes are verified on a smaller ragged shape of the same code paths") {
  const FamilySpec& gemm = family_registry().get("gemm");
  for (const auto& variant : gemm.variants) {
    const ParamValues params = resolve_params(variant, ParamValues{});
    const Shape v = variant.verification_shape(gemm.default_shape, params);
    INFO(variant.name, " verifies at ", shape_text(v, gemm));
    for (const char* arg : {"M", "N", "K"}) {
      CHECK(v.at(arg) <= gemm.default_shape.at(arg));
      CHECK(v.at(arg) > 0);
    }
    // Ragged last tiles along every axis (the default tiles are 128, 512, 128).
    CHECK(v.at("M") % 128 != 0);
    CHECK(v.at("N") % 512 != 0);
    CHECK(v.at("K") % 128 != 0);
    // At least two tiles along every axis.
    CHECK(v.at("M") > 128);
    CHECK(v.at("N") > 512);
    CHECK(v.at("K") > 128);
  }
  // Small blocks: two whole blocks plus a remainder along each axis.
  const VariantSpec& mnk = gemm.variant("blocked_mnk");
  const ParamValues small = resolve_params(mnk, ParamValues{{"tile_m", 32},
                                                            {"tile_n", 64},
                                                            {"tile_k", 32},
                                                            {"tiles_in_block_m", 2},
                                                            {"tiles_in_block_n", 2},
                                                            {"tiles_in_block_k", 2}});
  const Shape v = mnk.verification_shape(gemm.default_shape, small);
  CHECK(v.at("M") > 2 * 64);
  CHECK(v.at("N") > 2 * 128);
  CHECK(v.at("K") > 2 * 64);

  const FamilySpec& exp = family_registry().get("exp");
  const Shape profiler_example = {{"rows", 250}, {"cols", 512}};
  CHECK(exp.variant("tiled").verification_shape(
            profiler_example, resolve_params(exp.variant("tiled"), ParamValues{})) == profiler_example);
}

TEST_CASE("the output check fails a kernel that leaves its ragged last tile unwritten") {
  // The naive exp with its last (ragged) row tile never stored.
  FamilySpec family = family_registry().get("exp");
  VariantSpec broken = family.variant("naive");
  broken.name = "forgets_last_tile";
  broken.trace = [](Kernel& kernel, const Shape& s, Dtype, const ParamValues&) {
    const int rows = int(s.at("rows")), cols = int(s.at("cols"));
    Tensor in = kernel.input("in", rows, cols, Dtype::fp32);
    Tensor out = kernel.output("out", rows, cols, Dtype::fp32);
    TilePool pool = kernel.sbuf_pool("t", 2, 128, cols, Dtype::fp32);
    const int whole = rows / 128 * 128;
    for (int r = 0; r < whole; r += 128) {
      Tensor t = pool.next();
      kernel.dma_copy(t, in.row_range(r, r + 128));
      kernel.activation(t, t, ActivationFunction::exp);
      kernel.dma_copy(out.row_range(r, r + 128), t);
    }
  };
  family.variants.push_back(broken);
  const Evaluation e =
      evaluate(family, "forgets_last_tile", {{"rows", 250}, {"cols", 64}}, Dtype::fp32, {}, trn1(), {});
  CHECK(e.status == Outcome::wrong_answer);
  CHECK(e.verification.ran);
  CHECK_FALSE(e.verification.passed);
  CHECK(e.error.find("NaN") != std::string::npos);
}

TEST_CASE("the output check measures error, MSE and cosine similarity") {
  const HostTensors reference = {{1.0, -2.0, 4.0, 0.5}};
  const Verification exact = compare_outputs(reference, {{1.0f, -2.0f, 4.0f, 0.5f}}, 1e-6);
  CHECK(exact.passed);
  CHECK(exact.max_rel_error == 0.0);
  CHECK(exact.cosine_similarity == doctest::Approx(1.0));

  const Verification off = compare_outputs(reference, {{1.0f, -2.0f, 4.4f, 0.5f}}, 1e-3);
  CHECK_FALSE(off.passed);
  CHECK(off.max_rel_error == doctest::Approx(0.1).epsilon(1e-4));
  CHECK(off.mse == doctest::Approx(0.16 / 4).epsilon(1e-4));
  CHECK(off.cosine_similarity < 1.0);

  const Verification poisoned =
      compare_outputs(reference, {{1.0f, std::numeric_limits<float>::quiet_NaN(), 4.0f, 0.5f}}, 1.0);
  CHECK_FALSE(poisoned.passed);
  CHECK(std::isinf(poisoned.max_rel_error));
}

TEST_CASE("evaluate is safe to call from several threads at once") {
  const FamilySpec& gemm = family_registry().get("gemm");
  const Shape shape = {{"M", 200}, {"N", 600}, {"K", 300}};
  const ParamValues params =
      resolve_params(gemm.variant("blocked_mnk"), ParamValues{{"tiles_in_block_m", 2}});
  EvaluateOptions options;
  options.seed = 7;
  const Evaluation serial = evaluate(gemm, "blocked_mnk", shape, Dtype::bf16, params, trn1(), options);
  REQUIRE(serial.status == Outcome::ok);
  std::vector<Evaluation> results(4);
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < results.size(); ++i)
    workers.emplace_back(
        [&, i] { results[i] = evaluate(gemm, "blocked_mnk", shape, Dtype::bf16, params, trn1(), options); });
  for (auto& w : workers) w.join();
  for (const auto& r : results) {
    CHECK(r.status == Outcome::ok);
    CHECK(r.latency_s == serial.latency_s);
    CHECK(r.verification.max_rel_error == serial.verification.max_rel_error);
  }
}
