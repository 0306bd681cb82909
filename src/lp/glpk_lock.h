#pragma once

#include <mutex>

namespace dlsched::hetero {

// The one lock every call into GLPK in this library holds. GLPK keeps per-thread environments
// only when built with thread-local storage; one lock shared by all the allocators keeps them
// safe on any build (policies run on parallel threads in `dlsched simulate`).
std::mutex& GlpkMutex();

}  // namespace dlsched::hetero
