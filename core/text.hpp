#pragma once
// Joining items into one line of text, for messages and listings.
#include <cstddef>
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

// A number as messages quote it, in the stream's default format: 2.8, 1e+300, inf, nan (not
// std::to_string's 2.800000).
inline std::string number_text(double value) {
  std::ostringstream text;
  text << value;
  return text.str();
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

// Levenshtein distance: how many single-character edits turn a into b.
std::size_t edit_distance(const std::string& a, const std::string& b);

// Whether `written` looks like a misspelling of `meant`, for "did you mean"
// hints: at most two edits apart (a third of the name's length for short
// ones), or one name beginning the other (intermediate, intermediate_size).
bool looks_like_typo_of(const std::string& written, const std::string& meant);

}  // namespace autotune
