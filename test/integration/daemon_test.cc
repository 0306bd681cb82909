// End-to-end tests of `dlsched serve` (harness: daemon_harness.h).

#include <gtest/gtest.h>

#include "integration/daemon_harness.h"

namespace dlsched::integration {
namespace {

TEST_F(DaemonIntegrationTest, JobsSeeExactlyTheirGpus) {
  StartDaemon();
  const fs::path go = dir_ / "go";
  const std::string wait_go = "while [ ! -e " + go.string() + " ]; do sleep 0.02; done";
  auto [s1, a] = Submit(Script("echo $CUDA_VISIBLE_DEVICES > a.tmp && mv a.tmp a.out; " + wait_go, 2));
  auto [s2, b] = Submit(Script("echo $CUDA_VISIBLE_DEVICES > b.tmp && mv b.tmp b.out; " + wait_go, 1));
  auto [s3, c] = Submit(Script("echo $CUDA_VISIBLE_DEVICES > c.tmp && mv c.tmp c.out; " + wait_go, 1));
  ASSERT_EQ(s1, 201);
  ASSERT_EQ(s2, 201);
  ASSERT_EQ(s3, 201);
  for (const json* j : {&a, &b, &c}) {
    ASSERT_TRUE(j->contains("id"));
    ASSERT_TRUE(WaitForState((*j)["id"], "running"));
  }
  // Each job writes its file whole (mv), so a file that exists is complete.
  ASSERT_TRUE(Eventually([&] {
    return fs::exists(dir_ / "a.out") && fs::exists(dir_ / "b.out") && fs::exists(dir_ / "c.out");
  }));
  // Each job sees the GPUs of its placement, and no two jobs share one.
  std::set<std::string> seen;
  for (auto [file, job] : {std::pair{"a.out", a}, std::pair{"b.out", b}, std::pair{"c.out", c}}) {
    std::string visible = ReadTextFile(dir_ / file);
    ASSERT_FALSE(visible.empty());
    visible.pop_back();  // newline
    const std::string placement = Job(job["id"])["placement"];
    EXPECT_EQ("n0000:" + visible, placement) << file;
    std::stringstream list(visible);
    for (std::string gpu; std::getline(list, gpu, ',');) EXPECT_TRUE(seen.insert(gpu).second);
  }
  EXPECT_EQ(seen.size(), 4u);
  const json nodes = Get("/v1/nodes").second;
  EXPECT_EQ(nodes["gpus_allocated"], 4);
  std::ofstream(go) << "";
  for (const json* j : {&a, &b, &c}) EXPECT_TRUE(WaitForState((*j)["id"], "succeeded"));
  EXPECT_EQ(Job(a["id"])["exit_code"], 0);
}

TEST_F(DaemonIntegrationTest, CancelStopsARunningJobAndDropsAWaitingOne) {
  StartDaemon();
  auto [s1, running] = Submit(Script("echo started > started; sleep 30", 4));
  auto [s2, waiting] = Submit(Script("true", 1));
  ASSERT_EQ(s1, 201);
  ASSERT_EQ(s2, 201);
  ASSERT_TRUE(WaitForState(running["id"], "running"));
  ASSERT_TRUE(Eventually([&] { return fs::exists(dir_ / "started"); }));
  const int pid = Job(running["id"])["pid"];

  auto [d1, cancelled] = Delete("/v1/jobs/" + std::to_string(running["id"].get<int>()));
  EXPECT_EQ(d1, 202);
  EXPECT_EQ(cancelled["stopping"], "kill");
  ASSERT_TRUE(WaitForState(running["id"], "killed"));
  EXPECT_TRUE(Eventually([&] { return kill(-pid, 0) != 0; })) << "process group still alive";
  // The waiting job got the GPUs, ran and finished; cancelling it now is a conflict.
  ASSERT_TRUE(WaitForState(waiting["id"], "succeeded"));
  EXPECT_EQ(Delete("/v1/jobs/" + std::to_string(waiting["id"].get<int>())).first, 409);
  EXPECT_EQ(Delete("/v1/jobs/12345").first, 404);

  // A waiting job is cancelled at once.
  auto [s3, blocker] = Submit(Script("sleep 30", 4));
  auto [s4, queued] = Submit(Script("true", 1));
  ASSERT_TRUE(WaitForState(blocker["id"], "running"));
  auto [d2, dropped] = Delete("/v1/jobs/" + std::to_string(queued["id"].get<int>()));
  EXPECT_EQ(d2, 200);
  EXPECT_EQ(dropped["state"], "killed");
  EXPECT_EQ(Delete("/v1/jobs/" + std::to_string(blocker["id"].get<int>())).first, 202);
  EXPECT_TRUE(WaitForState(blocker["id"], "killed"));
}

TEST_F(DaemonIntegrationTest, AHighPriorityJobPreemptsALowOneWhichResumesFromItsCheckpoint) {
  // The shipped priority profile protects victims for 5 minutes; this one does not.
  const fs::path profile = dir_ / "priority-now.json";
  std::ofstream(profile) << R"({"name": "priority-now", "admit": ["feasibility"],
      "queue_sort": "priority", "score": ["consolidate"],
      "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 0}}], "backfill": true})";
  StartDaemon({"--profile", profile.string()});
  // Counts its runs in its checkpoint; the first run waits to be preempted (exits on SIGTERM),
  // the second finishes.
  const std::string low_script =
      "n=$(cat \"$DLSCHED_CHECKPOINT_DIR/n\" 2>/dev/null || echo 0); n=$((n+1)); "
      "echo $n > \"$DLSCHED_CHECKPOINT_DIR/n\"; "
      "echo \"run $n restart $DLSCHED_RESTART_COUNT\" >> low.log; "
      "if [ $n -ge 2 ]; then exit 0; fi; "
      "echo 50 > \"$DLSCHED_PROGRESS_FILE\"; "
      "trap 'exit 0' TERM; while true; do sleep 0.05; done";
  json low_spec = Script(low_script, 4);
  low_spec["priority"] = 0;
  low_spec["iterations"] = 100;
  auto [s1, low] = Submit(low_spec);
  ASSERT_EQ(s1, 201);
  ASSERT_TRUE(WaitForState(low["id"], "running"));
  ASSERT_TRUE(Eventually([&] { return ReadTextFile(dir_ / "low.log") == "run 1 restart 0\n"; }));

  json high_spec = Script("echo high >> high.log", 4);
  high_spec["priority"] = 10;
  auto [s2, high] = Submit(high_spec);
  ASSERT_EQ(s2, 201);
  ASSERT_TRUE(WaitForState(high["id"], "succeeded"));
  ASSERT_TRUE(WaitForState(low["id"], "succeeded"));
  const json done = Job(low["id"]);
  EXPECT_EQ(done["preemptions"], 1);
  EXPECT_EQ(ReadTextFile(dir_ / "low.log"), "run 1 restart 0\nrun 2 restart 1\n");
  EXPECT_EQ(ReadTextFile(dir_ / "high.log"), "high\n");
}

TEST_F(DaemonIntegrationTest, ProgressPostedOverHttpIsShownAndKeptAtPreemption) {
  const fs::path profile = dir_ / "priority-now.json";
  std::ofstream(profile) << R"({"name": "priority-now", "admit": ["feasibility"],
      "queue_sort": "priority", "score": ["consolidate"],
      "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 0}}], "backfill": true})";
  const fs::path tokens = dir_ / "tokens";
  std::ofstream(tokens) << "t-ann,ann,user,60001\nt-bob,bob,user,60002\nt-root,root,admin\n";
  StartDaemon({"--profile", profile.string(), "--tokens", tokens.string()});
  // Runs until preempted (exits on SIGTERM), then finishes on its second run.
  json low_spec = Script(
      "n=$(cat \"$DLSCHED_CHECKPOINT_DIR/n\" 2>/dev/null || echo 0); n=$((n+1)); "
      "echo $n > \"$DLSCHED_CHECKPOINT_DIR/n\"; if [ $n -ge 2 ]; then exit 0; fi; "
      "trap 'exit 0' TERM; while true; do sleep 0.05; done",
      4);
  low_spec["priority"] = 0;
  low_spec["iterations"] = 100;
  low_spec["runtime_estimate_s"] = 200;  // the scheduler's work units: 200
  auto [s1, low] = Submit(low_spec, "t-ann");
  ASSERT_EQ(s1, 201);
  const int64_t id = low["id"];
  const std::string path = "/v1/jobs/" + std::to_string(id) + "/progress";
  // Running, and past its checkpoint (so the run after the preemption finishes).
  ASSERT_TRUE(Eventually([&] {
    return fs::exists(dir_ / "work" / "jobs" / std::to_string(id) / "checkpoint" / "n");
  }));
  auto post = [&](const std::string& where, const std::string& body, const std::string& token) {
    auto res = client_->Post(where, Auth(token), body, "application/json");
    return res ? std::pair{res->status, json::parse(res->body, nullptr, false)}
               : std::pair{0, json()};
  };

  // Refusals store nothing: no progress file appears.
  struct Case {
    std::string name;
    std::string path;
    std::string body;
    std::string token;
    int want;
    std::string field;
  };
  auto [s2, queued] = Submit(Script("true", 1), "t-ann");
  ASSERT_EQ(s2, 201);
  const std::string queued_path =
      "/v1/jobs/" + std::to_string(queued["id"].get<int>()) + "/progress";
  const std::vector<Case> cases = {
      {"malformed json", path, R"({"iterations_done": )", "t-ann", 400, "body"},
      {"missing done", path, R"({"iterations_total": 100})", "t-ann", 400, "iterations_done"},
      {"negative done", path, R"({"iterations_done": -5})", "t-ann", 400, "iterations_done"},
      {"zero total", path, R"({"iterations_done": 5, "iterations_total": 0})", "t-ann", 400,
       "iterations_total"},
      {"unknown field", path, R"({"iterations_done": 5, "fraction": 0.1})", "t-ann", 400,
       "fraction"},
      {"unknown job", "/v1/jobs/999/progress", R"({"iterations_done": 5})", "t-ann", 404, ""},
      {"another user's job", path, R"({"iterations_done": 5})", "t-bob", 403, ""},
      {"no token", path, R"({"iterations_done": 5})", "", 401, ""},
      {"a job that is not running", queued_path, R"({"iterations_done": 5})", "t-ann", 409, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto [status, body] = post(c.path, c.body, c.token);
    EXPECT_EQ(status, c.want);
    ASSERT_TRUE(body.contains("error")) << body;
    if (!c.field.empty()) {
      EXPECT_EQ(body["error"]["field"], c.field);
    }
  }
  for (int64_t job : {id, queued["id"].get<int64_t>()}) {
    EXPECT_FALSE(fs::exists(dir_ / "work" / "jobs" / std::to_string(job) / "progress")) << job;
  }
  EXPECT_EQ(Delete("/v1/jobs/" + std::to_string(queued["id"].get<int>()), "t-ann").first, 200);

  // The owner reports; the job shows it with the fraction done and an ETA.
  auto [s3, reported] = post(path, R"({"iterations_done": 25})", "t-ann");
  ASSERT_EQ(s3, 200) << reported;
  EXPECT_EQ(reported["progress"]["iterations_done"], 25);
  EXPECT_EQ(reported["progress"]["iterations_total"], 100);
  const json shown = Get("/v1/jobs/" + std::to_string(id), "t-ann").second;
  EXPECT_EQ(shown["progress"]["iterations_done"], 25);
  EXPECT_DOUBLE_EQ(shown["progress"]["fraction"].get<double>(), 0.25);
  EXPECT_TRUE(shown["progress"]["eta"].is_string()) << shown["progress"];
  EXPECT_EQ(ReadTextFile(dir_ / "work" / "jobs" / std::to_string(id) / "progress"), "25\n");
  // An admin may report too; the last report wins.
  EXPECT_EQ(post(path, R"({"iterations_done": 50, "iterations_total": 100})", "t-root").first, 200);

  // Preempted by a higher-priority job: the saved half shortens the work left.
  json high_spec = Script("true", 4);
  high_spec["priority"] = 10;
  auto [s4, high] = Submit(high_spec, "t-root");
  ASSERT_EQ(s4, 201);
  ASSERT_TRUE(Eventually([&] {
    return Get("/v1/jobs/" + std::to_string(id), "t-ann").second.value("state", "") == "succeeded";
  }));
  EXPECT_EQ(Get("/v1/jobs/" + std::to_string(id), "t-ann").second["preemptions"], 1);
  EXPECT_EQ(StoredEvent("suspended", id), "iterations_done=100");
  EXPECT_EQ(post(path, R"({"iterations_done": 100})", "t-ann").first, 409);
}

TEST_F(DaemonIntegrationTest, ProgressCorrectsThePredictorAndItsEta) {
  // A profile store (the file `dlsched profile` writes) for model "m" at batch size 8.
  const fs::path store = dir_ / "profiles.json";
  std::ofstream(store) << R"({"format": "dlsched-perf-profiles", "version": 1, "profiles": [
      {"source": "test", "model": "m", "batch_size": 8, "gpu_type": "V100", "num_gpus": 1,
       "iters_per_s": 10},
      {"source": "test", "model": "m", "batch_size": 8, "gpu_type": "V100", "num_gpus": 2,
       "iters_per_s": 18}]})";
  StartDaemon({"--predictor", store.string()});
  ASSERT_NE(ReadTextFile(dir_ / "daemon.err").find("predictor fitted"), std::string::npos)
      << ReadTextFile(dir_ / "daemon.err");
  // 2000 iterations estimated at 80 s (25 iterations/s predicted); it reports 100 iterations/s
  // of wall time since it started, so a slow machine does not change its pace.
  json spec = Script(
      "s=$(date +%s%N); while true; do n=$(( ($(date +%s%N) - s) / 10000000 )); "
      "echo \"$n/2000\" > \"$DLSCHED_PROGRESS_FILE.t\"; "
      "mv \"$DLSCHED_PROGRESS_FILE.t\" \"$DLSCHED_PROGRESS_FILE\"; sleep 0.2; done");
  spec["model"] = "m";
  spec["batch_size"] = 8;
  spec["runtime_estimate_s"] = 80;
  spec["iterations"] = 2000;
  auto [status, job] = Submit(spec);
  ASSERT_EQ(status, 201) << job;
  const int64_t id = job["id"];
  constexpr double kPredicted = 25;  // iterations/s before any correction

