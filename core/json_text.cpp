#include "core/json_text.hpp"

#include <string>

namespace autotune {

std::optional<std::size_t> json_too_deep(std::string_view text) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

nlohmann::json parse_json(std::string_view text) {
  if (const auto at = json_too_deep(text))
    throw nlohmann::json::parse_error::create(
        101, *at + 1, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (arrays and objects)",
        static_cast<const nlohmann::json*>(nullptr));
  return nlohmann::json::parse(text);
}

}  // namespace autotune
