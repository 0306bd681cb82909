// RoundPolicy::SaveState / RestoreState: the policy's state across cycles as text, so that a
// restarted daemon (through its store) and the replay of its log go on as an uninterrupted run.
//
// The text is whitespace-separated tokens, numbers in their shortest exact form (std::to_chars),
// so a restored state is bit-for-bit the saved one:
//   round-policy 1
//   types T  next_round US  allocations N
//   x ROWS f_0 ... f_{ROWS*T-1}
//   jobs J   then per job: id failed_types index rounds_active row_0..row_{T-1} on_0..on_{T-1}
//   assigned A   then per entry: id type
//   realloc LAST_US STALE   only when options.realloc_interval > 0
//   coalesce STALE CHANGES  only when options.coalesce_above_jobs > 0 and realloc_interval is 0;
//                           optional on reading (a state saved before it had no stale X)
//   deficits d_0 ... d_{J*T-1}   only with options.deficit_ties or zero_entries, per job in order
// The placements of consolidated gangs are not saved: they are a function of the cluster.

#include <algorithm>
#include <charconv>
#include <functional>
#include <limits>
#include <string>
#include <system_error>

#include "policy/hetero/round_policy.h"

namespace dlsched::hetero {
namespace {

constexpr std::string_view kMagic = "round-policy";
constexpr int kVersion = 1;

// Whether the state carries a coalescing record.
bool Coalesces(const RoundPolicyOptions& options) {
  return options.coalesce_above_jobs > 0 && options.realloc_interval == Duration::zero();
}

class Writer {
 public:
  void Word(std::string_view word) {
    if (!text_.empty()) text_ += ' ';
    text_ += word;
  }
  template <typename T>
  void Number(T value) {
    char buffer[64];
    const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, value);
    DS_CHECK(ec == std::errc()) << "a number did not fit its buffer";
    Word(std::string_view(buffer, end - buffer));
  }
  std::string Take() { return std::move(text_); }

 private:
  std::string text_;
};

// Reads tokens back; every read fails (returns false) past the end or on a malformed token.
class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}
  bool Word(std::string_view want) {
    std::string_view word;
    return Next(word) && word == want;
  }
  template <typename T>
  bool Number(T& value) {
    std::string_view word;
    if (!Next(word)) return false;
    const auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    return ec == std::errc() && end == word.data() + word.size();
  }
  // A count of items that each take at least `tokens_each` tokens of what is left: bounded by
  // the text, so a corrupt count cannot make the reader allocate without limit.
  bool Count(int64_t& value, int64_t tokens_each) {
    return Number(value) && value >= 0 &&
           value <= static_cast<int64_t>(text_.size() - pos_) / std::max<int64_t>(1, tokens_each);
  }
  // Reads `want` if it is the next word; otherwise reads nothing.
  bool Optional(std::string_view want) {
    const size_t start = pos_;
    if (Word(want)) return true;
    pos_ = start;
    return false;
  }
  bool AtEnd() {
    SkipSpace();
    return pos_ == text_.size();
  }

 private:
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n')) ++pos_;
  }
  bool Next(std::string_view& word) {
    SkipSpace();
    const size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != ' ' && text_[pos_] != '\n') ++pos_;
    word = text_.substr(start, pos_ - start);
    return !word.empty();
  }
  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::string RoundPolicy::SaveState() const {
  if (state_.num_types < 0) return {};  // never decided: nothing to carry
  SolvePending();                       // X as it was posed
  const int types = state_.num_types;
  Writer w;
  w.Word(kMagic);
  w.Number(kVersion);
  w.Word("types");
  w.Number(types);
  w.Word("next_round");
  w.Number(state_.next_round.time_since_epoch().count());
  w.Word("allocations");
  w.Number(state_.allocations_computed);
  w.Word("x");
  const size_t rows = types > 0 ? state_.x.fraction.size() / types : 0;
  w.Number(rows);
  for (double f : state_.x.fraction) w.Number(f);
  w.Word("jobs");
  w.Number(state_.jobs.size());
  for (const JobRecord& record : state_.jobs) {
    w.Number(record.id.value());
    w.Number(record.failed_types);
    w.Number(record.index);
    w.Number(record.rounds_active);
    for (double rate : record.row) w.Number(rate);
    for (int on : record.rounds_on) w.Number(on);
  }
  w.Word("assigned");
  w.Number(state_.assigned.size());
  for (const auto& [id, type] : state_.assigned) {
    w.Number(id.value());
    w.Number(type);
  }
  if (options_.realloc_interval > Duration::zero()) {
    w.Word("realloc");
    w.Number(state_.last_allocation.time_since_epoch().count());
    w.Number(state_.allocation_stale ? 1 : 0);
  }
  if (Coalesces(options_)) {
    w.Word("coalesce");
    w.Number(state_.allocation_stale ? 1 : 0);
    w.Number(state_.changes_since_allocation);
  }
  if (options_.deficit_ties || options_.zero_entries) {
    w.Word("deficits");
    for (const JobRecord& record : state_.jobs) {
      for (int t = 0; t < types; ++t) w.Number(record.deficit.empty() ? 0.0 : record.deficit[t]);
    }
  }
  return w.Take();
}

