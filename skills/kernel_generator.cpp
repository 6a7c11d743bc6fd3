#include "skills/kernel_generator.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include "core/text.hpp"
#include "skills/capacity.hpp"
#include "skills/flat_space.hpp"

namespace autotune::skills {

namespace {

std::optional<search::ParamValue> value_of(const Candidate& candidate, const std::string& name) {
  if (!candidate.params.contains(name)) return std::nullopt;
  return search::param_value_from_json(candidate.params.at(name), name);
}

bool in_domain(const search::ParameterSpec& parameter, const search::ParamValue& value) {
  return parameter.position(value).has_value();
}

// The region fixing every parameter at the best's value except `free`, which
// take the values listed.
std::map<std::string, std::vector<search::ParamValue>> fixed_except(
    const VariantSpace& variant, const Candidate& best,
    const std::map<std::string, std::vector<search::ParamValue>>& free) {
  std::map<std::string, std::vector<search::ParamValue>> region = free;
  for (const auto& parameter : variant.parameters) {
    if (free.count(parameter.name())) continue;
    if (auto v = value_of(best, parameter.name())) region[parameter.name()] = {*v};
  }
  return region;
}

const SkillRegistration registration(
    kKernelGenerator,
    {2, "turns findings into ideas: which structural variant to try and which region of its parameter space",
     "replaces or after", ""});

}  // namespace

Candidate carry_over(const Candidate& best, const VariantSpace& from, const VariantSpace& to) {
  Candidate out{to.name, Json::object()};
  for (const auto& parameter : to.parameters) {
    std::optional<search::ParamValue> chosen;
    if (auto same = value_of(best, parameter.name()); same && in_domain(parameter, *same)) chosen = same;
    const auto role = to.roles.find(parameter.name());
    if (!chosen && role != to.roles.end() && !role->second.empty()) {
      for (const auto& name : from.parameters_with_role(role->second))
        if (auto v = value_of(best, name); v && in_domain(parameter, *v)) {
          chosen = v;
          break;
        }
    }
    out.params[parameter.name()] =
        chosen ? search::to_json(*chosen)
               : to.defaults.value(parameter.name(), search::to_json(parameter.values().front()));
  }
  // Settings that break the variant's constraints fall back to the default;
  // when that breaks them too (a goal's constraint can), to the configuration
  // of the space that changes the fewest parameters, by the fewest steps
  // along their domains among those, the first in index order among equals:
  // a probe is always one the space allows.
  if (to.space && !to.space->contains(search::configuration_from_json(*to.space, out.params))) {
    Candidate fallback{to.name, to.defaults};
    if (to.space->contains(search::configuration_from_json(*to.space, fallback.params))) return fallback;
    const auto& parameters = to.space->parameters();
    const auto wanted = search::configuration_from_json(*to.space, out.params);
    std::vector<std::int64_t> wanted_at;
    for (std::size_t p = 0; p < parameters.size(); ++p)
      wanted_at.push_back(static_cast<std::int64_t>(parameters[p].position(wanted[p]).value_or(0)));
    std::pair<std::size_t, std::int64_t> fewest{parameters.size() + 1, 0};
    std::optional<std::uint64_t> nearest;
    for (std::uint64_t index = 0; index < to.space->size(); ++index) {
      const auto at = to.space->positions_at(index);
      std::pair<std::size_t, std::int64_t> changed{0, 0};
      for (std::size_t p = 0; p < parameters.size(); ++p)
        if (const std::int64_t steps = std::abs(static_cast<std::int64_t>(at[p]) - wanted_at[p]); steps > 0)
          ++changed.first, changed.second += steps;
      if (!nearest || changed < fewest) fewest = changed, nearest = index;
    }
    if (nearest) return {to.name, search::to_json(*to.space, to.space->configuration_at(*nearest))};
  }
  return out;
}

namespace {

using Region = std::map<std::string, std::vector<search::ParamValue>>;

// What the idea makers of one generation share: the request, the best's
// variant, the ideas so far and what was considered and set aside.
struct Generating {
  const GenerationRequest& request;
  const VariantCatalog& catalog;
  const Candidate& best;
  const VariantSpace& current;
  std::vector<Idea> ideas;
  Json considered = Json::array();
  // Roles whose parameters hold on-chip memory that is short (make_room
  // findings): a raise that needs more of it also tries them one step down.
  std::vector<std::string> room_roles;
  std::string room_reason;
  Json handover = nullptr;  // the handover's evidence, when one is proposed

