#include "skills/plugin/plugin_skills.hpp"

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "search/strategy.hpp"

namespace autotune::skills {

namespace {

Json values_json(const search::ParameterSpec& parameter) {
  Json out = Json::array();
  for (const auto& v : parameter.values()) out.push_back(search::to_json(v));
  return out;
}

Json candidate_json(const Candidate& c) { return {{"variant", c.variant}, {"params", c.params}}; }

// The common part of the three wrappers: one plugin, its mode, its records.
class PluginStage {
 public:
  PluginStage(std::shared_ptr<PluginSkillClient> client, std::shared_ptr<PluginCallRecords> records,
              Json goal)
      : client_(std::move(client)), records_(std::move(records)), goal_(std::move(goal)) {}

 protected:
  const PluginSkillConfig& config() const { return client_->config(); }
  bool replaces() const { return !config().replaces.empty(); }
  std::string mode() const {
    return replaces() ? "replaces " + config().replaces : "after " + config().after;
  }

  // The plugin's reply, or nullopt after recording the failure.
  std::optional<PluginReply> ask(Json request) {
    request["goal"] = goal_;
    PluginReply reply = client_->call(request);
    if (reply.ok()) return reply;
    record_failure(to_string(reply.failure), reply.error, reply.latency_ms);
    return std::nullopt;
  }

  // A reply whose result does not fit the role's schema.
  void record_unusable(const PluginReply& reply, const std::string& why) {
    record_failure("malformed", "plugin '" + config().name + "': result rejected: " + why, reply.latency_ms);
  }

  // The decision record of an accepted answer.
  SkillDecision accepted(const PluginReply& reply, const std::string& outcome,
                         const Json& extra_evidence) const {
    SkillDecision decision;
    decision.proposer = "plugin:" + config().name;
    decision.action = reply.decision.value("action", "");
    decision.rationale = reply.decision.value("rationale", "");
    decision.inputs = inputs();
    decision.evidence = reply.decision.value("evidence", Json::object());
    if (!decision.evidence.is_object()) decision.evidence = Json::object();
    for (const auto& [key, value] : extra_evidence.items()) decision.evidence[key] = value;
    decision.evidence["latency_ms"] = reply.latency_ms;
    decision.outcome = outcome;
    return decision;
  }

  void record(SkillDecision decision) { records_->add({config().role, std::move(decision)}); }

 private:
  Json inputs() const {
    return {
        {"plugin", config().name}, {"mode", mode()}, {"role", config().role}, {"command", config().command}};
  }

  void record_failure(const std::string& kind, const std::string& error, double latency_ms) {
    SkillDecision decision;
    decision.proposer = "plugin:" + config().name;
    decision.action = "plugin_failed";
    decision.inputs = inputs();
    decision.evidence = {{"failure", kind}, {"error", error}, {"latency_ms", latency_ms}};
    decision.rationale = "plugin '" + config().name + "' (" + mode() + ") gave no usable answer";
    decision.outcome = kind + ": " + error + "; the built-in result is used";
    record(std::move(decision));
  }

  std::shared_ptr<PluginSkillClient> client_;
  std::shared_ptr<PluginCallRecords> records_;
  Json goal_;
};

std::string finding_key(const Finding& f) { return f.kind + "\n" + f.summary; }

class PluginAnalyzer : public AnalyzerSkill, PluginStage {
 public:
  PluginAnalyzer(std::unique_ptr<AnalyzerSkill> inner, PluginStage stage)
      : PluginStage(std::move(stage)), inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }

  SkillResult<Analysis> analyze(const AnalysisRequest& request) override {
    Json message = analysis_request_json(request);
    if (replaces()) {
      if (auto reply = ask(message)) {
        std::string error;
        if (auto analysis = analysis_from_plugin(reply->result, Analysis{"unknown", {}, false, 0}, &error)) {
          const std::size_t count = analysis->findings.size();
          return {
              std::move(*analysis),
              accepted(*reply, "answered instead of the built-in: " + std::to_string(count) + " finding(s)",
                       Json::object())};
        }
        record_unusable(*reply, error);
      }
      return inner_->analyze(request);
    }
    auto built = inner_->analyze(request);
    message["builtin"] = built.result;
    if (auto reply = ask(message)) {
      std::string error;
      if (auto analysis = analysis_from_plugin(reply->result, built.result, &error)) {
        std::set<std::string> before;
        for (const auto& f : built.result.findings) before.insert(finding_key(f));
        Json added = Json::array();
        for (const auto& f : analysis->findings)
          if (!before.count(finding_key(f))) added.push_back(f);
        const std::size_t removed = built.result.findings.size() + added.size() - analysis->findings.size();
        record(accepted(*reply,
                        "amended the built-in analysis: " + std::to_string(added.size()) +
                            " finding(s) added, " + std::to_string(removed) + " removed",
                        {{"findings_added", added}, {"bound", analysis->bound}}));
        built.result = std::move(*analysis);
      } else {
        record_unusable(*reply, error);
      }
    }
    return built;
  }

