// Fuzz target: one workload trace format (sim/workload.h, sim/workload_readers.h,
// sim/workload_chronus.h), chosen at build time by DLSCHED_FUZZ_FORMAT ("csv", "philly",
// "gavel", "tiresias", "chronus", "alibaba"). The input is the file LoadWorkload reads (through
// a memory file, /proc/self/fd/N). Checks that no input crashes or throws, and the readers'
// contract: every job passes ValidateJobSpec; jobs come sorted by submit time, the first at
// t = 0; a file read without errors reads the same with skip_bad_rows, skipping nothing; and
// jobs plus skipped and excluded rows never outnumber the lines.

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "dlsched/common/status.h"
#include "dlsched/model/job.h"
#include "sim/workload.h"

#ifndef DLSCHED_FUZZ_FORMAT
#error "DLSCHED_FUZZ_FORMAT names the workload format (csv, philly, ...)"
#endif

namespace {

using dlsched::sim::ReadOptions;
using dlsched::sim::Workload;

// A file in memory that each input replaces; its /proc path names it to the reader.
class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("dlsched-fuzz", 0)) {
    DS_CHECK(fd_ >= 0) << "memfd_create failed";
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  const std::string& path() const { return path_; }
  void Replace(const uint8_t* data, size_t size) {
    DS_CHECK(ftruncate(fd_, 0) == 0) << "ftruncate failed";
    size_t done = 0;
    while (done < size) {
      const ssize_t n = pwrite(fd_, data + done, size - done, static_cast<off_t>(done));
      DS_CHECK(n > 0) << "pwrite failed";
      done += static_cast<size_t>(n);
    }
  }

 private:
  int fd_;
  std::string path_;
};

void CheckWorkload(const Workload& workload, size_t lines) {
  const auto& jobs = workload.jobs;
  DS_CHECK(jobs.size() + static_cast<size_t>(workload.skipped_rows + workload.excluded_rows) <=
           lines)
      << jobs.size() << " jobs, " << workload.skipped_rows << " skipped and "
      << workload.excluded_rows << " excluded rows from " << lines << " lines";
  for (const dlsched::JobSpec& spec : jobs) {
    const dlsched::Status valid = dlsched::ValidateJobSpec(spec);
    DS_CHECK(valid.ok()) << "job '" << spec.name
                         << "' was read but is invalid: " << valid.message();
  }
  if (jobs.empty()) return;
  DS_CHECK(jobs.front().submit_time == dlsched::kTimeZero) << "first job not at t = 0";
  DS_CHECK(std::is_sorted(jobs.begin(), jobs.end(),
                          [](const dlsched::JobSpec& a, const dlsched::JobSpec& b) {
                            return a.submit_time < b.submit_time;
                          }))
      << "jobs not sorted by submit time";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static MemoryFile* const file = new MemoryFile();
  file->Replace(data, size);
  const std::string spec = std::string(DLSCHED_FUZZ_FORMAT) + ":" + file->path();
  const size_t lines =
      static_cast<size_t>(std::count(data, data + size, static_cast<uint8_t>('\n'))) + 1;

  ReadOptions strict;
  ReadOptions lenient;
  lenient.skip_bad_rows = true;
  const dlsched::Result<Workload> read = dlsched::sim::LoadWorkload(spec, strict);
  const dlsched::Result<Workload> skipping = dlsched::sim::LoadWorkload(spec, lenient);
  if (read.ok()) {
    CheckWorkload(*read, lines);
    DS_CHECK(read->skipped_rows == 0) << "rows skipped without skip_bad_rows";
    DS_CHECK(skipping.ok() && skipping->skipped_rows == 0 &&
             skipping->jobs.size() == read->jobs.size())
        << "a file read without errors reads differently with skip_bad_rows";
  }
  if (skipping.ok()) CheckWorkload(*skipping, lines);
  return 0;
}
