#pragma once

#include <iosfwd>

namespace dlsched::cli {

// Exit codes of every dlsched command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntimeError = 1;
inline constexpr int kExitUsage = 2;
// Interrupted by SIGINT (128 + 2, as shells report it); what had finished was written.
inline constexpr int kExitInterrupted = 130;

// The whole command line: `dlsched <command> [flags]`. Writes results to `out`, errors and
// progress to `err`; returns the exit code.
int Main(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace dlsched::cli
