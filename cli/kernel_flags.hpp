#pragma once
// The flags that name one configuration of a built-in kernel family on the
// command line (`profile`, `export --kernel`): --param NAME=VALUE, --dtype,
// and the check of the variant's constraints. Each misuse is one UserError
// line saying what is accepted.
#include <map>
#include <string>
#include <vector>

#include "kernels/family.hpp"
#include "sim/target.hpp"

namespace autotune::cli {

// NAME=VALUE flags as a map; UserError for a malformed or repeated one.
std::map<std::string, std::string> parse_param_flags(const std::vector<std::string>& flags);

// The family's dtype named by `text` (its first when empty).
sim::Dtype resolve_dtype(const kernels::FamilySpec& family, const std::string& text);

// The variant's declared constraints (kernels/family.hpp) over the resolved
// parameters, the target's constants, the shape arguments and dtype_bytes,
// the same names a goal's search space sees. A violated one is misuse: the
// kernel was never meant to run with these values.
void check_constraints(const kernels::VariantSpec& variant, const kernels::ParamValues& params,
                       const sim::TargetSpec& target, const kernels::Shape& shape, sim::Dtype dtype);

}  // namespace autotune::cli
