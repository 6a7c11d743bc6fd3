#pragma once
// How one evaluation is reported, by `autotune profile` and by the kernel
// worker (which runs in another process and sends its report back as JSON).
#include <nlohmann/json.hpp>
#include <string>

#include "kernels/evaluate.hpp"
#include "sim/target.hpp"

namespace autotune::kernels::external {

// The evaluation as `autotune profile --json` prints it: kernel, variant,
// target, shape, dtype, params, status, valid, latency_s, roofline_bound_s,
// simulator_version, summary (the profile summary, NEURONCORE.md names),
// verification, hot_lines (five), error and rule when not ok.
nlohmann::json evaluation_json(const Evaluation& evaluation, const FamilySpec& family,
                               const sim::TargetSpec& target);

// The human-readable report: header, profile text, roofline, verification.
std::string evaluation_text(const Evaluation& evaluation, const FamilySpec& family,
                            const sim::TargetSpec& target);

}  // namespace autotune::kernels::external
