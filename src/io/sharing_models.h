#pragma once

// The interference models and job types a sharing knowledge is built from (the simulator's
// SharingWorld and the daemon's live view both use this): Lucid's and Gavel's measurements when
// they can be read, else the built-in job types and fitted model (policy/sharing_knowledge.h).

#include <memory>
#include <string>
#include <vector>

#include "dlsched/common/status.h"
#include "dlsched/model/cluster.h"
#include "dlsched/sharing/interference.h"

namespace dlsched {

struct SharingModels {
  sharing::JobTypeCatalog catalog;
  // Per GPU type of the cluster (index = GpuTypeId).
  std::vector<std::shared_ptr<const sharing::InterferenceModel>> models;
  // "lucid+gavel measurements (N job types)" or "built-in job types (<why not measured>)".
  std::string source;
};

// From <traces_dir>/lucid and <traces_dir>/gavel (sharing_tables.h) when they exist ("" = none);
// the built-in types and model when a file is missing. Fails only when measurements exist but
// are malformed.
Result<SharingModels> LoadSharingModels(const std::string& traces_dir, const Cluster& cluster);

}  // namespace dlsched
