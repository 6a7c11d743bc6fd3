#pragma once
// Joining items into one line of text, for messages and listings.
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>

namespace autotune {

// The items of `range`, each turned into text by `to_text`, with `separator`
// between them: join(names, ", ") gives "a, b, c"; an empty range gives "".
template <class Range, class ToText>
std::string join(const Range& range, const std::string& separator, ToText&& to_text) {
  std::string out;
  bool first = true;
  for (const auto& item : range) {
    if (!first) out += separator;
    first = false;
    out += to_text(item);
  }
  return out;
}

// Items that are text already (strings, string views, C strings), or numbers.
template <class Range>
std::string join(const Range& range, const std::string& separator) {
  return join(range, separator, [](const auto& item) {
    using Item = std::decay_t<decltype(item)>;
    if constexpr (std::is_arithmetic_v<Item>) {
      std::ostringstream text;
      text << item;
      return text.str();
    } else {
      return std::string(item);
    }
  });
}

}  // namespace autotune
