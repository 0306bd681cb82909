#include "daemon/exec/job_files.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace dlsched::daemon {
namespace {

constexpr std::string_view kStopIntentNames[] = {"", "preempt", "kill", "timeout", "node", "start"};

}  // namespace

std::string ReadSmallFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return {};
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

bool WriteSmallFile(const std::string& path, const std::string& content, mode_t mode) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp, std::ios::trunc);
    if (!file) return false;
    file << content;
    if (!file.flush()) return false;
  }
  if (chmod(tmp.c_str(), mode) != 0) return false;
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  return !ec;
}

std::string_view StopIntentName(StopIntent intent) {
  return kStopIntentNames[static_cast<int>(intent)];
}

StopIntent ParseStopIntent(std::string_view name) {
  for (int i = 1; i <= static_cast<int>(StopIntent::kNotStarted); ++i) {
    if (name == kStopIntentNames[i]) return static_cast<StopIntent>(i);
  }
  return StopIntent::kNone;
}

std::string ShellQuote(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace dlsched::daemon
