#include "daemon/job/job_request.h"

#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "dlsched/common/text.h"

namespace dlsched::daemon {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 5> kFrameworkNames = {"custom", "pytorch", "tensorflow",
                                                             "mpi", "horovod"};

// A user-supplied value quoted for a message: 'value', at most 64 bytes of it, escaped.
std::string Echo(std::string_view text) {
  std::string out = "'";
  out += Escaped(text, 64);
  out += "'";
  return out;
}

Status FieldError(std::string_view field, std::string message) {
  return InvalidArgument(std::string(field) + ": " + message);
}

bool HasNul(std::string_view s) { return s.find('\0') != std::string_view::npos; }

// C0 controls, DEL, and the C1 controls U+0080..U+009F in their UTF-8 form (C2 80..C2 9F), which
// some terminals obey as escape sequences (U+009B is CSI).
bool HasControl(std::string_view s) {
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return true;
    if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) < 0xa0) return true;
  }
  return false;
}

// Which bytes a string field refuses.
enum class Bytes { kNoControl, kNoNul };

// Empty when `text` fits a field of at most `max_bytes` that refuses `bytes`, else why not.
std::string TextProblem(std::string_view text, size_t max_bytes, Bytes bytes) {
  if (text.size() > max_bytes) {
    return "longer than " + std::to_string(max_bytes) + " bytes (" + std::to_string(text.size()) +
           ")";
  }
  if (bytes == Bytes::kNoControl && HasControl(text)) return "must not contain control bytes";
  if (HasNul(text)) return "must not contain NUL bytes";
  return "";
}

Result<std::string> GetString(const json& doc, std::string_view field, size_t max_bytes,
                              Bytes bytes = Bytes::kNoControl) {
  const json& v = doc.at(std::string(field));
  if (!v.is_string()) return FieldError(field, "must be a string");
  std::string text = v.get<std::string>();
  if (std::string problem = TextProblem(text, max_bytes, bytes); !problem.empty()) {
    return FieldError(field, std::move(problem));
  }
  return text;
}

// A label map: {"key": "value", ...}, non-empty keys, string values, bounded.
Result<Labels> GetLabels(const json& doc, std::string_view field) {
  const json& v = doc.at(std::string(field));
  if (!v.is_object()) return FieldError(field, "must be an object of \"key\": \"value\" labels");
  if (v.size() > kMaxLabels) {
    return FieldError(field, "more than " + std::to_string(kMaxLabels) + " labels");
  }
  Labels labels;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it.key().empty()) return FieldError(field, "a label key must not be empty");
    if (std::string problem = TextProblem(it.key(), kMaxLabelBytes, Bytes::kNoControl);
        !problem.empty()) {
      return FieldError(field, "label key " + Echo(it.key()) + ": " + problem);
    }
    const std::string where = std::string(field) + "." + Escaped(it.key(), 64);
    if (!it.value().is_string()) return FieldError(where, "must be a string");
    std::string value = it.value().get<std::string>();
    if (std::string problem = TextProblem(value, kMaxLabelBytes, Bytes::kNoControl);
        !problem.empty()) {
      return FieldError(where, problem);
    }
    labels.emplace(it.key(), std::move(value));
  }
  return labels;
}

Result<int64_t> GetInt(const json& doc, std::string_view field, int64_t min, int64_t max) {
  const json& v = doc.at(std::string(field));
  int64_t value = 0;
  // nlohmann keeps integers above INT64_MAX as number_unsigned, which is_number_integer() also
  // matches: test it first, or get<int64_t>() wraps them (2^64 - 1 read as -1).
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(max)) {
      return FieldError(field,
                        "must be at most " + std::to_string(max) + ", got " + std::to_string(u));
    }
    value = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    value = v.get<int64_t>();
  } else if (v.is_number_float() && std::isfinite(v.get<double>()) &&
             v.get<double>() == std::floor(v.get<double>()) && std::abs(v.get<double>()) < 9e15) {
    value = static_cast<int64_t>(v.get<double>());
  } else {
    return FieldError(field, "must be an integer");
  }
  if (value < min) {
    return FieldError(field,
                      "must be at least " + std::to_string(min) + ", got " + std::to_string(value));
  }
  if (value > max) {
    return FieldError(field,
                      "must be at most " + std::to_string(max) + ", got " + std::to_string(value));
  }
  return value;
}

