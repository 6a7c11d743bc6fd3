// The model file's reader, the prefill chain's shapes and the choice of each
// operator's configuration from the database.
#include "model/model.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "model/fit.hpp"
#include "model/forward.hpp"
#include "store/store.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;

namespace {

const char* kQwen = R"(name: tiny-qwen
hidden_size: 256
layers: 3
attention: {q_heads: 4, kv_heads: 2, head_dim: 64, qk_norm: true, rope_theta: 1000000}
mlp: {intermediate_size: 512, activation: silu}
norm: {kind: rmsnorm, eps: 1.0e-6}
vocab_size: 1000
dtype: bf16
seq: 384
)";

std::string load_error(const std::string& text, const model::ModelOverrides& overrides = {}) {
  testing::TempDir dir;
  const auto file = dir.write("m.yaml", text);
  try {
    model::load_model(file, overrides);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}

const model::Operator& op(const std::vector<model::Operator>& chain, const std::string& name) {
  for (const auto& o : chain)
    if (o.name == name) return o;
  FAIL("no operator " << name);
  return chain.front();
}

}  // namespace

TEST_CASE("the shipped Qwen3-0.6B file has the published figures") {
  const auto m = model::load_model(std::string(AUTOTUNE_SOURCE_DIR) + "/configs/models/qwen3-0.6b.yaml",
                                   {.layers = 4, .seq = 16384});
  CHECK(m.hidden_size == 1024);
  CHECK(m.layers == 4);
  CHECK(m.seq == 16384);
  CHECK(m.q_heads == 16);
  CHECK(m.kv_heads == 8);
  CHECK(m.head_dim == 128);
  CHECK(m.intermediate_size == 3072);
  CHECK(m.qk_norm);
  CHECK(m.rope_theta == 1e6);
  CHECK(m.norm_eps == 1e-6);
  CHECK(m.vocab_size == 151936);
  CHECK(m.dtype == sim::Dtype::bf16);
}

TEST_CASE("the shipped Llama-3.2-1B file has the published figures") {
  const auto m = model::load_model(std::string(AUTOTUNE_SOURCE_DIR) + "/configs/models/llama-3.2-1b.yaml");
  CHECK(m.hidden_size == 2048);
  CHECK(m.layers == 16);
  CHECK(m.q_heads == 32);
  CHECK(m.kv_heads == 8);
  CHECK(m.head_dim == 64);
  CHECK(m.intermediate_size == 8192);
  CHECK(!m.qk_norm);
  CHECK(m.rope_theta == 500000);
  CHECK(m.rope_scaling.factor == 32);
  CHECK(m.rope_scaling.low_freq_factor == 1);
  CHECK(m.rope_scaling.high_freq_factor == 4);
  CHECK(m.rope_scaling.original_max_position_embeddings == 8192);
  CHECK(m.norm_eps == 1e-5);
  CHECK(m.vocab_size == 128256);
  CHECK(m.tie_word_embeddings);
  CHECK(m.dtype == sim::Dtype::bf16);
  // No q/k norm: the chain goes from the projections straight to the rotary embedding.
  const auto chain = model::prefill_chain(m);
  CHECK(op(chain, "q_rope").inputs.front() == "q");
  CHECK(op(chain, "gate_proj").shape == kernels::Shape{{"M", 8192}, {"N", m.seq}, {"K", 2048}});
}

