#pragma once
// The configuration a model runs when its family's default does not fit an
// operator's shape on the target (docs/model.md, "Which configuration each
// operator runs").
//
// A default is written for typical shapes; at a larger one its blocks can
// overflow SBUF or PSUM. Rather than dropping to the family's naive
// baseline, the model shrinks the default along the variant's declared
// parameter space: only the parameters whose smaller values hold less on
// chip at once (roles tile, block, unroll, pipeline_depth), each to values
// of its domain at or below the default's, the variant's constraints
// holding. The configurations one step smaller (one parameter one value
// down) are traced and checked against the target; if none fits, those
// closest to fitting (smallest overflow) are shrunk a step further, and so
// on. The first step that has fitting configurations ends the walk: every
// one of them is measured (simulated and verified) and the fastest is taken.
// Nothing here knows a family or a parameter by name.
#include <optional>
#include <string>

#include "kernels/evaluate.hpp"
#include "model/model.hpp"
#include "sim/target.hpp"

namespace autotune::model {

struct FitOptions {
  kernels::EvaluateOptions evaluate;  // how the fitting candidates are measured
  // Configurations kept per step when none fits (those closest to fitting).
  std::size_t beam = 32;
  // Configurations traced at most before giving up.
  std::size_t max_checked = 1000;
};

struct FitResult {
  // The fastest fitting configuration that verified, and its measurement.
  std::optional<kernels::ParamValues> params;
  std::optional<kernels::Evaluation> evaluation;
  int steps = 0;     // single-parameter steps down from the start
  int checked = 0;   // configurations traced and checked against the target
  int measured = 0;  // fitting configurations measured (at `steps`)
  // Why nothing was found (when params is empty), one line.
  std::string why_not;
};

// The fastest configuration of `variant` that fits `shape` on `target`,
// found by shrinking `start` (complete parameters, which do not fit) as
// described above. Thread-safe like kernels::evaluate.
FitResult fit_variant(const kernels::FamilySpec& family, const kernels::VariantSpec& variant,
                      const kernels::Shape& shape, sim::Dtype dtype, const sim::TargetSpec& target,
                      const kernels::ParamValues& start, const FitOptions& options = {});

// "tiles_in_block_m 16->8, pipeline_depth 2->1": the parameters that differ.
std::string changes_text(const kernels::ParamValues& from, const kernels::ParamValues& to);

// The operators of `model`'s prefill chain whose family's baseline does not
// fit `target` at their shape, traced and checked against its limits as a fit
// is (not simulated: cheap enough to run before anything else), one entry per
// kernel with why: "attn_norm, mlp_norm, final_norm (rmsnorm
// rows=128,cols=65536): SBUF overflow: ...". Empty when every baseline fits.
std::vector<std::string> unfit_baselines(const ModelSpec& model, const sim::TargetSpec& target);

// A simulator message without its kernel source location ("gemm.hpp:233: "):
// a model's user reads what overflowed, not where the template allocates it.
std::string without_source_location(const std::string& error);

}  // namespace autotune::model
