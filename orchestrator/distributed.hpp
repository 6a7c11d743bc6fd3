#pragma once
// What a run or sweep shares with `autotune worker` processes through the
// store's measurement queue (docs/distributed.md): the goal a worker measures
// its candidates with.
#include "orchestrator/goal.hpp"
#include "orchestrator/setup.hpp"
#include "store/records.hpp"

namespace autotune::orchestrator {

// The run's measurement context: the resolved goal with its file paths made
// absolute (a worker on another host finds them at the same paths, e.g. on
// a shared file system) and the goal file's own path, against which a
// command target's workdir is resolved.
store::MeasurementContext measurement_context(const Goal& goal, int64_t run);

// The goal and setup (target, catalog) a worker measures with, from the
// context a coordinator stored. A UserError names the run when the goal does
// not load here (a path missing on this host, a target this build lacks).
PreparedGoal prepare_from_context(const store::MeasurementContext& context);

}  // namespace autotune::orchestrator
