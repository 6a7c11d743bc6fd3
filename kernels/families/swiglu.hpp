#pragma once
// swiglu: the whole gated MLP out = (silu(x . w_gate) * (x . w_up)) . w_down,
// NKIBench's swiglu task (M=4096, N=3072, K=1024), x [M, K], w_up and
// w_gate [K, N], w_down [N, K], out [M, K]; silu(g) = g / (1 + exp(-g)).
// Inputs in NKIBench's order (x, w_up, w_down, w_gate). x is transposed on
// chip (kernels/families/row_transpose.hpp); the gate and up products are
// computed transposed ([N tile, M] in PSUM, w_gate's and w_up's columns the
// stationary operand), so that the intermediate h^T = (silu(gate) * up)^T
// has N on the partitions: the stationary operand of the down product, with
// no transpose. Products accumulate in PSUM in fp32; h and the result are
// stored in the dtype.
#include <algorithm>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"
#include "kernels/families/bmm.hpp"
#include "kernels/families/elementwise.hpp"
#include "kernels/families/row_transpose.hpp"

namespace autotune::kernels {

struct SwigluShape {
  int M = 0, N = 0, K = 0;
};

// NKIBench's starting kernel: three passes. Per 1024-column chunk of N and
// 512-row block of M, x's rows are loaded and transposed on the tensor
// engine, one [128, 128] transpose and copy at a time, again for every
// chunk and for each of the gate and up passes; the gate^T tiles ([128, 512])
// are drained to SBUF, where they do not fit (M x N fp32 is 384 KiB per
// partition at NKIBench's shape), so they go through HBM; the up pass
// computes silu(gate) as exp(-gate), + 1, a reciprocal and a product, times
// up, and spills h^T to HBM as the starting kernel does; the down pass loads
// all of w_down, reloads h^T per 512-row block and stores [128, 1024] chunks.
// Single buffers.
struct SwigluNaiveParams {};

// Per block of tiles_in_block_m row tiles of x: x transposed once; per
// group of tiles_in_block_n 128-column tiles of N, w_gate's and w_up's
// columns loaded (streamed through pipeline_depth groups); per N tile the
// gate and up products of the whole block ([128, block] in PSUM), silu(gate)
// on the scalar engine and the product with up on the vector engine into
// h^T, which stays on chip; then the down product per 512 columns of K,
// w_down streamed in [128, 512] tiles, accumulated over N in PSUM for each
// row tile of the block, drained into whole output rows stored once per row
// tile.
struct SwigluFusedParams {
  int tiles_in_block_m =
      4;  // 128-row tiles of x per block: the gate/up matmuls' moving size (<= 512 columns)
  int tiles_in_block_n = 2;  // 128-column tiles of w_gate and w_up per loaded group
  int pipeline_depth = 2;    // weight groups in flight (w_down tiles: pipeline_depth * tiles_in_block_n)
  int drain_engine = 0;      // out PSUM -> SBUF on 0: the vector engine, 1: the scalar engine, 2: alternating
};

struct SwigluOperands {
  Tensor x, w_up, w_down, w_gate, out;
};

inline SwigluOperands swiglu_operands(Kernel& kernel, const SwigluShape& s, Dtype dtype) {
  SwigluOperands o;
  o.x = kernel.input("x", s.M, s.K, dtype);
  o.w_up = kernel.input("w_up", s.K, s.N, dtype);
  o.w_down = kernel.input("w_down", s.N, s.K, dtype);
  o.w_gate = kernel.input("w_gate", s.K, s.N, dtype);
  o.out = kernel.output("out", s.M, s.K, dtype);
  return o;
}

namespace detail {
// The naive variant's projection pass: per chunk of N and block of M, x
// transposed tile by tile, and dst^T [N tile, M block] = w[:, N tile]^T .
// x^T handed to `epilogue(n, mb, psum)` (absolute spans).
template <class Epilogue>
void swiglu_naive_projection(Kernel& kernel, const SwigluShape& s, const Tensor& x, const Tensor& w,
                             Dtype dtype, const char* name, Epilogue&& epilogue) {
  const int P = kernel.limits().partitions;
  constexpr int kChunk = 1024, kBlockM = 512;
  const int k_tiles = tile_count(s.K, P);
  TilePool w_chunks = kernel.sbuf_pool(std::string(name) + "_local", 1, P, k_tiles * kChunk, dtype);
  TilePool x_tiles = kernel.sbuf_pool("x_local", 1, P, s.K, dtype);
  TilePool xT_psum = kernel.psum_pool("xT_psum", 1, P, P);
  TilePool xT_tiles = kernel.sbuf_pool("xT_local", 1, P, k_tiles * kBlockM, dtype);
  TilePool res_psum = kernel.psum_pool(std::string(name) + "_psum", 1, P, kBlockM);
  for (TileSpan c : tiles(s.N, kChunk)) {
    const Tensor wc = w_chunks.next();
    for (TileSpan k : tiles(s.K, P))
      kernel.dma_copy(wc.slice(0, k.size, k.index * kChunk, k.index * kChunk + c.size),
                      w.slice(k.begin, k.end(), c.begin, c.end()));
    for (TileSpan mb : tiles(s.M, kBlockM)) {
      const Tensor xT = xT_tiles.next();
      transpose_tile_by_tile(kernel, x, mb, TileSpan{0, 0, s.K, 0}, xT, kBlockM, x_tiles, xT_psum);
      for (TileSpan n : tiles(c, P)) {
        const Tensor ps = res_psum.next().slice(0, n.size, 0, mb.size);
        for (TileSpan k : tiles(s.K, P)) {
          const int wcol = k.index * kChunk + n.offset, xcol = k.index * kBlockM;
          kernel.matmul(ps, wc.slice(0, k.size, wcol, wcol + n.size),
                        xT.slice(0, k.size, xcol, xcol + mb.size), k.index > 0);
        }
        epilogue(n, mb, ps);
      }
    }
  }
}
}  // namespace detail

template <Dtype D>
void swiglu_naive(Kernel& kernel, const SwigluShape& s, const SwigluNaiveParams&) {
  const auto [x, w_up, w_down, w_gate, out] = swiglu_operands(kernel, s, D);
  Tensor gate_spill = kernel.hbm_scratch("gate_spill", s.N, s.M, Dtype::fp32);
  Tensor h_spill = kernel.hbm_scratch("h_spill", s.N, s.M, D);
  const int P = kernel.limits().partitions;
  constexpr int kBlockM = 512, kChunk = 1024, kTileK = 512;
  {
    TilePool gate_tiles = kernel.sbuf_pool("gate_local", 1, P, kBlockM, Dtype::fp32);
    detail::swiglu_naive_projection(
        kernel, s, x, w_gate, D, "w_gate", [&](const TileSpan& n, const TileSpan& mb, const Tensor& ps) {
          const Tensor g = gate_tiles.next().slice(0, n.size, 0, mb.size);
          kernel.tensor_copy(g, ps);
          kernel.dma_copy(gate_spill.slice(n.begin, n.end(), mb.begin, mb.end()), g);
        });
  }
  {
    TilePool gate_tiles = kernel.sbuf_pool("gate_reload", 1, P, kBlockM, Dtype::fp32);
    TilePool work_tiles = kernel.sbuf_pool("silu_work", 1, P, kBlockM, Dtype::fp32);
    TilePool silu_tiles = kernel.sbuf_pool("silu_gate", 1, P, kBlockM, Dtype::fp32);
    TilePool h_tiles = kernel.sbuf_pool("h_local", 1, P, kBlockM, D);
    detail::swiglu_naive_projection(
        kernel, s, x, w_up, D, "w_up", [&](const TileSpan& n, const TileSpan& mb, const Tensor& up) {
          const Tensor g = gate_tiles.next().slice(0, n.size, 0, mb.size);
          kernel.dma_copy(g, gate_spill.slice(n.begin, n.end(), mb.begin, mb.end()));
          const Tensor work = work_tiles.next().slice(0, n.size, 0, mb.size);
          const Tensor sg = silu_tiles.next().slice(0, n.size, 0, mb.size);
          detail::silu_by_exp(kernel, sg, g, work);
          const Tensor h = h_tiles.next().slice(0, n.size, 0, mb.size);
          kernel.tensor_tensor(h, sg, up, AluOp::multiply);
          kernel.dma_copy(h_spill.slice(n.begin, n.end(), mb.begin, mb.end()), h);
        });
  }
  const int n_tiles = tile_count(s.N, P);
  TilePool w_down_tiles = kernel.sbuf_pool("w_down_local", 1, P, n_tiles * s.K, D);
  TilePool h_tiles = kernel.sbuf_pool("h_reload", 1, P, n_tiles * kBlockM, D);
  TilePool res_psum = kernel.psum_pool("out_psum", 1, P, kTileK);
  TilePool out_tiles = kernel.sbuf_pool("out_local", 1, P, kChunk, D);
  const Tensor wd = w_down_tiles.next();
  for (TileSpan n : tiles(s.N, P))
    kernel.dma_copy(wd.slice(0, n.size, n.index * s.K, (n.index + 1) * s.K),
                    w_down.row_range(n.begin, n.end()));
  for (TileSpan mb : tiles(s.M, kBlockM)) {
    const Tensor hT = h_tiles.next();
    for (TileSpan n : tiles(s.N, P))
      kernel.dma_copy(hT.slice(0, n.size, n.index * kBlockM, n.index * kBlockM + mb.size),
                      h_spill.slice(n.begin, n.end(), mb.begin, mb.end()));
    for (TileSpan m : tiles(mb, P))
      for (TileSpan c : tiles(s.K, kChunk)) {
        const Tensor ot = out_tiles.next().slice(0, m.size, 0, c.size);
        for (TileSpan kt : tiles(c, kTileK)) {
          const Tensor ps = res_psum.next().slice(0, m.size, 0, kt.size);
          for (TileSpan n : tiles(s.N, P)) {
            const int hcol = n.index * kBlockM + m.offset, wcol = n.index * s.K + kt.begin;
            kernel.matmul(ps, hT.slice(0, n.size, hcol, hcol + m.size),
                          wd.slice(0, n.size, wcol, wcol + kt.size), n.index > 0);
          }
          kernel.tensor_copy(ot.col_range(kt.offset, kt.offset + kt.size), ps);
        }
        kernel.dma_copy(out.slice(m.begin, m.end(), c.begin, c.end()), ot);
      }
  }
}

template <Dtype D>
void swiglu_fused(Kernel& kernel, const SwigluShape& s, const SwigluFusedParams& p) {
  const auto [x, w_up, w_down, w_gate, out] = swiglu_operands(kernel, s, D);
  const int P = kernel.limits().partitions;
  constexpr int kTileK = 512;  // columns of the down product per PSUM tile (one fp32 bank)
  const int block_m = P * p.tiles_in_block_m, group_n = P * p.tiles_in_block_n;
  const int k_tiles = tile_count(s.K, P), n_tiles = tile_count(s.N, P);
  RowTileTransposer transposer(kernel, x, 4 * P, p.tiles_in_block_m, D);
  TilePool xT_tiles = kernel.sbuf_pool("xT", 1, P, k_tiles * block_m, D);
  TilePool gate_w = kernel.sbuf_pool("w_gate_group", p.pipeline_depth, P, k_tiles * group_n, D);
  TilePool up_w = kernel.sbuf_pool("w_up_group", p.pipeline_depth, P, k_tiles * group_n, D);
  TilePool down_w = kernel.sbuf_pool("w_down_tile", p.pipeline_depth * p.tiles_in_block_n, P, kTileK, D);
  TilePool h_tiles = kernel.sbuf_pool("hT", 1, P, n_tiles * block_m, D);
  TilePool work_tiles = kernel.sbuf_pool("silu_gate", 2, P, block_m, Dtype::fp32);
  TilePool out_tiles = kernel.sbuf_pool("out_rows", p.tiles_in_block_m, P, s.K, D);
  TilePool gate_psum = kernel.psum_pool("gate_psum", 1, P, block_m);
  TilePool up_psum = kernel.psum_pool("up_psum", 1, P, block_m);
  TilePool out_psum = kernel.psum_pool("out_psum", p.tiles_in_block_m, P, kTileK);
  int drains = 0;
  for (TileSpan m : tiles(s.M, block_m)) {
    const Tensor xT = xT_tiles.next();
    transposer.transpose(m, xT, block_m);
    const Tensor hT = h_tiles.next();
    for (TileSpan g : tiles(s.N, group_n)) {
      const Tensor wg = gate_w.next(), wu = up_w.next();
      for (TileSpan k : tiles(s.K, P)) {
        const int col = k.index * group_n;
        kernel.dma_copy(wg.slice(0, k.size, col, col + g.size),
                        w_gate.slice(k.begin, k.end(), g.begin, g.end()));
        kernel.dma_copy(wu.slice(0, k.size, col, col + g.size),
                        w_up.slice(k.begin, k.end(), g.begin, g.end()));
      }
      for (TileSpan n : tiles(g, P)) {
        const Tensor gate = gate_psum.next().slice(0, n.size, 0, m.size);
        const Tensor up = up_psum.next().slice(0, n.size, 0, m.size);
        for (const auto& [ps, w] : {std::pair{gate, wg}, std::pair{up, wu}})
          for (TileSpan k : tiles(s.K, P)) {
            const int wcol = k.index * group_n + n.offset, xcol = k.index * block_m;
            kernel.matmul(ps, w.slice(0, k.size, wcol, wcol + n.size),
                          xT.slice(0, k.size, xcol, xcol + m.size), k.index > 0);
          }
        const int hcol = (n.begin / P) * block_m;
        detail::elementwise_compute(kernel, ElementwiseOp::silu_mul, hT.slice(0, n.size, hcol, hcol + m.size),
                                    gate, up, work_tiles.next().slice(0, n.size, 0, m.size), Engine::vector,
                                    0);
      }
    }
    std::vector<Tensor> rows;  // by row tile of the block: [rows, K]
    for (TileSpan r : tiles(m, P)) rows.push_back(out_tiles.next().slice(0, r.size, 0, s.K));
    for (TileSpan kt : tiles(s.K, kTileK)) {
      std::vector<Tensor> ps;
      for (TileSpan r : tiles(m, P)) ps.push_back(out_psum.next().slice(0, r.size, 0, kt.size));
      for (TileSpan n : tiles(s.N, P)) {
        const Tensor wd = down_w.next().slice(0, n.size, 0, kt.size);
        kernel.dma_copy(wd, w_down.slice(n.begin, n.end(), kt.begin, kt.end()));
        for (TileSpan r : tiles(m, P)) {
          const int hcol = n.index * block_m + r.offset;
          kernel.matmul(ps[r.index], hT.slice(0, n.size, hcol, hcol + r.size), wd, n.index > 0);
        }
      }
      for (TileSpan r : tiles(m, P))
        detail::bmm_drain(kernel, rows[r.index].col_range(kt.begin, kt.end()), ps[r.index], p.drain_engine,
                          drains++);
    }
    for (TileSpan r : tiles(m, P)) kernel.dma_copy(out.row_range(r.begin, r.end()), rows[r.index]);
  }
}

}  // namespace autotune::kernels
