#pragma once
// attention_flash_banked: flash attention shaped the way hand-written NKI
// kernels for Trainium are (the NKI library's context-encoding kernel, NKI's
// flash_fwd): large key/value tiles whose score tile is spread over several
// PSUM banks, a block of query tiles kept in SBUF while K and V stream through
// once per block, per-bank statistics read straight from PSUM, and the
// transposes of the probabilities either on the tensor engine or on the DMA
// queues (trn2 has a hardware DMA transposer for 2-byte data).
//
// Same HBM layout and semantics as attention_flash (attention.hpp). Each
// (query tile, key tile) pair that is not fully masked is a step; within a
// step, keys past the query tile's last row are never touched (the step is
// trimmed to whole 128-key blocks up to the diagonal), so the causal waste
// is under one 128-key block per query tile and key tile. Not causal
// (shape.causal false): every step covers its whole key tile, nothing masked.
//
// Per step, for a query tile of R rows and a key tile of C keys (C/512 banks):
//   tensor : S_b = Q K_b^T, one matmul per PSUM bank (N = 512);
//            P V accumulated over C/128 key blocks in one PSUM tile
//            (and, with transposes on the tensor engine, P^T per 128 keys);
//   vector : per bank, the scores copied out of PSUM with their row max in
//            the same instruction (banks crossing the diagonal: copied,
//            masked on GpSimd, then reduced); the new running max;
//            acc = acc * alpha + P V in one instruction;
//   scalar : P = exp(scale S - scale m) over the whole step with its row
//            sum; the rescale factor alpha = exp(scale (m_old - m_new));
//   stats  : the small per-row updates (-scale m, l = l alpha + sum, the
//            final acc / l) on the engine the `stats_on_gpsimd` knob names;
//   P^T    : per 128-key block, a tensor engine transpose evacuated by the
//            vector or the scalar engine (`evacuate_on_scalar`), or, for the
//            step's last `dma_transpose` quarters of its blocks, transposing
//            DMAs (SBUF to SBUF), all full blocks in one transfer.
// With a lookahead L = pipeline_depth - 1 the softmax half of step j + L is
// emitted between the parts of step j's output half, as in attention_flash.
//
// With pe_row_tiles = T > 1 (head_dim <= 128 / T), the score matmuls, which
// contract over head_dim only, run on T row tiles of the PE array side by
// side (nki.isa.nc_matmul tile_position / tile_size): bank b's on tile b % T.
// Q^T is loaded once into each tile's partitions, K^T's bank b into tile
// b % T's partitions only.
#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"
#include "kernels/families/attention.hpp"

