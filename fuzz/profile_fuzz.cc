// Fuzz target: policy profiles (io/profile.h) of every kind: plugin pipelines, round-based
// (io/hetero_profile.h) and GPU-sharing (io/sharing_profile.h). Checks that no input crashes or
// throws, and that a parsed profile's PolicyProfileToJson parses back to a profile with the same
// text. Accepted profiles are built into policies (BuildPolicy), which check their arguments.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "io/profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const dlsched::Result<dlsched::PolicyProfile> profile =
      dlsched::ParsePolicyProfile(text, "fuzz.json");
  if (!profile.ok()) return 0;
  const std::string rendered = dlsched::PolicyProfileToJson(*profile);
  const dlsched::Result<dlsched::PolicyProfile> again =
      dlsched::ParsePolicyProfile(rendered, "rendered");
  DS_CHECK(again.ok()) << "PolicyProfileToJson wrote a profile that does not parse: "
                       << again.status().message() << "\n"
                       << rendered;
  DS_CHECK(dlsched::PolicyProfileToJson(*again) == rendered)
      << "the profile changes when parsed again:\n"
      << rendered << "\n"
      << dlsched::PolicyProfileToJson(*again);
  (void)dlsched::BuildPolicy(*profile);
  return 0;
}
