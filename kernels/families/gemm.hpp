#pragma once
// GEMM: result[M, N] = lhsT[K, M]^T . rhs[K, N], the four structures of the
// NKI matrix-multiplication tutorial written with the kernel API. As in the
// tutorial the left operand is given transposed in HBM (the contraction axis K
// is the partition axis of both operands), partial sums accumulate in PSUM in
// fp32, and the result is stored in the operands' dtype.
//
// The tutorial's kernels need M, N, K to be multiples of their tiles and
// blocks; these accept any size (the last tile or block of an axis is
// ragged), so that a small ragged verification shape runs the same code.
//
// Knobs common to the variants:
//  - tile_m, tile_n, tile_k: the matmul tile ([tile_k, tile_m] stationary,
//    [tile_k, tile_n] moving); the tensor engine takes at most 128, 512, 128.
//  - unroll_factor: adjacent N tiles handled per step: their matmuls fill one
//    PSUM tile of unroll_factor * tile_n columns (one bank per 512 fp32), which
//    one vector instruction drains and, where the variant stores from it, one
//    DMA stores; in `tiled` and `hoisted` the right operand of the step is also
//    loaded by one DMA.
//  - pipeline_depth: rotating buffers per loaded operand tile (or per set of
//    tiles, where the tutorial loads a set at once): with depth d the loads of
//    the next d - 1 tiles (sets) may run while the current one is used.
// The PSUM tiles and the SBUF tiles that drain them are double-buffered in
// every variant. The tutorial leaves buffering to the compiler; the default
// pipeline_depth here is double buffering (2) wherever the tutorial's working
// set allows it at its shape, and 1 for blocked_mn, whose two K columns of
// blocked operands already fill SBUF at K = 8192.
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct GemmShape {
  int M = 0, N = 0, K = 0;
};

// Tutorial step 1 (nki_matmul_tiled_): both operand tiles loaded inside the K loop.
struct GemmTiledParams {
  int tile_m = 128, tile_n = 512, tile_k = 128;
  int unroll_factor = 1;
  int pipeline_depth = 2;
};

// Tutorial step 2 (nki_matmul_hoist_load_): the lhsT column of an M tile is
// loaded once per M tile, the rhs column of an N tile once per (M, N) tile.
struct GemmHoistedParams {
  int tile_m = 128, tile_n = 512, tile_k = 128;
  int unroll_factor = 1;
  int pipeline_depth = 2;
};

// Tutorial step 3 (nki_matmul_block_free_dimension_): blocks of
// tiles_in_block_m M tiles and tiles_in_block_n N tiles share their loads.
struct GemmBlockedMnParams {
  int tile_m = 128, tile_n = 512, tile_k = 128;
  int tiles_in_block_m = 2, tiles_in_block_n = 2;
  int unroll_factor = 1;
  int pipeline_depth = 1;
};

// Tutorial step 4 (nki_matmul_fully_optimized_): M, N and K blocked; operand
// blocks loaded as [tile_k, block] rows (large transfers), partial results of
// a block column of N kept in SBUF across the K blocks.
struct GemmBlockedMnkParams {
  int tile_m = 128, tile_n = 512, tile_k = 128;
  int tiles_in_block_m = 16, tiles_in_block_n = 2, tiles_in_block_k = 8;
  int unroll_factor = 1;
  int pipeline_depth = 2;
};

struct GemmOperands {
  Tensor lhsT, rhs, result;
};

inline GemmOperands gemm_operands(Kernel& kernel, const GemmShape& shape, Dtype dtype) {
  return {kernel.input("lhsT", shape.K, shape.M, dtype), kernel.input("rhs", shape.K, shape.N, dtype),
          kernel.output("result", shape.M, shape.N, dtype)};
}

