#pragma once

#include <memory>
#include <string_view>

#include "dlsched/policy/plugin.h"

namespace dlsched {

// Rejects a job that could never run on this cluster even if it were empty: an unknown GPU
// type, a gang larger than the GPUs of the type it needs, or than the GPUs of one type on nodes
// matching its label selector, or a CPU job no single node states the CPUs and memory for.
// Every shipped profile uses it, so no job waits forever.
class FeasibilityAdmit final : public AdmitPlugin {
 public:
  static constexpr std::string_view kName = "feasibility";
  static Result<std::unique_ptr<Plugin>> Create(const PluginArgs& args);
  std::string_view Name() const override { return kName; }
  Fit Admit(const JobView& job, const SchedulingContext& ctx) const override;

 private:
  static Fit AdmitByType(const JobView& job, const SchedulingContext& ctx);
};

}  // namespace dlsched
