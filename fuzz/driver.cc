// A small deterministic fuzzing engine for the LLVMFuzzerTestOneInput targets in this folder,
// for compilers without libFuzzer (g++). It runs every input it is given, then mutants of them
// (bit flips, byte edits, inserts, deletes, copies, line edits, number swaps, dictionary tokens,
// splices between inputs) drawn from a fixed seed, until a run count or a wall-time budget is
// spent. The same seed and inputs give the same sequence of mutants; a time budget only decides
// how far along it a run gets. When the code under test was compiled with
// -fsanitize-coverage=trace-pc (DLSCHED_FUZZ_COVERAGE), mutants that reach new edges join the
// pool the next mutants are drawn from; otherwise every mutant starts from a given input.
//
// A crash (a signal, an escaped exception, a failed check, a sanitizer report) or an input that
// runs longer than -timeout prints the input in hex, writes it to <artifact_prefix>crash-<hash>
// (timeout-<hash>) and ends the process unsuccessfully. The flags follow libFuzzer's, so one
// command line works with both engines (fuzz/README.md):
//
//   fuzz_TARGET [-runs=N] [-max_total_time=S] [-seed=N] [-dict=FILE] [-max_len=N]
//               [-timeout=S] [-artifact_prefix=P] PATH...
//
// PATH: a directory (its files, in name order) or a file. Without -runs, only the given inputs
// run (reproducing a crash: fuzz_TARGET crash-1234abcd).

#include <fcntl.h>
#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Optional hooks: a target's one-time set-up, and a sanitizer's last call before it exits.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));
extern "C" void __sanitizer_set_death_callback(void (*callback)()) __attribute__((weak));

namespace {

using Bytes = std::string;

// ---------------------------------------------------------------------------------------------
// Coverage feedback: AFL-style edge counts, filled by the trace-pc hook below while a target
// runs (only code compiled with -fsanitize-coverage=trace-pc calls it).

constexpr size_t kMapSize = 1 << 16;
uint8_t g_edges[kMapSize];
uint8_t g_seen[kMapSize];  // bucketed counts ever seen, or-ed
// The entries of g_edges the last run made non-zero, so that folding it in costs what the run
// touched, not the whole map.
uint16_t g_touched[kMapSize];
size_t g_touched_count = 0;
uintptr_t g_previous = 0;
bool g_in_target = false;
bool g_coverage_active = false;

// A count's AFL bucket (1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+) as one bit.
uint8_t Bucket(uint8_t count) {
  if (count == 0) return 0;
  if (count <= 3) return static_cast<uint8_t>(1u << (count - 1));
  if (count <= 7) return 8;
  if (count <= 15) return 16;
  if (count <= 31) return 32;
  if (count <= 127) return 64;
  return 128;
}

// Folds the last run's edges into g_seen; true when it reached an edge or a count bucket not
// seen before. Clears the counts for the next run.
bool TakeNewCoverage() {
  bool fresh = false;
  for (size_t k = 0; k < g_touched_count; ++k) {
    const uint16_t i = g_touched[k];
    const uint8_t bucket = Bucket(g_edges[i]);
    if ((g_seen[i] & bucket) == 0) {
      g_seen[i] |= bucket;
      fresh = true;
    }
    g_edges[i] = 0;
  }
  g_touched_count = 0;
  return fresh;
}

int CountEdges() {
  int edges = 0;
  for (const uint8_t bits : g_seen) edges += bits != 0;
  return edges;
}

}  // namespace

// Called at every basic block of instrumented code. Not instrumented itself (it would recurse).
extern "C" __attribute__((no_sanitize_coverage)) void __sanitizer_cov_trace_pc() {
  if (!g_in_target) return;
  g_coverage_active = true;
  const auto pc = reinterpret_cast<uintptr_t>(__builtin_return_address(0));
  const uintptr_t location = (pc ^ (pc >> 16)) & (kMapSize - 1);
  const auto edge = static_cast<uint16_t>(location ^ g_previous);
  if (g_edges[edge] == 0) g_touched[g_touched_count++] = edge;
  // Saturating: a count that wrapped to 0 would be filed in g_touched twice.
  if (g_edges[edge] != 255) ++g_edges[edge];
  g_previous = location >> 1;
}

