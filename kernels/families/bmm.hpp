#pragma once
// bmm: a batched matmul out[b] = lhs[b] . rhs[b] for b < B, lhs[b] [M, K],
// rhs[b] [K, N], NKIBench's bmm task (B=16, M=4096, K=64, N=4096). The
// operands are as NKIBench's reference takes them, not transposed: lhs is
// [B * M, K] in HBM (batch b at rows b * M ...), rhs [B * K, N], out
// [B * M, N]. lhs tiles are transposed on chip (K onto the partitions), the
// products accumulate in PSUM in fp32, the result is stored in the dtype.
//
// A small contraction (K = 64) uses half the PE array's rows: a matmul
// costs as much as one over K = 128. The `paired` variant puts
// pe_row_tiles batches side by side on PE row tiles (nc_matmul's
// tile_position / tile_size), so their matmuls run at once.
#include <algorithm>
#include <optional>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct BmmShape {
  int B = 0, M = 0, K = 0, N = 0;
};

// NKIBench's starting kernel: per batch and [K, 1024] chunk of rhs, every
// lhs row tile of the batch loaded and transposed on the tensor engine
// again (for every chunk), then [128, 512] products drained by the vector
// engine into a [128, 1024] tile and stored. Single buffers.
struct BmmNaiveParams {};

// Per group of pe_row_tiles batches: each batch's whole rhs [K, N] loaded
// once into its PE row tile's partitions; per M tile, the group's lhs tiles
// loaded side by side ([128, pe_row_tiles * K]) and transposed once (by the
// tensor engine, or by a transposing DMA), then for every step of
// unroll_factor * 512 columns one matmul per 512 columns and batch, each
// batch on its row tile, into one PSUM tile per batch drained by one
// instruction; store_factor such steps fill an output tile per batch, stored
// by one DMA (long rows: the DMA's per-row overhead amortised).
struct BmmPairedParams {
  int pe_row_tiles = 2;    // batches side by side on the PE array's row tiles (1: the whole array)
  int unroll_factor = 1;   // 512-column matmuls per PSUM tile and drain instruction
  int store_factor = 1;    // PSUM tiles drained into one output tile, stored by one DMA
  int pipeline_depth = 2;  // rotating output tiles per batch (blocks in flight between drain and store)
  int drain_engine = 0;    // PSUM -> SBUF on 0: the vector engine, 1: the scalar engine, 2: alternating
  int dma_transpose = 0;   // 1: lhs transposed by a transposing DMA; 0: by the tensor engine
};

namespace detail {
inline void bmm_drain(Kernel& kernel, const Tensor& dst, const Tensor& psum, int choice, int step) {
  const bool scalar = choice == 1 || (choice == 2 && step % 2 == 1);
  if (scalar)
    kernel.activation(dst, psum, ActivationFunction::identity);
  else
    kernel.tensor_copy(dst, psum);
}

// The operands of a group of batches side by side on the PE array's row
// tiles, staged as the paired bmm and the fused bmm_softmax share them:
// batch j of a group contracts over partitions [j * tile_rows, j * tile_rows
// + K); each batch's whole rhs is loaded once per group, and per M tile the
// group's lhs tiles are transposed once (together by one tensor-engine
// transpose, or each by a transposing DMA). Its pools are made, in this
// order, when it is constructed.
class BmmGroupStaging {
 public:
  BmmGroupStaging(Kernel& kernel, const Tensor& lhs, const Tensor& rhs, int M, int K, int N, int group,
                  bool dma_transpose, Dtype dtype)
      : kernel_(kernel),
        lhs_(lhs),
        rhs_(rhs),
        M_(M),
        K_(K),
        N_(N),
        P_(kernel.limits().partitions),
        group_(group),
        tile_rows_(P_ / group),
        k_tiles_(group == 1 ? tile_count(K, P_) : 1),
        dma_transpose_(dma_transpose),
        rhs_tiles_(kernel.sbuf_pool("rhs_batch", 2, P_, k_tiles_ * N, dtype)),
        lhs_tiles_(kernel.sbuf_pool("lhs_tile", 2, P_, P_, dtype)) {
    if (!dma_transpose) lhsT_psum_.emplace(kernel.psum_pool("lhsT_psum", 1, P_, P_));
    lhsT_tiles_.emplace(kernel.sbuf_pool("lhsT_tile", 2, P_, k_tiles_ * P_, dtype));
  }

  // Batch j's matmuls run on its row tile (the whole array for a group of one).
  PeTile pe_tile(int j) const {
    return group_ == 1 ? PeTile{}
                       : PeTile{static_cast<std::uint8_t>(j * tile_rows_),
                                static_cast<std::uint8_t>(tile_rows_), 0, 128};
  }
  // Partitions of K tile k of batch j in the rhs and lhsT tiles.
  std::pair<int, int> k_rows(int j, const TileSpan& k) const {
    return {j * tile_rows_, j * tile_rows_ + k.size};
  }

