#pragma once
// What became of a candidate: one type from the kernel's evaluation through
// the measurement targets and the Benchmark Runner to the stored trial.
// A bad candidate is data (an Outcome other than ok, with a reason), never an
// exception.
#include <optional>
#include <ostream>
#include <string_view>

namespace autotune {

enum class Outcome {
  ok,            // measured, and verified where the target can verify
  invalid,       // the configuration does not fit the target (a rule, an SBUF overflow, a bad value)
  wrong_answer,  // ran, but its output differs from the reference beyond the tolerance
  implausible,   // faster than the roofline allows: an evaluator bug; stored as failed, reason kept
  failed,        // crashed, or the target could not measure it
  timeout,       // did not finish within the time allowed
  cached,        // not measured again: a stored trial of the same candidate and target stands for it
};

std::string_view to_string(Outcome outcome);
// The outcome named `name`; nullopt when there is none.
std::optional<Outcome> outcome_named(std::string_view name);
// The names, for errors: "ok, invalid, wrong_answer, ...".
std::string_view outcome_names();
// True for the outcomes whose metrics rank (ok, cached).
bool is_measured(Outcome outcome);

inline std::ostream& operator<<(std::ostream& out, Outcome outcome) { return out << to_string(outcome); }

}  // namespace autotune
