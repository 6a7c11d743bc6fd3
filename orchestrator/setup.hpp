#pragma once
// From a goal to what a run needs: the measurement target and the variant
// catalog (each allowed variant with the goal's domains, the family's and the
// goal's constraints, parameter roles, defaults), and the resolved start
// point. Every misuse is a UserError naming file:line:key, raised before
// anything is measured.
#include <memory>

#include "orchestrator/goal.hpp"
#include "skills/measurement_target.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::orchestrator {

struct RunSetup {
  std::unique_ptr<skills::MeasurementTarget> target;
  skills::VariantCatalog catalog;
  std::string simulator_version;
  // Set when the goal's kernel_source does not compile or cannot be loaded:
  // the failure in full (its one-line reason, then the compiler's message).
  // The target then measures every candidate as that failure, so the run
  // records it as its baseline trial and stops with nothing to tune.
  std::string kernel_source_failure;
};

// Resolves `goal` in place (start variant and parameters, variants, roles;
// with a kernel_source, also the family, shape and dtype the source declares)
// and builds the target and the catalog. A kernel source is compiled here.
RunSetup prepare_run(Goal& goal);

// Loads, validates and prepares in one step.
struct PreparedGoal {
  Goal goal;
  RunSetup setup;
};
PreparedGoal load_and_prepare(const std::filesystem::path& path);

}  // namespace autotune::orchestrator
