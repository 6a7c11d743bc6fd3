// autotune kernels [--json]: the kernel families, generated from the registry:
// shape arguments and default shape, dtypes, variants, their parameters
// (domains and defaults) and constraints.
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/command.hpp"
#include "core/text.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"

namespace autotune::cli {
namespace {

std::string dtypes_text(const kernels::FamilySpec& family) {
  std::vector<std::string> names;
  for (auto d : family.dtypes) names.emplace_back(sim::dtype_name(d));
  return join(names, ", ");
}

nlohmann::json family_json(const kernels::FamilySpec& f) {
  nlohmann::json variants = nlohmann::json::array();
  for (const auto& v : f.variants) {
    nlohmann::json params = nlohmann::json::array();
    for (const auto& p : v.params)
      params.push_back({{"name", p.name},
                        {"description", p.description},
                        {"values", p.values},
                        {"default", p.default_value}});
    variants.push_back({{"name", v.name},
                        {"description", v.description},
                        {"baseline", v.name == f.baseline_variant},
                        {"params", params},
                        {"constraints", v.constraints},
                        {"template", v.template_name},
                        {"header", v.header}});
  }
  std::vector<std::string> dtypes;
  for (auto d : f.dtypes) dtypes.emplace_back(sim::dtype_name(d));
  return {{"name", f.name},
          {"description", f.description},
          {"shape_args", f.shape_args},
          {"default_shape", f.default_shape},
          {"dtypes", dtypes},
          {"baseline_variant", f.baseline_variant},
          {"variants", variants}};
}

void print_family(const kernels::FamilySpec& f) {
  std::printf("%s  %s\n", f.name.c_str(), f.description.c_str());
  std::printf("  shape   %s (default %s)\n", join(f.shape_args, ", ").c_str(),
              kernels::shape_text(f.default_shape, f).c_str());
  std::printf("  dtypes  %s (default %s)\n", dtypes_text(f).c_str(),
              std::string(sim::dtype_name(f.dtypes.front())).c_str());
  for (const auto& v : f.variants) {
    std::printf("  variant %s%s: %s\n", v.name.c_str(), v.name == f.baseline_variant ? " (baseline)" : "",
                v.description.c_str());
    for (const auto& p : v.params) {
      std::printf("    %-17s {%s} default %lld  %s\n", p.name.c_str(), join(p.values, ", ").c_str(),
                  static_cast<long long>(p.default_value), p.description.c_str());
    }
    if (v.params.empty()) std::printf("    (no parameters)\n");
    for (const auto& c : v.constraints) std::printf("    constraint  %s\n", c.c_str());
  }
}

const CommandRegistration registration{
    "kernels", "List the kernel families, their variants and tunable parameters",
    [](CLI::App& app) -> CommandAction {
      auto json = std::make_shared<bool>(false);
      app.add_flag("--json", *json, "Print the list as one JSON object");
      return [json] {
        const auto& registry = kernels::family_registry();
        if (*json) {
          nlohmann::json families = nlohmann::json::array();
          for (const auto& [name, family] : registry.entries()) families.push_back(family_json(family));
          std::cout << nlohmann::json{{"kernels", families}}.dump(2, ' ', false,
                                                                  nlohmann::json::error_handler_t::replace)
                    << "\n";
          return 0;
        }
        bool first = true;
        for (const auto& [name, family] : registry.entries()) {
          if (!first) std::printf("\n");
          first = false;
          print_family(family);
        }
        return 0;
      };
    }};

}  // namespace
}  // namespace autotune::cli
