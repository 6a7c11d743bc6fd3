#pragma once
// Runs a traced kernel functionally on fresh random inputs and checks its
// output against the family's double-precision reference, for the kernel
// tests that need the figures themselves (not just a pass).
#include <cstdint>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"
#include "sim/simulator.hpp"

namespace autotune::kernels::testing {

struct CheckedRun {
  sim::SimResult sim;
  Verification verification;
};

// Simulates `program` functionally on inputs drawn in each input's range and
// rounded to `dtype`, and compares its outputs with `family`'s reference for
// `shape` (its tolerance for the dtype and its minimum cosine similarity).
inline CheckedRun run_checked(const FamilySpec& family, const sim::Program& program,
                              const sim::TargetSpec& target, const Shape& shape, sim::Dtype dtype,
                              std::uint64_t seed = 1) {
  Rng rng(seed);
  sim::HostIo io;
  HostTensors host_inputs;
  for (const TensorSpec& spec : family.inputs) {
    const auto [rows, cols] = spec.dims(shape);
    std::vector<float> values(static_cast<std::size_t>(rows * cols));
    for (float& x : values)
      x = sim::round_to_dtype(static_cast<float>(rng.uniform(spec.low, spec.high)), dtype);
    host_inputs.emplace_back(values.begin(), values.end());
    io.inputs.push_back(std::move(values));
  }
  CheckedRun out;
  out.sim = sim::simulate(program, target, sim::SimOptions{true, false}, &io);
  if (out.sim.valid)
    out.verification = compare_outputs(family.reference(shape, host_inputs), io.outputs,
                                       family.tolerance.at(dtype), family.min_cosine_similarity);
  return out;
}

}  // namespace autotune::kernels::testing
