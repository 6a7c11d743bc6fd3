#pragma once
// Two-input element-wise kernels of a transformer layer over [rows, cols]:
//   add:      out = a + b               (the residual add)
//   silu_mul: out = silu(a) * b         (the gated MLP: silu(gate) * up,
//                                        silu(x) = x * sigmoid(x))
// Rows map to partitions. Both families share the structures below; the
// operation decides which engines do what: add is one vector (or GpSimd)
// instruction per tile, silu_mul an activation on the scalar engine then a
// multiply on the vector engine or GpSimd.
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct ElementwiseShape {
  int rows = 0, cols = 0;
};

enum class ElementwiseOp { add, silu_mul };

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
  int engine = 0;
};

namespace detail {

inline Engine elementwise_engine(int choice, int step) {
  if (choice == 1) return Engine::gpsimd;
  if (choice == 2) return step % 2 == 0 ? Engine::vector : Engine::gpsimd;
  return Engine::vector;
}

// out = op(a, b) on SBUF tiles; `work` holds silu(a) for silu_mul.
inline void elementwise_compute(Kernel& kernel, ElementwiseOp op, const Tensor& out, const Tensor& a,
                                const Tensor& b, const Tensor& work, Engine engine) {
  if (op == ElementwiseOp::add) {
    kernel.tensor_tensor(out, a, b, AluOp::add, engine);
    return;
  }
  kernel.activation(work, a, ActivationFunction::silu);
  kernel.tensor_tensor(out, work, b, AluOp::multiply, engine);
}

}  // namespace detail

template <Dtype D>
void elementwise_naive(Kernel& kernel, ElementwiseOp op, const ElementwiseShape& shape,
                       const ElementwiseNaiveParams&) {
  const bool silu = op == ElementwiseOp::silu_mul;
  Tensor a = kernel.input(silu ? "gate" : "a", shape.rows, shape.cols, D);
  Tensor b = kernel.input(silu ? "up" : "b", shape.rows, shape.cols, D);
  Tensor out = kernel.output("out", shape.rows, shape.cols, D);
  const int P = kernel.limits().partitions;
  TilePool a_tiles = kernel.sbuf_pool("a_tile", 1, P, shape.cols, D);
  TilePool b_tiles = kernel.sbuf_pool("b_tile", 1, P, shape.cols, D);
  TilePool work_tiles = kernel.sbuf_pool("work", 1, P, silu ? shape.cols : 1, Dtype::fp32);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", 1, P, shape.cols, D);
  for (TileSpan r : tiles(shape.rows, P)) {
    Tensor at = a_tiles.next().row_range(0, r.size);
    Tensor bt = b_tiles.next().row_range(0, r.size);
    kernel.dma_copy(at, a.row_range(r.begin, r.end()));
    kernel.dma_copy(bt, b.row_range(r.begin, r.end()));
    Tensor work = work_tiles.next().row_range(0, r.size);
    Tensor ot = out_tiles.next().row_range(0, r.size);
    detail::elementwise_compute(kernel, op, ot, at, bt, work, Engine::vector);
    kernel.dma_copy(out.row_range(r.begin, r.end()), ot);
  }
}

template <Dtype D>
void elementwise_tiled(Kernel& kernel, ElementwiseOp op, const ElementwiseShape& shape,
                       const ElementwiseTiledParams& p) {
  const bool silu = op == ElementwiseOp::silu_mul;
  Tensor a = kernel.input(silu ? "gate" : "a", shape.rows, shape.cols, D);
  Tensor b = kernel.input(silu ? "up" : "b", shape.rows, shape.cols, D);
  Tensor out = kernel.output("out", shape.rows, shape.cols, D);
  const int P = kernel.limits().partitions;
  const int width = p.unroll_factor * p.tile_size;
  TilePool a_tiles = kernel.sbuf_pool("a_tile", p.pipeline_depth, P, width, D);
  TilePool b_tiles = kernel.sbuf_pool("b_tile", p.pipeline_depth, P, width, D);
  TilePool work_tiles = kernel.sbuf_pool("work", silu ? 2 : 1, P, silu ? width : 1, Dtype::fp32);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", p.pipeline_depth, P, width, D);
  int step = 0;
  for (const FoldedRows& g : folded_row_groups(shape.rows, P, p.unroll_factor)) {
    for (TileSpan c : tiles(shape.cols, p.tile_size)) {
      const Tensor a_source = folded_block(a, g, c);
      const Tensor b_source = folded_block(b, g, c);
      const int cols = a_source.cols();
      Tensor at = a_tiles.next().slice(0, g.partitions, 0, cols);
      Tensor bt = b_tiles.next().slice(0, g.partitions, 0, cols);
      kernel.dma_copy(at, a_source);
      kernel.dma_copy(bt, b_source);
      Tensor work = work_tiles.next().slice(0, g.partitions, 0, silu ? cols : 1);
      Tensor ot = out_tiles.next().slice(0, g.partitions, 0, cols);
      detail::elementwise_compute(kernel, op, ot, at, bt, work, detail::elementwise_engine(p.engine, step++));
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

}  // namespace autotune::kernels