// A positive number of seconds, 1 microsecond (the scheduler's resolution) to 1e9 s, as the
// Duration it rounds to.
Result<Duration> GetPositiveSeconds(const json& doc, std::string_view field) {
  const json& v = doc.at(std::string(field));
  if (!v.is_number()) return FieldError(field, "must be a number of seconds");
  const double s = v.get<double>();
  if (!std::isfinite(s) || s <= 0) return FieldError(field, "must be positive");
  if (s > 1e9) return FieldError(field, "must be at most 1e9 seconds");
  const Duration d = Seconds(s);
  if (d < Duration(1)) return FieldError(field, "must be at least 0.000001 s (one microsecond)");
  return d;
}

bool ValidEnvName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

constexpr std::array<std::string_view, 26> kKnownFields = {"name",
                                                           "user",
                                                           "queue",
                                                           "model",
                                                           "batch_size",
                                                           "command",
                                                           "script",
                                                           "workdir",
                                                           "env",
                                                           "gpus",
                                                           "gpu_type",
                                                           "memory_mib",
                                                           "priority",
                                                           "deadline",
                                                           "qos",
                                                           "max_run_time_s",
                                                           "runtime_estimate_s",
                                                           "framework",
                                                           "iterations",
                                                           "selector",
                                                           "prefer",
                                                           "kind",
                                                           "service_load",
                                                           "idempotency_key",
                                                           "cpus",
                                                           "host_memory_mib"};

std::string OutOfRange(std::string_view text) {
  return Echo(text) + " is outside 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999Z";
}

// The body's JSON with every object's keys checked for duplicates and nesting bounded: the
// parser alone lets the last of two equal keys win, silently.
Result<json> ParseStrictJson(std::string_view body) {
  struct Frame {
    bool object = false;
    std::set<std::string> keys;
    std::string key;  // the last key read in this object
  };
  std::vector<Frame> frames;
  std::string problem;
  const auto path = [&frames](const std::string& last) {
    std::string out;
    for (size_t i = 0; i + 1 < frames.size(); ++i) {
      if (frames[i].object) out += Escaped(frames[i].key, 64) + ".";
    }
    return out + Escaped(last, 64);
  };
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event,
                                            json& parsed) -> bool {
    if (!problem.empty()) return false;  // keep nothing more: the body is refused anyway
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) {
          problem = "body: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels";
          return false;
        }
        frames.push_back({event == json::parse_event_t::object_start, {}, {}});
        return true;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!frames.empty()) frames.pop_back();
        return true;
      case json::parse_event_t::key: {
        Frame& frame = frames.back();
        frame.key = parsed.get<std::string>();
        if (!frame.keys.insert(frame.key).second) problem = path(frame.key) + ": duplicate key";
        return true;
      }
      case json::parse_event_t::value:
        return true;
    }
    return true;
  };
  json doc;
  try {
    doc = json::parse(body.begin(), body.end(), check);
  } catch (const json::exception& e) {
    // Its message quotes what the parser last read, which may be invalid UTF-8.
    return InvalidArgument("body: malformed JSON: " + Escaped(e.what(), 256));
  }
  if (!problem.empty()) return InvalidArgument(problem);
  return doc;
}

bool ParseDigits(std::string_view text, size_t pos, size_t n, int& out) {
  if (pos + n > text.size()) return false;
  out = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return false;
    out = out * 10 + (text[i] - '0');
  }
  return true;
}

}  // namespace

std::string Escaped(std::string_view text, size_t max_bytes) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", c);
      out += hex;
    }
  }
  return out;
}

std::string_view FrameworkName(Framework framework) {
  return kFrameworkNames[static_cast<size_t>(framework)];
}

Result<Framework> ParseFramework(std::string_view name) {
  for (size_t i = 0; i < kFrameworkNames.size(); ++i) {
    if (kFrameworkNames[i] == name) return static_cast<Framework>(i);
  }
  return FieldError("framework", "unknown framework " + Echo(name) +
                                     " (want custom, pytorch, tensorflow, mpi or horovod)");
}

