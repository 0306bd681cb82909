#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace dlsched::hetero {

// Visits `items` in the order of `less` (a strict total order, so the order is unique), stopping
// when `visit` returns false; only the prefix visited is sorted (the rest is left in an unspecified
// order). Chunks of the smallest items left are brought to the front (nth_element) and sorted,
// each chunk twice the last: a walk that stops after the first few hundred of tens of thousands
// of items sorts only those, and a walk over everything costs O(n log n), as a full sort.
template <typename T, typename Less, typename Visit>
void VisitInOrder(std::vector<T>& items, Less less, Visit visit) {
  size_t chunk = 256;
  for (auto begin = items.begin(); begin != items.end(); chunk *= 2) {
    const auto end = static_cast<size_t>(items.end() - begin) > chunk ? begin + chunk : items.end();
    if (end != items.end()) std::nth_element(begin, end, items.end(), less);
    std::sort(begin, end, less);
    for (; begin != end; ++begin) {
      if (!visit(*begin)) return;
    }
  }
}

}  // namespace dlsched::hetero
