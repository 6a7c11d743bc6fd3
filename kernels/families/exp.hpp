#pragma once
// exp: out = exp(in) element-wise over a [rows, cols] tensor, the kernel of
// the Neuron profiler's example (there [250, 512] fp32: two row tiles of 128
// partitions, the last one ragged with 122 rows).
#include <utility>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct ExpShape {
  int rows = 0, cols = 0;
};

// Load everything, then compute everything, then store everything: nothing
// overlaps, and the whole tensor must fit in SBUF.
struct ExpNaiveParams {};

// Tiles of [partitions, unroll_factor * tile_size], streamed through rotating
// buffers: each partition takes unroll_factor consecutive rows of a column
// tile, so one DMA each way and one activation serve unroll_factor row tiles.
struct ExpTiledParams {
  int tile_size = 512;     // columns per tile, from each of the rows a partition takes
  int pipeline_depth = 2;  // rotating buffers per stream, in steps
  int unroll_factor = 1;   // rows per partition per tile (row tiles folded into one)
};

template <Dtype D>
void exp_naive(Kernel& kernel, const ExpShape& shape, const ExpNaiveParams&) {
  Tensor in = kernel.input("in_tensor", shape.rows, shape.cols, D);
  Tensor out = kernel.output("out_tensor", shape.rows, shape.cols, D);
  const int P = kernel.limits().partitions;
  const int row_tiles = tile_count(shape.rows, P);
  TilePool in_tiles = kernel.sbuf_pool("in_tile", row_tiles, P, shape.cols, D);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", row_tiles, P, shape.cols, D);

  std::vector<Tensor> inputs, results;
  for (TileSpan r : tiles(shape.rows, P)) {
    inputs.push_back(in_tiles.next().row_range(0, r.size));
    kernel.dma_copy(inputs.back(), in.row_range(r.begin, r.end()));
  }
  for (TileSpan r : tiles(shape.rows, P)) {
    results.push_back(out_tiles.next().row_range(0, r.size));
    kernel.activation(results.back(), inputs[r.index], ActivationFunction::exp);
  }
  for (TileSpan r : tiles(shape.rows, P)) kernel.dma_copy(out.row_range(r.begin, r.end()), results[r.index]);
}

template <Dtype D>
void exp_tiled(Kernel& kernel, const ExpShape& shape, const ExpTiledParams& p) {
  Tensor in = kernel.input("in_tensor", shape.rows, shape.cols, D);
  Tensor out = kernel.output("out_tensor", shape.rows, shape.cols, D);
  const int P = kernel.limits().partitions;
  const int fold = p.unroll_factor;
  TilePool in_tiles = kernel.sbuf_pool("in_tile", p.pipeline_depth, P, fold * p.tile_size, D);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", p.pipeline_depth, P, fold * p.tile_size, D);

  for (const FoldedRows& g : folded_row_groups(shape.rows, P, fold)) {
    for (TileSpan c : tiles(shape.cols, p.tile_size)) {
      const Tensor source = folded_block(in, g, c);
      const Tensor destination = folded_block(out, g, c);
      Tensor x = in_tiles.next().slice(0, g.partitions, 0, source.cols());
      kernel.dma_copy(x, source);
      Tensor y = out_tiles.next().slice(0, g.partitions, 0, source.cols());
      kernel.activation(y, x, ActivationFunction::exp);
      kernel.dma_copy(destination, y);
    }
  }
}

}  // namespace autotune::kernels