std::string FormatTime(Timestamp t) {
  const int64_t us = t.time_since_epoch().count();
  int64_t secs = us / 1000000;
  int64_t frac = us % 1000000;
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  const std::time_t tt = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  if (frac != 0) {
    char f[16];
    std::snprintf(f, sizeof(f), ".%06lld", static_cast<long long>(frac));
    out += f;
  }
  return out + "Z";
}

Result<Timestamp> ParseTime(std::string_view text) {
  // Plain number: seconds since the epoch.
  double seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc() && end == text.data() + text.size() && std::isfinite(seconds)) {
    // Compared as seconds first: AtSeconds of a huge number overflows.
    if (seconds < 0 || seconds > ToSeconds(kMaxRequestTime) + 1) {
      return InvalidArgument(OutOfRange(text));
    }
    const Timestamp t = AtSeconds(seconds);
    if (t < kMinRequestTime || t > kMaxRequestTime) return InvalidArgument(OutOfRange(text));
    return t;
  }
  int year, month, day, hour, minute, second;
  if (text.size() < 20 || !ParseDigits(text, 0, 4, year) || text[4] != '-' ||
      !ParseDigits(text, 5, 2, month) || text[7] != '-' || !ParseDigits(text, 8, 2, day) ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || !ParseDigits(text, 11, 2, hour) ||
      text[13] != ':' || !ParseDigits(text, 14, 2, minute) || text[16] != ':' ||
      !ParseDigits(text, 17, 2, second) || month < 1 || month > 12 || day < 1 || day > 31 ||
      hour > 23 || minute > 59 || second > 60) {
    return InvalidArgument(Echo(text) +
                           " is not an RFC 3339 time (2024-05-01T12:00:00Z) or Unix seconds");
  }
  if (day > DaysInMonth(year, month)) {
    return InvalidArgument(Echo(text) + " is not a date: month " + std::to_string(month) + " of " +
                           std::to_string(year) + " has " +
                           std::to_string(DaysInMonth(year, month)) + " days");
  }
  // RFC 3339 allows a leap second only as the last second of a minute ending an hour; Unix time
  // has none, so it reads as the next second.
  if (second == 60 && (minute != 59 || hour != 23)) {
    return InvalidArgument(Echo(text) + " has second 60 outside 23:59:60 (a leap second)");
  }
  size_t pos = 19;
  int64_t micros = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const size_t first_digit = pos;
    int64_t scale = 100000;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      micros += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == first_digit) return InvalidArgument(Echo(text) + " has no digits after '.'");
  }
  int64_t offset_s = 0;
  if (pos < text.size() && (text[pos] == 'Z' || text[pos] == 'z')) {
    ++pos;
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    int oh, om;
    if (!ParseDigits(text, pos + 1, 2, oh) || pos + 3 >= text.size() || text[pos + 3] != ':' ||
        !ParseDigits(text, pos + 4, 2, om) || oh > 23 || om > 59) {
      return InvalidArgument(Echo(text) + " has a malformed UTC offset");
    }
    offset_s = (oh * 3600 + om * 60) * (text[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return InvalidArgument(Echo(text) + " lacks a time zone (Z or +HH:MM)");
  }
  if (pos != text.size()) {
    return InvalidArgument(Echo(text) + " has trailing characters");
  }
  const int64_t days = DaysFromCivil(year, month, day);
  // Four-digit years keep this far inside int64 microseconds.
  const int64_t secs = days * 86400 + hour * 3600 + minute * 60 + second - offset_s;
  const Timestamp t(Duration(secs * 1000000 + micros));
  if (t < kMinRequestTime || t > kMaxRequestTime) return InvalidArgument(OutOfRange(text));
  return t;
}

Result<JobRequest> ParseJobRequest(std::string_view body, std::string_view default_user,
                                   const RequestLimits& limits) {
  DS_ASSIGN_OR_RETURN(const json doc, ParseStrictJson(body));
  return ParseJobRequestJson(doc, default_user, limits);
}

namespace {

// Each Read* below reads one group of fields, those the document holds, into the request and
// returns the error of the first field that is wrong. ParseFields reads the groups in the order
// they stand here, fields within a group in their order: that order decides which error a body
// with several gets.

Status CheckKnownFields(const json& doc) {
  if (!doc.is_object()) return InvalidArgument("body: must be a JSON object");
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (std::string_view k : kKnownFields) known = known || k == key;
    if (!known) return FieldError(Escaped(key, 64), "unknown field");
  }
  return Status::Ok();
}

// What the job is called, whose it is, where it queues and what it trains: name, user
// (`default_user` when absent), queue, model, batch_size.
Status ReadIdentity(const json& doc, std::string_view default_user, JobSpec& spec) {
  spec.user = std::string(default_user);
  if (doc.contains("name")) {
    DS_ASSIGN_OR_RETURN(spec.name, GetString(doc, "name", kMaxNameBytes));
  }
  if (doc.contains("user")) {
    DS_ASSIGN_OR_RETURN(spec.user, GetString(doc, "user", kMaxIdentBytes));
  }
  // Checked after the default too: what is stored must parse again.
  if (spec.user.empty()) return FieldError("user", "must not be empty");
  if (std::string problem = TextProblem(spec.user, kMaxIdentBytes, Bytes::kNoControl);
      !problem.empty()) {
    return FieldError("user", std::move(problem));
  }
  if (doc.contains("queue")) {
    DS_ASSIGN_OR_RETURN(spec.queue, GetString(doc, "queue", kMaxIdentBytes));
  }
  if (doc.contains("model")) {
    DS_ASSIGN_OR_RETURN(spec.model, GetString(doc, "model", kMaxNameBytes));
  }
  if (doc.contains("batch_size")) {
    DS_ASSIGN_OR_RETURN(int64_t b, GetInt(doc, "batch_size", 0, 1 << 30));
    spec.batch_size = static_cast<int>(b);
  }
  return Status::Ok();
}

// The "command" argv array into `command`; returns the bytes it takes, each string with its NUL.
Result<size_t> GetArgv(const json& doc, std::vector<std::string>& command) {
  const json& argv = doc.at("command");
  if (!argv.is_array()) return FieldError("command", "must be an array of strings");
  if (argv.empty()) return FieldError("command", "must not be empty");
  if (argv.size() > kMaxArgs) {
    return FieldError("command", "more than " + std::to_string(kMaxArgs) + " arguments");
  }
  size_t bytes = 0;
  for (const json& arg : argv) {
    if (!arg.is_string()) return FieldError("command", "must be an array of strings");
    command.push_back(arg.get<std::string>());
    if (HasNul(command.back())) return FieldError("command", "must not contain NUL bytes");
    bytes += command.back().size() + 1;
  }
  if (command[0].empty()) return FieldError("command", "the program name is empty");
  return bytes;
}

// The "env" object into `env`; returns the bytes it takes, each "NAME=value" with its NUL.
Result<size_t> GetEnv(const json& doc, std::map<std::string, std::string>& env) {
  const json& vars = doc.at("env");
  if (!vars.is_object()) return FieldError("env", "must be an object of strings");
  if (vars.size() > kMaxEnvVars) {
    return FieldError("env", "more than " + std::to_string(kMaxEnvVars) + " variables");
  }
  size_t bytes = 0;
  for (const auto& [key, value] : vars.items()) {
    if (!ValidEnvName(key) || key.size() > kMaxIdentBytes) {
      return FieldError("env", "invalid variable name " + Echo(key));
    }
    if (!value.is_string()) return FieldError("env", "value of " + key + " must be a string");
    std::string v = value.get<std::string>();
    if (HasNul(v)) return FieldError("env", "value of " + key + " contains a NUL byte");
    bytes += key.size() + v.size() + 2;
    env.emplace(key, std::move(v));
  }
  return bytes;
}

// What runs: exactly one of command (an argv array) and script (run by /bin/sh -c), workdir,
// env; the command and the env together within limits.max_command_bytes.
Status ReadCommand(const json& doc, const RequestLimits& limits, JobRequest& r) {
  if (doc.contains("command") == doc.contains("script")) {
    return FieldError("command", doc.contains("command")
                                     ? "give either command or script, not both"
                                     : "is required (an argv array, or give a script)");
  }
  size_t command_bytes = 0;
  if (doc.contains("command")) {
    DS_ASSIGN_OR_RETURN(command_bytes, GetArgv(doc, r.command));
  } else {
    // Its size counts against max_command_bytes with the env's, below.
    DS_ASSIGN_OR_RETURN(
        std::string script,
        GetString(doc, "script", std::numeric_limits<size_t>::max(), Bytes::kNoNul));
    if (script.find_first_not_of(" \t\r\n") == std::string::npos) {
      return FieldError("script", "must not be empty");
    }
    command_bytes = script.size() + 1;
    r.command = {"/bin/sh", "-c", std::move(script)};
  }
  if (doc.contains("workdir")) {
    DS_ASSIGN_OR_RETURN(r.workdir, GetString(doc, "workdir", kMaxWorkdirBytes));
    if (!r.workdir.empty() && r.workdir[0] != '/') {
      return FieldError("workdir", "must be an absolute path");
    }
  }
  if (doc.contains("env")) {
    DS_ASSIGN_OR_RETURN(const size_t env_bytes, GetEnv(doc, r.env));
    command_bytes += env_bytes;
  }
  if (command_bytes > limits.max_command_bytes) {
    return FieldError("command", "command and env together exceed " +
                                     std::to_string(limits.max_command_bytes) + " bytes");
  }
  return Status::Ok();
}

// What the job needs: gpus, gpu_type, selector, prefer, memory_mib, cpus, host_memory_mib
// (gpus 0, a CPU job, only with cpus).
Status ReadResources(const json& doc, JobSpec& spec) {
  if (doc.contains("gpus")) {
    DS_ASSIGN_OR_RETURN(int64_t gpus, GetInt(doc, "gpus", 0, kMaxGpusPerNode * 1024));
    spec.num_gpus = static_cast<int>(gpus);
  }
  if (doc.contains("gpu_type")) {
    DS_ASSIGN_OR_RETURN(spec.gpu_type, GetString(doc, "gpu_type", kMaxIdentBytes));
  }
  if (doc.contains("selector")) {
    DS_ASSIGN_OR_RETURN(spec.selector, GetLabels(doc, "selector"));
  }
  if (doc.contains("prefer")) {
    DS_ASSIGN_OR_RETURN(spec.preferences, GetLabels(doc, "prefer"));
  }
  if (doc.contains("memory_mib")) {
    DS_ASSIGN_OR_RETURN(spec.memory_mib, GetInt(doc, "memory_mib", 0, int64_t{1} << 40));
  }
  if (doc.contains("cpus")) {
    DS_ASSIGN_OR_RETURN(int64_t cpus, GetInt(doc, "cpus", 0, kMaxRequestCpus));
    spec.cpus = static_cast<int>(cpus);
  }
  if (doc.contains("host_memory_mib")) {
    DS_ASSIGN_OR_RETURN(spec.host_memory_mib,
                        GetInt(doc, "host_memory_mib", 0, kMaxRequestHostMemoryMib));
  }
  if (spec.num_gpus == 0 && spec.cpus == 0) {
    return FieldError("gpus", "0 (a CPU job) needs cpus of at least 1");
  }
  return Status::Ok();
}

// The "deadline": Unix seconds (a number) or an RFC 3339 time (a string), in ParseTime's range.
Result<Timestamp> GetDeadline(const json& doc) {
  const json& d = doc.at("deadline");
  if (!d.is_number() && !d.is_string()) {
    return FieldError("deadline", "must be Unix seconds or an RFC 3339 time");
  }
  std::string text;
  if (d.is_number()) {
    // As text, so the range check is ParseTime's.
    const double s = d.get<double>();
    if (!std::isfinite(s))
      return FieldError("deadline", "must be Unix seconds or an RFC 3339 time");
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17g", s);
    text = buf;
  } else {
    text = d.get<std::string>();
  }
  Result<Timestamp> t = ParseTime(text);
  if (!t.ok()) return FieldError("deadline", t.status().message());
  return t;
}

// How urgent the job is and how long it takes: priority, deadline, qos, max_run_time_s,
// runtime_estimate_s.
Status ReadTerms(const json& doc, JobRequest& r) {
  JobSpec& spec = r.spec;
  if (doc.contains("priority")) {
    DS_ASSIGN_OR_RETURN(int64_t p, GetInt(doc, "priority", -1000000, 1000000));
    spec.priority = static_cast<int>(p);
  }
  if (doc.contains("deadline")) {
    DS_ASSIGN_OR_RETURN(spec.deadline, GetDeadline(doc));
  }
  if (doc.contains("qos")) {
    DS_ASSIGN_OR_RETURN(std::string qos, GetString(doc, "qos", kMaxIdentBytes));
    Result<QosClass> q = ParseQosClass(qos);
    if (!q.ok()) return FieldError("qos", Escaped(q.status().message(), 256));
    spec.qos = *q;
  }
  if (doc.contains("max_run_time_s")) {
    DS_ASSIGN_OR_RETURN(r.max_run_time, GetPositiveSeconds(doc, "max_run_time_s"));
  }
  if (doc.contains("runtime_estimate_s")) {
    DS_ASSIGN_OR_RETURN(spec.runtime_estimate, GetPositiveSeconds(doc, "runtime_estimate_s"));
  }
  return Status::Ok();
}

// How the job runs: framework, kind, and a service's service_load (checked against gpus, so read
// after the resources).
Status ReadKind(const json& doc, JobRequest& r) {
  JobSpec& spec = r.spec;
  if (doc.contains("framework")) {
    DS_ASSIGN_OR_RETURN(std::string name, GetString(doc, "framework", kMaxIdentBytes));
    DS_ASSIGN_OR_RETURN(r.framework, ParseFramework(name));
  }
  if (doc.contains("kind")) {
    DS_ASSIGN_OR_RETURN(std::string kind, GetString(doc, "kind", kMaxIdentBytes));
    if (kind != "training" && kind != "service") {
      return FieldError("kind", "must be training or service, got " + Echo(kind));
    }
    if (kind == "service" && spec.num_gpus == 0) {
      return FieldError("kind", "a service needs at least one GPU");
    }
    if (kind == "service") spec.service = ServiceLoad{};
  }
  if (doc.contains("service_load")) {
    if (!spec.service) return FieldError("service_load", "is for jobs of kind service");
    DS_ASSIGN_OR_RETURN(std::string load, GetString(doc, "service_load", kMaxServiceLoadBytes));
    Result<ServiceLoad> parsed = ParseServiceLoad(load);
    if (!parsed.ok()) {
      return FieldError("service_load", Escaped(parsed.status().message(), 256));
    }
    const Status fits = ValidateServiceLoad(*parsed, spec.num_gpus);
    if (!fits.ok()) return FieldError("service_load", fits.message());
    spec.service = *std::move(parsed);
  }
  return Status::Ok();
}

// What progress counts against and what makes a retry the same submission: iterations,
// idempotency_key.
Status ReadProgressAndKey(const json& doc, JobRequest& r) {
  if (doc.contains("iterations")) {
    const json& v = doc.at("iterations");
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0) {
      return FieldError("iterations", "must be a positive number");
    }
    r.total_iterations = v.get<double>();
  }
  if (doc.contains("idempotency_key")) {
    const json& v = doc.at("idempotency_key");
    if (!v.is_string()) return FieldError("idempotency_key", "must be a string");
    r.idempotency_key = v.get<std::string>();
    DS_RETURN_IF_ERROR(ValidateIdempotencyKey(r.idempotency_key, "idempotency_key"));
  }
  return Status::Ok();
}

