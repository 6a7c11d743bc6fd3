#pragma once
// Scaled-dot-product attention with grouped-query heads (the shapes of
// Qwen3-0.6B: head_dim 128, 16 query heads, 8 key/value heads): the kernel
// templates of the `attention` family (causal) and of `attention_full` (no
// mask, AttentionShape::causal false).
//
//   out_h = softmax(Q_h K_g^T / sqrt(head_dim) [+ causal mask]) V_g,  g = h / (q_heads / kv_heads)
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
//    three passes, each materialising its whole result: S = Q K^T / sqrt(d)
//    with the mask applied (fp32), P = softmax(S) row by row (the input
//    dtype), O = P V. A head's S and P stay in SBUF when they fit the
//    target's usable SBUF beside the other live tiles (short sequences);
//    otherwise S and P of every head are spilled to HBM scratch and read back.
//    It computes the full score matrix, masked part included.
// Non-causal (shape.causal false), every variant visits every key tile and
// masks nothing.
//  - attention_flash: tiles over keys/values with an online softmax (running
//    row max m, running row sum l, the accumulator rescaled by exp(m_old -
//    m_new)); scores and probabilities never leave the chip. Fully masked key
//    tiles are skipped; tiles crossing the diagonal are masked with
//    affine_select. Each key/value tile loaded is reused by `unroll_factor`
//    query tiles of every query head that shares its kv head.
#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
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
  // true: query i attends to keys 0..i (the `attention` family); false: to
  // every key (`attention_full`): no mask, no key tile skipped.
  bool causal = true;
  int group() const { return q_heads / kv_heads; }  // query heads per kv head
};

// The shape of the `attention_full` family: the same arguments, not causal.
// A struct of its own so that an exported attention_full kernel names it
// (kernels/external/export_source.cpp) and converts to the templates' shape.
struct FullAttentionShape {
  int seq = 0;
  int q_heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  operator AttentionShape()
      const {  // NOLINT(google-explicit-constructor): passed where AttentionShape is taken
    return AttentionShape{
        .seq = seq, .q_heads = q_heads, .kv_heads = kv_heads, .head_dim = head_dim, .causal = false};
  }
};

// The naive variant has nothing to tune: it is the fixed baseline.
struct NaiveAttentionParams {};