namespace {

// ---------------------------------------------------------------------------------------------
// The input being run, for the crash handlers (async-signal-safe: fixed buffers, write(2)).

const uint8_t* g_current = nullptr;
size_t g_current_size = 0;
char g_artifact_prefix[4096] = "./";

void WriteAll(int fd, const char* text, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, text, size);
    if (n <= 0) return;
    text += n;
    size -= static_cast<size_t>(n);
  }
}
void WriteText(int fd, const char* text) { WriteAll(fd, text, strlen(text)); }

// FNV-1a, the artifact's name.
uint32_t Hash(const uint8_t* data, size_t size) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  return h;
}

void FormatHex32(uint32_t value, char out[9]) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int i = 7; i >= 0; --i) {
    out[i] = kDigits[value & 15];
    value >>= 4;
  }
  out[8] = '\0';
}

// Prints the current input (hex, 32 bytes a line) and writes it to <prefix><kind>-<hash>.
void ReportCurrentInput(const char* kind) {
  if (g_current == nullptr) return;
  static constexpr char kDigits[] = "0123456789abcdef";
  WriteText(2, "==fuzz== failing input (");
  char number[24];
  int n = 0;
  size_t size = g_current_size;
  do {
    number[n++] = static_cast<char>('0' + size % 10);
    size /= 10;
  } while (size > 0);
  std::reverse(number, number + n);
  WriteAll(2, number, static_cast<size_t>(n));
  WriteText(2, " bytes), hex:\n");
  char line[3 * 32 + 1];
  for (size_t i = 0; i < g_current_size; i += 32) {
    const size_t end = std::min(g_current_size, i + 32);
    size_t used = 0;
    for (size_t j = i; j < end; ++j) {
      line[used++] = kDigits[g_current[j] >> 4];
      line[used++] = kDigits[g_current[j] & 15];
      line[used++] = j + 1 == end ? '\n' : ' ';
    }
    WriteAll(2, line, used);
  }
  char path[sizeof(g_artifact_prefix) + 32];
  char hash[9];
  FormatHex32(Hash(g_current, g_current_size), hash);
  path[0] = '\0';
  strncat(path, g_artifact_prefix, sizeof(path) - 1);
  strncat(path, kind, sizeof(path) - strlen(path) - 1);
  strncat(path, "-", sizeof(path) - strlen(path) - 1);
  strncat(path, hash, sizeof(path) - strlen(path) - 1);
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    WriteAll(fd, reinterpret_cast<const char*>(g_current), g_current_size);
    close(fd);
    WriteText(2, "==fuzz== written to ");
    WriteText(2, path);
    WriteText(2, "\n");
  }
}

void OnCrashSignal(int signal_number) {
  WriteText(2, "==fuzz== crash: ");
  WriteText(2, strsignal(signal_number));
  WriteText(2, "\n");
  ReportCurrentInput("crash");
  // Die of the same signal, so the exit status says what happened.
  ::signal(signal_number, SIG_DFL);
  raise(signal_number);
}

void OnTimeout(int) {
  WriteText(2, "==fuzz== timeout: one input ran longer than -timeout\n");
  ReportCurrentInput("timeout");
  _exit(70);
}

void OnSanitizerDeath() { ReportCurrentInput("crash"); }

void InstallHandlers(bool sanitizer) {
  // Under a sanitizer, its own handlers report memory faults (with a stack) and then call
  // OnSanitizerDeath; aborts (failed checks, escaped exceptions) stay ours.
  std::vector<int> signals = {SIGABRT};
  if (sanitizer) {
    __sanitizer_set_death_callback(OnSanitizerDeath);
  } else {
    signals.insert(signals.end(), {SIGSEGV, SIGBUS, SIGFPE, SIGILL});
  }
  for (const int s : signals) ::signal(s, OnCrashSignal);
  ::signal(SIGALRM, OnTimeout);
}

// Runs one input under the timeout; returns its wall time.
std::chrono::nanoseconds RunOne(const Bytes& input, int timeout_s) {
  // A copy in a buffer of exactly the input's size, so reading past the end is caught by a
  // sanitizer as it is under libFuzzer.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[std::max<size_t>(input.size(), 1)]);
  std::memcpy(copy.get(), input.data(), input.size());
  g_current = copy.get();
  g_current_size = input.size();
  if (timeout_s > 0) alarm(static_cast<unsigned>(timeout_s));
  const auto start = std::chrono::steady_clock::now();
  g_previous = 0;
  g_in_target = true;
  LLVMFuzzerTestOneInput(copy.get(), input.size());
  g_in_target = false;
  const auto elapsed = std::chrono::steady_clock::now() - start;
  if (timeout_s > 0) alarm(0);
  g_current = nullptr;
  return elapsed;
}

