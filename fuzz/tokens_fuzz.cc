// Fuzz target: the daemon's tokens file (`serve --tokens`, daemon/api/auth.h) and the
// Authorization header. Checks that no input crashes or throws, and that a parsed table finds
// the token of every `token,user,role` line it accepted.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "daemon/api/auth.h"
#include "dlsched/common/status.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dlsched::daemon::TokenTable;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  (void)dlsched::daemon::BearerToken(text);
  (void)dlsched::daemon::IsLoopbackHost(text);
  const dlsched::Result<TokenTable> table = TokenTable::Parse(text, "fuzz-tokens");
  if (!table.ok()) return 0;
  DS_CHECK(table->size() <= size) << table->size() << " tokens from " << size << " bytes";
  // Every accepted line's first field is a token the table knows (for lines of the plain form;
  // the parser's trimming rules decide the rest).
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    const size_t comma = line.find(',');
    if (line.empty() || line[0] == '#' || comma == std::string_view::npos) continue;
    const std::string_view token = line.substr(0, comma);
    if (token.find_first_of(" \t\r") != std::string_view::npos) continue;
    DS_CHECK(table->Find(token).has_value()) << "accepted line '" << line << "' has no token";
  }
  return 0;
}