  // The daemon reads the progress once a second; each read moves the correction toward the
  // observed speed (about 4x the prediction, less the job's start-up time).
  json progress;
  ASSERT_TRUE(Eventually(
      [&] {
        progress = Job(id)["progress"];
        return progress.is_object() && progress["correction"].is_number() &&
               progress["correction"].get<double>() > 1.5;
      },
      seconds(20)))
      << progress;
  EXPECT_EQ(progress["eta_basis"], "predictor") << progress;
  EXPECT_TRUE(progress["eta"].is_string()) << progress;
  EXPECT_LE(progress["correction"].get<double>(), 10.0);

  // The corrected prediction is nearer the job's observed speed than the plain one.
  const json shown = Job(id);
  progress = shown["progress"];
  const double observed =
      progress["iterations_done"].get<double>() / shown["run_time_s"].get<double>();
  const double predicted = progress["predicted_iters_per_s"].get<double>();
  ASSERT_GT(observed, 0) << shown;
  EXPECT_GT(predicted, kPredicted) << progress;
  EXPECT_LT(std::abs(std::log(predicted / observed)), std::abs(std::log(kPredicted / observed)))
      << "observed " << observed << " it/s; " << progress;
  EXPECT_EQ(Delete("/v1/jobs/" + std::to_string(id)).first, 202);
}

