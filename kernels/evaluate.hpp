#pragma once
// The pipeline every measurement of a kernel variant goes through:
//
//   resolve_params / parse_shape      misuse -> UserError (one line: what was wrong, what is accepted)
//   evaluate(family, variant, ...)    a candidate's fate is data (Evaluation::status), never an exception:
//     1. trace the variant on the full shape and simulate it (timing only when large)
//        -> "invalid" with the simulator's rule and message when it does not fit the target;
//     2. compare the simulated latency with the roofline bound
//        -> "implausible" when faster than physics allows (an evaluator bug, rejected);
//     3. verification: the same variant and parameters on the variant's smaller
//        verification shape, on fresh random inputs drawn from the seed (never
//        zeros), outputs NaN-poisoned by the simulator, compared with the double
//        reference -> "wrong_answer" beyond the dtype's tolerance;
//     4. otherwise "ok".
//
// Thread-safe: evaluate() touches no globals beyond the (immutable once built)
// family registry, so worker threads may call it concurrently.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "kernels/family.hpp"
#include "sim/simulator.hpp"

namespace autotune::kernels {

// Every parameter of `variant`, from `given` (name -> decimal text) or its
// default. UserError on an unknown name or a value outside the domain, naming
// what is accepted.
ParamValues resolve_params(const VariantSpec& variant, const std::map<std::string, std::string>& given);
// The same for integer values.
ParamValues resolve_params(const VariantSpec& variant, const ParamValues& given);

// "M=4096,N=8192,K=8192" (spaces allowed), every shape argument of the
// family; empty text is the family's default shape. UserError when malformed,
// an argument is unknown, repeated or missing, or the family rejects the shape.
Shape parse_shape(const FamilySpec& family, const std::string& text);
// Why `given` is not a whole shape of `kernel`, or "" when it names every
// argument of `shape_args`. A shape is given whole or not at all (then the
// default applies): never completed from the default, so a forgotten
// argument cannot run silently at the default's size. One line, e.g.
// "missing K; the shape arguments of gemm are M, N, K (give all of them, or
// none for the default M=4096,N=8192,K=8192)".
std::string incomplete_shape_reason(const std::string& kernel, const std::vector<std::string>& shape_args,
                                    const Shape& default_shape, const Shape& given);
std::string shape_text(const Shape& shape, const FamilySpec& family);  // "M=4096,N=8192,K=8192"

// Lower bound on the kernel's time on `target`: max(FLOPs / peak, compulsory
// HBM bytes / HBM bandwidth). Peak: the tensor engine's for matmul-class
// families, else the summed element rate of the vector, scalar and GpSimd
// engines (one FLOP per element and cycle).
double roofline_bound_s(const FamilySpec& family, const Shape& shape, sim::Dtype dtype,
                        const sim::TargetSpec& target);

struct Verification {
  bool ran = false;  // false when verification was skipped (not asked for, or the candidate is invalid)
  bool passed = false;
  double max_rel_error = 0;  // max |a - r| / max(|r|, rms(reference))
  double mse = 0;
  double cosine_similarity = 0;
  double tolerance = 0;
  std::string error;  // why it failed, one line
  Shape shape;        // the verification shape
  std::int64_t checked_elements = 0;
};

struct EvaluateOptions {
  bool verify = true;
  std::uint64_t seed = 0;
  bool record_timeline = false;
  // When the verification shape is the full shape and the full shape has at
  // most this many elements over all its tensors, timing and verification
  // share one functional simulation.
  std::int64_t functional_element_limit = 1 << 22;
  // The full shape's program when the caller traced it already (the same
  // family, variant, shape, dtype, parameters and target); else traced here.
  std::shared_ptr<const sim::Program> traced;
};

struct Evaluation {
  Outcome status = Outcome::failed;             // ok | invalid | wrong_answer | implausible
  std::string error;                            // one line when status != ok
  std::string rule;                             // the simulator's rule id when invalid
  sim::SimResult sim;                           // the full-shape simulation
  std::shared_ptr<const sim::Program> program;  // the traced full-shape program (for traces)
  Verification verification;
  double latency_s = 0;
  double roofline_bound_s = 0;
  // What was evaluated.
  std::string family, variant;
  Shape shape;
  sim::Dtype dtype = sim::Dtype::fp32;
  ParamValues params;

  bool ok() const { return status == Outcome::ok; }
};

// The on-chip limits a kernel traced for `target` sees (Kernel::limits()).
KernelLimits kernel_limits(const sim::TargetSpec& target);

// Traces `variant` of `family` for `shape`, `dtype` and `params` (complete, see
// resolve_params) into a program, with the target's on-chip limits.
sim::Program trace_program(const FamilySpec& family, const VariantSpec& variant, const Shape& shape,
                           sim::Dtype dtype, const ParamValues& params, const sim::TargetSpec& target);
// The same with explicit limits (a verification under VariantSpec::verification_limits).
sim::Program trace_program(const FamilySpec& family, const VariantSpec& variant, const Shape& shape,
                           sim::Dtype dtype, const ParamValues& params, const KernelLimits& limits);

// UserError only for misuse (unknown variant, dtype not accepted, bad shape,
// incomplete parameters); every property of the candidate is in the result.
Evaluation evaluate(const FamilySpec& family, const std::string& variant, const Shape& shape,
                    sim::Dtype dtype, const ParamValues& params, const sim::TargetSpec& target,
                    const EvaluateOptions& options = {});

// Runs `variant` once, functionally, on the given inputs (in the family's
// input order, row-major; rounded to `dtype` here) with the target's limits,
// and returns its outputs in the family's output order: what a chain of
// kernels (model/verify.hpp) feeds from one kernel to the next. `error` is
// set (and `outputs` empty) when the program does not fit the target.
struct FunctionalRun {
  std::vector<std::vector<float>> outputs;
  std::string error;
  bool ok() const { return error.empty(); }
};
FunctionalRun run_functional(const FamilySpec& family, const std::string& variant, const Shape& shape,
                             sim::Dtype dtype, const ParamValues& params, const sim::TargetSpec& target,
                             std::vector<std::vector<float>> inputs);

// Compares outputs with the reference: fills max_rel_error, mse,
// cosine_similarity, checked_elements, and passed against `tolerance` (and,
// when above 0, the smallest accepted cosine similarity).
Verification compare_outputs(const HostTensors& reference, const std::vector<std::vector<float>>& outputs,
                             double tolerance, double min_cosine = 0);

}  // namespace autotune::kernels
