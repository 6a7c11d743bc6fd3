#include "core/secrets.hpp"

#include <algorithm>
#include <cctype>
#include <string_view>

extern char** environ;

namespace autotune {

bool is_secret_variable(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const char* part : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL"})
    if (upper.find(part) != std::string::npos) return true;
  return false;
}

std::string redact_secret_values(std::string text) {
  constexpr std::size_t kShortest = 6;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string_view item(*entry);
    const auto equals = item.find('=');
    if (equals == std::string_view::npos) continue;
    const std::string_view value = item.substr(equals + 1);
    if (value.size() < kShortest || !is_secret_variable(std::string(item.substr(0, equals)))) continue;
    for (auto at = text.find(value); at != std::string::npos; at = text.find(value, at + 10))
      text.replace(at, value.size(), "<redacted>");
  }
  return text;
}

}  // namespace autotune
