#include "orchestrator/target_kind.hpp"

namespace autotune::orchestrator {

Registry<TargetKind>& target_kind_registry() {
  static Registry<TargetKind> registry("target kind");
  return registry;
}

skills::CatalogRequest catalog_request(const Goal& goal) {
  skills::CatalogRequest request;
  request.domains = goal.space;
  request.constraints = goal.constraints;
  request.variants = goal.variants;
  request.start_variant = goal.start_variant;
  request.start_params = goal.start_params;
  request.roles = goal.roles;
  request.shape = goal.shape;
  request.dtype = goal.dtype;
  request.where = goal.where;
  return request;
}

void adopt(Goal& goal, const skills::VariantCatalog& catalog) {
  goal.start_variant = catalog.baseline.variant;
  goal.start_params = catalog.baseline.params;
  goal.variants.clear();
  for (const auto& v : catalog.variants) goal.variants.push_back(v.name);
}

skills::VariantCatalog adopt_family_catalog(Goal& goal, const std::map<std::string, double>& target_constants,
                                            const kernels::FamilySpec& family) {
  auto catalog = skills::family_catalog(family, catalog_request(goal), target_constants);
  adopt(goal, catalog);
  return catalog;
}

}  // namespace autotune::orchestrator
