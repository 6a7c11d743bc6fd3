#include "skills/candidate.hpp"

#include <cstdint>
#include <cstdio>

#include "core/text.hpp"

namespace autotune::skills {

std::string Candidate::key() const {
  const std::string assignments = join(params.items(), ",", [](const auto& item) {
    const Json& value = item.value();
    return item.key() + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
  });
  return variant + "{" + assignments + "}";
}

std::string stable_hash(const std::string& text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  char buffer[17];
  std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(hash));
  return buffer;
}

}  // namespace autotune::skills