TEST_CASE("bad model files are one line naming file, line and key, before any work") {
  testing::TempDir dir;
  CHECK(load_error(kQwen).empty());
  CHECK(load_error(replaced(kQwen, "layers: 3", "layers: 0")).find("m.yaml:3: layers: 0 is out of range") !=
        std::string::npos);
  CHECK(load_error(replaced(kQwen, "layers: 3", "layerz: 3")).find("layers: missing required key") !=
        std::string::npos);
  const auto unknown = load_error(kQwen + std::string("heads: 3\n"));
  CHECK(unknown.find("m.yaml:10") != std::string::npos);
  CHECK(unknown.find("heads") != std::string::npos);
  CHECK(load_error(replaced(kQwen, "kv_heads: 2", "kv_heads: 3")).find("does not divide q_heads") !=
        std::string::npos);
  CHECK(load_error(replaced(kQwen, "head_dim: 64", "head_dim: 63")).find("must be even") !=
        std::string::npos);
  CHECK(load_error(replaced(kQwen, "activation: silu", "activation: relu")).find("accepted: silu") !=
        std::string::npos);
  CHECK(load_error(replaced(kQwen, "dtype: bf16", "dtype: int8")).find("accepted: bf16, fp16, fp32") !=
        std::string::npos);
  // A misspelt required key is named with the key it stands for.
  CHECK(
      load_error(replaced(kQwen, "intermediate_size: 512", "intermediate: 512"))
          .ends_with("m.yaml:5: mlp.intermediate_size: missing required key; unknown key 'intermediate' (did "
                     "you mean intermediate_size?)"));
  // fp8 is no typo: said to be real but not modelled.
  CHECK(load_error(replaced(kQwen, "dtype: bf16", "dtype: fp8_e4m3"))
            .ends_with(
                "m.yaml:8: dtype: dtype 'fp8_e4m3': fp8 is supported by trn2 hardware but not modelled by "
                "this simulator; accepted: bf16, fp16, fp32"));
  CHECK(load_error("[1, 2, 3]\n").find("a model file is a YAML mapping") != std::string::npos);
  const std::string scaled =
      replaced(kQwen, "rope_theta: 1000000}", "rope_theta: 1000000, rope_scaling: {kind: yarn}}");
  CHECK(load_error(scaled).find("rope_scaling") != std::string::npos);
  CHECK(load_error(scaled).find("accepted: llama3") != std::string::npos);
  CHECK(load_error("hidden_size: [\n").find("m.yaml") != std::string::npos);  // not YAML
  CHECK(load_error(kQwen, {.layers = 0}).find("--layers 0 is out of range") != std::string::npos);
  CHECK(load_error(kQwen, {.seq = -5}).find("--seq -5 is out of range") != std::string::npos);
}

TEST_CASE(
    "a figure some operator's kernel cannot take is refused at its key, with the limit the kernel has") {
  // attention contracts head_dim on the partitions: the limit is the family's own check.
  const std::string wide_heads = replaced(kQwen, "head_dim: 64", "head_dim: 512");
  const auto model = model::load_model(testing::TempDir().write("ok.yaml", kQwen));
  const auto attention = op(model::prefill_chain(model), "attention");
  kernels::Shape too_wide = attention.shape;
  too_wide["head_dim"] = 512;
  const std::string why = kernels::family_registry().get("attention").check_shape(too_wide);
  REQUIRE(!why.empty());
  CHECK(load_error(wide_heads)
            .ends_with("/m.yaml:4: attention.head_dim: 512 is too large for operator attention "
                       "(attention): " +
                       why + "; accepted: at most 128 with this model's other figures"));
  // The largest accepted is accepted; the first larger even value is not.
  CHECK(load_error(replaced(kQwen, "head_dim: 64", "head_dim: 128")).empty());
  CHECK(load_error(replaced(kQwen, "head_dim: 64", "head_dim: 130")).find("attention.head_dim: 130") !=
        std::string::npos);
  // A prompt length from the command line is named as the flag.
  const std::string long_prompt = load_error(kQwen, {.seq = 100000});
  CHECK(long_prompt.starts_with("--seq: 100000 is too large for operator "));
  CHECK(long_prompt.ends_with("accepted: at most 65536 with this model's other figures"));
  CHECK(load_error(kQwen, {.seq = 100000, .seq_where = "g.yaml:2: model.seq"})
            .starts_with("g.yaml:2: model.seq: 100000 is too large for operator "));
}

TEST_CASE("layers and seq may be left to the command line") {
  std::string text = kQwen;
  text = replaced(text, "layers: 3\n", "");
  text = replaced(text, "seq: 384\n", "");
  CHECK(load_error(text).find("m.yaml:1: layers: missing required key; accepted: 1 to 1024 (or --layers") !=
        std::string::npos);
  CHECK(load_error(text, {.layers = 2}).find("seq: missing required key; accepted: 1 to 131072 (or --seq") !=
        std::string::npos);
  testing::TempDir dir;
  const auto m = model::load_model(dir.write("m.yaml", text), {.layers = 2, .seq = 64});
  CHECK(m.layers == 2);
  CHECK(m.seq == 64);
}

