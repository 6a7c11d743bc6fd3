// The functional executor against hand-computed values.
#include <doctest/doctest.h>

#include <cmath>

#include "core/error.hpp"
#include "sim/simulator.hpp"
#include "tests/unit/sim/program_builder.hpp"

using namespace autotune::sim;
using autotune::sim::testing::ProgramBuilder;

namespace {

const TargetSpec& trn1() {
  static const TargetSpec t = autotune::sim::testing::target("trn1");
  return t;
}

std::vector<std::vector<float>> run(const Program& p, std::vector<std::vector<float>> inputs) {
  HostIo io;
  io.inputs = std::move(inputs);
  const SimResult r = simulate(p, trn1(), SimOptions{}, &io);
  REQUIRE_MESSAGE(r.valid, r.error);
  return io.outputs;
}

std::vector<float> iota_values(int n, float scale = 1.0f, float offset = 0.0f) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = offset + scale * i;
  return v;
}

}  // namespace

TEST_CASE("dma copies, transposes, and rounds to the destination dtype") {
  ProgramBuilder b;
  auto x = b.input("x", 2, 3);
  auto o = b.output("o", 3, 2);
  auto r = b.output("r", 1, 1, Dtype::bf16);
  auto t = b.sbuf("t", 3, 2);
  auto one = b.sbuf("one", 1, 1, Dtype::bf16, 64);
  b.dma(b.all(t), b.all(x), true);
  b.dma(b.all(o), b.all(t));
  b.dma(b.all(one), b.part(x, 0, 1, 0, 1));
  b.dma(b.all(r), b.all(one));
  const auto out = run(b.program, {{1.0f + 1.0f / 512, 2, 3, 4, 5, 6}});
  CHECK(out[0] == std::vector<float>{1.0f + 1.0f / 512, 4, 2, 5, 3, 6});
  CHECK(out[1][0] == 1.0f);  // 1 + 2^-9 rounds to 1 in bf16 (8 significant bits)
}

TEST_CASE("a transposing copy of several blocks transposes each into its own columns") {
  // x [2, 3 * 2]: three [2, 2] blocks; the result [2, 3 * 2] holds block j^T in columns 2j, 2j + 1.
  ProgramBuilder b;
  auto x = b.input("x", 2, 6);
  auto o = b.output("o", 2, 6);
  auto t = b.sbuf("t", 2, 6);
  b.dma(b.all(t), b.all(x), true);
  b.dma(b.all(o), b.all(t));
  const auto out = run(b.program, {{0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15}});
  CHECK(out[0] == std::vector<float>{0, 10, 2, 12, 4, 14, 1, 11, 3, 13, 5, 15});
}

TEST_CASE("matmul sums K products, accumulates in fp32 PSUM") {
  ProgramBuilder b;
  // stationary [K=2, M=2], moving [K=2, N=3]
  auto a = b.input("a", 2, 2);
  auto m = b.input("m", 2, 3);
  auto o = b.output("o", 2, 3);
  auto st = b.sbuf("st", 2, 2, Dtype::bf16);
  auto mv = b.sbuf("mv", 2, 3, Dtype::bf16, 64);
  auto ps = b.psum("ps", 2, 3);
  auto res = b.sbuf("res", 2, 3, Dtype::fp32, 128);
  b.dma(b.all(st), b.all(a));
  b.dma(b.all(mv), b.all(m));
  b.matmul(b.all(ps), b.all(st), b.all(mv), false);
  b.matmul(b.all(ps), b.all(st), b.all(mv), true);  // accumulates a second time
  b.copy(b.all(res), b.all(ps));
  b.dma(b.all(o), b.all(res));
  // a = [[1,2],[3,4]] (K x M), m = [[1,0,1],[0,1,2]] (K x N): o[i][j] = 2 * sum_k a[k][i] m[k][j]
  const auto out = run(b.program, {{1, 2, 3, 4}, {1, 0, 1, 0, 1, 2}});
  CHECK(out[0] == std::vector<float>{2, 6, 14, 4, 8, 20});
}

