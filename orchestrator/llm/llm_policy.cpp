#include "orchestrator/llm/llm_policy.hpp"

#include <algorithm>
#include <chrono>

#include "core/error.hpp"
#include "core/subprocess.hpp"
#include "orchestrator/llm/llm_source_proposer.hpp"
#include "orchestrator/target_kind.hpp"

namespace autotune::orchestrator::llm {

namespace {

using Json = nlohmann::json;

constexpr const char* kSystemPrompt =
    "You advise a kernel autotuner. Each iteration it measures candidates from one region of one kernel "
    "variant's parameter space on the target, verifies them against a reference and keeps the best. "
    "Objective values are minimised (latency in seconds; for objective mfu, minus the MFU percentage). "
    "Choose the next iteration's action from the context. Answer with exactly one JSON object and nothing "
    "else, in one of two forms:\n"
    "  {\"idea\": \"<id of one of the listed ideas>\", \"rationale\": \"<one sentence>\"}\n"
    "  {\"variant\": \"<variant name>\", \"region\": {\"<parameter>\": [<values>]}, \"rationale\": \"<one "
    "sentence>\"}\n"
    "In a region, a parameter's entry is a list of values, one value, or {\"min\": lo, \"max\": hi}; "
    "parameters left out keep their whole domain. Name only the variants, parameters and values listed in "
    "the context; anything else is rejected.";

std::string values_text(const std::vector<search::ParamValue>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + search::to_string(v);
  return "[" + out + "]";
}

std::string names_text(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out.empty() ? "none" : out;
}

Json values_json(const std::vector<search::ParamValue>& values) {
  Json out = Json::array();
  for (const auto& v : values) out.push_back(search::to_json(v));
  return out;
}

Json region_json(const std::map<std::string, std::vector<search::ParamValue>>& region) {
  Json out = Json::object();
  for (const auto& [name, values] : region) out[name] = values_json(values);
  return out;
}

std::string short_line(const std::string& text, std::size_t limit) {
  std::string line = text;
  std::replace(line.begin(), line.end(), '\n', ' ');
  std::replace(line.begin(), line.end(), '\r', ' ');
  if (line.size() > limit) line = line.substr(0, limit) + "...";
  return line;
}

// One region entry: a list, one value, or {min, max}; "" or the reason it is not valid.
std::string read_region_entry(const Json& entry, const search::ParameterSpec& parameter,
                              const std::string& variant, std::vector<search::ParamValue>& values) {
  const std::string where = "'" + parameter.name() + "' in variant '" + variant + "'";
  auto add = [&](const Json& item) -> std::string {
    search::ParamValue value;
    try {
      value = search::param_value_from_json(item, parameter.name());
    } catch (const UserError&) {
      return "region: " + item.dump() + " is not a value of " + where + "; its domain is " +
             values_text(parameter.values());
    }
    if (!parameter.position(value))
      return "region: value " + search::to_string(value) + " is not in the domain of " + where + ": " +
             values_text(parameter.values());
    if (std::none_of(values.begin(), values.end(),
                     [&](const auto& v) { return search::same_value(v, value); }))
      values.push_back(value);
    return "";
  };
  if (entry.is_array()) {
    if (entry.empty()) return "region: the list of values of " + where + " is empty";
    for (const auto& item : entry)
      if (auto reason = add(item); !reason.empty()) return reason;
    return "";
  }
  if (entry.is_object()) {
    for (const auto& [key, bound] : entry.items())
      if (key != "min" && key != "max")
        return "region: unknown key '" + key + "' for " + where + "; accepted: a list, a value, {min, max}";
    if (parameter.is_categorical()) return "region: " + where + " is categorical; give a list of values";
    const double lo =
        entry.contains("min") && entry["min"].is_number() ? entry["min"].get<double>() : -INFINITY;
    const double hi =
        entry.contains("max") && entry["max"].is_number() ? entry["max"].get<double>() : INFINITY;
    if ((entry.contains("min") && !entry["min"].is_number()) ||
        (entry.contains("max") && !entry["max"].is_number()))
      return "region: min and max of " + where + " must be numbers";
    for (const auto& v : parameter.values())
      if (search::is_numeric(v) && search::numeric_value(v) >= lo && search::numeric_value(v) <= hi)
        values.push_back(v);
    if (values.empty())
      return "region: no value of " + where + " lies in " + entry.dump() + "; its domain is " +
             values_text(parameter.values());
    return "";
  }
  if (entry.is_primitive() && !entry.is_null()) return add(entry);
  return "region: " + entry.dump() + " for " + where + " is not a list, a value or {min, max}";
}

}  // namespace

ValidatedAction validate_next_action(const std::string& reply, const skills::VariantCatalog& catalog,
                                     const std::vector<skills::Idea>& ideas) {
  ValidatedAction out;
  auto reject = [&](std::string reason) {
    out.reject_reason = std::move(reason);
    return out;
  };
  const ExtractedJson extracted = extract_json_object(reply);
  if (!extracted.object) return reject("malformed reply: " + extracted.error);
  const Json& object = *extracted.object;
  NextAction action;
  if (object.contains("rationale") && object["rationale"].is_string())
    action.rationale = short_line(object["rationale"].get<std::string>(), 300);

  if (object.contains("idea") && !object["idea"].is_null()) {
    if (!object["idea"].is_string()) return reject("'idea' must be the id of a listed idea (a string)");
    const std::string id = object["idea"].get<std::string>();
    for (std::size_t i = 0; i < ideas.size(); ++i)
      if (ideas[i].id == id) {
        action.idea = i;
        out.action = std::move(action);
        return out;
      }
    std::vector<std::string> listed;
    for (const auto& idea : ideas) listed.push_back(idea.id);
    return reject("unknown idea '" + short_line(id, 80) + "'; listed: " + names_text(listed));
  }

  if (!object.contains("variant") || !object["variant"].is_string())
    return reject("the reply names neither an 'idea' nor a 'variant' (a string)");
  const std::string variant_name = object["variant"].get<std::string>();
  const skills::VariantSpace* variant = catalog.find(variant_name);
  if (!variant) {
    std::vector<std::string> accepted;
    for (const auto& v : catalog.variants) accepted.push_back(v.name);
    return reject("unknown variant '" + short_line(variant_name, 80) +
                  "'; accepted: " + names_text(accepted));
  }
  std::map<std::string, std::vector<search::ParamValue>> region;
  if (object.contains("region") && !object["region"].is_null()) {
    if (!object["region"].is_object()) return reject("'region' must be an object {parameter: values}");
    for (const auto& [name, entry] : object["region"].items()) {
      const search::ParameterSpec* parameter = variant->parameter(name);
      if (!parameter) {
        std::vector<std::string> accepted;
        for (const auto& p : variant->parameters) accepted.push_back(p.name());
        return reject("region: unknown parameter '" + short_line(name, 80) + "' of variant '" + variant_name +
                      "'; accepted: " + names_text(accepted));
      }
      std::vector<search::ParamValue> values;
      if (auto reason = read_region_entry(entry, *parameter, variant_name, values); !reason.empty())
        return reject(reason);
      region[name] = std::move(values);
    }
  }
  if (!variant->region(region))
    return reject("the region " + region_json(region).dump() + " of variant '" + variant_name +
                  "' holds no configuration that meets its constraints");

  skills::Idea idea;
  idea.kind = "llm";
  idea.variant = variant_name;
  idea.region = region;
  idea.id = "llm:" + variant_name + (region.empty() ? "" : " " + region_json(region).dump());
  idea.rationale = action.rationale.empty() ? "the LLM's region" : "the LLM: " + action.rationale;
  action.new_idea = std::move(idea);
  out.action = std::move(action);
  return out;
}

std::vector<ChatMessage> next_action_prompt(const orchestrator::Goal& goal,
                                            const skills::VariantCatalog& catalog,
                                            const orchestrator::PolicyState& state, const Json& history) {
  Json context;
  Json goal_json = {{"name", goal.name},
                    {"kernel", catalog.kernel},
                    {"dtype", goal.dtype},
                    {"target", goal.target.kind == "sim" ? goal.target.name : goal.target.kind},
                    {"objective", orchestrator::to_string(goal.objective)}};
  if (!goal.shape.empty()) goal_json["shape"] = goal.shape;
  if (goal.improvement) goal_json["improvement_wanted"] = *goal.improvement;
  if (goal.absolute) goal_json["absolute_target"] = *goal.absolute;
  context["goal"] = goal_json;
  context["progress"] = {{"iteration", state.iteration},
                         {"max_iterations", state.max_iterations},
                         {"evaluations_used", state.evaluations},
                         {"evaluation_budget", state.budget_evaluations},
                         {"improvement_so_far", state.improvement}};
  context["baseline"] = {{"variant", catalog.baseline.variant},
                         {"params", catalog.baseline.params},
                         {"objective_value", state.baseline_value}};
  context["best"] = {
      {"variant", state.best.variant}, {"params", state.best.params}, {"objective_value", state.best_value}};
  Json findings = Json::array();
  for (const auto& f : state.analysis.findings)
    findings.push_back({{"kind", f.kind},
                        {"summary", f.summary},
                        {"suggested_action", f.action},
                        {"roles", f.roles},
                        {"expected_gain", f.expected_gain}});
  context["analysis_of_best"] = {{"bound", state.analysis.bound},
                                 {"headroom_over_roofline", state.analysis.headroom},
                                 {"findings", findings}};
  Json variants = Json::array();
  for (const auto& v : catalog.variants) {
    Json parameters = Json::array();
    for (const auto& p : v.parameters) {
      Json entry = {{"name", p.name()}, {"values", values_json(p.values())}};
      if (auto it = v.roles.find(p.name()); it != v.roles.end() && !it->second.empty())
        entry["role"] = it->second;
      parameters.push_back(entry);
    }
    Json variant = {{"name", v.name},
                    {"description", v.description},
                    {"parameters", parameters},
                    {"constraints", v.constraints},
                    {"valid_configurations", v.space ? v.space->size() : 0}};
    if (!v.constants.empty()) variant["constants"] = v.constants;
    if (auto it = state.measured_counts.find(v.name); it != state.measured_counts.end())
      variant["configurations_measured"] = it->second;
    variants.push_back(variant);
  }
  context["variants"] = variants;
  Json ideas = Json::array();
  for (const auto& idea : state.ideas) {
    Json entry = {
        {"id", idea.id}, {"kind", idea.kind}, {"variant", idea.variant}, {"rationale", idea.rationale}};
    if (!idea.region.empty()) entry["region"] = region_json(idea.region);
    if (!idea.finding.empty()) entry["answers_finding"] = idea.finding;
    ideas.push_back(entry);
  }
  context["ideas"] = ideas;
  context["earlier_iterations"] = history;
  context["settled_ideas"] =
      Json(std::vector<std::string>(state.tried_ideas.begin(), state.tried_ideas.end()));

  return {{"system", kSystemPrompt},
          {"user", "Context (JSON):\n" + context.dump(1) + "\n\nWhich action next? One JSON object."}};
}

LlmPolicy::LlmPolicy(const orchestrator::Goal& goal, const skills::VariantCatalog& catalog,
                     store::Store& store, LlmConfig config)
    : goal_(goal), catalog_(catalog), advisor_(std::move(config), store) {}

skills::SkillResult<orchestrator::PolicyChoice> LlmPolicy::decide(const orchestrator::PolicyState& state) {
  auto out = rules_.decide(state);
  out.decision.proposer = "rules";
  if (!history_.empty() && value_before_last_)
    history_.back()["outcome"] =
        state.best_value < *value_before_last_ ? "improved the best" : "no improvement";
  if (out.result.stop) {
    out.decision.evidence["llm"] = {{"status", "not asked"}, {"reason", "the rules stop the run"}};
    return out;
  }

  const auto messages = next_action_prompt(goal_, catalog_, state, history_);
  const Consultation consultation = advisor_.consult(state.run, messages, state.wall_time_left_s);
  Json llm_evidence = {{"prompt_hash", consultation.prompt_hash}, {"source", to_string(consultation.source)}};
  std::string rejected;
  std::optional<NextAction> action;
  if (consultation.source == Consultation::Source::skipped) {
    rejected = consultation.error;
  } else if (!consultation.answered()) {
    rejected = consultation.error;
    llm_evidence["call"] = advisor_.record(state.run, consultation, false, "");
  } else {
    ValidatedAction validated = validate_next_action(consultation.content, catalog_, state.ideas);
    if (validated.action && validated.action->new_idea &&
        state.tried_ideas.count(validated.action->new_idea->id)) {
      validated.reject_reason =
          "the region " + validated.action->new_idea->id + " was already searched until settled";
      validated.action.reset();
    }
    rejected = validated.reject_reason;
    action = std::move(validated.action);
    llm_evidence["call"] = advisor_.record(state.run, consultation, action.has_value(), rejected);
  }

  std::string tried_variant, tried_idea;
  Json tried_region = Json::object();
  if (!action) {
    llm_evidence["status"] = consultation.source == Consultation::Source::skipped ? "skipped" : "rejected";
    llm_evidence["reason"] = rejected;
    out.decision.evidence["llm"] = llm_evidence;
    out.decision.rationale += "; the LLM's answer was not used (" + rejected + "), so the rules decided";
    const skills::Idea& idea = state.ideas.at(out.result.idea);
    tried_idea = idea.id;
    tried_variant = idea.variant;
    tried_region = region_json(idea.region);
  } else {
    llm_evidence["status"] = "accepted";
    out.decision.evidence["llm"] = llm_evidence;
    out.decision.proposer = advisor_.proposer();
    const std::string why = action->rationale.empty() ? "" : ": " + action->rationale;
    if (action->idea) {
      const skills::Idea& idea = state.ideas.at(*action->idea);
      out.result.idea = *action->idea;
      out.decision.action = std::string(orchestrator::kTryPrefix) + idea.kind;
      out.decision.rationale = "the LLM (" + goal_.llm_config->model + ") chose the listed idea " + idea.id +
                               why + "; budget " + std::to_string(out.result.budget) + " (the rules' share)";
      tried_idea = idea.id;
      tried_variant = idea.variant;
      tried_region = region_json(idea.region);
    } else {
      const skills::Idea& idea = *action->new_idea;
      out.decision.action = std::string(orchestrator::kTryPrefix) + "llm";
      out.decision.inputs["llm_idea"] = {
          {"id", idea.id}, {"variant", idea.variant}, {"region", region_json(idea.region)}};
      out.decision.rationale = "the LLM (" + goal_.llm_config->model + ") proposed variant " + idea.variant +
                               " over the region " + region_json(idea.region).dump() + why + "; budget " +
                               std::to_string(out.result.budget) + " (the rules' share)";
      tried_idea = idea.id;
      tried_variant = idea.variant;
      tried_region = region_json(idea.region);
      out.result.new_idea = idea;
    }
  }
  history_.push_back({{"iteration", state.iteration},
                      {"decided_by", out.decision.proposer},
                      {"idea", tried_idea},
                      {"variant", tried_variant},
                      {"region", tried_region},
                      {"budget", out.result.budget},
                      {"outcome", "pending"}});
  value_before_last_ = state.best_value;
  return out;
}

void propose_kernel_source(orchestrator::Policy& policy, const orchestrator::PolicyState& state,
                           const store::Trial& best, orchestrator::DecisionLog& log, store::Store& store,
                           double worker_timeout_s, const SourceScreen* screen) {
  auto* llm_policy = dynamic_cast<LlmPolicy*>(&policy);
  if (llm_policy == nullptr) return;
  const orchestrator::Goal& goal = llm_policy->goal();
  if (llm_policy->kernel_sources_asked >= goal.llm_config->kernel_sources) return;
  ++llm_policy->kernel_sources_asked;
  if (!orchestrator::target_kind_registry().get(goal.target.kind).runs_kernel_sources ||
      !goal.kernel_source.empty()) {
    skills::SkillDecision skipped;
    skipped.action = "propose_source";
    skipped.rationale =
        "kernel sources are proposed for built-in families on a target that runs them (sim) only";
    if (goal.target.kind == "command")
      skipped.rationale +=
          ": a command target runs its own program, which cannot take a C++ kernel source, so no LLM "
          "source goes to the device";
    skipped.outcome = "skipped";
    log.append(state.iteration, skills::kKernelGenerator, skipped);
    return;
  }
  SourceProposalRequest request;
  request.run = state.run;
  request.goal = &goal;
  request.best = {best.variant, best.params};
  request.best_metrics = best.metrics;
  request.analysis = state.analysis;
  request.worker_timeout_s = worker_timeout_s;
  request.screen = screen;
  request.wall_time_left_s = state.wall_time_left_s;
  const auto started = std::chrono::steady_clock::now();
  SourceProposal proposal = LlmSourceProposer(llm_policy->advisor()).propose(request);
  if (proposal.measurement && proposal.measurement->status == Outcome::ok) {
    if (const auto latency = best.metric("latency_s"); latency && *latency > 0)
      if (const auto mine = proposal.measurement->metrics.find("latency_s");
          mine != proposal.measurement->metrics.end() && mine->is_number())
        proposal.decision.evidence["speedup_over_best"] = *latency / mine->get<double>();
  }
  // The screen's figure beside the device's, as for every device trial of a screened run.
  if (proposal.measurement && proposal.decision.evidence.contains("screen"))
    if (const auto mine = proposal.measurement->metrics.find("latency_s");
        mine != proposal.measurement->metrics.end() && mine->is_number())
      proposal.decision.evidence["screen"]["measured_s"] = *mine;
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  const int64_t seq = log.append(state.iteration, skills::kKernelGenerator, proposal.decision, elapsed_ms);
  if (!proposal.measurement) return;
  store::Trial trial;
  trial.run = state.run;
  trial.iteration = state.iteration;
  trial.decision_seq = seq;
  trial.variant = proposal.kernel_name;
  trial.params = proposal.params;
  trial.config_hash =
      skills::stable_hash("llm-source " + proposal.source_hash + " " + proposal.params.dump());
  trial.cache_key = "llm-source:" + trial.config_hash;  // never served to a built-in candidate
  trial.status = proposal.measurement->status;
  trial.metrics = proposal.measurement->metrics;
  trial.repeats = proposal.measurement->repeats;
  trial.error = proposal.measurement->error;
  trial.verification = proposal.measurement->verification;
  trial.duration_ms = proposal.measurement->duration_ms;
  for (const auto& committed : store.trials(state.run))
    if (committed.config_hash == trial.config_hash) return;
  std::vector<store::Trial> batch = {trial};
  store.commit_trials(batch);
  if (proposal.measurement->profile.is_object())
    store.save_profile({batch.front().id, proposal.measurement->profile, {}, ""});
  if (proposal.status != "accepted")
    log.set_outcome(seq, "rejected; recorded as " + std::string(to_string(trial.status)) + " trial " +
                             std::to_string(batch.front().id));
}

std::unique_ptr<orchestrator::Policy> make_policy(const orchestrator::Goal& goal,
                                                  const skills::VariantCatalog& catalog,
                                                  store::Store& store) {
  if (!goal.llm_config) return std::make_unique<orchestrator::RulePolicy>();
  return std::make_unique<LlmPolicy>(goal, catalog, store, *goal.llm_config);
}

}  // namespace autotune::orchestrator::llm