TEST_CASE("the prefill chain's shapes chain from one kernel to the next") {
  testing::TempDir dir;
  const auto m = model::load_model(dir.write("m.yaml", kQwen));
  const auto chain = model::prefill_chain(m);
  const std::int64_t S = 384, H = 256, d = 64, q = 4 * 64, kv = 2 * 64, I = 512;
  // Every operator but the final norm runs once per layer.
  for (const auto& o : chain) CHECK(o.calls == (o.name == "final_norm" ? 1 : 3));
  // The projections contract over the hidden size and take the normed
  // activations transposed ([hidden, seq], the GEMM's lhsT or rhs).
  CHECK(op(chain, "attn_norm_t").shape == kernels::Shape{{"batch", 1}, {"rows", S}, {"cols", H}});
  CHECK(op(chain, "q_proj").shape == kernels::Shape{{"M", S}, {"N", q}, {"K", H}});
  CHECK(op(chain, "k_proj").shape == kernels::Shape{{"M", S}, {"N", kv}, {"K", H}});
  CHECK(op(chain, "v_proj").shape == kernels::Shape{{"M", kv}, {"N", S}, {"K", H}});
  // q/k norm over head_dim: [seq, heads*head_dim] read as [seq*heads, head_dim].
  CHECK(op(chain, "q_norm").shape == kernels::Shape{{"rows", S * 4}, {"cols", d}});
  CHECK(op(chain, "k_norm").shape == kernels::Shape{{"rows", S * 2}, {"cols", d}});
  // Attention's operands: q_t [q_heads*d, seq], k_t [kv_heads*d, seq], v [kv_heads*seq, d].
  CHECK(op(chain, "q_t").shape == kernels::Shape{{"batch", 1}, {"rows", S}, {"cols", q}});
  CHECK(op(chain, "v_heads").shape == kernels::Shape{{"batch", 2}, {"rows", d}, {"cols", S}});
  CHECK(op(chain, "attention").shape ==
        kernels::Shape{{"seq", S}, {"q_heads", 4}, {"kv_heads", 2}, {"head_dim", d}});
  // Its output [q_heads*seq, d] per head transposed is the output projection's lhsT.
  CHECK(op(chain, "o_t").shape == kernels::Shape{{"batch", 4}, {"rows", S}, {"cols", d}});
  CHECK(op(chain, "o_proj").shape == kernels::Shape{{"M", S}, {"N", H}, {"K", q}});
  // The MLP stays transposed from gate/up to the down projection's lhsT.
  CHECK(op(chain, "gate_proj").shape == kernels::Shape{{"M", I}, {"N", S}, {"K", H}});
  CHECK(op(chain, "silu_mul").shape == kernels::Shape{{"rows", I}, {"cols", S}});
  CHECK(op(chain, "down_proj").shape == kernels::Shape{{"M", S}, {"N", H}, {"K", I}});
  CHECK(op(chain, "mlp_residual").shape == kernels::Shape{{"rows", S}, {"cols", H}});
  // Without q/k norm those two operators go.
  auto plain = m;
  plain.qk_norm = false;
  const auto without = model::prefill_chain(plain);
  CHECK(without.size() == chain.size() - 2);
}

