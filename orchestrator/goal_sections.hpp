#pragma once
// The readers load_goal (goal.hpp) uses for some of a goal's sections, for
// files that embed goal sections (a suite's tasks, docs/suite.md). Errors
// name the reader's file, line and key path as load_goal's do.
#include <string>
#include <vector>

#include "core/config_reader.hpp"
#include "orchestrator/goal.hpp"

namespace autotune::orchestrator {

// One parameter's values as a goal writes them: a list, a single value,
// {range: [lo, hi], step: s}, {pow2: [lo, hi]} or {categorical: [...]}.
std::vector<search::ParamValue> read_space_domain(ConfigReader& space, const std::string& key);
// The `variants:` list; empty (the key absent, or `[]` as a resolved goal
// writes it) means every variant. A name listed twice is a UserError at the key.
std::vector<std::string> read_variants(ConfigReader& reader);
// The `kernel:` section of `top` into goal.family, shape and dtype (the
// target kind, goal.target.kind, decides what it may hold).
void read_kernel_section(ConfigReader& top, Goal& goal);
// A YAML value as JSON, as load_goal keeps start.params and search.options.
Json yaml_value_json(const YAML::Node& node);
// A `search:` section's `strategy` and `options` (each optional: what
// `strategy` and `options` hold stays the default). An unknown strategy, or
// an option it does not accept or holds out of range, is a UserError at the
// key, before any work.
void read_search_strategy(ConfigReader& search, std::string& strategy, Json& options);

}  // namespace autotune::orchestrator
