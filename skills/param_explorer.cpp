#include "skills/param_explorer.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "skills/capacity.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::skills {

namespace {

std::uint64_t unknown_in_region(const ExplorationRequest& request) {
  if (!request.region) return 0;
  std::uint64_t known = 0;
  for (const auto& observation : request.known)
    if (request.region->contains(observation.configuration)) ++known;
  return request.region->size() - std::min<std::uint64_t>(known, request.region->size());
}

// Probes not measured yet (a probe repeating a known configuration would
// spend an evaluation on a number the run already has).
std::vector<Candidate> fresh_probes(const ExplorationRequest& request) {
  if (!request.variant || !request.variant->space) return request.probes;
  const search::SearchSpace& space = *request.variant->space;
  std::set<std::uint64_t> known;
  for (const auto& observation : request.known)
    if (const auto index = space.index_of(observation.configuration)) known.insert(*index);
  std::vector<Candidate> out;
  for (const auto& probe : request.probes) {
    const auto index = probe.variant == request.variant->name
                           ? space.index_of(search::configuration_from_json(space, probe.params))
                           : std::nullopt;
    if (!index || !known.count(*index)) out.push_back(probe);
  }
  return out;
}

// The capacity prediction of a region search (skills/capacity.hpp): none for
// the handover's flat space, whose configurations name their variant.
CapacityPrediction region_capacity(const ExplorationRequest& request) {
  if (!request.variant || !request.region || request.flat) return {};
  CapacityPrediction out(*request.variant, request.region->parameters());
  out.learn(request.known);
  return out;
}

const SkillRegistration registration(
    kParamExplorer,
    {3,
     "searches an idea's region with the goal's strategy (grid, random, bayes, ...) within a budget, in "
     "batches",
     "replaces or after (the plan: strategy and budget)", ""});

}  // namespace

int region_patience(const search::SearchSpace& region, int batch_size) {
  const int by_batches = 3 * std::max(batch_size, 1);
  const auto by_size = int(std::min<std::uint64_t>((region.size() + 9) / 10, 1u << 20));
  return std::max({by_batches, by_size, 12});
}

