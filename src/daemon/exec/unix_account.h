#pragma once

// The Unix account a job runs as (docs/security.md). A daemon running as root starts each job
// with its user's account (ProcessExecutor drops to it before the job's program runs); a daemon
// running as any other user runs every job as itself.

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dlsched/common/status.h"

namespace dlsched::daemon {

struct UnixAccount {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (the primary one included)
  std::string name;           // the passwd name, or the uid as text when there is none
  std::string home;           // the passwd home directory; empty when there is none
};

// Looks up `spec`: a user name ("alice", through the passwd database, with its groups), or a
// numeric "uid" or "uid:gid" (no passwd entry needed: the gid defaults to the passwd entry's
// primary group when there is one, else to the uid; the supplementary groups are the passwd
// entry's when there is one and the gid is its primary group, else just the gid). NotFound for
// a name passwd does not know; InvalidArgument for a malformed spec. Thread-safe.
Result<UnixAccount> ResolveUnixAccount(std::string_view spec);

// Whether this process may switch to other accounts (its effective uid is 0).
bool RunningAsRoot();

}  // namespace dlsched::daemon
