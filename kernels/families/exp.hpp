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

// Tiles of [partitions, tile_size], streamed through rotating buffers.
struct ExpTiledParams {
  int tile_size = 512;     // columns per tile (and per DMA transfer)
  int pipeline_depth = 2;  // rotating buffers per stream, in steps
  int unroll_factor = 1;   // tiles per loop step: loads, then activations, then stores
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
  const int bufs = p.pipeline_depth * p.unroll_factor;
  TilePool in_tiles = kernel.sbuf_pool("in_tile", bufs, P, p.tile_size, D);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", bufs, P, p.tile_size, D);

  // Every (row tile, column tile) in row-major order.
  std::vector<std::pair<TileSpan, TileSpan>> all;
  for (TileSpan r : tiles(shape.rows, P))
    for (TileSpan c : tiles(shape.cols, p.tile_size)) all.emplace_back(r, c);

  for (TileSpan step : tiles(static_cast<int>(all.size()), p.unroll_factor)) {
    std::vector<Tensor> inputs, results;
    for (TileSpan t : tiles(step, 1)) {
      auto [r, c] = all[t.begin];
      inputs.push_back(in_tiles.next().slice(0, r.size, 0, c.size));
      kernel.dma_copy(inputs.back(), in.slice(r.begin, r.end(), c.begin, c.end()));
    }
    for (const Tensor& x : inputs) {
      results.push_back(out_tiles.next().slice(0, x.rows(), 0, x.cols()));
      kernel.activation(results.back(), x, ActivationFunction::exp);
    }
    for (TileSpan t : tiles(step, 1)) {
      auto [r, c] = all[t.begin];
      kernel.dma_copy(out.slice(r.begin, r.end(), c.begin, c.end()), results[t.offset]);
    }
  }
}

}  // namespace autotune::kernels