// ---------------------------------------------------------------------------------------------
// Inputs and the dictionary.

std::optional<Bytes> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// One token of an AFL/libFuzzer dictionary line: `name="value"` or `"value"`, with \\, \" and
// \xNN escapes. nullopt for a malformed line.
std::optional<Bytes> ParseDictLine(std::string_view line) {
  const size_t open_quote = line.find('"');
  const size_t close_quote = line.rfind('"');
  if (open_quote == std::string_view::npos || close_quote <= open_quote) return std::nullopt;
  const std::string_view body = line.substr(open_quote + 1, close_quote - open_quote - 1);
  Bytes token;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\') {
      token += body[i];
      continue;
    }
    if (i + 1 >= body.size()) return std::nullopt;
    const char next = body[++i];
    if (next == 'x') {
      if (i + 2 >= body.size()) return std::nullopt;
      const std::string hex(body.substr(i + 1, 2));
      char* end = nullptr;
      const long value = std::strtol(hex.c_str(), &end, 16);
      if (*end != '\0') return std::nullopt;
      token += static_cast<char>(value);
      i += 2;
    } else {
      token += next;
    }
  }
  return token;
}

std::optional<std::vector<Bytes>> ReadDict(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::vector<Bytes> tokens;
  std::string line;
  while (std::getline(in, line)) {
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') continue;
    std::optional<Bytes> token = ParseDictLine(line);
    if (!token) {
      std::fprintf(stderr, "fuzz: %s: bad dictionary line: %s\n", path.c_str(), line.c_str());
      return std::nullopt;
    }
    tokens.push_back(std::move(*token));
  }
  return tokens;
}

// ---------------------------------------------------------------------------------------------
// Mutations.

// SplitMix64: small, fast, and the same sequence everywhere (unlike std:: distributions).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform-enough in [0, n); n > 0.
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }
  bool OneIn(size_t n) { return Below(n) == 0; }

 private:
  uint64_t state_;
};

// Bytes that matter to the text formats the targets parse (the NUL at the front included).
constexpr char kInterestingByteList[] = "\0\n\r\t ,;:{}[]\"'\\-+.0123456789eExX#=/_\x7f\x80\xff";
constexpr std::string_view kInterestingBytes(kInterestingByteList,
                                             sizeof(kInterestingByteList) - 1);

// Numbers at the edges of the ranges the parsers check.
constexpr std::array<std::string_view, 34> kInterestingNumbers = {
    "0",
    "1",
    "-1",
    "2",
    "7",
    "8",
    "63",
    "64",
    "65",
    "255",
    "256",
    "1000000",
    "1000001",
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551616",
    "1e308",
    "1e309",
    "-1e308",
    "5e-324",
    "1e-400",
    "0.5",
    "-0",
    "nan",
    "inf",
    "1.7976931348623157e308",
    "99999999999999999999999",
    "0x10",
    "1e18",
};

class Mutator {
 public:
  Mutator(uint64_t seed, size_t max_len, std::vector<Bytes> dict)
      : rng_(seed), max_len_(max_len), dict_(std::move(dict)) {}

  Rng& rng() { return rng_; }

  // Applies 1, 2, 4 or 8 mutations to `input`; `others` are splice partners (may be empty).
  Bytes Mutate(Bytes input, const std::vector<Bytes>& others) {
    const int count = 1 << rng_.Below(4);
    for (int i = 0; i < count; ++i) MutateOnce(input, others);
    if (input.size() > max_len_) input.resize(max_len_);
    return input;
  }

 private:
  char RandomByte() {
    return rng_.OneIn(2) ? kInterestingBytes[rng_.Below(kInterestingBytes.size())]
                         : static_cast<char>(rng_.Below(256));
  }

  // [begin, end) of a random chunk of `text` of at most `max` bytes; text non-empty.
  std::pair<size_t, size_t> Chunk(const Bytes& text, size_t max) {
    const size_t begin = rng_.Below(text.size());
    const size_t len = 1 + rng_.Below(std::min(max, text.size() - begin));
    return {begin, begin + len};
  }

  // The line around byte `at`: [begin, end) without its '\n'.
  static std::pair<size_t, size_t> LineAround(const Bytes& text, size_t at) {
    const size_t newline_before = at == 0 ? Bytes::npos : text.rfind('\n', at - 1);
    const size_t begin = newline_before == Bytes::npos ? 0 : newline_before + 1;
    const size_t end = std::min(text.find('\n', at), text.size());
    return {begin, end};
  }