// Issues the matmuls of one K tile for the N tiles of `step` (a span of
// unroll_factor N tiles): result columns j of `psum` += lhsT_tile^T . rhs columns j.
// The instructions are attributed to the caller's line.
inline void matmul_step(Kernel& kernel, const Tensor& psum, const Tensor& lhsT_tile, const Tensor& rhs_step,
                        int tile_n, bool accumulate, Kernel::Where where = Kernel::Where::current()) {
  for (TileSpan j : tiles(psum.cols(), tile_n))
    kernel.matmul(psum.col_range(j.begin, j.end()), lhsT_tile, rhs_step.col_range(j.begin, j.end()),
                  accumulate, {}, where);
}

template <Dtype D>
void gemm_tiled(Kernel& kernel, const GemmShape& shape, const GemmTiledParams& p) {
  auto [lhsT, rhs, result] = gemm_operands(kernel, shape, D);
  const int step_n = p.tile_n * p.unroll_factor;
  TilePool lhsT_tiles = kernel.sbuf_pool("lhsT_tile", p.pipeline_depth, p.tile_k, p.tile_m, D);
  TilePool rhs_tiles = kernel.sbuf_pool("rhs_tile", p.pipeline_depth, p.tile_k, step_n, D);
  TilePool psum_tiles = kernel.psum_pool("res_psum", 2, p.tile_m, step_n);
  TilePool result_tiles = kernel.sbuf_pool("res_sb", 2, p.tile_m, step_n, D);

  for (TileSpan m : tiles(shape.M, p.tile_m)) {
    for (TileSpan n : tiles(shape.N, step_n)) {
      Tensor res_psum = psum_tiles.next().slice(0, m.size, 0, n.size);
      for (TileSpan k : tiles(shape.K, p.tile_k)) {
        Tensor lhsT_tile = lhsT_tiles.next().slice(0, k.size, 0, m.size);
        Tensor rhs_tile = rhs_tiles.next().slice(0, k.size, 0, n.size);
        kernel.dma_copy(lhsT_tile, lhsT.slice(k.begin, k.end(), m.begin, m.end()));
        kernel.dma_copy(rhs_tile, rhs.slice(k.begin, k.end(), n.begin, n.end()));
        matmul_step(kernel, res_psum, lhsT_tile, rhs_tile, p.tile_n, /*accumulate=*/k.index > 0);
      }
      Tensor res_sb = result_tiles.next().slice(0, m.size, 0, n.size);
      kernel.tensor_copy(res_sb, res_psum);
      kernel.dma_copy(result.slice(m.begin, m.end(), n.begin, n.end()), res_sb);
    }
  }
}

template <Dtype D>
void gemm_hoisted(Kernel& kernel, const GemmShape& shape, const GemmHoistedParams& p) {
  auto [lhsT, rhs, result] = gemm_operands(kernel, shape, D);
  const int step_n = p.tile_n * p.unroll_factor;
  const int k_tiles = tile_count(shape.K, p.tile_k);
  TilePool lhsT_tiles = kernel.sbuf_pool("lhsT_tile", k_tiles * p.pipeline_depth, p.tile_k, p.tile_m, D);
  TilePool rhs_tiles = kernel.sbuf_pool("rhs_tile", k_tiles * p.pipeline_depth, p.tile_k, step_n, D);
  TilePool psum_tiles = kernel.psum_pool("res_psum", 2, p.tile_m, step_n);
  TilePool result_tiles = kernel.sbuf_pool("res_sb", 2, p.tile_m, step_n, D);

  for (TileSpan m : tiles(shape.M, p.tile_m)) {
    // The whole K column of lhsT for this M tile, loaded once.
    std::vector<Tensor> lhsT_column;
    for (TileSpan k : tiles(shape.K, p.tile_k)) {
      lhsT_column.push_back(lhsT_tiles.next().slice(0, k.size, 0, m.size));
      kernel.dma_copy(lhsT_column.back(), lhsT.slice(k.begin, k.end(), m.begin, m.end()));
    }
    for (TileSpan n : tiles(shape.N, step_n)) {
      std::vector<Tensor> rhs_column;
      for (TileSpan k : tiles(shape.K, p.tile_k)) {
        rhs_column.push_back(rhs_tiles.next().slice(0, k.size, 0, n.size));
        kernel.dma_copy(rhs_column.back(), rhs.slice(k.begin, k.end(), n.begin, n.end()));
      }
      Tensor res_psum = psum_tiles.next().slice(0, m.size, 0, n.size);
      for (int k = 0; k < k_tiles; ++k)
        matmul_step(kernel, res_psum, lhsT_column[k], rhs_column[k], p.tile_n, /*accumulate=*/k > 0);
      Tensor res_sb = result_tiles.next().slice(0, m.size, 0, n.size);
      kernel.tensor_copy(res_sb, res_psum);
      kernel.dma_copy(result.slice(m.begin, m.end(), n.begin, n.end()), res_sb);
    }
  }
}

