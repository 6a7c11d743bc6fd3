#pragma once
// Element-wise kernels of a transformer layer over [rows, cols]:
//   add:      out = a + b               (the residual add)
//   silu_mul: out = silu(a) * b         (the gated MLP: silu(gate) * up,
//                                        silu(x) = x * sigmoid(x))
//   silu:     out = silu(x)             (one input; NKIBench's silu task)
// Rows map to partitions. The families share the structures below; the
// operation decides which engines do what: add is one vector (or GpSimd)
// instruction per tile, silu_mul an activation on the scalar engine then a
// multiply on the vector engine or GpSimd; silu either one activation on
// the scalar engine or a sigmoid there and the product with x on the vector
// engine or GpSimd. The naive silu computes x / (1 + exp(-x)) in four
// instructions (exp on the scalar engine, then add, reciprocal and multiply
// on the vector engine), the structure of NKIBench's starting kernel.
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct ElementwiseShape {
  int rows = 0, cols = 0;
};

enum class ElementwiseOp { add, silu_mul, silu };

// The names of the operation's inputs in order (one for silu, else two).
inline std::vector<const char*> elementwise_inputs(ElementwiseOp op) {
  switch (op) {
    case ElementwiseOp::add:
      return {"a", "b"};
    case ElementwiseOp::silu_mul:
      return {"gate", "up"};
    case ElementwiseOp::silu:
      return {"x"};
  }
  return {};
}

// Whole rows, one row tile at a time, single buffers: each tile's loads,
// compute and store wait for the previous tile's.
struct ElementwiseNaiveParams {};

// Column tiles of [partitions, unroll_factor * tile_size] (unroll_factor
// consecutive rows per partition), streamed through rotating buffers so
// loads, compute and stores overlap.
struct ElementwiseTiledParams {
  int tile_size = 4096;    // columns per tile, from each of the rows a partition takes
  int pipeline_depth = 2;  // rotating buffers per stream, in steps
  int unroll_factor = 1;   // rows per partition per tile (row tiles folded into one)
  // Which engine does the vector-class instruction (add; silu_mul's
  // multiply): 0 the vector engine, 1 GpSimd, 2 alternate tile by tile.
  // silu: 0 one silu activation on the scalar engine; 1 (2) a sigmoid
  // there and the product with x on the vector engine (GpSimd).
  int engine = 0;
};

namespace detail {

// out = op(a, b) on SBUF tiles; `work` holds silu(a) for silu_mul, sigmoid(a) for silu.
inline void elementwise_compute(Kernel& kernel, ElementwiseOp op, const Tensor& out, const Tensor& a,
                                const Tensor& b, const Tensor& work, Engine engine, int choice) {
  if (op == ElementwiseOp::silu) {
    if (choice == 0) {
      kernel.activation(out, a, ActivationFunction::silu);
      return;
    }
    kernel.activation(work, a, ActivationFunction::sigmoid);
    kernel.tensor_tensor(out, work, a, AluOp::multiply, choice == 2 ? Engine::gpsimd : Engine::vector);
    return;
  }
  if (op == ElementwiseOp::add) {
    kernel.tensor_tensor(out, a, b, AluOp::add, engine);
    return;
  }
  kernel.activation(work, a, ActivationFunction::silu);
  kernel.tensor_tensor(out, work, b, AluOp::multiply, engine);
}

// out = x / (1 + exp(-x)) in four instructions, as NKIBench's starting
// kernels compute silu: exp(-x) on the scalar engine, then the add, the
// reciprocal and the product with x on the vector engine (`work` holds the
// intermediate).
inline void silu_by_exp(Kernel& kernel, const Tensor& out, const Tensor& x, const Tensor& work) {
  kernel.activation(work, x, ActivationFunction::exp, 0.0f, -1.0f);
  kernel.tensor_scalar(work, work, AluOp::add, 1.0f);
  kernel.reciprocal(work, work);
  kernel.tensor_tensor(out, x, work, AluOp::multiply);
}

}  // namespace detail