TEST_CASE("an operator takes the best verified trial for its exact kernel, shape, dtype and target") {
  auto store = store::open_store(":memory:");
  auto add_run = [&](const std::string& shape, const std::string& dtype, const std::string& target) {
    store::Run run;
    run.goal_name = "g";
    run.kernel = "rmsnorm";
    run.goal_yaml = "kernel:\n  family: rmsnorm\n  shape: {" + shape + "}\n  dtype: " + dtype +
                    "\ntarget: " + target + "\n";
    return store->create_run(run);
  };
  auto trial = [](std::int64_t run, const std::string& variant, nlohmann::json params, double latency,
                  bool passed, Outcome status = Outcome::ok) {
    store::Trial t;
    t.run = run;
    t.variant = variant;
    t.params = std::move(params);
    t.config_hash = variant + t.params.dump();
    t.cache_key = t.config_hash + std::to_string(latency);
    t.status = status;
    t.metrics = {{"latency_s", latency}};
    t.verification = {{"passed", passed}};
    return t;
  };
  const auto match = add_run("rows: 512, cols: 256", "bf16", "trn2");
  const auto other_shape = add_run("rows: 512, cols: 512", "bf16", "trn2");
  const auto other_target = add_run("rows: 512, cols: 256", "bf16", "trn1");
  const auto other_dtype = add_run("rows: 512, cols: 256", "fp32", "trn2");
  std::vector<store::Trial> trials{
      trial(match, "naive", {{"_", 0}}, 9e-3, true),
      trial(match, "fused", {{"tile_size", 256}, {"pipeline_depth", 2}, {"unroll_factor", 1}}, 4e-3, true),
      // Faster but wrong, or not measured: never chosen.
      trial(match, "fused", {{"tile_size", 128}, {"pipeline_depth", 3}, {"unroll_factor", 1}}, 1e-3, false),
      trial(match, "fused", {{"tile_size", 512}, {"pipeline_depth", 3}, {"unroll_factor", 1}}, 1e-4, true,
            Outcome::invalid),
      // A value the family no longer accepts.
      trial(match, "fused", {{"tile_size", 100}, {"pipeline_depth", 2}, {"unroll_factor", 1}}, 2e-3, true),
      trial(other_shape, "fused", {{"tile_size", 128}, {"pipeline_depth", 1}, {"unroll_factor", 1}}, 1e-3,
            true),
      trial(other_target, "fused", {{"tile_size", 128}, {"pipeline_depth", 1}, {"unroll_factor", 1}}, 1e-3,
            true),
      trial(other_dtype, "fused", {{"tile_size", 128}, {"pipeline_depth", 1}, {"unroll_factor", 1}}, 1e-3,
            true)};
  store->commit_trials(trials);
  // A second run of the same kernel with a better verified trial wins.
  const auto later = add_run("cols: 256, rows: 512", "bf16", "trn2");
  std::vector<store::Trial> more{
      trial(later, "fused", {{"tile_size", 256}, {"pipeline_depth", 4}, {"unroll_factor", 2}}, 3e-3, true)};
  store->commit_trials(more);

  const auto best = model::best_verified_config(*store, "rmsnorm", {{"rows", 512}, {"cols", 256}},
                                                sim::Dtype::bf16, "trn2");
  REQUIRE(best);
  CHECK(best->source == "tuned");
  CHECK(best->variant == "fused");
  CHECK(best->run == later);
  CHECK(best->trial == more[0].id);
  CHECK(best->params.at("pipeline_depth") == 4);
  CHECK(best->params.at("unroll_factor") == 2);
  CHECK(!model::best_verified_config(*store, "rmsnorm", {{"rows", 64}, {"cols", 256}}, sim::Dtype::bf16,
                                     "trn2"));
}

namespace {

// Roles whose parameters a fit may shrink (model/fit.hpp).
bool shrinking_role(kernels::ParamRole role) {
  return role == kernels::ParamRole::tile || role == kernels::ParamRole::block ||
         role == kernels::ParamRole::unroll || role == kernels::ParamRole::pipeline_depth;
}

}  // namespace