struct FlashAttentionParams {
  int kv_tile = 256;       // keys per step: the free size of the score tile (<= 512, multiple of 128)
  int q_tile = 128;        // queries per score tile: its partitions (<= 128)
  int pipeline_depth = 2;  // steps in flight: rotating K/V and probability buffers (see attention_flash)
  int unroll_factor = 1;   // query tiles (per query head of the group) that share each K/V load
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
// naive: the score matrix materialised whole, in SBUF one head at a time when
// that fits, else round-tripping through HBM.
namespace naive_detail {

// The generic matmul lowering: 128 query rows by 512 key columns (one PSUM bank).
inline constexpr int kRowTile = kPartitions, kColChunk = 512;
// Transposed [128, 128] blocks of P per PSUM bank.
inline constexpr int kChunksPerBank = 4;

}  // namespace naive_detail

// SBUF bytes per partition attention_naive needs to keep a head's S (fp32)
// and P (the input dtype) on chip: both whole, each one tile holding row tile
// i in columns [i seq, (i + 1) seq), plus the tiles of its largest pass. It
// must match the pools attention_naive allocates on that path.
inline std::int64_t naive_on_chip_sbuf_bytes(const AttentionShape& shape, Dtype dtype) {
  using naive_detail::kChunksPerBank;
  using naive_detail::kRowTile;
  const std::int64_t seq = shape.seq, d = shape.head_dim, bytes = sim::dtype_bytes(dtype);
  const std::int64_t fp32 = sim::dtype_bytes(Dtype::fp32);
  const std::int64_t scores_and_probs = tile_count(seq, kRowTile) * seq * (fp32 + bytes);
  const std::int64_t pass1 = seq * bytes + 2 * kRowTile * bytes;         // K^T, two Q^T tiles
  const std::int64_t pass2 = 4 * fp32;                                   // row statistics
  const std::int64_t pass3 = tile_count(seq, kPartitions) * d * bytes +  // V
                             2 * kChunksPerBank * kRowTile * bytes +     // P^T blocks
                             2 * d * bytes;                              // output tiles
  return scores_and_probs + std::max({pass1, pass2, pass3});
}

// Whether attention_naive keeps the scores on chip within `limits`.
inline bool naive_keeps_scores_on_chip(const AttentionShape& shape, Dtype dtype, const KernelLimits& limits) {
  return naive_on_chip_sbuf_bytes(shape, dtype) <= limits.sbuf_bytes_per_partition;
}

template <Dtype dtype>
void attention_naive(Kernel& kernel, const AttentionShape& shape,
                     const NaiveAttentionParams& /*params*/ = {}) {
  using naive_detail::kChunksPerBank;
  using naive_detail::kColChunk;
  using naive_detail::kRowTile;
  const AttentionTensors io = declare_attention_tensors(kernel, shape, dtype);
  const int seq = shape.seq, d = shape.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // On chip: the three passes run head by head over that head's S and P in
  // SBUF. Spilled: each pass runs over every head, S and P in HBM scratch,
  // staged through SBUF a chunk or a row block at a time.
  const bool on_chip = naive_keeps_scores_on_chip(shape, dtype, kernel.limits());
  const int heads_per_round = on_chip ? 1 : shape.q_heads;
  std::optional<TilePool> s_head_pool, p_head_pool;
  Tensor scores, probs;
  if (on_chip) {
    const int cols = tile_count(seq, kRowTile) * seq;
    s_head_pool.emplace(kernel.sbuf_pool("naive_scores_head", 1, kRowTile, cols, Dtype::fp32));
    p_head_pool.emplace(kernel.sbuf_pool("naive_probs_head", 1, kRowTile, cols, dtype));
  } else {
    scores = kernel.hbm_scratch("scores", shape.q_heads * seq, seq, Dtype::fp32);
    probs = kernel.hbm_scratch("probs", shape.q_heads * seq, seq, dtype);
  }

  for (int h0 = 0; h0 < shape.q_heads; h0 += heads_per_round) {
    const int h1 = h0 + heads_per_round;
    Tensor s_head, p_head;
    if (on_chip) {
      s_head = s_head_pool->next();
      p_head = p_head_pool->next();
    }
    // Rows [q0, q0 + rows) of head h's S or P, wherever they are kept: in
    // `on_chip_tile` (the head's SBUF tile) or in `spill` (HBM).
    auto rows_of = [&](const Tensor& on_chip_tile, const Tensor& spill, int h, int q0, int rows) {
      const int c0 = q0 / kRowTile * seq;
      return on_chip ? on_chip_tile.slice(0, rows, c0, c0 + seq)
                     : spill.slice(h * seq + q0, h * seq + q0 + rows, 0, seq);
    };
    auto s_rows = [&](int h, int q0, int rows) { return rows_of(s_head, scores, h, q0, rows); };
    auto p_rows = [&](int h, int q0, int rows) { return rows_of(p_head, probs, h, q0, rows); };
    // A row block of S or P to compute on: itself on chip, else read back from
    // HBM into a tile of `staging`.
    auto readable = [&](const Tensor& block, std::optional<TilePool>& staging) {
      if (on_chip) return block;
      const Tensor staged = staging->next().slice(0, block.rows(), 0, seq);
      kernel.dma_copy(staged, block);
      return staged;
    };

    // Pass 1: S = mask(Q K^T * scale), chunk by chunk.
    {
      auto k_pool = kernel.sbuf_pool("naive_k_t", 1, d, seq, dtype);
      auto q_pool = kernel.sbuf_pool("naive_q_t", 2, d, kRowTile, dtype);
      auto s_psum = kernel.psum_pool("naive_scores_psum", 2, kRowTile, kColChunk);
      std::optional<TilePool> s_pool;  // spilled: chunks on their way to HBM
      if (!on_chip) s_pool.emplace(kernel.sbuf_pool("naive_scores", 2, kRowTile, kColChunk, Dtype::fp32));
      for (int h = h0; h < h1; ++h) {
        const int g = h / shape.group();
        const Tensor k_t = k_pool.next();
        kernel.dma_copy(k_t, io.k_t.slice(g * d, g * d + d, 0, seq));
        for (int q0 = 0; q0 < seq; q0 += kRowTile) {
          const int rows = std::min(kRowTile, seq - q0);
          const Tensor q_t = q_pool.next().slice(0, d, 0, rows);
          kernel.dma_copy(q_t, io.q_t.slice(h * d, h * d + d, q0, q0 + rows));
          const Tensor s_row = s_rows(h, q0, rows);
          for (int k0 = 0; k0 < seq; k0 += kColChunk) {
            const int cols = std::min(kColChunk, seq - k0);
            const Tensor s_ps = s_psum.next().slice(0, rows, 0, cols);
            kernel.matmul(s_ps, q_t, k_t.slice(0, d, k0, k0 + cols), false);
            const Tensor s =
                on_chip ? s_row.slice(0, rows, k0, k0 + cols) : s_pool->next().slice(0, rows, 0, cols);
            kernel.activation(s, s_ps, ActivationFunction::identity, 0.0f, scale);
            // keep where (q0 + p) - (k0 + c) >= 0
            if (shape.causal) kernel.affine_select(s, s, static_cast<float>(q0 - k0), 1, -1, kMaskedScore);
            if (!on_chip) kernel.dma_copy(s_row.slice(0, rows, k0, k0 + cols), s);
          }
        }
      }
    }

    // Pass 2: P = softmax(S) over whole rows.
    {
      std::optional<TilePool> s_pool, p_pool;  // spilled: a row block of S read back, of P to write
      if (!on_chip) {
        s_pool.emplace(kernel.sbuf_pool("naive_score_rows", 1, kRowTile, seq, Dtype::fp32));
        p_pool.emplace(kernel.sbuf_pool("naive_prob_rows", 1, kRowTile, seq, dtype));
      }
      auto col_pool = kernel.sbuf_pool("naive_row_stats", 4, kRowTile, 1, Dtype::fp32);
      for (int h = h0; h < h1; ++h) {
        for (int q0 = 0; q0 < seq; q0 += kRowTile) {
          const int rows = std::min(kRowTile, seq - q0);
          const Tensor s = readable(s_rows(h, q0, rows), s_pool);
          const Tensor row_max = col_pool.next().slice(0, rows, 0, 1);
          kernel.tensor_reduce(row_max, s, AluOp::max);
          const Tensor neg_max = col_pool.next().slice(0, rows, 0, 1);
          kernel.tensor_scalar(neg_max, row_max, AluOp::multiply, -1.0f);
          const Tensor row_sum = col_pool.next().slice(0, rows, 0, 1);
          kernel.activation(s, s, ActivationFunction::exp, neg_max, 1.0f, &row_sum);
          const Tensor inv_sum = col_pool.next().slice(0, rows, 0, 1);
          kernel.reciprocal(inv_sum, row_sum);
          const Tensor p_row = p_rows(h, q0, rows);
          const Tensor p = on_chip ? p_row : p_pool->next().slice(0, rows, 0, seq);
          kernel.tensor_scalar(p, s, AluOp::multiply, inv_sum);
          if (!on_chip) kernel.dma_copy(p_row, p);
        }
      }
    }

    // Pass 3: O = P V. P is transposed on the tensor engine (the contraction
    // over keys needs keys on partitions).
    {
      const int chunks = tile_count(seq, kPartitions);
      auto v_pool = kernel.sbuf_pool("naive_v", 1, kPartitions, chunks * d, dtype);
      std::optional<TilePool> p_pool;  // spilled: a row block of P read back
      if (!on_chip) p_pool.emplace(kernel.sbuf_pool("naive_probs", 1, kRowTile, seq, dtype));
      auto pt_psum = kernel.psum_pool("naive_probs_t_psum", 2, kPartitions, kChunksPerBank * kRowTile);
      auto pt_pool = kernel.sbuf_pool("naive_probs_t", 2, kPartitions, kChunksPerBank * kRowTile, dtype);
      auto o_psum = kernel.psum_pool("naive_out_psum", 2, kRowTile, d);
      auto o_pool = kernel.sbuf_pool("naive_out", 2, kRowTile, d, dtype);
      for (int h = h0; h < h1; ++h) {
        const int g = h / shape.group();
        const Tensor v = v_pool.next();
        for (int c = 0; c < chunks; ++c) {
          const int crows = std::min(kPartitions, seq - c * kPartitions);
          kernel.dma_copy(v.slice(0, crows, c * d, c * d + d),
                          io.v.slice(g * seq + c * kPartitions, g * seq + c * kPartitions + crows, 0, d));
        }
        for (int q0 = 0; q0 < seq; q0 += kRowTile) {
          const int rows = std::min(kRowTile, seq - q0);
          const Tensor p = readable(p_rows(h, q0, rows), p_pool);
          const Tensor o_ps = o_psum.next().slice(0, rows, 0, d);
          for (int c0 = 0; c0 < chunks; c0 += kChunksPerBank) {
            const int in_bank = std::min(kChunksPerBank, chunks - c0);
            const Tensor pt_ps = pt_psum.next();
            const Tensor pt = pt_pool.next();
            int full_chunks = 0;
            for (int j = 0; j < in_bank; ++j) {
              const int k0 = (c0 + j) * kPartitions;
              const int crows = std::min(kPartitions, seq - k0);
              kernel.transpose(pt_ps.slice(0, crows, j * rows, j * rows + rows),
                               p.slice(0, rows, k0, k0 + crows));
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
              kernel.matmul(o_ps, pt.slice(0, crows, j * rows, j * rows + rows),
                            v.slice(0, crows, c * d, c * d + d), c > 0);
            }
          }
          const Tensor o = o_pool.next().slice(0, rows, 0, d);
          kernel.tensor_copy(o, o_ps);
          kernel.dma_copy(io.out.slice(h * seq + q0, h * seq + q0 + rows, 0, d), o);
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------
// flash: online softmax over key/value tiles, nothing but Q, K, V and O in HBM.
//
// The work is a sequence of steps, one per (query tile, key tile) pair that is
// not fully masked. Each step has a softmax half (S = Q K^T, row max, P =
// exp(scale S - scale m), running max and sum) and an output half (P^T on the
// tensor engine, P V, the accumulator rescaled and added to). Engines run
// their instructions in program order, so with a lookahead L = pipeline_depth
// - 1 the softmax half of step j + L is emitted between the parts of the
// output half of step j: the tensor engine computes later scores while the
// vector and scalar engines finish earlier softmaxes. Whatever lives from one
// half to the other (P, the rescale factor, K/V tiles, query tile state)
// rotates through enough slots for the steps in flight.
namespace flash_detail {

struct QueryTile {
  int head = 0, q0 = 0, rows = 0;
  Tensor q_t;  // [d, rows] view of the block's Q^T tile
  Tensor acc;  // [rows, d] fp32 output accumulator
  Tensor
      stats;  // [rows, 3] fp32: running max in column max_col (the other is the next one), running sum in 2
  int max_col = 0;
  int steps_left = 0;
};

struct Step {
  QueryTile* tile = nullptr;
  int k0 = 0, cols = 0;
  bool first = false;  // the tile's first key tile: nothing to rescale
  Tensor k_t, v;       // this key tile's K^T [d, cols] and V blocks [128, chunks * d]
  // Handed from stage to stage.
  Tensor scores, neg_scaled_max, probs, alpha, probs_t, pv;
};

}  // namespace flash_detail

// Software pipelining of a sequence of attention steps, each with a softmax
// half (scores_and_max, probabilities) and an output half (transpose_probs,
// probs_times_v, accumulate). Engines run their instruction streams in
// program order, so with a lookahead L the softmax half of step j + L is
// emitted between the parts of step j's output half: the tensor engine
// computes later scores while the vector and scalar engines finish earlier
// softmaxes. L = 0 runs each step whole. Steps live in a deque (stable
// references) until their output half is emitted.
template <class Step, class ScoresAndMax, class Probabilities, class TransposeProbs, class ProbsTimesV,
          class Accumulate>
class StepPipeline {
 public:
  StepPipeline(int lookahead, ScoresAndMax& scores_and_max, Probabilities& probabilities,
               TransposeProbs& transpose_probs, ProbsTimesV& probs_times_v, Accumulate& accumulate)
      : lookahead_(lookahead),
        scores_and_max_(scores_and_max),
        probabilities_(probabilities),
        transpose_probs_(transpose_probs),
        probs_times_v_(probs_times_v),
        accumulate_(accumulate) {}

  void issue(const Step& step) {
    in_flight_.push_back(step);
    Step& next = in_flight_.back();
    if (lookahead_ == 0) {
      scores_and_max_(next), probabilities_(next), transpose_probs_(next), probs_times_v_(next),
          accumulate_(next);
      in_flight_.pop_front();
      return;
    }
    if (static_cast<int>(in_flight_.size()) <= lookahead_) {  // filling the pipeline
      scores_and_max_(next), probabilities_(next);
      return;
    }
    Step& oldest = in_flight_.front();
    transpose_probs_(oldest);
    scores_and_max_(next);
    probs_times_v_(oldest);
    probabilities_(next);
    accumulate_(oldest);
    in_flight_.pop_front();
  }

  void drain() {
    while (!in_flight_.empty()) {
      Step& oldest = in_flight_.front();
      transpose_probs_(oldest), probs_times_v_(oldest), accumulate_(oldest);
      in_flight_.pop_front();
    }
  }

 private:
  int lookahead_;
  ScoresAndMax& scores_and_max_;
  Probabilities& probabilities_;
  TransposeProbs& transpose_probs_;
  ProbsTimesV& probs_times_v_;
  Accumulate& accumulate_;
  std::deque<Step> in_flight_;
};

template <Dtype dtype>
void attention_flash(Kernel& kernel, const AttentionShape& shape, const FlashAttentionParams& params) {
  using flash_detail::QueryTile;
  using flash_detail::Step;
  const AttentionTensors io = declare_attention_tensors(kernel, shape, dtype);
  const int seq = shape.seq, d = shape.head_dim, group = shape.group();
  const int q_tile = params.q_tile, kv_tile = params.kv_tile;
  const int block_rows = q_tile * params.unroll_factor;    // query rows per K/V pass, per query head
  const int kv_chunks = tile_count(kv_tile, kPartitions);  // 128-key blocks of one key tile
  const int tiles_per_block = tile_count(std::min(block_rows, seq), q_tile) * group;
  const int lookahead = std::max(params.pipeline_depth, 1) - 1;
  const int depth = lookahead + 1;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));

  // Steps in flight span at most `depth` key tiles and lookahead + 2 query blocks.
  auto k_pool = kernel.sbuf_pool("flash_k_t", depth, d, kv_tile, dtype);
  auto v_pool = kernel.sbuf_pool("flash_v", depth, kPartitions, kv_chunks * d, dtype);
  auto q_pool = kernel.sbuf_pool("flash_q_t", 2 * group, d, block_rows, dtype);
  auto acc_pool = kernel.sbuf_pool("flash_acc", (lookahead + 2) * tiles_per_block, q_tile, d, Dtype::fp32);
  auto stats_pool =
      kernel.sbuf_pool("flash_stats", (lookahead + 2) * tiles_per_block, q_tile, 3, Dtype::fp32);
  auto p_pool = kernel.sbuf_pool("flash_probs", depth, q_tile, kv_tile, dtype);
  auto alpha_pool = kernel.sbuf_pool("flash_rescale", depth + 1, q_tile, 1, Dtype::fp32);
  // Used within one stage; double-buffered. PSUM: 3 pools x 2 banks of the 8.
  auto s_psum = kernel.psum_pool("flash_scores_psum", 2, q_tile, kv_tile);
  auto pt_psum = kernel.psum_pool("flash_probs_t_psum", 2, kPartitions, kv_chunks * q_tile);
  auto pv_psum = kernel.psum_pool("flash_pv_psum", 2, q_tile, d);
  auto masked_pool = kernel.sbuf_pool("flash_masked_scores", 2, q_tile, kv_tile, Dtype::fp32);
  auto pt_pool = kernel.sbuf_pool("flash_probs_t", 2, kPartitions, kv_chunks * q_tile, dtype);
  auto col_pool = kernel.sbuf_pool("flash_columns", 8, q_tile, 1, Dtype::fp32);
  auto out_pool = kernel.sbuf_pool("flash_out", 2, q_tile, d, dtype);

  // Softmax half, part 1: scores, the causal mask on diagonal tiles, the new running max.
  auto scores_and_max = [&](Step& s) {
    QueryTile& t = *s.tile;
    const int rows = t.rows;
    const Tensor s_ps = s_psum.next().slice(0, rows, 0, s.cols);
    kernel.matmul(s_ps, t.q_t, s.k_t, false);
    s.scores = s_ps;
    if (shape.causal && s.k0 + s.cols - 1 > t.q0) {  // the tile crosses the diagonal
      s.scores = masked_pool.next().slice(0, rows, 0, s.cols);
      kernel.tensor_copy(s.scores, s_ps);
      // keep where (q0 + p) - (k0 + c) >= 0
      kernel.affine_select(s.scores, s.scores, static_cast<float>(t.q0 - s.k0), 1, -1, kMaskedScore);
    }
    const Tensor m_old = t.stats.slice(0, rows, t.max_col, t.max_col + 1);
    const Tensor m_new = t.stats.slice(0, rows, 1 - t.max_col, 2 - t.max_col);
    if (s.first) {
      kernel.tensor_reduce(m_new, s.scores, AluOp::max);
    } else {
      const Tensor tile_max = col_pool.next().slice(0, rows, 0, 1);
      kernel.tensor_reduce(tile_max, s.scores, AluOp::max);
      kernel.tensor_tensor(m_new, m_old, tile_max, AluOp::max);
    }
    s.neg_scaled_max = col_pool.next().slice(0, rows, 0, 1);
    kernel.tensor_scalar(s.neg_scaled_max, m_new, AluOp::multiply, -scale);
  };
  // Softmax half, part 2: P with its row sums; the rescale factor and running sum.
  auto probabilities = [&](Step& s) {
    QueryTile& t = *s.tile;
    const int rows = t.rows;
    const Tensor l = t.stats.slice(0, rows, 2, 3);
    s.probs = p_pool.next().slice(0, rows, 0, s.cols);
    const Tensor row_sum = s.first ? l : col_pool.next().slice(0, rows, 0, 1);
    kernel.activation(s.probs, s.scores, ActivationFunction::exp, s.neg_scaled_max, scale, &row_sum);
    if (!s.first) {
      const Tensor m_old = t.stats.slice(0, rows, t.max_col, t.max_col + 1);
      s.alpha = alpha_pool.next().slice(0, rows, 0, 1);  // exp(scale * (m_old - m_new))
      kernel.activation(s.alpha, m_old, ActivationFunction::exp, s.neg_scaled_max, scale);
      kernel.tensor_scalar(l, l, AluOp::multiply, s.alpha, AluOp::add, row_sum);
    }
    t.max_col = 1 - t.max_col;
  };
  // Output half, part 1: P^T in 128-key blocks on the tensor engine, evacuated
  // by the scalar engine (the vector engine carries more of each step).
  auto transpose_probs = [&](Step& s) {
    const int rows = s.tile->rows;
    const int chunks = tile_count(s.cols, kPartitions);
    const Tensor pt_ps = pt_psum.next();
    s.probs_t = pt_pool.next();
    for (int c = 0; c < chunks; ++c) {
      const int crows = std::min(kPartitions, s.cols - c * kPartitions);
      kernel.transpose(pt_ps.slice(0, crows, c * rows, c * rows + rows),
                       s.probs.slice(0, rows, c * kPartitions, c * kPartitions + crows));
    }
    const int full_chunks = s.cols / kPartitions;
    if (full_chunks > 0)
      kernel.activation(s.probs_t.slice(0, kPartitions, 0, full_chunks * rows),
                        pt_ps.slice(0, kPartitions, 0, full_chunks * rows), ActivationFunction::identity);
    if (full_chunks < chunks) {  // the ragged last block of keys
      const int crows = s.cols - full_chunks * kPartitions;
      kernel.activation(s.probs_t.slice(0, crows, full_chunks * rows, chunks * rows),
                        pt_ps.slice(0, crows, full_chunks * rows, chunks * rows),
                        ActivationFunction::identity);
    }
  };
  // Output half, part 2: P V accumulated over the key blocks in one PSUM tile.
  auto probs_times_v = [&](Step& s) {
    const int rows = s.tile->rows;
    const int chunks = tile_count(s.cols, kPartitions);
    s.pv = pv_psum.next().slice(0, rows, 0, d);
    for (int c = 0; c < chunks; ++c) {
      const int crows = std::min(kPartitions, s.cols - c * kPartitions);
      kernel.matmul(s.pv, s.probs_t.slice(0, crows, c * rows, c * rows + rows),
                    s.v.slice(0, crows, c * d, c * d + d), c > 0);
    }
  };
  // Output half, part 3: acc = acc * alpha + P V; after the tile's last step,
  // out = acc / l.
  auto accumulate = [&](Step& s) {
    QueryTile& t = *s.tile;
    if (s.first) {
      kernel.tensor_copy(t.acc, s.pv);
    } else {
      kernel.tensor_scalar(t.acc, t.acc, AluOp::multiply, s.alpha);
      kernel.tensor_tensor(t.acc, t.acc, s.pv, AluOp::add);
    }
    if (--t.steps_left > 0) return;
    const Tensor inv_sum = col_pool.next().slice(0, t.rows, 0, 1);
    kernel.reciprocal(inv_sum, t.stats.slice(0, t.rows, 2, 3));
    const Tensor o = out_pool.next().slice(0, t.rows, 0, d);
    kernel.tensor_scalar(o, t.acc, AluOp::multiply, inv_sum);
    const int row0 = t.head * seq + t.q0;
    kernel.dma_copy(io.out.slice(row0, row0 + t.rows, 0, d), o);
  };

  StepPipeline<Step, decltype(scores_and_max), decltype(probabilities), decltype(transpose_probs),
               decltype(probs_times_v), decltype(accumulate)>
      pipeline{lookahead, scores_and_max, probabilities, transpose_probs, probs_times_v, accumulate};

  std::deque<QueryTile> query_tiles;  // stable addresses for the steps
  for (int g = 0; g < shape.kv_heads; ++g) {
    for (const TileSpan block : tiles(seq, block_rows)) {
      std::vector<QueryTile*> block_tiles;
      for (int j = 0; j < group; ++j) {
        const int h = g * group + j;
        const Tensor q_t = q_pool.next();
        kernel.dma_copy(q_t.slice(0, d, 0, block.size),
                        io.q_t.slice(h * d, h * d + d, block.begin, block.end()));
        for (const TileSpan q : tiles(block, q_tile)) {
          QueryTile& t = query_tiles.emplace_back();
          t.head = h;
          t.q0 = q.begin;
          t.rows = q.size;
          t.q_t = q_t.slice(0, d, q.offset, q.offset + q.size);
          t.acc = acc_pool.next().slice(0, q.size, 0, d);
          t.stats = stats_pool.next().slice(0, q.size, 0, 3);
          // Causal: key tiles starting at or before its last row; else every key tile.
          t.steps_left = tile_count(shape.causal ? q.end() : seq, kv_tile);
          block_tiles.push_back(&t);
        }
      }
      // Causal: key tiles starting after the block's last query are never needed.
      for (const TileSpan kv : tiles(shape.causal ? block.end() : seq, kv_tile)) {
        const int cols = std::min(kv_tile, seq - kv.begin);
        const int chunks = tile_count(cols, kPartitions);
        const Tensor k_t = k_pool.next().slice(0, d, 0, cols);
        kernel.dma_copy(k_t, io.k_t.slice(g * d, g * d + d, kv.begin, kv.begin + cols));
        const Tensor v = v_pool.next();
        for (int c = 0; c < chunks; ++c) {
          const int crows = std::min(kPartitions, cols - c * kPartitions);
          const int row0 = g * seq + kv.begin + c * kPartitions;
          kernel.dma_copy(v.slice(0, crows, c * d, c * d + d), io.v.slice(row0, row0 + crows, 0, d));
        }
        for (QueryTile* t : block_tiles) {
          if (shape.causal && kv.begin > t->q0 + t->rows - 1) continue;  // fully masked for this query tile
          Step step;
          step.tile = t;
          step.k0 = kv.begin;
          step.cols = cols;
          step.first = kv.index == 0;
          step.k_t = k_t;
          step.v = v;
          pipeline.issue(step);
        }
      }
    }
  }
  pipeline.drain();
}

}  // namespace autotune::kernels
