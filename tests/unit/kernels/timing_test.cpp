// Timing properties that must hold by the model's mechanisms (never by a
// formula written for a knob): overlap from rotating buffers, DMA efficiency
// from larger transfers, nothing beats the roofline, overflow is invalid.
// These compare simulated times; nothing here measures wall time.
#include <doctest/doctest.h>

#include "kernels/api/kernel.hpp"
#include "kernels/evaluate.hpp"
#include "sim/execute.hpp"
#include "sim/target.hpp"
#include "sim/validate.hpp"

using namespace autotune;
using namespace autotune::kernels;

namespace {

const sim::TargetSpec& target(const char* name) {
  static const sim::TargetSpec trn1 = sim::load_target("trn1");
  static const sim::TargetSpec trn2 = sim::load_target("trn2");
  return std::string(name) == "trn2" ? trn2 : trn1;
}

Evaluation time_only(const char* family_name, const char* variant, const Shape& shape, sim::Dtype dtype,
                     const ParamValues& given, const char* target_name = "trn1") {
  const FamilySpec& family = family_registry().get(family_name);
  EvaluateOptions options;
  options.verify = false;
  return evaluate(family, variant, shape, dtype, resolve_params(family.variant(variant), given),
                  target(target_name), options);
}

double summary(const Evaluation& e, const char* key) { return e.sim.summary.at(key).get<double>(); }

}  // namespace

TEST_CASE("on a DMA-bound kernel a second rotating buffer overlaps DMA with compute") {
  const Shape shape = {{"rows", 2048}, {"cols", 2048}};
  const Evaluation depth1 =
      time_only("exp", "tiled", shape, sim::Dtype::fp32, {{"tile_size", 512}, {"pipeline_depth", 1}});
  const Evaluation depth2 =
      time_only("exp", "tiled", shape, sim::Dtype::fp32, {{"tile_size", 512}, {"pipeline_depth", 2}});
  REQUIRE(depth1.status == Outcome::ok);
  REQUIRE(depth2.status == Outcome::ok);
  INFO("depth 1: ", depth1.latency_s * 1e6, " us; depth 2: ", depth2.latency_s * 1e6, " us");
  // DMA-bound: the transfers are busy for longer than the compute engines.
  CHECK(summary(depth1, "dma_active_time_percent") > summary(depth1, "compute_active_time_percent"));
  CHECK(depth2.latency_s < depth1.latency_s);
  CHECK(summary(depth2, "dma_compute_overlap_percent") > summary(depth1, "dma_compute_overlap_percent"));
  CHECK(summary(depth2, "dma_compute_overlap_percent") > 0.0);
}

TEST_CASE("larger DMA transfers raise DMA efficiency") {
  const Shape shape = {{"rows", 1024}, {"cols", 4096}};
  double previous_efficiency = 0, previous_latency = 1e9;
  for (std::int64_t tile : {64, 256, 1024, 4096}) {
    const Evaluation e =
        time_only("exp", "tiled", shape, sim::Dtype::fp32, {{"tile_size", tile}, {"pipeline_depth", 2}});
    REQUIRE(e.status == Outcome::ok);
    const double efficiency = summary(e, "dma_average_efficiency_percent");
    INFO("tile_size ", tile, ": efficiency ", efficiency, "%, ", e.latency_s * 1e6, " us");
    CHECK(efficiency > previous_efficiency);
    CHECK(e.latency_s < previous_latency);
    previous_efficiency = efficiency;
    previous_latency = e.latency_s;
  }
}