TEST_CASE(
    "an operator whose default does not fit runs the fastest fitting configuration of the default variant") {
  // A Llama-3.2-1B-wide layer at a short prompt: the gate and up projections
  // (M = intermediate 8192, K = hidden 2048) overflow SBUF with the GEMM's
  // default blocks on trn2.
  testing::TempDir dir;
  const auto file = dir.write("wide.yaml", R"(name: wide
hidden_size: 2048
layers: 1
attention: {q_heads: 2, kv_heads: 1, head_dim: 64, rope_theta: 500000}
mlp: {intermediate_size: 8192, activation: silu}
vocab_size: 1000
seq: 128
)");
  const auto m = model::load_model(file);
  const sim::TargetSpec target = sim::load_target("trn2");
  const auto chain = model::prefill_chain(m);
  const model::Operator& gate = op(chain, "gate_proj");
  const kernels::FamilySpec& family = kernels::family_registry().get(gate.family);
  REQUIRE(!family.default_variant.empty());
  const kernels::VariantSpec& variant = family.variant(family.default_variant);
  const kernels::ParamValues defaults = kernels::resolve_params(variant, kernels::ParamValues{});
  kernels::EvaluateOptions quick;
  quick.verify = false;
  // The premise: the default does not fit this shape.
  REQUIRE(kernels::evaluate(family, variant.name, gate.shape, m.dtype, defaults, target, quick).status ==
          Outcome::invalid);

  const model::ForwardTiming forward = model::time_forward(m, target, nullptr, model::ForwardOptions{});
  const model::OperatorTiming* timed = nullptr;
  for (const auto& t : forward.operators)
    if (t.op.name == gate.name) timed = &t;
  REQUIRE(timed);
  CHECK(timed->config.variant == family.default_variant);
  CHECK(timed->config.source == "default, shrunk to fit");
  CHECK(timed->config.note.find("does not fit") != std::string::npos);
  CHECK(timed->status == Outcome::ok);
  CHECK(timed->verified);
  // Only parameters whose smaller values hold less on chip went down, none up.
  bool smaller = false;
  for (const auto& p : variant.params) {
    const auto chosen = timed->config.params.at(p.name);
    CHECK(chosen <= defaults.at(p.name));
    if (!shrinking_role(p.role)) CHECK(chosen == defaults.at(p.name));
    smaller = smaller || chosen < defaults.at(p.name);
  }
  CHECK(smaller);
  // The fastest of the configurations one value down in one parameter that fit.
  std::optional<double> fastest;
  for (const auto& p : variant.params) {
    if (!shrinking_role(p.role)) continue;
    std::optional<std::int64_t> below;
    for (auto v : p.values)
      if (v < defaults.at(p.name) && (!below || v > *below)) below = v;
    if (!below) continue;
    kernels::ParamValues params = defaults;
    params[p.name] = *below;
    const auto e = kernels::evaluate(family, variant.name, gate.shape, m.dtype, params, target, quick);
    if (e.ok() && (!fastest || e.latency_s < *fastest)) fastest = e.latency_s;
  }
  REQUIRE(fastest);
  CHECK(timed->latency_s == doctest::Approx(*fastest).epsilon(1e-9));
}

TEST_CASE("a variant with no fitting configuration at or below its default says why") {
  const kernels::FamilySpec& family = kernels::family_registry().get("gemm");
  const kernels::VariantSpec& variant = family.variant(family.default_variant);
  sim::TargetSpec target = sim::load_target("trn2");
  target.sbuf_bytes_per_partition = 256;  // nothing of a GEMM's operand tiles fits
  const kernels::Shape shape{{"M", 512}, {"N", 512}, {"K", 512}};
  const auto fit = model::fit_variant(family, variant, shape, sim::Dtype::bf16, target,
                                      kernels::resolve_params(variant, kernels::ParamValues{}));
  CHECK(!fit.params);
  CHECK(fit.checked > 0);
  CHECK(fit.why_not.find("fits") != std::string::npos);
}

namespace {

// A verified trial of `variant` at its default parameters, in a run of `family`
// at `shape` on `target` (as a goal file writes it), with the latency it recorded.
std::pair<std::int64_t, std::int64_t> store_tuned(store::Store& store, const std::string& family_name,
                                                  const kernels::Shape& shape,
                                                  const std::string& variant_name, double recorded_latency_s,
                                                  const std::string& target = "trn2") {
  const kernels::FamilySpec& family = kernels::family_registry().get(family_name);
  std::string shape_yaml;
  for (const auto& [k, v] : shape)
    shape_yaml += (shape_yaml.empty() ? "" : ", ") + k + ": " + std::to_string(v);
  store::Run run;
  run.goal_name = "g";
  run.kernel = family_name;
  run.goal_yaml = "kernel:\n  family: " + family_name + "\n  shape: {" + shape_yaml +
                  "}\n  dtype: bf16\ntarget: " + target + "\n";
  const auto id = store.create_run(run);
  store::Trial trial;
  trial.run = id;
  trial.variant = variant_name;
  trial.params = nlohmann::json::object();
  for (const auto& [k, v] : kernels::resolve_params(family.variant(variant_name), kernels::ParamValues{}))
    trial.params[k] = v;
  trial.config_hash = variant_name + trial.params.dump();
  trial.cache_key = trial.config_hash;
  trial.status = Outcome::ok;
  trial.metrics = {{"latency_s", recorded_latency_s}};
  trial.verification = {{"passed", true}};
  std::vector<store::Trial> trials{trial};
  store.commit_trials(trials);
  return {id, trials[0].id};
}

const model::OperatorTiming& timed(const model::ForwardTiming& forward, const std::string& name) {
  for (const auto& t : forward.operators)
    if (t.op.name == name) return t;
  FAIL("no operator " << name);
  return forward.operators.front();
}

}  // namespace

