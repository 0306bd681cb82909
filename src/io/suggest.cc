#include "io/suggest.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace dlsched {

int EditDistanceIgnoringCase(std::string_view a, std::string_view b) {
  const auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  };
  // Optimal string alignment: Levenshtein plus a swap of two neighbours as one edit, the
  // commonest typo ("nmae" for "name").
  const size_t cols = b.size() + 1;
  std::vector<int> d((a.size() + 1) * cols);
  const auto at = [&](size_t i, size_t j) -> int& { return d[i * cols + j]; };
  for (size_t i = 0; i <= a.size(); ++i) at(i, 0) = static_cast<int>(i);
  for (size_t j = 0; j <= b.size(); ++j) at(0, j) = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      at(i, j) = std::min({at(i - 1, j) + 1, at(i, j - 1) + 1,
                           at(i - 1, j - 1) + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1])) {
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
      }
    }
  }
  return at(a.size(), b.size());
}

std::optional<std::string> ClosestName(std::string_view typed,
                                       std::span<const std::string> candidates) {
  if (typed.empty()) return std::nullopt;
  std::optional<std::string> best;
  int best_distance = 0;
  for (const std::string& candidate : candidates) {
    const int distance = EditDistanceIgnoringCase(typed, candidate);
    const int allowed =
        std::max<int>(1, static_cast<int>(std::min(typed.size(), candidate.size()) / 3));
    if (distance > allowed) continue;
    if (!best || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

}  // namespace dlsched