  // The group's rhs: batch j's K tile k at k_rows(j, k), columns [k.index * N, + N).
  Tensor load_rhs(const TileSpan& group) {
    const Tensor rt = rhs_tiles_.next();
    for (int j = 0; j < group.size; ++j) {
      const int b = group.begin + j;
      for (TileSpan k : tiles(K_, P_)) {
        const auto [r0, r1] = k_rows(j, k);
        kernel_.dma_copy(rt.slice(r0, r1, k.index * N_, (k.index + 1) * N_),
                         rhs_.slice(b * K_ + k.begin, b * K_ + k.end(), 0, N_));
      }
    }
    return rt;
  }

  // lhsT of every batch of the group for row tile m: batch j's K tile k at
  // k_rows(j, k), columns [k.index * P, + m.size).
  Tensor transposed_lhs(const TileSpan& group, const TileSpan& m) {
    const Tensor lt_all = lhsT_tiles_->next();
    for (TileSpan k : tiles(K_, P_)) {
      const int lcol = k.index * P_;
      if (dma_transpose_) {
        for (int j = 0; j < group.size; ++j) {
          const int row0 = (group.begin + j) * M_ + m.begin;
          const auto [r0, r1] = k_rows(j, k);
          kernel_.dma_copy(lt_all.slice(r0, r1, lcol, lcol + m.size),
                           lhs_.slice(row0, row0 + m.size, k.begin, k.end()), /*transpose=*/true);
        }
        continue;
      }
      // The group's lhs tiles side by side, batch j at columns [j * tile_rows, ... + K):
      // one transpose puts batch j's K on partitions [j * tile_rows, ... + K).
      const Tensor lt = lhs_tiles_.next();
      for (int j = 0; j < group.size; ++j) {
        const int row0 = (group.begin + j) * M_ + m.begin;
        const auto [c0, c1] = k_rows(j, k);
        kernel_.dma_copy(lt.slice(0, m.size, c0, c1), lhs_.slice(row0, row0 + m.size, k.begin, k.end()));
      }
      const int width = (group.size - 1) * tile_rows_ + k.size;
      const Tensor tp = lhsT_psum_->next().slice(0, width, 0, m.size);
      kernel_.transpose(tp, lt.slice(0, m.size, 0, width));
      kernel_.tensor_copy(lt_all.slice(0, width, lcol, lcol + m.size), tp);
    }
    return lt_all;
  }

 private:
  Kernel& kernel_;
  Tensor lhs_, rhs_;
  int M_, K_, N_, P_, group_, tile_rows_, k_tiles_;
  bool dma_transpose_;
  TilePool rhs_tiles_, lhs_tiles_;
  std::optional<TilePool> lhsT_psum_, lhsT_tiles_;
};
}  // namespace detail

