#include "lp/glpk_lock.h"

namespace dlsched::hetero {

std::mutex& GlpkMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace dlsched::hetero