TEST_CASE("a tuned trial runs only where it is at least as fast as the default, both simulated here") {
  testing::TempDir dir;
  const auto m = model::load_model(dir.write("m.yaml", kQwen));
  const sim::TargetSpec target = sim::load_target("trn2");
  const auto chain = model::prefill_chain(m);
  const model::Operator& gate = op(chain, "gate_proj");
  const kernels::FamilySpec& family = kernels::family_registry().get(gate.family);
  kernels::EvaluateOptions quick;
  quick.verify = false;
  auto latency = [&](const std::string& variant) {
    const auto params = kernels::resolve_params(family.variant(variant), kernels::ParamValues{});
    return kernels::evaluate(family, variant, gate.shape, m.dtype, params, target, quick).latency_s;
  };
  // The premise: the baseline variant at its defaults is slower than the default here.
  REQUIRE(family.baseline_variant != family.default_variant);
  REQUIRE(latency(family.baseline_variant) > latency(family.default_variant));

  SUBCASE("a slower tuned trial is passed over, saying so") {
    auto store = store::open_store(":memory:");
    // It recorded a latency better than anything: only the simulation here counts.
    const auto [run, trial] = store_tuned(*store, gate.family, gate.shape, family.baseline_variant, 1e-9);
    const auto forward = model::time_forward(m, target, store.get(), model::ForwardOptions{});
    const auto& t = timed(forward, "gate_proj");
    const std::string named = "run " + std::to_string(run) + " trial " + std::to_string(trial) + "'s tuned " +
                              family.baseline_variant;
    CHECK(t.config.variant == family.default_variant);
    CHECK(t.config.source == "default (faster than " + named + ")");
    CHECK(!t.config.run);
    CHECK(t.config.note.starts_with(named + " takes "));
    CHECK(t.latency_s == doctest::Approx(latency(family.default_variant)).epsilon(1e-9));
    CHECK(timed(forward, "up_proj").config.source == t.config.source);  // the same kernel
  }
  SUBCASE("a tuned trial as fast as the default runs, as tuned") {
    auto store = store::open_store(":memory:");
    const auto [run, trial] = store_tuned(*store, gate.family, gate.shape, family.default_variant, 1e-3);
    const auto forward = model::time_forward(m, target, store.get(), model::ForwardOptions{});
    const auto& t = timed(forward, "gate_proj");
    CHECK(t.config.source == "tuned");
    CHECK(t.config.run == run);
    CHECK(t.config.trial == trial);
    CHECK(t.config.note.empty());
  }
}

TEST_CASE("runs count for the target file they were tuned on, however the target is written") {
  testing::TempDir dir;
  // A target file whose name: is not its file's stem, as a user's copy of trn2 is.
  std::ifstream in(sim::target_file("trn2"));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text = replaced(text, "name: trn2", "name: mytrn");
  const auto mine = dir.write("targets/mytrn.yaml", text);
  REQUIRE(sim::load_target(mine.string()).name == "mytrn");
  const kernels::Shape shape{{"rows", 512}, {"cols", 256}};
  auto store = store::open_store(":memory:");
  const auto [on_file, trial] = store_tuned(*store, "rmsnorm", shape, "fused", 1e-3, mine.string());
  const auto on_trn2 = store_tuned(*store, "rmsnorm", shape, "naive", 2e-3, "trn2").first;

  auto run_for = [&](const std::string& target) -> std::optional<std::int64_t> {
    const auto best = model::best_verified_config(*store, "rmsnorm", shape, sim::Dtype::bf16, target);
    return best ? best->run : std::nullopt;
  };
  // The file, written as the goal wrote it or another way to the same file.
  CHECK(run_for(mine.string()) == on_file);
  CHECK(run_for((dir.path() / "targets" / ".." / "targets" / "mytrn.yaml").string()) == on_file);
  // Its name: is no built-in target; trn2 is trn2 however it is written.
  CHECK(!run_for("mytrn"));
  CHECK(run_for("trn2") == on_trn2);
  CHECK(run_for(sim::target_file("trn2").string()) == on_trn2);
  // What time_forward passes: the file the model's target was loaded from.
  CHECK(run_for(sim::load_target(mine.string()).source_file) == on_file);
}