TEST_F(DaemonIntegrationTest, Kill9LosesNoAcceptedJobAndRunningJobsAreReadopted) {
  StartDaemon();
  const fs::path go = dir_ / "go";
  auto [s, running] =
      Submit(Script("while [ ! -e " + go.string() + " ]; do sleep 0.02; done; echo ok > ran", 4));
  ASSERT_EQ(s, 201);
  ASSERT_TRUE(WaitForState(running["id"], "running"));
  const int pid = Job(running["id"])["pid"];
  std::vector<int64_t> accepted;
  for (int i = 0; i < 20; ++i) {
    auto [status, job] = Submit(Script("echo " + std::to_string(i) + " >> queued.log", 1));
    ASSERT_EQ(status, 201);
    accepted.push_back(job["id"]);
  }
  Kill9();  // right after the last acknowledgement
  EXPECT_EQ(kill(pid, 0), 0) << "the job must outlive the daemon";

  StartDaemon();
  auto [ls, list] = Get("/v1/jobs");
  ASSERT_EQ(ls, 200);
  ASSERT_EQ(list["jobs"].size(), 21u);
  EXPECT_EQ(Job(running["id"])["state"], "running");
  EXPECT_EQ(Job(running["id"])["pid"], pid);
  for (int64_t id : accepted) EXPECT_EQ(Job(id)["state"], "queued") << id;
  // New ids continue after the restored ones.
  auto [s2, next] = Submit(Script("true", 1));
  ASSERT_EQ(s2, 201);
  EXPECT_EQ(next["id"], 21);

  std::ofstream(go) << "";
  ASSERT_TRUE(WaitForState(running["id"], "succeeded"));
  EXPECT_EQ(ReadTextFile(dir_ / "ran"), "ok\n");
  for (int64_t id : accepted) EXPECT_TRUE(WaitForState(id, "succeeded")) << id;
  std::string log = ReadTextFile(dir_ / "queued.log");
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 20);
}