TEST_CASE("fp32 PSUM keeps what bf16 would lose") {
  ProgramBuilder b;
  auto a = b.input("a", 1, 1);
  auto m = b.input("m", 1, 1);
  auto o = b.output("o", 1, 1);
  auto o16 = b.output("o16", 1, 1, Dtype::bf16);
  auto st = b.sbuf("st", 1, 1, Dtype::bf16);
  auto mv = b.sbuf("mv", 1, 1, Dtype::bf16, 64);
  auto ps = b.psum("ps", 1, 1);
  auto res = b.sbuf("res", 1, 1, Dtype::fp32, 128);
  b.dma(b.all(st), b.all(a));
  b.dma(b.all(mv), b.all(m));
  b.matmul(b.all(ps), b.all(st), b.all(mv), false);
  for (int i = 0; i < 3; ++i) b.matmul(b.all(ps), b.all(st), b.all(mv), true);
  b.copy(b.all(res), b.all(ps));
  b.dma(b.all(o), b.all(res));
  b.dma(b.all(o16), b.all(res));
  // 4 * (1 + 2^-7)^2 = 4 * (1 + 2^-6 + 2^-14): fp32 keeps the 2^-14 term, bf16 drops it.
  const float x = 1.0f + 1.0f / 128;
  const auto out = run(b.program, {{x}, {x}});
  CHECK(out[0][0] == 4.0f * x * x);
  CHECK(out[1][0] == round_to_dtype(4.0f * x * x, Dtype::bf16));
  CHECK(out[1][0] != out[0][0]);
}

TEST_CASE("activation with scale, per-partition bias and row sum") {
  ProgramBuilder b;
  auto x = b.input("x", 2, 2);
  auto bias_in = b.input("bias", 2, 1);
  auto o = b.output("o", 2, 2);
  auto sums = b.output("sums", 2, 1);
  auto t = b.sbuf("t", 2, 2);
  auto bias = b.sbuf("bias_t", 2, 1, Dtype::fp32, 64);
  auto y = b.sbuf("y", 2, 2, Dtype::fp32, 128);
  auto s = b.sbuf("s", 2, 1, Dtype::fp32, 192);
  b.dma(b.all(t), b.all(x));
  b.dma(b.all(bias), b.all(bias_in));
  ScalarOperand per_row;
  per_row.per_partition = b.all(bias);
  b.activation(b.all(y), b.all(t), ActivationFunction::exp, 0.5f, per_row, b.all(s));
  b.dma(b.all(o), b.all(y));
  b.dma(b.all(sums), b.all(s));
  const auto out = run(b.program, {{0, 2, 4, 6}, {1, -1}});
  CHECK(out[0][0] == doctest::Approx(std::exp(1.0)));
  CHECK(out[0][1] == doctest::Approx(std::exp(2.0)));
  CHECK(out[0][2] == doctest::Approx(std::exp(1.0)));
  CHECK(out[0][3] == doctest::Approx(std::exp(2.0)));
  CHECK(out[1][0] == doctest::Approx(std::exp(1.0) + std::exp(2.0)));
}

TEST_CASE("activation with a per-partition scale: exp(x * a[p]) as mamba's exp(delta * A)") {
  ProgramBuilder b;
  auto x = b.input("x", 2, 2);
  auto a_in = b.input("a", 2, 1);
  auto o = b.output("o", 2, 2);
  auto t = b.sbuf("t", 2, 2);
  auto a = b.sbuf("a_t", 2, 1, Dtype::fp32, 64);
  auto y = b.sbuf("y", 2, 2, Dtype::fp32, 128);
  b.dma(b.all(t), b.all(x));
  b.dma(b.all(a), b.all(a_in));
  Instruction in;
  in.opcode = Opcode::activation;
  in.engine = Engine::scalar;
  in.dst = b.all(y);
  in.src[0] = b.all(t);
  in.src_count = 1;
  in.function = ActivationFunction::exp;
  in.scale = 3.0f;  // ignored: the per-partition scale replaces it
  in.operand1.per_partition = b.all(a);
  b.emit(in, std::source_location::current());
  b.dma(b.all(o), b.all(y));
  const auto out = run(b.program, {{1, 2, 3, 4}, {0.5f, -1.0f}});
  CHECK(out[0][0] == doctest::Approx(std::exp(0.5)));
  CHECK(out[0][1] == doctest::Approx(std::exp(1.0)));
  CHECK(out[0][2] == doctest::Approx(std::exp(-3.0)));
  CHECK(out[0][3] == doctest::Approx(std::exp(-4.0)));
}

