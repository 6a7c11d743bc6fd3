#pragma once
// Causal scaled-dot-product attention with grouped-query heads (the shapes of
// Qwen3-0.6B: head_dim 128, 16 query heads, 8 key/value heads): the kernel
// templates of the `attention` family.
//
//   out_h = softmax(Q_h K_g^T / sqrt(head_dim) + causal mask) V_g,  g = h / (q_heads / kv_heads)
//
// HBM layout (one sequence, no batch axis; the layout of the NKI flash
// attention kernels, so that the contraction axis head_dim lands on the
// partitions of Q and K without a transposing load):
//   q_t  [q_heads * head_dim, seq]   rows h*d .. h*d+d-1 hold Q_h^T
//   k_t  [kv_heads * head_dim, seq]  rows g*d .. g*d+d-1 hold K_g^T
//   v    [kv_heads * seq, head_dim]  rows g*seq .. g*seq+seq-1 hold V_g
//   out  [q_heads * seq, head_dim]   rows h*seq .. h*seq+seq-1 hold O_h
// Any seq >= 1 is accepted: the last query and key tiles may be ragged.
//
// Two variants:
//  - attention_naive: what a compiler without a fused attention kernel emits:
//    three passes, each materialising its whole result in HBM because it
//    never fits on chip at long sequences: S = Q K^T / sqrt(d) with the mask
//    applied (fp32 scratch), P = softmax(S) row by row (scratch in the input
//    dtype), O = P V. It computes the full score matrix, masked part included.
//  - attention_flash: tiles over keys/values with an online softmax (running
//    row max m, running row sum l, the accumulator rescaled by exp(m_old -
//    m_new)); scores and probabilities never leave the chip. Fully masked key
//    tiles are skipped; tiles crossing the diagonal are masked with
//    affine_select. Each key/value tile loaded is reused by `unroll_factor`
//    query tiles of every query head that shares its kv head.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct AttentionShape {
  int seq = 0;
  int q_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int group() const { return q_heads / kv_heads; }  // query heads per kv head
};

// The naive variant has nothing to tune: it is the fixed baseline.
struct NaiveAttentionParams {};

struct FlashAttentionParams {
  int kv_tile = 256;        // keys per step: the free size of the score tile (<= 512, multiple of 128)
  int q_tile = 128;         // queries per score tile: its partitions (<= 128)
  int pipeline_depth = 2;   // rotating K and V buffers: loads of the next tiles overlap compute
  int unroll_factor = 1;    // query tiles (per query head of the group) that share each K/V load
};

// Fill for masked scores: far below any real score, and exp(scale * (fill -
// max)) is exactly 0 in fp32.
inline constexpr float kMaskedScore = -30000.0f;
// Partitions of the tensor engine and of SBUF tiles.
inline constexpr int kPartitions = 128;

struct AttentionTensors {
  Tensor q_t, k_t, v, out;
};

// Declares the HBM inputs (q_t, k_t, v) then the output, in the family's order.
inline AttentionTensors declare_attention_tensors(Kernel& kernel, const AttentionShape& shape, Dtype dtype) {
  AttentionTensors io;
  io.q_t = kernel.input("q_t", shape.q_heads * shape.head_dim, shape.seq, dtype);
  io.k_t = kernel.input("k_t", shape.kv_heads * shape.head_dim, shape.seq, dtype);
  io.v = kernel.input("v", shape.kv_heads * shape.seq, shape.head_dim, dtype);
  io.out = kernel.output("out", shape.q_heads * shape.seq, shape.head_dim, dtype);
  return io;
}

