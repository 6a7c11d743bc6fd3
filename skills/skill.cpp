#include "skills/skill.hpp"

#include <algorithm>

namespace autotune::skills {

Registry<SkillInfo>& skill_registry() {
  static Registry<SkillInfo> registry("skill");
  return registry;
}

std::vector<std::string> skills_in_loop_order() {
  std::vector<std::pair<int, std::string>> steps;
  for (const auto& [name, info] : skill_registry().entries()) steps.emplace_back(info.step, name);
  std::sort(steps.begin(), steps.end());
  std::vector<std::string> names;
  for (auto& step : steps) names.push_back(std::move(step.second));
  return names;
}

void to_json(Json& out, const Finding& finding) {
  out = Json{{"kind", finding.kind},         {"summary", finding.summary},
             {"evidence", finding.evidence}, {"action", finding.action},
             {"roles", finding.roles},       {"expected_gain", finding.expected_gain}};
}

void from_json(const Json& in, Finding& finding) {
  finding.kind = in.at("kind").get<std::string>();
  finding.summary = in.value("summary", "");
  finding.evidence = in.value("evidence", Json::object());
  finding.action = in.value("action", "none");
  finding.roles = in.value("roles", std::vector<std::string>{});
  finding.expected_gain = in.value("expected_gain", 0.0);
}

void to_json(Json& out, const Analysis& analysis) {
  out = Json{{"bound", analysis.bound},
             {"findings", analysis.findings},
             {"at_roofline", analysis.at_roofline},
             {"headroom", analysis.headroom}};
}

void from_json(const Json& in, Analysis& analysis) {
  analysis.bound = in.value("bound", "unknown");
  analysis.findings = in.value("findings", std::vector<Finding>{});
  analysis.at_roofline = in.value("at_roofline", false);
  analysis.headroom = in.value("headroom", 0.0);
}

void to_json(Json& out, const Idea& idea) {
  Json region = Json::object();
  for (const auto& [name, values] : idea.region) {
    Json list = Json::array();
    for (const auto& v : values) list.push_back(search::to_json(v));
    region[name] = list;
  }
  Json probes = Json::array();
  for (const auto& p : idea.probes) probes.push_back({{"variant", p.variant}, {"params", p.params}});
  out = Json{{"id", idea.id},
             {"kind", idea.kind},
             {"variant", idea.variant},
             {"region", region},
             {"probes", probes},
             {"finding", idea.finding},
             {"rationale", idea.rationale},
             {"expected_gain", idea.expected_gain}};
  if (idea.continuation) out["continuation"] = true;
  if (!idea.strategy.empty()) out["strategy"] = {{"name", idea.strategy}, {"options", idea.strategy_options}};
  if (!idea.variants.empty()) out["variants"] = idea.variants;
}

}  // namespace autotune::skills
