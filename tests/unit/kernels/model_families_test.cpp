// The families a model's forward needs besides GEMM, RMSNorm and attention
// (residual add, SiLU-gated multiply, rotary embedding, transposes) and
// NKIBench's single-input SiLU: every
// variant over a spread of parameters, ragged shapes, both dtypes and both
// targets, against the double reference with NaN-poisoned outputs; and a
// wrong kernel is caught.
#include <doctest/doctest.h>

#include "kernels/evaluate.hpp"
#include "sim/target.hpp"
#include "tests/unit/kernels/family_cases.hpp"

using namespace autotune;
using namespace autotune::kernels;

using testing::Case;
using testing::check;
using testing::target;

TEST_CASE("add, silu_mul and silu match the reference, ragged rows and columns, every engine placement") {
  std::uint64_t seed = 300;
  for (const char* family : {"add", "silu_mul", "silu"}) {
    check({family, "naive", {{"rows", 300}, {"cols", 700}}, sim::Dtype::bf16, {}}, seed++);
    check({family, "naive", {{"rows", 130}, {"cols", 77}}, sim::Dtype::fp32, {}, "trn1"}, seed++);
    for (std::int64_t engine : {0, 1, 2})
      check({family,
             "tiled",
             {{"rows", 600}, {"cols", 1000}},
             engine == 1 ? sim::Dtype::fp32 : sim::Dtype::bf16,
             {{"tile_size", 256},
              {"pipeline_depth", 1 + engine},
              {"unroll_factor", engine == 2 ? 2 : 1},
              {"engine", engine}},
             engine == 0 ? "trn1" : "trn2"},
            seed++);
    check({family,
           "tiled",
           {{"rows", 1100}, {"cols", 300}},
           sim::Dtype::bf16,
           {{"tile_size", 128}, {"pipeline_depth", 4}, {"unroll_factor", 8}, {"engine", 2}}},
          seed++);
  }
}

TEST_CASE("rope matches the reference: heads, head_dim 64 and 128, folded tokens, both gathers") {
  std::uint64_t seed = 400;
  check({"rope", "naive", {{"seq", 300}, {"heads", 4}, {"head_dim", 128}}, sim::Dtype::bf16, {}}, seed++);
  check({"rope", "naive", {{"seq", 130}, {"heads", 3}, {"head_dim", 64}}, sim::Dtype::fp32, {}, "trn1"},
        seed++);
  for (std::int64_t gather : {0, 1})
    for (std::int64_t fold : {1, 2, 4})
      check({"rope",
             "wide",
             {{"seq", 600}, {"heads", fold == 2 ? 5 : 8}, {"head_dim", fold == 4 ? 64 : 128}},
             fold == 1 ? sim::Dtype::fp32 : sim::Dtype::bf16,
             {{"pipeline_depth", fold},
              {"engine_split", gather},
              {"unroll_factor", fold},
              {"gather_by_dma", gather}},
             gather == 0 ? "trn2" : "trn1"},
            seed++);
}

TEST_CASE("transpose moves every value exactly: batches, ragged blocks, banks, engines and DMA") {
  std::uint64_t seed = 500;
  check({"transpose", "naive", {{"batch", 2}, {"rows", 300}, {"cols", 200}}, sim::Dtype::bf16, {}}, seed++);
  check({"transpose", "naive", {{"batch", 1}, {"rows", 100}, {"cols", 70}}, sim::Dtype::fp32, {}, "trn1"},
        seed++);
  for (std::int64_t blocks : {1, 2, 4})
    check({"transpose",
           "pe",
           {{"batch", 3}, {"rows", 700}, {"cols", 300}},
           blocks == 2 ? sim::Dtype::fp32 : sim::Dtype::bf16,
           {{"tile_size", blocks == 4 ? 128 : 256},
            {"blocks_per_bank", blocks},
            {"pipeline_depth", blocks},
            {"evacuate_engine", blocks == 1   ? 0
                                : blocks == 2 ? 1
                                              : 2}},
           blocks == 1 ? "trn1" : "trn2"},
          seed++);
  check({"transpose",
         "dma",
         {{"batch", 2}, {"rows", 700}, {"cols", 200}},
         sim::Dtype::bf16,
         {{"tile_size", 256}, {"pipeline_depth", 3}}},
        seed++);
  check({"transpose",
         "dma",
         {{"batch", 1}, {"rows", 128}, {"cols", 128}},
         sim::Dtype::bf16,
         {{"tile_size", 128}, {"pipeline_depth", 1}},
         "trn1"},
        seed++);
}

TEST_CASE("the transpose's exact check fails a copy that leaves the layout as it was") {
  const FamilySpec& family = family_registry().get("transpose");
  const Shape shape = {{"batch", 1}, {"rows", 256}, {"cols", 128}};
  HostTensors inputs(1, std::vector<double>(256 * 128));
  for (std::size_t i = 0; i < inputs[0].size(); ++i) inputs[0][i] = double(i % 251) - 125.0;
  const HostTensors reference = family.reference(shape, inputs);
  std::vector<std::vector<float>> untransposed(1, std::vector<float>(inputs[0].begin(), inputs[0].end()));
  const Verification v = compare_outputs(reference, untransposed, 0.0);
  CHECK(!v.passed);
  CHECK(v.cosine_similarity < 0.9);
}
