#pragma once
// rmsnorm: y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * gamma, the row
// normalisation of transformer layers. Rows map to partitions; gamma ([1, cols]
// in HBM) is broadcast to every partition once, on the tensor engine.
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

inline constexpr float kRmsnormEpsilon = 1e-6f;

struct RmsnormShape {
  int rows = 0, cols = 0;
};

// One instruction per step of the formula, in separate passes: the first
// computes 1/rms of every row and writes it to HBM, the second reads x and
// 1/rms back and scales. Single buffers, whole rows.
struct RmsnormNaiveParams {};

// Fused: one activation squares a chunk and sums its rows, one rsqrt pass
// gives 1/rms, then per chunk x * (1/rms) (tensor_scalar with a per-partition
// operand) and * gamma (tensor_tensor); row tiles stream through rotating
// buffers. With unroll_factor u each partition takes u consecutive rows
// (Tensor::fold_rows), so one DMA each way moves a chunk of u rows.
struct RmsnormFusedParams {
  int tile_size = 2048;    // columns per chunk: per DMA transfer and per instruction
  int pipeline_depth = 2;  // rotating row-tile buffers, in loop steps
  int unroll_factor = 1;   // rows per partition in a row tile (row tiles folded into one)
};

// gamma_bcast[p, :] = row[0, :] for every partition p: ones[1, P]^T . row[1, c]
// on the tensor engine (a broadcast along partitions), drained to `dst`.
inline void broadcast_to_partitions(Kernel& kernel, const Tensor& dst, const Tensor& row_hbm) {
  const int P = dst.rows();
  TilePool row_pool = kernel.sbuf_pool("gamma_row", 1, 1, row_hbm.cols(), row_hbm.dtype);
  TilePool ones_pool = kernel.sbuf_pool("ones", 1, 1, P, row_hbm.dtype);
  TilePool psum_pool = kernel.psum_pool("gamma_psum", 2, P, 512);
  Tensor row = row_pool.next();
  kernel.dma_copy(row, row_hbm);
  Tensor ones = ones_pool.next();
  kernel.memset(ones, 1.0f);
  for (TileSpan c : tiles(row_hbm.cols(), 512)) {
    Tensor broadcast = psum_pool.next().col_range(0, c.size);
    kernel.matmul(broadcast, ones, row.col_range(c.begin, c.end()), /*accumulate=*/false);
    kernel.tensor_copy(dst.col_range(c.begin, c.end()), broadcast);
  }
}

template <Dtype D>
void rmsnorm_naive(Kernel& kernel, const RmsnormShape& shape, const RmsnormNaiveParams&) {
  Tensor x = kernel.input("x", shape.rows, shape.cols, D);
  Tensor gamma = kernel.input("gamma", 1, shape.cols, D);
  Tensor y = kernel.output("y", shape.rows, shape.cols, D);
  Tensor inv_rms = kernel.hbm_scratch("inv_rms", shape.rows, 1, Dtype::fp32);
  const int P = kernel.limits().partitions;
  TilePool gamma_pool = kernel.sbuf_pool("gamma_bcast", 1, P, shape.cols, D);
  Tensor gamma_bcast = gamma_pool.next();
  broadcast_to_partitions(kernel, gamma_bcast, gamma);

  TilePool x_tiles = kernel.sbuf_pool("x_tile", 1, P, shape.cols, D);
  TilePool y_tiles = kernel.sbuf_pool("y_tile", 1, P, shape.cols, D);
  TilePool work_tiles = kernel.sbuf_pool("work", 1, P, shape.cols, Dtype::fp32);
  TilePool columns = kernel.sbuf_pool("column", 4, P, 1, Dtype::fp32);
  // Pass 1: 1/rms of every row, written to HBM.
  for (TileSpan r : tiles(shape.rows, P)) {
    Tensor xt = x_tiles.next().row_range(0, r.size);
    kernel.dma_copy(xt, x.row_range(r.begin, r.end()));
    Tensor squares = work_tiles.next().row_range(0, r.size);
    kernel.tensor_tensor(squares, xt, xt, AluOp::multiply);
    Tensor sum = columns.next().row_range(0, r.size);
    kernel.tensor_reduce(sum, squares, AluOp::add);
    Tensor mean = columns.next().row_range(0, r.size);
    kernel.tensor_scalar(mean, sum, AluOp::multiply, 1.0 / shape.cols, AluOp::add, kRmsnormEpsilon);
    Tensor rms = columns.next().row_range(0, r.size);
    kernel.activation(rms, mean, ActivationFunction::sqrt);
    Tensor inv = columns.next().row_range(0, r.size);
    kernel.reciprocal(inv, rms);
    kernel.dma_copy(inv_rms.row_range(r.begin, r.end()), inv);
  }
  // Pass 2: y = x * (1/rms) * gamma.
  for (TileSpan r : tiles(shape.rows, P)) {
    Tensor xt = x_tiles.next().row_range(0, r.size);
    kernel.dma_copy(xt, x.row_range(r.begin, r.end()));
    Tensor inv = columns.next().row_range(0, r.size);
    kernel.dma_copy(inv, inv_rms.row_range(r.begin, r.end()));
    Tensor normalised = work_tiles.next().row_range(0, r.size);
    kernel.tensor_scalar(normalised, xt, AluOp::multiply, inv);
    Tensor yt = y_tiles.next().row_range(0, r.size);
    kernel.tensor_tensor(yt, normalised, gamma_bcast.row_range(0, r.size), AluOp::multiply);
    kernel.dma_copy(y.row_range(r.begin, r.end()), yt);
  }
}