 private:
  std::unique_ptr<AnalyzerSkill> inner_;
};

// Ideas a plugin offered again after their region settled are left out; the
// decision names them, so a plugin that keeps offering them can be seen.
std::string settled_text(const std::vector<std::string>& settled) {
  if (settled.empty()) return "";
  return "; left out " + std::to_string(settled.size()) + " settled earlier: " + join(settled, ", ");
}

// The ideas a plugin's answer kept, whole as the built-in logs its own (`autotune
// explain` reads an idea's finding and rationale there), and the ids of those it
// offered again after they settled.
Json generation_evidence(const Generation& generation, const std::vector<std::string>& settled) {
  Json ideas = Json::array();
  for (const auto& idea : generation.ideas) ideas.push_back(idea);
  Json evidence = {{"ideas", ideas}};
  if (!settled.empty()) evidence["settled_left_out"] = settled;
  return evidence;
}

class PluginGenerator : public GeneratorSkill, PluginStage {
 public:
  PluginGenerator(std::unique_ptr<GeneratorSkill> inner, PluginStage stage)
      : PluginStage(std::move(stage)), inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }

  SkillResult<Generation> generate(const GenerationRequest& request) override {
    Json message = generation_request_json(request);
    if (replaces()) {
      if (auto reply = ask(message)) {
        std::string error;
        std::vector<std::string> settled;
        if (auto generation = generation_from_plugin(reply->result, request, &error, &settled)) {
          auto decision =
              accepted(*reply,
                       "answered instead of the built-in: " + std::to_string(generation->ideas.size()) +
                           " idea(s)" + settled_text(settled),
                       generation_evidence(*generation, settled));
          return {std::move(*generation), std::move(decision)};
        }
        record_unusable(*reply, error);
      }
      return inner_->generate(request);
    }
    auto built = inner_->generate(request);
    Json builtin = Json::array();
    for (const auto& idea : built.result.ideas) builtin.push_back(idea);
    message["builtin"] = {{"ideas", builtin}};
    if (auto reply = ask(message)) {
      std::string error;
      std::vector<std::string> settled;
      if (auto generation = generation_from_plugin(reply->result, request, &error, &settled)) {
        record(accepted(*reply,
                        "amended the built-in ideas: " + std::to_string(built.result.ideas.size()) + " -> " +
                            std::to_string(generation->ideas.size()) + " idea(s)" + settled_text(settled),
                        generation_evidence(*generation, settled)));
        built.result = std::move(*generation);
      } else {
        record_unusable(*reply, error);
      }
    }
    return built;
  }

 private:
  std::unique_ptr<GeneratorSkill> inner_;
};

// The plan (strategy, budget) is the plugin's; the search itself is the
// wrapped skill's.
class PluginExplorer : public ExplorerSkill, PluginStage {
 public:
  PluginExplorer(std::unique_ptr<ExplorerSkill> inner, PluginStage stage)
      : PluginStage(std::move(stage)), inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }

  SkillResult<ExplorationPlan> plan(const ExplorationRequest& request) override {
    // The wrapped skill's plan fills what the plugin does not decide (and is
    // the fallback); a replacing plugin does not see it.
    auto built = inner_->plan(request);
    Json message = exploration_request_json(request);
    if (!replaces())
      message["builtin"] = {{"strategy", built.result.strategy}, {"budget", built.result.budget}};
    if (auto reply = ask(message)) {
      std::string error;
      if (auto plan = plan_from_plugin(reply->result, request, built.result, &error)) {
        const std::string what = plan->strategy + ", budget " + std::to_string(plan->budget);
        auto decision =
            accepted(*reply,
                     replaces() ? "answered instead of the built-in: " + what
                                : "amended the built-in plan: " + built.result.strategy + ", budget " +
                                      std::to_string(built.result.budget) + " -> " + what,
                     {{"strategy", plan->strategy}, {"budget", plan->budget}});
        built.result = *plan;
        if (replaces()) return {built.result, std::move(decision)};
        record(std::move(decision));
      } else {
        record_unusable(*reply, error);
      }
    }
    return built;
  }

  Exploration explore(const ExplorationRequest& request, const ExplorationPlan& plan,
                      const MeasureBatch& measure, const std::function<bool()>& should_stop) override {
    return inner_->explore(request, plan, measure, should_stop);
  }

 private:
  std::unique_ptr<ExplorerSkill> inner_;
};

