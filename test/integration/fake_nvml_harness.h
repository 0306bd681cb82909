#pragma once

// Integration tests of the daemon over the fake NVML of test/fake_nvml/ (`--nvml-library`): the
// fake reads its GPUs and per-process usage from the state file this fixture writes, and the
// daemon inherits the variable that names it.

#include <stdlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "integration/daemon_harness.h"

namespace dlsched::integration {

class FakeNvmlIntegrationTest : public DaemonIntegrationTest {
 protected:
  void SetUp() override {
    DaemonIntegrationTest::SetUp();
    state_ = dir_ / "nvml-state";
    setenv("DLSCHED_FAKE_NVML_STATE", state_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("DLSCHED_FAKE_NVML_STATE");
    DaemonIntegrationTest::TearDown();
  }

  // Replaces the fake NVML's state at once (write, then rename): the daemon never reads half.
  void WriteNvmlState(const std::string& text) {
    const fs::path tmp = dir_ / "nvml-state.tmp";
    std::ofstream(tmp, std::ios::trunc) << text;
    fs::rename(tmp, state_);
  }

  fs::path state_;
};

}  // namespace dlsched::integration