TEST_CASE("no kernel beats the roofline bound of its target") {
  struct Config {
    const char* family;
    const char* variant;
    Shape shape;
    sim::Dtype dtype;
    ParamValues params;
  };
  const Shape gemm = {{"M", 1024}, {"N", 2048}, {"K", 1024}};
  const std::vector<Config> configs = {
      {"exp", "naive", {{"rows", 250}, {"cols", 512}}, sim::Dtype::fp32, {}},
      {"exp",
       "tiled",
       {{"rows", 4096}, {"cols", 4096}},
       sim::Dtype::bf16,
       {{"tile_size", 4096}, {"pipeline_depth", 4}}},
      {"exp",
       "tiled",
       {{"rows", 4096}, {"cols", 4096}},
       sim::Dtype::fp32,
       {{"tile_size", 2048}, {"unroll_factor", 8}}},
      {"gemm", "tiled", gemm, sim::Dtype::bf16, {{"pipeline_depth", 8}}},
      {"gemm",
       "hoisted",
       gemm,
       sim::Dtype::bf16,
       {{"pipeline_depth", 3}, {"unroll_factor", 4}, {"tile_n", 128}}},
      {"gemm", "blocked_mn", gemm, sim::Dtype::fp32, {{"tiles_in_block_m", 4}, {"tiles_in_block_n", 1}}},
      {"gemm", "blocked_mnk", gemm, sim::Dtype::bf16, {{"tiles_in_block_m", 8}}},
      {"gemm",
       "blocked_mnk",
       gemm,
       sim::Dtype::bf16,
       {{"tiles_in_block_m", 4}, {"tiles_in_block_n", 4}, {"tiles_in_block_k", 2}, {"unroll_factor", 4}}},
      {"rmsnorm", "naive", {{"rows", 1024}, {"cols", 2048}}, sim::Dtype::fp32, {}},
      {"rmsnorm",
       "fused",
       {{"rows", 4096}, {"cols", 1024}},
       sim::Dtype::bf16,
       {{"tile_size", 1024}, {"pipeline_depth", 4}}},
      {"rmsnorm", "fused", {{"rows", 4096}, {"cols", 4096}}, sim::Dtype::fp32, {{"unroll_factor", 2}}},
  };
  int checked = 0;
  for (const char* target_name : {"trn1", "trn2"}) {
    for (const auto& c : configs) {
      const Evaluation e = time_only(c.family, c.variant, c.shape, c.dtype, c.params, target_name);
      INFO(target_name, " ", c.family, "/", c.variant, ": ", e.status, " ", e.error, " latency ", e.latency_s,
           " bound ", e.roofline_bound_s);
      CHECK(e.status != Outcome::implausible);
      if (!e.sim.valid) continue;  // a configuration that does not fit is data, not a roofline breach
      CHECK(e.roofline_bound_s > 0);
      CHECK(e.latency_s >= e.roofline_bound_s);
      ++checked;
    }
  }
  CHECK(checked >= 18);
}

TEST_CASE("an SBUF overflow is reported as invalid with the simulator's rule") {
  // The naive exp holds the whole tensor in SBUF: 32 row tiles of 32 KiB per partition.
  const Evaluation e = time_only("exp", "naive", {{"rows", 4096}, {"cols", 8192}}, sim::Dtype::fp32, {});
  CHECK(e.status == Outcome::invalid);
  CHECK(e.rule == "sbuf_overflow");
  CHECK_FALSE(e.error.empty());
  CHECK(e.error.find("exp.hpp") != std::string::npos);  // names the kernel source line

  // Rotating two K columns of the blocked operands does not fit at K = 8192.
  const Evaluation blocked = time_only("gemm", "blocked_mn", {{"M", 512}, {"N", 1024}, {"K", 8192}},
                                       sim::Dtype::bf16, {{"pipeline_depth", 2}});
  CHECK(blocked.status == Outcome::invalid);
  CHECK(blocked.rule == "sbuf_overflow");
  // One fits.
  const Evaluation fits = time_only("gemm", "blocked_mn", {{"M", 512}, {"N", 1024}, {"K", 8192}},
                                    sim::Dtype::bf16, {{"pipeline_depth", 1}});
  CHECK(fits.status == Outcome::ok);
}