Result<JobRequest> ParseFields(const json& doc, std::string_view default_user,
                               const RequestLimits& limits) {
  DS_RETURN_IF_ERROR(CheckKnownFields(doc));
  JobRequest r;
  DS_RETURN_IF_ERROR(ReadIdentity(doc, default_user, r.spec));
  DS_RETURN_IF_ERROR(ReadCommand(doc, limits, r));
  DS_RETURN_IF_ERROR(ReadResources(doc, r.spec));
  DS_RETURN_IF_ERROR(ReadTerms(doc, r));
  DS_RETURN_IF_ERROR(ReadKind(doc, r));
  DS_RETURN_IF_ERROR(ReadProgressAndKey(doc, r));
  // The scheduler's notion of work: the run-time estimate (or limit) at 1 iteration/s.
  JobSpec& spec = r.spec;
  const Duration estimate =
      spec.runtime_estimate.value_or(r.max_run_time.value_or(kDefaultRuntimeEstimate));
  spec.iterations = std::max(ToSeconds(estimate), 1e-6);
  spec.ref_iters_per_s = 1.0;
  if (!spec.runtime_estimate && r.max_run_time) spec.runtime_estimate = r.max_run_time;
  DS_RETURN_IF_ERROR(ValidateJobSpec(spec));
  return r;
}

}  // namespace