namespace autotune::kernels {

struct BankedAttentionParams {
  int kv_tile = 2048;          // keys per step (C): C / 512 PSUM banks of scores
  int q_tiles = 4;             // 128-row query tiles per query head that share each K/V load
  int pipeline_depth = 2;      // steps in flight
  int dma_transpose = 0;       // quarters of each step's 128-key blocks of P^T by transposing DMA (0-4)
  int stats_on_gpsimd = 0;     // 1: the small per-row updates on GpSimd; 0: on the vector engine
  int evacuate_on_scalar = 0;  // tensor-engine transposes: 1: P^T leaves PSUM by the scalar engine; 0: vector
  int pe_row_tiles = 1;        // PE row tiles the score matmuls spread over (1: the whole array)
};

namespace banked_detail {

inline constexpr int kBankColumns = 512;  // fp32 scores per partition in one 2 KiB PSUM bank
inline constexpr int kKeyBlock = kPartitions;
inline constexpr int kPvTilesPerBank = 4;  // [128, d <= 128] fp32 P V tiles in one 2 KiB bank
inline constexpr int kBlocksPerBank = 4;   // transposed [128, 128] blocks of P in one 2 KiB PSUM bank

struct QueryTile {
  int head = 0, q0 = 0, rows = 0;
  Tensor q_t;    // [d, rows]
  Tensor acc;    // [rows, d] fp32
  Tensor stats;  // [rows, 3] fp32: running max in max_col (the other column takes the next), sum in 2
  int max_col = 0;
  int steps_left = 0;
};

struct Step {
  QueryTile* tile = nullptr;
  int k0 = 0, cols = 0;  // keys [k0, k0 + cols), trimmed to the tile's diagonal
  bool first = false;
  Tensor k_t, v;  // the key tile's K^T [d, C] and V blocks [128, C/128 * d], from key k0
  Tensor scores;  // fp32 [R, cols] in SBUF, masked
  Tensor neg_scaled_max, probs, alpha, probs_t, pv;
};

}  // namespace banked_detail

template <Dtype dtype>
void attention_flash_banked(Kernel& kernel, const AttentionShape& shape,
                            const BankedAttentionParams& params) {
  using banked_detail::kBankColumns;
  using banked_detail::kBlocksPerBank;
  using banked_detail::kKeyBlock;
  using banked_detail::kPvTilesPerBank;
  using banked_detail::QueryTile;
  using banked_detail::Step;
  const AttentionTensors io = declare_attention_tensors(kernel, shape, dtype);
  const int seq = shape.seq, d = shape.head_dim, group = shape.group();
  const int q_tile = kPartitions, kv_tile = params.kv_tile;
  const int block_rows = q_tile * params.q_tiles;
  const int banks = tile_count(kv_tile, kBankColumns);
  const int key_blocks = tile_count(kv_tile, kKeyBlock);
  const int tiles_per_block = tile_count(std::min(block_rows, seq), q_tile) * group;
  const int lookahead = std::max(params.pipeline_depth, 1) - 1;
  const int depth = lookahead + 1;
  const bool pe_transposes = params.dma_transpose < kBlocksPerBank;
  const Engine stats_engine = params.stats_on_gpsimd != 0 ? Engine::gpsimd : Engine::vector;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // Score matmuls on `row_tiles` PE row tiles of `tile_rows` rows: Q^T and
  // K^T occupy partitions [j * tile_rows, j * tile_rows + d) of tile j.
  const int row_tiles = std::max(params.pe_row_tiles, 1);
  const int tile_rows = kPartitions / row_tiles;
  const int qk_rows = (row_tiles - 1) * tile_rows + d;
  const int k_cols = row_tiles == 1 ? kv_tile : tile_count(banks, row_tiles) * kBankColumns;
  auto bank_tile = [&](int bank) {
    const auto row = static_cast<std::uint8_t>(bank % row_tiles * tile_rows);
    return row_tiles == 1 ? PeTile{} : PeTile{row, static_cast<std::uint8_t>(tile_rows), 0, 128};
  };

  auto k_pool = kernel.sbuf_pool("banked_k_t", depth + 1, qk_rows, k_cols, dtype);
  auto v_pool = kernel.sbuf_pool("banked_v", depth + 1, kKeyBlock, key_blocks * d, dtype);
  auto q_pool = kernel.sbuf_pool("banked_q_t", 2 * group, qk_rows, block_rows, dtype);
  auto acc_pool = kernel.sbuf_pool("banked_acc", (lookahead + 2) * tiles_per_block, q_tile, d, Dtype::fp32);
  auto stats_pool =
      kernel.sbuf_pool("banked_stats", (lookahead + 2) * tiles_per_block, q_tile, 3, Dtype::fp32);
  auto p_pool = kernel.sbuf_pool("banked_probs", depth + 1, q_tile, kv_tile, dtype);
  auto pt_pool = kernel.sbuf_pool("banked_probs_t", depth + 1, kKeyBlock, key_blocks * q_tile, dtype);
  auto scores_pool = kernel.sbuf_pool("banked_scores", depth + 1, q_tile, kv_tile, Dtype::fp32);
  auto partial_pool = kernel.sbuf_pool("banked_bank_max", depth + 1, q_tile, banks, Dtype::fp32);
  auto alpha_pool = kernel.sbuf_pool("banked_rescale", depth + 1, q_tile, 1, Dtype::fp32);
  auto col_pool = kernel.sbuf_pool("banked_columns", 8, q_tile, 1, Dtype::fp32);
  auto out_pool = kernel.sbuf_pool("banked_out", 2, q_tile, d, dtype);
  // PSUM (8 banks of 2 KiB on both targets): one bank holds four rotating
  // P V tiles ([128, d] fp32, d <= 128); P^T blocks (four per bank) take two
  // banks when the tensor engine transposes; the other banks rotate score
  // banks.
  auto pv_psum = kernel.psum_pool("banked_pv_psum", 1, q_tile, kPvTilesPerBank * d);
  const Tensor pv_bank = pv_psum.next();
  int pv_next = 0;
  std::optional<TilePool> pt_psum;
  if (pe_transposes)
    pt_psum.emplace(kernel.psum_pool("banked_probs_t_psum", 2, kKeyBlock, kBlocksPerBank * q_tile));
  auto s_psum = kernel.psum_pool("banked_scores_psum", pe_transposes ? 5 : 7, q_tile, kBankColumns);

  // Softmax half, part 1: scores bank by bank, masked where they cross the
  // diagonal, each bank's row max; the new running max.
  auto scores_and_max = [&](Step& s) {
    QueryTile& t = *s.tile;
    const int rows = t.rows;
    const Tensor partial_max = partial_pool.next().slice(0, rows, 0, tile_count(s.cols, kBankColumns));
    s.scores = scores_pool.next().slice(0, rows, 0, s.cols);
    for (const TileSpan b : tiles(s.cols, kBankColumns)) {
      const Tensor s_ps = s_psum.next().slice(0, rows, 0, b.size);
      const PeTile pe = bank_tile(b.index);
      const int row0 = pe.row_start, col0 = b.index / row_tiles * kBankColumns;
      kernel.matmul(s_ps, t.q_t.slice(row0, row0 + d, 0, rows),
                    s.k_t.slice(row0, row0 + d, col0, col0 + b.size), false, pe);
      // Out of PSUM at once (the bank is free for later scores), the bank's
      // row max in the same pass; banks crossing the diagonal are masked
      // first: keep where (q0 + p) - (key0 + c) >= 0.
      const Tensor scores = s.scores.slice(0, rows, b.begin, b.end());
      const Tensor bank_max = partial_max.slice(0, rows, b.index, b.index + 1);
      const int key0 = s.k0 + b.begin;
      if (shape.causal && key0 + b.size - 1 > t.q0) {
        kernel.tensor_copy(scores, s_ps);
        kernel.affine_select(scores, scores, static_cast<float>(t.q0 - key0), 1, -1, kMaskedScore);
        kernel.tensor_reduce(bank_max, scores, AluOp::max);
      } else {
        kernel.tensor_scalar_reduce(scores, s_ps, AluOp::multiply, 1.0f, AluOp::max, bank_max);
      }
    }
    const Tensor m_old = t.stats.slice(0, rows, t.max_col, t.max_col + 1);
    const Tensor m_new = t.stats.slice(0, rows, 1 - t.max_col, 2 - t.max_col);
    if (s.first) {
      kernel.tensor_reduce(m_new, partial_max, AluOp::max);
    } else {
      const Tensor tile_max = col_pool.next().slice(0, rows, 0, 1);
      kernel.tensor_reduce(tile_max, partial_max, AluOp::max);
      kernel.tensor_tensor(m_new, m_old, tile_max, AluOp::max);
    }
    s.neg_scaled_max = col_pool.next().slice(0, rows, 0, 1);
    kernel.tensor_scalar(s.neg_scaled_max, m_new, AluOp::multiply, -scale, AluOp::bypass, 0.0f, stats_engine);
  };
  // Softmax half, part 2: P over the whole step in one activation with its
  // row sum; alpha and the running sum.
  auto probabilities = [&](Step& s) {
    QueryTile& t = *s.tile;
    const int rows = t.rows;
    s.probs = p_pool.next().slice(0, rows, 0, s.cols);
    const Tensor l = t.stats.slice(0, rows, 2, 3);
    const Tensor row_sum = s.first ? l : col_pool.next().slice(0, rows, 0, 1);
    kernel.activation(s.probs, s.scores, ActivationFunction::exp, s.neg_scaled_max, scale, &row_sum);
    if (!s.first) {
      const Tensor m_old = t.stats.slice(0, rows, t.max_col, t.max_col + 1);
      s.alpha = alpha_pool.next().slice(0, rows, 0, 1);
      kernel.activation(s.alpha, m_old, ActivationFunction::exp, s.neg_scaled_max, scale);
      kernel.tensor_scalar(l, l, AluOp::multiply, s.alpha, AluOp::add, row_sum, stats_engine);
    }
    t.max_col = 1 - t.max_col;
  };
  // P^T blocks out of PSUM, on the engine the `evacuate_on_scalar` knob names.
  auto evacuate = [&](const Tensor& dst, const Tensor& src) {
    if (params.evacuate_on_scalar != 0)
      kernel.activation(dst, src, ActivationFunction::identity);
    else
      kernel.tensor_copy(dst, src);
  };
  // Output half, part 1: P^T per 128 keys.
  auto transpose_probs = [&](Step& s) {
    const int rows = s.tile->rows;
    s.probs_t = pt_pool.next();
    // The step's last `dma_transpose` quarters of its 128-key blocks go
    // through transposing DMAs: the full blocks in one transfer (the
    // descriptor generators' cost is per 16 partitions, whatever the keys),
    // a ragged last block on its own. The others go through the tensor
    // engine, four per PSUM bank, one evacuation per bank, the ragged last
    // block on its own.
    const int blocks = tile_count(s.cols, kKeyBlock);
    const int on_dma = blocks * params.dma_transpose / kBlocksPerBank;
    const int first_dma = blocks - on_dma;
    const int full_end = s.cols % kKeyBlock == 0 ? blocks : blocks - 1;  // blocks before it are full
    if (full_end > first_dma)
      kernel.dma_copy(s.probs_t.slice(0, kKeyBlock, first_dma * rows, full_end * rows),
                      s.probs.slice(0, rows, first_dma * kKeyBlock, full_end * kKeyBlock),
                      /*transpose=*/true);
    if (on_dma > 0 && full_end < blocks) {
      const int k0 = full_end * kKeyBlock;
      kernel.dma_copy(s.probs_t.slice(0, s.cols - k0, full_end * rows, blocks * rows),
                      s.probs.slice(0, rows, k0, s.cols), /*transpose=*/true);
    }
    for (const TileSpan group4 : tiles(first_dma, kBlocksPerBank)) {
      const int on_pe = group4.size;
      const Tensor pt_ps = pt_psum->next();
      int full = 0;
      for (int j = 0; j < on_pe; ++j) {
        const int k0 = (group4.begin + j) * kKeyBlock;
        const int krows = std::min(kKeyBlock, s.cols - k0);
        kernel.transpose(pt_ps.slice(0, krows, j * rows, j * rows + rows),
                         s.probs.slice(0, rows, k0, k0 + krows));
        if (krows == kKeyBlock) full = j + 1;
      }
      const int base = group4.begin * rows;
      if (full > 0)
        evacuate(s.probs_t.slice(0, kKeyBlock, base, base + full * rows),
                 pt_ps.slice(0, kKeyBlock, 0, full * rows));
      if (full < on_pe) {
        const int krows = s.cols - (group4.begin + full) * kKeyBlock;
        evacuate(s.probs_t.slice(0, krows, base + full * rows, base + on_pe * rows),
                 pt_ps.slice(0, krows, full * rows, on_pe * rows));
      }
    }
  };
  // Output half, part 2: P V over the step's key blocks in one PSUM tile.
  auto probs_times_v = [&](Step& s) {
    const int rows = s.tile->rows;
    const int pv_slot = pv_next++ % kPvTilesPerBank;
    s.pv = pv_bank.slice(0, rows, pv_slot * d, pv_slot * d + d);
    for (const TileSpan c : tiles(s.cols, kKeyBlock)) {
      kernel.matmul(s.pv, s.probs_t.slice(0, c.size, c.index * rows, c.index * rows + rows),
                    s.v.slice(0, c.size, c.index * d, c.index * d + d), c.index > 0);
    }
  };
  // Output half, part 3: acc = acc * alpha + P V; after the tile's last step,
  // out = acc / l.
  auto accumulate = [&](Step& s) {
    QueryTile& t = *s.tile;
    if (s.first) {
      kernel.tensor_copy(t.acc, s.pv);
    } else {
      kernel.scalar_tensor_tensor(t.acc, t.acc, AluOp::multiply, s.alpha, AluOp::add, s.pv);
    }
    if (--t.steps_left > 0) return;
    const Tensor inv_sum = col_pool.next().slice(0, t.rows, 0, 1);
    kernel.reciprocal(inv_sum, t.stats.slice(0, t.rows, 2, 3));
    const Tensor o = out_pool.next().slice(0, t.rows, 0, d);
    kernel.tensor_scalar(o, t.acc, AluOp::multiply, inv_sum, AluOp::bypass, 0.0f, stats_engine);
    const int row0 = t.head * seq + t.q0;
    kernel.dma_copy(io.out.slice(row0, row0 + t.rows, 0, d), o);
  };

  StepPipeline<Step, decltype(scores_and_max), decltype(probabilities), decltype(transpose_probs),
               decltype(probs_times_v), decltype(accumulate)>
      pipeline{lookahead, scores_and_max, probabilities, transpose_probs, probs_times_v, accumulate};

  std::deque<QueryTile> query_tiles;
  for (int g = 0; g < shape.kv_heads; ++g) {
    for (const TileSpan block : tiles(seq, block_rows)) {
      std::vector<QueryTile*> block_tiles;
      for (int j = 0; j < group; ++j) {
        const int h = g * group + j;
        const Tensor q_t = q_pool.next();
        for (int j = 0; j < row_tiles; ++j)
          kernel.dma_copy(q_t.slice(j * tile_rows, j * tile_rows + d, 0, block.size),
                          io.q_t.slice(h * d, h * d + d, block.begin, block.end()));
        for (const TileSpan q : tiles(block, q_tile)) {
          QueryTile& t = query_tiles.emplace_back();
          t.head = h;
          t.q0 = q.begin;
          t.rows = q.size;
          t.q_t = q_t.slice(0, qk_rows, q.offset, q.offset + q.size);
          t.acc = acc_pool.next().slice(0, q.size, 0, d);
          t.stats = stats_pool.next().slice(0, q.size, 0, 3);
          t.steps_left = tile_count(shape.causal ? q.end() : seq, kv_tile);
          block_tiles.push_back(&t);
        }
      }
      // Causal: keys past the block's last query are never needed.
      const int keys_end = shape.causal ? block.end() : seq;
      for (const TileSpan kv : tiles(keys_end, kv_tile)) {
        const int cols = std::min(kv.size, keys_end - kv.begin);
        Tensor k_t;
        if (row_tiles == 1) {
          k_t = k_pool.next().slice(0, d, 0, cols);
          kernel.dma_copy(k_t, io.k_t.slice(g * d, g * d + d, kv.begin, kv.begin + cols));
        } else {
          // Bank b's keys in tile b % row_tiles's partitions, column block b / row_tiles.
          k_t = k_pool.next();
          for (const TileSpan b : tiles(cols, kBankColumns)) {
            const int row0 = b.index % row_tiles * tile_rows, col0 = b.index / row_tiles * kBankColumns;
            kernel.dma_copy(k_t.slice(row0, row0 + d, col0, col0 + b.size),
                            io.k_t.slice(g * d, g * d + d, kv.begin + b.begin, kv.begin + b.end()));
          }
        }
        // V in 128-key blocks side by side (keys on partitions, as P^T has them).
        const Tensor v = v_pool.next();
        for (const TileSpan c : tiles(cols, kKeyBlock)) {
          const int row0 = g * seq + kv.begin + c.begin;
          kernel.dma_copy(v.slice(0, c.size, c.index * d, c.index * d + d),
                          io.v.slice(row0, row0 + c.size, 0, d));
        }
        for (QueryTile* t : block_tiles) {
          const int last_query = t->q0 + t->rows - 1;
          if (shape.causal && kv.begin > last_query) continue;  // fully masked for this query tile
          Step step;
          step.tile = t;
          step.k0 = kv.begin;
          // Causal: trimmed to whole 128-key blocks up to the tile's diagonal.
          step.cols = shape.causal
                          ? std::min(cols, tile_count(last_query - kv.begin + 1, kKeyBlock) * kKeyBlock)
                          : cols;
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
