#pragma once
// SearchSpace: the valid configurations of a set of parameters, indexable.
//
// Contract (after KTT's indexable search space):
//  - size() counts the VALID configurations; configuration_at(i) for i in
//    [0, size()) and index_of() are inverse bijections; index order is fixed
//    for a given space definition (deterministic, platform independent).
//  - A space is defined either by constraints (expressions over parameters
//    and named constants) or by an explicit set of allowed configurations
//    (a recorded space, see replay.hpp). Either way it is built without
//    materialising the Cartesian product: parameters are factored into groups
//    tied by a common constraint; each group's valid tuples are enumerated
//    depth-first, a constraint pruning a partial assignment as soon as
//    interval evaluation shows it cannot hold; the index is mixed-radix over
//    the groups.
//  - An infeasible space is a UserError naming the constraints involved.
//  - neighbours(c): configurations differing from c in one parameter: for an
//    ordered parameter the nearest valid value below and above (one step in
//    its domain, skipping values that would violate the constraints), for a
//    categorical parameter every other valid value.
//  - encode(c): features in [0,1] for surrogate models: an ordered parameter
//    by its rank in its domain (rank / (n-1)), a two-valued categorical as one
//    0/1 feature, a larger categorical one-hot; single-valued parameters are
//    dropped.
#include <Eigen/Core>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "search/expression.hpp"
#include "search/parameter.hpp"

namespace autotune::search {

// Values in the space's parameter order.
using Configuration = std::vector<ParamValue>;
// Positions of each value in its parameter's domain.
using Positions = std::vector<std::uint32_t>;

class SearchSpace {
 public:
  // Constraint `constraints[i]` may name parameters and keys of `constants`.
  SearchSpace(std::vector<ParameterSpec> parameters, const std::vector<std::string>& constraints = {},
              const std::map<std::string, double>& constants = {});
  // A recorded space: exactly the listed configurations (as positions; order
  // and duplicates do not matter). Empty is a UserError.
  static SearchSpace from_allowed(std::vector<ParameterSpec> parameters, std::vector<Positions> allowed);
  // The configurations of `allowed` that satisfy every constraint, read as
  // the constructor reads them (a syntax error or an unknown name is its
  // UserError): how a list, which from_allowed takes as it is, is narrowed.
  static std::vector<Positions> satisfying(const std::vector<ParameterSpec>& parameters,
                                           std::vector<Positions> allowed,
                                           const std::vector<std::string>& constraints,
                                           const std::map<std::string, double>& constants = {});

  const std::vector<ParameterSpec>& parameters() const { return parameters_; }
  std::size_t dimension() const { return parameters_.size(); }
  std::optional<std::size_t> parameter_index(const std::string& name) const;
  const std::vector<Expression>& constraints() const { return constraints_; }

  std::uint64_t size() const { return size_; }
  double cartesian_size() const;

  Configuration configuration_at(std::uint64_t index) const;
  std::optional<std::uint64_t> index_of(const Configuration& configuration) const;
  bool contains(const Configuration& configuration) const { return index_of(configuration).has_value(); }

  Positions positions_at(std::uint64_t index) const;
  std::optional<std::uint64_t> index_of_positions(const Positions& positions) const;
  Configuration configuration_of(const Positions& positions) const;
  std::optional<Positions> positions_of(const Configuration& configuration) const;

  Configuration random_valid(Rng& rng) const { return configuration_at(random_index(rng)); }
  std::uint64_t random_index(Rng& rng) const;

  std::vector<Configuration> neighbours(const Configuration& configuration) const;
  std::vector<std::uint64_t> neighbour_indices(std::uint64_t index) const;

  int encoded_dimension() const { return encoded_dimension_; }
  Eigen::VectorXd encode(const Configuration& configuration) const;
  void encode_index(std::uint64_t index, Eigen::Ref<Eigen::VectorXd> out) const;

  std::string describe() const;  // "6 parameters, 5220 valid of 16896"

 private:
  // `constraints` parsed over `parameters` (by slot; a categorical literal as
  // its position) and `constants`.
  static std::vector<Expression> parse_constraints(const std::vector<ParameterSpec>& parameters,
                                                   const std::vector<std::string>& constraints,
                                                   const std::map<std::string, double>& constants);
  SearchSpace() = default;
  struct Group {
    std::vector<std::size_t> parameters;  // ascending
    std::vector<std::uint32_t> tuples;    // count x parameters.size(), lexicographic
    std::uint64_t count = 0;
    std::uint64_t stride = 1;
  };
  void build_groups(const std::vector<std::string>& constraint_texts);
  void enumerate_group(Group& group, const std::vector<std::size_t>& constraint_ids);
  void finish_layout();
  std::optional<std::uint64_t> rank_in_group(const Group& group,
                                             const std::uint32_t* positions_by_parameter) const;

  std::vector<ParameterSpec> parameters_;
  std::vector<Expression> constraints_;
  std::vector<Group> groups_;
  std::vector<std::size_t> group_of_parameter_;
  std::uint64_t size_ = 0;
  int encoded_dimension_ = 0;
  std::vector<int> encoded_offset_;  // per parameter; -1 when dropped
};

// {"name": value, ...}
nlohmann::json to_json(const SearchSpace& space, const Configuration& configuration);
// The reverse; a missing, unknown or out-of-domain parameter is a UserError.
Configuration configuration_from_json(const SearchSpace& space, const nlohmann::json& object);
std::string to_string(const SearchSpace& space, const Configuration& configuration);  // name=value ...

}  // namespace autotune::search
