#pragma once
// lora: a linear layer with a low-rank adapter, out = x . w + (x . a) . b,
// NKIBench's lora task (M=4096, N=12288, K=5120, R=128), x [M, K], w [K, N],
// a [K, R], b [R, N], out [M, N], R at most the partitions. x is transposed on
// chip (kernels/families/row_transpose.hpp); products accumulate in PSUM in
// fp32, the result is stored in the dtype.
#include <algorithm>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"
#include "kernels/families/bmm.hpp"
#include "kernels/families/gemm.hpp"
#include "kernels/families/row_transpose.hpp"

namespace autotune::kernels {

struct LoraShape {
  int M = 0, N = 0, K = 0, R = 0;
};

// NKIBench's starting kernel: the two products apart, both computed
// transposed ([N tile, M] in PSUM). First the low-rank product: per
// 512-row block (x transposed tile by tile), (x . a)^T [R, 512] and, per
// 1024-column chunk of b, (x . a . b)^T, which does not fit on chip and goes
// to HBM. Then per 1024-column chunk of N and 640-row chunk of K (five K
// tiles; the starting kernel loads w ten K tiles at a time and x five): x
// transposed again for every chunk, (x . w)^T accumulated across the K chunks
// in SBUF by the vector engine; at the end of a chunk of N the low-rank
// product reloaded and added, the sum transposed back on the tensor engine
// and stored in [128, 128] tiles. Single buffers.
struct LoraNaiveParams {};

// Per block of tiles_in_block_m row tiles of x: x transposed once and
// (x . a)^T [R, block] computed once; then per step of unroll_factor * 512
// columns of N, each row tile's PSUM tile accumulates x . w over every K
// tile (w streamed in [128, step] K tiles through pipeline_depth buffers)
// and then (x . a) . b, the low-rank product, as one more accumulation into
// the same PSUM tile: no second pass, no extra add. Drained and stored per
// row tile and step.
struct LoraFusedParams {
  int tiles_in_block_m = 3;  // 128-row tiles of x per block: the rows each streamed w tile serves
  int unroll_factor = 1;     // 512-column matmuls per PSUM tile, drain and store
  int pipeline_depth = 8;    // rotating w tiles ([128 K rows, step] each) in flight
  int drain_engine = 0;      // PSUM -> SBUF on 0: the vector engine, 1: the scalar engine, 2: alternating
};

struct LoraOperands {
  Tensor x, w, a, b, out;
};

inline LoraOperands lora_operands(Kernel& kernel, const LoraShape& s, Dtype dtype) {
  LoraOperands o;
  o.x = kernel.input("x", s.M, s.K, dtype);
  o.w = kernel.input("w", s.K, s.N, dtype);
  o.a = kernel.input("a", s.K, s.R, dtype);
  o.b = kernel.input("b", s.R, s.N, dtype);
  o.out = kernel.output("out", s.M, s.N, dtype);
  return o;
}

template <Dtype D>
void lora_naive(Kernel& kernel, const LoraShape& s, const LoraNaiveParams&) {
  const auto [x, w, a, b, out] = lora_operands(kernel, s, D);
  Tensor low_rank = kernel.hbm_scratch("low_rank_spill", s.N, s.M, Dtype::fp32);
  const int P = kernel.limits().partitions;
  constexpr int kBlockM = 512, kChunkN = 1024, kHalfM = 2048, kChunkK = 5 * 128;
  const int k_tiles = tile_count(s.K, P);
  {
    TilePool a_tiles = kernel.sbuf_pool("a_local", 1, P, k_tiles * s.R, D);
    TilePool x_tiles = kernel.sbuf_pool("x_local", 1, P, 8 * P, D);
    TilePool xT_psum = kernel.psum_pool("xT_psum", 1, P, P);
    TilePool xT_tiles = kernel.sbuf_pool("xT_local", 1, P, k_tiles * kBlockM, D);
    TilePool xa_psum = kernel.psum_pool("xa_psum", 1, P, kBlockM);
    TilePool xa_tiles = kernel.sbuf_pool("xaT_local", 1, P, kHalfM, D);
    TilePool b_tiles = kernel.sbuf_pool("b_local", 1, P, kChunkN, D);
    TilePool lr_psum = kernel.psum_pool("low_rank_psum", 1, P, kBlockM);
    TilePool lr_tiles = kernel.sbuf_pool("low_rank_local", 1, P, kBlockM, Dtype::fp32);
    const Tensor at = a_tiles.next();
    for (TileSpan k : tiles(s.K, P))
      kernel.dma_copy(at.slice(0, k.size, k.index * s.R, (k.index + 1) * s.R), a.row_range(k.begin, k.end()));
    for (TileSpan half : tiles(s.M, kHalfM)) {
      const Tensor xaT = xa_tiles.next();
      for (TileSpan mb : tiles(half, kBlockM)) {
        const Tensor xT = xT_tiles.next();
        for (TileSpan kc : tiles(s.K, 8 * P)) {
          const Tensor xT_chunk = xT.col_range((kc.begin / P) * kBlockM, xT.cols());
          transpose_tile_by_tile(kernel, x, mb, kc, xT_chunk, kBlockM, x_tiles, xT_psum);
        }
        const Tensor ps = xa_psum.next().slice(0, s.R, 0, mb.size);
        for (TileSpan k : tiles(s.K, P)) {
          const int xcol = k.index * kBlockM;
          kernel.matmul(ps, at.slice(0, k.size, k.index * s.R, (k.index + 1) * s.R),
                        xT.slice(0, k.size, xcol, xcol + mb.size), k.index > 0);
        }
        kernel.tensor_copy(xaT.slice(0, s.R, mb.offset, mb.offset + mb.size), ps);
      }
      for (TileSpan c : tiles(s.N, kChunkN)) {
        const Tensor bt = b_tiles.next().slice(0, s.R, 0, c.size);
        kernel.dma_copy(bt, b.col_range(c.begin, c.end()));
        for (TileSpan mb : tiles(half, kBlockM))
          for (TileSpan n : tiles(c, P)) {
            const Tensor ps = lr_psum.next().slice(0, n.size, 0, mb.size);
            kernel.matmul(ps, bt.col_range(n.offset, n.offset + n.size),
                          xaT.slice(0, s.R, mb.offset, mb.offset + mb.size), false);
            const Tensor lr = lr_tiles.next().slice(0, n.size, 0, mb.size);
            kernel.tensor_copy(lr, ps);
            kernel.dma_copy(low_rank.slice(n.begin, n.end(), mb.begin, mb.end()), lr);
          }
      }
    }
  }
  const int m_total = s.M;
  TilePool acc_tiles = kernel.sbuf_pool("acc_local", 1, P, (kChunkN / P) * m_total, Dtype::fp32);
  TilePool w_tiles = kernel.sbuf_pool("w_local", 1, P, (kChunkK / P) * kChunkN, D);
  TilePool x_tiles = kernel.sbuf_pool("x_local", 1, P, kChunkK, D);
  TilePool xT_psum = kernel.psum_pool("xT_psum", 1, P, P);
  TilePool xT_tiles = kernel.sbuf_pool("xT_local", 1, P, (kChunkK / P) * kBlockM, D);
  TilePool res_psum = kernel.psum_pool("res_psum", 1, P, kBlockM);
  TilePool lr_tiles = kernel.sbuf_pool("low_rank_reload", 1, P, kBlockM, Dtype::fp32);
  TilePool sum_tiles = kernel.sbuf_pool("sum_local", 1, P, kBlockM, Dtype::fp32);
  TilePool outT_psum = kernel.psum_pool("out_psum", 1, P, P);
  TilePool out_tiles = kernel.sbuf_pool("out_local", 1, P, P, D);
  for (TileSpan c : tiles(s.N, kChunkN)) {
    const Tensor acc = acc_tiles.next();
    for (TileSpan kc : tiles(s.K, kChunkK)) {
      const Tensor wt = w_tiles.next();
      for (TileSpan k : tiles(kc, P))
        kernel.dma_copy(wt.slice(0, k.size, k.index * kChunkN, k.index * kChunkN + c.size),
                        w.slice(k.begin, k.end(), c.begin, c.end()));
      for (TileSpan mb : tiles(s.M, kBlockM)) {
        const Tensor xT = xT_tiles.next();
        transpose_tile_by_tile(kernel, x, mb, kc, xT, kBlockM, x_tiles, xT_psum);
        for (TileSpan n : tiles(c, P)) {
          const Tensor ps = res_psum.next().slice(0, n.size, 0, mb.size);
          for (TileSpan k : tiles(kc, P)) {
            const int wcol = k.index * kChunkN + n.offset, xcol = k.index * kBlockM;
            kernel.matmul(ps, wt.slice(0, k.size, wcol, wcol + n.size),
                          xT.slice(0, k.size, xcol, xcol + mb.size), k.index > 0);
          }
          const int col = n.index * m_total + mb.begin;
          const Tensor sum = acc.slice(0, n.size, col, col + mb.size);
          if (kc.index == 0)
            kernel.tensor_copy(sum, ps);
          else
            kernel.tensor_tensor(sum, sum, ps, AluOp::add);
        }
      }
    }
    for (TileSpan mb : tiles(s.M, kBlockM))
      for (TileSpan n : tiles(c, P)) {
        const Tensor lr = lr_tiles.next().slice(0, n.size, 0, mb.size);
        kernel.dma_copy(lr, low_rank.slice(n.begin, n.end(), mb.begin, mb.end()));
        const Tensor sum = sum_tiles.next().slice(0, n.size, 0, mb.size);
        const int col = n.index * m_total + mb.begin;
        kernel.tensor_tensor(sum, acc.slice(0, n.size, col, col + mb.size), lr, AluOp::add);
        for (TileSpan m : tiles(mb, P)) {
          const Tensor tp = outT_psum.next().slice(0, m.size, 0, n.size);
          kernel.transpose(tp, sum.col_range(m.offset, m.offset + m.size));
          const Tensor ot = out_tiles.next().slice(0, m.size, 0, n.size);
          kernel.tensor_copy(ot, tp);
          kernel.dma_copy(out.slice(m.begin, m.end(), n.begin, n.end()), ot);
        }
      }
  }
}

template <Dtype D>
void lora_fused(Kernel& kernel, const LoraShape& s, const LoraFusedParams& p) {
  const auto [x, w, a, b, out] = lora_operands(kernel, s, D);
  const int P = kernel.limits().partitions;
  constexpr int kTileN = 512;
  const int block_m = P * p.tiles_in_block_m, step_n = kTileN * p.unroll_factor;
  const int k_tiles = tile_count(s.K, P);
  RowTileTransposer transposer(kernel, x, 4 * P, p.tiles_in_block_m, D);
  TilePool a_tiles = kernel.sbuf_pool("a", 1, P, k_tiles * s.R, D);
  TilePool xT_tiles = kernel.sbuf_pool("xT", 1, P, k_tiles * block_m, D);
  TilePool xa_psum = kernel.psum_pool("xa_psum", 1, P, block_m);
  TilePool xa_tiles = kernel.sbuf_pool("xaT", 1, P, block_m, D);
  TilePool w_tiles = kernel.sbuf_pool("w_tile", p.pipeline_depth, P, step_n, D);
  TilePool b_tiles = kernel.sbuf_pool("b_step", 2, P, step_n, D);
  TilePool res_psum = kernel.psum_pool("res_psum", p.tiles_in_block_m + 1, P, step_n);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", p.tiles_in_block_m + 1, P, step_n, D);
  const Tensor at = a_tiles.next();
  for (TileSpan k : tiles(s.K, P))
    kernel.dma_copy(at.slice(0, k.size, k.index * s.R, (k.index + 1) * s.R), a.row_range(k.begin, k.end()));
  int drains = 0;
  for (TileSpan m : tiles(s.M, block_m)) {
    const Tensor xT = xT_tiles.next();
    transposer.transpose(m, xT, block_m);
    const Tensor xa_ps = xa_psum.next().slice(0, s.R, 0, m.size);
    for (TileSpan k : tiles(s.K, P)) {
      const int xcol = k.index * block_m;
      kernel.matmul(xa_ps, at.slice(0, k.size, k.index * s.R, (k.index + 1) * s.R),
                    xT.slice(0, k.size, xcol, xcol + m.size), k.index > 0);
    }
    const Tensor xaT = xa_tiles.next().slice(0, s.R, 0, m.size);
    kernel.tensor_copy(xaT, xa_ps);
    for (TileSpan n : tiles(s.N, step_n)) {
      const Tensor bt = b_tiles.next().slice(0, s.R, 0, n.size);
      kernel.dma_copy(bt, b.col_range(n.begin, n.end()));
      std::vector<Tensor> ps;  // by row tile of the block
      for (TileSpan r : tiles(m, P)) ps.push_back(res_psum.next().slice(0, r.size, 0, n.size));
      for (TileSpan k : tiles(s.K, P)) {
        const Tensor wt = w_tiles.next().slice(0, k.size, 0, n.size);
        kernel.dma_copy(wt, w.slice(k.begin, k.end(), n.begin, n.end()));
        for (TileSpan r : tiles(m, P)) {
          const int xcol = k.index * block_m + r.offset;
          matmul_step(kernel, ps[r.index], xT.slice(0, k.size, xcol, xcol + r.size), wt, kTileN, k.index > 0);
        }
      }
      // The low-rank product: one more accumulation into each row tile's PSUM tile.
      for (TileSpan r : tiles(m, P)) {
        matmul_step(kernel, ps[r.index], xaT.col_range(r.offset, r.offset + r.size), bt, kTileN, true);
        const Tensor ot = out_tiles.next().slice(0, r.size, 0, n.size);
        detail::bmm_drain(kernel, ot, ps[r.index], p.drain_engine, drains++);
        kernel.dma_copy(out.slice(r.begin, r.end(), n.begin, n.end()), ot);
      }
    }
  }
}

}  // namespace autotune::kernels
