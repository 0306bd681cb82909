#pragma once

// Files for tests that run real processes or stores: a fresh directory per test and whole-file
// reads. Header-only, so the unit, integration and Slurm test binaries share it.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

namespace dlsched::test_support {

// The whole content of `path`; "" if it cannot be read.
inline std::string ReadTextFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// An empty directory `<tmp>/<prefix>_<pid>_<test name>`, made afresh (whatever was there is
// removed). Unique per process and test, since CTest runs each test as its own process, several
// at once. Call from SetUp; the caller removes it in TearDown.
inline std::filesystem::path FreshTestDir(std::string_view prefix) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      (std::string(prefix) + "_" + std::to_string(::getpid()) + "_" +
       ::testing::UnitTest::GetInstance()->current_test_info()->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// The address `dlsched serve` printed to the file `out` ("listening on URL"), once its line is
// complete; nullopt before.
inline std::optional<std::string> ListeningUrl(const std::filesystem::path& out) {
  const std::string text = ReadTextFile(out);
  constexpr std::string_view kPrefix = "listening on ";
  const size_t at = text.find(kPrefix);
  if (at == std::string::npos) return std::nullopt;
  const size_t end = text.find('\n', at);
  if (end == std::string::npos) return std::nullopt;
  return text.substr(at + kPrefix.size(), end - at - kPrefix.size());
}

}  // namespace dlsched::test_support