Result<JobRequest> ParseJobRequestJson(const json& doc, std::string_view default_user,
                                       const RequestLimits& limits) {
  Result<JobRequest> r = ParseFields(doc, default_user, limits);
  // A document built in code (not parsed) may hold strings of any bytes, and messages quote
  // them: escaped once more here, so no error ever carries invalid UTF-8.
  if (!r.ok()) return Status(r.status().code(), Escaped(r.status().message(), 1024));
  return r;
}

Result<int64_t> ParseMemoryMib(std::string_view text) {
  const std::string quoted = Echo(text);
  int shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'm':
      case 'M':
        text.remove_suffix(1);
        break;
      case 'g':
      case 'G':
        shift = 10;
        text.remove_suffix(1);
        break;
      case 't':
      case 'T':
        shift = 20;
        text.remove_suffix(1);
        break;
      default:
        break;
    }
  }
  int64_t value = -1;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || p != text.data() + text.size() || value < 0) {
    return InvalidArgument(quoted + " is not a memory size (512m, 64g, 1t; bare numbers are MiB)");
  }
  if (value > (kMaxRequestHostMemoryMib >> shift)) {
    return InvalidArgument(quoted + " is more than " +
                           std::to_string(kMaxRequestHostMemoryMib >> 20) + " TiB");
  }
  return value << shift;
}