template <Dtype D>
void gemm_blocked_mn(Kernel& kernel, const GemmShape& shape, const GemmBlockedMnParams& p) {
  auto [lhsT, rhs, result] = gemm_operands(kernel, shape, D);
  const int block_m = p.tile_m * p.tiles_in_block_m;
  const int block_n = p.tile_n * p.tiles_in_block_n;
  const int step_n = p.tile_n * p.unroll_factor;
  const int k_tiles = tile_count(shape.K, p.tile_k);
  TilePool lhsT_tiles =
      kernel.sbuf_pool("lhsT_tile", p.tiles_in_block_m * k_tiles * p.pipeline_depth, p.tile_k, p.tile_m, D);
  TilePool rhs_tiles =
      kernel.sbuf_pool("rhs_tile", p.tiles_in_block_n * k_tiles * p.pipeline_depth, p.tile_k, p.tile_n, D);
  TilePool psum_tiles = kernel.psum_pool("result_tile", 2, p.tile_m, step_n);
  TilePool result_tiles = kernel.sbuf_pool("result_tmp", 2, p.tile_m, step_n, D);

  for (TileSpan m : tiles(shape.M, block_m)) {
    // lhsT_block[bm][k]: the K column of each M tile of the block.
    std::vector<std::vector<Tensor>> lhsT_block;
    for (TileSpan bm : tiles(m, p.tile_m)) {
      auto& column = lhsT_block.emplace_back();
      for (TileSpan k : tiles(shape.K, p.tile_k)) {
        column.push_back(lhsT_tiles.next().slice(0, k.size, 0, bm.size));
        kernel.dma_copy(column.back(), lhsT.slice(k.begin, k.end(), bm.begin, bm.end()));
      }
    }
    for (TileSpan n : tiles(shape.N, block_n)) {
      // rhs_block[bn][k]: the K column of each N tile of the block.
      std::vector<std::vector<Tensor>> rhs_block;
      for (TileSpan bn : tiles(n, p.tile_n)) {
        auto& column = rhs_block.emplace_back();
        for (TileSpan k : tiles(shape.K, p.tile_k)) {
          column.push_back(rhs_tiles.next().slice(0, k.size, 0, bn.size));
          kernel.dma_copy(column.back(), rhs.slice(k.begin, k.end(), bn.begin, bn.end()));
        }
      }
      for (TileSpan bm : tiles(m, p.tile_m)) {
        for (TileSpan step : tiles(n, step_n)) {
          Tensor res_psum = psum_tiles.next().slice(0, bm.size, 0, step.size);
          for (int k = 0; k < k_tiles; ++k)
            for (TileSpan j : tiles(step, p.tile_n))
              kernel.matmul(res_psum.col_range(j.offset, j.offset + j.size), lhsT_block[bm.index][k],
                            rhs_block[(step.offset + j.offset) / p.tile_n][k], /*accumulate=*/k > 0);
          Tensor res_sb = result_tiles.next().slice(0, bm.size, 0, step.size);
          kernel.tensor_copy(res_sb, res_psum);
          kernel.dma_copy(result.slice(bm.begin, bm.end(), step.begin, step.end()), res_sb);
        }
      }
    }
  }
}

