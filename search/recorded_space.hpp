#pragma once
// A recorded, brute-forced tuning space (Kernel Tuner cachefile, see
// ../shared/data/tuning/README.md) as the search library replays it: the
// space and every configuration's recorded result, for scoring strategies
// (search-bench). The `replay` measurement target of a run is
// skills::ReplayTarget.
//
//  - The space comes from the file: parameters from `tune_params` (in
//    `tune_params_keys` order, single-valued ones included as constants), and
//    the valid configurations are exactly the cache keys (the restricted
//    space; restrictions themselves are not stored).
//  - evaluate(c) returns the recorded objective (`objective`, default
//    "time"), or a failure for "CompilationFailedConfig"/"RuntimeFailedConfig"
//    (any string in place of the number); a configuration absent from the
//    cache is outside the space: not evaluated, not counted.
//  - A missing or malformed cachefile is one UserError naming the file and
//    what is wrong; so is a record whose objective is missing, or is not a
//    positive time where the objective is read as one.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "search/search_space.hpp"
#include "search/strategy.hpp"

namespace autotune::search {

struct RecordedResult {
  // ok, failed (recorded as failing), or invalid: outside the recorded space.
  Outcome status = Outcome::invalid;
  double value = 0;          // when ok
  std::string failure;       // when failed
  std::vector<double> runs;  // when ok: the record's individual runs ("times"), if it kept them
};

// How a cachefile's records are read.
struct CachefileReading {
  // The recorded field to minimise; "" = the file's `objective`, else "time".
  std::string objective;
  // Every recorded number of it must be a positive time in ms, as a replay's
  // latency must. The field "time" always must; another (a negated score)
  // may otherwise take any sign.
  bool as_time = false;
};

class RecordedSpace {
 public:
  static RecordedSpace load(const std::filesystem::path& cachefile, const CachefileReading& reading = {});
  // The same from the file's text; `cachefile` names it in errors.
  static RecordedSpace parse(const std::string& text, const std::filesystem::path& cachefile,
                             const CachefileReading& reading = {});

  // "<parent-dir>/<file-stem>", e.g. "convolution/RTX_3090".
  const std::string& name() const { return name_; }
  const std::string& kernel_name() const { return kernel_name_; }
  const std::string& device_name() const { return device_name_; }
  const std::string& objective() const { return objective_; }

  // Shared so that a strategy's reference to the space outlives moves of the target.
  const SearchSpace& space() const { return *space_; }
  std::shared_ptr<const SearchSpace> shared_space() const { return space_; }

  RecordedResult evaluate(const Configuration& configuration) const;
  RecordedResult evaluate_index(std::uint64_t index) const;
  // The observation a strategy is told (nothing when outside the space).
  std::optional<Observation> observe(const Configuration& configuration) const;

  // A recording of the same kernel (kernel_name) with the same parameters,
  // in the same order: another device or problem size.
  bool same_kernel_as(const RecordedSpace& other) const;

  // Recorded values of the configurations that did not fail.
  std::vector<double> valid_values() const;
  double optimum() const;

 private:
  std::string name_, kernel_name_, device_name_, objective_;
  std::shared_ptr<const SearchSpace> space_;
  std::vector<double> value_by_index_;  // NaN when failed
  std::vector<std::string> failure_by_index_;
  std::vector<std::vector<double>> runs_by_index_;
};

}  // namespace autotune::search