TEST_F(DaemonIntegrationTest, AServiceLendsItsIdleGpusAndLoansSurviveARestart) {
  StartDaemon();
  const fs::path go = dir_ / "go";
  const std::string wait_go = "while [ ! -e " + go.string() + " ]; do sleep 0.02; done";
  // A service holding all 4 GPUs that needs only 1 of them all day.
  json service_spec = Script(wait_go, 4);
  service_spec["kind"] = "service";
  service_spec["service_load"] = "0:1";
  auto [s1, service] = Submit(service_spec);
  ASSERT_EQ(s1, 201) << service;
  ASSERT_TRUE(WaitForState(service["id"], "running"));
  EXPECT_EQ(Job(service["id"])["kind"], "service");
  // A 3-GPU training job runs beside it on the lent GPUs; a 4-GPU one cannot.
  auto [s2, borrower] = Submit(Script(wait_go, 3));
  auto [s3, wide] = Submit(Script("true", 4));
  ASSERT_EQ(s2, 201);
  ASSERT_EQ(s3, 201);
  ASSERT_TRUE(WaitForState(borrower["id"], "running"));
  EXPECT_EQ(Job(wide["id"])["state"], "queued");

  // The loan is re-adopted after a crash: both keep running (the same processes), and nothing
  // is double-booked.
  const int service_pid = Job(service["id"])["pid"];
  const int borrower_pid = Job(borrower["id"])["pid"];
  Kill9();
  StartDaemon();
  EXPECT_EQ(Job(service["id"])["state"], "running");
  EXPECT_EQ(Job(borrower["id"])["state"], "running");
  EXPECT_EQ(Job(service["id"])["pid"], service_pid);
  EXPECT_EQ(Job(borrower["id"])["pid"], borrower_pid);
  EXPECT_EQ(Job(wide["id"])["state"], "queued");

  std::ofstream(go) << "";
  for (const json* j : {&service, &borrower, &wide}) {
    EXPECT_TRUE(WaitForState((*j)["id"], "succeeded"));
  }
}

