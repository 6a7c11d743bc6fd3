#include "core/text.hpp"

#include <algorithm>
#include <vector>

namespace autotune {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

bool looks_like_typo_of(const std::string& written, const std::string& meant) {
  if (written.empty() || meant.empty() || written == meant) return false;
  const std::size_t shorter = std::min(written.size(), meant.size());
  if (shorter >= 4 && (meant.starts_with(written) || written.starts_with(meant))) return true;
  return edit_distance(written, meant) <= std::min<std::size_t>(2, std::max<std::size_t>(1, shorter / 3));
}

}  // namespace autotune