TEST_CASE("unroll_factor handles several tiles per instruction: fewer, larger transfers and drains") {
  const Shape shape = {{"M", 512}, {"N", 2048}, {"K", 512}};
  const Evaluation one = time_only("gemm", "tiled", shape, sim::Dtype::bf16, {{"unroll_factor", 1}});
  const Evaluation four = time_only("gemm", "tiled", shape, sim::Dtype::bf16, {{"unroll_factor", 4}});
  REQUIRE(one.status == Outcome::ok);
  REQUIRE(four.status == Outcome::ok);
  CHECK(summary(four, "dma_transfer_count") < summary(one, "dma_transfer_count"));
  CHECK(summary(four, "dma_transfer_average_bytes") > summary(one, "dma_transfer_average_bytes"));
  CHECK(summary(four, "vector_engine_instruction_count") < summary(one, "vector_engine_instruction_count"));
  // The same multiply-accumulates either way.
  CHECK(summary(four, "matmul_flops") == summary(one, "matmul_flops"));
  CHECK(summary(four, "tensor_engine_instruction_count") == summary(one, "tensor_engine_instruction_count"));
}

TEST_CASE(
    "unroll_factor folds row tiles of element-wise kernels: fewer, larger transfers where rows are short") {
  // Short rows: each row tile's transfer carries little per partition, so the
  // DMA efficiency curve and the per-instruction minimum dominate.
  struct Case {
    const char* family;
    const char* variant;
    Shape shape;
    std::int64_t tile_size;
  };
  for (const Case& c : {Case{"exp", "tiled", {{"rows", 4096}, {"cols", 128}}, 128},
                        Case{"rmsnorm", "fused", {{"rows", 4096}, {"cols", 256}}, 256}}) {
    const Evaluation one = time_only(c.family, c.variant, c.shape, sim::Dtype::fp32,
                                     {{"tile_size", c.tile_size}, {"unroll_factor", 1}});
    const Evaluation four = time_only(c.family, c.variant, c.shape, sim::Dtype::fp32,
                                      {{"tile_size", c.tile_size}, {"unroll_factor", 4}});
    REQUIRE(one.status == Outcome::ok);
    REQUIRE(four.status == Outcome::ok);
    INFO(c.family, ": unroll 1 ", one.latency_s * 1e6, " us, unroll 4 ", four.latency_s * 1e6, " us");
    CHECK(summary(four, "dma_transfer_count") < summary(one, "dma_transfer_count"));
    CHECK(summary(four, "dma_average_efficiency_percent") > summary(one, "dma_average_efficiency_percent"));
    CHECK(summary(four, "hbm_read_bytes") == summary(one, "hbm_read_bytes"));
    CHECK(four.latency_s < one.latency_s);
  }
}

TEST_CASE("a folded HBM view moves consecutive rows into one partition, misuse is a trace error") {
  sim::Program program;
  {
    Kernel kernel(program);
    Tensor in = kernel.input("in", 6, 4, sim::Dtype::fp32);
    Tensor out = kernel.output("out", 6, 4, sim::Dtype::fp32);
    TilePool pool = kernel.sbuf_pool("tile", 1, 3, 8, sim::Dtype::fp32);
    Tensor tile = pool.next();
    kernel.dma_copy(tile, in.fold_rows(2));  // partition p holds rows 2p and 2p + 1
    kernel.dma_copy(out.fold_rows(2), tile);
  }
  sim::HostIo io;
  io.inputs.push_back({});
  for (int i = 0; i < 24; ++i) io.inputs[0].push_back(float(i));
  const sim::TargetSpec& trn1 = target("trn1");
  REQUIRE(sim::validate_program(program, trn1).valid);
  sim::execute_program(program, io);
  CHECK(io.outputs.at(0) == io.inputs[0]);

  sim::Program bad;
  {
    Kernel kernel(bad);
    Tensor in = kernel.input("in", 5, 4, sim::Dtype::fp32);
    TilePool pool = kernel.sbuf_pool("tile", 1, 2, 8, sim::Dtype::fp32);
    kernel.dma_copy(pool.next(), in.row_range(0, 5).fold_rows(2));
  }
  const sim::ValidationResult result = sim::validate_program(bad, trn1);
  CHECK_FALSE(result.valid);
  CHECK(result.rule == "view_fold");
  CHECK(result.error.find("does not divide") != std::string::npos);
}
