#pragma once
// The `source` measurement target: a user's kernel source (a C++ file
// declaring AUTOTUNE_USER_KERNEL, kernels/external/user_kernel.hpp), compiled
// once into a shared object and measured candidate by candidate in a fresh
// `autotune kernel-worker` process each (kernels/external/kernel_source.hpp).
// The worker traces, simulates and verifies exactly as the `sim` target does
// for a built-in variant, so metrics and profile have the same fields (see
// skills/targets/sim_target.hpp). A candidate whose kernel crashes (the
// signal's name), hangs (timeout: its worker is killed) or is rejected is a
// Measurement with that status and reason; the run goes on. A source that
// does not compile or cannot be loaded is a target whose every candidate
// fails with that reason (the compiler's message), so that the failure is a
// trial like any other.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "kernels/external/kernel_source.hpp"
#include "skills/measurement_target.hpp"

namespace autotune::skills {

struct SourceTargetConfig {
  std::filesystem::path source;               // the kernel source file
  std::map<std::string, std::int64_t> shape;  // missing arguments: the kernel's default shape
  std::string dtype;                          // empty: the kernel's first dtype
  std::string target = "trn1";
  std::optional<double> tolerance;  // default: the family's for the dtype
  std::uint64_t verification_seed = 0;
  kernels::external::CompileOptions compile;
  kernels::external::WorkerOptions
      worker;  // worker.timeout_s caps each candidate (and the runner's deadline)
};

class SourceTarget : public MeasurementTarget {
 public:
  // Compiles and describes the kernel now. A source that does not compile or
  // cannot be loaded (no entry point, unverifiable, crashes or hangs while
  // loading) leaves the target unbuilt: built() is false, unusable_reason()
  // says why, and every candidate measures as that failure (status failed,
  // or timeout; the error is kernels::external::failure_report). UserError
  // only for an unknown target.
  explicit SourceTarget(SourceTargetConfig config);
  // The same over a kernel compile_and_describe already returned (for a
  // caller that needs its declaration before choosing the shape and dtype).
  SourceTarget(SourceTargetConfig config, kernels::external::SourceKernel kernel);
  ~SourceTarget() override;

  bool built() const { return kernel_.ok; }
  std::string unusable_reason() const override;

  std::string kind() const override { return "source"; }
  std::string description() const override;
  // The target, shape, dtype, simulator version, tolerance, seed and the
  // compiled source's hash: an edited source never reuses stale trials.
  std::string cache_identity() const override;
  Measurement measure(const Candidate& candidate, const MeasureOptions& options) override;
  Json facts() const override;
  bool has_profiles() const override { return true; }

  // The target's named constants (for constraints), as SimTarget::constants().
  std::map<std::string, double> constants() const;
  const kernels::external::SourceKernel& kernel() const { return kernel_; }
  // The kernel as a family with one variant (named like the kernel) for the
  // variant catalog: the descriptor's parameters, constraints and
  // description; the named family's shape arguments and dtypes (or the
  // kernel's own). Unbuilt: one variant without parameters, named as the
  // source declares it (else after the file).
  const kernels::FamilySpec& family() const { return family_; }

 private:
  struct Impl;
  SourceTargetConfig config_;
  kernels::external::SourceKernel kernel_;
  kernels::FamilySpec family_;
  std::unique_ptr<Impl> impl_;

  void init();
};

// Maps a worker's reply to a Measurement exactly as SimTarget maps an
// evaluation (statuses, metrics, verification, profile).
Measurement measurement_from_worker(const kernels::external::WorkerOutcome& outcome);

}  // namespace autotune::skills
