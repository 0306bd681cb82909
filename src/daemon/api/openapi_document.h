#pragma once

// docs/api/openapi.yaml, the REST API's contract, embedded at build time
// (cmake/EmbedText.cmake) and served at GET /v1/openapi.yaml.

#include <string_view>

namespace dlsched::daemon {

// The document's bytes, exactly as in the source tree.
std::string_view OpenApiDocument();

}  // namespace dlsched::daemon
