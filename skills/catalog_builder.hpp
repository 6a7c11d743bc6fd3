#pragma once
// Building a run's VariantCatalog from what its goal asks and what its target
// offers: a kernel family's variants (the simulator, a kernel source), a
// recorded space (replay), or the goal's own space (a command target).
//
// Each builder checks the request against what is offered and throws a
// UserError located at the goal's key ("file:line: search.space.tile: ...")
// before anything is measured. The catalog's baseline is the resolved start
// point, and its variants are the ones the run may tune, start first.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/config_reader.hpp"
#include "kernels/family.hpp"
#include "search/parameter.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::skills {

// What a goal asks of the catalog, with where each key was written.
struct CatalogRequest {
  // Per parameter, the values the goal allows, in the order written; absent
  // parameters keep what the target offers.
  std::vector<std::pair<std::string, std::vector<search::ParamValue>>> domains;
  std::vector<std::string> constraints;      // added to the variants' own
  std::vector<std::string> variants;         // empty: every variant
  std::string start_variant;                 // empty: the family's baseline
  Json start_params = Json::object();        // over the start variant's defaults
  std::map<std::string, std::string> roles;  // parameter -> role name, over the declared ones
  // The kernel's shape and dtype, which the family's constraints may name.
  std::map<std::string, std::int64_t> shape;
  std::string dtype;
  KeyLocations where;
};

// The family's variants as the goal narrows them, with `target_constants`
// (the target's limits) for the constraints.
VariantCatalog family_catalog(const kernels::FamilySpec& family, const CatalogRequest& request,
                              const std::map<std::string, double>& target_constants);

// A recorded space (one variant), narrowed to the goal's domains and constraints.
VariantCatalog recorded_catalog(const VariantSpace& recorded, const CatalogRequest& request);

// The goal's own space as one variant named `name` (a command target).
VariantCatalog goal_space_catalog(const std::string& name, const CatalogRequest& request);

// One configuration of the family's first variant, for a kernel source that
// did not build: the run measures it (as that failure) as its baseline.
VariantCatalog single_configuration_catalog(const std::string& kernel, const kernels::FamilySpec& family);

}  // namespace autotune::skills