template <Dtype D>
void gemm_blocked_mnk(Kernel& kernel, const GemmShape& shape, const GemmBlockedMnkParams& p) {
  auto [lhsT, rhs, result] = gemm_operands(kernel, shape, D);
  const int block_m = p.tile_m * p.tiles_in_block_m;
  const int block_n = p.tile_n * p.tiles_in_block_n;
  const int block_k = p.tile_k * p.tiles_in_block_k;
  const int step_n = p.tile_n * p.unroll_factor;
  // Partial results of one block column of N: a [tile_m, block_n] row per M
  // tile, kept in SBUF across the K blocks and stored once (coalesced).
  TilePool partial_rows = kernel.sbuf_pool("result_tmp", tile_count(shape.M, p.tile_m), p.tile_m, block_n, D);
  TilePool rhs_tiles =
      kernel.sbuf_pool("rhs_tile", p.tiles_in_block_k * p.pipeline_depth, p.tile_k, block_n, D);
  TilePool lhsT_tiles =
      kernel.sbuf_pool("lhsT_tile", p.tiles_in_block_k * p.pipeline_depth, p.tile_k, block_m, D);
  TilePool psum_tiles = kernel.psum_pool("result_tile", 2, p.tile_m, step_n);

  for (TileSpan n : tiles(shape.N, block_n)) {
    std::vector<Tensor> partial;  // by M tile
    for (TileSpan m : tiles(shape.M, p.tile_m)) {
      partial.push_back(partial_rows.next().slice(0, m.size, 0, n.size));
      kernel.memset(partial.back(), 0.0f, Engine::gpsimd);
    }
    for (TileSpan k : tiles(shape.K, block_k)) {
      std::vector<Tensor> rhs_block;  // by K tile: [tile_k, block_n]
      for (TileSpan bk : tiles(k, p.tile_k)) {
        rhs_block.push_back(rhs_tiles.next().slice(0, bk.size, 0, n.size));
        kernel.dma_copy(rhs_block.back(), rhs.slice(bk.begin, bk.end(), n.begin, n.end()));
      }
      for (TileSpan m : tiles(shape.M, block_m)) {
        std::vector<Tensor> lhsT_block;  // by K tile: [tile_k, block_m]
        for (TileSpan bk : tiles(k, p.tile_k)) {
          lhsT_block.push_back(lhsT_tiles.next().slice(0, bk.size, 0, m.size));
          kernel.dma_copy(lhsT_block.back(), lhsT.slice(bk.begin, bk.end(), m.begin, m.end()));
        }
        for (TileSpan step : tiles(n, step_n)) {
          for (TileSpan bm : tiles(m, p.tile_m)) {
            Tensor res_psum = psum_tiles.next().slice(0, bm.size, 0, step.size);
            for (TileSpan bk : tiles(k, p.tile_k)) {
              Tensor stationary = lhsT_block[bk.index].col_range(bm.offset, bm.offset + bm.size);
              Tensor moving = rhs_block[bk.index].col_range(step.offset, step.offset + step.size);
              matmul_step(kernel, res_psum, stationary, moving, p.tile_n, /*accumulate=*/bk.index > 0);
            }
            Tensor sum = partial[bm.begin / p.tile_m].col_range(step.offset, step.offset + step.size);
            kernel.tensor_tensor(sum, sum, res_psum, AluOp::add);
          }
        }
      }
    }
    for (TileSpan m : tiles(shape.M, p.tile_m))
      kernel.dma_copy(result.slice(m.begin, m.end(), n.begin, n.end()), partial[m.index]);
  }
}

}  // namespace autotune::kernels