template <Dtype D>
void elementwise_naive(Kernel& kernel, ElementwiseOp op, const ElementwiseShape& shape,
                       const ElementwiseNaiveParams&) {
  const auto names = elementwise_inputs(op);
  const bool two = names.size() == 2;
  const bool work_needed = op != ElementwiseOp::add;
  Tensor a = kernel.input(names[0], shape.rows, shape.cols, D);
  Tensor b = two ? kernel.input(names[1], shape.rows, shape.cols, D) : a;
  Tensor out = kernel.output("out", shape.rows, shape.cols, D);
  const int P = kernel.limits().partitions;
  TilePool a_tiles = kernel.sbuf_pool("a_tile", 1, P, shape.cols, D);
  TilePool b_tiles = kernel.sbuf_pool("b_tile", 1, P, two ? shape.cols : 1, D);
  TilePool work_tiles = kernel.sbuf_pool("work", 1, P, work_needed ? shape.cols : 1, Dtype::fp32);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", 1, P, shape.cols, D);
  for (TileSpan r : tiles(shape.rows, P)) {
    Tensor at = a_tiles.next().row_range(0, r.size);
    Tensor bt = two ? b_tiles.next().row_range(0, r.size) : at;
    kernel.dma_copy(at, a.row_range(r.begin, r.end()));
    if (two) kernel.dma_copy(bt, b.row_range(r.begin, r.end()));
    Tensor work = work_tiles.next().row_range(0, r.size);
    Tensor ot = out_tiles.next().row_range(0, r.size);
    if (op == ElementwiseOp::silu) {
      detail::silu_by_exp(kernel, ot, at, work);
    } else {
      detail::elementwise_compute(kernel, op, ot, at, bt, work, Engine::vector, 0);
    }
    kernel.dma_copy(out.row_range(r.begin, r.end()), ot);
  }
}

template <Dtype D>
void elementwise_tiled(Kernel& kernel, ElementwiseOp op, const ElementwiseShape& shape,
                       const ElementwiseTiledParams& p) {
  const auto names = elementwise_inputs(op);
  const bool two = names.size() == 2;
  // silu with one activation needs no work tile.
  const bool work_needed = op == ElementwiseOp::silu_mul || (op == ElementwiseOp::silu && p.engine != 0);
  Tensor a = kernel.input(names[0], shape.rows, shape.cols, D);
  Tensor b = two ? kernel.input(names[1], shape.rows, shape.cols, D) : a;
  Tensor out = kernel.output("out", shape.rows, shape.cols, D);
  const int P = kernel.limits().partitions;
  const int width = p.unroll_factor * p.tile_size;
  TilePool a_tiles = kernel.sbuf_pool("a_tile", p.pipeline_depth, P, width, D);
  TilePool b_tiles = kernel.sbuf_pool("b_tile", two ? p.pipeline_depth : 1, P, two ? width : 1, D);
  TilePool work_tiles =
      kernel.sbuf_pool("work", work_needed ? 2 : 1, P, work_needed ? width : 1, Dtype::fp32);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", p.pipeline_depth, P, width, D);
  int step = 0;
  for (const FoldedRows& g : folded_row_groups(shape.rows, P, p.unroll_factor)) {
    for (TileSpan c : tiles(shape.cols, p.tile_size)) {
      const Tensor a_source = folded_block(a, g, c);
      const int cols = a_source.cols();
      Tensor at = a_tiles.next().slice(0, g.partitions, 0, cols);
      Tensor bt = at;
      kernel.dma_copy(at, a_source);
      if (two) {
        bt = b_tiles.next().slice(0, g.partitions, 0, cols);
        kernel.dma_copy(bt, folded_block(b, g, c));
      }
      Tensor work = work_tiles.next().slice(0, g.partitions, 0, work_needed ? cols : 1);
      Tensor ot = out_tiles.next().slice(0, g.partitions, 0, cols);
      detail::elementwise_compute(kernel, op, ot, at, bt, work, alternating_vector_engine(p.engine, step++),
                                  p.engine);
      kernel.dma_copy(folded_block(out, g, c), ot);
    }
  }
}

// The templates `autotune export` instantiates, one per family.
template <Dtype D>
void add_naive(Kernel& kernel, const ElementwiseShape& shape, const ElementwiseNaiveParams& p) {
  elementwise_naive<D>(kernel, ElementwiseOp::add, shape, p);
}
template <Dtype D>
void add_tiled(Kernel& kernel, const ElementwiseShape& shape, const ElementwiseTiledParams& p) {
  elementwise_tiled<D>(kernel, ElementwiseOp::add, shape, p);
}
template <Dtype D>
void silu_mul_naive(Kernel& kernel, const ElementwiseShape& shape, const ElementwiseNaiveParams& p) {
  elementwise_naive<D>(kernel, ElementwiseOp::silu_mul, shape, p);
}
template <Dtype D>
void silu_mul_tiled(Kernel& kernel, const ElementwiseShape& shape, const ElementwiseTiledParams& p) {
  elementwise_tiled<D>(kernel, ElementwiseOp::silu_mul, shape, p);
}

template <Dtype D>
void silu_naive(Kernel& kernel, const ElementwiseShape& shape, const ElementwiseNaiveParams& p) {
  elementwise_naive<D>(kernel, ElementwiseOp::silu, shape, p);
}
template <Dtype D>
void silu_tiled(Kernel& kernel, const ElementwiseShape& shape, const ElementwiseTiledParams& p) {
  elementwise_tiled<D>(kernel, ElementwiseOp::silu, shape, p);
}

}  // namespace autotune::kernels
