#pragma once
// transpose: a layout change between kernels. A batch of matrices, x
// [batch * rows, cols] (matrix b at rows b * rows ..), becomes y
// [batch * cols, rows] with y[b * cols + c, r] = x[b * rows + r, c]. A model
// needs them where one kernel's output layout is not the next one's input
// layout (model/model.hpp).
#include <algorithm>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct TransposeShape {
  int batch = 1, rows = 0, cols = 0;
};

// One 128 x 128 block at a time on the tensor engine: load it, transpose it
// into PSUM, copy it out, store it; single buffers, nothing overlaps.
struct TransposeNaiveParams {};

// On the tensor engine, pipelined: [128, tile_size] strips of x are loaded
// by one DMA each; the 128 x 128 blocks of `blocks_per_bank` consecutive
// row tiles are transposed into one PSUM bank (up to four 128-column blocks
// of fp32), which one instruction drains and one DMA stores as a
// [128, blocks_per_bank * 128] piece of y.
struct TransposePeParams {
  int tile_size = 512;       // columns of x per load
  int blocks_per_bank = 4;   // row tiles transposed into one PSUM bank, drained and stored together
  int pipeline_depth = 2;    // rotating buffers for the loaded strips and the drained pieces
  int evacuate_engine = 0;   // who drains PSUM: 0 the vector engine, 1 the scalar engine, 2 GpSimd
};

// By transposing DMAs (NKI's dma_transpose, a hardware transposer for 2-byte
// data on trn2; element-strided, and slow, where the target has none): each
// [tile_size, 128] piece of x lands in SBUF as [128, tile_size] and is
// stored as it is; no engine touches the data.
struct TransposeDmaParams {
  int tile_size = 512;     // rows of x per transfer
  int pipeline_depth = 2;  // rotating buffers
};

template <Dtype D>
void transpose_naive(Kernel& kernel, const TransposeShape& shape, const TransposeNaiveParams&) {
  Tensor x = kernel.input("x", shape.batch * shape.rows, shape.cols, D);
  Tensor y = kernel.output("y", shape.batch * shape.cols, shape.rows, D);
  const int P = kernel.limits().partitions;
  TilePool in_tiles = kernel.sbuf_pool("block_in", 1, P, P, D);
  TilePool psum = kernel.psum_pool("block_t", 1, P, P);
  TilePool out_tiles = kernel.sbuf_pool("block_out", 1, P, P, D);
  for (int b = 0; b < shape.batch; ++b)
    for (TileSpan r : tiles(shape.rows, P))
      for (TileSpan c : tiles(shape.cols, P)) {
        Tensor in = in_tiles.next().slice(0, r.size, 0, c.size);
        kernel.dma_copy(in, x.slice(b * shape.rows + r.begin, b * shape.rows + r.end(), c.begin, c.end()));
        Tensor t = psum.next().slice(0, c.size, 0, r.size);
        kernel.transpose(t, in);
        Tensor out = out_tiles.next().slice(0, c.size, 0, r.size);
        kernel.tensor_copy(out, t);
        kernel.dma_copy(y.slice(b * shape.cols + c.begin, b * shape.cols + c.end(), r.begin, r.end()), out);
      }
}

template <Dtype D>
void transpose_pe(Kernel& kernel, const TransposeShape& shape, const TransposePeParams& p) {
  Tensor x = kernel.input("x", shape.batch * shape.rows, shape.cols, D);
  Tensor y = kernel.output("y", shape.batch * shape.cols, shape.rows, D);
  const int P = kernel.limits().partitions;
  const int group = p.blocks_per_bank;  // row tiles per PSUM bank
  TilePool strips = kernel.sbuf_pool("strip", p.pipeline_depth * group, P, p.tile_size, D);
  TilePool psum = kernel.psum_pool("bank", 2, P, group * P);
  TilePool pieces = kernel.sbuf_pool("piece", p.pipeline_depth, P, group * P, D);
  for (int b = 0; b < shape.batch; ++b)
    for (TileSpan rg : tiles(shape.rows, group * P)) {      // row tiles drained together
      for (TileSpan strip : tiles(shape.cols, p.tile_size)) {  // columns loaded together
        std::vector<Tensor> loaded;
        for (TileSpan r : tiles(rg.size, P)) {
          Tensor s = strips.next().slice(0, r.size, 0, strip.size);
          kernel.dma_copy(s, x.slice(b * shape.rows + rg.begin + r.begin, b * shape.rows + rg.begin + r.end(),
                                     strip.begin, strip.end()));
          loaded.push_back(s);
        }
        for (TileSpan c : tiles(strip.size, P)) {
          Tensor bank = psum.next().slice(0, c.size, 0, rg.size);
          for (TileSpan r : tiles(rg.size, P))
            kernel.transpose(bank.col_range(r.begin, r.end()), loaded[r.index].col_range(c.begin, c.end()));
          Tensor piece = pieces.next().slice(0, c.size, 0, rg.size);
          if (p.evacuate_engine == 1)
            kernel.activation(piece, bank, ActivationFunction::identity);
          else
            kernel.tensor_copy(piece, bank, p.evacuate_engine == 2 ? Engine::gpsimd : Engine::vector);
          const int y_row = b * shape.cols + strip.begin + c.begin;
          kernel.dma_copy(y.slice(y_row, y_row + c.size, rg.begin, rg.end()), piece);
        }
      }
    }
}

template <Dtype D>
void transpose_dma(Kernel& kernel, const TransposeShape& shape, const TransposeDmaParams& p) {
  Tensor x = kernel.input("x", shape.batch * shape.rows, shape.cols, D);
  Tensor y = kernel.output("y", shape.batch * shape.cols, shape.rows, D);
  const int P = kernel.limits().partitions;
  TilePool pieces = kernel.sbuf_pool("piece", p.pipeline_depth, P, p.tile_size, D);
  for (int b = 0; b < shape.batch; ++b)
    for (TileSpan c : tiles(shape.cols, P))
      for (TileSpan r : tiles(shape.rows, p.tile_size)) {
        Tensor piece = pieces.next().slice(0, c.size, 0, r.size);
        kernel.dma_copy(piece, x.slice(b * shape.rows + r.begin, b * shape.rows + r.end(), c.begin, c.end()),
                        /*transpose=*/true);
        kernel.dma_copy(y.slice(b * shape.cols + c.begin, b * shape.cols + c.end(), r.begin, r.end()), piece);
      }
}

}  // namespace autotune::kernels
