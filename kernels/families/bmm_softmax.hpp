#pragma once
// bmm_softmax: out[b] = softmax(lhs[b] . rhs[b]) along each row (over N),
// NKIBench's bmm_softmax task (B=16, M=4096, K=64, N=4096). Operands as in
// bmm (kernels/families/bmm.hpp): lhs [B * M, K], rhs [B * K, N], out
// [B * M, N]; the softmax is max-subtracted, in fp32, stored in the dtype.
#include <algorithm>
#include <optional>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"
#include "kernels/families/bmm.hpp"

namespace autotune::kernels {

using BmmSoftmaxShape = BmmShape;  // the operands are bmm's

// NKIBench's starting kernel: the bmm starting kernel (lhs re-transposed per
// 1024-column chunk of rhs), each [128, 512] score tile's row max reduced
// into a running max; the scores of a batch do not fit on chip, so they
// go to HBM and come back for the second pass: per row tile exp(s - max)
// per [128, 512] piece with its sum reduced separately, a reciprocal, and
// the probabilities scaled and stored in [128, 1024] chunks. Single buffers.
struct BmmSoftmaxNaiveParams {};

// Per group of pe_row_tiles batches (their matmuls side by side on PE row
// tiles, as in bmm's paired variant) and per M tile: the scores of whole
// rows computed bank by bank (512 columns), each bank drained from PSUM
// with its row max in one instruction; then one exp over the whole row on
// the scalar engine, its row sum in the same pass; the reciprocal of the sum
// and the scaling of the row in place on the engine `scale_engine` names;
// one store per row tile. Row tiles rotate through pipeline_depth buffers per batch.
struct BmmSoftmaxFusedParams {
  int pe_row_tiles = 2;    // batches side by side on the PE array's row tiles (1: the whole array)
  int pipeline_depth = 2;  // rotating row-tile buffers per batch
  int scale_engine = 0;    // the scaling by 1 / sum on 0: the vector engine, 1: GpSimd, 2: the scalar engine
  int dma_transpose = 0;   // 1: lhs transposed by a transposing DMA; 0: by the tensor engine
};

template <Dtype D>
void bmm_softmax_naive(Kernel& kernel, const BmmSoftmaxShape& shape, const BmmSoftmaxNaiveParams&) {
  Tensor lhs = kernel.input("lhs", shape.B * shape.M, shape.K, D);
  Tensor rhs = kernel.input("rhs", shape.B * shape.K, shape.N, D);
  Tensor out = kernel.output("out", shape.B * shape.M, shape.N, D);
  Tensor scores = kernel.hbm_scratch("scores", shape.B * shape.M, shape.N, Dtype::fp32);
  const int P = kernel.limits().partitions;
  constexpr int kChunk = 1024, kBlockM = 1024, kTileN = 512;
  const int k_tiles = tile_count(shape.K, P), m_tiles = tile_count(shape.M, P);
  TilePool rhs_tiles = kernel.sbuf_pool("rhs_local", 1, P, k_tiles * kChunk, D);
  TilePool lhs_tiles = kernel.sbuf_pool("lhs_local", 1, P, P, D);
  TilePool lhsT_psum = kernel.psum_pool("lhsT_psum", 1, P, P);
  TilePool lhsT_tiles = kernel.sbuf_pool("lhsT_local", 1, P, k_tiles * kBlockM, D);
  TilePool res_psum = kernel.psum_pool("res_psum", 1, P, kTileN);
  TilePool score_tiles = kernel.sbuf_pool("score_local", 1, P, kTileN, Dtype::fp32);
  TilePool columns = kernel.sbuf_pool("row_stats", 1, P, 2 * m_tiles, Dtype::fp32);
  TilePool partials = kernel.sbuf_pool("partial", 1, P, 1, Dtype::fp32);
  TilePool small = kernel.sbuf_pool("row_scalars", 3, P, 1, Dtype::fp32);
  TilePool probs_tiles = kernel.sbuf_pool("probs_local", 1, P, shape.N, Dtype::fp32);
  TilePool out_tiles = kernel.sbuf_pool("out_local", 1, P, kChunk, D);
  for (int b = 0; b < shape.B; ++b) {
    // Column m of `stats`: the running row max of M tile m; column m_tiles + m: its row sum.
    const Tensor stats = columns.next();
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
          const int mt = (mb.begin + m.begin) / P;
          const Tensor row_max = stats.slice(0, m.size, mt, mt + 1);
          const int row0 = b * shape.M + mb.begin + m.begin;
          for (TileSpan n : tiles(c.size, kTileN)) {
            const Tensor ps = res_psum.next().slice(0, m.size, 0, n.size);
            for (TileSpan k : tiles(shape.K, P)) {
              const int lcol = k.index * kBlockM + m.begin, rcol = k.index * kChunk + n.begin;
              kernel.matmul(ps, lt_block.slice(0, k.size, lcol, lcol + m.size),
                            rt.slice(0, k.size, rcol, rcol + n.size), k.index > 0);
            }
            const Tensor st = score_tiles.next().slice(0, m.size, 0, n.size);
            kernel.tensor_copy(st, ps);
            const Tensor part = partials.next().slice(0, m.size, 0, 1);
            kernel.tensor_reduce(part, st, AluOp::max);
            if (c.index == 0 && n.index == 0)
              kernel.tensor_copy(row_max, part);
            else
              kernel.tensor_tensor(row_max, row_max, part, AluOp::max);
            kernel.dma_copy(scores.slice(row0, row0 + m.size, c.begin + n.begin, c.begin + n.end()), st);
          }
        }
      }
    }
    for (TileSpan m : tiles(shape.M, P)) {
      const int row0 = b * shape.M + m.begin;
      const Tensor row_max = stats.slice(0, m.size, m.index, m.index + 1);
      const Tensor row_sum = stats.slice(0, m.size, m_tiles + m.index, m_tiles + m.index + 1);
      const Tensor neg_max = small.next().slice(0, m.size, 0, 1);
      kernel.tensor_scalar(neg_max, row_max, AluOp::max, -3.4028235e38f, AluOp::multiply, -1.0f);
      const Tensor probs = probs_tiles.next().slice(0, m.size, 0, shape.N);
      for (TileSpan n : tiles(shape.N, kTileN)) {
        const Tensor st = score_tiles.next().slice(0, m.size, 0, n.size);
        kernel.dma_copy(st, scores.slice(row0, row0 + m.size, n.begin, n.end()));
        const Tensor pt = probs.col_range(n.begin, n.end());
        kernel.activation(pt, st, ActivationFunction::exp, neg_max);
        const Tensor part = partials.next().slice(0, m.size, 0, 1);
        kernel.tensor_reduce(part, pt, AluOp::add);
        if (n.index == 0)
          kernel.tensor_copy(row_sum, part);
        else
          kernel.tensor_tensor(row_sum, row_sum, part, AluOp::add);
      }
      const Tensor inv_sum = small.next().slice(0, m.size, 0, 1);
      kernel.reciprocal(inv_sum, row_sum);
      for (TileSpan c : tiles(shape.N, kChunk)) {
        const Tensor ot = out_tiles.next().slice(0, m.size, 0, c.size);
        for (TileSpan n : tiles(c, kTileN))
          kernel.tensor_scalar(ot.col_range(n.offset, n.offset + n.size), probs.col_range(n.begin, n.end()),
                               AluOp::multiply, inv_sum);
        kernel.dma_copy(out.slice(row0, row0 + m.size, c.begin, c.end()), ot);
      }
    }
  }
}

