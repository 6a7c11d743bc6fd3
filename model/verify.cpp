#include "model/verify.hpp"

#include <cmath>
#include <map>
#include <numbers>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "kernels/evaluate.hpp"

namespace autotune::model {

namespace {

using Tensors = std::map<std::string, std::vector<double>>;

bool is_weight(const std::string& name) {
  return name.starts_with("w_") || name.ends_with("_gamma") || name == "cos" || name == "sin";
}

// The rotary frequency of pair i: theta^(-2i / head_dim), with Llama 3's
// scaling when the model has it (HF's _compute_llama3_parameters).
double rope_frequency(const ModelSpec& m, std::int64_t i) {
  const double frequency = std::pow(m.rope_theta, -2.0 * double(i) / double(m.head_dim));
  const auto& r = m.rope_scaling;
  if (!(r.factor > 0)) return frequency;
  const double wavelength = 2 * std::numbers::pi / frequency;
  const double low_freq_wavelength = r.original_max_position_embeddings / r.low_freq_factor;
  const double high_freq_wavelength = r.original_max_position_embeddings / r.high_freq_factor;
  if (wavelength < high_freq_wavelength) return frequency;
  if (wavelength > low_freq_wavelength) return frequency / r.factor;
  const double smooth = (r.original_max_position_embeddings / wavelength - r.low_freq_factor) /
                        (r.high_freq_factor - r.low_freq_factor);
  return (1 - smooth) * frequency / r.factor + smooth * frequency;
}

// Rotary tables: angle(s, i) = s * rope_frequency(i), i < head_dim / 2.
void rope_tables(const ModelSpec& m, std::vector<double>& cos, std::vector<double>& sin) {
  const std::int64_t half = m.head_dim / 2;
  cos.assign(std::size_t(m.seq * half), 0);
  sin.assign(std::size_t(m.seq * half), 0);
  for (std::int64_t s = 0; s < m.seq; ++s)
    for (std::int64_t i = 0; i < half; ++i) {
      const double angle = double(s) * rope_frequency(m, i);
      cos[std::size_t(s * half + i)] = std::cos(angle);
      sin[std::size_t(s * half + i)] = std::sin(angle);
    }
}

// A weight for `name` of [rows, cols], rounded to the model's dtype: gammas
// near 1, projections with variance 1 / rows (rows is the contraction axis
// of both GEMM operands), so activations keep their scale through layers.
std::vector<double> draw_weight(const std::string& name, std::int64_t rows, std::int64_t cols,
                                sim::Dtype dtype, Rng& rng) {
  std::vector<double> w(std::size_t(rows * cols));
  const bool gamma = name.ends_with("_gamma");
  const double bound = gamma ? 0.5 : std::sqrt(3.0 / double(rows));
  for (auto& x : w) {
    const double value = gamma ? 1.0 + rng.uniform(-bound, bound) : rng.uniform(-bound, bound);
    x = sim::round_to_dtype(float(value), dtype);
  }
  return w;
}

std::vector<double> rmsnorm(const std::vector<double>& x, std::int64_t rows, std::int64_t cols,
                            const std::vector<double>& gamma, double eps) {
  std::vector<double> y(x.size());
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) sum += x[r * cols + c] * x[r * cols + c];
    const double inv = 1.0 / std::sqrt(sum / double(cols) + eps);
    for (std::int64_t c = 0; c < cols; ++c) y[r * cols + c] = x[r * cols + c] * inv * gamma[c];
  }
  return y;
}

// a [n, k] . b [k, m]
std::vector<double> matmul(const std::vector<double>& a, const std::vector<double>& b, std::int64_t n,
                           std::int64_t k, std::int64_t m) {
  std::vector<double> out(std::size_t(n * m), 0.0);
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t p = 0; p < k; ++p) {
      const double aip = a[i * k + p];
      for (std::int64_t j = 0; j < m; ++j) out[i * m + j] += aip * b[p * m + j];
    }
  return out;
}

}  // namespace

std::int64_t verification_seq(const ModelSpec& model) { return std::min<std::int64_t>(model.seq, 300); }