// ---------------------------------------------------------------------------
// naive: score matrix and probabilities round-trip through HBM.
template <Dtype dtype>
void attention_naive(Kernel& kernel, const AttentionShape& shape, const NaiveAttentionParams& /*params*/ = {}) {
  const AttentionTensors io = declare_attention_tensors(kernel, shape, dtype);
  const int seq = shape.seq, d = shape.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // The generic matmul lowering: 128 query rows by 512 key columns (one PSUM bank).
  constexpr int kRowTile = kPartitions, kColChunk = 512;
  const Tensor scores = kernel.hbm_scratch("scores", shape.q_heads * seq, seq, Dtype::fp32);
  const Tensor probs = kernel.hbm_scratch("probs", shape.q_heads * seq, seq, dtype);

  // Pass 1: S = mask(Q K^T * scale), written to HBM chunk by chunk.
  {
    auto k_pool = kernel.sbuf_pool("naive_k_t", 1, d, seq, dtype);
    auto q_pool = kernel.sbuf_pool("naive_q_t", 2, d, kRowTile, dtype);
    auto s_psum = kernel.psum_pool("naive_scores_psum", 2, kRowTile, kColChunk);
    auto s_pool = kernel.sbuf_pool("naive_scores", 2, kRowTile, kColChunk, Dtype::fp32);
    for (int h = 0; h < shape.q_heads; ++h) {
      const int g = h / shape.group();
      const Tensor k_t = k_pool.next();
      kernel.dma_copy(k_t, io.k_t.slice(g * d, g * d + d, 0, seq));
      for (int q0 = 0; q0 < seq; q0 += kRowTile) {
        const int rows = std::min(kRowTile, seq - q0);
        const Tensor q_t = q_pool.next().slice(0, d, 0, rows);
        kernel.dma_copy(q_t, io.q_t.slice(h * d, h * d + d, q0, q0 + rows));
        for (int k0 = 0; k0 < seq; k0 += kColChunk) {
          const int cols = std::min(kColChunk, seq - k0);
          const Tensor s_ps = s_psum.next().slice(0, rows, 0, cols);
          kernel.matmul(s_ps, q_t, k_t.slice(0, d, k0, k0 + cols), false);
          const Tensor s = s_pool.next().slice(0, rows, 0, cols);
          kernel.activation(s, s_ps, ActivationFunction::identity, 0.0f, scale);
          // keep where (q0 + p) - (k0 + c) >= 0
          kernel.affine_select(s, s, static_cast<float>(q0 - k0), 1, -1, kMaskedScore);
          kernel.dma_copy(scores.slice(h * seq + q0, h * seq + q0 + rows, k0, k0 + cols), s);
        }
      }
    }
  }

  // Pass 2: P = softmax(S) over whole rows.
  {
    auto s_pool = kernel.sbuf_pool("naive_score_rows", 1, kRowTile, seq, Dtype::fp32);
    auto p_pool = kernel.sbuf_pool("naive_prob_rows", 1, kRowTile, seq, dtype);
    auto col_pool = kernel.sbuf_pool("naive_row_stats", 4, kRowTile, 1, Dtype::fp32);
    for (int h = 0; h < shape.q_heads; ++h) {
      for (int q0 = 0; q0 < seq; q0 += kRowTile) {
        const int rows = std::min(kRowTile, seq - q0);
        const Tensor s = s_pool.next().slice(0, rows, 0, seq);
        kernel.dma_copy(s, scores.slice(h * seq + q0, h * seq + q0 + rows, 0, seq));
        const Tensor row_max = col_pool.next().slice(0, rows, 0, 1);
        kernel.tensor_reduce(row_max, s, AluOp::max);
        const Tensor neg_max = col_pool.next().slice(0, rows, 0, 1);
        kernel.tensor_scalar(neg_max, row_max, AluOp::multiply, -1.0f);
        const Tensor row_sum = col_pool.next().slice(0, rows, 0, 1);
        kernel.activation(s, s, ActivationFunction::exp, neg_max, 1.0f, &row_sum);
        const Tensor inv_sum = col_pool.next().slice(0, rows, 0, 1);
        kernel.reciprocal(inv_sum, row_sum);
        const Tensor p = p_pool.next().slice(0, rows, 0, seq);
        kernel.tensor_scalar(p, s, AluOp::multiply, inv_sum);
        kernel.dma_copy(probs.slice(h * seq + q0, h * seq + q0 + rows, 0, seq), p);
      }
    }
  }

  // Pass 3: O = P V. P is read back row block by row block and transposed on
  // the tensor engine (the contraction over keys needs keys on partitions).
  {
    const int chunks = tile_count(seq, kPartitions);
    constexpr int kChunksPerBank = 4;  // 4 transposed [128, 128] blocks fill one PSUM bank
    auto v_pool = kernel.sbuf_pool("naive_v", 1, kPartitions, chunks * d, dtype);
    auto p_pool = kernel.sbuf_pool("naive_probs", 1, kRowTile, seq, dtype);
    auto pt_psum = kernel.psum_pool("naive_probs_t_psum", 2, kPartitions, kChunksPerBank * kRowTile);
    auto pt_pool = kernel.sbuf_pool("naive_probs_t", 2, kPartitions, kChunksPerBank * kRowTile, dtype);
    auto o_psum = kernel.psum_pool("naive_out_psum", 2, kRowTile, d);
    auto o_pool = kernel.sbuf_pool("naive_out", 2, kRowTile, d, dtype);
    for (int h = 0; h < shape.q_heads; ++h) {
      const int g = h / shape.group();
      const Tensor v = v_pool.next();
      for (int c = 0; c < chunks; ++c) {
        const int crows = std::min(kPartitions, seq - c * kPartitions);
        kernel.dma_copy(v.slice(0, crows, c * d, c * d + d),
                        io.v.slice(g * seq + c * kPartitions, g * seq + c * kPartitions + crows, 0, d));
      }
      for (int q0 = 0; q0 < seq; q0 += kRowTile) {
        const int rows = std::min(kRowTile, seq - q0);
        const Tensor p = p_pool.next().slice(0, rows, 0, seq);
        kernel.dma_copy(p, probs.slice(h * seq + q0, h * seq + q0 + rows, 0, seq));
        const Tensor o_ps = o_psum.next().slice(0, rows, 0, d);
        for (int c0 = 0; c0 < chunks; c0 += kChunksPerBank) {
          const int in_bank = std::min(kChunksPerBank, chunks - c0);
          const Tensor pt_ps = pt_psum.next();
          const Tensor pt = pt_pool.next();
          int full_chunks = 0;
          for (int j = 0; j < in_bank; ++j) {
            const int k0 = (c0 + j) * kPartitions;
            const int crows = std::min(kPartitions, seq - k0);
            kernel.transpose(pt_ps.slice(0, crows, j * rows, j * rows + rows), p.slice(0, rows, k0, k0 + crows));
            if (crows == kPartitions) full_chunks = j + 1;
          }
          if (full_chunks > 0)
            kernel.tensor_copy(pt.slice(0, kPartitions, 0, full_chunks * rows),
                               pt_ps.slice(0, kPartitions, 0, full_chunks * rows));
          if (full_chunks < in_bank) {  // the ragged last chunk
            const int crows = seq - (c0 + full_chunks) * kPartitions;
            kernel.tensor_copy(pt.slice(0, crows, full_chunks * rows, in_bank * rows),
                               pt_ps.slice(0, crows, full_chunks * rows, in_bank * rows));
          }
          for (int j = 0; j < in_bank; ++j) {
            const int c = c0 + j;
            const int crows = std::min(kPartitions, seq - c * kPartitions);
            kernel.matmul(o_ps, pt.slice(0, crows, j * rows, j * rows + rows), v.slice(0, crows, c * d, c * d + d),
                          c > 0);
          }
        }
        const Tensor o = o_pool.next().slice(0, rows, 0, d);
        kernel.tensor_copy(o, o_ps);
        kernel.dma_copy(io.out.slice(h * seq + q0, h * seq + q0 + rows, 0, d), o);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// flash: online softmax over key/value tiles, nothing but Q, K, V and O in HBM.
template <Dtype dtype>
void attention_flash(Kernel& kernel, const AttentionShape& shape, const FlashAttentionParams& params) {
  const AttentionTensors io = declare_attention_tensors(kernel, shape, dtype);
  const int seq = shape.seq, d = shape.head_dim, group = shape.group();
  const int q_tile = params.q_tile, kv_tile = params.kv_tile;
  const int block_rows = q_tile * params.unroll_factor;  // query rows per K/V pass, per query head
  const int kv_chunks = tile_count(kv_tile, kPartitions);  // 128-key blocks of one key tile
  const int states_per_block = params.unroll_factor * group;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));

  // Streams: K/V tiles rotate through `pipeline_depth` buffers; the query
  // block of the next pass is prefetched while the current one is in use.
  auto k_pool = kernel.sbuf_pool("flash_k_t", params.pipeline_depth, d, kv_tile, dtype);
  auto v_pool = kernel.sbuf_pool("flash_v", params.pipeline_depth, kPartitions, kv_chunks * d, dtype);
  auto q_pool = kernel.sbuf_pool("flash_q_t", 2 * group, d, block_rows, dtype);
  // Per-step work tiles, double-buffered so consecutive query tiles overlap.
  // PSUM: 3 pools x 2 banks of the 8.
  auto s_psum = kernel.psum_pool("flash_scores_psum", 2, q_tile, kv_tile);
  auto pt_psum = kernel.psum_pool("flash_probs_t_psum", 2, kPartitions, kv_chunks * q_tile);
  auto pv_psum = kernel.psum_pool("flash_pv_psum", 2, q_tile, d);
  auto masked_pool = kernel.sbuf_pool("flash_masked_scores", 2, q_tile, kv_tile, Dtype::fp32);
  auto p_pool = kernel.sbuf_pool("flash_probs", 2, q_tile, kv_tile, dtype);
  auto pt_pool = kernel.sbuf_pool("flash_probs_t", 2, kPartitions, kv_chunks * q_tile, dtype);
  auto col_pool = kernel.sbuf_pool("flash_columns", 8, q_tile, 1, Dtype::fp32);
  auto out_pool = kernel.sbuf_pool("flash_out", 2, q_tile, d, dtype);
  // Per query tile state, live for one pass: the fp32 accumulator, and the
  // running max (two columns used alternately: old and new) and running sum.
  auto acc_pool = kernel.sbuf_pool("flash_acc", states_per_block, q_tile, d, Dtype::fp32);
  auto stats_pool = kernel.sbuf_pool("flash_stats", states_per_block, q_tile, 3, Dtype::fp32);

  struct QueryTileState {
    int head = 0, q0 = 0, rows = 0;
    Tensor q_t;  // [d, rows] view of the block's Q^T tile
    Tensor acc, stats;
    int max_col = 0;  // the column of `stats` holding the current running max
    bool started = false;
  };

  for (int g = 0; g < shape.kv_heads; ++g) {
    for (int block0 = 0; block0 < seq; block0 += block_rows) {
      const int block_end = std::min(seq, block0 + block_rows);
      std::vector<QueryTileState> states;
      for (int j = 0; j < group; ++j) {
        const int h = g * group + j;
        const Tensor q_t = q_pool.next();
        kernel.dma_copy(q_t.slice(0, d, 0, block_end - block0), io.q_t.slice(h * d, h * d + d, block0, block_end));
        for (int q0 = block0; q0 < block_end; q0 += q_tile) {
          QueryTileState st;
          st.head = h;
          st.q0 = q0;
          st.rows = std::min(q_tile, block_end - q0);
          st.q_t = q_t.slice(0, d, q0 - block0, q0 - block0 + st.rows);
          st.acc = acc_pool.next().slice(0, st.rows, 0, d);
          st.stats = stats_pool.next().slice(0, st.rows, 0, 3);
          states.push_back(st);
        }
      }

      // Causal: key tiles starting after the block's last query are never needed.
      for (int k0 = 0; k0 < block_end; k0 += kv_tile) {
        const int cols = std::min(kv_tile, seq - k0);
        const int chunks = tile_count(cols, kPartitions);
        const Tensor k_t = k_pool.next().slice(0, d, 0, cols);
        kernel.dma_copy(k_t, io.k_t.slice(g * d, g * d + d, k0, k0 + cols));
        const Tensor v = v_pool.next();
        for (int c = 0; c < chunks; ++c) {
          const int crows = std::min(kPartitions, cols - c * kPartitions);
          const int row0 = g * seq + k0 + c * kPartitions;
          kernel.dma_copy(v.slice(0, crows, c * d, c * d + d), io.v.slice(row0, row0 + crows, 0, d));
        }

        for (QueryTileState& st : states) {
          if (k0 > st.q0 + st.rows - 1) continue;  // fully masked for this query tile
          const int rows = st.rows;
          // S = Q K^T (unscaled; the scale is folded into the exponentials)
          const Tensor s_ps = s_psum.next().slice(0, rows, 0, cols);
          kernel.matmul(s_ps, st.q_t, k_t, false);
          Tensor s = s_ps;
          if (k0 + cols - 1 > st.q0) {  // the tile crosses the diagonal
            s = masked_pool.next().slice(0, rows, 0, cols);
            kernel.tensor_copy(s, s_ps);
            kernel.affine_select(s, s, static_cast<float>(st.q0 - k0), 1, -1, kMaskedScore);
          }
          const Tensor m_old = st.stats.slice(0, rows, st.max_col, st.max_col + 1);
          const Tensor m_new = st.stats.slice(0, rows, 1 - st.max_col, 2 - st.max_col);
          const Tensor l = st.stats.slice(0, rows, 2, 3);
          if (st.started) {
            const Tensor tile_max = col_pool.next().slice(0, rows, 0, 1);
            kernel.tensor_reduce(tile_max, s, AluOp::max);
            kernel.tensor_tensor(m_new, m_old, tile_max, AluOp::max);
          } else {
            kernel.tensor_reduce(m_new, s, AluOp::max);
          }
          const Tensor neg_scaled_max = col_pool.next().slice(0, rows, 0, 1);
          kernel.tensor_scalar(neg_scaled_max, m_new, AluOp::multiply, -scale);
          // P = exp(scale * S - scale * m_new), with its row sums
          const Tensor p = p_pool.next().slice(0, rows, 0, cols);
          const Tensor row_sum = st.started ? col_pool.next().slice(0, rows, 0, 1) : l;
          kernel.activation(p, s, ActivationFunction::exp, neg_scaled_max, scale, &row_sum);
          Tensor alpha;
          if (st.started) {
            alpha = col_pool.next().slice(0, rows, 0, 1);  // exp(scale * (m_old - m_new))
            kernel.activation(alpha, m_old, ActivationFunction::exp, neg_scaled_max, scale);
            kernel.tensor_scalar(l, l, AluOp::multiply, alpha, AluOp::add, row_sum);
          }
          // P^T, 128 keys per block, on the tensor engine; evacuated by the
          // scalar engine, which has less work per step than the vector engine.
          const Tensor pt_ps = pt_psum.next();
          const Tensor pt = pt_pool.next();
          for (int c = 0; c < chunks; ++c) {
            const int crows = std::min(kPartitions, cols - c * kPartitions);
            kernel.transpose(pt_ps.slice(0, crows, c * rows, c * rows + rows),
                             p.slice(0, rows, c * kPartitions, c * kPartitions + crows));
          }
          const int full_chunks = cols / kPartitions;
          if (full_chunks > 0)
            kernel.activation(pt.slice(0, kPartitions, 0, full_chunks * rows),
                              pt_ps.slice(0, kPartitions, 0, full_chunks * rows), ActivationFunction::identity);
          if (full_chunks < chunks) {
            const int crows = cols - full_chunks * kPartitions;
            kernel.activation(pt.slice(0, crows, full_chunks * rows, chunks * rows),
                              pt_ps.slice(0, crows, full_chunks * rows, chunks * rows), ActivationFunction::identity);
          }
          // PV, accumulated over the key blocks in one PSUM tile
          const Tensor pv = pv_psum.next().slice(0, rows, 0, d);
          for (int c = 0; c < chunks; ++c) {
            const int crows = std::min(kPartitions, cols - c * kPartitions);
            kernel.matmul(pv, pt.slice(0, crows, c * rows, c * rows + rows), v.slice(0, crows, c * d, c * d + d),
                          c > 0);
          }
          if (st.started) {
            kernel.tensor_scalar(st.acc, st.acc, AluOp::multiply, alpha);
            kernel.tensor_tensor(st.acc, st.acc, pv, AluOp::add);
          } else {
            kernel.tensor_copy(st.acc, pv);
          }
          st.max_col = 1 - st.max_col;
          st.started = true;
        }
      }

      for (const QueryTileState& st : states) {
        const Tensor inv_sum = col_pool.next().slice(0, st.rows, 0, 1);
        kernel.reciprocal(inv_sum, st.stats.slice(0, st.rows, 2, 3));
        const Tensor o = out_pool.next().slice(0, st.rows, 0, d);
        kernel.tensor_scalar(o, st.acc, AluOp::multiply, inv_sum);
        const int row0 = st.head * seq + st.q0;
        kernel.dma_copy(io.out.slice(row0, row0 + st.rows, 0, d), o);
      }
    }
  }
}

}  // namespace autotune::kernels