template <Dtype D>
void bmm_softmax_fused(Kernel& kernel, const BmmSoftmaxShape& shape, const BmmSoftmaxFusedParams& p) {
  Tensor lhs = kernel.input("lhs", shape.B * shape.M, shape.K, D);
  Tensor rhs = kernel.input("rhs", shape.B * shape.K, shape.N, D);
  Tensor out = kernel.output("out", shape.B * shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  constexpr int kBank = 512;
  const int group = std::max(p.pe_row_tiles, 1);
  const int banks = tile_count(shape.N, kBank);
  const Engine scale_engine = p.scale_engine == 1   ? Engine::gpsimd
                              : p.scale_engine == 2 ? Engine::scalar
                                                    : Engine::vector;

  detail::BmmGroupStaging staging(kernel, lhs, rhs, shape.M, shape.K, shape.N, group, p.dma_transpose != 0,
                                  D);
  // Score banks rotate through the PSUM the transposes leave.
  TilePool score_psum = kernel.psum_pool("score_psum", p.dma_transpose == 0 ? 6 : 7, P, kBank);
  const int depth = p.pipeline_depth * group;
  TilePool score_tiles = kernel.sbuf_pool("scores", depth, P, shape.N, Dtype::fp32);
  TilePool out_tiles =
      kernel.sbuf_pool("probs", D == Dtype::fp32 ? 1 : depth, P, D == Dtype::fp32 ? 1 : shape.N, D);
  TilePool bank_max = kernel.sbuf_pool("bank_max", depth, P, banks, Dtype::fp32);
  TilePool columns = kernel.sbuf_pool("row_stats", 3 * depth, P, 1, Dtype::fp32);
  for (TileSpan bg : tiles(shape.B, group)) {
    const Tensor rt = staging.load_rhs(bg);
    for (TileSpan m : tiles(shape.M, P)) {
      const Tensor lt_all = staging.transposed_lhs(bg, m);
      std::vector<Tensor> st, maxima;
      for (int j = 0; j < bg.size; ++j) {
        st.push_back(score_tiles.next().slice(0, m.size, 0, shape.N));
        maxima.push_back(bank_max.next().slice(0, m.size, 0, banks));
      }
      // Scores bank by bank, the batches' matmuls interleaved on their row tiles;
      // each bank leaves PSUM with its row max.
      for (TileSpan n : tiles(shape.N, kBank)) {
        std::vector<Tensor> ps;
        for (int j = 0; j < bg.size; ++j) ps.push_back(score_psum.next().slice(0, m.size, 0, n.size));
        for (TileSpan k : tiles(shape.K, P))
          for (int j = 0; j < bg.size; ++j) {
            const auto [r0, r1] = staging.k_rows(j, k);
            const int lcol = k.index * P, rcol = k.index * shape.N + n.begin;
            kernel.matmul(ps[j], lt_all.slice(r0, r1, lcol, lcol + m.size),
                          rt.slice(r0, r1, rcol, rcol + n.size), k.index > 0, staging.pe_tile(j));
          }
        for (int j = 0; j < bg.size; ++j)
          kernel.tensor_scalar_reduce(st[j].col_range(n.begin, n.end()), ps[j], AluOp::multiply, 1.0f,
                                      AluOp::max, maxima[j].col_range(n.index, n.index + 1));
      }
      for (int j = 0; j < bg.size; ++j) {
        const Tensor neg_max = columns.next().slice(0, m.size, 0, 1);
        const Tensor row_sum = columns.next().slice(0, m.size, 0, 1);
        const Tensor inv_sum = columns.next().slice(0, m.size, 0, 1);
        kernel.tensor_reduce(neg_max, maxima[j], AluOp::max);
        kernel.tensor_scalar(neg_max, neg_max, AluOp::multiply, -1.0f);
        kernel.activation(st[j], st[j], ActivationFunction::exp, neg_max, 1.0f, &row_sum);
        // 1 / sum on the scaling's engine: the vector engine, when it is not that engine, goes on
        // draining the next banks instead of waiting for the exp.
        kernel.tensor_scalar(inv_sum, row_sum, AluOp::pow, -1.0f, AluOp::bypass, 0.0f, scale_engine);
        // fp32 results are scaled in place; other dtypes into a tile of the dtype.
        const Tensor result = D == Dtype::fp32 ? st[j] : out_tiles.next().slice(0, m.size, 0, shape.N);
        kernel.tensor_scalar(result, st[j], AluOp::multiply, inv_sum, AluOp::bypass, 0.0f, scale_engine);
        const int row0 = (bg.begin + j) * shape.M + m.begin;
        kernel.dma_copy(out.slice(row0, row0 + m.size, 0, shape.N), result);
      }
    }
  }
}

}  // namespace autotune::kernels
