#pragma once

// The policy's state across daemon restarts (SchedulingPolicy::SaveState: a round-based
// policy's allocation, rounds per job and current round). The daemon keeps it in its store's
// meta row `policy_state`, beside the profile it belongs to, written in the transaction of the
// cycle that changed it; a daemon started with the same profile restores it before its first
// cycle, so it decides as an uninterrupted run would. The start record (event_log.h) logs what
// was restored, and the replay checks that it is what the replayed policy had.

#include <string>
#include <string_view>

#include "daemon/store/store.h"
#include "dlsched/common/status.h"
#include "io/profile.h"

namespace dlsched::daemon {

// The meta row's key.
inline constexpr std::string_view kPolicyStateKey = "policy_state";

// The state stored for `profile` (same PolicyProfileToJson); "" when none is stored or it was
// saved under another profile (a daemon restarted with a different --profile starts its policy
// afresh). A malformed row reads as none. Errors are the store's.
Result<std::string> LoadPolicyState(StateStore& store, const PolicyProfile& profile);

// Writes `state` for `profile`, inside the caller's transaction.
Status SavePolicyState(StateStore& store, const PolicyProfile& profile, std::string_view state);

}  // namespace dlsched::daemon