bool fail_with(std::string* error, const std::string& why) {
  if (error) *error = why;
  return false;
}

}  // namespace

void PluginCallRecords::add(Record record) {
  std::lock_guard lock(mutex_);
  records_.push_back(std::move(record));
}

std::vector<PluginCallRecords::Record> PluginCallRecords::take() {
  std::lock_guard lock(mutex_);
  return std::exchange(records_, {});
}

Json analysis_request_json(const AnalysisRequest& request) {
  return {{"candidate", candidate_json(request.candidate)},
          {"metrics", request.metrics},
          {"profile", request.profile},
          {"target_facts", request.target_facts}};
}

Json generation_request_json(const GenerationRequest& request) {
  Json measured_best = Json::object();  // variant -> its best objective value (minimised)
  for (const auto& [name, values] : request.measured_values)
    if (!values.empty()) measured_best[name] = *std::min_element(values.begin(), values.end());
  Json variants = Json::array();
  if (request.catalog) {
    for (const auto& v : request.catalog->variants) {
      Json parameters = Json::object();
      for (const auto& p : v.parameters) parameters[p.name()] = values_json(p);
      variants.push_back({{"name", v.name},
                          {"description", v.description},
                          {"parameters", parameters},
                          {"roles", v.roles},
                          {"constraints", v.constraints},
                          {"defaults", v.defaults}});
    }
  }
  return {{"catalog", {{"kernel", request.catalog ? request.catalog->kernel : ""}, {"variants", variants}}},
          {"best", candidate_json(request.best)},
          {"best_metrics", request.best_metrics},
          {"analysis", request.analysis},
          {"tried_ideas", request.tried_ideas},
          {"measured_variants", request.measured_variants},
          {"measured_counts", request.measured_counts},
          {"measured_best", measured_best}};
}

Json exploration_request_json(const ExplorationRequest& request) {
  Json region = Json::object();
  if (request.region)
    for (const auto& p : request.region->parameters()) region[p.name()] = values_json(p);
  Json probes = Json::array();
  for (const auto& p : request.probes) probes.push_back(candidate_json(p));
  int measured_ok = 0;
  for (const auto& o : request.known) measured_ok += o.ok() ? 1 : 0;
  return {{"variant", request.variant ? request.variant->name : ""},
          {"region", region},
          {"region_size", request.region ? request.region->size() : 0},
          {"probes", probes},
          {"strategy", request.strategy},
          {"strategy_options", request.strategy_options},
          {"budget", request.budget},
          {"batch_size", request.batch_size},
          {"known", {{"count", request.known.size()}, {"ok", measured_ok}}}};
}

std::optional<Analysis> analysis_from_plugin(const Json& result, const Analysis& base, std::string* error) {
  static const std::set<std::string> kActions = {"raise", "vary", "structural", "make_room", "stop", "none"};
  Json merged = base;
  for (const auto& [key, value] : result.items()) merged[key] = value;
  if (!merged["bound"].is_string()) return fail_with(error, "\"bound\" must be a string"), std::nullopt;
  if (!merged["findings"].is_array()) return fail_with(error, "\"findings\" must be a list"), std::nullopt;
  if (!merged["at_roofline"].is_boolean())
    return fail_with(error, "\"at_roofline\" must be true or false"), std::nullopt;
  if (!merged["headroom"].is_number()) return fail_with(error, "\"headroom\" must be a number"), std::nullopt;
  for (std::size_t i = 0; i < merged["findings"].size(); ++i) {
    Json& f = merged["findings"][i];
    if (f.is_object() && f.contains("evidence") && f["evidence"].is_null()) f["evidence"] = Json::object();
    const std::string at = "findings[" + std::to_string(i) + "]";
    if (!f.is_object()) return fail_with(error, at + " must be an object"), std::nullopt;
    if (!f.contains("kind") || !f["kind"].is_string() || f["kind"].get<std::string>().empty())
      return fail_with(error, at + ".kind must be a non-empty string"), std::nullopt;
    if (f.contains("summary") && !f["summary"].is_string())
      return fail_with(error, at + ".summary must be a string"), std::nullopt;
    if (f.contains("evidence") && !f["evidence"].is_object())
      return fail_with(error, at + ".evidence must be an object"), std::nullopt;
    if (f.contains("action") && (!f["action"].is_string() || !kActions.count(f["action"].get<std::string>())))
      return fail_with(error, at + ".action must be one of raise, vary, structural, stop, none"),
             std::nullopt;
    if (f.contains("roles") &&
        (!f["roles"].is_array() ||
         !std::all_of(f["roles"].begin(), f["roles"].end(), [](const Json& r) { return r.is_string(); })))
      return fail_with(error, at + ".roles must be a list of strings"), std::nullopt;
    if (f.contains("expected_gain") && !f["expected_gain"].is_number())
      return fail_with(error, at + ".expected_gain must be a number"), std::nullopt;
  }
  try {
    return merged.get<Analysis>();
  } catch (const Json::exception& e) {
    return fail_with(error, e.what()), std::nullopt;
  }
}

