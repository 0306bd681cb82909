// Fuzz target: policy profiles (io/profile.h): plugin pipelines, and the round-based
// (io/hetero_profile.h) and GPU-sharing (io/sharing_profile.h) kinds the same files may hold.
// Checks that no input crashes or throws, and that a parsed pipeline profile's ProfileToJson
// parses back to a profile with the same text. Accepted profiles are built into policies with
// the in-tree plugins, which check their arguments.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/policy/pipeline.h"
#include "dlsched/policy/registry.h"
#include "io/hetero_profile.h"
#include "io/profile.h"
#include "io/sharing_profile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)dlsched::IsRoundProfileText(text);
  (void)dlsched::IsPipelineProfileText(text);
  (void)dlsched::ProfileDescription(text, "fuzz.json");

  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded() && dlsched::IsRoundProfile(doc)) {
    (void)dlsched::BuildRoundPolicy(doc);
  }
  if (!doc.is_discarded() && dlsched::IsSharingProfile(doc)) {
    (void)dlsched::ParseSharingProfile(doc);
  }

  const dlsched::Result<dlsched::PipelineConfig> profile = dlsched::ParseProfile(text, "fuzz.json");
  if (!profile.ok()) return 0;
  const std::string rendered = dlsched::ProfileToJson(*profile);
  const dlsched::Result<dlsched::PipelineConfig> again =
      dlsched::ParseProfile(rendered, "rendered");
  DS_CHECK(again.ok()) << "ProfileToJson wrote a profile that does not parse: "
                       << again.status().message() << "\n"
                       << rendered;
  DS_CHECK(dlsched::ProfileToJson(*again) == rendered) << "the profile changes when parsed again:\n"
                                                       << rendered << "\n"
                                                       << dlsched::ProfileToJson(*again);
  (void)dlsched::BuildPipeline(*profile, dlsched::InTreeRegistry());
  return 0;
}
