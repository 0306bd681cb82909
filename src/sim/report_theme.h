#pragma once

// web/theme.css, the palette, type and table look the simulation report shares with the
// dashboard, embedded at build time (cmake/EmbedText.cmake) into the report's <style>.

#include <string_view>

namespace dlsched::sim {

std::string_view ReportTheme();

}  // namespace dlsched::sim