Status RoundPolicy::RestoreState(std::string_view text) {
  if (text.empty()) {
    state_ = State{};
    return Status::Ok();
  }
  const auto bad = [this](std::string_view what) {
    return InvalidArgument("policy " + options_.name +
                           ": cannot restore its state: " + std::string(what));
  };
  Reader r(text);
  State s;
  int version = 0;
  if (!r.Word(kMagic) || !r.Number(version) || version != kVersion) {
    return bad("not a round-policy state of version " + std::to_string(kVersion));
  }
  int64_t next_round = 0;
  if (!r.Word("types") || !r.Number(s.num_types) || s.num_types < 0 || !r.Word("next_round") ||
      !r.Number(next_round) || !r.Word("allocations") || !r.Number(s.allocations_computed)) {
    return bad("malformed header");
  }
  const int types = s.num_types;
  s.next_round = Timestamp(Duration(next_round));
  int64_t rows = 0;
  if (!r.Word("x") || !r.Count(rows, std::max(1, types))) return bad("malformed allocation");
  s.x.num_types = types;
  s.x.fraction.resize(rows * types);
  for (double& f : s.x.fraction) {
    if (!r.Number(f)) return bad("malformed allocation");
  }
  int64_t jobs = 0;
  if (!r.Word("jobs") || !r.Count(jobs, 4 + 2 * types)) return bad("malformed job count");
  for (int64_t i = 0; i < jobs; ++i) {
    uint32_t id = 0;
    JobRecord record;
    record.row.resize(types);
    record.rounds_on.resize(types);
    if (!r.Number(id) || !r.Number(record.failed_types) || !r.Number(record.index) ||
        record.index < -1 || record.index >= rows || !r.Number(record.rounds_active)) {
      return bad("malformed job " + std::to_string(i));
    }
    for (double& rate : record.row) {
      if (!r.Number(rate)) return bad("malformed row of job " + std::to_string(id));
    }
    for (int& on : record.rounds_on) {
      if (!r.Number(on)) return bad("malformed rounds of job " + std::to_string(id));
    }
    // By id, as saved: the order of X's rows.
    if (!s.jobs.empty() && !(s.jobs.back().id < JobId(id))) {
      return bad("job " + std::to_string(id) + " twice or out of order");
    }
    record.id = JobId(id);
    s.jobs.push_back(std::move(record));
  }
  int64_t assigned = 0;
  if (!r.Word("assigned") || !r.Count(assigned, 2)) return bad("malformed assignment count");
  for (int64_t i = 0; i < assigned; ++i) {
    uint32_t id = 0;
    int type = 0;
    if (!r.Number(id) || !r.Number(type) || type < 0 || type >= types ||
        !std::ranges::binary_search(s.jobs, JobId(id), std::less<>(), &JobRecord::id)) {
      return bad("malformed assignment " + std::to_string(i));
    }
    s.assigned.emplace_back(JobId(id), type);
  }
  if (options_.realloc_interval > Duration::zero()) {
    int64_t last = 0;
    int stale = 0;
    if (!r.Word("realloc") || !r.Number(last) || !r.Number(stale) || (stale != 0 && stale != 1)) {
      return bad("malformed reallocation record");
    }
    s.last_allocation = Timestamp(Duration(last));
    s.allocation_stale = stale == 1;
  }
  if (Coalesces(options_) && r.Optional("coalesce")) {
    int stale = 0;
    if (!r.Number(stale) || (stale != 0 && stale != 1) || !r.Number(s.changes_since_allocation) ||
        s.changes_since_allocation < 0) {
      return bad("malformed coalescing record");
    }
    s.allocation_stale = stale == 1;
  }
  if (options_.deficit_ties || options_.zero_entries) {
    if (!r.Word("deficits")) return bad("no deficits");
    for (JobRecord& record : s.jobs) {
      record.deficit.resize(types);
      for (double& d : record.deficit) {
        if (!r.Number(d))
          return bad("malformed deficits of job " + std::to_string(record.id.value()));
      }
    }
  }
  if (!r.AtEnd()) return bad("text after the assignment");
  state_ = std::move(s);
  return Status::Ok();
}

}  // namespace dlsched::hetero