  void consider(Idea idea) {
    for (const auto& other : ideas)
      if (other.id == idea.id) return;  // proposed already, by a stronger finding
    if (request.tried_ideas.count(idea.id)) {
      considered.push_back({{"idea", idea.id}, {"outcome", "already tried"}});
      return;
    }
    ideas.push_back(std::move(idea));
  }
  void set_aside(const Finding& finding, const std::string& outcome) {
    considered.push_back({{"finding", finding.kind}, {"outcome", outcome}});
  }
};

// make_room: noted; the raises pair with it.
void make_room(Generating& g, const Finding& finding) {
  g.set_aside(finding, "each raise also tries " + join(finding.roles, "/") + " one step down");
}

// A structural idea for `finding`: probe the variants not measured yet (only
// those with a parameter of the finding's roles when `with_roles`), the
// best's settings carried over. Nothing when there is none; `names` receives
// the variants probed.
std::optional<Idea> probe_variants(const Generating& g, const Finding& finding, bool with_roles,
                                   std::vector<std::string>& names) {
  Idea idea;
  idea.kind = "structural";
  for (const auto& variant : g.catalog.variants) {
    if (variant.name == g.current.name || g.request.measured_variants.count(variant.name)) continue;
    bool has_role = !with_roles;
    for (const auto& role : finding.roles) has_role = has_role || !variant.parameters_with_role(role).empty();
    if (!has_role) continue;
    idea.probes.push_back(carry_over(g.best, g.current, variant));
    names.push_back(variant.name);
  }
  if (names.empty()) return std::nullopt;
  idea.variant = names.front();
  idea.id = "structural:" + join(names, ",");
  idea.finding = finding.kind;
  idea.expected_gain = finding.expected_gain;
  return idea;
}

// The variant has no parameter of the finding's roles to turn: the variants
// that do have one are the structural answer to it.
void probe_variants_with_roles(Generating& g, const Finding& finding) {
  std::vector<std::string> names;
  auto idea = probe_variants(g, finding, true, names);
  if (!idea) return;
  idea->rationale = finding.kind + ": " + finding.summary + " -> " + g.current.name +
                    " has no parameter of role " + join(finding.roles, "/") +
                    "; probe the variants that have one (" + join(names, ", ") + ")";
  g.consider(std::move(*idea));
}

// raise: upward from the best's value of each parameter playing the
// finding's roles, one step at a time while each step improves (a line
// search: the finding usually holds after a step that helped, so the next
// analysis would ask for the next step anyway); vary: every value (a choice
// of engine or queue has no order to step along).
void raise_or_vary(Generating& g, const Finding& finding) {
  const VariantSpace& current = g.current;
  const bool vary = finding.action == "vary";
  Region free;
  std::vector<std::string> names;
  for (const auto& role : finding.roles)
    for (const auto& name : current.parameters_with_role(role)) {
      const auto* parameter = current.parameter(name);
      const auto now = value_of(g.best, name);
      if (!parameter || !now) continue;
      // The current value and every one above it, walked from the current.
      std::vector<search::ParamValue> upward;
      bool reached = false;
      for (const auto& v : parameter->values()) {
        reached = reached || search::same_value(v, *now);
        if (vary || reached) upward.push_back(v);
      }
      if (upward.size() > 1) {
        free[name] = upward;
        names.push_back(name);
      }
    }
  if (free.empty()) {
    g.set_aside(finding, "no parameter of role " + join(finding.roles, "/") + " can be " +
                             (vary ? "varied" : "raised") + " in variant " + current.name);
    probe_variants_with_roles(g, finding);
    return;
  }
  // Making room: one step down of the memory-holding parameters the raise
  // does not turn itself, so a deeper pipeline or a larger tile that no
  // longer fits can trade against them.
  std::vector<std::string> lowered;
  if (!vary)
    for (const auto& role : g.room_roles)
      for (const auto& name : current.parameters_with_role(role)) {
        const auto* parameter = current.parameter(name);
        const auto now = value_of(g.best, name);
        if (!parameter || !now || free.count(name)) continue;
        const auto position = parameter->position(*now);
        if (!position || *position == 0) continue;
        free[name] = {parameter->values()[*position - 1], *now};
        lowered.push_back(name);
      }
  // Making room pairs a raise with lowering other parameters at once (a
  // deeper pipeline may fit only beside a smaller block): that raise
  // measures the product of one step up and one step down, not a walk.
  if (!lowered.empty())
    for (const auto& name : names) free[name].resize(2);
  Idea idea;
  idea.kind = finding.action;
  idea.variant = current.name;
  idea.region = fixed_except(current, g.best, free);
  // A raise whose first step leaves the variant's valid space (its
  // parameters together hold more than the target has) trades against the
  // memory-holding parameters: that step is probed too, with them stepped
  // down to the largest settings that fit (skills/capacity.hpp).
  std::vector<std::string> traded;
  if (!vary && current.space)
    for (const auto& name : names) {
      const auto& values = free.at(name);
      Candidate stepped = g.best;
      stepped.params[name] = search::to_json(values[1]);
      const auto configuration = search::configuration_from_json(*current.space, stepped.params);
      if (current.space->contains(configuration)) continue;
      const auto ladder = fitting_ladder(current, configuration, name);
      if (ladder.empty()) continue;
      Candidate probe{current.name, search::to_json(*current.space, ladder.front())};
      idea.probes.push_back(probe);
      traded.push_back(probe.text());
    }
  // Choices without an order (which engine, which queue) mostly add up: one
  // value at a time from the best, keeping each parameter's winner, costs the
  // sum of their domains instead of their product.
  if (vary) idea.strategy = "coordinate", idea.strategy_options = {{"passes", 1}};
  // A raise walks each parameter upward one step at a time, the others
  // fixed, and stops where a step does not improve.
  if (!vary && lowered.empty())
    idea.strategy = "coordinate", idea.strategy_options = {{"passes", 1}, {"line", true}};
  // A placement is chosen once per variant: its parameters mostly add up
  // (hence coordinate descent), so a new best that differs elsewhere rarely
  // moves their winners, and a second pass re-measures every losing
  // placement (on trn1 the transposing DMAs are 100x slower, 6 evaluations
  // for nothing). The surroundings searched after the findings revisit them
  // beside the other parameters.
  idea.id = finding.action + ":" + join(names, ",") + (lowered.empty() ? "" : "-" + join(lowered, ",")) +
            "@" + (vary ? current.name : g.best.text());
  idea.finding = finding.kind;
  idea.expected_gain = finding.expected_gain;
  idea.rationale =
      finding.kind + ": " + finding.summary + (vary ? " -> try every value of " : " -> raise ") +
      join(names, ", ") + " (role " + join(finding.roles, "/") +
      (vary              ? "), one at a time from the best's (coordinate descent), the others fixed"
       : lowered.empty() ? ") from the best's values one step at a time while each step improves, "
                           "others fixed"
                         : ") one step from the best's values, others fixed") +
      (lowered.empty()
           ? ""
           : "; making room, also with " + join(lowered, ", ") + " one step down (" + g.room_reason + ")") +
      (traded.empty()
           ? ""
           : "; a first step that does not fit beside the parameters holding on-chip memory (roles "
             "block/pipeline_depth) is probed with them stepped down: " +
                 join(traded, ", "));
  g.consider(std::move(idea));
}

// A structural idea for `finding` that probes again the variants whose every
// measurement failed, at least once for want of on-chip memory: a variant
// that overflowed with the settings carried over from another is not a bad
// variant. Each is probed at the first configuration of its fitting ladder
// (skills/capacity.hpp) from its first overflow that no measured overflow
// predicts to overflow too: the largest settings predicted to fit.
void refit_overflowed(Generating& g, const Finding& finding) {
  Idea idea;
  idea.kind = "structural";
  std::vector<std::string> names, keys, reasons;
  for (const auto& variant : g.catalog.variants) {
    const auto failures = g.request.measured_failures.find(variant.name);
    const auto values = g.request.measured_values.find(variant.name);
    if (failures == g.request.measured_failures.end() || !variant.space ||
        (values != g.request.measured_values.end() && !values->second.empty()))
      continue;
    const search::Observation* first = nullptr;
    for (const auto& o : failures->second)
      if (capacity_rule(o) && o.configuration.size() == variant.parameters.size()) {
        first = &o;
        break;
      }
    if (!first) continue;
    CapacityPrediction capacity(variant, variant.parameters);
    capacity.learn(failures->second);
    std::optional<search::Configuration> rung;
    std::size_t steps = 0;
    for (const auto& c : fitting_ladder(variant, first->configuration)) {
      ++steps;
      const bool measured = std::any_of(failures->second.begin(), failures->second.end(),
                                        [&](const search::Observation& o) { return o.configuration == c; });
      if (!measured && !capacity.predicts(c)) {
        rung = c;
        break;
      }
    }
    const std::string from = search::to_json(*variant.space, first->configuration).dump();
    if (!rung) {
      g.considered.push_back({{"idea", "refit:" + variant.name},
                              {"outcome", "overflowed (" + *capacity_rule(*first) + ") at " + from +
                                              "; no configuration with less held on chip is left that "
                                              "no measured overflow predicts to overflow"}});
      continue;
    }
    Candidate probe{variant.name, search::to_json(*variant.space, *rung)};
    names.push_back(variant.name);
    keys.push_back(probe.key());
    reasons.push_back(variant.name + " (" + *capacity_rule(*first) + " at " + from + ", now " +
                      std::to_string(steps) + " step(s) down)");
    idea.probes.push_back(std::move(probe));
  }
  if (idea.probes.empty()) return;
  idea.variant = names.front();
  idea.id = "refit:" + join(keys, ";");
  idea.finding = finding.kind;
  idea.expected_gain = finding.expected_gain;
  idea.rationale = finding.kind + ": " + finding.summary +
                   " -> probe again the structural variants that overflowed on-chip memory with the "
                   "settings carried over: " +
                   join(reasons, ", ") +
                   "; their parameters that hold memory (roles block/pipeline_depth) stepped down "
                   "together to the largest settings no measured overflow predicts to overflow";
  g.consider(std::move(idea));
}

// structural: probe every variant not measured yet, the best's settings
// carried over; then those that overflowed, with less held on chip.
void structural(Generating& g, const Finding& finding) {
  std::vector<std::string> names;
  auto idea = probe_variants(g, finding, false, names);
  if (!idea) {
    g.set_aside(finding, "every other variant was measured already");
  } else {
    idea->rationale = finding.kind + ": " + finding.summary +
                      " -> probe the structural variants not measured yet (" + join(names, ", ") +
                      ") with the best's settings carried over";
    g.consider(std::move(*idea));
  }
  refit_overflowed(g, finding);
}

// stop: the policy acts on it; no idea.
void no_idea(Generating&, const Finding&) {}

// The idea each finding's action asks for; actions not listed are
// informative (reported, not acted on).
struct ActionIdeas {
  const char* action;
  void (*make)(Generating&, const Finding&);
};
constexpr ActionIdeas kActionIdeas[] = {
    {"make_room", make_room},   {"raise", raise_or_vary}, {"vary", raise_or_vary},
    {"structural", structural}, {"stop", no_idea},
};

// One step around the best along each roled parameter (every parameter
// when the variant declares no roles); `neighbourhood` receives the region.
std::optional<Idea> neighbourhood_idea(const Generating& g, Region& neighbourhood) {
  const VariantSpace& current = g.current;
  bool roles_known = false;
  for (const auto& [name, role] : current.roles) roles_known = roles_known || !role.empty();
  Region free;
  std::vector<std::string> names;
  for (const auto& parameter : current.parameters) {
    const auto role = current.roles.find(parameter.name());
    const auto now = value_of(g.best, parameter.name());
    if (!now || parameter.size() < 2) continue;
    if (role == current.roles.end() || role->second.empty()) {
      if (roles_known) continue;  // roles known: keep the unroled ones fixed
    }
    const auto position = parameter.position(*now);
    if (!position) continue;
    std::vector<search::ParamValue> around;
    if (*position > 0) around.push_back(parameter.values()[*position - 1]);
    around.push_back(*now);
    if (*position + 1 < parameter.size()) around.push_back(parameter.values()[*position + 1]);
    free[parameter.name()] = around;
    names.push_back(parameter.name());
  }
  if (free.empty()) return std::nullopt;
  Idea idea;
  idea.kind = "explore";
  idea.variant = current.name;
  idea.region = fixed_except(current, g.best, free);
  neighbourhood = free;
  idea.id = "neighbourhood:" + g.best.text();
  idea.rationale = "no finding left to act on: search one step around the best along " + join(names, ", ");
  return idea;
}

// A wider search around the best: two steps along every parameter, roled or
// not. Worth more than a whole space when the best's neighbourhood has
// settled, since good configurations cluster around good ones.
std::optional<Idea> wide_idea(const Generating& g, const Region& neighbourhood) {
  const VariantSpace& current = g.current;
  Region free;
  std::vector<std::string> names;
  bool wider = false;
  for (const auto& parameter : current.parameters) {
    const auto now = value_of(g.best, parameter.name());
    if (!now || parameter.size() < 2) continue;
    const auto position = parameter.position(*now);
    if (!position) continue;
    const std::size_t lo = *position >= 2 ? *position - 2 : 0;
    const std::size_t hi = std::min<std::size_t>(parameter.size() - 1, *position + 2);
    std::vector<search::ParamValue> around(parameter.values().begin() + lo,
                                           parameter.values().begin() + hi + 1);
    const auto near = neighbourhood.find(parameter.name());
    wider = wider || near == neighbourhood.end() || near->second.size() < around.size();
    free[parameter.name()] = std::move(around);
    names.push_back(parameter.name());
  }
  std::uint64_t size = 1;
  for (const auto& [name, values] : free) size *= values.size();
  if (free.empty() || !wider || size >= current.space->size()) return std::nullopt;
  Idea idea;
  idea.kind = "explore";
  idea.variant = current.name;
  idea.region = fixed_except(current, g.best, free);
  idea.id = "wide:" + g.best.text();
  idea.rationale = "search two steps around the best along " + join(names, ", ") + " (" +
                   std::to_string(size) + " configurations)";
  return idea;
}

// The variants in the order their whole spaces are searched: the best's,
// then the measured ones, then the rest.
std::vector<const VariantSpace*> space_order(const Generating& g) {
  std::vector<const VariantSpace*> order{&g.current};
  for (const auto& variant : g.catalog.variants)
    if (&variant != &g.current && g.request.measured_variants.count(variant.name)) order.push_back(&variant);
  for (const auto& variant : g.catalog.variants)
    if (&variant != &g.current && !g.request.measured_variants.count(variant.name)) order.push_back(&variant);
  return order;
}

// The whole space of each variant not measured through yet.
std::vector<Idea> space_ideas(Generating& g, const std::vector<const VariantSpace*>& order,
                              bool no_evidence) {
  std::vector<Idea> out;
  for (const VariantSpace* variant : order) {
    const auto measured = g.request.measured_counts.find(variant->name);
    if (measured != g.request.measured_counts.end() && measured->second >= variant->space->size()) {
      g.considered.push_back(
          {{"idea", "space:" + variant->name}, {"outcome", "every configuration measured"}});
      continue;
    }
    Idea idea;
    idea.kind = "explore";
    idea.variant = variant->name;
    idea.id = "space:" + variant->name;
    idea.rationale = std::string(no_evidence ? "no profile evidence points anywhere: " : "") +
                     "search the whole space of " + variant->name + " (" + variant->space->describe() + ")" +
                     (no_evidence ? " with the goal's strategy" : "");
    out.push_back(std::move(idea));
  }
  return out;
}

// Every idea settled and budget is left: it goes to the most promising space
// not exhausted yet, the best's variant first. The id carries the
// measurement count, so the continuation is a new idea each time the space
// grows.
void continue_spaces(Generating& g, const std::vector<const VariantSpace*>& order) {
  for (const VariantSpace* variant : order) {
    const auto measured = g.request.measured_counts.find(variant->name);
    const std::uint64_t count = measured == g.request.measured_counts.end() ? 0 : measured->second;
    if (count >= variant->space->size() || !g.request.tried_ideas.count("space:" + variant->name)) continue;
    Idea idea;
    idea.kind = "explore";
    idea.variant = variant->name;
    idea.id = "space:" + variant->name + "@" + std::to_string(count);
    idea.continuation = true;
    idea.rationale = "every idea settled; the remaining budget goes on searching the space of " +
                     variant->name + (variant == &g.current ? " (the best's variant)" : "") + ", " +
                     std::to_string(count) + " of " + std::to_string(variant->space->size()) +
                     " configurations measured";
    g.consider(std::move(idea));
  }
}

// A ratio of two objective values (minimised, of one sign): how many times
// worse `value` is than `best`; infinite when they cannot be compared.
double times_worse(double value, double best) {
  if (value > 0 && best > 0) return value / best;
  if (value < 0 && best < 0) return best / value;
  return value == best ? 1.0 : std::numeric_limits<double>::infinity();
}

std::string ratio_text(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2fx", ratio);
  return text;
}

// The handover: no finding proposes anything new, so the remaining budget goes
// to the goal's strategy over the variants worth keeping, as one flat space,
// with everything measured of them as its history. Stepping from best to best
// (the neighbourhood searches) lost to a flat search there (docs/loop.md).
//
// A variant is worth keeping unless the run's measurements say it cannot
// catch up: its best is further from the run's best than the parameters were
// seen to move any one variant (the largest ratio of a variant's worst to its
// best successful measurement). A variant without a successful measurement is
// kept: nothing says it is worse. When the kept variants hold more than
// kMaxHandoverSize configurations, the best's variant alone is kept (the flat
// space is built by enumerating them).
constexpr std::uint64_t kMaxHandoverSize = std::uint64_t(1) << 21;

std::optional<Idea> handover_idea(Generating& g, const std::string& why) {
  const auto& values = g.request.measured_values;
  std::optional<double> best;
  double spread = 1.0;
  std::string spread_variant;
  for (const auto& [name, list] : values) {
    if (list.empty()) continue;
    const auto [lo, hi] = std::minmax_element(list.begin(), list.end());
    if (!best || *lo < *best) best = *lo;
    if (const double r = times_worse(*hi, *lo); list.size() >= 2 && r > spread && std::isfinite(r))
      spread = r, spread_variant = name;
  }
  Json kept_json = Json::array(), dropped_json = Json::array();
  std::vector<std::string> kept, dropped_text;
  for (const auto& variant : g.catalog.variants) {
    const auto it = values.find(variant.name);
    const bool measured = it != values.end() && !it->second.empty();
    const double variant_best = measured ? *std::min_element(it->second.begin(), it->second.end()) : 0;
    const double gap = measured && best ? times_worse(variant_best, *best) : 1.0;
    Json entry = {{"variant", variant.name}, {"successes", measured ? it->second.size() : 0}};
    if (measured) entry["best"] = variant_best, entry["times_the_best"] = gap;
    if (!measured || gap <= spread * (1 + 1e-9)) {
      entry["why"] = !measured ? "no successful measurement: nothing says it is worse"
                               : "its best is within the spread the parameters gave";
      kept.push_back(variant.name);
      kept_json.push_back(entry);
    } else {
      entry["why"] = "its best is " + ratio_text(gap) + " the run's best, beyond the " + ratio_text(spread) +
                     " the parameters moved any one variant";
      dropped_text.push_back(variant.name + " (" + ratio_text(gap) + ")");
      dropped_json.push_back(entry);
    }
  }
  if (kept.size() > 1 && flat_size(g.catalog, kept) > kMaxHandoverSize) {
    for (auto& entry : kept_json)
      if (entry["variant"] != g.current.name) {
        entry["why"] = "set aside: the kept variants hold more than " + std::to_string(kMaxHandoverSize) +
                       " configurations, so the best's variant is searched alone";
        dropped_json.push_back(entry);
        dropped_text.push_back(entry["variant"].get<std::string>() + " (space too large to flatten)");
      }
    kept = {g.current.name};
    Json only = Json::array();
    for (const auto& entry : kept_json)
      if (entry["variant"] == g.current.name) only.push_back(entry);
    kept_json = only;
  }
  std::uint64_t size = 0, measured_count = 0, history = 0;
  for (const auto& name : kept) {
    size += g.catalog.variant(name).space->size();
    const auto count = g.request.measured_counts.find(name);
    if (count != g.request.measured_counts.end()) measured_count += count->second;
  }
  history = measured_count;
  if (measured_count >= size) {
    g.considered.push_back({{"idea", "handover:" + join(kept, ",")},
                            {"outcome", "every configuration of the kept variants measured"}});
    return std::nullopt;
  }
  Idea idea;
  idea.kind = "handover";
  idea.variant = g.current.name;
  idea.variants = kept;
  idea.id = "handover:" + join(kept, ",");
  idea.rationale = why + ": hand the remaining budget to the goal's strategy over " +
                   (kept.size() == 1 ? "the variant " + kept.front()
                                     : "the variants " + join(kept, ", ") + " as one space") +
                   " (" + std::to_string(size) + " configurations), with the " + std::to_string(history) +
                   " measured so far as its history" +
                   (dropped_text.empty() ? std::string()
                                         : "; set aside " + join(dropped_text, ", ") +
                                               ": their best is further from the run's best than the " +
                                               ratio_text(spread) + " the parameters moved any one variant");
  g.handover = {{"why", why},
                {"kept_variants", kept},
                {"kept", kept_json},
                {"set_aside", dropped_json},
                {"spread", spread},
                {"spread_variant", spread_variant},
                {"configurations", size},
                {"history", history}};
  return idea;
}

}  // namespace

SkillResult<Generation> KernelGenerator::generate(const GenerationRequest& request) {
  Generating g{request, *request.catalog, request.best, request.catalog->variant(request.best.variant)};
  for (const auto& finding : request.analysis.findings)
    if (finding.action == "make_room") {
      g.room_roles.insert(g.room_roles.end(), finding.roles.begin(), finding.roles.end());
      if (g.room_reason.empty()) g.room_reason = finding.summary;
    }

  // Ideas from the findings, strongest first.
  for (const auto& finding : request.analysis.findings) {
    const auto kind = std::find_if(std::begin(kActionIdeas), std::end(kActionIdeas),
                                   [&](const ActionIdeas& a) { return finding.action == a.action; });
    if (kind != std::end(kActionIdeas))
      kind->make(g, finding);
    else
      g.set_aside(finding, "informative; no action (" + finding.action + ")");
  }
  std::stable_sort(g.ideas.begin(), g.ideas.end(),
                   [](const Idea& a, const Idea& b) { return a.expected_gain > b.expected_gain; });

  // Exploration fallbacks, after every finding-driven idea: the best's
  // neighbourhood and wider surroundings, then whole spaces. Without any
  // evidence (no finding and no bound: the target gave no profile) nothing
  // says the best's surroundings are where to look, and a model-based search
  // of the whole space beats stepping from best to best (docs/loop.md), so
  // the whole spaces come first.
  const bool no_evidence = request.analysis.findings.empty() && request.analysis.bound == "unknown";
  // No finding proposes anything new: the handover comes first, and the
  // explorations below stay as alternatives (and follow it should it exhaust
  // its space).
  if (g.ideas.empty()) {
    std::vector<std::string> findings;
    for (const auto& finding : request.analysis.findings) findings.push_back(finding.kind);
    const std::string why = no_evidence ? "no profile evidence points anywhere (no finding, bound unknown)"
                            : findings.empty() ? "no finding on the best"
                                               : "no finding proposes anything new (" + join(findings, ", ") +
                                                     ": their ideas were tried or have nothing to turn)";
    if (auto idea = handover_idea(g, why)) g.consider(std::move(*idea));
    if (g.ideas.empty()) g.handover = nullptr;  // tried already
  }
  std::vector<Idea> local_ideas;
  Region neighbourhood;
  if (auto idea = neighbourhood_idea(g, neighbourhood)) local_ideas.push_back(std::move(*idea));
  if (auto idea = wide_idea(g, neighbourhood)) local_ideas.push_back(std::move(*idea));
  const auto order = space_order(g);
  std::vector<Idea> global_ideas = space_ideas(g, order, no_evidence);
  for (auto* list :
       no_evidence ? std::array{&global_ideas, &local_ideas} : std::array{&local_ideas, &global_ideas})
    for (auto& idea : *list) g.consider(std::move(idea));
  if (g.ideas.empty()) continue_spaces(g, order);

  SkillResult<Generation> out;
  out.result.ideas = g.ideas;
  auto& decision = out.decision;
  decision.action = g.ideas.empty() ? kNothingLeft : std::string(kProposePrefix) + g.ideas.front().kind;
  decision.inputs = {{"best", request.best.text()}, {"findings", request.analysis.findings.size()}};
  Json proposed = Json::array();
  for (const auto& idea : g.ideas) proposed.push_back(idea);
  decision.evidence = {{"bound", request.analysis.bound}, {"ideas", proposed}};
  if (!g.handover.is_null()) decision.evidence["handover"] = g.handover;
  decision.alternatives = g.considered;
  decision.rationale = g.ideas.empty() ? "every idea was tried" : g.ideas.front().rationale;
  return out;
}

}  // namespace autotune::skills
