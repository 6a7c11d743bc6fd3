#pragma once
// The `replay` measurement target: a recorded, brute-forced tuning space (a
// Kernel Tuner cachefile). Measuring a candidate looks its result up; a
// configuration recorded as failed (a string such as "CompilationFailedConfig"
// in place of a time) is an invalid trial with that reason. Nothing is
// verified: the recording is the ground truth.
#include <filesystem>
#include <map>
#include <string>

#include "skills/measurement_target.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::skills {

class ReplayTarget : public MeasurementTarget {
 public:
  // Reads the cachefile; a missing or malformed file is a UserError naming it.
  // `objective` is the recorded field to minimise ("" = the file's
  // "objective", else "time"). Its unit is taken as milliseconds (Kernel
  // Tuner's convention for "time") and reported as latency_s.
  ReplayTarget(const std::filesystem::path& cachefile, const std::string& objective);

  std::string kind() const override { return "replay"; }
  std::string description() const override;
  std::string cache_identity() const override;
  Measurement measure(const Candidate& candidate, const MeasureOptions& options) override;

  // The recorded space as the single variant "recorded".
  VariantSpace recorded_space() const;
  const std::string& kernel_name() const { return kernel_name_; }
  const std::string& device_name() const { return device_name_; }

 private:
  std::filesystem::path path_;
  std::string objective_;
  std::string kernel_name_, device_name_;
  std::string content_hash_;
  std::vector<std::string> keys_;
  std::map<std::string, std::vector<search::ParamValue>> domains_;
  std::map<std::string, Json> entries_;  // canonical params dump -> recorded entry
};

}  // namespace autotune::skills