std::optional<Generation> generation_from_plugin(const Json& result, const GenerationRequest& request,
                                                 std::string* error, std::vector<std::string>* settled) {
  static const std::set<std::string> kKinds = {"raise", "vary", "structural", "explore", "handover"};
  AUTOTUNE_CHECK(request.catalog != nullptr, "a generation request without a catalog");
  if (!result.contains("ideas") || !result["ideas"].is_array())
    return fail_with(error, "\"ideas\" must be a list"), std::nullopt;
  // The catalog holds the goal's variants only (its `variants` key): a
  // family's other variants are as unknown here as a misspelt one.
  std::vector<std::string> run_variants;
  for (const auto& v : request.catalog->variants) run_variants.push_back(v.name);
  const std::string accepted_variants = "; this run's variants: " + join(run_variants, ", ");
  Generation generation;
  std::set<std::string> ids;
  std::vector<std::string> left_out;  // settled earlier
  for (std::size_t i = 0; i < result["ideas"].size(); ++i) {
    const Json& in = result["ideas"][i];
    const std::string at = "ideas[" + std::to_string(i) + "]";
    auto bad = [&](const std::string& why) { return fail_with(error, at + ": " + why), std::nullopt; };
    if (!in.is_object()) return bad("must be an object");
    Idea idea;
    if (!in.contains("id") || !in["id"].is_string() || in["id"].get<std::string>().empty())
      return bad("\"id\" must be a non-empty string");
    idea.id = in["id"];
    if (!ids.insert(idea.id).second) return bad("id '" + idea.id + "' is used twice");
    idea.kind = in.value("kind", "explore");
    if (!kKinds.count(idea.kind))
      return bad("\"kind\" must be one of raise, vary, structural, explore, handover");
    if (!in.contains("variant") || !in["variant"].is_string()) return bad("\"variant\" must be a string");
    idea.variant = in["variant"];
    const VariantSpace* variant = request.catalog->find(idea.variant);
    if (!variant) return bad("unknown variant '" + idea.variant + "'" + accepted_variants);
    const Json region = in.value("region", Json::object());
    if (!region.is_object()) return bad("\"region\" must be an object parameter -> list of values");
    for (const auto& [name, values] : region.items()) {
      const auto* parameter = variant->parameter(name);
      if (!parameter) return bad("variant '" + idea.variant + "' has no parameter '" + name + "'");
      if (!values.is_array() || values.empty()) return bad("region." + name + " must be a non-empty list");
      for (const auto& value : values) {
        try {
          const auto v = search::param_value_from_json(value, name);
          if (!parameter->position(v))
            return bad("region." + name + ": " + value.dump() + " is not in its domain");
          idea.region[name].push_back(v);
        } catch (const UserError& e) {
          return bad(e.what());
        }
      }
    }
    const Json probes = in.value("probes", Json::array());
    if (!probes.is_array()) return bad("\"probes\" must be a list");
    for (const auto& probe : probes) {
      if (!probe.is_object()) return bad("each probe must be an object {variant, params}");
      Candidate c{probe.value("variant", idea.variant), variant->defaults};
      const VariantSpace* probe_variant = request.catalog->find(c.variant);
      if (!probe_variant) return bad("probe of unknown variant '" + c.variant + "'" + accepted_variants);
      c.params = probe_variant->defaults;
      const Json params = probe.value("params", Json::object());
      if (!params.is_object()) return bad("probe params must be an object");
      for (const auto& [name, value] : params.items()) c.params[name] = value;
      try {
        const auto configuration = search::configuration_from_json(*probe_variant->space, c.params);
        if (!probe_variant->space->contains(configuration))
          return bad("probe " + c.text() + " violates the variant's constraints");
        // The domain's values, as the target takes them: a plugin's 64.0 is the domain's 64.
        c.params = search::to_json(*probe_variant->space, configuration);
      } catch (const UserError& e) {
        return bad("probe " + c.text() + ": " + e.what());
      }
      idea.probes.push_back(std::move(c));
    }
    if (idea.kind == "handover") {
      // The variants searched as one flat space; the idea's own at least.
      const Json variants = in.value("variants", Json::array({idea.variant}));
      if (!variants.is_array() || variants.empty()) return bad("\"variants\" must be a non-empty list");
      for (const auto& name : variants) {
        if (!name.is_string() || !request.catalog->find(name.get<std::string>()))
          return bad("\"variants\": unknown variant " + name.dump() + accepted_variants);
        if (std::find(idea.variants.begin(), idea.variants.end(), name.get<std::string>()) ==
            idea.variants.end())
          idea.variants.push_back(name.get<std::string>());
      }
    }
    if (in.contains("finding") && !in["finding"].is_string()) return bad("\"finding\" must be a string");
    idea.finding = in.value("finding", "");
    if (in.contains("rationale") && !in["rationale"].is_string())
      return bad("\"rationale\" must be a string");
    idea.rationale = in.value("rationale", "");
    if (in.contains("expected_gain") && !in["expected_gain"].is_number())
      return bad("\"expected_gain\" must be a number");
    idea.expected_gain = in.value("expected_gain", 0.0);
    if (request.tried_ideas.count(idea.id)) {
      left_out.push_back(idea.id);
      continue;
    }
    generation.ideas.push_back(std::move(idea));
  }
  if (generation.ideas.empty() && !left_out.empty())
    return fail_with(error, "every idea offered settled earlier (" + join(left_out, ", ") +
                                "); a settled region is not searched again"),
           std::nullopt;
  if (settled) *settled = std::move(left_out);
  return generation;
}

