#pragma once
// attention_cte: attention in the structure of the NKI library's
// context-encoding kernel (nkilib.core.attention.attention_cte), called
// without a launch grid (one NeuronCore, no sharding), so that the simulator
// can be checked against public hardware timings of that kernel.
//
// Same HBM layout and semantics as the other attention variants
// (attention.hpp). The library's structure, as this template reproduces it:
//
//  - Heads one after the other: the library folds heads into its batch axis
//    and runs its whole per-batch body once per query head, so K and V of a
//    kv head are loaded again for every query head sharing it (its native
//    GQA maps the batch index, it does not share loads). Every head reuses
//    the same SBUF and PSUM addresses, so a head's loads wait for the
//    previous head's last readers of those addresses.
//  - K/V sections: up to `section_threshold` keys all of K and V of a head
//    stay in SBUF (K^T in 512-key tiles, V in 128-key tiles); above it they
//    are processed `section_len` keys at a time, with a running max and sum
//    per query row across sections and the unnormalised output of earlier
//    sections written to `out` and read back (flash attention across
//    sections).
//  - Query groups of 128 rows; Q^T loaded `q_grps_per_load` groups per DMA,
//    two loads in flight.
//  - Scores per 512-key tile (one PSUM bank; four banks rotate by the tile's
//    index): S = Q K^T on the tensor engine, copied out of PSUM by the vector
//    engine with the scale applied and the tile's row max in the same
//    instruction (tensor_scalar_reduce). Tiles at or after the diagonal are
//    first copied to SBUF, masked on GpSimd (affine_select), then scaled and
//    reduced. Tiles entirely above the diagonal are skipped. The scaled
//    scores of a group's row stay in SBUF (fp32) in `kv_tile`-key tiles.
//  - The row max: one vector reduction over the tiles' maxima, negated
//    (the exponentials' bias).
//  - P = exp(S - max) per 512-key tile on the scalar engine, with the tile's
//    row sum in the same instruction; then P^T by transposing DMAs, SBUF to
//    SBUF: one per 512-key tile for its whole 128-key blocks (side by side in
//    the destination), one more for a ragged last block (no tensor-engine
//    transposes).
//  - O = P V per 128-key block (blocks above the diagonal skipped),
//    accumulated in one PSUM bank per `kv_tile` keys (four banks rotate),
//    then copied (first tile) or added (later tiles) into an fp32 SBUF
//    accumulator by the vector engine.
//  - out = O / sum: the reciprocal on the vector engine, the scaling on the
//    scalar engine, one store per group.
//  - Software pipelining over groups, as the library writes it: Q load and
//    scores of group i+2, exponentials of group i+1 and P V of group i are
//    emitted together, P V of group i interleaved with the scores of group
//    i+2 per `kv_tile` keys. Per-group buffers rotate over
//    `pipeline_depth` slots (the library: 2); the probabilities' row is
//    single-buffered, as in the library.
//
// Not causal (shape.causal false): every group has work for every key tile,
// nothing is masked or skipped.
//
// Where this template departs from the library, and why, is in
// docs/attention.md (section `cte`).
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"
#include "kernels/families/attention.hpp"

