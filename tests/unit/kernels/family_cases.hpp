#pragma once
// One evaluation of a family's variant as the family tests check it: against
// the double reference on fresh random inputs with NaN-poisoned outputs, and
// no faster than the roofline bound.
#include <doctest/doctest.h>

#include <string>

#include "kernels/evaluate.hpp"
#include "sim/target.hpp"

namespace autotune::kernels::testing {

inline const sim::TargetSpec& target(const std::string& name) {
  static const sim::TargetSpec trn1 = sim::load_target("trn1");
  static const sim::TargetSpec trn2 = sim::load_target("trn2");
  return name == "trn1" ? trn1 : trn2;
}

struct Case {
  const char* family;
  const char* variant;
  Shape shape;
  sim::Dtype dtype;
  ParamValues params;  // the rest take their defaults
  const char* target = "trn2";
};

inline Evaluation check(const Case& c, std::uint64_t seed) {
  const FamilySpec& family = family_registry().get(c.family);
  const ParamValues params = resolve_params(family.variant(c.variant), c.params);
  EvaluateOptions options;
  options.seed = seed;
  const Evaluation e = evaluate(family, c.variant, c.shape, c.dtype, params, target(c.target), options);
  INFO(std::string(c.family), "/", std::string(c.variant), " ", shape_text(c.shape, family), " ",
       sim::dtype_name(c.dtype), " on ", std::string(c.target), " -> ", e.status, ": ", e.error);
  for (const auto& [name, value] : params) INFO(name, "=", value);
  REQUIRE(e.status == Outcome::ok);
  CHECK(e.verification.ran);
  CHECK(e.verification.passed);
  CHECK(e.verification.cosine_similarity > 0.999);
  CHECK(e.latency_s >= e.roofline_bound_s);
  return e;
}

}  // namespace autotune::kernels::testing
