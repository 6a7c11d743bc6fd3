#pragma once
// FlatSpace: some variants of a catalog searched as one space, the variant as
// one more, categorical, parameter. The loop's handover searches it when no
// finding proposes anything new (docs/loop.md), and bench_agentic_value's
// plain bayes compares the loop with a search of the whole catalog's.
//
//  - Parameters: the variant (named "variant", or with leading underscores
//    when a variant has a parameter of that name), then every parameter of
//    the variants in the order first met. A parameter's domain is the union of
//    the variants' domains: numeric values sorted, strings (categorical) in
//    the order first met.
//  - Valid configurations: exactly each variant's valid configurations (a
//    recorded space stays its recorded configurations), the parameters a
//    variant does not have pinned at their domain's first value, so no
//    configuration repeats another.
//  - One variant: the flat space is that variant's own space (no variant
//    parameter), shared, not copied.
// Built by enumerating every variant's valid configurations: memory grows with
// their total (flat_size() says it before anything is built).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "search/search_space.hpp"
#include "skills/candidate.hpp"
#include "skills/variant_catalog.hpp"

namespace autotune::skills {

struct FlatSpace {
  std::shared_ptr<const search::SearchSpace> space;
  std::vector<std::string> variants;  // in the catalog's order
  std::string variant_parameter;      // empty with one variant

  // The variant and its parameters of a flat configuration.
  Candidate candidate(const search::Configuration& flat) const;
  // A configuration of `variant` (in its own space's parameter order) in the
  // flat space; nullopt when the variant is not one of the flat space's or the
  // configuration is not valid there.
  std::optional<search::Configuration> configuration(const std::string& variant,
                                                     const search::Configuration& own) const;

  // Per variant (same order as `variants`): its own space, and per own
  // parameter the flat column and the flat position of each own position.
  struct Member {
    std::shared_ptr<const search::SearchSpace> own;
    std::vector<std::size_t> column;
    std::vector<std::vector<std::uint32_t>> position;
  };
  std::vector<Member> members;
  search::Positions pinned;  // where the parameters a variant lacks stay
};

// Valid configurations a flat space of `variants` would hold.
std::uint64_t flat_size(const VariantCatalog& catalog, const std::vector<std::string>& variants);

// `variants` (names of the catalog; at least one, every one known) as one
// flat space.
FlatSpace flatten(const VariantCatalog& catalog, const std::vector<std::string>& variants);

}  // namespace autotune::skills
