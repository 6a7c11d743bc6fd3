#pragma once
// Search spaces written in YAML (inside goal files), read through core's
// ConfigReader so errors name file:line:key:
//
//   space:                      # mapping: parameter name -> domain
//     tile_size: [32, 64, 128]          # explicit ordered list (strings: categorical)
//     unroll_factor: {range: [1, 8], step: 1}
//     pipeline_depth: {pow2: [1, 8]}
//     layout: {categorical: [row, col]}
//   constraints:                # optional list of expressions (expression.hpp)
//     - "tile_size * pipeline_depth * 4 <= sbuf_bytes_per_partition"
//
// Parameter order is the mapping's order in the file.
#include <map>
#include <string>
#include <vector>

#include "core/config_reader.hpp"
#include "search/search_space.hpp"

namespace autotune::search {

// `space_section` is the mapping under `space:`; constraint syntax errors are
// UserErrors naming the constraint text, position and token.
SearchSpace parse_space(ConfigReader& space_section, const std::vector<std::string>& constraints,
                        const std::map<std::string, double>& constants = {});

// Reads keys `space` (required) and `constraints` (optional) of `document`;
// constraint errors are additionally prefixed with file:line.
SearchSpace parse_space_and_constraints(ConfigReader& document,
                                        const std::map<std::string, double>& constants = {});

// A YAML file holding `space:` and `constraints:` only.
SearchSpace load_space_file(const std::string& path, const std::map<std::string, double>& constants = {});

}  // namespace autotune::search