TEST_F(DaemonIntegrationTest, TheEventLogReplaysToTheSameDecisions) {
  StartDaemon();
  const fs::path go = dir_ / "go";
  const std::string wait_go = "while [ ! -e " + go.string() + " ]; do sleep 0.02; done";
  auto [s1, wide] = Submit(Script(wait_go, 4));
  auto [s2, half] = Submit(Script("true", 2));
  auto [s3, dropped] = Submit(Script("true", 1));
  auto [s4, done] = Submit(Script("true", 8));  // more than a node: 400, not logged
  ASSERT_EQ(s1, 201);
  ASSERT_EQ(s2, 201);
  ASSERT_EQ(s3, 201);
  ASSERT_EQ(s4, 400);
  ASSERT_TRUE(WaitForState(wide["id"], "running"));
  EXPECT_EQ(Delete("/v1/jobs/" + std::to_string(dropped["id"].get<int>())).first, 200);
  // A crash and a restart in the middle of the log; the running job is re-adopted.
  Kill9();
  StartDaemon();
  auto [s5, late] = Submit(Script("true", 1));
  ASSERT_EQ(s5, 201);
  std::ofstream(go) << "";
  for (const json* j : {&wide, &half, &late}) ASSERT_TRUE(WaitForState((*j)["id"], "succeeded"));
  EXPECT_EQ(StopDaemon(), 0);

  const std::string db = (dir_ / "state.db").string();
  RunResult replay = Dlsched({"simulate", "--replay", db});
  EXPECT_EQ(replay.code, 0) << replay.out << replay.err;
  EXPECT_NE(replay.out.find("2 daemon runs (profile dlsched)"), std::string::npos) << replay.out;
  EXPECT_NE(replay.out.find("decisions identical"), std::string::npos) << replay.out;
  EXPECT_EQ(replay.out.find("divergence"), std::string::npos) << replay.out;

  // Another profile is a what-if; the command takes one.
  EXPECT_EQ(Dlsched({"simulate", "--replay", db, "--policy", "fifo,las"}).code, 2);
  // A tampered decision: the second job's launch now names other GPUs.
  Sql("UPDATE events SET detail = 'n0000:3' WHERE seq = "
      "(SELECT MIN(seq) FROM events WHERE kind = 'launch' AND job = 1)");
  RunResult tampered = Dlsched({"simulate", "--replay", db});
  EXPECT_EQ(tampered.code, 1) << tampered.out << tampered.err;
  EXPECT_NE(tampered.out.find("first divergence"), std::string::npos) << tampered.out;
  EXPECT_NE(tampered.out.find("daemon logged: launch job 1 on n0000:3 at"), std::string::npos)
      << tampered.out;
  EXPECT_NE(tampered.out.find("replay:        launch job 1 on n0000:0,1 at"), std::string::npos)
      << tampered.out;

  RunResult missing = Dlsched({"simulate", "--replay", (dir_ / "none.db").string()});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("none.db"), std::string::npos) << missing.err;
}

