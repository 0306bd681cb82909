#include <iostream>
#include <string_view>

#include "cli/commands.h"
#include "daemon/exec/job_exec.h"

int main(int argc, char** argv) {
  // The job wrapper of `dlsched serve` (job_exec.h), not a command for people.
  if (argc > 1 && std::string_view(argv[1]) == dlsched::daemon::kJobExecCommand) {
    return dlsched::daemon::JobExecMain(argc, argv);
  }
  return dlsched::cli::Main(argc, argv, std::cout, std::cerr);
}
