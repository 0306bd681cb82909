#include "cli/client_commands.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>
#include <tuple>
#include <variant>

#include "cli/client_http.h"
#include "cli/commands.h"
#include "cli/flag_values.h"
#include "cli/terminal_text.h"
#include "daemon/job/job_request.h"
#include "dlsched/common/text.h"

namespace dlsched::cli {
namespace {

using nlohmann::json;

// A command's failure: what to print and the exit code.
struct Failure {
  int code;
  std::string message;
};

Failure FromStatus(const Status& status) {
  return {status.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitRuntimeError,
          status.message()};
}

// The JSON body of a response, or the failure it reports.
std::variant<json, Failure> Decode(const Result<HttpResponse>& res, std::initializer_list<int> ok) {
  if (!res.ok()) return FromStatus(res.status());
  json body;
  try {
    body = json::parse(res->body);
  } catch (const json::exception& e) {
    return Failure{kExitRuntimeError,
                   "the server sent a malformed reply (HTTP " + std::to_string(res->status) + ")"};
  }
  for (int code : ok) {
    if (res->status == code) return body;
  }
  std::string message = "HTTP " + std::to_string(res->status);
  if (body.is_object() && body.contains("error") && body["error"].is_object()) {
    message = body["error"].value("message", message);
  }
  return Failure{res->status == 400 ? kExitUsage : kExitRuntimeError, message};
}

std::string Str(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return "-";
  if (j[key].is_string()) return j[key].get<std::string>();
  return j[key].dump();
}

std::string Truncate(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n - 1) + "~";
  return s;
}

// A plain table: columns padded to their widest cell. Cells are the server's text: control
// characters are escaped.
void PrintTable(std::ostream& out, std::vector<std::vector<std::string>> rows) {
  if (rows.empty()) return;
  for (auto& row : rows) {
    for (std::string& cell : row) cell = EscapeControl(cell);
  }
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] - row[c].size() + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
}

void AddCommon(CLI::App& cmd, ClientFlags& f) {
  cmd.add_option("--server", f.server,
                 "Daemon URL (default: $DLSCHED_SERVER, else http://127.0.0.1:8642).");
  cmd.add_option("--token", f.token, "Bearer token (default: $DLSCHED_TOKEN).");
  cmd.add_flag("--json", f.json, "Print the API's JSON instead of a table.");
}

std::string Seconds3(double s) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(s < 10 ? 1 : 0) << s << "s";
  return out.str();
}

// KEY=VALUE words into a JSON object of strings; `flag` names the flag in errors.
std::optional<json> KeyValues(const std::vector<std::string>& words, const std::string& flag,
                              std::ostream& err) {
  json object = json::object();
  for (const std::string& kv : words) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      err << "dlsched submit: " << flag << " wants KEY=VALUE, got '" << kv << "'\n";
      return std::nullopt;
    }
    object[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return object;
}

bool IsFinalState(const std::string& state) {
  return state == "succeeded" || state == "failed" || state == "killed" || state == "rejected";
}

