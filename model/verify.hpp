#pragma once
// The model's output checked end to end (docs/model.md): at a short prompt,
// the prefill chain's kernels run functionally in the simulator, each with
// the configuration the forward uses, each one's output feeding the next as
// the model wires them, on seeded random weights (no weights are
// downloaded); a double-precision implementation of the same model, written
// independently of the kernels and their layouts, computes the reference.
// A chain whose output strays beyond the tolerance fails.
#include <cstdint>
#include <string>
#include <vector>

#include "model/forward.hpp"

namespace autotune::model {

struct ChainCheck {
  std::int64_t seq = 0;  // the verification prompt length
  double mse = 0;
  double cosine_similarity = 0;
  double max_rel_error = 0;
  double min_cosine = 0;  // what passes
  bool passed = false;
  std::string error;  // the failing operator or comparison, one line
};

// The shortest prompt the check runs at for a forward at model.seq.
std::int64_t verification_seq(const ModelSpec& model);

// Runs the chain at `model` with its seq replaced by verification_seq(),
// every operator with the configuration `forward` chose for it (same
// operator names; a configuration the short shape rejects is reported).
ChainCheck verify_chain(const ModelSpec& model, const ForwardTiming& forward, const sim::TargetSpec& target,
                        std::uint64_t seed = 0);

// The reference forward in double: `weights` by name per layer (see
// model/verify.cpp), input x [seq, hidden]; returns the final norm's output.
std::vector<double> reference_forward(const ModelSpec& model,
                                      const std::vector<std::map<std::string, std::vector<double>>>& layers,
                                      const std::vector<double>& final_gamma, const std::vector<double>& x);

}  // namespace autotune::model