namespace autotune::kernels {

struct CteAttentionParams {
  int kv_tile = 2048;  // keys per large tile (the library's _LARGE_TILE_SZ): P V accumulation group
  int q_grps_per_load =
      8;                   // 128-row query groups per Q^T load (the library: 8 for 2-byte dtypes, 4 for fp32)
  int pipeline_depth = 2;  // rotating slots of every per-group buffer (the library: 2)
  // The library's constants for K/V sections, not tuned (_FLASH_ATTENTION_THRESHOLD,
  // _FLASH_ATTENTION_SECTION_LENGTH); smaller values only in tests of the sectioned path.
  int section_threshold = 10 * 1024;  // above this many keys, K/V are processed in sections
  int section_len = 8 * 1024;         // keys per section (a multiple of kv_tile)
};

namespace cte_detail {

inline constexpr int kGroup = kPartitions;  // query rows per group (_Q_GRP_SZ)
inline constexpr int kKTile = 512;          // keys per score tile: one PSUM bank of fp32 (_K_TILE_SZ)
inline constexpr int kVTile = kPartitions;  // keys per V tile and per P V matmul (_V_TILE_SZ)
inline constexpr int kBlocksPerTile = kKTile / kVTile;  // 128-key blocks of P^T per score tile
inline constexpr int kScoreBanks = 4;                   // PSUM banks the score tiles rotate over
inline constexpr int kPvBanks = 4;                      // PSUM banks the P V accumulations rotate over
inline constexpr int kMaskScratch = 2;                  // slots of the diagonal tiles' copy and masked copy

}  // namespace cte_detail

template <Dtype dtype>
void attention_cte(Kernel& kernel, const AttentionShape& shape, const CteAttentionParams& params) {
  using cte_detail::kBlocksPerTile;
  using cte_detail::kGroup;
  using cte_detail::kKTile;
  using cte_detail::kVTile;
  const AttentionTensors io = declare_attention_tensors(kernel, shape, dtype);
  const int seq = shape.seq, d = shape.head_dim, group = shape.group();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const int kv_tile = params.kv_tile;
  const int depth = std::max(params.pipeline_depth, 1);
  const int num_grps = tile_count(seq, kGroup);
  const int q_per_load = std::min(std::max(params.q_grps_per_load, 1), num_grps);
  const bool sectioned = seq > params.section_threshold;
  const int section_len = sectioned ? params.section_len : seq;
  const int num_sections = tile_count(seq, section_len);
  const int large_tiles = tile_count(section_len, kv_tile);  // per section
  const int k_tiles = tile_count(section_len, kKTile);
  const int v_tiles = tile_count(section_len, kVTile);
  const float lowest = std::numeric_limits<float>::lowest();

  // Per head: running statistics per group (columns), persistent across sections.
  auto running_pool = kernel.sbuf_pool("cte_running_stats", 1, kGroup, 3 * num_grps, Dtype::fp32);
  // Per section: K^T and V of the section, whole.
  auto k_pool = kernel.sbuf_pool("cte_k_t", 1, d, k_tiles * kKTile, dtype);
  auto v_pool = kernel.sbuf_pool("cte_v", 1, kVTile, v_tiles * d, dtype);
  auto q_pool = kernel.sbuf_pool("cte_q_t", 2, d, q_per_load * kGroup, dtype);
  // Per group, `depth` slots.
  auto partial_max_pool = kernel.sbuf_pool("cte_tile_max", depth, kGroup, k_tiles, Dtype::fp32);
  auto partial_sum_pool = kernel.sbuf_pool("cte_tile_sum", depth, kGroup, k_tiles, Dtype::fp32);
  // Columns: section max, section sum, previous running max, previous running sum, correction.
  auto group_stats_pool = kernel.sbuf_pool("cte_group_stats", depth, kGroup, 5, Dtype::fp32);
  auto scores_pool = kernel.sbuf_pool("cte_scores", depth, kGroup, large_tiles * kv_tile, Dtype::fp32);
  auto probs_pool = kernel.sbuf_pool("cte_probs", 1, kGroup, large_tiles * kv_tile, dtype);
  auto probs_t_pool = kernel.sbuf_pool("cte_probs_t", depth, kVTile, large_tiles * kv_tile, dtype);
  auto acc_pool = kernel.sbuf_pool("cte_acc", depth, kGroup, d, Dtype::fp32);
  auto final_pool = kernel.sbuf_pool("cte_out", depth, kGroup, d, Dtype::fp32);
  std::optional<TilePool> prev_out_pool, merged_pool;
  if (sectioned) {
    prev_out_pool.emplace(kernel.sbuf_pool("cte_prev_out", depth, kGroup, d, Dtype::fp32));
    merged_pool.emplace(kernel.sbuf_pool("cte_merged_out", depth, kGroup, d, Dtype::fp32));
  }
  auto copy_pool = kernel.sbuf_pool("cte_diag_copy", cte_detail::kMaskScratch, kGroup, kKTile, Dtype::fp32);
  auto masked_pool =
      kernel.sbuf_pool("cte_diag_masked", cte_detail::kMaskScratch, kGroup, kKTile, Dtype::fp32);
  // PSUM: four banks of scores, four of P V accumulations, at fixed places
  // (the library addresses them by tile index).
  auto s_psum_pool = kernel.psum_pool("cte_scores_psum", cte_detail::kScoreBanks, kGroup, kKTile);
  auto pv_psum_pool = kernel.psum_pool("cte_pv_psum", cte_detail::kPvBanks, kGroup, d);
  auto take = [](TilePool& pool) {
    std::vector<Tensor> slots;
    for (int i = 0; i < pool.bufs(); ++i) slots.push_back(pool.next());
    return slots;
  };
  const std::vector<Tensor> s_psum = take(s_psum_pool);
  const std::vector<Tensor> pv_psum = take(pv_psum_pool);
  const std::vector<Tensor> diag_copy = take(copy_pool);
  const std::vector<Tensor> diag_masked = take(masked_pool);

  for (int h = 0; h < shape.q_heads; ++h) {
    const int g = h / group;
    const Tensor running = running_pool.next();
    // [rows, 1] column `col` of the group's statistics.
    auto running_max = [&](int gi, int rows) { return running.slice(0, rows, gi, gi + 1); };  // -max
    auto running_sum = [&](int gi, int rows) {
      return running.slice(0, rows, num_grps + gi, num_grps + gi + 1);
    };
    auto sum_recip = [&](int gi, int rows) {
      return running.slice(0, rows, 2 * num_grps + gi, 2 * num_grps + gi + 1);
    };

    for (int s = 0; s < num_sections; ++s) {
      const int sec0 = s * section_len;
      const int sec_end = std::min(seq, sec0 + section_len);
      const int next_sec0 = sec0 + section_len;
      // Causal: group gi has work for keys from k_start on when its last possible row reaches k_start.
      auto has_compute = [&](int gi, int k_start, int grps = 1) {
        return !shape.causal || gi * kGroup + grps * kGroup - 1 >= k_start;
      };
      auto rows_of = [&](int gi) { return std::min(kGroup, seq - gi * kGroup); };

      const Tensor k_sb = k_pool.next();
      for (int t = 0; t < k_tiles && sec0 + t * kKTile < sec_end; ++t) {
        const int k0 = sec0 + t * kKTile, n = std::min(kKTile, sec_end - k0);
        kernel.dma_copy(k_sb.slice(0, d, t * kKTile, t * kKTile + n),
                        io.k_t.slice(g * d, g * d + d, k0, k0 + n));
      }
      const Tensor v_sb = v_pool.next();
      for (int t = 0; t < v_tiles && sec0 + t * kVTile < sec_end; ++t) {
        const int k0 = sec0 + t * kVTile, n = std::min(kVTile, sec_end - k0);
        kernel.dma_copy(v_sb.slice(0, n, t * d, t * d + d), io.v.slice(g * seq + k0, g * seq + k0 + n, 0, d));
      }
      const std::vector<Tensor> q_sb = take(q_pool);
      const std::vector<Tensor> partial_max = take(partial_max_pool);
      const std::vector<Tensor> partial_sum = take(partial_sum_pool);
      const std::vector<Tensor> group_stats = take(group_stats_pool);
      const std::vector<Tensor> scores = take(scores_pool);
      const Tensor probs = probs_pool.next();
      const std::vector<Tensor> probs_t = take(probs_t_pool);
      const std::vector<Tensor> acc = take(acc_pool);
      const std::vector<Tensor> finals = take(final_pool);
      std::vector<Tensor> prev_out, merged;
      if (sectioned) prev_out = take(*prev_out_pool), merged = take(*merged_pool);
      auto slot = [&](const std::vector<Tensor>& slots, int gi) { return slots[gi % slots.size()]; };
      auto stat = [&](int gi, int rows, int col) {
        return slot(group_stats, gi).slice(0, rows, col, col + 1);
      };
      enum { kSectionMax, kSectionSum, kPrevMax, kPrevSum, kCorrection };

      auto load_q = [&](int gi) {
        if (gi % q_per_load != 0 || !has_compute(gi, sec0, q_per_load)) return;
        const int q0 = gi * kGroup, cols = std::min(seq - q0, q_per_load * kGroup);
        kernel.dma_copy(q_sb[(gi / q_per_load) % 2].slice(0, d, 0, cols),
                        io.q_t.slice(h * d, h * d + d, q0, q0 + cols));
      };
      // Scores of group gi against the 512-key tiles of large tile L.
      auto qk_large = [&](int gi, int L) {
        const int q0 = gi * kGroup, rows = rows_of(gi);
        const Tensor q_t = q_sb[(gi / q_per_load) % 2].slice(0, d, (gi % q_per_load) * kGroup,
                                                             (gi % q_per_load) * kGroup + rows);
        for (int j = 0; j < kv_tile / kKTile; ++j) {
          const int t = L * (kv_tile / kKTile) + j, k0 = sec0 + t * kKTile;
          if (t >= k_tiles || k0 >= sec_end || !has_compute(gi, k0)) continue;
          const int n = std::min(kKTile, sec_end - k0);
          const Tensor ps = s_psum[t % s_psum.size()].slice(0, rows, 0, n);
          kernel.matmul(ps, q_t, k_sb.slice(0, d, t * kKTile, t * kKTile + n), false);
          const Tensor dst = slot(scores, gi).slice(0, rows, t * kKTile, t * kKTile + n);
          const Tensor tile_max = slot(partial_max, gi).slice(0, rows, t, t + 1);
          if (shape.causal && q0 < k0 + kKTile) {  // at or after the diagonal: keep (q0 + p) - (k0 + c) >= 0
            const Tensor copy = diag_copy[t % diag_copy.size()].slice(0, rows, 0, n);
            const Tensor masked = diag_masked[t % diag_masked.size()].slice(0, rows, 0, n);
            kernel.tensor_copy(copy, ps);
            kernel.affine_select(masked, copy, static_cast<float>(q0 - k0), 1, -1, kMaskedScore);
            kernel.tensor_scalar_reduce(dst, masked, AluOp::multiply, scale, AluOp::max, tile_max);
          } else {
            kernel.tensor_scalar_reduce(dst, ps, AluOp::multiply, scale, AluOp::max, tile_max);
          }
        }
      };
      auto qk_and_max = [&](int gi) {
        if (!has_compute(gi, sec0)) return;
        kernel.memset(slot(partial_max, gi).slice(0, rows_of(gi), 0, k_tiles), lowest);
        for (int L = 0; L < large_tiles; ++L) qk_large(gi, L);
      };
      // The (negated) row max of the section; across sections the running
      // max and the correction exp(m_old - m_new) of earlier sections.
      auto update_max = [&](int gi) {
        if (!has_compute(gi, sec0)) return;
        const int rows = rows_of(gi);
        const Tensor section_max = stat(gi, rows, kSectionMax);
        kernel.tensor_reduce(section_max, slot(partial_max, gi).slice(0, rows, 0, k_tiles), AluOp::max);
        if (!sectioned || s == 0) {
          kernel.tensor_scalar(running_max(gi, rows), section_max, AluOp::multiply, -1.0f);
          return;
        }
        const Tensor prev_max = stat(gi, rows, kPrevMax);
        kernel.activation(prev_max, running_max(gi, rows), ActivationFunction::identity, 0.0f, -1.0f);
        kernel.scalar_tensor_tensor(running_max(gi, rows), section_max, AluOp::multiply, -1.0f, AluOp::min,
                                    running_max(gi, rows));
        kernel.activation(stat(gi, rows, kCorrection), prev_max, ActivationFunction::exp,
                          running_max(gi, rows));
      };
      // P per 512-key tile with its row sum, then P^T by transposing DMAs.
      auto exp_probs = [&](int gi) {
        if (!has_compute(gi, sec0)) return;
        const int rows = rows_of(gi);
        kernel.memset(slot(partial_sum, gi).slice(0, rows, 0, k_tiles), 0.0f);
        for (int t = 0; t < k_tiles; ++t) {
          const int k0 = sec0 + t * kKTile;
          if (k0 >= sec_end || !has_compute(gi, k0)) continue;
          const int n = std::min(kKTile, sec_end - k0), c0 = t * kKTile;
          const Tensor p = probs.slice(0, rows, c0, c0 + n);
          const Tensor tile_sum = slot(partial_sum, gi).slice(0, rows, t, t + 1);
          kernel.activation(p, slot(scores, gi).slice(0, rows, c0, c0 + n), ActivationFunction::exp,
                            running_max(gi, rows), 1.0f, &tile_sum);
          // The 128-key blocks of the tile in one transposing DMA (block b lands in columns
          // c0 + b * rows), the ragged last block in another, as the library splits them.
          const int full = n / kVTile, rest = n % kVTile;
          const Tensor pt = slot(probs_t, gi);
          if (full > 0)
            kernel.dma_copy(pt.slice(0, kVTile, c0, c0 + full * rows),
                            probs.slice(0, rows, c0, c0 + full * kVTile),
                            /*transpose=*/true);
          if (rest > 0)
            kernel.dma_copy(pt.slice(0, rest, c0 + full * rows, c0 + (full + 1) * rows),
                            probs.slice(0, rows, c0 + full * kVTile, c0 + n), /*transpose=*/true);
        }
      };
      // P V of group gi over the 128-key blocks of large tile L, into the SBUF accumulator.
      auto pv_large = [&](int gi, int L) {
        const int rows = rows_of(gi);
        const Tensor ps = pv_psum[L % pv_psum.size()].slice(0, rows, 0, d);
        bool any = false;
        for (int j = 0; j < kv_tile / kVTile; ++j) {
          const int v = L * (kv_tile / kVTile) + j, k0 = sec0 + v * kVTile;
          if (v >= v_tiles || k0 >= sec_end || !has_compute(gi, k0)) continue;
          const int n = std::min(kVTile, sec_end - k0);
          // Block v of P^T: tile v / 4, block v % 4 of that tile.
          const int col = v / kBlocksPerTile * kKTile + v % kBlocksPerTile * rows;
          kernel.matmul(ps, slot(probs_t, gi).slice(0, n, col, col + rows),
                        v_sb.slice(0, n, v * d, v * d + d), any);
          any = true;
        }
        if (!any) return;
        const Tensor a = slot(acc, gi).slice(0, rows, 0, d);
        if (L == 0)
          kernel.tensor_copy(a, ps);
        else
          kernel.tensor_tensor(a, a, ps, AluOp::add);
      };
      auto pv = [&](int gi) {
        if (!has_compute(gi, sec0)) return;
        kernel.memset(slot(acc, gi).slice(0, rows_of(gi), 0, d), 0.0f);
        for (int L = 0; L < large_tiles; ++L) pv_large(gi, L);
      };
      // P V of group gi interleaved, per large tile, with the scores of group gi + 2.
      auto fused_qk_and_pv = [&](int gi) {
        const int qk = gi + 2;
        const bool do_pv = has_compute(gi, sec0), do_qk = has_compute(qk, sec0);
        if (do_qk) kernel.memset(slot(partial_max, qk).slice(0, rows_of(qk), 0, k_tiles), lowest);
        for (int L = 0; L < large_tiles; ++L) {
          if (do_pv) pv_large(gi, L);
          if (do_qk) qk_large(qk, L);
        }
      };
      auto scale_and_store = [&](const Tensor& src, int gi, const Tensor& out_rows) {
        const int rows = rows_of(gi);
        const Tensor o = slot(finals, gi).slice(0, rows, 0, d);
        kernel.tensor_scalar(o, src, AluOp::multiply, sum_recip(gi, rows), AluOp::bypass, 0.0f,
                             Engine::scalar);
        kernel.dma_copy(out_rows, o);
      };
      // The row sums, their reciprocal, the output (across sections: merged
      // with the earlier sections' output read back from HBM).
      auto write_back = [&](int gi) {
        if (!has_compute(gi, sec0)) return;
        const int rows = rows_of(gi), row0 = h * seq + gi * kGroup;
        const bool last = s == num_sections - 1 || !has_compute(gi, next_sec0);
        const Tensor out_rows = io.out.slice(row0, row0 + rows, 0, d);
        const Tensor section_sum = stat(gi, rows, kSectionSum);
        const Tensor a = slot(acc, gi).slice(0, rows, 0, d);
        kernel.tensor_reduce(section_sum, slot(partial_sum, gi).slice(0, rows, 0, k_tiles), AluOp::add);
        if (!sectioned) {
          kernel.reciprocal(sum_recip(gi, rows), section_sum);
          scale_and_store(a, gi, out_rows);
          return;
        }
        if (s == 0) {
          kernel.tensor_copy(running_sum(gi, rows), section_sum);
        } else {
          const Tensor prev_sum = stat(gi, rows, kPrevSum);
          kernel.tensor_copy(prev_sum, running_sum(gi, rows));
          kernel.tensor_scalar(running_sum(gi, rows), prev_sum, AluOp::multiply, stat(gi, rows, kCorrection),
                               AluOp::add, section_sum);
        }
        if (last) kernel.reciprocal(sum_recip(gi, rows), running_sum(gi, rows));
        Tensor result = a;
        if (s > 0) {
          const Tensor prev = slot(prev_out, gi).slice(0, rows, 0, d);
          kernel.dma_copy(prev, out_rows);
          result = slot(merged, gi).slice(0, rows, 0, d);
          kernel.scalar_tensor_tensor(result, prev, AluOp::multiply, stat(gi, rows, kCorrection), AluOp::add,
                                      a);
        }
        if (last)
          scale_and_store(result, gi, out_rows);
        else
          kernel.dma_copy(out_rows, result);  // unnormalised, read back by the next section
      };

      if (num_grps <= 1) {
        load_q(0), qk_and_max(0), update_max(0), exp_probs(0), pv(0), write_back(0);
        continue;
      }
      load_q(0), qk_and_max(0), update_max(0), exp_probs(0);
      load_q(1), qk_and_max(1), update_max(1);
      for (int i = 0; i + 2 < num_grps; ++i) {
        load_q(i + 2);
        exp_probs(i + 1);
        fused_qk_and_pv(i);
        write_back(i);
        update_max(i + 2);
      }
      pv(num_grps - 2), write_back(num_grps - 2);
      exp_probs(num_grps - 1), pv(num_grps - 1), write_back(num_grps - 1);
    }
  }
}

}  // namespace autotune::kernels
