// The fused vector-engine instructions of the kernel API
// (nki.isa.tensor_scalar_reduce, nki.isa.scalar_tensor_tensor): what they
// compute, and that each is one instruction, not two.
#include <doctest/doctest.h>

#include <cmath>

#include "kernels/api/kernel.hpp"
#include "sim/simulator.hpp"
#include "sim/target.hpp"

using namespace autotune;
using namespace autotune::kernels;

namespace {

const sim::TargetSpec& trn2() {
  static const sim::TargetSpec t = sim::load_target("trn2");
  return t;
}

struct Run {
  std::vector<std::vector<float>> outputs;
  sim::SimResult result;
};

// x [4, 8] in, y [4, 8] and r [4, 1] out; `body` computes them on chip.
template <class Body>
Run run(const std::vector<float>& x_values, Body body) {
  sim::Program program;
  Kernel kernel(program);
  const Tensor x = kernel.input("x", 4, 8, Dtype::fp32);
  const Tensor y = kernel.output("y", 4, 8, Dtype::fp32);
  const Tensor r = kernel.output("r", 4, 1, Dtype::fp32);
  auto pool = kernel.sbuf_pool("t", 4, 4, 8, Dtype::fp32);
  auto columns = kernel.sbuf_pool("c", 2, 4, 1, Dtype::fp32);
  const Tensor xs = pool.next(), ys = pool.next(), rs = columns.next();
  kernel.dma_copy(xs, x);
  body(kernel, xs, ys, rs, pool);
  kernel.dma_copy(y, ys);
  kernel.dma_copy(r, rs);
  sim::HostIo io;
  io.inputs = {x_values};
  Run out;
  out.result = sim::simulate(program, trn2(), {}, &io);
  REQUIRE_MESSAGE(out.result.valid, out.result.error);
  out.outputs = io.outputs;
  return out;
}

std::vector<float> ramp() {
  std::vector<float> v(32);
  for (int i = 0; i < 32; ++i) v[i] = static_cast<float>((i * 7) % 11) - 5.0f;
  return v;
}

}  // namespace

TEST_CASE("tensor_scalar_reduce scales and reduces the result in one instruction") {
  const auto x = ramp();
  const Run fused = run(x, [](Kernel& k, const Tensor& xs, const Tensor& ys, const Tensor& rs, TilePool&) {
    k.tensor_scalar_reduce(ys, xs, AluOp::multiply, 0.5f, AluOp::max, rs);
  });
  for (int row = 0; row < 4; ++row) {
    float expected_max = -1e30f;
    for (int c = 0; c < 8; ++c) {
      CHECK(fused.outputs[0][row * 8 + c] == doctest::Approx(0.5f * x[row * 8 + c]));
      expected_max = std::max(expected_max, 0.5f * x[row * 8 + c]);
    }
    CHECK(fused.outputs[1][row] == doctest::Approx(expected_max));
  }
  const Run separate = run(x, [](Kernel& k, const Tensor& xs, const Tensor& ys, const Tensor& rs, TilePool&) {
    k.tensor_scalar(ys, xs, AluOp::multiply, 0.5f);
    k.tensor_reduce(rs, ys, AluOp::max);
  });
  CHECK(fused.outputs == separate.outputs);
  CHECK(fused.result.summary["vector_engine_instruction_count"] == 1);
  CHECK(separate.result.summary["vector_engine_instruction_count"] == 2);
}

TEST_CASE("scalar_tensor_tensor computes (a op0 s) op1 b with a per-partition scalar") {
  const auto x = ramp();
  const Run fused =
      run(x, [](Kernel& k, const Tensor& xs, const Tensor& ys, const Tensor& rs, TilePool& pool) {
        const Tensor b = pool.next();
        k.memset(b, 2.0f);
        k.memset(rs, 3.0f);
        k.scalar_tensor_tensor(ys, xs, AluOp::multiply, rs, AluOp::add, b);
      });
  for (int i = 0; i < 32; ++i) CHECK(fused.outputs[0][i] == doctest::Approx(3.0f * x[i] + 2.0f));
  CHECK(fused.result.summary["vector_engine_instruction_count"] == 3);  // two memsets and the fused op
}