template <Dtype D>
void bmm_naive(Kernel& kernel, const BmmShape& shape, const BmmNaiveParams&) {
  Tensor lhs = kernel.input("lhs", shape.B * shape.M, shape.K, D);
  Tensor rhs = kernel.input("rhs", shape.B * shape.K, shape.N, D);
  Tensor out = kernel.output("out", shape.B * shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  constexpr int kChunk = 1024, kBlockM = 1024, kTileN = 512;
  const int k_tiles = tile_count(shape.K, P);
  TilePool rhs_tiles = kernel.sbuf_pool("rhs_local", 1, P, k_tiles * kChunk, D);
  TilePool lhs_tiles = kernel.sbuf_pool("lhs_local", 1, P, P, D);
  TilePool lhsT_psum = kernel.psum_pool("lhsT_psum", 1, P, P);
  TilePool lhsT_tiles = kernel.sbuf_pool("lhsT_local", 1, P, k_tiles * kBlockM, D);
  TilePool res_psum = kernel.psum_pool("res_psum", 1, P, kTileN);
  TilePool res_tiles = kernel.sbuf_pool("res_local", 1, P, kChunk, D);
  for (int b = 0; b < shape.B; ++b) {
    for (TileSpan c : tiles(shape.N, kChunk)) {
      const Tensor rt = rhs_tiles.next();
      for (TileSpan k : tiles(shape.K, P))
        kernel.dma_copy(rt.slice(0, k.size, k.index * kChunk, k.index * kChunk + c.size),
                        rhs.slice(b * shape.K + k.begin, b * shape.K + k.end(), c.begin, c.end()));
      for (TileSpan mb : tiles(shape.M, kBlockM)) {
        const Tensor lt_block = lhsT_tiles.next();
        for (TileSpan m : tiles(mb.size, P)) {
          const int row0 = b * shape.M + mb.begin + m.begin;
          for (TileSpan k : tiles(shape.K, P)) {
            const Tensor lt = lhs_tiles.next().slice(0, m.size, 0, k.size);
            kernel.dma_copy(lt, lhs.slice(row0, row0 + m.size, k.begin, k.end()));
            const Tensor tp = lhsT_psum.next().slice(0, k.size, 0, m.size);
            kernel.transpose(tp, lt);
            const int col0 = k.index * kBlockM + m.begin;
            kernel.tensor_copy(lt_block.slice(0, k.size, col0, col0 + m.size), tp);
          }
        }
        for (TileSpan m : tiles(mb.size, P)) {
          const Tensor ot = res_tiles.next().slice(0, m.size, 0, c.size);
          for (TileSpan n : tiles(c.size, kTileN)) {
            const Tensor ps = res_psum.next().slice(0, m.size, 0, n.size);
            for (TileSpan k : tiles(shape.K, P)) {
              const int lcol = k.index * kBlockM + m.begin, rcol = k.index * kChunk + n.begin;
              kernel.matmul(ps, lt_block.slice(0, k.size, lcol, lcol + m.size),
                            rt.slice(0, k.size, rcol, rcol + n.size), k.index > 0);
            }
            kernel.tensor_copy(ot.col_range(n.begin, n.end()), ps);
          }
          const int row0 = b * shape.M + mb.begin + m.begin;
          kernel.dma_copy(out.slice(row0, row0 + m.size, c.begin, c.end()), ot);
        }
      }
    }
  }
}

template <Dtype D>
void bmm_paired(Kernel& kernel, const BmmShape& shape, const BmmPairedParams& p) {
  Tensor lhs = kernel.input("lhs", shape.B * shape.M, shape.K, D);
  Tensor rhs = kernel.input("rhs", shape.B * shape.K, shape.N, D);
  Tensor out = kernel.output("out", shape.B * shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  constexpr int kTileN = 512;
  const int group = std::max(p.pe_row_tiles, 1);
  const int step_n = kTileN * p.unroll_factor;
  detail::BmmGroupStaging staging(kernel, lhs, rhs, shape.M, shape.K, shape.N, group, p.dma_transpose != 0,
                                  D);
  TilePool res_psum = kernel.psum_pool("res_psum", 2 * group, P, step_n);
  TilePool res_tiles = kernel.sbuf_pool("res_tile", p.pipeline_depth * group, P, step_n * p.store_factor, D);
  int step = 0;
  for (TileSpan bg : tiles(shape.B, group)) {
    const Tensor rt = staging.load_rhs(bg);
    for (TileSpan m : tiles(shape.M, P)) {
      const Tensor lt_all = staging.transposed_lhs(bg, m);
      // Output blocks of store_factor PSUM steps: drained into one SBUF tile per batch, stored by one DMA.
      for (TileSpan block : tiles(shape.N, step_n * p.store_factor)) {
        std::vector<Tensor> ot;
        for (int j = 0; j < bg.size; ++j) ot.push_back(res_tiles.next().slice(0, m.size, 0, block.size));
        for (TileSpan n : tiles(block, step_n)) {
          // The batches' matmuls interleaved, so that those on different row tiles run side by side.
          std::vector<Tensor> ps;
          for (int j = 0; j < bg.size; ++j) ps.push_back(res_psum.next().slice(0, m.size, 0, n.size));
          for (TileSpan u : tiles(n.size, kTileN))
            for (TileSpan k : tiles(shape.K, P))
              for (int j = 0; j < bg.size; ++j) {
                const auto [r0, r1] = staging.k_rows(j, k);
                const int lcol = k.index * P, rcol = k.index * shape.N + n.begin + u.begin;
                kernel.matmul(ps[j].col_range(u.begin, u.end()), lt_all.slice(r0, r1, lcol, lcol + m.size),
                              rt.slice(r0, r1, rcol, rcol + u.size), k.index > 0, staging.pe_tile(j));
              }
          for (int j = 0; j < bg.size; ++j)
            detail::bmm_drain(kernel, ot[j].col_range(n.offset, n.offset + n.size), ps[j], p.drain_engine,
                              step++);
        }
        for (int j = 0; j < bg.size; ++j) {
          const int row0 = (bg.begin + j) * shape.M + m.begin;
          kernel.dma_copy(out.slice(row0, row0 + m.size, block.begin, block.end()), ot[j]);
        }
      }
    }
  }
}

}  // namespace autotune::kernels
