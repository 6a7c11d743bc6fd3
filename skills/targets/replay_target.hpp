#pragma once
// The `replay` measurement target: a recorded, brute-forced tuning space (a
// Kernel Tuner cachefile). Measuring a candidate looks its result up; a
// configuration recorded as failed (a string such as "CompilationFailedConfig"
// in place of a time) is an invalid trial with that reason. Nothing is
// verified: the recording is the ground truth.
#include <filesystem>
#include <string>

#include "search/recorded_space.hpp"
#include "skills/measurement_target.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::skills {

// The error of a configuration the recording holds as failed, before the
// recorded failure ("recorded as RuntimeFailedConfig"): `export --cachefile`
// writes the failure back as recorded.
inline constexpr const char* kRecordedFailurePrefix = "recorded as ";

class ReplayTarget : public MeasurementTarget {
 public:
  // Reads the cachefile (search::RecordedSpace); a missing or malformed file,
  // or a record whose objective is not a positive time, is a UserError naming
  // it. `objective` is the recorded field to minimise ("" = the file's
  // "objective", else "time"). Its unit is taken as milliseconds (Kernel
  // Tuner's convention for "time") and reported as latency_s.
  ReplayTarget(const std::filesystem::path& cachefile, const std::string& objective);

  std::string kind() const override { return "replay"; }
  std::string description() const override;
  std::string cache_identity() const override;
  Measurement measure(const Candidate& candidate, const MeasureOptions& options) override;

  // The recorded space as the single variant "recorded".
  VariantSpace recorded_space() const;
  // The file's kernel_name (else its stem) and device_name (else "recorded").
  std::string kernel_name() const;
  std::string device_name() const;

 private:
  ReplayTarget(const std::filesystem::path& cachefile, const std::string& text, const std::string& objective);

  std::filesystem::path path_;
  std::string content_hash_;
  search::RecordedSpace recording_;
};

}  // namespace autotune::skills