TEST_F(DaemonIntegrationTest, BadInputsGetTheir4xxAndStoreNothing) {
  StartDaemon();
  struct Case {
    std::string name;
    std::string body;
    int want;
    std::string field;
  };
  const std::vector<Case> cases = {
      {"zero gpus", R"({"command": ["true"], "gpus": 0})", 400, "gpus"},
      {"negative gpus", R"({"command": ["true"], "gpus": -3})", 400, "gpus"},
      {"more gpus than a node", R"({"command": ["true"], "gpus": 5})", 400, "gpus"},
      {"unknown gpu type", R"({"command": ["true"], "gpu_type": "K80"})", 400, "gpu_type"},
      {"empty command", R"({"command": []})", 400, "command"},
      {"no command", R"({"gpus": 1})", 400, "command"},
      {"malformed json", R"({"command": ["true"],)", 400, "body"},
      {"unknown field", R"({"command": ["true"], "gpu": 1})", 400, "gpu"},
      {"oversized body", R"({"script": ")" + std::string(300 * 1024, 'x') + R"("})", 413, ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto res = client_->Post("/v1/jobs", c.body, "application/json");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, c.want);
    const json body = json::parse(res->body, nullptr, false);
    ASSERT_TRUE(body.contains("error")) << res->body;
    if (!c.field.empty()) {
      EXPECT_EQ(body["error"]["field"], c.field);
      EXPECT_EQ(body["error"]["message"].get<std::string>().rfind(c.field + ":", 0), 0u);
    }
  }
  EXPECT_EQ(Get("/v1/jobs/0").first, 404);
  EXPECT_EQ(Get("/v1/jobs?state=bogus").first, 400);
  EXPECT_EQ(Get("/v1/nope").first, 404);
  EXPECT_EQ(Get("/v1/jobs").second["jobs"].size(), 0u);
  EXPECT_EQ(StoredJobs(), 0);
  // The daemon still works.
  auto [status, job] = Submit(Script("true", 1));
  EXPECT_EQ(status, 201);
  EXPECT_EQ(job["id"], 0);
  EXPECT_EQ(StoredJobs(), 1);
}

