#pragma once
// The `sim` measurement target: a kernel family's variant traced, simulated
// on a NeuronCore model (trn1, trn2) at the goal's shape, and verified on the
// family's verification shape against the host reference (kernels/evaluate).
// A configuration that does not fit is invalid, a mismatch is a wrong answer,
// a time below the roofline bound is rejected as implausible (failed, with
// the reason logged): all data, never exceptions.
#include <map>
#include <optional>
#include <string>

#include "skills/measurement_target.hpp"

namespace autotune::skills {

struct SimTargetConfig {
  std::string family;
  std::map<std::string, std::int64_t> shape;
  std::string dtype;
  std::string target = "trn1";
  std::optional<double> tolerance;  // default: the family's for the dtype
  std::uint64_t verification_seed = 0;
};

class SimTarget : public MeasurementTarget {
 public:
  // Loads the target spec; an unknown target is a UserError naming the accepted ones.
  explicit SimTarget(SimTargetConfig config);
  ~SimTarget() override;

  std::string kind() const override { return "sim"; }
  std::string description() const override;
  std::string cache_identity() const override;
  Measurement measure(const Candidate& candidate, const MeasureOptions& options) override;
  Json facts() const override;
  bool has_profiles() const override { return true; }

  // The target's named constants (for constraints): SBUF size, PSUM banks, ...
  std::map<std::string, double> constants() const;

 private:
  struct Impl;
  SimTargetConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace autotune::skills
