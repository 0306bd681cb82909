#include "io/sharing_models.h"

#include "dlsched/policy/sharing_knowledge.h"
#include "io/sharing_tables.h"

namespace dlsched {

Result<SharingModels> LoadSharingModels(const std::string& traces_dir, const Cluster& cluster) {
  SharingModels out;
  Result<SharingMeasurements> measured =
      traces_dir.empty() ? NotFound("no traces folder") : LoadSharingMeasurements(traces_dir, true);
  if (measured.ok()) {
    for (int t = 0; t < cluster.num_gpu_types(); ++t) {
      DS_ASSIGN_OR_RETURN(
          std::unique_ptr<sharing::TableInterferenceModel> model,
          MakeInterferenceModel(*measured,
                                cluster.gpu_type_name(GpuTypeId(static_cast<uint32_t>(t)))));
      out.models.push_back(std::move(model));
    }
    out.catalog = std::move(measured->catalog);
    out.source = "lucid+gavel measurements (" + std::to_string(out.catalog.size()) + " job types)";
    return out;
  }
  if (measured.status().code() != StatusCode::kNotFound) return measured.status();
  out.catalog = BuiltInSharingJobTypes();
  const std::shared_ptr<const sharing::InterferenceModel> model = BuiltInInterferenceModel();
  out.models.assign(static_cast<size_t>(cluster.num_gpu_types()), model);
  out.source = "built-in job types (" + measured.status().message() + ")";
  return out;
}

}  // namespace dlsched
