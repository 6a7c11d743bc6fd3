#include "skills/candidate.hpp"

#include <cstdint>
#include <cstdio>

#include "core/hash.hpp"
#include "core/text.hpp"

namespace autotune::skills {

std::string Candidate::key() const {
  const std::string assignments = join(params.items(), ",", [](const auto& item) {
    const Json& value = item.value();
    return item.key() + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  });
  return variant + "{" + assignments + "}";
}

std::string Candidate::text() const {
  std::vector<std::string> assignments;
  if (params.is_object())
    for (const auto& [name, value] : params.items())
      if (name != "_")
        assignments.push_back(name + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  return assignments.empty() ? variant : variant + "{" + join(assignments, ",") + "}";
}

std::string stable_hash(const std::string& text) { return stable_hash_hex(text); }

}  // namespace autotune::skills
