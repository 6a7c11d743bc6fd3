#include "model/model.hpp"

#include <cmath>

#include "core/config_reader.hpp"
#include "core/error.hpp"

namespace autotune::model {

namespace {

// An operator of the chain its family refuses, and why.
struct Refusal {
  std::string op, family, why;
  bool dtype = false;  // the dtype, not the shape
  std::string what() const { return "operator " + op + " (" + family + "): " + why; }
};

// The first operator of `model`'s chain (only `only` when given) whose family
// does not take its shape or dtype.
std::optional<Refusal> refused_operator(const ModelSpec& model, const std::string& only = "") {
  for (const auto& op : prefill_chain(model)) {
    if (!only.empty() && op.name != only) continue;
    const kernels::FamilySpec& family = kernels::family_registry().get(op.family);
    if (!family.accepts(model.dtype))
      return Refusal{op.name, op.family, "it does not take " + std::string(sim::dtype_name(model.dtype)),
                     true};
    if (std::string why = family.check_shape(op.shape); !why.empty())
      return Refusal{op.name, op.family, std::move(why)};
  }
  return std::nullopt;
}

// The dtypes every family of the chain takes: "bf16, fp32".
std::string chain_dtypes(const ModelSpec& model) {
  std::string out;
  for (const sim::Dtype dtype : {sim::Dtype::bf16, sim::Dtype::fp16, sim::Dtype::fp32}) {
    bool taken = true;
    for (const auto& op : prefill_chain(model))
      taken = taken && kernels::family_registry().get(op.family).accepts(dtype);
    if (taken) out += (out.empty() ? "" : ", ") + std::string(sim::dtype_name(dtype));
  }
  return out.empty() ? "none" : out;
}

// The model figures the operators' shapes are made of, in the order a model
// file writes them, with the values below `value` that the model's own rules
// allow (ascending): what a refused shape is traced back to.
struct ShapeFigure {
  const char* key;
  std::int64_t ModelSpec::*field;
  std::vector<std::int64_t> (*allowed)(const ModelSpec& model, std::int64_t value);
};

std::vector<std::int64_t> counts_below(const ModelSpec&, std::int64_t value) {
  std::vector<std::int64_t> out;
  for (std::int64_t v = 1; v < value; ++v) out.push_back(v);
  return out;
}

const ShapeFigure kShapeFigures[] = {
    {"hidden_size", &ModelSpec::hidden_size, counts_below},
    {"attention.q_heads", &ModelSpec::q_heads,
     [](const ModelSpec& m, std::int64_t value) {  // a multiple of kv_heads
       std::vector<std::int64_t> out;
       for (std::int64_t v = m.kv_heads; v < value; v += m.kv_heads) out.push_back(v);
       return out;
     }},
    {"attention.kv_heads", &ModelSpec::kv_heads,
     [](const ModelSpec& m, std::int64_t value) {  // a divisor of q_heads
       std::vector<std::int64_t> out;
       for (std::int64_t v = 1; v < value; ++v)
         if (m.q_heads % v == 0) out.push_back(v);
       return out;
     }},
    {"attention.head_dim", &ModelSpec::head_dim,
     [](const ModelSpec&, std::int64_t value) {  // even
       std::vector<std::int64_t> out;
       for (std::int64_t v = 2; v < value; v += 2) out.push_back(v);
       return out;
     }},
    {"mlp.intermediate_size", &ModelSpec::intermediate_size, counts_below},
    {"seq", &ModelSpec::seq, counts_below},
};

}  // namespace

ModelSpec load_model(const std::filesystem::path& path, const ModelOverrides& overrides) {
  ModelSpec model;
  model.file = path;
  const YAML::Node document = load_yaml_file(path);
  if (!document || document.IsNull()) throw UserError(path.string() + ": the model file is empty");
  if (!document.IsMap())
    throw UserError(path.string() +
                    ": a model file is a YAML mapping (name, hidden_size, layers, attention, mlp, ...)");
  ConfigReader top(document, path.string());
  model.name = top.name("name", path.stem().string());
  model.hidden_size = top.required_count("hidden_size", 1, 65536);
  // layers and seq may come from the command line (or a model goal) instead.
  const auto file_layers = top.maybe_count("layers", 1, kMaxLayers);
  if (!file_layers && !overrides.layers)
    top.fail_missing("layers", "missing required key",
                     "1 to " + std::to_string(kMaxLayers) + " (or --layers, or a model goal's model.layers)");
  model.layers = file_layers.value_or(0);
  model.vocab_size = top.required_count("vocab_size", 1, 1 << 24);
  const auto file_seq = top.maybe_count("seq", 1, kMaxSeq);
  if (!file_seq && !overrides.seq)
    top.fail_missing("seq", "missing required key",
                     "1 to " + std::to_string(kMaxSeq) + " (or --seq, or a model goal's model.seq)");
  model.seq = file_seq.value_or(0);
  const std::string dtype = top.optional<std::string>("dtype", "bf16", "bf16, fp16 or fp32");
  const auto parsed = sim::parse_dtype(dtype);
  if (!parsed || *parsed == sim::Dtype::int32) {
    const YAML::Node node = top.raw("dtype");
    const std::string unmodelled = sim::unmodelled_dtype_reason(dtype);
    top.fail("dtype",
             (unmodelled.empty() ? "unknown dtype '" + dtype + "'" : "dtype '" + dtype + "': " + unmodelled) +
                 "; accepted: bf16, fp16, fp32",
             &node);
  }
  model.dtype = *parsed;

  ConfigReader attention = top.child("attention");
  model.q_heads = attention.required_count("q_heads", 1, 1024);
  model.kv_heads = attention.required_count("kv_heads", 1, 1024);
  model.head_dim = attention.required_count("head_dim", 1, 512);
  model.causal = attention.optional<bool>("causal", true);
  model.qk_norm = attention.optional<bool>("qk_norm", false);
  model.rope_theta = attention.optional<double>("rope_theta", 10000.0, "a positive number");
  if (model.q_heads % model.kv_heads != 0) {
    const YAML::Node node = attention.raw("kv_heads");
    attention.fail("kv_heads",
                   std::to_string(model.kv_heads) + " does not divide q_heads (" +
                       std::to_string(model.q_heads) +
                       "); accepted: a divisor of q_heads (grouped-query attention)",
                   &node);
  }
  if (model.head_dim % 2 != 0) {
    const YAML::Node node = attention.raw("head_dim");
    attention.fail("head_dim", "must be even (rotary embeddings rotate pairs)", &node);
  }
  if (!(model.rope_theta > 0) || !std::isfinite(model.rope_theta)) {
    const YAML::Node node = attention.raw("rope_theta");
    attention.fail("rope_theta", "must be a positive number", &node);
  }
  if (!model.causal) {
    const YAML::Node node = attention.raw("causal");
    attention.fail("causal", "only causal attention is supported (a decoder's prefill); accepted: true",
                   &node);
  }
  if (auto scaling = attention.maybe_child("rope_scaling")) {
    const std::string kind = scaling->required<std::string>("kind", "llama3");
    if (kind != "llama3") {
      const YAML::Node node = scaling->raw("kind");
      scaling->fail("kind", "unknown rotary scaling '" + kind + "'; accepted: llama3", &node);
    }
    auto& r = model.rope_scaling;
    auto positive_number = [&](const std::string& key, double& value) {
      value = scaling->required<double>(key, "a positive number");
      if (!(value > 0) || !std::isfinite(value)) {
        const YAML::Node node = scaling->raw(key);
        scaling->fail(key, "must be a positive number", &node);
      }
    };
    positive_number("factor", r.factor);
    positive_number("low_freq_factor", r.low_freq_factor);
    positive_number("high_freq_factor", r.high_freq_factor);
    positive_number("original_max_position_embeddings", r.original_max_position_embeddings);
    if (!(r.high_freq_factor > r.low_freq_factor)) {
      const YAML::Node node = scaling->raw("high_freq_factor");
      scaling->fail("high_freq_factor", "must be above low_freq_factor", &node);
    }
    scaling->finish(
        {"kind", "factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"});
  }
  attention.finish({"q_heads", "kv_heads", "head_dim", "causal", "qk_norm", "rope_theta", "rope_scaling"});

  ConfigReader mlp = top.child("mlp");
  model.intermediate_size = mlp.required_count("intermediate_size", 1, 1 << 20);
  model.activation = mlp.optional<std::string>("activation", "silu", "silu (a gated MLP)");
  if (model.activation != "silu") {
    const YAML::Node node = mlp.raw("activation");
    mlp.fail("activation", "unknown activation '" + model.activation + "'; accepted: silu (a gated MLP)",
             &node);
  }
  mlp.finish({"intermediate_size", "activation"});

  if (auto norm = top.maybe_child("norm")) {
    const std::string kind = norm->optional<std::string>("kind", "rmsnorm", "rmsnorm");
    if (kind != "rmsnorm") {
      const YAML::Node node = norm->raw("kind");
      norm->fail("kind", "unknown normalisation '" + kind + "'; accepted: rmsnorm", &node);
    }
    model.norm_eps = norm->optional<double>("eps", 1e-6, "a positive number");
    if (!(model.norm_eps > 0) || !std::isfinite(model.norm_eps)) {
      const YAML::Node node = norm->raw("eps");
      norm->fail("eps", "must be a positive number", &node);
    }
    norm->finish({"kind", "eps"});
  }
  model.tie_word_embeddings = top.optional<bool>("tie_word_embeddings", false);
  top.finish({"name", "hidden_size", "layers", "attention", "mlp", "norm", "vocab_size",
              "tie_word_embeddings", "dtype", "seq"});

  if (overrides.layers) {
    if (*overrides.layers < 1 || *overrides.layers > kMaxLayers)
      throw UserError("--layers " + std::to_string(*overrides.layers) + " is out of range; accepted: 1 to " +
                      std::to_string(kMaxLayers));
    model.layers = *overrides.layers;
  }
  if (overrides.seq) {
    if (*overrides.seq < 1 || *overrides.seq > kMaxSeq)
      throw UserError("--seq " + std::to_string(*overrides.seq) + " is out of range; accepted: 1 to " +
                      std::to_string(kMaxSeq));
    model.seq = *overrides.seq;
  }

  // Every operator must be a shape and dtype its family takes: a refusal is
  // an error at the key whose value the family refuses, found by the
  // families' own checks, so that the limits are theirs and nobody's copy.
  const auto refused = refused_operator(model);
  if (!refused) return model;
  if (refused->dtype) {
    const YAML::Node node = top.raw("dtype");
    top.fail("dtype", refused->what() + "; accepted: " + chain_dtypes(model), &node);
  }
  for (const auto& figure : kShapeFigures) {
    const std::vector<std::int64_t> smaller = figure.allowed(model, model.*figure.field);
    if (smaller.empty()) continue;
    ModelSpec probe = model;
    probe.*figure.field = smaller.front();
    if (refused_operator(probe, refused->op)) continue;  // not this figure alone
    // The largest value the whole chain takes with the other figures as they are.
    std::optional<std::int64_t> largest;
    std::size_t lo = 0, hi = smaller.size();  // answer in [lo - 1, hi): smaller[lo - 1] passes
    while (lo < hi) {
      const std::size_t mid = (lo + hi) / 2;
      probe.*figure.field = smaller[mid];
      if (refused_operator(probe))
        hi = mid;
      else
        lo = mid + 1, largest = smaller[mid];
    }
    const std::string message =
        std::to_string(model.*figure.field) + " is too large for " + refused->what() +
        (largest ? "; accepted: at most " + std::to_string(*largest) + " with this model's other figures"
                 : "");
    const std::string key = figure.key;
    if (key == "seq" && overrides.seq)
      throw UserError((overrides.seq_where.empty() ? "--seq" : overrides.seq_where) + ": " + message);
    ConfigReader& reader = key.starts_with("attention.") ? attention : key.starts_with("mlp.") ? mlp : top;
    const std::string leaf = key.substr(key.find('.') + 1);
    const YAML::Node node = reader.raw(leaf);
    reader.fail(leaf, message, &node);
  }
  throw UserError(path.string() + ": " + refused->what());
}

std::vector<Operator> prefill_chain(const ModelSpec& m) {
  const std::int64_t S = m.seq, H = m.hidden_size, d = m.head_dim, L = m.layers;
  const std::int64_t q_width = m.q_heads * d, kv_width = m.kv_heads * d, I = m.intermediate_size;
  auto rows_cols = [](std::int64_t rows, std::int64_t cols) {
    return kernels::Shape{{"rows", rows}, {"cols", cols}};
  };
  auto gemm = [](std::int64_t M, std::int64_t N, std::int64_t K) {
    return kernels::Shape{{"M", M}, {"N", N}, {"K", K}};
  };
  auto transpose = [](std::int64_t batch, std::int64_t rows, std::int64_t cols) {
    return kernels::Shape{{"batch", batch}, {"rows", rows}, {"cols", cols}};
  };
  std::vector<Operator> chain;
  auto add = [&](std::string name, std::string family, kernels::Shape shape, std::string purpose,
                 bool per_layer, std::vector<std::string> inputs, std::string output) {
    chain.push_back({std::move(name), std::move(family), std::move(shape), per_layer ? L : 1,
                     std::move(purpose), std::move(inputs), std::move(output), per_layer});
  };
  // Attention block.
  add("attn_norm", "rmsnorm", rows_cols(S, H), "RMSNorm of the residual stream [seq, hidden]", true,
      {"x", "attn_gamma"}, "xn");
  add("attn_norm_t", "transpose", transpose(1, S, H),
      "normed activations to [hidden, seq], GEMMs' left operand", true, {"xn"}, "xn_t");
  add("q_proj", "gemm", gemm(S, q_width, H), "queries [seq, q_heads*head_dim]", true, {"xn_t", "w_q"}, "q");
  add("k_proj", "gemm", gemm(S, kv_width, H), "keys [seq, kv_heads*head_dim]", true, {"xn_t", "w_k"}, "k");
  add("v_proj", "gemm", gemm(kv_width, S, H), "values transposed [kv_heads*head_dim, seq]", true,
      {"w_v", "xn_t"}, "v_t");
  if (m.qk_norm) {
    add("q_norm", "rmsnorm", rows_cols(S * m.q_heads, d), "RMSNorm over head_dim of each query head", true,
        {"q", "q_gamma"}, "q_normed");
    add("k_norm", "rmsnorm", rows_cols(S * m.kv_heads, d), "RMSNorm over head_dim of each key head", true,
        {"k", "k_gamma"}, "k_normed");
  }
  add("q_rope", "rope", kernels::Shape{{"seq", S}, {"heads", m.q_heads}, {"head_dim", d}},
      "rotary embedding of the queries", true, {m.qk_norm ? "q_normed" : "q", "cos", "sin"}, "q_rotated");
  add("k_rope", "rope", kernels::Shape{{"seq", S}, {"heads", m.kv_heads}, {"head_dim", d}},
      "rotary embedding of the keys", true, {m.qk_norm ? "k_normed" : "k", "cos", "sin"}, "k_rotated");
  add("q_t", "transpose", transpose(1, S, q_width), "queries to [q_heads*head_dim, seq] for attention", true,
      {"q_rotated"}, "q_t");
  add("k_t", "transpose", transpose(1, S, kv_width), "keys to [kv_heads*head_dim, seq] for attention", true,
      {"k_rotated"}, "k_t");
  add("v_heads", "transpose", transpose(m.kv_heads, d, S), "values to [kv_heads*seq, head_dim] for attention",
      true, {"v_t"}, "v");
  add("attention", "attention",
      kernels::Shape{{"seq", S}, {"q_heads", m.q_heads}, {"kv_heads", m.kv_heads}, {"head_dim", d}},
      "causal grouped-query attention, out [q_heads*seq, head_dim]", true, {"q_t", "k_t", "v"}, "o");
  add("o_t", "transpose", transpose(m.q_heads, S, d), "attention output to [q_heads*head_dim, seq]", true,
      {"o"}, "o_t");
  add("o_proj", "gemm", gemm(S, H, q_width), "output projection [seq, hidden]", true, {"o_t", "w_o"},
      "attn_out");
  add("attn_residual", "add", rows_cols(S, H), "residual add", true, {"x", "attn_out"}, "h");
  // MLP block: gate and up come out transposed, so the down projection takes
  // SiLU(gate) * up as its (transposed) left operand without a layout change.
  add("mlp_norm", "rmsnorm", rows_cols(S, H), "RMSNorm of the residual stream", true, {"h", "mlp_gamma"},
      "hn");
  add("mlp_norm_t", "transpose", transpose(1, S, H), "normed activations to [hidden, seq]", true, {"hn"},
      "hn_t");
  add("gate_proj", "gemm", gemm(I, S, H), "gate transposed [intermediate, seq]", true, {"w_gate", "hn_t"},
      "gate_t");
  add("up_proj", "gemm", gemm(I, S, H), "up transposed [intermediate, seq]", true, {"w_up", "hn_t"}, "up_t");
  add("silu_mul", "silu_mul", rows_cols(I, S), "SiLU(gate) * up, transposed [intermediate, seq]", true,
      {"gate_t", "up_t"}, "act_t");
  add("down_proj", "gemm", gemm(S, H, I), "down projection [seq, hidden]", true, {"act_t", "w_down"},
      "mlp_out");
  add("mlp_residual", "add", rows_cols(S, H), "residual add", true, {"h", "mlp_out"}, "x");
  add("final_norm", "rmsnorm", rows_cols(S, H), "the final RMSNorm", false, {"x", "final_gamma"}, "y");
  return chain;
}

}  // namespace autotune::model
