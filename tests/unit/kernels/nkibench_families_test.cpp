// NKIBench's adamw, bmm, bmm_softmax, swiglu, lora and mamba as families: every variant over a spread of
// parameters, ragged shapes, dtypes and both targets, against the double
// reference with NaN-poisoned outputs; the expert structures are faster than
// the starting kernels at NKIBench's shapes.
#include <doctest/doctest.h>

#include "kernels/evaluate.hpp"
#include "sim/target.hpp"
#include "tests/unit/kernels/family_cases.hpp"

using namespace autotune;
using namespace autotune::kernels;

using testing::Case;
using testing::check;
using testing::target;

TEST_CASE("adamw matches the reference: ragged rows and columns, folded rows, every engine placement") {
  std::uint64_t seed = 700;
  check({"adamw", "naive", {{"M", 300}, {"N", 1500}}, sim::Dtype::fp32, {}}, seed++);
  check({"adamw", "naive", {{"M", 130}, {"N", 77}}, sim::Dtype::bf16, {}, "trn1"}, seed++);
  for (std::int64_t e : {0, 1, 2})
    check({"adamw",
           "fused",
           {{"M", 600}, {"N", 1000}},
           e == 1 ? sim::Dtype::bf16 : sim::Dtype::fp32,
           {{"tile_size", e == 2 ? 512 : 256},
            {"pipeline_depth", 1 + e},
            {"unroll_factor", e == 0 ? 1 : 2 * e},
            {"square_engine", e % 2},
            {"recip_engine", e},
            {"update_engine", e},
            {"final_engine", e % 2}},
           e == 1 ? "trn1" : "trn2"},
          seed++);
  check({"adamw",
         "fused",
         {{"M", 1100}, {"N", 300}},
         sim::Dtype::fp16,
         {{"tile_size", 256}, {"pipeline_depth", 4}, {"unroll_factor", 4}, {"final_engine", 1}},
         "trn1"},
        seed++);
}

TEST_CASE("bmm matches the reference: ragged batches, M and N, K over one and several tiles, PE row tiles") {
  std::uint64_t seed = 800;
  check({"bmm", "naive", {{"B", 2}, {"M", 300}, {"K", 64}, {"N", 1300}}, sim::Dtype::fp32, {}}, seed++);
  check({"bmm", "naive", {{"B", 1}, {"M", 130}, {"K", 200}, {"N", 600}}, sim::Dtype::bf16, {}, "trn1"},
        seed++);
  for (std::int64_t tiles : {1, 2, 4})
    check({"bmm",
           "paired",
           {{"B", 2 * tiles + 1}, {"M", 300}, {"K", tiles == 4 ? 32 : 64}, {"N", 1300}},
           tiles == 2 ? sim::Dtype::fp32 : sim::Dtype::bf16,
           {{"pe_row_tiles", tiles},
            {"unroll_factor", tiles == 1 ? 2 : 1},
            {"store_factor", tiles == 4 ? 1 : 2 * tiles},
            {"pipeline_depth", tiles},
            {"drain_engine", tiles / 2},
            {"dma_transpose", tiles == 4 ? 1 : 0}},
           tiles == 2 ? "trn1" : "trn2"},
          seed++);
  // K over two tiles (the whole array, accumulated in PSUM).
  check({"bmm",
         "paired",
         {{"B", 2}, {"M", 200}, {"K", 200}, {"N", 700}},
         sim::Dtype::fp32,
         {{"pe_row_tiles", 1}, {"unroll_factor", 2}, {"drain_engine", 2}}},
        seed++);
}

TEST_CASE("bmm_softmax matches the reference: ragged batches, M and N, K over several tiles, PE row tiles") {
  std::uint64_t seed = 900;
  check({"bmm_softmax", "naive", {{"B", 2}, {"M", 300}, {"K", 64}, {"N", 1300}}, sim::Dtype::fp32, {}},
        seed++);
  check(
      {"bmm_softmax", "naive", {{"B", 1}, {"M", 130}, {"K", 200}, {"N", 600}}, sim::Dtype::bf16, {}, "trn1"},
      seed++);
  for (std::int64_t tiles : {1, 2, 4})
    check({"bmm_softmax",
           "fused",
           {{"B", 2 * tiles + 1}, {"M", 300}, {"K", tiles == 4 ? 32 : 64}, {"N", 1300}},
           tiles == 2 ? sim::Dtype::fp32 : sim::Dtype::bf16,
           {{"pe_row_tiles", tiles},
            {"pipeline_depth", tiles == 4 ? 1 : 3 - tiles},
            {"scale_engine", tiles / 2},
            {"dma_transpose", tiles == 4 ? 1 : 0}},
           tiles == 2 ? "trn1" : "trn2"},
          seed++);
  check({"bmm_softmax",
         "fused",
         {{"B", 2}, {"M", 200}, {"K", 200}, {"N", 700}},
         sim::Dtype::fp16,
         {{"pe_row_tiles", 1}, {"scale_engine", 2}}},
        seed++);
}