std::vector<double> reference_forward(const ModelSpec& m, const std::vector<Tensors>& layers,
                                      const std::vector<double>& final_gamma,
                                      const std::vector<double>& input) {
  const std::int64_t S = m.seq, H = m.hidden_size, d = m.head_dim, half = d / 2, I = m.intermediate_size;
  const std::int64_t qw = m.q_heads * d, kvw = m.kv_heads * d, group = m.q_heads / m.kv_heads;
  std::vector<double> cos, sin;
  rope_tables(m, cos, sin);
  // Per head of [S, heads * d]: RMSNorm over d, then the rotary embedding.
  auto heads = [&](std::vector<double> x, std::int64_t count, const std::vector<double>* gamma) {
    if (gamma) x = rmsnorm(x, S * count, d, *gamma, m.norm_eps);
    for (std::int64_t s = 0; s < S; ++s)
      for (std::int64_t h = 0; h < count; ++h) {
        double* row = &x[std::size_t(s * count * d + h * d)];
        for (std::int64_t i = 0; i < half; ++i) {
          const double c = cos[s * half + i], n = sin[s * half + i], x1 = row[i], x2 = row[i + half];
          row[i] = x1 * c - x2 * n;
          row[i + half] = x2 * c + x1 * n;
        }
      }
    return x;
  };
  std::vector<double> x = input;
  const double scale = 1.0 / std::sqrt(double(d));
  for (const Tensors& w : layers) {
    const auto xn = rmsnorm(x, S, H, w.at("attn_gamma"), m.norm_eps);
    const auto q =
        heads(matmul(xn, w.at("w_q"), S, H, qw), m.q_heads, m.qk_norm ? &w.at("q_gamma") : nullptr);
    const auto k =
        heads(matmul(xn, w.at("w_k"), S, H, kvw), m.kv_heads, m.qk_norm ? &w.at("k_gamma") : nullptr);
    const auto v = matmul(xn, w.at("w_v"), S, H, kvw);
    // Causal grouped-query attention: query head h reads kv head h / group.
    std::vector<double> o(std::size_t(S * qw), 0.0), p(static_cast<std::size_t>(S), 0.0);
    for (std::int64_t h = 0; h < m.q_heads; ++h) {
      const std::int64_t g = h / group;
      for (std::int64_t i = 0; i < S; ++i) {
        double top = -INFINITY;
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0;
          for (std::int64_t c = 0; c < d; ++c) dot += q[i * qw + h * d + c] * k[j * kvw + g * d + c];
          p[j] = dot * scale;
          top = std::max(top, p[j]);
        }
        double sum = 0;
        for (std::int64_t j = 0; j <= i; ++j) sum += (p[j] = std::exp(p[j] - top));
        for (std::int64_t j = 0; j <= i; ++j)
          for (std::int64_t c = 0; c < d; ++c) o[i * qw + h * d + c] += p[j] / sum * v[j * kvw + g * d + c];
      }
    }
    const auto attn = matmul(o, w.at("w_o"), S, qw, H);
    std::vector<double> h(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) h[i] = x[i] + attn[i];
    const auto hn = rmsnorm(h, S, H, w.at("mlp_gamma"), m.norm_eps);
    const auto gate = matmul(hn, w.at("w_gate"), S, H, I);
    auto act = matmul(hn, w.at("w_up"), S, H, I);
    for (std::size_t i = 0; i < act.size(); ++i) act[i] *= gate[i] / (1.0 + std::exp(-gate[i]));
    const auto mlp = matmul(act, w.at("w_down"), S, I, H);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = h[i] + mlp[i];
  }
  return rmsnorm(x, S, H, final_gamma, m.norm_eps);
}

ChainCheck verify_chain(const ModelSpec& full, const ForwardTiming& forward, const sim::TargetSpec& target,
                        std::uint64_t seed) {
  ModelSpec m = full;
  m.seq = verification_seq(full);
  ChainCheck check;
  check.seq = m.seq;
  check.min_cosine = m.dtype == sim::Dtype::fp32 ? 0.9999 : 0.999;
  const auto chain = prefill_chain(m);
  std::map<std::string, const ChosenConfig*> configs;
  for (const auto& t : forward.operators) configs[t.op.name] = &t.config;

  Rng rng = Rng(seed).fork("model weights");
  std::vector<double> cos, sin;
  rope_tables(m, cos, sin);
  std::vector<double> x(std::size_t(m.seq * m.hidden_size));
  for (auto& v : x) v = sim::round_to_dtype(float(rng.uniform(-1.0, 1.0)), m.dtype);

  std::vector<Tensors> layer_weights(std::size_t(m.layers));
  std::vector<double> final_gamma;
  Tensors activations{{"x", x}};
  auto run_operator = [&](const Operator& op, Tensors& weights) -> bool {
    const kernels::FamilySpec& family = kernels::family_registry().get(op.family);
    std::vector<std::vector<float>> inputs;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      const std::string& name = op.inputs[i];
      const auto [rows, cols] = family.inputs.at(i).dims(op.shape);
      const std::vector<double>* tensor = nullptr;
      if (name == "cos" || name == "sin") {
        tensor = name == "cos" ? &cos : &sin;
      } else if (is_weight(name)) {
        if (!weights.count(name)) weights[name] = draw_weight(name, rows, cols, m.dtype, rng);
        tensor = &weights.at(name);
      } else {
        AUTOTUNE_CHECK(activations.count(name),
                       "model chain: operator " + op.name + " reads " + name + " before anything writes it");
        tensor = &activations.at(name);
      }
      AUTOTUNE_CHECK(std::int64_t(tensor->size()) == rows * cols,
                     "model chain: " + op.name + "'s input " + name + " has " +
                         std::to_string(tensor->size()) + " elements, the kernel reads " +
                         std::to_string(rows * cols));
      inputs.emplace_back(tensor->begin(), tensor->end());
    }
    const ChosenConfig* config = configs.count(op.name) ? configs.at(op.name) : nullptr;
    AUTOTUNE_CHECK(config != nullptr, "model chain: no configuration for operator " + op.name);
    auto run = kernels::run_functional(family, config->variant, op.shape, m.dtype, config->params, target,
                                       std::move(inputs));
    if (!run.ok()) {
      check.error = op.name + " (" + config->variant + ") at seq " + std::to_string(m.seq) + ": " + run.error;
      return false;
    }
    activations[op.output].assign(run.outputs.front().begin(), run.outputs.front().end());
    return true;
  };
  for (std::int64_t layer = 0; layer < m.layers; ++layer)
    for (const auto& op : chain)
      if (op.per_layer && !run_operator(op, layer_weights[std::size_t(layer)])) return check;
  Tensors final_weights;
  for (const auto& op : chain)
    if (!op.per_layer && !run_operator(op, final_weights)) return check;
  final_gamma = final_weights.at("final_gamma");

  const auto reference = reference_forward(m, layer_weights, final_gamma, x);
  const auto& y = activations.at("y");
  const auto compared = kernels::compare_outputs({reference}, {std::vector<float>(y.begin(), y.end())},
                                                 std::numeric_limits<double>::infinity(), check.min_cosine);
  check.mse = compared.mse;
  check.cosine_similarity = compared.cosine_similarity;
  check.max_rel_error = compared.max_rel_error;
  check.passed = compared.passed;
  if (!compared.passed) check.error = compared.error;
  return check;
}

}  // namespace autotune::model
