#include "skills/candidate.hpp"

#include <cstdint>
#include <cstdio>

namespace autotune::skills {

std::string Candidate::key() const {
  std::string out = variant + "{";
  bool first = true;
  for (const auto& [name, value] : params.items()) {
    out += (first ? "" : ",") + name + "=" + (value.is_string() ? value.get<std::string>() : value.dump());
    first = false;
  }
  return out + "}";
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
