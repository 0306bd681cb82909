#pragma once

// What the workload readers add to the CSV reader (io/csv_reader.h): the trace-file read with
// its messages and the traces' date-time layout. Internal to src/sim.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/common/text.h"
#include "io/csv_reader.h"

namespace dlsched::sim::workload_internal {

// Reads the whole trace file at `path` (ReadFileText). NotFound when it cannot be opened (or is a
// directory), IoError when reading fails or it is larger than kMaxWholeFileBytes.
Result<std::string> ReadTraceFile(const std::string& path);

// Parses "YYYY-MM-DD HH:MM:SS" (exactly that layout; 'T' also accepted as the separator) as
// UTC and returns seconds since the Unix epoch. Checks field ranges, including the day against
// the month's length in that year. No time zones, no fractional seconds.
std::optional<int64_t> ParseUtcDateTime(std::string_view text);

}  // namespace dlsched::sim::workload_internal