std::optional<ExplorationPlan> plan_from_plugin(const Json& result, const ExplorationRequest& request,
                                                const ExplorationPlan& base, std::string* error) {
  ExplorationPlan plan = base;
  if (result.contains("strategy")) {
    if (!result["strategy"].is_string())
      return fail_with(error, "\"strategy\" must be a string"), std::nullopt;
    plan.strategy = result["strategy"];
    if (!search::strategy_registry().contains(plan.strategy))
      return fail_with(error, "unknown strategy '" + plan.strategy +
                                  "'; accepted: " + search::strategy_registry().joined_names()),
             std::nullopt;
  }
  if (result.contains("budget")) {
    if (!result["budget"].is_number_integer())
      return fail_with(error, "\"budget\" must be an integer"), std::nullopt;
    plan.budget = result["budget"];
    const int most = request.budget > 0 ? request.budget : base.budget;
    if (plan.budget < 1 || plan.budget > most)
      return fail_with(error, "\"budget\" must be between 1 and " + std::to_string(most)), std::nullopt;
  }
  return plan;
}

PluginWiring install_plugins(const std::vector<PluginSkillConfig>& plugins, const Json& goal,
                             std::unique_ptr<AnalyzerSkill>& analyzer,
                             std::unique_ptr<GeneratorSkill>& generator,
                             std::unique_ptr<ExplorerSkill>& explorer) {
  PluginWiring wiring;
  // Replacing plugins wrap the built-in first; `after` plugins wrap that, in order.
  std::vector<const PluginSkillConfig*> ordered;
  for (const auto& p : plugins)
    if (!p.replaces.empty()) ordered.push_back(&p);
  for (const auto& p : plugins)
    if (p.replaces.empty()) ordered.push_back(&p);
  for (const PluginSkillConfig* config : ordered) {
    auto client = std::make_shared<PluginSkillClient>(*config);
    wiring.clients.push_back(client);
    PluginStage stage(client, wiring.records, goal);
    if (config->role == kProfileAnalyzer) {
      analyzer = std::make_unique<PluginAnalyzer>(std::move(analyzer), std::move(stage));
    } else if (config->role == kKernelGenerator) {
      generator = std::make_unique<PluginGenerator>(std::move(generator), std::move(stage));
    } else if (config->role == kParamExplorer) {
      explorer = std::make_unique<PluginExplorer>(std::move(explorer), std::move(stage));
    } else {
      throw UserError(
          "plugin '" + config->name + "': role " + config->role +
          " cannot be a plugin; measure through an external program with target: {kind: command}");
    }
  }
  return wiring;
}

}  // namespace autotune::skills