SkillResult<ExplorationPlan> ParamExplorer::plan(const ExplorationRequest& request) {
  SkillResult<ExplorationPlan> out;
  ExplorationPlan& plan = out.result;
  const std::uint64_t fresh = unknown_in_region(request);
  const auto probes = fresh_probes(request);
  plan.region_size = request.region ? request.region->size() : 0;
  const int wanted = int(std::min<std::uint64_t>(fresh + probes.size(), std::uint64_t(1) << 30));
  plan.budget = std::min(request.budget, wanted);
  // Screened, the device budget is what enumeration would spend: the region
  // is enumerated only when one round's proposals hold all of it (the screen
  // then orders the whole region); otherwise the strategy proposes.
  const std::uint64_t enumerable_size = request.screening
                                            ? std::uint64_t(std::max(request.screening->propose, 0))
                                            : std::uint64_t(std::max(request.budget, 0));
  // The handover (a flat space) searches with the goal's strategy even when
  // the budget would hold all of it: the strategy proposes every
  // configuration before it is done, as the grid would, but best-first
  // rather than in the grid's order.
  const bool enumerable =
      !request.strategy_chosen && !request.flat && fresh + probes.size() <= enumerable_size;
  plan.strategy = enumerable ? "grid" : request.strategy;

  auto& decision = out.decision;
  decision.action = "search:" + plan.strategy;
  decision.inputs = {{"variant", request.variant->name},
                     {"region_size", plan.region_size},
                     {"region", request.region ? request.region->describe() : "probes only"},
                     {"probes", request.probes.size()},
                     {"known", request.known.size()},
                     {"budget_offered", request.budget},
                     {"batch_size", request.batch_size}};
  std::size_t related_observations = 0;
  Json related_runs = Json::array();
  for (const auto& related : request.related) {
    related_runs.push_back(related.run);
    related_observations += related.observations.size();
  }
  if (!request.related.empty()) decision.inputs["related_runs"] = related_runs;
  decision.evidence = {{"unmeasured_in_region", fresh},
                       {"probes", request.probes.size()},
                       {"probes_measured_before", request.probes.size() - probes.size()},
                       {"budget_offered", request.budget},
                       {"proposing", plan.budget}};
  if (request.flat) {
    decision.inputs["variants"] = request.flat->variants;
    decision.evidence["patience"] = "none: the handover searches until the budget is spent";
  } else if (request.region) {
    decision.evidence["patience"] = region_patience(*request.region, request.batch_size);
  }
  if (!request.related.empty()) decision.evidence["related_observations"] = related_observations;
  // The request's strategy and the grid; one entry when they are the same.
  decision.alternatives =
      Json::array({{{"strategy", request.strategy}, {"chosen", plan.strategy == request.strategy}}});
  if (request.strategy != "grid")
    decision.alternatives.push_back({{"strategy", "grid"}, {"chosen", plan.strategy == "grid"}});
  std::string what;
  if (!request.probes.empty()) what = std::to_string(probes.size()) + " probe(s) not measured yet";
  if (request.region) {
    if (!what.empty()) what += " and ";
    what += std::to_string(fresh) + " unmeasured of the region's " + std::to_string(plan.region_size) +
            " configurations";
  }
  const std::string offered = std::to_string(request.budget);
  if (enumerable)
    decision.rationale = "propose all " + std::to_string(plan.budget) + ": " + what +
                         " fit in the budget of " + offered + ", so enumerate them (grid)";
  else if (request.strategy_chosen)
    decision.rationale = "propose up to " + std::to_string(plan.budget) + " of " + what +
                         ": the idea searches them with " + request.strategy + " " +
                         request.strategy_options.dump();
  else if (request.flat)
    decision.rationale =
        "propose " + std::to_string(plan.budget) + " of " + what +
        (request.flat->variants.size() == 1 ? " of the variant " + request.flat->variants.front()
                                            : " of the variants " + join(request.flat->variants, ", ") +
                                                  " as one space (the variant a parameter)") +
        ": search with " + request.strategy + " until the budget of " + offered + " is spent, told the " +
        std::to_string(request.known.size()) + " measurements of " +
        (request.flat->variants.size() == 1 ? "it" : "them") + " so far";
  else
    decision.rationale = "propose " + std::to_string(plan.budget) + " of " + what +
                         ", more than the budget of " + offered + ": search with " + request.strategy;
  if (request.screening && request.region) {
    const auto& screening = *request.screening;
    decision.inputs["screen"] = {{"keep", screening.keep}, {"propose", screening.propose}};
    decision.rationale += "; screened: each round " + std::to_string(screening.propose) +
                          " proposals are simulated and the best " + std::to_string(screening.keep) +
                          " by the corrected simulated latency go to the device";
  }
  if (!enumerable && !request.related.empty())
    decision.rationale += ", learning from " + std::to_string(related_observations) +
                          " measurements of the variant in earlier run(s) " + related_runs.dump();
  return out;
}