  void MutateOnce(Bytes& s, const std::vector<Bytes>& others) {
    const size_t pos = s.empty() ? 0 : rng_.Below(s.size());
    switch (rng_.Below(12)) {
      case 0:  // flip a bit
        if (!s.empty()) s[pos] = static_cast<char>(s[pos] ^ (1 << rng_.Below(8)));
        break;
      case 1:  // replace a byte
        if (!s.empty()) s[pos] = RandomByte();
        break;
      case 2: {  // insert 1..4 bytes
        const size_t n = 1 + rng_.Below(4);
        for (size_t i = 0; i < n; ++i) s.insert(s.begin() + static_cast<long>(pos), RandomByte());
        break;
      }
      case 3:  // erase a chunk
        if (!s.empty()) {
          const auto [begin, end] = Chunk(s, 16);
          s.erase(begin, end - begin);
        }
        break;
      case 4:  // copy a chunk elsewhere
        if (!s.empty()) {
          const auto [begin, end] = Chunk(s, 64);
          const Bytes chunk = s.substr(begin, end - begin);
          s.insert(rng_.Below(s.size() + 1), chunk);
        }
        break;
      case 5:
      case 6:  // a dictionary token, inserted or over the bytes there
        if (!dict_.empty()) {
          const Bytes& token = dict_[rng_.Below(dict_.size())];
          if (rng_.OneIn(2) || s.empty()) {
            s.insert(rng_.Below(s.size() + 1), token);
          } else {
            s.replace(pos, std::min(token.size(), s.size() - pos), token);
          }
        }
        break;
      case 7: {  // a number swapped for one at a range's edge, or moved by one
        size_t begin = pos;
        while (begin < s.size() && !std::isdigit(static_cast<unsigned char>(s[begin]))) ++begin;
        if (begin == s.size()) break;
        size_t end = begin;
        while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) ||
                                  s[end] == '.' || s[end] == 'e' || s[end] == 'E')) {
          ++end;
        }
        if (begin > 0 && s[begin - 1] == '-') --begin;
        if (rng_.OneIn(4)) {
          // Moved by one: the last digit up or down, carrying nothing (enough to cross a bound).
          char& last = s[end - 1];
          if (std::isdigit(static_cast<unsigned char>(last))) {
            last = rng_.OneIn(2) ? (last == '9' ? '0' : static_cast<char>(last + 1))
                                 : (last == '0' ? '9' : static_cast<char>(last - 1));
          }
        } else {
          s.replace(begin, end - begin,
                    kInterestingNumbers[rng_.Below(kInterestingNumbers.size())]);
        }
        break;
      }
      case 8:  // truncate
        if (!s.empty()) s.resize(rng_.Below(s.size()));
        break;
      case 9:  // duplicate or delete a line
        if (!s.empty()) {
          const auto [begin, end] = LineAround(s, pos);
          if (rng_.OneIn(2)) {
            s.insert(begin, s.substr(begin, end - begin) + "\n");
          } else {
            s.erase(begin, std::min(end + 1, s.size()) - begin);
          }
        }
        break;
      case 10:
      case 11:  // splice: a chunk of another input inserted, or another input's tail here
        if (!others.empty()) {
          const Bytes& other = others[rng_.Below(others.size())];
          if (other.empty()) break;
          if (rng_.OneIn(2)) {
            const auto [begin, end] = Chunk(other, 128);
            s.insert(rng_.Below(s.size() + 1), other, begin, end - begin);
          } else {
            s = s.substr(0, pos) + other.substr(rng_.Below(other.size()));
          }
        }
        break;
    }
  }

  Rng rng_;
  size_t max_len_;
  std::vector<Bytes> dict_;
};

// ---------------------------------------------------------------------------------------------

struct Flags {
  uint64_t runs = 0;
  double max_total_time_s = 0;  // 0: no limit
  uint64_t seed = 1;
  std::string dict;
  size_t max_len = 4096;
  int timeout_s = 10;
  std::vector<std::string> paths;
};

bool ParseNumber(std::string_view text, double& out) {
  const std::string copy(text);
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return !copy.empty() && *end == '\0' && out >= 0;
}

