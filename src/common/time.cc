#include "dlsched/common/time.h"

#include <cstdio>

namespace dlsched {

std::string HumanDuration(Duration d) {
  const double s = ToSeconds(d);
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%.1fm", s / 60);
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%.1fh", s / 3600);
  } else {
    std::snprintf(buf, sizeof buf, "%.1fd", s / 86400);
  }
  return buf;
}

}  // namespace dlsched