TEST_CASE("rmsnorm_matmul and add_rmsnorm_matmul match the reference: ragged M, N and K, K over two banks") {
  std::uint64_t seed = 1000;
  for (const char* family : {"rmsnorm_matmul", "add_rmsnorm_matmul"}) {
    check({family, "naive", {{"M", 300}, {"N", 1300}, {"K", 200}}, sim::Dtype::fp32, {}}, seed++);
    check({family, "naive", {{"M", 130}, {"N", 600}, {"K", 640}}, sim::Dtype::bf16, {}, "trn1"}, seed++);
    for (std::int64_t e : {0, 1, 2})
      check({family,
             "fused",
             {{"M", 200 + 150 * e}, {"N", 700 + 300 * e}, {"K", e == 1 ? 300 : 600}},
             e == 2 ? sim::Dtype::bf16 : sim::Dtype::fp32,
             {{"pipeline_depth", 1 + e},
              {"unroll_factor", 1 + e},
              {"transpose_engine", e % 2},
              {"drain_engine", e}},
             e == 1 ? "trn1" : "trn2"},
            seed++);
  }
}

TEST_CASE("matmul_add_rmsnorm matches the reference: ragged M, N and K, K over several chunks") {
  std::uint64_t seed = 1100;
  check({"matmul_add_rmsnorm", "naive", {{"M", 300}, {"N", 1300}, {"K", 200}}, sim::Dtype::fp32, {}}, seed++);
  check({"matmul_add_rmsnorm", "naive", {{"M", 130}, {"N", 600}, {"K", 300}}, sim::Dtype::bf16, {}, "trn1"},
        seed++);
  for (std::int64_t e : {0, 1, 2})
    check({"matmul_add_rmsnorm",
           "fused",
           {{"M", 200 + 150 * e}, {"N", 700 + 300 * e}, {"K", e == 1 ? 300 : 600}},
           e == 2 ? sim::Dtype::bf16 : sim::Dtype::fp32,
           {{"pipeline_depth", 1 + e},
            {"unroll_factor", 1 + e},
            {"transpose_engine", e % 2},
            {"scale_engine", e % 2}},
           e == 1 ? "trn1" : "trn2"},
          seed++);
}

TEST_CASE("at NKIBench's shapes the expert structures beat the starting kernels on both targets") {
  for (const char* t : {"trn1", "trn2"}) {
    EvaluateOptions options;
    options.verify = false;
    auto latency = [&](const char* family, const char* variant, const ParamValues& given) {
      const FamilySpec& f = family_registry().get(family);
      const Evaluation e = evaluate(f, variant, f.default_shape, f.dtypes.front(),
                                    resolve_params(f.variant(variant), given), target(t), options);
      INFO(family, "/", variant, " on ", t, ": ", e.status, " ", e.error);
      REQUIRE(e.status == Outcome::ok);
      return e.latency_s;
    };
    CHECK(latency("adamw", "fused", {}) < latency("adamw", "naive", {}));
    CHECK(latency("bmm", "paired", {}) < latency("bmm", "naive", {}));
    CHECK(latency("bmm_softmax", "fused", {}) < latency("bmm_softmax", "naive", {}));
    CHECK(latency("swiglu", "fused", {}) < latency("swiglu", "naive", {}));
    CHECK(latency("lora", "fused", {}) < latency("lora", "naive", {}));
    for (const char* family : {"rmsnorm_matmul", "add_rmsnorm_matmul", "matmul_add_rmsnorm"})
      CHECK(latency(family, "fused", {}) < latency(family, "naive", {}));
    CHECK(latency("mamba", "fused", {}) < latency("mamba", "naive", {}));
  }
}

TEST_CASE("swiglu matches the reference: ragged M, N and K, every block size, both drain engines") {
  std::uint64_t seed = 1000;
  check({"swiglu", "naive", {{"M", 600}, {"N", 1100}, {"K", 300}}, sim::Dtype::fp32, {}}, seed++);
  check({"swiglu", "naive", {{"M", 130}, {"N", 200}, {"K", 130}}, sim::Dtype::bf16, {}, "trn1"}, seed++);
  for (std::int64_t t : {1, 2, 3, 4})
    check({"swiglu",
           "fused",
           {{"M", 128 * t + 70}, {"N", 128 * (t % 3 + 1) + 90}, {"K", 600}},
           t == 2 ? sim::Dtype::bf16 : sim::Dtype::fp32,
           {{"tiles_in_block_m", t},
            {"tiles_in_block_n", t == 3 ? 8 : t},
            {"pipeline_depth", t == 3 ? 1 : t},
            {"drain_engine", t % 3}},
           t % 2 == 1 ? "trn1" : "trn2"},
          seed++);
}