TEST_CASE("tensor_tensor_scan: h[i] = a[i] * h[i-1] + b[i] along each partition, from an initial column") {
  ProgramBuilder b;
  auto a_in = b.input("a", 2, 4);
  auto b_in = b.input("b", 2, 4);
  auto init_in = b.input("h0", 2, 1);
  auto o = b.output("o", 2, 4);
  auto o2 = b.output("o2", 2, 4);
  auto a = b.sbuf("a_t", 2, 4);
  auto bt = b.sbuf("b_t", 2, 4, Dtype::fp32, 64);
  auto h0 = b.sbuf("h0_t", 2, 1, Dtype::fp32, 128);
  auto h = b.sbuf("h", 2, 4, Dtype::fp32, 192);
  auto s = b.sbuf("s", 2, 4, Dtype::fp32, 256);
  b.dma(b.all(a), b.all(a_in));
  b.dma(b.all(bt), b.all(b_in));
  b.dma(b.all(h0), b.all(init_in));
  ScalarOperand initial;
  initial.per_partition = b.all(h0);
  b.scan(b.all(h), b.all(a), b.all(bt), initial);
  // A running sum: (b[i] add h[i-1]) add 0 with an immediate start of 10, over the first two columns,
  // then the next two columns carried on from the last one (a scan split in chunks).
  ScalarOperand ten;
  ten.immediate = 10.0f;
  b.memset(b.all(s), 0.0f);
  b.scan(b.part(s, 0, 2, 0, 2), b.part(bt, 0, 2, 0, 2), b.part(bt, 0, 2, 0, 2), ten, AluOp::add,
         AluOp::bypass);
  ScalarOperand carried;
  carried.per_partition = b.part(s, 0, 2, 1, 2);
  b.scan(b.part(s, 0, 2, 2, 4), b.part(bt, 0, 2, 2, 4), b.part(bt, 0, 2, 2, 4), carried, AluOp::add,
         AluOp::bypass);
  b.dma(b.all(o), b.all(h));
  b.dma(b.all(o2), b.all(s));
  const auto out = run(b.program, {{0.5f, 2, -1, 0, 1, 1, 1, 1}, {1, 2, 3, 4, 1, 2, 3, 4}, {4, -1}});
  // Row 0 from 4: 0.5*4+1 = 3, 2*3+2 = 8, -1*8+3 = -5, 0*-5+4 = 4. Row 1 from -1: 0, 2, 5, 9.
  const std::vector<float> want = {3, 8, -5, 4, 0, 2, 5, 9};
  for (std::size_t i = 0; i < want.size(); ++i) CHECK(out[0][i] == doctest::Approx(want[i]));
  // Row 0: 11, 13, 16, 20; row 1: 11, 13, 16, 20.
  const std::vector<float> sums = {11, 13, 16, 20, 11, 13, 16, 20};
  for (std::size_t i = 0; i < sums.size(); ++i) CHECK(out[1][i] == doctest::Approx(sums[i]));
}

TEST_CASE("tensor_tensor_scan keeps its state in fp32 and rounds only what it writes") {
  // bf16 output, a state that grows by 1/256 each step from 1: bf16 cannot hold 1 + 1/256 (8 bits of
  // mantissa), so a state re-read from a bf16 result would never move; the engine's fp32 state does.
  ProgramBuilder b;
  auto o = b.output("o", 1, 256, Dtype::fp32);
  auto ones = b.sbuf("ones", 1, 256);
  auto inc = b.sbuf("inc", 1, 256, Dtype::fp32, 1024);
  auto h = b.sbuf("h", 1, 256, Dtype::bf16, 2048);
  auto wide = b.sbuf("wide", 1, 256, Dtype::fp32, 4096);
  b.memset(b.all(ones), 1.0f);
  b.memset(b.all(inc), 1.0f / 256);
  ScalarOperand one;
  one.immediate = 1.0f;
  b.scan(b.all(h), b.all(ones), b.all(inc), one);
  b.copy(b.all(wide), b.all(h));
  b.dma(b.all(o), b.all(wide));
  const auto out = run(b.program, {});
  CHECK(out[0][255] == doctest::Approx(2.0));
}

