// autotune model MODEL.yaml [--layers N] [--seq N] [--target T] [--baseline] [--db F] [--jobs N] [--json]
//
// Times a model's prefill forward as the chain of kernels it runs
// (model/model.hpp): per operator the configuration (the family's default,
// shrunk to fit or else its baseline where it does not fit, or the best
// verified trial in the database for that kernel, shape, dtype and target
// when that is faster; with --baseline every family's baseline), its
// latency, MFU and share of the forward; then the forward's
// latency, its MFU and its distance from the sum of the operators' roofline
// bounds. Exit status: 0 when every operator ran and verified; 1 when one
// was invalid or computed a wrong answer; 2 on misuse.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/command.hpp"
#include "cli/store_options.hpp"
#include "core/error.hpp"
#include "model/forward.hpp"
#include "model/verify.hpp"

namespace autotune::cli {
namespace {

struct ModelOptions {
  std::string file, target = "trn2";
  std::optional<std::int64_t> layers, seq;
  bool baseline = false, json = false, no_verify = false;
  int jobs = 2;
  DatabaseOption db;
};

std::string shape_text(const kernels::Shape& shape, const std::string& family) {
  return kernels::shape_text(shape, kernels::family_registry().get(family));
}

std::string config_text(const model::ChosenConfig& config) {
  std::string out = config.variant;
  for (const auto& [name, value] : config.params) out += " " + name + "=" + std::to_string(value);
  return out;
}

std::string source_text(const model::ChosenConfig& config) {
  if (config.source == "tuned")
    return "tuned (run " + std::to_string(*config.run) + " trial " + std::to_string(*config.trial) + ")";
  return config.source;
}

nlohmann::json check_json(const std::optional<model::ChainCheck>& check) {
  if (!check) return nullptr;
  return {{"seq", check->seq},
          {"mse", check->mse},
          {"cosine_similarity", check->cosine_similarity},
          {"max_rel_error", check->max_rel_error},
          {"min_cosine_similarity", check->min_cosine},
          {"passed", check->passed},
          {"error", check->error}};
}

nlohmann::json forward_json(const model::ModelSpec& spec, const sim::TargetSpec& target,
                            const model::ForwardTiming& forward, const ModelOptions& o,
                            const std::string& database) {
  nlohmann::json operators = nlohmann::json::array();
  for (const auto& t : forward.operators) {
    nlohmann::json config = {
        {"variant", t.config.variant}, {"params", t.config.params}, {"source", t.config.source}};
    if (t.config.run) config["run"] = *t.config.run, config["trial"] = *t.config.trial;
    if (!t.config.note.empty()) config["note"] = t.config.note;
    operators.push_back(
        {{"name", t.op.name},
         {"family", t.op.family},
         {"shape", t.op.shape},
         {"calls", t.op.calls},
         {"purpose", t.op.purpose},
         {"configuration", config},
         {"status", to_string(t.status)},
         {"error", t.error},
         {"latency_s", t.latency_s},
         {"total_s", t.latency_s * double(t.op.calls)},
         {"roofline_bound_s", t.roofline_s},
         {"flops", t.flops},
         {"mfu_percent", t.mfu_percent},
         {"share_percent", t.share_percent},
         {"verified", t.verified},
         {"verification", {{"cosine_similarity", t.verification_cosine}, {"mse", t.verification_mse}}}});
  }
  return {{"model", spec.name},
          {"file", spec.file.string()},
          {"layers", spec.layers},
          {"seq", spec.seq},
          {"dtype", sim::dtype_name(spec.dtype)},
          {"target", target.name},
          {"database", database},
          {"baseline", o.baseline},
          {"operators", operators},
          {"forward",
           {{"latency_s", forward.latency_s},
            {"roofline_bound_s", forward.roofline_s},
            {"flops", forward.flops},
            {"mfu_percent", forward.mfu_percent},
            {"all_ok", forward.all_ok}}}};
}

int run_model(const ModelOptions& o) {
  const model::ModelSpec spec = model::load_model(o.file, {.layers = o.layers, .seq = o.seq});
  if (o.jobs < 1 || o.jobs > 256)
    throw UserError("--jobs " + std::to_string(o.jobs) + " is out of range; accepted: 1 to 256");
  const sim::TargetSpec target = sim::load_target(o.target);
  // The database is only read, and only when it exists: without it every
  // operator runs its family's default.
  std::unique_ptr<store::Store> store;
  const std::string database = o.db.path();
  if (!o.baseline && (store::is_postgres_url(database) || std::filesystem::exists(database)))
    store = open_store_for_reading(o.db);
  model::ForwardOptions options;
  options.baseline = o.baseline;
  options.jobs = o.jobs;
  const model::ForwardTiming forward = model::time_forward(spec, target, store.get(), options);
  std::optional<model::ChainCheck> check;
  if (!o.no_verify && forward.all_ok) check = model::verify_chain(spec, forward, target);
  const bool ok = forward.all_ok && (!check || check->passed);

  if (o.json) {
    auto j = forward_json(spec, target, forward, o, store ? database : "");
    j["end_to_end"] = check_json(check);
    std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return ok ? 0 : 1;
  }
  std::printf("model %s: %lld layers, seq %lld, %s, on %s; %s\n", spec.name.c_str(), (long long)spec.layers,
              (long long)spec.seq, std::string(sim::dtype_name(spec.dtype)).c_str(), target.name.c_str(),
              o.baseline ? "every family's baseline"
              : store    ? ("configurations from " + database).c_str()
                         : ("no database at " + database + ": family defaults").c_str());
  std::printf("%-14s %5s %-9s %-34s %11s %11s %6s %6s  %s\n", "operator", "calls", "kernel", "shape",
              "per call", "total", "MFU", "share", "configuration");
  for (const auto& t : forward.operators) {
    const std::string status =
        t.status == Outcome::ok ? "" : "  [" + std::string(to_string(t.status)) + ": " + t.error + "]";
    std::printf("%-14s %5lld %-9s %-34s %8.3f ms %8.3f ms %5.1f%% %5.1f%%  %s (%s)%s\n", t.op.name.c_str(),
                (long long)t.op.calls, t.op.family.c_str(), shape_text(t.op.shape, t.op.family).c_str(),
                t.latency_s * 1e3, t.latency_s * double(t.op.calls) * 1e3, t.mfu_percent, t.share_percent,
                config_text(t.config).c_str(), source_text(t.config).c_str(), status.c_str());
  }
  // Why a default was shrunk or left for the baseline, or a tuned trial passed over, once per reason.
  std::vector<std::pair<std::string, std::string>> notes;  // operators, note
  for (const auto& t : forward.operators) {
    if (t.config.note.empty()) continue;
    auto same =
        std::find_if(notes.begin(), notes.end(), [&](const auto& n) { return n.second == t.config.note; });
    if (same == notes.end())
      notes.push_back({t.op.name, t.config.note});
    else
      same->first += ", " + t.op.name;
  }
  for (const auto& [names, note] : notes) std::printf("note           %s: %s\n", names.c_str(), note.c_str());
  std::printf(
      "forward        %.3f ms, %.2f TFLOP, MFU %.1f%%; the operators' roofline bounds sum to %.3f ms "
      "(%.2fx)\n",
      forward.latency_s * 1e3, forward.flops / 1e12, forward.mfu_percent, forward.roofline_s * 1e3,
      forward.roofline_s > 0 ? forward.latency_s / forward.roofline_s : 0.0);
  if (!forward.all_ok)
    std::printf("some operators did not run or verify: the forward's time is incomplete\n");
  if (check)
    std::printf(
        "end to end     at seq %lld, the chained kernels against a double-precision model: MSE %.3g, "
        "cosine %.6f (at least %g), max relative error %.3g: %s%s\n",
        (long long)check->seq, check->mse, check->cosine_similarity, check->min_cosine, check->max_rel_error,
        check->passed ? "passed" : "FAILED", check->error.empty() ? "" : (": " + check->error).c_str());
  return ok ? 0 : 1;
}

const CommandRegistration registration{
    "model", "Time a model's prefill forward as its chain of kernels, tuned configurations from the database",
    [](CLI::App& app) -> CommandAction {
      auto o = std::make_shared<ModelOptions>();
      app.add_option("model", o->file, "Model file (e.g. configs/models/qwen3-0.6b.yaml)")->required();
      app.add_option("--layers", o->layers, "Decoder layers (default: the model file's)")
          ->check(whole_number_in(1, model::kMaxLayers));
      app.add_option("--seq", o->seq, "Prompt tokens (default: the model file's)")
          ->check(whole_number_in(1, model::kMaxSeq));
      app.add_option("--target", o->target, "Target name or YAML path (default: trn2)");
      app.add_flag("--baseline", o->baseline, "Every operator runs its family's baseline variant");
      app.add_option("--jobs", o->jobs, "Operators simulated at once (default 2)")
          ->check(whole_number_in(1, 256));
      app.add_flag("--json", o->json, "Print one JSON object on stdout");
      app.add_flag("--no-verify", o->no_verify, "Skip the end-to-end check of the chained kernels");
      add_database_option(app, o->db);
      return [o] { return run_model(*o); };
    }};

}  // namespace
}  // namespace autotune::cli