Status ValidateIdempotencyKey(std::string_view key, std::string_view field) {
  if (key.empty()) return FieldError(field, "must not be empty");
  if (key.size() > kMaxIdempotencyKeyBytes) {
    return FieldError(field, "longer than " + std::to_string(kMaxIdempotencyKeyBytes) + " bytes");
  }
  for (char ch : key) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f) return FieldError(field, "must be printable ASCII");
  }
  return Status::Ok();
}

namespace {

// The most of a host resource (`of` reads it from a node; 0 = unstated, no limit) a job can
// get: on one node, or summed over the cluster. nullopt: unlimited.
std::optional<int64_t> MostHost(const Cluster& cluster, bool multi_node_gangs,
                                int64_t (*of)(const NodeSpec&)) {
  int64_t most = 0;
  for (const NodeSpec& node : cluster.nodes()) {
    if (of(node) == 0) return std::nullopt;
    most = multi_node_gangs ? most + of(node) : std::max(most, of(node));
  }
  return most;
}

Status CheckHostFits(const JobSpec& spec, const Cluster& cluster, bool multi_node_gangs) {
  const HostRequest host = EffectiveHostRequest(spec, cluster.host_defaults());
  const std::string where = multi_node_gangs ? "; the cluster has " : "; the largest node has ";
  const std::optional<int64_t> cpus =
      MostHost(cluster, multi_node_gangs, [](const NodeSpec& n) { return int64_t{n.cpus}; });
  if (cpus && host.cpus > *cpus) {
    return FieldError("cpus", "asks for " + std::to_string(host.cpus) + " CPUs" +
                                  (spec.cpus == 0 ? " (the cluster's default per GPU)" : "") +
                                  where + std::to_string(*cpus));
  }
  const std::optional<int64_t> memory =
      MostHost(cluster, multi_node_gangs, [](const NodeSpec& n) { return n.memory_mib; });
  if (memory && host.memory_mib > *memory) {
    return FieldError("host_memory_mib",
                      "asks for " + std::to_string(host.memory_mib) + " MiB" +
                          (spec.host_memory_mib == 0 ? " (the cluster's default per GPU)" : "") +
                          where + std::to_string(*memory) + " MiB");
  }
  return Status::Ok();
}

}  // namespace

