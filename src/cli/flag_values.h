#pragma once

// Values of command-line flags that CLI11 does not check the way users expect.
//
// The one duration syntax of every dlsched flag that takes a duration (submit --max-run-time,
// --estimate, --deadline's relative form; simulate --checkpoint-s, --restore-s, --stop-at-s,
// --explain-every-s): plain seconds ("90", "1.5"), or numbers with a unit s, m, h or d, several
// in a row ("30m", "2h", "1d", "1h30m", "1.5h").

#include <cstdint>
#include <optional>
#include <string_view>

namespace CLI {
class Validator;
}

namespace dlsched::cli {

// Seconds, or nullopt when `text` is not a duration (empty, negative, another unit, trailing
// junk, not finite).
std::optional<double> ParseDurationSeconds(std::string_view text);

// True when `text` carries a unit ("2h", "1h30m"), false for plain seconds or no duration.
bool HasDurationUnit(std::string_view text);

// A CLI11 transform that rewrites a duration flag's value to plain seconds, so that the option
// can bind a double; a value that is not a duration is a usage error naming the syntax.
CLI::Validator DurationFlag();

// A CLI11 check for a whole number >= `min`. CLI11 reads "-1" into an unsigned option as a huge
// number, so counts and seeds need it: "want an integer >= 0, got '-1'".
CLI::Validator IntegerAtLeast(int64_t min);

}  // namespace dlsched::cli
