// Invalid programs are data: a rule id and one line naming the source line.
#include <doctest/doctest.h>

#include "sim/simulator.hpp"
#include "tests/unit/sim/program_builder.hpp"

using namespace autotune::sim;
using autotune::sim::testing::ProgramBuilder;

namespace {

const TargetSpec& trn1() {
  static const TargetSpec t = autotune::sim::testing::target("trn1");
  return t;
}

SimResult check_invalid(const Program& p, const std::string& rule, int line) {
  SimOptions options;
  options.functional = false;
  const SimResult r = simulate(p, trn1(), options);
  CHECK_FALSE(r.valid);
  CHECK(r.rule == rule);
  const std::string where = "validation_test.cpp:" + std::to_string(line) + ":";
  CHECK_MESSAGE(r.error.find(where) != std::string::npos, r.error);
  CHECK(r.error.find('\n') == std::string::npos);
  CHECK(r.summary["valid"] == false);
  return r;
}

}  // namespace

TEST_CASE("SBUF overflow is reported with the peak and the capacity") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 1024);
  auto big = b.sbuf("big", 128, 1024, Dtype::fp32, 180224 - 2048);  // ends 2 KiB past the usable 176 KiB
  const int line = __LINE__ + 1;
  b.dma(b.all(big), b.all(x));
  const auto r = check_invalid(b.program, "sbuf_overflow", line);
  CHECK(r.error.find("182272") != std::string::npos);
  CHECK(r.error.find("180224") != std::string::npos);
}

TEST_CASE("PSUM overflow counts banks") {
  ProgramBuilder b;
  auto s = b.sbuf("s", 128, 128, Dtype::bf16);
  b.memset(b.all(s), 1.0f);
  auto p = b.psum("p", 128, 512, 8 * 2048);  // a ninth bank
  const int line = __LINE__ + 1;
  b.matmul(b.all(p), b.all(s), b.part(s, 0, 128, 0, 128), false);
  const auto r = check_invalid(b.program, "psum_overflow", line);
  CHECK(r.error.find("9 banks") != std::string::npos);
}

TEST_CASE("a tile over 128 partitions is invalid") {
  ProgramBuilder b;
  auto t = b.sbuf("tall", 129, 16);
  const int line = __LINE__ + 1;
  b.memset(b.all(t), 0.0f);
  check_invalid(b.program, "partition_overflow", line);
}

TEST_CASE("matmul limits: moving free over 512, stationary free over 128, contraction over 128") {
  {
    ProgramBuilder b;
    auto st = b.sbuf("st", 128, 128, Dtype::bf16);
    auto mv = b.sbuf("mv", 128, 1024, Dtype::bf16, 256);
    auto p = b.psum("p", 128, 1024);
    b.memset(b.all(st), 1.0f);
    b.memset(b.all(mv), 1.0f);
    const int line = __LINE__ + 1;
    b.matmul(b.all(p), b.all(st), b.all(mv), false);
    check_invalid(b.program, "matmul_moving_free", line);
  }
  {
    ProgramBuilder b;
    auto st = b.sbuf("st", 128, 256, Dtype::bf16);
    auto mv = b.sbuf("mv", 128, 128, Dtype::bf16, 512);
    auto p = b.psum("p", 256, 128);
    b.memset(b.all(st), 1.0f);
    b.memset(b.all(mv), 1.0f);
    const int line = __LINE__ + 1;
    b.matmul(b.all(p), b.all(st), b.all(mv), false);
    // A contraction or output over 128 partitions is first a tile over 128 partitions.
    check_invalid(b.program, "partition_overflow", line);
  }
  {
    ProgramBuilder b;
    auto st = b.sbuf("st", 128, 256, Dtype::bf16);
    auto mv = b.sbuf("mv", 128, 128, Dtype::bf16, 512);
    auto p = b.psum("p", 128, 128);
    b.memset(b.all(st), 1.0f);
    b.memset(b.all(mv), 1.0f);
    const int line = __LINE__ + 1;
    b.matmul(b.all(p), b.all(st), b.all(mv), false);
    check_invalid(b.program, "matmul_stationary_free", line);
  }
}