Status CheckFitsCluster(const JobRequest& request, const Cluster& cluster, bool multi_node_gangs) {
  const JobSpec& spec = request.spec;
  if (!spec.selector.empty()) {
    const bool any = std::ranges::any_of(cluster.nodes(), [&](const NodeSpec& node) {
      return MatchesSelector(node.labels, spec.selector);
    });
    if (!any) {
      return FieldError("selector", "no node is labelled " + FormatLabels(spec.selector));
    }
  }
  DS_RETURN_IF_ERROR(CheckHostFits(spec, cluster, multi_node_gangs));
  // The most GPUs of one type a gang can get: on one node, or across the cluster.
  const auto most_of = [&](GpuTypeId type) {
    return multi_node_gangs ? cluster.gpus_of_type(type) : cluster.max_gpus_of_type_per_node(type);
  };
  const std::string where = multi_node_gangs ? "the cluster has " : "the largest node has ";
  if (!spec.gpu_type.empty()) {
    const GpuTypeId type = cluster.FindGpuType(spec.gpu_type);
    if (!type.valid() || cluster.gpus_of_type(type) == 0) {
      std::string have;
      for (int t = 0; t < cluster.num_gpu_types(); ++t) {
        if (cluster.gpus_of_type(GpuTypeId(t)) == 0) continue;
        have += (have.empty() ? "" : ", ") + cluster.gpu_type_name(GpuTypeId(t));
      }
      return FieldError("gpu_type", "unknown GPU type '" + spec.gpu_type + "' (this cluster has " +
                                        (have.empty() ? "none" : have) + ")");
    }
    const int most = most_of(type);
    if (spec.num_gpus > most) {
      return FieldError("gpus", "asks for " + std::to_string(spec.num_gpus) + " " + spec.gpu_type +
                                    " GPUs; " + where + std::to_string(most));
    }
    return Status::Ok();
  }
  int most = 0;
  for (int t = 0; t < cluster.num_gpu_types(); ++t) most = std::max(most, most_of(GpuTypeId(t)));
  if (spec.num_gpus > most) {
    return FieldError("gpus", "asks for " + std::to_string(spec.num_gpus) + " GPUs; " + where +
                                  std::to_string(most) + " of one type");
  }
  return Status::Ok();
}

