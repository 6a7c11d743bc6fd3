#pragma once
// `autotune explain RUN TRIAL`: why a trial was tried, traced back through
// the decision log the loop writes (orchestrator/decision_log.hpp names its
// decisions), what it was compared with and what came of it.
#include <optional>
#include <string>

#include "store/report.hpp"
#include "store/store.hpp"

namespace autotune::orchestrator {

using store::Decision;
using store::Json;
using store::Run;
using store::Trial;

struct Explanation {
  Run run;
  Trial trial;
  std::optional<Decision> proposal;  // the decision whose seq proposed the trial
  // The chain behind the proposal, traced back through the decisions of its
  // iteration: the analysis of the best so far, the generator's ideas, the
  // policy's choice of one idea, and the verdict on that idea afterwards.
  // Each is absent when the run logged no such decision (the baseline, a
  // replayed target without profiles, a plugin that logs differently).
  std::optional<Decision> analysis;    // profile_analyzer: the findings
  std::string analysed;                // the candidate analysed, as the analyzer named it; "" if none did
  std::optional<Decision> generation;  // kernel_generator: the ideas
  std::optional<Decision> choice;      // orchestrator try:*: the idea picked
  std::optional<Decision> verdict;     // orchestrator accept/rollback
  Json idea;                           // the chosen idea as the generator logged it, else null
  Json findings = Json::array();       // the analyzer's findings the idea answers, with their evidence
  // What the loop's noise rule (docs/goals.md, "Noisy measurements") made of
  // the trial, from the orchestrator's decision that judged it: within the
  // noise of the best, measured again (or not, for want of budget), or the
  // measurement again of an earlier trial's candidate. `counts` is false when
  // the loop did not take it as better, whatever its median.
  struct NoiseRuling {
    Decision decision;
    std::string text;
    bool counts = false;
  };
  std::optional<NoiseRuling> noise;
  // A simulated candidate whose traced program is the same as one measured
  // before (verification.same_program_as), or has the same schedule and
  // outputs with buffers placed differently (same_schedule_as), is not
  // simulated again: its measurement and verification are that candidate's.
  // Its key ("tiled{k=2}") and, when a trial of this run measured it, that
  // trial; empty and absent otherwise.
  std::string reused_from;
  bool reused_same_program = false;
  std::optional<Trial> reused_trial;
  std::optional<Trial> baseline;
  // The best measured trial known when this one was proposed: trials proposed
  // by earlier decisions (or, without decision numbers, committed earlier),
  // without those the noise rule did not count.
  std::optional<Trial> best_before;
  std::optional<Trial> best_now;
  std::optional<double> speedup_vs_baseline;     // baseline latency / latency
  std::optional<double> speedup_vs_best_before;  // best-before latency / latency
  bool became_best = false;  // measured, counted by the noise rule and faster than everything known before it
  bool is_run_best = false;                      // it is the run's best trial now
};

// UserError for an unknown run or trial.
Explanation explain(store::Store& store, int64_t run_id, int64_t trial_id);

std::string format_explanation(const Explanation& explanation);
Json explanation_json(const Explanation& explanation);

}  // namespace autotune::orchestrator