TEST_CASE("tensor_tensor, tensor_scalar, reduce, reciprocal, memset, iota, affine_select") {
  ProgramBuilder b;
  auto x = b.input("x", 2, 3);
  auto outs = std::vector<BufferId>{b.output("tt", 2, 3),  b.output("ts", 2, 3),  b.output("red", 2, 1),
                                    b.output("rec", 2, 3), b.output("mem", 2, 3), b.output("iota", 2, 3),
                                    b.output("sel", 2, 3)};
  auto t = b.sbuf("t", 2, 3);
  std::vector<BufferId> tiles;
  for (int i = 0; i < 7; ++i)
    tiles.push_back(b.sbuf("r" + std::to_string(i), 2, i == 2 ? 1 : 3, Dtype::fp32, 64 * (i + 1)));
  b.dma(b.all(t), b.all(x));
  b.tensor_tensor(b.all(tiles[0]), b.all(t), b.all(t), AluOp::multiply);
  ScalarOperand two{2.0f, std::nullopt}, one{1.0f, std::nullopt};
  b.tensor_scalar(b.all(tiles[1]), b.all(t), AluOp::subtract, one, AluOp::multiply, two);
  b.reduce(b.all(tiles[2]), b.all(t), AluOp::max);
  b.unary(Opcode::reciprocal, Engine::vector, b.all(tiles[3]), b.all(t));
  b.memset(b.all(tiles[4]), 7.0f);
  b.iota(b.all(tiles[5]), 10.0f, 100, 1);
  b.affine_select(b.all(tiles[6]), b.all(t), -1.0f, 1, 0, -5.0f);  // keep rows p >= 1
  for (int i = 0; i < 7; ++i) b.dma(b.all(outs[i]), b.all(tiles[i]));
  const auto out = run(b.program, {{1, 2, 4, -1, 0.5f, 8}});
  CHECK(out[0] == std::vector<float>{1, 4, 16, 1, 0.25f, 64});
  CHECK(out[1] == std::vector<float>{0, 2, 6, -4, -1, 14});
  CHECK(out[2] == std::vector<float>{4, 8});
  CHECK(out[3] == std::vector<float>{1, 0.5f, 0.25f, -1, 2, 0.125f});
  CHECK(out[4] == std::vector<float>(6, 7.0f));
  CHECK(out[5] == std::vector<float>{10, 11, 12, 110, 111, 112});
  CHECK(out[6] == std::vector<float>{-5, -5, -5, -1, 0.5f, 8});
}

TEST_CASE("transpose on the tensor engine") {
  ProgramBuilder b;
  auto x = b.input("x", 2, 3);
  auto o = b.output("o", 3, 2);
  auto t = b.sbuf("t", 2, 3);
  auto p = b.psum("p", 3, 2);
  auto r = b.sbuf("r", 3, 2, Dtype::fp32, 64);
  b.dma(b.all(t), b.all(x));
  b.transpose(b.all(p), b.all(t));
  b.copy(b.all(r), b.all(p));
  b.dma(b.all(o), b.all(r));
  const auto out = run(b.program, {iota_values(6)});
  CHECK(out[0] == std::vector<float>{0, 3, 1, 4, 2, 5});
}

TEST_CASE("outputs start poisoned with NaN: an element nobody wrote stays NaN") {
  ProgramBuilder b;
  auto x = b.input("x", 2, 2);
  auto o = b.output("o", 2, 2);
  auto t = b.sbuf("t", 2, 2);
  b.dma(b.all(t), b.all(x));
  b.dma(b.part(o, 0, 1, 0, 2), b.part(t, 0, 1, 0, 2));  // only the first row
  const auto out = run(b.program, {{1, 2, 3, 4}});
  CHECK(out[0][0] == 1);
  CHECK(out[0][1] == 2);
  CHECK(std::isnan(out[0][2]));
  CHECK(std::isnan(out[0][3]));
}