TEST_CASE("a column operand of the wrong shape is a trace error naming the instruction") {
  sim::Program program;
  Kernel kernel(program);
  auto pool = kernel.sbuf_pool("t", 3, 4, 8, Dtype::fp32);
  const Tensor a = pool.next(), b = pool.next(), wide = pool.next();
  kernel.scalar_tensor_tensor(a, a, AluOp::multiply, wide, AluOp::add, b);
  REQUIRE(program.trace_errors().size() == 1);
  CHECK(program.trace_errors()[0].rule == "shape_mismatch");
  CHECK(program.trace_errors()[0].message.find("scalar_tensor_tensor operand") != std::string::npos);
}

TEST_CASE(
    "a matmul asks for a PE tile: the instruction carries it, the simulator runs such matmuls side by side") {
  auto traced = [](bool tiled) {
    sim::Program program;
    Kernel kernel(program);
    auto operands = kernel.sbuf_pool("operands", 1, 128, 64, Dtype::bf16);
    auto moving = kernel.sbuf_pool("moving", 1, 128, 512, Dtype::bf16);
    auto results = kernel.psum_pool("results", 2, 64, 512);
    const Tensor st = operands.next(), mv = moving.next();
    kernel.memset(st, 1.0f);
    kernel.memset(mv, 1.0f);
    for (int half = 0; half < 2; ++half) {
      const int row = 64 * half;
      const PeTile tile = tiled ? PeTile{std::uint8_t(row), 64, 0, 128} : PeTile{};
      kernel.matmul(results.next(), st.slice(row, row + 64, 0, 64), mv.slice(row, row + 64, 0, 512), false,
                    tile);
    }
    return program;
  };
  const sim::Program tiled = traced(true), whole = traced(false);
  std::vector<sim::PeTile> tiles;
  for (const sim::Instruction& in : tiled.instructions())
    if (in.opcode == sim::Opcode::matmul) tiles.push_back(in.pe_tile);
  REQUIRE(tiles.size() == 2);
  CHECK(tiles[0] == sim::PeTile{0, 64, 0, 128});
  CHECK(tiles[1] == sim::PeTile{64, 64, 0, 128});
  CHECK(tiled.content_hash() != whole.content_hash());
  sim::SimOptions options;
  options.functional = false;
  const sim::SimResult a = sim::simulate(tiled, trn2(), options), b = sim::simulate(whole, trn2(), options);
  REQUIRE_MESSAGE(a.valid, a.error);
  REQUIRE_MESSAGE(b.valid, b.error);
  CHECK(a.total_time_s < b.total_time_s);
}

TEST_CASE(
    "the optimizer arithmetic: scaled square and sqrt activations, (x + c) ^ -1 and divide on each engine") {
  std::vector<float> x(32);
  for (int i = 0; i < 32; ++i) x[i] = 0.25f + 0.5f * static_cast<float>(i);
  // sqrt(1e9 x) on the scalar engine, then (. + 1e-5) ^ -1 on the engine under test.
  for (const Engine engine : {Engine::vector, Engine::scalar, Engine::gpsimd}) {
    const Run r =
        run(x, [engine](Kernel& k, const Tensor& xs, const Tensor& ys, const Tensor& rs, TilePool&) {
          k.activation(ys, xs, ActivationFunction::sqrt, 0.0f, 1e9f);
          k.tensor_scalar(ys, ys, AluOp::add, 1e-5f, AluOp::pow, -1.0f, engine);
          k.memset(rs, 0.0f);
        });
    for (int i = 0; i < 32; ++i)
      CHECK(r.outputs[0][i] == doctest::Approx(1.0 / (std::sqrt(1e9 * x[i]) + 1e-5)).epsilon(1e-6));
  }
  // 0.001 x^2 as square(sqrt(0.001) x), and (x * 9) / (x^2) in one scalar_tensor_tensor.
  const Run r = run(x, [](Kernel& k, const Tensor& xs, const Tensor& ys, const Tensor& rs, TilePool& pool) {
    const Tensor sq = pool.next();
    k.activation(sq, xs, ActivationFunction::square, 0.0f, 0.0316227766f);
    k.scalar_tensor_tensor(ys, xs, AluOp::multiply, 9.0f, AluOp::divide, sq);
    k.memset(rs, 0.0f);
  });
  for (int i = 0; i < 32; ++i) CHECK(r.outputs[0][i] == doctest::Approx(9.0 / (0.001 * x[i])).epsilon(1e-5));
}