std::optional<Flags> ParseFlags(int argc, char** argv) {
  Flags flags;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.empty() || arg[0] != '-') {
      flags.paths.emplace_back(arg);
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string_view name = arg.substr(1, eq == std::string_view::npos ? eq : eq - 1);
    const std::string_view value = eq == std::string_view::npos ? "" : arg.substr(eq + 1);
    double number = 0;
    const bool numeric = ParseNumber(value, number);
    if (name == "dict") {
      flags.dict = value;
    } else if (name == "artifact_prefix") {
      if (value.size() >= sizeof(g_artifact_prefix)) return std::nullopt;
      std::memcpy(g_artifact_prefix, value.data(), value.size());
      g_artifact_prefix[value.size()] = '\0';
    } else if (numeric && name == "runs") {
      flags.runs = static_cast<uint64_t>(number);
    } else if (numeric && name == "max_total_time") {
      flags.max_total_time_s = number;
    } else if (numeric && name == "seed") {
      flags.seed = static_cast<uint64_t>(number);
    } else if (numeric && name == "max_len" && number >= 1) {
      flags.max_len = static_cast<size_t>(number);
    } else if (numeric && name == "timeout") {
      flags.timeout_s = static_cast<int>(number);
    } else {
      std::fprintf(stderr, "fuzz: unknown or malformed flag %s\n", argv[i]);
      return std::nullopt;
    }
  }
  if (flags.paths.empty()) {
    std::fprintf(stderr, "fuzz: no inputs (give a corpus directory or files)\n");
    return std::nullopt;
  }
  return flags;
}

// The files of each path (a directory's regular files in name order), read whole.
std::optional<std::vector<Bytes>> ReadInputs(const std::vector<std::string>& paths) {
  std::vector<Bytes> inputs;
  for (const std::string& path : paths) {
    std::vector<std::filesystem::path> files;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
    } else {
      files.emplace_back(path);
    }
    for (const auto& file : files) {
      std::optional<Bytes> content = ReadFile(file);
      if (!content) {
        std::fprintf(stderr, "fuzz: cannot read %s\n", file.c_str());
        return std::nullopt;
      }
      inputs.push_back(std::move(*content));
    }
  }
  return inputs;
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<Flags> flags = ParseFlags(argc, argv);
  if (!flags) return 2;
  std::optional<std::vector<Bytes>> inputs = ReadInputs(flags->paths);
  if (!inputs) return 2;
  std::vector<Bytes> dict;
  if (!flags->dict.empty()) {
    std::optional<std::vector<Bytes>> read = ReadDict(flags->dict);
    if (!read) return 2;
    dict = std::move(*read);
  }
  InstallHandlers(__sanitizer_set_death_callback != nullptr);
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);

  const auto start = std::chrono::steady_clock::now();
  std::chrono::nanoseconds slowest{0};
  size_t longest = 0;
  // The given inputs first, whole; their coverage seeds the map.
  std::vector<Bytes> pool;
  for (const Bytes& input : *inputs) {
    slowest = std::max(slowest, RunOne(input, flags->timeout_s));
    longest = std::max(longest, input.size());
    TakeNewCoverage();
    pool.push_back(input);
  }
  if (pool.empty()) pool.emplace_back();

  constexpr size_t kMaxPool = 4096;
  Mutator mutator(flags->seed, flags->max_len, std::move(dict));
  const auto deadline =
      flags->max_total_time_s > 0
          ? start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                        std::chrono::duration<double>(flags->max_total_time_s))
          : std::chrono::steady_clock::time_point::max();
  uint64_t runs = 0;
  while (runs < flags->runs && std::chrono::steady_clock::now() < deadline) {
    const Bytes& base = pool[mutator.rng().Below(pool.size())];
    Bytes mutant = mutator.Mutate(base, pool);
    slowest = std::max(slowest, RunOne(mutant, flags->timeout_s));
    longest = std::max(longest, mutant.size());
    ++runs;
    if (g_coverage_active && TakeNewCoverage() && pool.size() < kMaxPool) {
      pool.push_back(std::move(mutant));
    }
  }

  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ostringstream summary;
  summary << "fuzz: " << inputs->size() << " inputs and " << runs << " mutants in " << elapsed_s
          << " s, no failure; seed " << flags->seed << ", longest input " << longest
          << " bytes, slowest " << std::chrono::duration<double, std::milli>(slowest).count()
          << " ms";
  if (g_coverage_active) {
    summary << "; coverage: " << CountEdges() << " edges, pool " << pool.size();
  }
  std::printf("%s\n", summary.str().c_str());
  return 0;
}