TEST_CASE("inputs of the wrong size are misuse") {
  ProgramBuilder b;
  auto x = b.input("x", 2, 2);
  auto o = b.output("o", 2, 2);
  auto t = b.sbuf("t", 2, 2);
  b.dma(b.all(t), b.all(x));
  b.dma(b.all(o), b.all(t));
  HostIo io;
  io.inputs = {{1, 2, 3}};
  CHECK_THROWS_AS(simulate(b.program, trn1(), SimOptions{}, &io), autotune::UserError);
}

TEST_CASE("reused on-chip addresses do not leak values between buffers") {
  ProgramBuilder b;
  auto x = b.input("x", 1, 2);
  auto y = b.input("y", 1, 2);
  auto o = b.output("o", 2, 2);
  auto t0 = b.sbuf("t#0", 1, 2);
  b.dma(b.all(t0), b.all(x));
  b.dma(b.part(o, 0, 1, 0, 2), b.all(t0));
  b.program.release_buffer(t0);
  auto t1 = b.sbuf("t#1", 1, 2);  // same address
  b.dma(b.all(t1), b.all(y));
  b.dma(b.part(o, 1, 2, 0, 2), b.all(t1));
  const auto out = run(b.program, {{1, 2}, {3, 4}});
  CHECK(out[0] == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("matmuls on PE tiles compute what the whole array does") {
  // Two products of K = 64 side by side on the two row tiles (operands on
  // partitions [0, 64) and [64, 128)), and a third on a column tile writing
  // PSUM partitions [64, 128); the same program on the whole array.
  auto run_with = [](bool tiled) {
    ProgramBuilder b;
    auto a = b.input("a", 128, 128);
    auto m = b.input("m", 128, 16);
    auto o = b.output("o", 128, 48);
    auto st = b.sbuf("st", 128, 128, Dtype::bf16);
    auto mv = b.sbuf("mv", 128, 16, Dtype::bf16, 256);
    auto ps = b.psum("ps", 128, 48);
    auto res = b.sbuf("res", 128, 48, Dtype::fp32, 512);
    b.dma(b.all(st), b.all(a));
    b.dma(b.all(mv), b.all(m));
    auto tile = [&](PeTile t) { return tiled ? t : PeTile{}; };
    b.matmul_on(tile({0, 64, 0, 128}), b.part(ps, 0, 64, 0, 16), b.part(st, 0, 64, 0, 64),
                b.part(mv, 0, 64, 0, 16), false);
    b.matmul_on(tile({64, 64, 0, 128}), b.part(ps, 0, 64, 16, 32), b.part(st, 64, 128, 0, 64),
                b.part(mv, 64, 128, 0, 16), false);
    b.matmul_on(tile({0, 128, 64, 64}), b.part(ps, 64, 128, 32, 48), b.part(st, 0, 128, 64, 128), b.all(mv),
                false);
    b.memset(b.part(ps, 64, 128, 0, 32), 0.0f);
    b.memset(b.part(ps, 0, 64, 32, 48), 0.0f);
    b.copy(b.all(res), b.all(ps));
    b.dma(b.all(o), b.all(res));
    std::vector<float> av(128 * 128), mvv(128 * 16);
    for (int i = 0; i < 128 * 128; ++i) av[i] = float((i * 7) % 13) - 6;
    for (int i = 0; i < 128 * 16; ++i) mvv[i] = float((i * 5) % 11) - 5;
    return std::pair{run(b.program, {av, mvv})[0], std::pair{av, mvv}};
  };
  const auto [tiled, inputs] = run_with(true);
  const auto [whole, unused] = run_with(false);
  CHECK(tiled == whole);
  const auto& [av, mvv] = inputs;
  // o[i][16 + j] = sum_{k < 64} a[64 + k][i] m[64 + k][j] for i < 64.
  for (int i : {0, 17, 63})
    for (int j : {0, 9, 15}) {
      double expect = 0;
      for (int k = 0; k < 64; ++k) expect += av[(64 + k) * 128 + i] * mvv[(64 + k) * 16 + j];
      CHECK(tiled[i * 48 + 16 + j] == doctest::Approx(expect));
    }
}