TEST_F(DaemonIntegrationTest, UsersSeeAndCancelOnlyTheirOwnJobs) {
  const fs::path tokens = dir_ / "tokens";
  std::ofstream(tokens)
      << "# token,user,role\nt-ann,ann,user,60001\nt-bob,bob,user,60002\nt-root,root,admin\n";
  StartDaemon({"--tokens", tokens.string()});
  EXPECT_EQ(Submit(Script("true")).first, 401);
  EXPECT_EQ(Submit(Script("true"), "t-nobody").first, 401);
  json as_bob = Script("true");
  as_bob["user"] = "bob";
  EXPECT_EQ(Submit(as_bob, "t-ann").first, 403);

  auto [s, job] = Submit(Script("sleep 30", 1), "t-ann");
  ASSERT_EQ(s, 201);
  EXPECT_EQ(job["user"], "ann");
  const std::string path = "/v1/jobs/" + std::to_string(job["id"].get<int>());
  EXPECT_EQ(Delete(path, "t-bob").first, 403);
  EXPECT_EQ(Get(path, "t-bob").first, 403);
  EXPECT_EQ(Get("/v1/jobs", "t-bob").second["jobs"].size(), 0u);
  EXPECT_EQ(Get("/v1/jobs?user=ann", "t-bob").first, 403);
  EXPECT_EQ(Get("/v1/jobs", "t-ann").second["jobs"].size(), 1u);
  EXPECT_EQ(Get("/v1/jobs", "t-root").second["jobs"].size(), 1u);
  EXPECT_EQ(Get(path, "t-root").first, 200);
  ASSERT_TRUE(Eventually([&] { return Get(path, "t-ann").second["state"] == "running"; }));
  EXPECT_EQ(Delete(path, "t-ann").first, 202);
  EXPECT_TRUE(Eventually([&] { return Get(path, "t-root").second["state"] == "killed"; }));
}

TEST_F(DaemonIntegrationTest, WithoutTokensOnlyLoopbackIsAllowed) {
  const pid_t pid = Spawn({DLSCHED_BINARY, "serve", "--listen", "0.0.0.0:0", "--gpus", "1x4xV100",
                           "--workdir", (dir_ / "work").string()},
                          dir_ / "out", dir_ / "err");
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(ReadTextFile(dir_ / "err").find("loopback"), std::string::npos);
}