TEST_CASE("a matmul output over one PSUM bank is invalid") {
  ProgramBuilder b;
  auto st = b.sbuf("st", 128, 128, Dtype::bf16);
  auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 256);
  auto p = b.psum("p", 128, 1024);  // two banks, the matmul writes across the boundary
  b.memset(b.all(st), 1.0f);
  b.memset(b.all(mv), 1.0f);
  const int line = __LINE__ + 1;
  b.matmul(b.part(p, 0, 128, 256, 768), b.all(st), b.all(mv), false);
  check_invalid(b.program, "psum_bank_overflow", line);
}

TEST_CASE("reading a region nothing wrote is invalid, HBM inputs count as written") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 512);
  auto t = b.sbuf("t", 128, 512);
  auto u = b.sbuf("u", 128, 512, Dtype::fp32, 2048);
  b.dma(b.part(t, 0, 128, 0, 256), b.part(x, 0, 128, 0, 256));
  b.copy(b.part(u, 0, 128, 0, 256), b.part(t, 0, 128, 0, 256));  // fine: written
  b.dma(b.part(t, 0, 64, 256, 512), b.part(x, 0, 64, 256, 512));
  b.copy(b.part(u, 0, 64, 0, 512), b.part(t, 0, 64, 0, 512));  // fine: two pieces cover it
  const int line = __LINE__ + 1;
  b.copy(b.all(u), b.all(t));  // rows 64..128 of the right half were never written
  const auto r = check_invalid(b.program, "read_unwritten", line);
  CHECK(r.error.find("'t'") != std::string::npos);
}

TEST_CASE("an accumulating matmul into a fresh PSUM tile reads unwritten data") {
  ProgramBuilder b;
  auto s = b.sbuf("s", 128, 128, Dtype::bf16);
  auto p = b.psum("p", 128, 128);
  b.memset(b.all(s), 1.0f);
  const int line = __LINE__ + 1;
  b.matmul(b.all(p), b.all(s), b.all(s), true);
  const auto r = check_invalid(b.program, "read_unwritten", line);
  CHECK(r.error.find("accumulate") != std::string::npos);
}

TEST_CASE("matmul writes fp32 PSUM") {
  ProgramBuilder b;
  auto s = b.sbuf("s", 128, 128, Dtype::bf16);
  auto p = b.psum("p", 128, 128, 0, Dtype::bf16);
  b.memset(b.all(s), 1.0f);
  const int line = __LINE__ + 1;
  b.matmul(b.all(p), b.all(s), b.all(s), false);
  check_invalid(b.program, "matmul_psum_dtype", line);
}

TEST_CASE("the first trace error recorded by the kernel API is reported") {
  ProgramBuilder b;
  auto t = b.sbuf("t", 128, 16);
  b.memset(b.all(t), 0.0f);
  const std::uint32_t loc = b.program.intern_location(std::source_location::current());
  const int line = __LINE__ - 1;
  b.program.add_trace_error({"shape_mismatch", "dma_copy of [1, 2] into [2, 1]", loc});
  b.program.add_trace_error({"view_out_of_bounds", "later", loc});
  const auto r = check_invalid(b.program, "shape_mismatch", line);
  CHECK(r.error.find("dma_copy of [1, 2] into [2, 1]") != std::string::npos);
}

TEST_CASE("a valid program passes and reports its SBUF peak") {
  ProgramBuilder b;
  auto x = b.input("x", 128, 512);
  auto t = b.sbuf("t", 128, 512, Dtype::fp32, 1024);
  b.dma(b.all(t), b.all(x));
  SimOptions options;
  options.functional = false;
  const auto r = simulate(b.program, trn1(), options);
  CHECK(r.valid);
  CHECK(r.rule.empty());
  CHECK(r.summary["sbuf_peak_bytes_per_partition"].get<std::int64_t>() == 1024 + 2048);
}
