#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

namespace dlsched {

// All scheduler time is integral microseconds: exact, totally ordered and platform independent,
// which the simulator's byte-identical output relies on.
using Duration = std::chrono::duration<int64_t, std::micro>;

// The clock tag behind Timestamp. The simulator's epoch is the first submission of a trace (t=0);
// the daemon's is the Unix epoch.
struct SchedClock {
  using duration = Duration;
  using rep = Duration::rep;
  using period = Duration::period;
  using time_point = std::chrono::time_point<SchedClock, Duration>;
  static constexpr bool is_steady = true;
};
using Timestamp = SchedClock::time_point;

inline constexpr Timestamp kTimeZero{};
inline constexpr Timestamp kTimeNever{Duration::max()};

// The largest |seconds| a parser of outside input passes to Seconds (31,700 years, well
// within Duration's range); larger values are the parser's error to report.
inline constexpr double kMaxInputSeconds = 1e12;

// Converts seconds (possibly fractional) to a Duration, rounding to the nearest microsecond.
// |seconds| must be within Duration's range (about 9.2e12 s).
inline Duration Seconds(double seconds) {
  return Duration(static_cast<int64_t>(std::llround(seconds * 1e6)));
}
inline constexpr Duration Minutes(int64_t m) { return std::chrono::minutes(m); }
inline constexpr Duration Hours(int64_t h) { return std::chrono::hours(h); }

inline double ToSeconds(Duration d) { return static_cast<double>(d.count()) * 1e-6; }
inline double ToSeconds(Timestamp t) { return ToSeconds(t.time_since_epoch()); }
inline Timestamp AtSeconds(double seconds) { return Timestamp(Seconds(seconds)); }

// "12.3s", "35.0m", "1.2h", "3.4d": one decimal in the largest unit that keeps the number small
// (for messages).
std::string HumanDuration(Duration d);

}  // namespace dlsched