Exploration ParamExplorer::explore(const ExplorationRequest& request, const ExplorationPlan& plan,
                                   const MeasureBatch& measure, const std::function<bool()>& should_stop) {
  Exploration out;
  auto note = [&](const std::vector<Candidate>& batch, const std::vector<search::Observation>& observations) {
    for (std::size_t i = 0; i < batch.size(); ++i) {
      if (!observations[i].ok()) continue;
      if (!out.best_value || *observations[i].value < *out.best_value) {
        out.best_value = observations[i].value;
        out.best = batch[i];
      }
    }
  };

  std::vector<search::Observation> probe_observations;
  const auto fresh = fresh_probes(request);
  // Screened, the probes are not measured first: they join the screen's
  // rounds, ranked with the strategy's proposals, until chosen or settled.
  std::vector<Candidate> pending;
  if (request.screening) {
    pending = fresh;
  } else {
    const std::size_t measured_probes = std::min<std::size_t>(fresh.size(), std::max(plan.budget, 0));
    if (measured_probes > 0) {
      const std::vector<Candidate> probes(fresh.begin(), fresh.begin() + measured_probes);
      const auto observations = measure(probes);
      out.evaluations += int(probes.size());
      note(probes, observations);
      probe_observations = observations;
    }
    if (!request.region) {
      // Probes the budget cut off are measured when the idea comes back.
      out.settled = measured_probes == fresh.size();
      out.stop_reason =
          out.settled ? "probes measured" : "budget of " + std::to_string(plan.budget) + " spent";
      return out;
    }
  }
  auto screened_out = [&](std::size_t proposals) {
    out.settled = true;
    out.stop_reason = "the screen predicts none of the round's " + std::to_string(proposals) +
                      " proposals within its margin of the best";
  };
  if (!request.region) {
    // Screened probes only: rounds of the screen's choice among those left.
    while (!pending.empty()) {
      if (out.evaluations >= plan.budget) {
        out.stop_reason = "budget of " + std::to_string(plan.budget) + " spent";
        return out;
      }
      if (should_stop && should_stop()) {
        out.stop_reason = "stopped by the orchestrator";
        return out;
      }
      const std::size_t k =
          std::size_t(std::min(std::max(request.screening->keep, 1), plan.budget - out.evaluations));
      const auto chosen = request.screening->choose(pending, k);
      if (chosen.empty()) {
        screened_out(pending.size());
        return out;
      }
      std::vector<Candidate> batch;
      std::vector<bool> taken(pending.size(), false);
      for (std::size_t i : chosen) {
        batch.push_back(pending.at(i));
        taken[i] = true;
      }
      const auto observations = measure(batch);
      out.evaluations += int(batch.size());
      note(batch, observations);
      std::vector<Candidate> left;
      for (std::size_t i = 0; i < pending.size(); ++i)
        if (!taken[i]) left.push_back(std::move(pending[i]));
      pending = std::move(left);
    }
    out.settled = true;
    out.stop_reason = "probes measured";
    return out;
  }

  // The request's options are its strategy's; a plan that runs another (the
  // grid enumerating a small region, a plugin's choice) runs it with its defaults.
  const Json options = plan.strategy == request.strategy ? request.strategy_options : Json::object();
  auto strategy = search::make_strategy(plan.strategy, *request.region, request.seed, options);
  std::vector<search::Observation> known;
  for (const auto& o : request.known)
    if (request.region->contains(o.configuration)) known.push_back(o);
  for (const auto& o : probe_observations)
    if (request.region->contains(o.configuration)) known.push_back(o);
  if (!known.empty()) strategy->tell(known);
  std::vector<std::vector<search::Observation>> related_runs;
  for (const auto& related : request.related) {
    related_runs.emplace_back();
    for (const auto& o : related.observations)
      if (request.region->contains(o.configuration)) related_runs.back().push_back(o);
  }
  if (!related_runs.empty()) strategy->learn_from(related_runs);

  // A region that stopped paying: after `patience` evaluations in a row
  // without a better value the rest of the budget is worth more elsewhere.
  // The stretch grows with the region (a model-based strategy spends its
  // first batches on an initial design), so a large region is not written off
  // after a handful of samples.
  const int patience =
      request.flat ? std::numeric_limits<int>::max() : region_patience(*request.region, request.batch_size);
  std::uint64_t unmeasured = unknown_in_region(request);
  CapacityPrediction capacity = region_capacity(request);
  // Earlier measurements count towards the stretch (in the order they were
  // made), so a region continued by a later iteration keeps its history.
  int stale_evaluations = 0;
  std::optional<double> region_best;
  for (const auto& o : known) {
    const bool better = o.ok() && (!region_best || *o.value < *region_best);
    if (better) region_best = o.value;
    stale_evaluations = better ? 0 : stale_evaluations + 1;
  }
  if (!request.carry_patience) stale_evaluations = 0;
  // A pending probe's configuration in the region, when it is one of it.
  auto in_region = [&](const Candidate& probe) -> std::optional<search::Configuration> {
    try {
      if (request.flat) {
        for (std::size_t m = 0; m < request.flat->variants.size(); ++m)
          if (request.flat->variants[m] == probe.variant) {
            // One variant's flat space is its own (FlatSpace has no members then).
            const auto& own =
                request.flat->members.empty() ? request.flat->space : request.flat->members[m].own;
            return request.flat->configuration(probe.variant,
                                               search::configuration_from_json(*own, probe.params));
          }
        return std::nullopt;
      }
      if (probe.variant != request.variant->name) return std::nullopt;
      auto c = search::configuration_from_json(*request.region, probe.params);
      if (request.region->contains(c)) return c;
    } catch (const UserError&) {
    }
    return std::nullopt;
  };
  while (true) {
    if (unmeasured == 0 && pending.empty()) {
      out.stop_reason = "region exhausted";
      out.settled = true;
      break;
    }
    if (stale_evaluations >= patience) {
      out.stop_reason = "no improvement in " + std::to_string(stale_evaluations) + " evaluations";
      out.settled = true;
      break;
    }
    if (out.evaluations >= plan.budget) {
      out.stop_reason = "budget of " + std::to_string(plan.budget) + " spent";
      break;
    }
    if (should_stop && should_stop()) {
      out.stop_reason = "stopped by the orchestrator";
      break;
    }
    if (strategy->done() && pending.empty()) {
      out.stop_reason = "strategy done";
      out.settled = true;
      break;
    }
    const int per_round = request.screening ? request.screening->keep : request.batch_size;
    const std::size_t k = std::size_t(std::min(std::max(per_round, 1), plan.budget - out.evaluations));
    auto configurations =
        strategy->done()
            ? std::vector<search::Configuration>{}
            : strategy->ask(request.screening ? std::max<std::size_t>(request.screening->propose, k) : k);
    if (configurations.empty() && pending.empty()) {
      out.stop_reason = "region exhausted";
      out.settled = true;
      break;
    }
    // A configuration predicted to overflow like one measured is not
    // measured: the strategy is told it failed, and no evaluation is spent.
    std::vector<search::Observation> predicted;
    std::erase_if(configurations, [&](const search::Configuration& c) {
      const auto* failure = capacity.predicts(c);
      if (!failure) return false;
      const std::string like = search::to_json(*request.region, failure->first).dump();
      predicted.push_back(search::Observation::failed(c, "predicted " + failure->second +
                                                             ": needs at least "
                                                             "the memory of " +
                                                             like));
      out.predicted_failures.push_back(
          {{"params", search::to_json(*request.region, c)}, {"rule", failure->second}, {"like", like}});
      return true;
    });
    if (!predicted.empty()) {
      unmeasured -= std::min<std::uint64_t>(unmeasured, predicted.size());
      strategy->tell(predicted);
    }
    if (configurations.empty() && pending.empty()) continue;
    std::vector<Candidate> batch;
    for (const auto& c : configurations)
      batch.push_back(request.flat ? request.flat->candidate(c)
                                   : Candidate{request.variant->name, search::to_json(*request.region, c)});
    // Per measured candidate: its configuration in the region (a probe
    // outside it has none: the strategy is not told of it).
    std::vector<std::optional<search::Configuration>> region_configurations(configurations.begin(),
                                                                            configurations.end());
    if (request.screening) {
      // The pending probes and the strategy's proposals, ranked together:
      // the screen's choice is measured, the strategy's others go back to it
      // unmeasured, the probes' others wait for the next round.
      // A proposal that repeats a pending probe goes back to the strategy.
      std::set<std::string> pending_keys;
      for (const auto& probe : pending) pending_keys.insert(probe.key());
      std::vector<Candidate> proposals = pending;
      std::vector<std::size_t> proposed;  // per proposal after the probes: its index in `configurations`
      std::vector<search::Configuration> released;
      for (std::size_t j = 0; j < batch.size(); ++j) {
        if (pending_keys.count(batch[j].key())) {
          released.push_back(configurations[j]);
          continue;
        }
        proposals.push_back(batch[j]);
        proposed.push_back(j);
      }
      const auto chosen = request.screening->choose(proposals, k);
      std::vector<bool> keep(proposals.size(), false);
      for (std::size_t i : chosen) keep.at(i) = true;
      for (std::size_t i = pending.size(); i < proposals.size(); ++i)
        if (!keep[i]) released.push_back(configurations[proposed[i - pending.size()]]);
      strategy->release(released);
      if (chosen.empty()) {
        screened_out(proposals.size());
        break;
      }
      std::vector<Candidate> kept;
      std::vector<std::optional<search::Configuration>> kept_configurations;
      for (std::size_t i : chosen) {
        kept.push_back(proposals[i]);
        kept_configurations.push_back(i < pending.size() ? in_region(proposals[i])
                                                         : configurations[proposed[i - pending.size()]]);
      }
      std::vector<Candidate> left;
      for (std::size_t i = 0; i < pending.size(); ++i)
        if (!keep[i]) left.push_back(std::move(pending[i]));
      pending = std::move(left);
      batch = std::move(kept);
      region_configurations = std::move(kept_configurations);
    }
    auto observations = measure(batch);
    out.evaluations += int(batch.size());
    note(batch, observations);
    bool better = false;
    std::vector<search::Observation> told;
    for (std::size_t i = 0; i < observations.size(); ++i) {
      if (!region_configurations[i]) continue;
      observations[i].configuration = *region_configurations[i];
      if (observations[i].ok() && (!region_best || *observations[i].value < *region_best)) {
        region_best = observations[i].value;
        better = true;
      }
      told.push_back(observations[i]);
    }
    unmeasured -= std::min<std::uint64_t>(unmeasured, told.size());
    stale_evaluations = better ? 0 : stale_evaluations + int(batch.size());
    capacity.learn(told);
    strategy->tell(told);
  }
  return out;
}

}  // namespace autotune::skills
