#pragma once
// From a kernel's evaluation on the simulator to the Benchmark Runner's
// Measurement: one mapping for the in-process `sim` target and the kernel
// worker behind the `source` target, so that both record a candidate alike.
#include <string>

#include "sim/target.hpp"
#include "skills/candidate.hpp"

namespace autotune::skills {

// `evaluation` is kernels::external::evaluation_json's form (plus "flops" and
// "compulsory_bytes" when known). Its status ok | invalid | wrong_answer |
// implausible | timeout | failed becomes the trial's status; an implausible
// time (below the roofline bound: an evaluator bug) is a failed trial whose
// reason says so, and an invalid one's reason starts with the rule it broke.
Measurement measurement_from_evaluation(const Json& evaluation, double duration_ms);

// The facts a simulated target gives the Profile Analyzer (peak FLOP/s for
// the dtype, HBM bandwidth, SBUF capacity, launch floor, DMA efficiency).
Json simulated_target_facts(const sim::TargetSpec& target, sim::Dtype dtype);

}  // namespace autotune::skills
