#pragma once

// "Did you mean ...?" for names a user types: GPU types in cluster specs, command-line flags.

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dlsched {

// The edit distance (insertions, deletions, substitutions, swaps of two neighbours) between `a` and
// `b`, comparing letters case-insensitively (ASCII).
int EditDistanceIgnoringCase(std::string_view a, std::string_view b);

// The candidate closest to `typed`, when it is close enough to be a likely typo: at most
// max(1, min(typed.size(), candidate.size()) / 3) edits, case ignored. A candidate equal to
// `typed` but for case always qualifies. Ties go to the earlier candidate. nullopt when none
// qualifies or `typed` is empty.
std::optional<std::string> ClosestName(std::string_view typed,
                                       std::span<const std::string> candidates);

}  // namespace dlsched