json JobRequestToJson(const JobRequest& r) {
  const JobSpec& spec = r.spec;
  json doc = json::object();
  doc["name"] = spec.name;
  doc["user"] = spec.user;
  if (!spec.queue.empty()) doc["queue"] = spec.queue;
  if (!spec.model.empty()) doc["model"] = spec.model;
  if (spec.batch_size != 0) doc["batch_size"] = spec.batch_size;
  doc["command"] = r.command;
  if (!r.workdir.empty()) doc["workdir"] = r.workdir;
  if (!r.env.empty()) doc["env"] = r.env;
  doc["gpus"] = spec.num_gpus;
  if (!spec.gpu_type.empty()) doc["gpu_type"] = spec.gpu_type;
  if (!spec.selector.empty()) doc["selector"] = spec.selector;
  if (!spec.preferences.empty()) doc["prefer"] = spec.preferences;
  if (spec.memory_mib != 0) doc["memory_mib"] = spec.memory_mib;
  if (spec.cpus != 0) doc["cpus"] = spec.cpus;
  if (spec.host_memory_mib != 0) doc["host_memory_mib"] = spec.host_memory_mib;
  doc["priority"] = spec.priority;
  if (spec.deadline) doc["deadline"] = FormatTime(*spec.deadline);
  doc["qos"] = std::string(QosClassName(spec.qos));
  if (r.max_run_time) doc["max_run_time_s"] = ToSeconds(*r.max_run_time);
  if (spec.service) {
    doc["kind"] = "service";
    if (!spec.service->steps.empty()) doc["service_load"] = FormatServiceLoad(*spec.service);
  }
  if (spec.runtime_estimate) doc["runtime_estimate_s"] = ToSeconds(*spec.runtime_estimate);
  doc["framework"] = std::string(FrameworkName(r.framework));
  if (r.total_iterations > 0) doc["iterations"] = r.total_iterations;
  if (!r.idempotency_key.empty()) doc["idempotency_key"] = r.idempotency_key;
  return doc;
}

}  // namespace dlsched::daemon
