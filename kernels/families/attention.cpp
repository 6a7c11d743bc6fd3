// The `attention` family: causal grouped-query attention (Qwen3-0.6B shapes),
// a naive baseline that materialises the score matrix (spilling it to HBM
// where a head's does not fit SBUF) and a flash variant with an online
// softmax. The templates are in attention.hpp; flash_banked's in
// attention_banked.hpp; cte (the NKI library's attention_cte structure) in
// attention_cte.hpp.
//
// The `attention_full` family: the same variants, shape arguments and layout,
// not causal (every query attends to every key; NKIBench's gqa_full). A family
// of its own rather than a `causal` shape argument: shapes are given whole,
// so an argument would make every existing attention shape incomplete, and
// the two compute different functions (reference, FLOPs).
#include "kernels/families/attention.hpp"

#include <cmath>
#include <limits>

#include "kernels/families/attention_banked.hpp"
#include "kernels/families/attention_cte.hpp"
#include "kernels/families/family_support.hpp"

namespace autotune::kernels {

namespace {

AttentionShape to_attention_shape(const Shape& shape, bool causal) {
  return AttentionShape{.seq = int_arg(shape, "seq"),
                        .q_heads = int_arg(shape, "q_heads"),
                        .kv_heads = int_arg(shape, "kv_heads"),
                        .head_dim = int_arg(shape, "head_dim"),
                        .causal = causal};
}

FlashAttentionParams to_flash_params(const ParamValues& params) {
  return FlashAttentionParams{.kv_tile = int_param(params, "kv_tile"),
                              .q_tile = int_param(params, "q_tile"),
                              .pipeline_depth = int_param(params, "pipeline_depth"),
                              .unroll_factor = int_param(params, "unroll_factor")};
}

std::string check_attention_shape(const Shape& shape) {
  for (const char* arg : {"seq", "q_heads", "kv_heads", "head_dim"}) {
    auto it = shape.find(arg);
    if (it == shape.end()) return std::string("missing shape argument '") + arg + "'";
    if (it->second < 1) return std::string("shape argument '") + arg + "' must be at least 1";
  }
  if (shape.at("head_dim") > kPartitions)
    return "head_dim " + std::to_string(shape.at("head_dim")) +
           " is larger than the 128 partitions it is contracted on";
  if (shape.at("q_heads") % shape.at("kv_heads") != 0)
    return "q_heads (" + std::to_string(shape.at("q_heads")) + ") must be a multiple of kv_heads (" +
           std::to_string(shape.at("kv_heads")) + ")";
  if (shape.at("seq") > 65536)
    return "seq " + std::to_string(shape.at("seq")) + " is above the supported 65536";
  return {};
}

// Double-precision GQA attention on the family's HBM layout; causal: query i
// attends to keys 0..i, else to all.
HostTensors attention_reference(const Shape& shape_args, const HostTensors& inputs, bool causal) {
  const AttentionShape shape = to_attention_shape(shape_args, causal);
  const int seq = shape.seq, d = shape.head_dim;
  const std::vector<double>& q_t = inputs.at(0);
  const std::vector<double>& k_t = inputs.at(1);
  const std::vector<double>& v = inputs.at(2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  HostTensors out(1, std::vector<double>(static_cast<std::size_t>(shape.q_heads) * seq * d, 0.0));
  std::vector<double> q_row(d), weights(seq), acc(d);
  for (int h = 0; h < shape.q_heads; ++h) {
    const int g = h / shape.group();
    for (int i = 0; i < seq; ++i) {
      for (int x = 0; x < d; ++x) q_row[x] = q_t[(static_cast<std::size_t>(h) * d + x) * seq + i];
      const int keys = causal ? i + 1 : seq;
      double row_max = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < keys; ++j) {
        double s = 0;
        for (int x = 0; x < d; ++x) s += q_row[x] * k_t[(static_cast<std::size_t>(g) * d + x) * seq + j];
        weights[j] = s * scale;
        row_max = std::max(row_max, weights[j]);
      }
      double sum = 0;
      for (int j = 0; j < keys; ++j) sum += (weights[j] = std::exp(weights[j] - row_max));
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int j = 0; j < keys; ++j) {
        const double* v_row = &v[(static_cast<std::size_t>(g) * seq + j) * d];
        for (int x = 0; x < d; ++x) acc[x] += weights[j] * v_row[x];
      }
      double* o_row = &out[0][(static_cast<std::size_t>(h) * seq + i) * d];
      for (int x = 0; x < d; ++x) o_row[x] = acc[x] / sum;
    }
  }
  return out;
}

// Causal: query i attends to keys 0..i, so seq (seq + 1) / 2 score elements
// per head; else seq^2. Each costs a d-long dot product in Q K^T and in P V.
double attention_flops(const Shape& shape, bool causal) {
  const double seq = static_cast<double>(shape.at("seq"));
  const double scores = causal ? seq * (seq + 1.0) / 2.0 : seq * seq;
  return 4.0 * static_cast<double>(shape.at("q_heads")) * static_cast<double>(shape.at("head_dim")) * scores;
}

double attention_hbm_bytes(const Shape& shape, Dtype dtype) {
  const double seq = static_cast<double>(shape.at("seq")), d = static_cast<double>(shape.at("head_dim"));
  const double q_heads = static_cast<double>(shape.at("q_heads")),
               kv_heads = static_cast<double>(shape.at("kv_heads"));
  // Q and O per query head, K and V per kv head.
  return (2.0 * q_heads + 2.0 * kv_heads) * seq * d * sim::dtype_bytes(dtype);
}

// Small enough for a functional simulation well under a second: two kv heads
// (the kv-head offsets) with the full shape's group size (the sharing of K/V
// tiles), and head_dim at most 64: it is never tiled, so a smaller one runs
// the same instructions with half the multiply-adds.
Shape verification_heads(const Shape& full, std::int64_t seq) {
  Shape small = full;
  const std::int64_t group = full.at("q_heads") / full.at("kv_heads");
  small["kv_heads"] = std::min<std::int64_t>(full.at("kv_heads"), 2);
  small["q_heads"] = small["kv_heads"] * group;
  small["head_dim"] = std::min<std::int64_t>(full.at("head_dim"), 64);
  small["seq"] = std::min(full.at("seq"), seq);
  return small;
}

VariantSpec naive_variant(bool causal) {
  VariantSpec v;
  v.name = "naive";
  v.description =
      causal
          ? "unfused: S = QK^T/sqrt(d) masked, a softmax pass from S to P, then O = PV; a head's S and P are "
            "kept in SBUF where they fit, else every head's round-trip through HBM; computes the masked half "
            "too"
          : "unfused: S = QK^T/sqrt(d), a softmax pass from S to P, then O = PV; a head's S and P are kept "
            "in "
            "SBUF where they fit, else every head's round-trip through HBM";
  v.trace = [causal](Kernel& kernel, const Shape& shape, Dtype dtype, const ParamValues&) {
    const AttentionShape attention_shape = to_attention_shape(shape, causal);
    dispatch_dtype(dtype,
                   [&]<Dtype D>() { attention_naive<D>(kernel, attention_shape, NaiveAttentionParams{}); });
  };
  // Two 512-column score chunks and two PSUM banks of transposed blocks, the
  // second of each ragged, and a ragged last row tile.
  v.verification_shape = [](const Shape& full, const ParamValues&) { return verification_heads(full, 520); };
  // Where the full shape's scores spill, so do the verification shape's: it
  // is traced with one byte less SBUF than its scores need on chip.
  v.verification_limits = [causal](const Shape& full, const Shape& verification, const ParamValues&,
                                   Dtype dtype, const KernelLimits& target) {
    KernelLimits limits = target;
    if (!naive_keeps_scores_on_chip(to_attention_shape(full, causal), dtype, target))
      limits.sbuf_bytes_per_partition =
          std::min(target.sbuf_bytes_per_partition,
                   naive_on_chip_sbuf_bytes(to_attention_shape(verification, causal), dtype) - 1);
    return limits;
  };
  v.header = "kernels/families/attention.hpp";
  v.template_name = "autotune::kernels::attention_naive";
  v.params_struct = "autotune::kernels::NaiveAttentionParams";
  return v;
}

VariantSpec flash_variant(bool causal) {
  VariantSpec v;
  v.name = "flash";
  v.description =
      std::string(
          "fused: online softmax over key/value tiles (running max and sum, accumulator rescaled by "
          "exp(m_old - m_new)); ") +
      (causal ? "fully masked tiles skipped, diagonal tiles masked with affine_select; "
              : "every key tile, nothing masked; ") +
      "each K/V tile reused by unroll_factor query tiles of every query head sharing its kv head";
  const FlashAttentionParams defaults;
  v.params = {
      param("kv_tile", "keys per online-softmax step (free size of the score tile)", {128, 256, 512},
            defaults.kv_tile, ParamRole::tile),
      param("q_tile", "queries per score tile (its partitions)", {32, 64, 128}, defaults.q_tile,
            ParamRole::tile),
      param(
          "pipeline_depth",
          "rotating buffers for K/V and probabilities: steps in flight (the softmax of later steps overlaps "
          "the output of earlier ones, the next loads overlap compute)",
          {1, 2, 3, 4}, defaults.pipeline_depth, ParamRole::pipeline_depth),
      param("unroll_factor", "unroll: query tiles per query head that share each K/V load", {1, 2, 4, 8},
            defaults.unroll_factor, ParamRole::unroll),
  };
  v.trace = [causal](Kernel& kernel, const Shape& shape, Dtype dtype, const ParamValues& params) {
    const AttentionShape attention_shape = to_attention_shape(shape, causal);
    const FlashAttentionParams flash_params = to_flash_params(params);
    dispatch_dtype(dtype, [&]<Dtype D>() { attention_flash<D>(kernel, attention_shape, flash_params); });
  };
  // At least two key tiles (the online rescaling), the last one ragged, and
  // a ragged last query tile.
  v.verification_shape = [](const Shape& full, const ParamValues& params) {
    return verification_heads(full, params.at("kv_tile") + 72);
  };
  v.header = "kernels/families/attention.hpp";
  v.template_name = "autotune::kernels::attention_flash";
  v.params_struct = "autotune::kernels::FlashAttentionParams";
  return v;
}

BankedAttentionParams to_banked_params(const ParamValues& params) {
  return BankedAttentionParams{.kv_tile = int_param(params, "kv_tile"),
                               .q_tiles = int_param(params, "q_tiles"),
                               .pipeline_depth = int_param(params, "pipeline_depth"),
                               .dma_transpose = int_param(params, "dma_transpose"),
                               .stats_on_gpsimd = int_param(params, "stats_on_gpsimd"),
                               .evacuate_on_scalar = int_param(params, "evacuate_on_scalar"),
                               .pe_row_tiles = int_param(params, "pe_row_tiles")};
}

VariantSpec flash_banked_variant(bool causal) {
  VariantSpec v;
  v.name = "flash_banked";
  v.description =
      std::string(
          "fused, in the structure of hand-written NKI kernels: key tiles of up to 2048 keys with the score "
          "tile spread over PSUM banks (row max and exp read each bank), ") +
      (causal ? "steps trimmed to the diagonal, " : "every key tile whole, nothing masked, ") +
      "a block of q_tiles query tiles per head of the group kept in SBUF while K/V stream through once per "
      "block, P^T on the tensor engine or by transposing DMAs, the small per-row updates on the vector "
      "engine "
      "or GpSimd";
  const BankedAttentionParams defaults;
  v.params = {
      param("kv_tile", "keys per online-softmax step; the score tile spans kv_tile / 512 PSUM banks",
            {512, 1024, 2048}, defaults.kv_tile, ParamRole::tile),
      param("q_tiles", "block: 128-row query tiles per query head kept in SBUF, sharing each K/V load",
            {1, 2, 4, 8, 16}, defaults.q_tiles, ParamRole::block),
      param("pipeline_depth", "steps in flight (rotating probability, K/V and statistics buffers)",
            {1, 2, 3, 4, 5, 6}, defaults.pipeline_depth, ParamRole::pipeline_depth),
      param("dma_transpose",
            "quarters of each step's 128-key blocks of P^T made by transposing DMAs (SBUF to SBUF, the full "
            "blocks in one transfer); the others by tensor-engine transposes",
            {0, 1, 2, 3, 4}, defaults.dma_transpose, ParamRole::placement),
      param("stats_on_gpsimd", "1: the small per-row softmax and accumulator updates on GpSimd; 0: vector",
            {0, 1}, defaults.stats_on_gpsimd, ParamRole::placement),
      param(
          "evacuate_on_scalar",
          "with tensor-engine transposes, 1: P^T leaves PSUM through the scalar engine; 0: the vector engine",
          {0, 1}, defaults.evacuate_on_scalar, ParamRole::placement),
      param("pe_row_tiles",
            "PE row tiles the score matmuls (which contract over head_dim) spread over, side by side "
            "(nc_matmul tile_position/tile_size); needs head_dim <= 128 / pe_row_tiles and a target whose "
            "smallest PE tile is at most 128 / pe_row_tiles",
            {1, 2, 4}, defaults.pe_row_tiles, ParamRole::placement),
  };
  v.constraints = {"pe_row_tiles * head_dim <= max_contraction",
                   "pe_row_tiles * pe_tile_min <= max_contraction"};
  v.trace = [causal](Kernel& kernel, const Shape& shape, Dtype dtype, const ParamValues& params) {
    const AttentionShape attention_shape = to_attention_shape(shape, causal);
    const BankedAttentionParams banked = to_banked_params(params);
    dispatch_dtype(dtype, [&]<Dtype D>() { attention_flash_banked<D>(kernel, attention_shape, banked); });
  };
  // Two key tiles (the online rescaling), the second ragged and crossing the
  // diagonal mid-bank; two query blocks where q_tiles allows, the last ragged.
  v.verification_shape = [](const Shape& full, const ParamValues& params) {
    return verification_heads(full, params.at("kv_tile") + 200);
  };
  v.header = "kernels/families/attention_banked.hpp";
  v.template_name = "autotune::kernels::attention_flash_banked";
  v.params_struct = "autotune::kernels::BankedAttentionParams";
  return v;
}

CteAttentionParams to_cte_params(const ParamValues& params) {
  return CteAttentionParams{.kv_tile = int_param(params, "kv_tile"),
                            .q_grps_per_load = int_param(params, "q_grps_per_load"),
                            .pipeline_depth = int_param(params, "pipeline_depth")};
}

VariantSpec cte_variant(bool causal) {
  VariantSpec v;
  v.name = "cte";
  v.description =
      "the NKI library's context-encoding kernel (attention_cte, no launch grid): heads one after another, "
      "K/V of a head whole in SBUF (in 8K sections above 10K keys), 128-row query groups software-pipelined "
      "three deep, scores per 512-key PSUM bank scaled and max-reduced out of PSUM, exp with its row sum per "
      "512 keys, P^T by transposing DMAs, P V per 128 keys accumulated per kv_tile keys";
  if (!causal) v.description += "; every key tile, nothing masked";
  const CteAttentionParams defaults;
  v.params = {
      param("kv_tile",
            "keys per large tile: P V accumulates that many keys in one PSUM bank before it is added into "
            "SBUF, and P V of a group interleaves with the scores of the group two ahead at that step",
            {512, 1024, 2048}, defaults.kv_tile, ParamRole::tile),
      param("q_grps_per_load", "128-row query groups per Q^T load (one DMA of 128 x this many columns)",
            {1, 2, 4, 8, 16}, defaults.q_grps_per_load, ParamRole::tile),
      param("pipeline_depth",
            "rotating slots of every per-group buffer (scores, P^T, statistics, accumulators); the group "
            "pipeline's skew stays the library's (Q and scores two groups ahead, exp one)",
            {2, 3, 4}, defaults.pipeline_depth, ParamRole::pipeline_depth),
  };
  v.trace = [causal](Kernel& kernel, const Shape& shape, Dtype dtype, const ParamValues& params) {
    const AttentionShape attention_shape = to_attention_shape(shape, causal);
    const CteAttentionParams cte = to_cte_params(params);
    dispatch_dtype(dtype, [&]<Dtype D>() { attention_cte<D>(kernel, attention_shape, cte); });
  };
  // Two large tiles, the second ragged (a ragged 512-key tile and 128-key
  // block crossing the diagonal), a ragged last query group, and at least
  // two Q loads, the last one ragged.
  v.verification_shape = [](const Shape& full, const ParamValues& params) {
    return verification_heads(full, std::max(params.at("kv_tile"), 128 * params.at("q_grps_per_load")) + 200);
  };
  v.header = "kernels/families/attention_cte.hpp";
  v.template_name = "autotune::kernels::attention_cte";
  v.params_struct = "autotune::kernels::CteAttentionParams";
  return v;
}

// `attention` when causal, else `attention_full`: the same variants and
// layout; the mask, the key tiles visited, the reference and the FLOPs follow
// `causal`.
FamilySpec attention_family(bool causal) {
  FamilySpec f;
  f.name = causal ? "attention" : "attention_full";
  f.description =
      std::string(causal ? "causal" : "non-causal (every query attends to every key)") +
      " scaled-dot-product attention with grouped-query heads (Qwen3-0.6B: head_dim 128, 16 query heads, 8 "
      "kv "
      "heads); layout q_t [q_heads*d, seq], k_t [kv_heads*d, seq], v [kv_heads*seq, d], out [q_heads*seq, d]";
  f.shape_args = {"seq", "q_heads", "kv_heads", "head_dim"};
  f.default_shape = {{"seq", 16384}, {"q_heads", 16}, {"kv_heads", 8}, {"head_dim", 128}};
  f.shape_struct = causal ? "autotune::kernels::AttentionShape" : "autotune::kernels::FullAttentionShape";
  f.dtypes = {Dtype::bf16, Dtype::fp16, Dtype::fp32};
  f.inputs = {
      {"q_t",
       [](const Shape& s) {
         return std::pair{s.at("q_heads") * s.at("head_dim"), s.at("seq")};
       }},
      {"k_t",
       [](const Shape& s) {
         return std::pair{s.at("kv_heads") * s.at("head_dim"), s.at("seq")};
       }},
      {"v",
       [](const Shape& s) {
         return std::pair{s.at("kv_heads") * s.at("seq"), s.at("head_dim")};
       }},
  };
  f.outputs = {
      {"out",
       [](const Shape& s) {
         return std::pair{s.at("q_heads") * s.at("seq"), s.at("head_dim")};
       }},
  };
  f.variants = {naive_variant(causal), flash_variant(causal), flash_banked_variant(causal),
                cte_variant(causal)};
  f.baseline_variant = "naive";
  f.default_variant = "flash_banked";
  f.check_shape = check_attention_shape;
  f.reference = [causal](const Shape& shape, const HostTensors& inputs) {
    return attention_reference(shape, inputs, causal);
  };
  f.flops = [causal](const Shape& shape) { return attention_flops(shape, causal); };
  f.hbm_bytes = attention_hbm_bytes;
  f.tensor_engine_bound = true;
  // Probabilities are rounded to the input dtype before P V, and the output
  // once more. The largest relative error grows with the keys a row averages
  // (the RMS floor of the measure shrinks, the rounding does not): in bf16
  // every variant measures 0.015 at seq 600, 0.021 at 1200 and 0.032-0.034 at
  // 2248 (flash, flash_banked and naive alike), with cosine 0.999998 at all
  // three. So the bound is looser for 2-byte dtypes and the whole output must
  // also match in direction (cosine), which a wrong mask, a missing rescale or
  // a dropped key tile breaks at once.
  f.tolerance = {{Dtype::bf16, 5e-2}, {Dtype::fp16, 1e-2}, {Dtype::fp32, 1e-3}};
  f.min_cosine_similarity = 0.9999;
  return f;
}

const FamilyRegistration registration(attention_family(/*causal=*/true));
const FamilyRegistration full_registration(attention_family(/*causal=*/false));

}  // namespace
}  // namespace autotune::kernels
