#pragma once
// What a run may tune: the variants of one kernel (or one recorded space) and,
// for each, its parameters, constraints and the roles of its parameters.
//
// The catalog is what the Kernel Generator reasons over. It is built once per
// run from the goal and the target (orchestrator/goal.hpp for the simulator,
// the replay target for a recorded space) and is read-only afterwards.
//
// Parameter roles ("tile", "unroll", "pipeline_depth", "block", ...) are how
// the policy acts on findings without knowing parameter names: "DMA-bound with
// no overlap" raises whatever parameter plays the pipeline_depth role.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/search_space.hpp"
#include "skills/candidate.hpp"

namespace autotune::skills {

// The roles the built-in policy knows; a parameter may have none ("").
inline constexpr const char* kRolePipelineDepth = "pipeline_depth";
inline constexpr const char* kRoleTile = "tile";
inline constexpr const char* kRoleUnroll = "unroll";
inline constexpr const char* kRoleBlock = "block";
// Parameters that choose which engine or queue runs part of the work.
inline constexpr const char* kRolePlacement = "placement";

struct VariantSpace {
  std::string name;
  std::string description;
  std::vector<search::ParameterSpec> parameters;  // the goal's domains, in declaration order
  std::vector<std::string> constraints;           // the family's and the goal's
  std::map<std::string, double> constants;        // target and shape constants the constraints name
  std::map<std::string, std::string> roles;       // parameter -> role ("" when none)
  Json defaults = Json::object();                 // parameter -> default value
  // A recorded space (replay): exactly these configurations (positions into
  // `parameters`); empty when the space is defined by constraints.
  std::vector<search::Positions> allowed;
  std::shared_ptr<const search::SearchSpace> space;  // the whole valid space

  // The sub-space where each parameter named in `subsets` takes only the
  // listed values (the others keep their domain). Values outside a
  // parameter's domain are dropped. Empty (no valid configuration) -> nullopt.
  std::optional<search::SearchSpace> region(
      const std::map<std::string, std::vector<search::ParamValue>>& subsets) const;

  // Parameters that play `role`, in declaration order.
  std::vector<std::string> parameters_with_role(const std::string& role) const;
  const search::ParameterSpec* parameter(const std::string& name) const;
};

struct VariantCatalog {
  std::string kernel;  // family name, or the recorded kernel's name
  std::vector<VariantSpace> variants;
  Candidate baseline;  // where the run starts

  const VariantSpace& variant(const std::string& name) const;  // InternalError when unknown
  const VariantSpace* find(const std::string& name) const;
};

// Builds a VariantSpace's `space` from its parameters, constraints, constants
// and allowed list. Infeasible is a UserError naming the constraints.
void build_space(VariantSpace& variant);

// Configurations of `variant` below `from` (parameter -> value), to measure
// when `from` does not fit the target: each ordered parameter one step down
// alone, then all of them one, two, ... steps down together, to their
// lowest values. Categorical parameters keep their value. Only
// configurations in the variant's valid space, without repeats, at most
// `limit`. What fits is for the target to say: these are only where to look,
// since smaller values of sizes, depths and factors need no more memory in
// the kernels this project knows.
std::vector<Json> configurations_below(const VariantSpace& variant, const Json& from, std::size_t limit);

}  // namespace autotune::skills
