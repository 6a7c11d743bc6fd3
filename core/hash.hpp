#pragma once
// A stable text hash: the same on every machine and build (unlike
// std::hash), for cache keys, content hashes and prompt hashes that are
// stored or compared across processes.
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace autotune {

// 64-bit FNV-1a of `text`, as 16 lowercase hex digits.
inline std::string stable_hash_hex(std::string_view text) {
  std::uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

}  // namespace autotune
