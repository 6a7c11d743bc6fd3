#pragma once
// On-chip capacity failures, and what the measured ones predict.
//
// A configuration that needs more SBUF or PSUM than the target has fails with
// one of the simulator's capacity rules (docs/simulator.md). A block of tiles
// kept resident and a pipeline's rotating buffers multiply what a kernel holds
// on chip, so a configuration whose parameters of those roles are each at
// least those of one that overflowed, every other parameter equal, needs at
// least as much memory and overflows too. Tile sizes are not among them: a
// smaller tile along the partition dimension can hold more bytes per
// partition. Checked on the exhaustive sweeps of the gemm goals (docs/loop.md).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/strategy.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::skills {

// The capacity rule `observation` failed by ("sbuf_overflow", "psum_overflow"),
// if it failed by one.
std::optional<std::string> capacity_rule(const search::Observation& observation);

// Whether parameters of `role` multiply what a kernel holds on chip (see above).
bool holds_memory(const std::string& role);

class CapacityPrediction {
 public:
  CapacityPrediction() = default;
  // Over `parameters` (a region of `variant`, in its order), with the roles
  // `variant` declares.
  CapacityPrediction(const VariantSpace& variant, const std::vector<search::ParameterSpec>& parameters);
  // Learns the capacity failures among `observations` (configurations over
  // the parameters given above).
  void learn(const std::vector<search::Observation>& observations);
  // The failure `configuration` is predicted to repeat, and the measured one
  // it follows from; nullptr when none is predicted.
  const std::pair<search::Configuration, std::string>* predicts(
      const search::Configuration& configuration) const;

 private:
  bool needs_at_least(const search::Configuration& c, const search::Configuration& failed) const;
  std::vector<bool> grows_;  // per parameter: holds more on chip as it grows
  std::vector<std::pair<search::Configuration, std::string>> failures_;
};

// The configurations of `variant` to measure after `failed` overflowed: its
// parameters of the memory-holding roles one, two, ... steps down together
// (each clamped at its lowest value), every other parameter kept, largest
// first; only those in the variant's valid space, without repeats. Empty when
// the variant has no such parameter above its lowest value. The parameter
// named `kept`, if any, keeps its value (the one a raise steps up).
std::vector<search::Configuration> fitting_ladder(const VariantSpace& variant,
                                                  const search::Configuration& failed,
                                                  const std::string& kept = "");

}  // namespace autotune::skills
