#pragma once

// Text from the server (other users' job names, reasons, labels) on its way to a terminal.

#include <string>
#include <string_view>

namespace dlsched::cli {

// `text` with every control character made visible, so that a job name cannot move the cursor,
// recolour or retitle the terminal of whoever lists the queue: ASCII controls (tab and newline
// included) and DEL as \xNN ("\x1b"), the C1 controls U+0080..U+009F (UTF-8 C2 80..C2 9F) as
// \u00NN. Everything else, other UTF-8 included, is kept byte for byte.
std::string EscapeControl(std::string_view text);

}  // namespace dlsched::cli
