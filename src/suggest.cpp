// "Did you mean …?" (kernelformer/suggest.hpp).
#include "kernelformer/suggest.hpp"

#include <algorithm>
#include <limits>

namespace kf {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);  // a transposition
    }
  return d[n][m];
}

std::string suggest_name(std::string_view word, const std::vector<std::string>& candidates) {
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::size_t best = std::numeric_limits<std::size_t>::max(), ties = 0;
  std::string found;
  for (const auto& c : candidates) {
    const std::size_t dist = edit_distance(word, c);
    if (dist < best) {
      best = dist, found = c, ties = 1;
    } else if (dist == best && c != found) {
      ++ties;
    }
  }
  return best <= limit && ties == 1 ? found : std::string();
}

}  // namespace kf