TEST_F(DaemonIntegrationTest, CliOverRest) {
  StartDaemon({"--kill-jobs-on-exit"});
  RunResult submit = Cli({"submit", "--json", "--gpus", "2", "--name", "cli", "--workdir",
                          dir_.string(), "--", "sh", "-c", "echo hello; sleep 30"});
  ASSERT_EQ(submit.code, 0) << submit.err;
  const json job = json::parse(submit.out);
  ASSERT_TRUE(job.contains("id"));
  ASSERT_TRUE(job.contains("state"));
  const std::string id = std::to_string(job["id"].get<int>());
  ASSERT_TRUE(WaitForState(job["id"], "running"));

  RunResult queue = Cli({"queue", "--json"});
  ASSERT_EQ(queue.code, 0) << queue.err;
  EXPECT_EQ(json::parse(queue.out)["jobs"][0]["state"], "running");
  RunResult table = Cli({"queue"});
  EXPECT_NE(table.out.find("cli"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("CAUSE"), std::string::npos) << table.out;
  RunResult show = Cli({"show", id, "--json"});
  ASSERT_EQ(show.code, 0);
  EXPECT_EQ(json::parse(show.out)["gpus"], 2);
  ASSERT_TRUE(Eventually([&] { return Cli({"logs", id}).out == "hello\n"; }));
  RunResult nodes = Cli({"nodes"});
  EXPECT_NE(nodes.out.find("2 of 4 GPUs allocated"), std::string::npos) << nodes.out;
  RunResult cancel = Cli({"cancel", id});
  EXPECT_EQ(cancel.code, 0);
  ASSERT_TRUE(WaitForState(job["id"], "killed"));
  RunResult follow = Cli({"logs", "-f", id});  // the job has ended: returns at once
  EXPECT_EQ(follow.code, 0);

  EXPECT_EQ(Cli({"show", "999"}).code, 1);
  EXPECT_EQ(Cli({"submit", "--gpus", "64", "--", "true"}).code, 2);
  EXPECT_EQ(Cli({"show"}).code, 2);
  EXPECT_EQ(StopDaemon(), 0);
  RunResult unreachable = Cli({"queue"});
  EXPECT_EQ(unreachable.code, 1);
  EXPECT_NE(unreachable.err.find("cannot reach"), std::string::npos);
}

// docs/api/openapi.yaml stays true: every field a job carries is in its Job schema, and every
// field of the request the API echoes back as "spec" is in the JobSpec schema.
TEST_F(DaemonIntegrationTest, TheOpenApiDocumentDescribesEveryJobField) {
  const std::string doc = ReadTextFile(fs::path(DLSCHED_SOURCE_DIR) / "docs/api/openapi.yaml");
  ASSERT_FALSE(doc.empty());
  // A schema of components/schemas: from "    Name:" to the next line indented by four spaces.
  auto section = [&doc](const std::string& name) -> std::string {
    const size_t begin = doc.find("\n    " + name + ":\n");
    if (begin == std::string::npos) return "";
    size_t end = begin + 1;
    while ((end = doc.find("\n    ", end + 1)) != std::string::npos && doc[end + 5] == ' ') {
    }
    return doc.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
  };
  const std::string job_schema = section("Job");
  const std::string spec_schema = section("JobSpec");
  ASSERT_FALSE(job_schema.empty());
  ASSERT_FALSE(spec_schema.empty());

  StartDaemon({"--profile", "fifo-backfill"});  // no preemption: the waiting job is gpus-busy
  json spec = Script("echo 5/10 > \"$DLSCHED_PROGRESS_FILE\"; sleep 30", 2);
  spec["name"] = "doc";
  spec["deadline"] = "2099-01-01T00:00:00Z";
  spec["max_run_time_s"] = 600;
  spec["env"] = {{"A", "1"}};
  spec["framework"] = "pytorch";
  spec["iterations"] = 10;
  spec["memory_mib"] = 1024;
  spec["gpu_type"] = "V100";
  spec["model"] = "m";
  spec["batch_size"] = 8;
  spec["queue"] = "q";
  auto [status, job] = Submit(spec);
  ASSERT_EQ(status, 201);
  auto [s2, waiting] = Submit(Script("true", 4));
  ASSERT_TRUE(WaitForState(job["id"], "running"));
  ASSERT_TRUE(Eventually([&] { return Job(job["id"])["progress"].is_object(); }));
  const json running = Job(job["id"]);
  const json pending = Get("/v1/jobs/" + std::to_string(waiting["id"].get<int>())).second;
  ASSERT_TRUE(pending.contains("pending_reason"));
  // 4 GPUs wanted, 2 free, nothing it may preempt.
  EXPECT_EQ(pending["pending_cause"], "gpus-busy");
  const json queue = Get("/v1/queue").second;
  ASSERT_EQ(queue["jobs"].size(), 1u) << queue.dump();
  EXPECT_EQ(queue["jobs"][0]["id"], waiting["id"]);
  EXPECT_EQ(queue["jobs"][0]["reason"], pending["pending_reason"]);
  EXPECT_EQ(queue["jobs"][0]["cause"], "gpus-busy");
  for (const json* j : {&running, &pending}) {
    for (const auto& [key, value] : j->items()) {
      EXPECT_NE(job_schema.find("\n        " + key + ":"), std::string::npos) << "Job." << key;
    }
  }
  for (const auto& [key, value] : running["progress"].items()) {
    EXPECT_NE(job_schema.find("\n            " + key + ":"), std::string::npos)
        << "Job.progress." << key;
  }
  for (const auto& [key, value] : running["spec"].items()) {
    EXPECT_NE(spec_schema.find("\n        " + key + ":"), std::string::npos) << "JobSpec." << key;
  }
  EXPECT_EQ(Delete("/v1/jobs/" + std::to_string(job["id"].get<int>())).first, 202);
}

TEST_F(DaemonIntegrationTest, HealthAndMetrics) {
  StartDaemon();
  auto [hs, health] = Get("/healthz");
  EXPECT_EQ(hs, 200);
  EXPECT_EQ(health["status"], "ok");
  auto [s, job] = Submit(Script("true", 1));
  ASSERT_TRUE(WaitForState(job["id"], "succeeded"));
  auto res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  for (const char* want : {"dlsched_submissions_total 1\n", "dlsched_jobs{state=\"succeeded\"} 1\n",
                           "dlsched_gpus 4\n", "dlsched_scheduling_cycle_seconds_count"}) {
    EXPECT_NE(res->body.find(want), std::string::npos) << want;
  }
}

}  // namespace
}  // namespace dlsched::integration
