#pragma once
// A stored trial as the simulator kernel it measured: family, variant,
// shape, dtype, parameters and target, read from the trial and its run's
// resolved goal. What `export`, `trace` and the report's timelines rebuild a
// trial from.
#include <string>

#include "kernels/family.hpp"
#include "sim/target.hpp"
#include "store/records.hpp"

namespace autotune::report {

struct StoredKernel {
  const kernels::FamilySpec* family = nullptr;
  const kernels::VariantSpec* variant = nullptr;
  kernels::Shape shape;
  sim::Dtype dtype{};
  kernels::ParamValues params;
  std::string target_name;  // the goal's simulated target ("trn1", "trn2", a spec path)
};

// UserError (one line naming the run and trial) when the run did not tune a
// built-in kernel family on a simulated target, or its goal does not parse.
StoredKernel resolve_stored_kernel(const store::Run& run, const store::Trial& trial);

}  // namespace autotune::report
