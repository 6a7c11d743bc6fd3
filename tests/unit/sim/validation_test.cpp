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

namespace {

// A matmul of stationary [k, m] on partitions from `row`, moving [k, 512],
// result [m, 512] on PSUM partitions from `out_row`, on `tile`.
int tiled_matmul_line = 0;  // the matmul's source line in tiled_matmul
Program tiled_matmul(PeTile tile, int k, int m, int row, int out_row) {
  ProgramBuilder b;
  auto st = b.sbuf("st", 128, 128, Dtype::bf16);
  auto mv = b.sbuf("mv", 128, 512, Dtype::bf16, 256);
  auto p = b.psum("p", 128, 512);
  b.memset(b.all(st), 1.0f);
  b.memset(b.all(mv), 1.0f);
  tiled_matmul_line = __LINE__ + 1;
  b.matmul_on(tile, b.part(p, out_row, out_row + m, 0, 512), b.part(st, row, row + k, 0, m),
              b.part(mv, row, row + k, 0, 512), false);
  return std::move(b.program);
}

SimResult check_invalid_tiled(const std::string& rule, PeTile tile, int k, int m, int row, int out_row) {
  const Program p = tiled_matmul(tile, k, m, row, out_row);
  return check_invalid(p, rule, tiled_matmul_line);
}

SimResult simulate_on(const Program& p, const TargetSpec& t) {
  SimOptions options;
  options.functional = false;
  return simulate(p, t, options);
}

}  // namespace

TEST_CASE("PE tiles: trn1 takes 64-row tiles and refuses 32, trn2 takes 32") {
  const TargetSpec trn2 = autotune::sim::testing::target("trn2");
  const Program half = tiled_matmul(PeTile{64, 64, 0, 128}, 64, 64, 64, 0);
  CHECK(simulate_on(half, trn1()).valid);
  CHECK(simulate_on(half, trn2).valid);
  const Program quarter = tiled_matmul(PeTile{32, 32, 0, 128}, 32, 64, 32, 0);
  const SimResult r = check_invalid(quarter, "pe_tile_size", tiled_matmul_line);
  CHECK(r.error.find("64") != std::string::npos);
  CHECK_MESSAGE(simulate_on(quarter, trn2).valid, simulate_on(quarter, trn2).error);
  // Not a size of the array.
  check_invalid_tiled("pe_tile_size", PeTile{0, 96, 0, 128}, 64, 64, 0, 0);
}

TEST_CASE("PE tiles: a start off its size's multiples or past the array is invalid") {
  check_invalid_tiled("pe_tile_position", PeTile{32, 64, 0, 128}, 64, 64, 32, 0);
  check_invalid_tiled("pe_tile_position", PeTile{128, 64, 0, 128}, 64, 64, 0, 0);
}

TEST_CASE("PE tiles: a stationary operand larger than its tile is invalid") {
  // K = 128 on a 64-row tile.
  check_invalid_tiled("pe_tile_stationary", PeTile{0, 64, 0, 128}, 128, 64, 0, 0);
  // M = 128 on a 64-column tile.
  check_invalid_tiled("pe_tile_stationary", PeTile{0, 128, 0, 64}, 64, 128, 0, 0);
}

TEST_CASE("PE tiles: operands outside the tile's row partitions, results outside its columns, are invalid") {
  // Operands on partitions [0, 64) run through PE rows [64, 128).
  const SimResult r = check_invalid_tiled("pe_tile_partitions", PeTile{64, 64, 0, 128}, 64, 64, 0, 0);
  CHECK(r.error.find("partitions [0, 64)") != std::string::npos);
  // A result on PSUM partitions [0, 64) from PE columns [64, 128).
  check_invalid_tiled("pe_tile_partitions", PeTile{0, 64, 64, 64}, 64, 64, 0, 0);
  // The same on their own tiles are valid.
  CHECK(simulate_on(tiled_matmul(PeTile{64, 64, 0, 128}, 64, 64, 64, 0), trn1()).valid);
  CHECK(simulate_on(tiled_matmul(PeTile{0, 64, 64, 64}, 64, 64, 0, 64), trn1()).valid);
}

TEST_CASE("PE tiles: only a matmul takes one") {
  ProgramBuilder b;
  auto s = b.sbuf("s", 64, 64, Dtype::bf16);
  auto p = b.psum("p", 64, 64, 0, Dtype::bf16);
  b.memset(b.all(s), 1.0f);
  Instruction in;
  in.opcode = Opcode::transpose;
  in.engine = Engine::tensor;
  in.dst = b.all(p);
  in.src[0] = b.all(s);
  in.src_count = 1;
  in.pe_tile = PeTile{0, 64, 0, 64};
  const int line = __LINE__ + 1;
  b.emit(in, std::source_location::current());
  check_invalid(b.program, "pe_tile_opcode", line);
}
