#pragma once

// What the daemon's executors (ProcessExecutor, SlurmExecutor) share: the small files in which
// they keep a run segment's state in its job directory (pid, slurm_job, exit, stop), the names
// of their stop intents and queued actions, and shell quoting for the scripts they write.

#include <sys/types.h>

#include <string>
#include <string_view>

namespace dlsched::daemon {

// The whole content of `path`; "" if it cannot be read.
std::string ReadSmallFile(const std::string& path);

// Writes `content` to `path` atomically (to `path`.tmp with permission bits `mode`, then renamed
// over `path`); false on any failure. Two writers of the same path at once must be serialized
// by the caller (they share the temporary file).
bool WriteSmallFile(const std::string& path, const std::string& content, mode_t mode = 0644);

// Why an executor stops a run segment, as <job dir>/stop names it. kNodeLost and kNotStarted
// are the Slurm executor's (its node left service; Slurm did not start it in time).
enum class StopIntent { kNone, kPreempt, kKill, kTimeout, kNodeLost, kNotStarted };
// "", "preempt", "kill", "timeout", "node", "start".
std::string_view StopIntentName(StopIntent intent);
// The intent StopIntentName gives `name`; kNone for any other text.
StopIntent ParseStopIntent(std::string_view name);

// JobExecutor::QueuedAction's kinds, by action: launch, preempt, kill.
inline constexpr std::string_view kActionKinds[] = {"launch", "preempt", "kill"};

// `text` as one single-quoted POSIX shell word: every byte but ' as is, ' as '\''.
std::string ShellQuote(std::string_view text);

}  // namespace dlsched::daemon
