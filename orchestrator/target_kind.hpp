#pragma once
// The kinds of measurement target a goal can name (`target: {kind: ...}`).
// Each kind registers itself from its own file in orchestrator/targets/ with
// how it reads its part of the goal and how it prepares a run, so adding a
// kind is adding that file (and its skills::MeasurementTarget); the goal
// reader and `autotune targets` list the registry.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <string>

#include "core/config_reader.hpp"
#include "core/registry.hpp"
#include "orchestrator/setup.hpp"
#include "skills/catalog_builder.hpp"

namespace autotune::orchestrator {

struct TargetKind {
  std::string description;  // one line: what it measures
  // Reads the kind's keys of the `target:` mapping (kind is read) into
  // goal.target and finishes the reader, so an unknown key is refused.
  // Relative paths resolve against the goal file's folder.
  std::function<void(ConfigReader& target, Goal& goal)> read;
  // A kind that brings its own space (a recorded cachefile, a command with
  // the goal's own parameters): the goal's `kernel:` then only names it, and
  // defaults to own_space_family.
  bool brings_own_space = false;
  std::string own_space_family;
  // Whether a goal's kernel_source can be measured on it.
  bool runs_kernel_sources = false;
  // Builds the target and the catalog and resolves the goal in place (the
  // contract of prepare_run, setup.hpp).
  std::function<RunSetup(Goal& goal)> prepare;
  // Writes the target into the goal's canonical YAML (goal_yaml); when unset,
  // the `target:` mapping is written as the user wrote it.
  std::function<void(YAML::Emitter& out, const Goal& goal)> write;
};

Registry<TargetKind>& target_kind_registry();

struct TargetKindRegistration : Registration<TargetKind> {
  TargetKindRegistration(const std::string& name, TargetKind kind)
      : Registration(target_kind_registry(), name, std::move(kind)) {}
};

// --- For the kinds' prepare functions (defined in setup.cpp) -----------------

// What the goal asks of a catalog: its domains, constraints, variants, start
// point, roles, shape and dtype, with the goal's key positions for errors.
skills::CatalogRequest catalog_request(const Goal& goal);

// Resolves the goal to the catalog: its start point and variants become the
// catalog's.
void adopt(Goal& goal, const skills::VariantCatalog& catalog);

// A built-in family's catalog for the goal, adopted.
skills::VariantCatalog adopt_family_catalog(Goal& goal, const std::map<std::string, double>& target_constants,
                                            const kernels::FamilySpec& family);

}  // namespace autotune::orchestrator
