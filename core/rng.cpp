#include "core/rng.hpp"

namespace autotune {

std::uint64_t Rng::mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

Rng Rng::fork(std::string_view tag) const {
  std::uint64_t hash = 1469598103934665603ULL;  // FNV-1a over the tag
  for (unsigned char c : tag) hash = (hash ^ c) * 1099511628211ULL;
  return Rng(mix(seed_ ^ mix(hash)));
}

}  // namespace autotune