// `submit --wait`: polls the job until it ends; the job's exit code (0 when it succeeded; its
// process's code when it has one; else 1).
int WaitForJob(RestClient& client, int64_t id, std::ostream& err) {
  while (true) {
    auto decoded = Decode(client.Get("/v1/jobs/" + std::to_string(id) + "?explain=false"), {200});
    if (auto* failure = std::get_if<Failure>(&decoded)) {
      err << "dlsched submit: --wait: " << failure->message << "\n";
      return kExitRuntimeError;
    }
    const json& job = std::get<json>(decoded);
    const std::string state = Str(job, "state");
    if (IsFinalState(state)) {
      if (state == "succeeded") return kExitOk;
      err << "dlsched submit: job " << id << " " << state;
      if (const std::string reason = Str(job, "reason"); reason != "-") {
        err << ": " << EscapeControl(reason);
      }
      err << "\n";
      const int code = job.contains("exit_code") && job["exit_code"].is_number_integer()
                           ? job["exit_code"].get<int>()
                           : 0;
      return code > 0 && code < 256 ? code : kExitRuntimeError;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

int Submit(RestClient& client, const ClientFlags& f, std::ostream& out, std::ostream& err) {
  if (f.command.empty() == f.script_path.empty()) {
    err << "dlsched submit: give either a command (after --) or --script FILE\n";
    return kExitUsage;
  }
  json body = {{"gpus", f.gpus}};
  if (!f.command.empty()) body["command"] = f.command;
  if (!f.script_path.empty()) {
    std::ostringstream text;
    if (f.script_path == "-") {
      text << std::cin.rdbuf();
    } else {
      const FileText file = ReadFileText(f.script_path);
      if (file.fault != FileFault::kNone) {
        err << "dlsched submit: --script: cannot read " << f.script_path << "\n";
        return kExitUsage;
      }
      text << file.text;
    }
    body["script"] = text.str();
  }
  if (!f.name.empty()) body["name"] = f.name;
  if (!f.queue.empty()) body["queue"] = f.queue;
  if (!f.gpu_type.empty()) body["gpu_type"] = f.gpu_type;
  if (!f.framework.empty()) body["framework"] = f.framework;
  if (!f.qos.empty()) body["qos"] = f.qos;
  if (!f.kind.empty()) body["kind"] = f.kind;
  if (!f.service_load.empty()) body["service_load"] = f.service_load;
  if (!f.model.empty()) body["model"] = f.model;
  if (f.batch_size >= 0) body["batch_size"] = f.batch_size;
  if (f.memory_mib >= 0) body["memory_mib"] = f.memory_mib;
  if (f.cpus >= 0) body["cpus"] = f.cpus;
  if (!f.mem.empty()) {
    Result<int64_t> mib = daemon::ParseMemoryMib(f.mem);
    if (!mib.ok()) {
      err << "dlsched submit: --mem: " << mib.status().message() << "\n";
      return kExitUsage;
    }
    body["host_memory_mib"] = *mib;
  }
  if (f.iterations > 0) body["iterations"] = f.iterations;
  if (f.priority != 0) body["priority"] = f.priority;
  if (f.max_run_time_s > 0) body["max_run_time_s"] = f.max_run_time_s;
  if (f.runtime_estimate_s > 0) body["runtime_estimate_s"] = f.runtime_estimate_s;
  std::error_code ec;
  body["workdir"] = f.workdir.empty() ? std::filesystem::current_path(ec).string()
                                      : std::filesystem::absolute(f.workdir, ec).string();
  if (!f.deadline.empty()) {
    // A number with a unit is relative to now; a plain number is Unix seconds; anything else
    // goes to the server as an RFC 3339 time.
    const std::optional<double> seconds = ParseDurationSeconds(f.deadline);
    if (seconds && HasDurationUnit(f.deadline)) {
      const double now_s =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      body["deadline"] = now_s + *seconds;
    } else if (seconds) {
      body["deadline"] = *seconds;
    } else {
      body["deadline"] = f.deadline;
    }
  }
  for (const auto& [words, flag, key] :
       {std::tuple{&f.env, "--env", "env"}, std::tuple{&f.selector, "--selector", "selector"},
        std::tuple{&f.prefer, "--prefer", "prefer"}}) {
    if (words->empty()) continue;
    std::optional<json> object = KeyValues(*words, flag, err);
    if (!object) return kExitUsage;
    body[key] = *std::move(object);
  }
  // Without a token the server cannot tell who we are: say it.
  if (!f.user.empty()) {
    body["user"] = f.user;
  } else if (ClientToken(f.token).empty()) {
    if (const char* user = std::getenv("USER"); user && *user) body["user"] = user;
  }
  auto decoded = Decode(client.Post("/v1/jobs", body.dump()), {201});
  if (auto* failure = std::get_if<Failure>(&decoded)) {
    err << "dlsched submit: " << failure->message << "\n";
    return failure->code;
  }
  const json& job = std::get<json>(decoded);
  const int64_t id = job["id"].get<int64_t>();
  if (f.parsable) {
    out << id << "\n";
  } else if (f.json) {
    out << job.dump() << "\n";
  } else {
    out << "submitted job " << id << " (" << Str(job, "state") << ")\n";
  }
  out.flush();
  return f.wait ? WaitForJob(client, id, err) : kExitOk;
}

int Queue(RestClient& client, const ClientFlags& f, std::ostream& out, std::ostream& err) {
  auto jobs =
      Decode(client.Get("/v1/jobs?state=pending,queued,running,suspended&limit=100000"), {200});
  auto queue = Decode(client.Get("/v1/queue"), {200});
  for (auto* decoded : {&jobs, &queue}) {
    if (auto* failure = std::get_if<Failure>(decoded)) {
      err << "dlsched queue: " << failure->message << "\n";
      return failure->code;
    }
  }
  json list = std::get<json>(jobs)["jobs"];
  if (f.all) {
    auto recent = Decode(
        client.Get("/v1/jobs?state=succeeded,failed,killed,rejected&order=desc&limit=50"), {200});
    if (auto* failure = std::get_if<Failure>(&recent)) {
      err << "dlsched queue: " << failure->message << "\n";
      return failure->code;
    }
    for (const json& j : std::get<json>(recent)["jobs"]) list.push_back(j);
  }
  std::map<int64_t, const json*> waiting;
  for (const json& entry : std::get<json>(queue)["jobs"]) waiting[entry["id"]] = &entry;
  for (json& job : list) {
    auto it = waiting.find(job["id"].get<int64_t>());
    if (it != waiting.end()) {
      job["position"] = (*it->second)["position"];
      job["pending_reason"] = (*it->second)["reason"];
      job["pending_cause"] = (*it->second)["cause"];
    }
  }
  if (f.json) {
    out << json{{"jobs", list}}.dump() << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "NAME", "USER", "STATE", "GPUS", "POS", "TIME", "CAUSE", "WHERE / WHY"}};
  for (const json& job : list) {
    std::string where = Str(job, "placement");
    if (job.contains("pending_reason")) where = Str(job, "pending_reason");
    if (job["state"] == "rejected" || job["state"] == "failed" || job["state"] == "killed") {
      where = Str(job, "reason");
    }
    if (job.contains("stopping") && !job["stopping"].is_null()) {
      where += " (stopping: " + Str(job, "stopping") + ")";
    }
    rows.push_back(
        {Str(job, "id"), Truncate(Str(job, "name"), 20), Str(job, "user"), Str(job, "state"),
         std::to_string(job.value("gpus", 0)) +
             (job.value("gpu_type", "").empty() ? "" : "x" + Str(job, "gpu_type")),
         job.contains("position") ? Str(job, "position") : "-",
         Seconds3(job.value("run_time_s", 0.0)),
         job.contains("pending_cause") ? Str(job, "pending_cause") : "-", Truncate(where, 70)});
  }
  PrintTable(out, rows);
  const json& q = std::get<json>(queue);
  out << q.value("running", 0) << " running, " << q.value("length", 0) << " waiting, "
      << q.value("pending", 0) << " pending admission (policy " << EscapeControl(Str(q, "policy"))
      << ")\n";
  return kExitOk;
}

int Show(RestClient& client, const ClientFlags& f, std::ostream& out, std::ostream& err) {
  auto decoded = Decode(client.Get("/v1/jobs/" + std::to_string(f.id)), {200});
  if (auto* failure = std::get_if<Failure>(&decoded)) {
    err << "dlsched show: " << failure->message << "\n";
    return failure->code;
  }
  const json& job = std::get<json>(decoded);
  if (f.json) {
    out << job.dump() << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  const json& spec = job.contains("spec") && job["spec"].is_object() ? job["spec"] : json::object();
  const auto add = [&rows](const json& from, const char* key) {
    if (!from.contains(key) || from[key].is_null()) return;
    if (from[key].is_string() && from[key].get<std::string>().empty()) return;
    if (from[key].is_object() && from[key].empty()) return;
    rows.push_back({std::string(key) + ":", Str(from, key)});
  };
  for (const char* key : {"id", "name", "user", "state", "kind", "gpus", "gpu_type"}) {
    add(job, key);
  }
  // What the submitter asked for beyond the basics (absent from the spec when not given).
  for (const char* key :
       {"queue", "selector", "prefer", "memory_mib", "cpus", "host_memory_mib", "service_load",
        "model", "batch_size", "iterations", "max_run_time_s", "runtime_estimate_s"}) {
    add(spec, key);
  }
  for (const char* key :
       {"framework", "priority", "qos", "deadline", "submit_time", "first_start", "finish_time",
        "run_time_s", "attained_gpu_s", "preemptions", "placement", "pid", "stopping", "exit_code",
        "reason", "pending_reason", "pending_cause"}) {
    add(job, key);
  }
  if (job.contains("progress") && job["progress"].is_object()) {
    const json& p = job["progress"];
    std::string text = Str(p, "iterations_done");
    if (!p["iterations_total"].is_null()) text += " / " + Str(p, "iterations_total");
    if (!p["eta"].is_null()) text += ", eta " + Str(p, "eta");
    rows.push_back({"progress:", text});
  }
  rows.push_back({"command:", job["spec"]["command"].dump()});
  PrintTable(out, rows);
  return kExitOk;
}

int Cancel(RestClient& client, const ClientFlags& f, std::ostream& out, std::ostream& err) {
  auto decoded = Decode(client.Delete("/v1/jobs/" + std::to_string(f.id)), {200, 202});
  if (auto* failure = std::get_if<Failure>(&decoded)) {
    err << "dlsched cancel: " << failure->message << "\n";
    return failure->code;
  }
  const json& job = std::get<json>(decoded);
  if (f.json) {
    out << job.dump() << "\n";
  } else if (job["state"] == "running") {
    out << "cancelling job " << f.id << " (it is being stopped)\n";
  } else {
    out << "cancelled job " << f.id << "\n";
  }
  return kExitOk;
}

int Nodes(RestClient& client, const ClientFlags& f, std::ostream& out, std::ostream& err) {
  auto decoded = Decode(client.Get("/v1/nodes"), {200});
  if (auto* failure = std::get_if<Failure>(&decoded)) {
    err << "dlsched nodes: " << failure->message << "\n";
    return failure->code;
  }
  const json& nodes = std::get<json>(decoded);
  if (f.json) {
    out << nodes.dump() << "\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {{"NODE", "GPUS", "TYPE", "ALLOCATED", "JOBS"}};
  for (const json& node : nodes["nodes"]) {
    std::string jobs;
    std::string type;
    for (const json& gpu : node["gpus"]) {
      if (type.empty()) type = Str(gpu, "type");
      // "0:4" a training job, "1:7(service)", "2:other" another user's job, "3:-" free.
      std::string holder = Str(gpu, "job");
      if (Str(gpu, "holder") == "service") holder += "(service)";
      if (Str(gpu, "holder") == "other") holder = "other";
      jobs += (jobs.empty() ? "" : " ") + Str(gpu, "index") + ":" + holder;
    }
    rows.push_back(
        {Str(node, "name"), Str(node, "gpus_total"), type, Str(node, "gpus_allocated"), jobs});
  }
  PrintTable(out, rows);
  out << nodes.value("gpus_allocated", 0) << " of " << nodes.value("gpus_total", 0)
      << " GPUs allocated\n";
  return kExitOk;
}

// One stream of a job's output, read from `offset` on.
struct LogStream {
  std::string name;  // stdout or stderr
  std::ostream* sink;
  int64_t offset = 0;
  std::string collected;  // --json
};

int Logs(RestClient& client, const ClientFlags& f, std::ostream& out, std::ostream& err) {
  std::vector<LogStream> streams;
  const bool both = f.stdout_stream == f.stderr_stream;
  if (both || f.stdout_stream) streams.push_back({"stdout", &out});
  // One stream asked for is the output, whichever it is (`logs --stderr 3 | grep ...`).
  if (both || f.stderr_stream) streams.push_back({"stderr", both ? &err : &out});
  while (true) {
    bool any_text = false;
    bool ended = false;
    for (LogStream& stream : streams) {
      const std::string path = "/v1/jobs/" + std::to_string(f.id) + "/logs?stream=" + stream.name +
                               "&offset=" + std::to_string(stream.offset);
      Result<HttpResponse> res = client.Get(path);
      if (!res.ok()) {
        err << "dlsched logs: " << res.status().message() << "\n";
        return kExitRuntimeError;
      }
      if (res->status != 200) {
        auto decoded = Decode(res, {200});
        err << "dlsched logs: " << std::get<Failure>(decoded).message << "\n";
        return std::get<Failure>(decoded).code;
      }
      const auto next = res->headers.find("X-Next-Offset");
      if (next != res->headers.end()) stream.offset = std::stoll(next->second);
      if (f.json) {
        stream.collected += res->body;
      } else {
        *stream.sink << res->body << std::flush;
      }
      any_text = any_text || !res->body.empty();
      const auto state = res->headers.find("X-Job-State");
      ended = state != res->headers.end() && IsFinalState(state->second);
    }
    if (!f.follow || (ended && !any_text)) break;
    if (!any_text) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (f.json) {
    const auto stream_json = [&](const LogStream& s) {
      return json{{"stream", s.name}, {"text", s.collected}, {"next_offset", s.offset}};
    };
    json doc;
    if (streams.size() == 1) {
      doc = stream_json(streams[0]);
      doc["id"] = f.id;
    } else {
      doc = {{"id", f.id}, {"logs", json::array()}};
      for (const LogStream& s : streams) doc["logs"].push_back(stream_json(s));
    }
    out << doc.dump() << "\n";
  }
  return kExitOk;
}

}  // namespace

bool ClientCommands::parsed() const {
  for (CLI::App* cmd : {submit, queue, show, cancel, nodes, logs}) {
    if (cmd && cmd->parsed()) return true;
  }
  return false;
}

std::unique_ptr<ClientCommands> AddClientCommands(CLI::App& app) {
  auto c = std::make_unique<ClientCommands>();
  ClientFlags& f = c->flags;

  c->submit = app.add_subcommand(
      "submit", "Submit a job to the daemon: dlsched submit [flags] -- CMD... (or --script FILE).");
  AddCommon(*c->submit, f);
  c->submit->add_option("--gpus", f.gpus, "GPUs (gang size); 0: a CPU job (give --cpus).")
      ->capture_default_str()
      ->check(CLI::Range(0, 4096));
  c->submit
      ->add_option("--cpus", f.cpus,
                   "CPU cores the job needs in all (default: the daemon's --cpus-per-gpu per "
                   "GPU).")
      ->check(CLI::Range(0, 65536));
  c->submit->add_option("--mem", f.mem,
                        "Host memory the job needs in all, e.g. 64g or 512m (bare numbers are "
                        "MiB; default: the daemon's --mem-per-gpu per GPU). A job over it is "
                        "killed.");
  c->submit->add_option("--gpu-type", f.gpu_type, "Required GPU type (V100, A100, ...).");
  c->submit->add_option("--framework", f.framework,
                        "custom, pytorch, tensorflow, mpi or horovod (sets their environment).");
  c->submit->add_option("--deadline", f.deadline,
                        "Deadline: relative (30m, 2h, 1d, 1h30m) or RFC 3339 or Unix seconds.");
  c->submit->add_option("--name", f.name, "Job name.");
  c->submit->add_option("--queue", f.queue, "Queue (tenant) the job belongs to.");
  c->submit->add_option("--user", f.user,
                        "Submit as this user (admins only; default: the token's user, or $USER "
                        "without a token).");
  c->submit->add_option("--workdir", f.workdir, "Working directory (default: the current one).");
  c->submit->add_option("--env", f.env, "NAME=VALUE for the job's environment (repeatable).");
  c->submit->add_option("--selector", f.selector,
                        "KEY=VALUE node label the job requires (repeatable; nodes also have "
                        "gpu= and rack= labels).");
  c->submit->add_option("--prefer", f.prefer,
                        "KEY=VALUE node label the job prefers but does not wait for "
                        "(repeatable).");
  c->submit->add_option("--memory-mib", f.memory_mib, "GPU memory the job needs, in MiB.")
      ->check(IntegerAtLeast(0));
  c->submit->add_option("--priority", f.priority, "Priority (larger runs first under priority).");
  c->submit->add_option("--qos", f.qos, "QoS class: strict, soft or best-effort.");
  c->submit->add_option("--kind", f.kind,
                        "training (default) or service (a long-running online job that holds "
                        "its GPUs as a steady reservation).");
  c->submit->add_option("--service-load", f.service_load,
                        "Services: GPUs needed by time of day (UTC) as SECONDS:GPUS steps, e.g. "
                        "'0:2;28800:8;72000:2'; the rest is lent to training jobs.");
  c->submit
      ->add_option("--max-run-time", f.max_run_time_s,
                   "Run-time limit: seconds, or 30m, 2h, 1d, 1h30m.")
      ->transform(DurationFlag());
  c->submit
      ->add_option("--estimate", f.runtime_estimate_s,
                   "Expected run time (for policies such as sjf): seconds, or 30m, 2h, 1d.")
      ->transform(DurationFlag());
  c->submit
      ->add_option("--iterations", f.iterations,
                   "Total iterations the job reports progress against.")
      ->check(CLI::PositiveNumber);
  c->submit->add_option("--model", f.model, "Model name (for the performance predictor).");
  c->submit->add_option("--batch-size", f.batch_size, "Batch size (for the performance predictor).")
      ->check(IntegerAtLeast(0));
  c->submit->add_option("--script", f.script_path,
                        "Run this shell script file ('-': standard input) with /bin/sh -c "
                        "instead of a command.");
  c->submit->add_flag("--parsable", f.parsable, "Print only the job id (as sbatch --parsable).");
  c->submit->add_flag("--wait", f.wait,
                      "Wait until the job ends and exit with its exit code (as sbatch --wait).");
  c->submit->add_option("command", f.command, "The command and its arguments (after --).");

  c->queue = app.add_subcommand("queue", "Show running and waiting jobs, in queue order.");
  AddCommon(*c->queue, f);
  c->queue->add_flag("--all", f.all, "Also show the 50 most recently finished jobs.");

  c->show = app.add_subcommand("show", "Show one job: state, placement, times, why pending.");
  AddCommon(*c->show, f);
  c->show->add_option("id", f.id, "Job id.")->required()->check(CLI::NonNegativeNumber);

  c->cancel = app.add_subcommand("cancel", "Cancel a job (a running one is stopped).");
  AddCommon(*c->cancel, f);
  c->cancel->add_option("id", f.id, "Job id.")->required()->check(CLI::NonNegativeNumber);

  c->nodes = app.add_subcommand("nodes", "Show nodes, GPUs and which job holds each.");
  AddCommon(*c->nodes, f);

  c->logs = app.add_subcommand(
      "logs", "Print a job's output: its stdout on stdout and its stderr on stderr.");
  AddCommon(*c->logs, f);
  c->logs->add_option("id", f.id, "Job id.")->required()->check(CLI::NonNegativeNumber);
  c->logs->add_flag("-f,--follow", f.follow, "Keep printing until the job ends.");
  c->logs->add_flag("--stdout", f.stdout_stream, "Print only the job's stdout.");
  c->logs->add_flag("--stderr", f.stderr_stream, "Print only the job's stderr.");
  return c;
}

int RunClientCommand(const ClientCommands& c, std::ostream& out, std::ostream& err) {
  const ClientFlags& f = c.flags;
  Result<std::unique_ptr<RestClient>> client =
      RestClient::Create(ServerUrl(f.server), ClientToken(f.token));
  if (!client.ok()) {
    err << "dlsched: " << client.status().message() << "\n";
    return kExitUsage;
  }
  RestClient& rest = **client;
  if (c.submit->parsed()) return Submit(rest, f, out, err);
  if (c.queue->parsed()) return Queue(rest, f, out, err);
  if (c.show->parsed()) return Show(rest, f, out, err);
  if (c.cancel->parsed()) return Cancel(rest, f, out, err);
  if (c.nodes->parsed()) return Nodes(rest, f, out, err);
  if (c.logs->parsed()) return Logs(rest, f, out, err);
  return kExitUsage;
}

}  // namespace dlsched::cli