TEST_CASE(
    "lora matches the reference: ragged M, N and K, ranks below the partitions, PSUM steps of two banks") {
  std::uint64_t seed = 1100;
  check({"lora", "naive", {{"M", 600}, {"N", 1100}, {"K", 700}, {"R", 128}}, sim::Dtype::fp32, {}}, seed++);
  check({"lora", "naive", {{"M", 130}, {"N", 300}, {"K", 200}, {"R", 17}}, sim::Dtype::bf16, {}, "trn1"},
        seed++);
  for (std::int64_t t : {1, 2, 3, 4})
    check({"lora",
           "fused",
           {{"M", 128 * t + 70}, {"N", 1100}, {"K", 600}, {"R", t == 3 ? 40 : 128}},
           t == 2 ? sim::Dtype::bf16 : sim::Dtype::fp32,
           {{"tiles_in_block_m", t},
            {"unroll_factor", t == 1 ? 2 : 1},
            {"pipeline_depth", t == 3 ? 12 : 4 * t},
            {"drain_engine", t % 3}},
           t % 2 == 1 ? "trn1" : "trn2"},
          seed++);
}

TEST_CASE(
    "mamba matches the reference: ragged channels and steps, the scan carried across chunks, every "
    "placement") {
  std::uint64_t seed = 1200;
  check({"mamba", "naive", {{"M", 2500}, {"C", 200}, {"S", 3}}, sim::Dtype::fp32, {}}, seed++);
  check({"mamba", "naive", {{"M", 700}, {"C", 130}, {"S", 2}}, sim::Dtype::bf16, {}, "trn1"}, seed++);
  for (std::int64_t t : {0, 1, 2, 3, 4})
    check({"mamba",
           "fused",
           {{"M", 256 * (t % 3 + 2) + 77}, {"C", t == 3 ? 128 : 200}, {"S", 3}},
           t == 4 ? sim::Dtype::bf16 : sim::Dtype::fp32,
           {{"tile_size", t == 1 ? 1024 : 256},
            {"pipeline_depth", t % 3 + 1},
            {"bcast_in_psum", t % 2 == 0 ? 1 : 0},
            {"product_engine", t % 2 == 0 ? 0 : (t == 1 ? 1 : 2)},
            {"acc_engine", t % 3}},
           t % 2 == 1 ? "trn1" : "trn2"},
          seed++);
}

TEST_CASE("mamba's check fails a scan that restarts from zero at a chunk instead of carrying its state") {
  const FamilySpec& family = family_registry().get("mamba");
  const std::int64_t M = 600, C = 4, S = 2, split = 256;
  const Shape shape = {{"M", M}, {"C", C}, {"S", S}};
  std::uint64_t state = 7;
  auto draw = [&](std::size_t n) {
    std::vector<double> v(n);
    for (double& x : v) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      x = 0.2 * (double(state >> 11) / double(1ULL << 53)) - 0.1;
    }
    return v;
  };
  const HostTensors inputs = {draw(C * M), draw(C * M), draw(C * S), draw(S * M), draw(S * M)};
  const HostTensors reference = family.reference(shape, inputs);
  // The same computation on [0, split) and [split, M) separately: the second part's state starts at 0.
  auto columns = [&](const std::vector<double>& x, std::int64_t rows, std::int64_t begin, std::int64_t end) {
    std::vector<double> out;
    for (std::int64_t r = 0; r < rows; ++r)
      out.insert(out.end(), x.begin() + r * M + begin, x.begin() + r * M + end);
    return out;
  };
  std::vector<float> restarted(std::size_t(C * M));
  for (auto [begin, end] : {std::pair{std::int64_t(0), split}, std::pair{split, M}}) {
    const Shape part = {{"M", end - begin}, {"C", C}, {"S", S}};
    const HostTensors piece = family.reference(
        part, {columns(inputs[0], C, begin, end), columns(inputs[1], C, begin, end), inputs[2],
               columns(inputs[3], S, begin, end), columns(inputs[4], S, begin, end)});
    for (std::int64_t r = 0; r < C; ++r)
      for (std::int64_t m = begin; m < end; ++m)
        restarted[std::size_t(r * M + m)] = float(piece[0][std::size_t(r * (end - begin) + m - begin)]);
  }
  const Verification v = compare_outputs(reference, {restarted}, family.tolerance.at(sim::Dtype::fp32));
  CHECK_FALSE(v.passed);
  std::vector<float> exact(reference[0].begin(), reference[0].end());
  CHECK(compare_outputs(reference, {exact}, family.tolerance.at(sim::Dtype::fp32)).passed);
}
