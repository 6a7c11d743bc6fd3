#pragma once
// A model as the chain of kernels its forward pass runs (docs/model.md).
//
// A model file (configs/models/*.yaml) gives a decoder-only transformer's
// figures: hidden size, layers, attention heads, MLP size, normalisation,
// rotary embedding, dtype and the prompt length. prefill_chain() turns it
// into the operators of one prefill forward, in order: each a call of a
// kernel family (kernels/families) on a shape, with the layout changes
// between kernels as transpose operators, since each family fixes the layout
// of its operands. Every decoder layer runs the same operators, so each is
// listed once with the number of calls per forward.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "kernels/family.hpp"
#include "sim/program.hpp"

namespace autotune::model {

struct ModelSpec {
  std::filesystem::path file;
  std::string name;
  std::int64_t hidden_size = 0;
  std::int64_t layers = 0;
  std::int64_t q_heads = 0, kv_heads = 0, head_dim = 0;
  bool causal = true;
  bool qk_norm = false;  // RMSNorm over head_dim on each head's queries and keys (Qwen3)
  double rope_theta = 10000;
  // Llama 3's rotary frequency scaling (HF rope_type "llama3"): wavelengths
  // above original_max_position_embeddings / low_freq_factor are divided by
  // `factor`, those below ... / high_freq_factor kept, those between
  // interpolated. factor 0: no scaling.
  struct RopeScaling {
    double factor = 0, low_freq_factor = 1, high_freq_factor = 4;
    double original_max_position_embeddings = 8192;
  } rope_scaling;
  std::int64_t intermediate_size = 0;
  std::string activation = "silu";  // the gated MLP's activation
  double norm_eps = 1e-6;
  std::int64_t vocab_size = 0;
  bool tie_word_embeddings = false;  // recorded; the prefill chain ends at the final norm
  sim::Dtype dtype = sim::Dtype::bf16;
  std::int64_t seq = 0;  // prompt tokens of the prefill
};

// The widest prompt lengths and layer counts a model file, --seq and
// --layers take; the chain's kernels may take less (load_model checks them).
constexpr std::int64_t kMaxSeq = 131072;
constexpr std::int64_t kMaxLayers = 1024;

// --layers and --seq of `autotune model`, or a model goal's model.layers and
// model.seq (which the goal checks against the same bounds). Given, they stand
// in for the file's keys, which may then be left out.
struct ModelOverrides {
  std::optional<std::int64_t> layers = {}, seq = {};
  // How an error about the prompt length's override names it, before
  // ": <why>": empty for the command's flag (--seq); a model goal gives its
  // own key ("g.yaml:2: model.seq").
  std::string seq_where = {};
};

// Reads and checks a model file. Every error is one UserError line naming
// file:line: key (or the override) and what is accepted, before anything is
// simulated; that includes every operator of the prefill chain being a shape
// and dtype its family takes (kernels::FamilySpec::check_shape), the key
// named being the one whose value the family refuses.
ModelSpec load_model(const std::filesystem::path& path, const ModelOverrides& overrides = {});

// One kernel call of the forward (per layer when `calls` is the layer count).
struct Operator {
  std::string name;    // e.g. "q_proj", "attention", "mlp_residual"
  std::string family;  // a registered kernel family
  kernels::Shape shape;
  std::int64_t calls = 1;  // per forward
  std::string purpose;     // what it computes, in the model's terms
  // The tensors it reads, in the family's input order, and the one it
  // writes: activations by name within a layer ("x" is the residual stream
  // entering it), weights and tables by the names model/verify.cpp draws
  // (gammas, W*, cos, sin).
  std::vector<std::string> inputs;
  std::string output;
  bool per_layer = true;  // once per decoder layer; else once per forward
};

// The prefill forward of `model` on one prompt of model.seq tokens: per
// layer RMSNorm, the q/k/v projections, q/k norm, rotary embedding,
// attention, output projection, residual add, RMSNorm, gate and up
// projections, SiLU times up, down projection, residual add; then the final
// RMSNorm. Layouts: the residual stream is token-major [seq, hidden]; GEMM
// takes its left operand transposed (kernels/families/gemm.hpp), attention
// takes queries and keys feature-major and values per head.
std::vector<Operator> prefill_chain(const ModelSpec& model);

}  // namespace autotune::model
