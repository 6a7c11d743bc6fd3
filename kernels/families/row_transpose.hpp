#pragma once
// Row tiles of an HBM matrix x [M, K] transposed on chip by the tensor
// engine, K onto the partitions: the stationary or moving operand a matmul
// contracting over K needs, for kernels whose left operand arrives as
// NKIBench's references take it (x [M, K], not transposed). The fused MLP
// (swiglu) and lora families share it.
#include <algorithm>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

// Transposes a block of rows of x into an SBUF tile xT laid out K tile by K
// tile: K tile k (rows [k * P, ...) of x's columns) lies at partitions
// [0, k.size) and columns [k.index * stride, k.index * stride + rows), so
// that xT.slice(0, k.size, k.index * stride + r0, ...) is the [K tile, rows]
// operand of any row range of the block. The block's rows are loaded in row
// tiles of P rows and `chunk_cols` columns (one DMA each); per K tile the
// transposes of as many row tiles as fill a PSUM bank land side by side in
// it and are drained by one copy. Its pools are made, in this order, when
// it is constructed: x staging for `row_tiles` row tiles of a block, double
// buffered, and two PSUM banks.
class RowTileTransposer {
 public:
  RowTileTransposer(Kernel& kernel, const Tensor& x, int chunk_cols, int row_tiles, Dtype dtype)
      : kernel_(kernel),
        x_(x),
        P_(kernel.limits().partitions),
        chunk_cols_(std::max(1, std::min(chunk_cols, x.cols()))),
        bank_cols_(static_cast<int>(kernel.limits().psum_bank_bytes / 4)),
        x_tiles_(kernel.sbuf_pool("x_rows", 2 * std::max(row_tiles, 1), P_, chunk_cols_, dtype)),
        psum_(kernel.psum_pool("xT_psum", 2, P_, bank_cols_)) {}

  // Rows `m` of x (absolute; at most row_tiles * P rows), every column,
  // transposed into xT as described above.
  void transpose(const TileSpan& m, const Tensor& xT, int stride, Engine drain = Engine::vector) {
    for (TileSpan c : tiles(x_.cols(), chunk_cols_)) {
      std::vector<Tensor> rows;  // by row tile of the block: [rows, c.size]
      for (TileSpan r : tiles(m, P_)) {
        rows.push_back(x_tiles_.next().slice(0, r.size, 0, c.size));
        kernel_.dma_copy(rows.back(), x_.slice(r.begin, r.end(), c.begin, c.end()));
      }
      for (TileSpan k : tiles(c, P_)) {
        const int k_index = k.begin / P_;
        for (TileSpan bank : tiles(m, std::max(P_, bank_cols_ / P_ * P_))) {
          const Tensor tp = psum_.next().slice(0, k.size, 0, bank.size);
          for (TileSpan r : tiles(bank, P_))
            kernel_.transpose(tp.col_range(r.offset, r.offset + r.size),
                              rows[(r.begin - m.begin) / P_].slice(0, r.size, k.offset, k.offset + k.size));
          const int col = k_index * stride + (bank.begin - m.begin);
          const Tensor dst = xT.slice(0, k.size, col, col + bank.size);
          if (drain == Engine::scalar)
            kernel_.activation(dst, tp, ActivationFunction::identity);
          else
            kernel_.tensor_copy(dst, tp);
        }
      }
    }
  }

 private:
  Kernel& kernel_;
  Tensor x_;
  int P_, chunk_cols_, bank_cols_;
  TilePool x_tiles_, psum_;
};

// Rows `m` of x (at most a block of `stride` rows), columns `k_range`, transposed one
// [128, 128] tile at a time, each drained by its own copy (the starting kernels' way):
// K tile j of the range at xT partitions [0, size), columns [j * stride + row offset, ...).
inline void transpose_tile_by_tile(Kernel& kernel, const Tensor& x, const TileSpan& m,
                                   const TileSpan& k_range, const Tensor& xT, int stride, TilePool& x_tiles,
                                   TilePool& psum) {
  const int P = kernel.limits().partitions;
  for (TileSpan r : tiles(m, P)) {
    const Tensor xt = x_tiles.next().slice(0, r.size, 0, k_range.size);
    kernel.dma_copy(xt, x.slice(r.begin, r.end(), k_range.begin, k_range.end()));
    for (TileSpan k : tiles(k_range.size, P)) {
      const Tensor tp = psum.next().slice(0, k.size, 0, r.size);
      kernel.transpose(tp, xt.col_range(k.begin, k.end()));
      const int col = k.index * stride + r.offset;
      kernel.tensor_copy(xT.slice(0, k.size, col, col + r.size), tp);
    }
  }
}

}  // namespace autotune::kernels
