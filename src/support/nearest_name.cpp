#include "support/nearest_name.hpp"

#include <algorithm>

namespace zyntax {

size_t edit_distance(const std::string& a, const std::string& b) {
  // Rows i-2, i-1 and i of the table: a swap of neighbours ("gleu" for
  // "gelu", the commonest slip of the fingers) looks two rows back.
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = 3;
  for (const std::string& c : candidates) {
    size_t d = edit_distance(name, c);
    if (d < best_d && d <= std::max<size_t>(1, name.size() / 3)) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

}  // namespace zyntax