template <Dtype D>
void rmsnorm_fused(Kernel& kernel, const RmsnormShape& shape, const RmsnormFusedParams& p) {
  Tensor x = kernel.input("x", shape.rows, shape.cols, D);
  Tensor gamma = kernel.input("gamma", 1, shape.cols, D);
  Tensor y = kernel.output("y", shape.rows, shape.cols, D);
  const int P = kernel.limits().partitions;
  const int fold = p.unroll_factor;
  const int chunks = tile_count(shape.cols, p.tile_size);
  TilePool gamma_pool = kernel.sbuf_pool("gamma_bcast", 1, P, shape.cols, D);
  Tensor gamma_bcast = gamma_pool.next();
  broadcast_to_partitions(kernel, gamma_bcast, gamma);

  // A row tile holds, chunk after chunk, the chunk's columns of each of the
  // partition's `fold` rows: chunk k of row f at columns
  // [k * fold * tile_size + f * size_k, + size_k), so that one folded DMA
  // fills (or drains) a chunk of all the rows.
  const int bufs = p.pipeline_depth;
  TilePool x_tiles = kernel.sbuf_pool("x_tile", bufs, P, fold * chunks * p.tile_size, D);
  TilePool y_tiles = kernel.sbuf_pool("y_tile", bufs, P, fold * chunks * p.tile_size, D);
  TilePool square_chunks = kernel.sbuf_pool("squares", 2, P, p.tile_size, Dtype::fp32);  // discarded
  TilePool chunk_sums = kernel.sbuf_pool("chunk_sums", bufs, P, fold * chunks, Dtype::fp32);
  TilePool row_sums = kernel.sbuf_pool("sum_sq", bufs, P, fold, Dtype::fp32);
  TilePool inv_rms_pool = kernel.sbuf_pool("inv_rms", bufs, P, fold, Dtype::fp32);

  for (const FoldedRows& g : folded_row_groups(shape.rows, P, fold)) {
    const int rows = g.partitions;
    auto chunk_of = [&](const Tensor& tile, const TileSpan& c, int f) {
      const int at = c.index * fold * p.tile_size + f * c.size;
      return tile.slice(0, rows, at, at + c.size);
    };
    auto all_rows_of_chunk = [&](const Tensor& tile, const TileSpan& c) {
      const int at = c.index * fold * p.tile_size;
      return tile.slice(0, rows, at, at + g.fold * c.size);
    };

    Tensor xt = x_tiles.next();
    for (TileSpan c : tiles(shape.cols, p.tile_size))
      kernel.dma_copy(all_rows_of_chunk(xt, c), folded_block(x, g, c));

    // Sum of squares of each row: one activation per (row, chunk), its row
    // sums into one column each; then 1/rms = rsqrt(sum / cols + eps).
    Tensor sums = chunk_sums.next().row_range(0, rows);
    Tensor inv = inv_rms_pool.next().row_range(0, rows);
    Tensor total = row_sums.next().row_range(0, rows);
    for (int f = 0; f < g.fold; ++f) {
      for (TileSpan c : tiles(shape.cols, p.tile_size)) {
        Tensor discarded = square_chunks.next().slice(0, rows, 0, c.size);
        Tensor sum_column = sums.col_range(f * chunks + c.index, f * chunks + c.index + 1);
        kernel.activation(discarded, chunk_of(xt, c, f), ActivationFunction::square, 0.0f, 1.0f, &sum_column);
      }
      Tensor sum = sums.col_range(f * chunks, f * chunks + 1);
      if (chunks > 1) {
        sum = total.col_range(f, f + 1);
        kernel.tensor_reduce(sum, sums.col_range(f * chunks, (f + 1) * chunks), AluOp::add);
      }
      kernel.activation(inv.col_range(f, f + 1), sum, ActivationFunction::rsqrt, kRmsnormEpsilon,
                        1.0f / shape.cols);
    }

    Tensor yt = y_tiles.next();
    for (TileSpan c : tiles(shape.cols, p.tile_size)) {
      for (int f = 0; f < g.fold; ++f) {
        Tensor y_chunk = chunk_of(yt, c, f);
        kernel.tensor_scalar(y_chunk, chunk_of(xt, c, f), AluOp::multiply, inv.col_range(f, f + 1));
        kernel.tensor_tensor(y_chunk, y_chunk, gamma_bcast.slice(0, rows, c.begin, c.end()), AluOp::multiply);
      }
      kernel.dma_copy(folded_block(y, g, c), all_rows_of_chunk(yt, c));
    }
  }
}

}  // namespace autotune::kernels
