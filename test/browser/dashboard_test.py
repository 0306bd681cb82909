#!/usr/bin/env python3
"""Browser tests of the dashboard (issue 22): headless Chromium against a real daemon.

Starts `dlsched serve` with tokens (an admin, alice, bob) on fake GPUs (1x8xV100) with the GPU
monitor over the fake NVML of test/fake_nvml (its state file lists the 8 GPUs and, once the jobs
run, each running job's process on each of its GPUs, with memory and utilisation this test
chooses) and a profile whose priority preemption has no minimum run time, submits real jobs until
there is one of each: finished, running (with progress), waiting, preempted (suspended), and two
single-GPU jobs sharing the last GPU (the profile shares as greedy-share does), then
loads every view of the page in headless Chromium (`--dump-dom`, one fresh browser profile per
load) and checks the rendered DOM against the API's own answers: rows, order, states, causes and
every number, the GPUs' memory and utilisation and the jobs' GPU samples included, and the shared
GPU shown shared by both jobs (state, colour, job links) with each job's page on it. A second
daemon runs on a fake Slurm (scontrol, squeue, sbatch, scancel scripts first on its PATH) whose
node gpu2 is drained: its Cluster view must show that node offline; a third (two GPUs, no
tokens) runs a service that needs one of its two GPUs and lends the other to a training job: its
Cluster view must show that GPU lent by the service, with the borrower on it. It also checks that:
  - the page makes no request off the machine: every load runs with
    `--host-resolver-rules="MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"` (no host name resolves, so nothing
    could leave even if the page tried) and writes a net log (`--log-net-log`); every request the
    page starts (net-log initiator = the daemon's origin) must go to the daemon's origin, and the
    page must have started some (so the check is not vacuous). Requests the browser makes for
    itself (component updates and the like: initiator "not an origin", not the page's navigation)
    are listed in the summary, not failed: they are the browser's, not the page's, and the resolver
    rule stops them at the resolver;
  - the daemon serves the page with a Content-Security-Policy that allows its own origin only;
  - alice's token shows alice's jobs only: none of bob's jobs, names or ids appear, the GPUs bob
    holds show as another user's without a job, bob's job page shows the API's 403;
  - without a token the page shows the 401 and no job.
A screenshot of each view (1280 px wide and phone width, 390 px) is written to --out.

Usage: dashboard_test.py --dlsched build/dlsched --fake-nvml build/libfake-nvml.so
                         --out build/browser [--chromium chromium]
Exit 0: passed; 1: failed; 77: skipped (no Chromium, and $CI unset).
"""

import argparse
import datetime
import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

JOB_DEADLINE_S = 120  # for jobs to reach their states on a loaded machine
CHROMIUM_TIMEOUT_S = 240  # one page load, browser start included
# Virtual time each load may spend (the clock stops while requests are in flight, so a slow
# daemon does not use it up); doubled on a retry when the page had not rendered yet.
BUDGETS_MS = (10000, 20000, 40000)

TOKENS = {"admin": "t-admin-0123456789", "alice": "t-alice-0123456789",
          "bob": "t-bob-0123456789"}

PROFILE = {
    "name": "dashboard-test",
    "description": "priority with immediate preemption and tenant quotas, plus GPU sharing by "
                   "single-GPU jobs (browser tests)",
    "base": {
        "name": "dashboard-test-base",
        "description": "the whole-GPU part",
        "admit": ["feasibility"],
        "queue_sort": "priority",
        "score": ["consolidate"],
        "preempt": [{"name": "priority_preempt", "args": {"min_run_s": 0}}],
        "backfill": True,
        "quotas": {"team-a": {"guaranteed_share": 0.25, "max_share": 1.0},
                   "*": {"guaranteed_share": 0.25, "max_share": 1.0}},
    },
    # As profiles/greedy-share.json: two single-GPU jobs whose memory requests fit together share.
    "share": {"packer": "greedy", "mode": "packed", "interference_aware": True,
              "max_jobs_per_gpu": 2, "memory_percentile": 95, "max_slowdown": 1.5,
              "migration": {"enabled": True, "max_per_job": 2, "min_residence_s": 600,
                            "min_slowdown": 1.2}},
}
# The memory request of the two jobs that share a GPU: more than job_mib gives either (so the
# OOM watchdog leaves them be), and two of them fit in one GPU's GPU_MIB.
SHARE_MIB = 6144


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


# ---- a small DOM from Chromium's --dump-dom ----

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        for c in self.children:
            if isinstance(c, Node):
                yield c
                yield from c.walk()

    def find_all(self, tag=None, **attrs):
        want = {k.rstrip("_").replace("_", "-"): v for k, v in attrs.items()}
        return [n for n in self.walk() if (tag is None or n.tag == tag) and
                all((n.attrs.get(k) == v) if v is not True else (k in n.attrs)
                    for k, v in want.items())]

    def find(self, tag=None, **attrs):
        found = self.find_all(tag, **attrs)
        return found[0] if found else None

    def cells(self):
        """The data-k -> (data-v, text) of a row's cells."""
        return {c.attrs["data-k"]: (c.attrs.get("data-v", ""), c.text().strip())
                for c in self.find_all(data_k=True)}


class DomBuilder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, attrs, self.cur)
        self.cur.children.append(node)
        if tag not in VOID:
            self.cur = node

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse_dom(text):
    b = DomBuilder()
    b.feed(text)
    return b.root


# ---- the daemon and its API ----

class Api:
    def __init__(self, base):
        self.base = base

    def call(self, method, path, token, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        if token:
            req.add_header("Authorization", "Bearer " + token)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as res:
                raw = res.read().decode()
                return res.status, dict(res.headers), raw
        except urllib.error.HTTPError as e:
            return e.code, dict(e.headers), e.read().decode()

    def get(self, path, who="admin"):
        status, _, raw = self.call("GET", path, TOKENS[who] if who else None)
        check(status == 200, "GET %s as %s: %d %s" % (path, who, status, raw))
        return json.loads(raw)

    def submit(self, who, **job):
        status, _, raw = self.call("POST", "/v1/jobs", TOKENS[who], job)
        check(status == 201, "submit %s: %d %s" % (job, status, raw))
        return json.loads(raw)["id"]


def eventually(what, probe, within=JOB_DEADLINE_S):
    deadline = time.monotonic() + within
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise Failure("timed out waiting for " + what)
        time.sleep(0.2)


NUM_GPUS = 8
GPU_MIB = 16384


def gpu_busy_percent(index):
    """The utilisation the fake NVML reports for GPU `index` while a job holds it."""
    return 15 + 10 * index


def job_mib(job_id, index):
    """The memory a job's process holds on GPU `index` in the fake NVML's state."""
    return 1024 * (1 + job_id % 5) + 128 * index


def write_nvml_state(path, processes):
    """The fake NVML's state: NUM_GPUS V100s; `processes` maps a GPU index to [(pid, MiB)]."""
    lines = []
    for g in range(NUM_GPUS):
        busy = gpu_busy_percent(g) if processes.get(g) else 0
        lines.append("gpu %d %d %d Tesla V100-SXM2-16GB" % (GPU_MIB, busy, busy // 3))
    for g, procs in sorted(processes.items()):
        lines += ["process %d %d %d" % (g, pid, mib) for pid, mib in procs]
    with open(path + ".tmp", "w") as f:
        f.write("\n".join(lines) + "\n")
    os.rename(path + ".tmp", path)  # the daemon never reads half a state


def start_daemon(dlsched, tmp, fake_nvml):
    nvml_state = os.path.join(tmp, "nvml-state")
    write_nvml_state(nvml_state, {})
    tokens = os.path.join(tmp, "tokens")
    with open(tokens, "w") as f:
        f.write("%s,admin,admin\n%s,alice,user,60001\n%s,bob,user,60002\n" %
                (TOKENS["admin"], TOKENS["alice"], TOKENS["bob"]))
    os.chmod(tokens, 0o600)
    profile = os.path.join(tmp, "profile.json")
    with open(profile, "w") as f:
        json.dump(PROFILE, f)
    out = open(os.path.join(tmp, "serve.out"), "w")
    err = open(os.path.join(tmp, "serve.err"), "w")
    proc = subprocess.Popen(
        [dlsched, "serve", "--listen", "127.0.0.1:0", "--gpus", "1x%dxV100" % NUM_GPUS,
         "--profile", profile, "--workdir", os.path.join(tmp, "work"), "--tokens", tokens,
         "--grace", "1", "--kill-jobs-on-exit", "--nvml-library", fake_nvml,
         "--monitor-period", "0.5"], stdout=out, stderr=err,
        env=dict(os.environ, DLSCHED_FAKE_NVML_STATE=nvml_state))

    def listening():
        check(proc.poll() is None, "daemon exited: " + open(err.name).read())
        for line in open(out.name):
            if line.startswith("listening on "):
                return line.split()[-1]
        return None
    return proc, eventually("the daemon to listen", listening, within=60), nvml_state


# `scontrol show node -o` of the fake Slurm: gpu1 up, gpu2 drained.
FAKE_SLURM_NODES = (
    "NodeName=gpu1 CPUTot=8 Gres=gpu:v100:4 NodeAddr=127.0.0.1 State=IDLE RealMemory=4096 "
    "Partitions=dlsched\n"
    "NodeName=gpu2 CPUTot=8 Gres=gpu:v100:4 NodeAddr=127.0.0.1 State=IDLE+DRAIN "
    "RealMemory=4096 Partitions=dlsched Reason=fan_failed\n")


def start_slurm_daemon(dlsched, tmp):
    """A daemon on a fake Slurm of two nodes, gpu2 drained (so offline), and no jobs."""
    bin_dir = os.path.join(tmp, "slurm-bin")
    os.makedirs(bin_dir)
    with open(os.path.join(tmp, "slurm-nodes"), "w") as f:
        f.write(FAKE_SLURM_NODES)
    scripts = {
        "scontrol": '[ "$1 $2" = "show node" ] && exec cat "%s"\nexit 1\n' %
                    os.path.join(tmp, "slurm-nodes"),
        "squeue": "exit 0\n",
        "sbatch": "echo 'sbatch: error: not in this test' >&2\nexit 1\n",
        "scancel": "exit 0\n",
    }
    for name, body in scripts.items():
        path = os.path.join(bin_dir, name)
        with open(path, "w") as f:
            f.write("#!/bin/sh\n" + body)
        os.chmod(path, 0o755)
    out = open(os.path.join(tmp, "slurm-serve.out"), "w")
    err = open(os.path.join(tmp, "slurm-serve.err"), "w")
    proc = subprocess.Popen(
        [dlsched, "serve", "--listen", "127.0.0.1:0", "--executor", "slurm",
         "--slurm-partition", "dlsched", "--workdir", os.path.join(tmp, "slurm-work")],
        stdout=out, stderr=err, env=dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"]))

    def listening():
        check(proc.poll() is None, "Slurm daemon exited: " + open(err.name).read())
        for line in open(out.name):
            if line.startswith("listening on "):
                return line.split()[-1]
        return None
    return proc, eventually("the Slurm daemon to listen", listening, within=60)


def start_service_daemon(dlsched, tmp):
    """A daemon on two fake GPUs, no tokens, running a service that holds both and needs one all
    day (so it lends the other) and a single-GPU training job that borrows the lent one."""
    out = open(os.path.join(tmp, "service-serve.out"), "w")
    err = open(os.path.join(tmp, "service-serve.err"), "w")
    proc = subprocess.Popen(
        [dlsched, "serve", "--listen", "127.0.0.1:0", "--gpus", "1x2xV100", "--grace", "1",
         "--kill-jobs-on-exit", "--workdir", os.path.join(tmp, "service-work")],
        stdout=out, stderr=err)

    def listening():
        check(proc.poll() is None, "service daemon exited: " + open(err.name).read())
        for line in open(out.name):
            if line.startswith("listening on "):
                return line.split()[-1]
        return None
    return proc, eventually("the service daemon to listen", listening, within=60)


def stop_daemon(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def make_jobs(api):
    """One finished, running ones (one with progress), waiting ones and one preempted."""
    jobs = {}
    jobs["a-done"] = api.submit("alice", name="a-done", gpus=1, queue="team-a",
                                script="echo hello-from-a-done")
    done = eventually("a-done to finish", lambda: api.get("/v1/jobs/%d" % jobs["a-done"])
                      if api.get("/v1/jobs/%d" % jobs["a-done"])["finish_time"] else None)
    check(done["state"] == "succeeded", "a-done: %s (%s)" % (done["state"], done["reason"]))
    jobs["a-long"] = api.submit("alice", name="a-long", gpus=3, queue="team-a", memory_mib=8192,
                                script='echo "a-long started"; exec sleep 600')
    jobs["b-run"] = api.submit("bob", name="b-run", gpus=2, queue="team-b",
                               script='echo "b-run started"; exec sleep 600')
    jobs["a-victim"] = api.submit("alice", name="a-victim", gpus=2, queue="team-a",
                                  script='echo "a-victim started"; exec sleep 600')
    eventually("three jobs running", lambda: api.get("/v1/queue")["running"] == 3)
    jobs["b-urgent"] = api.submit("bob", name="b-urgent", gpus=2, queue="team-b", priority=100,
                                  script='echo "b-urgent started"; exec sleep 600')

    def preempted():
        listed = api.get("/v1/jobs")["jobs"]
        by_id = {j["id"]: j for j in listed}
        suspended = [j for j in listed if j["state"] == "suspended" and j["preemptions"] >= 1]
        return suspended if by_id[jobs["b-urgent"]]["state"] == "running" and suspended else None
    victims = eventually("b-urgent to preempt a job", preempted)
    check(len(victims) == 1, "want one preempted job, got %s" % victims)
    # The last free GPU: a single-GPU job takes it, and a second one, with nowhere else to go,
    # joins it there (the profile's sharing).
    jobs["a-small"] = api.submit("alice", name="a-small", gpus=1, queue="team-a",
                                 memory_mib=SHARE_MIB, script='echo "a-small started"; exec sleep 600')
    eventually("a-small to run", lambda: api.get("/v1/jobs/%d" % jobs["a-small"])["state"] ==
               "running")
    jobs["a-share"] = api.submit("alice", name="a-share", gpus=1, queue="team-a",
                                 memory_mib=SHARE_MIB, script='echo "a-share started"; exec sleep 600')
    eventually("a-share to share a-small's GPU", lambda: api.get("/v1/jobs/%d" % jobs["a-share"])[
        "state"] == "running")
    jobs["b-wait"] = api.submit("bob", name="b-wait", gpus=4, queue="team-b",
                                script="echo never")
    jobs["a-wait"] = api.submit("alice", name="a-wait", gpus=1, queue="team-a",
                                script="echo never")
    eventually("two jobs queued", lambda: sum(
        j["state"] == "queued" for j in api.get("/v1/jobs")["jobs"]) == 2)
    running_alice = [j for j in api.get("/v1/jobs?state=running", "alice")["jobs"]]
    check(running_alice, "alice has no running job")
    status, _, raw = api.call("POST", "/v1/jobs/%d/progress" % running_alice[0]["id"],
                              TOKENS["alice"], {"iterations_done": 250, "iterations_total": 1000})
    check(status == 200, "progress: %d %s" % (status, raw))
    return jobs, victims[0]["id"], running_alice[0]["id"]


def feed_monitor(api, nvml_state):
    """Gives each running job a process on each of its GPUs in the fake NVML's state (the job's
    pid, job_mib of memory) and waits until the API shows what the monitor sampled: each GPU's
    memory in use and utilisation, and each running job's memory (the most on one of its GPUs)
    with a few samples."""
    nodes = api.get("/v1/nodes")
    check(len(nodes["nodes"]) == 1, "the monitor's GPUs are those of a one-node cluster")
    procs, want_job = {}, {}
    for g in nodes["nodes"][0]["gpus"]:
        for j in g["jobs"]:
            pid = api.get("/v1/jobs/%d" % j)["pid"]
            check(pid, "job %d on GPU %d has no pid" % (j, g["index"]))
            procs.setdefault(g["index"], []).append((pid, job_mib(j, g["index"])))
            want_job[j] = max(want_job.get(j, 0), job_mib(j, g["index"]))
    write_nvml_state(nvml_state, procs)

    def sampled():
        n = api.get("/v1/nodes")
        for g in n["nodes"][0]["gpus"]:
            d = g["device"]
            used = sum(m for _, m in procs.get(g["index"], []))
            busy = gpu_busy_percent(g["index"]) if procs.get(g["index"]) else 0
            if d is None or d["memory_used_mib"] != used or abs(d["utilization"] - busy / 100) > 1e-9:
                return None
            check(d["memory_total_mib"] == GPU_MIB, "GPU %d total %s" % (g["index"], d))
        for j, mib in want_job.items():
            u = api.get("/v1/jobs/%d" % j)["gpu_usage"]
            if u is None or u["memory_mib"] != mib or len(u["recent"]) < 3:
                return None
        return n
    eventually("the GPU monitor to sample the jobs' processes", sampled)
    return want_job


# ---- Chromium ----

class Browser:
    def __init__(self, chromium, base, tmp, out):
        self.chromium, self.base, self.tmp, self.out = chromium, base, tmp, out
        self.loads = 0
        self.page_requests = set()
        self.browser_requests = set()

    def load(self, view, who, size=(1280, 1000), shot=None, want_error=None):
        """Loads #/VIEW with WHO's token (None: no token); returns the DOM once rendered."""
        stderr = ""
        for budget in BUDGETS_MS:
            self.loads += 1
            profile = os.path.join(self.tmp, "chromium-%d" % self.loads)
            netlog = os.path.join(self.tmp, "netlog-%d.json" % self.loads)
            fragment = ("#token=%s&/%s" % (TOKENS[who], view)) if who else "#/" + view
            cmd = [self.chromium, "--headless", "--disable-gpu", "--no-first-run",
                   "--user-data-dir=" + profile, "--disable-background-networking",
                   "--disable-component-update", "--disable-sync", "--disable-default-apps",
                   "--disable-extensions", "--disable-features=AutofillServerCommunication,"
                   "OptimizationHints,Translate,MediaRouter,SpellCheckService,"
                   "NetworkTimeServiceQuerying",
                   "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                   "--log-net-log=" + netlog, "--net-log-capture-mode=Default",
                   "--window-size=%d,%d" % size, "--hide-scrollbars",
                   "--virtual-time-budget=%d" % budget, "--dump-dom"]
            # Chromium refuses to run as root with its sandbox, and in many containers it finds no
            # usable one for other users either; the page is this project's own, from loopback.
            cmd.append("--no-sandbox")
            if shot:
                cmd.append("--screenshot=" + os.path.join(self.out, shot))
            cmd.append(self.base + "/" + fragment)
            try:
                proc = subprocess.run(cmd, capture_output=True, timeout=CHROMIUM_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                stderr = "timed out after %d s" % CHROMIUM_TIMEOUT_S
                continue
            stderr = proc.stderr.decode("utf-8", "replace")[-2000:]
            self.check_netlog(netlog)
            dom = parse_dom(proc.stdout.decode("utf-8", "replace"))
            body = dom.find("body")
            if body is None:
                continue
            if want_error is not None and body.attrs.get("data-error") == want_error:
                return dom
            if want_error is None and body.attrs.get("data-view") == view.split("/")[0]:
                shown = dom.find("main").text()
                # A value the page failed to format (JavaScript's text for a missing one).
                for word in ("null", "undefined", "NaN"):
                    check(re.search(r"\b%s\b" % word, shown) is None,
                          "view %s shows %r: %r" % (view, word, shown[:2000]))
                check("[object " not in shown, "view %s shows an object: %r" % (view, shown))
                return dom
        raise Failure("view %s as %s did not render (last stderr: %s)" % (view, who, stderr))

    def check_netlog(self, path):
        page, browser, foreign = classify_netlog(read_netlog(path), self.base)
        check(not foreign, "the page requested off the machine: %s" % sorted(foreign))
        self.page_requests |= page
        self.browser_requests |= browser


def read_netlog(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        # A browser that exited abruptly leaves the events array unterminated.
        return json.loads(text.rstrip().rstrip(",") + "]}")


def classify_netlog(log, origin):
    """(page requests, the browser's own requests, the page's requests off `origin`)."""
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    page, browser, foreign = set(), set(), set()
    for e in log.get("events", []):
        if types.get(e.get("type")) != "URL_REQUEST_START_JOB":
            continue
        params = e.get("params", {})
        url, initiator = params.get("url", ""), params.get("initiator")
        on_origin = url == origin or url.startswith(origin + "/")
        if initiator == origin:
            page.add(url)
            if not on_origin:
                foreign.add(url)
        elif on_origin:
            page.add(url)  # the navigation to the page itself
        else:
            browser.add(url)
    return page, browser, foreign


def self_test_classifier():
    """The no-off-machine check can fail: a synthetic log with a page request to a CDN."""
    log = {"constants": {"logEventTypes": {"URL_REQUEST_START_JOB": 7, "OTHER": 1}},
           "events": [
               {"type": 7, "params": {"url": "http://127.0.0.1:9/", "initiator": "not an origin"}},
               {"type": 7, "params": {"url": "http://127.0.0.1:9/v1/queue",
                                      "initiator": "http://127.0.0.1:9"}},
               {"type": 7, "params": {"url": "https://cdn.example/x.js",
                                      "initiator": "http://127.0.0.1:9"}},
               {"type": 7, "params": {"url": "https://update.example/", "initiator": "not an origin"}},
               {"type": 1, "params": {"url": "https://ignored.example/"}}]}
    page, browser, foreign = classify_netlog(log, "http://127.0.0.1:9")
    check(foreign == {"https://cdn.example/x.js"}, "classifier missed a foreign request")
    check(browser == {"https://update.example/"}, "classifier: browser's requests %s" % browser)
    check(len(page) == 3, "classifier: page requests %s" % page)


# ---- the checks, one per view ----

def num(v):
    return None if v == "" else float(v)


def fmt_mib(mib):
    """The page's fmtMib for a whole number of GiB or a size under 1 GiB."""
    check(mib < 1024 or mib % 1024 == 0, "fmt_mib(%d): not a whole GiB" % mib)
    return "%d MiB" % mib if mib < 1024 else "%d GiB" % (mib // 1024)


def fmt_time(t):
    """The page's fmtTime: the API's time with a space for the T and no fraction of a second."""
    return re.sub(r"\.\d+Z$", "Z", t.replace("T", " ", 1))


def parse_time(t):
    """The API's time in seconds since the epoch."""
    return datetime.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp()


def check_queue(dom, api, who):
    queue = api.get("/v1/queue", who)
    check(num(dom.find(id="queue-length").attrs["data-v"]) == queue["length"], "queue length")
    check(num(dom.find(id="queue-running").attrs["data-v"]) == queue["running"], "running count")
    rows = dom.find("table", id="waiting").find("tbody").find_all("tr") if queue["jobs"] else []
    check([int(r.attrs["data-job"]) for r in rows] == [j["id"] for j in queue["jobs"]],
          "waiting rows %s, API %s" % ([r.attrs["data-job"] for r in rows], queue["jobs"]))
    waiting = {j["id"]: j for j in api.get("/v1/jobs?state=queued,suspended,pending", who)["jobs"]}
    for row, q in zip(rows, queue["jobs"]):
        c = row.cells()
        for k in ("position", "id", "priority"):
            check(num(c[k][0]) == q[k] and c[k][1] == str(q[k]),
                  "queue %s of job %d: %s vs %s" % (k, q["id"], c[k], q[k]))
        check(num(c["gpus"][0]) == q["gpus"] and c["gpus"][1].startswith("%d GPU" % q["gpus"]),
              "queue gpus of %d: %s" % (q["id"], c["gpus"]))
        for k in ("name", "user", "state", "cause", "reason"):
            check(c[k][0] == q[k], "queue %s of job %d: %r vs %r" % (k, q["id"], c[k][0], q[k]))
        check(c["state"][1] == q["state"] and c["cause"][1] == q["cause"],
              "shown state/cause of %d: %s" % (q["id"], c))
        check(c["reason"][1] == (q["reason"] or "not looked at in the last cycle"),
              "shown reason of %d: %r" % (q["id"], c["reason"][1]))
        check(c["queue"][0] == waiting[q["id"]]["spec"].get("queue", ""), "tenant of %d" % q["id"])
        check(num(c["wait_s"][0]) >= 0, "wait of %d" % q["id"])
        # The estimate moves with the running jobs' ETAs (now + the time left at their observed
        # rate): known on the page when it is in the API's later answer, and not later than it.
        start, shown = q["estimated_start"], c["estimated_start"][0]
        check((shown == "") == (start is None) and
              c["estimated_start"][1] == ("—" if start is None else fmt_time(shown)) and
              (start is None or parse_time(shown) <= parse_time(start)),
              "estimated start of %d: %s vs %s" % (q["id"], c["estimated_start"], start))
    running = [api.get("/v1/jobs/%d" % j["id"], who)
               for j in api.get("/v1/jobs?state=running", who)["jobs"]]
    rrows = dom.find("table", id="running").find("tbody").find_all("tr") if running else []
    check(sorted(int(r.attrs["data-job"]) for r in rrows) == sorted(j["id"] for j in running),
          "running rows")
    by_id = {j["id"]: j for j in running}
    for r in rrows:
        c, j = r.cells(), by_id[int(r.attrs["data-job"])]
        check(c["placement"][0] == j["placement"] and c["placement"][1] == j["placement"],
              "placement of %d" % j["id"])
        check(num(c["preemptions"][0]) == j["preemptions"] and
              c["preemptions"][1] == str(j["preemptions"]), "preemptions of %d" % j["id"])
        # Run time grows between the page's read and ours: never more than ours, and close.
        check(0 <= num(c["run_time_s"][0]) <= j["run_time_s"] + 1e-6 and
              j["run_time_s"] - num(c["run_time_s"][0]) < CHROMIUM_TIMEOUT_S * 3,
              "run time of %d: page %s, API %s" % (j["id"], c["run_time_s"][0], j["run_time_s"]))
        p = j["progress"]
        check((c["progress"][0] == "") == (p is None), "progress of %d" % j["id"])
        if p is not None:
            check(num(c["progress"][0]) == p["fraction"] and
                  ("%.1f%%" % (p["fraction"] * 100)) in c["progress"][1],
                  "progress of %d: %s vs %s" % (j["id"], c["progress"], p))
    finished = api.get("/v1/jobs?state=succeeded,failed,killed,rejected&order=desc&limit=20",
                       who)["jobs"]
    frows = dom.find("table", id="finished").find("tbody").find_all("tr") if finished else []
    check([int(r.attrs["data-job"]) for r in frows] == [j["id"] for j in finished],
          "finished rows")
    for r, j in zip(frows, finished):
        c = r.cells()
        check(c["state"][0] == j["state"] and num(c["gpus"][0]) == j["gpus"] and
              num(c["run_time_s"][0]) == j["run_time_s"], "finished job %d: %s" % (j["id"], c))
    return queue, running, finished


def check_cluster(dom, api, who):
    nodes = api.get("/v1/nodes", who)
    check(num(dom.find(id="gpus-total").attrs["data-v"]) == nodes["gpus_total"], "GPUs total")
    check(num(dom.find(id="gpus-allocated").attrs["data-v"]) == nodes["gpus_allocated"],
          "GPUs allocated")
    squares = {g.attrs["data-gpu"]: g for g in dom.find_all(data_gpu=True)}
    check(len(squares) == nodes["gpus_total"], "GPU squares %d" % len(squares))
    per_type = {}
    for node in nodes["nodes"]:
        shown = dom.find(data_node=node["name"])
        check(num(shown.find(data_k="node-alloc").attrs["data-v"]) == node["gpus_allocated"],
              "node %s allocated" % node["name"])
        check(shown.attrs["data-offline"] == str(node["offline"]).lower() and
              ("offline" in shown.find(class_="node-name").text()) == node["offline"],
              "node %s offline: %s vs %s" % (node["name"], shown.attrs, node["offline"]))
        for g in node["gpus"]:
            sq = squares[node["name"] + ":" + str(g["index"])]
            holder = g["holder"] if g["allocated"] else "free"
            check(sq.attrs["data-holder"] == holder, "holder of %s:%d" % (node["name"], g["index"]))
            check(sq.attrs.get("data-job", "") == ("" if g["job"] is None else str(g["job"])),
                  "job on %s:%d: %s vs %s" % (node["name"], g["index"], sq.attrs.get("data-job"),
                                              g["job"]))
            where = "%s:%d" % (node["name"], g["index"])
            check(sq.attrs["data-state"] == g["state"], "state of %s: %s vs %s" %
                  (where, sq.attrs["data-state"], g["state"]))
            check(sq.attrs["data-jobs"] == ",".join(str(j) for j in g["jobs"]) and
                  num(sq.attrs["data-holders"]) == g["holders"], "holders of %s" % where)
            shown_jobs = [a.text() for a in sq.find_all("a")]
            check(shown_jobs == [str(j) for j in g["jobs"]], "jobs shown on %s: %s vs %s" %
                  (where, shown_jobs, g["jobs"]))
            d, mem, util = g["device"], sq.find(data_k="memory"), sq.find(data_k="utilization")
            check((d is None) == (mem is None) == (util is None), "device of %s" % where)
            if d is not None:
                check(num(mem.attrs["data-v"]) == d["memory_used_mib"] and
                      num(mem.attrs["data-total"]) == d["memory_total_mib"] and
                      mem.text().endswith(" / " + fmt_mib(d["memory_total_mib"])),
                      "memory of %s: %s %r vs %s" % (where, mem.attrs, mem.text(), d))
                check(num(util.attrs["data-v"]) == d["utilization"] and
                      util.text() == "%.1f%% busy" % (d["utilization"] * 100),
                      "utilisation of %s: %r vs %s" % (where, util.text(), d))
            t = per_type.setdefault(g["type"], [0, 0, 0])
            t[0] += 1
            t[1] += g["allocated"]
            t[2] += g["state"] == "offline"
    for typ, (total, allocated, offline) in per_type.items():
        row = dom.find("table", id="by-type").find("tr", data_key=typ).cells()
        check(num(row["total"][0]) == total and num(row["allocated"][0]) == allocated and
              num(row["free"][0]) == total - allocated - offline and
              num(row["offline"][0]) == offline and row["total"][1] == str(total),
              "per type %s: %s" % (typ, row))
    return nodes


def check_shared(dom, nodes, job_ids):
    """The Cluster view shows the one GPU the API gives as shared by `job_ids` (two jobs) as
    shared, in the shared colour, with both jobs; returns its "node:index"."""
    shared = [(n["name"], g) for n in nodes["nodes"] for g in n["gpus"] if g["state"] == "shared"]
    check(len(shared) == 1, "want one shared GPU, the API has %s" % shared)
    node, g = shared[0]
    where = "%s:%d" % (node, g["index"])
    check(sorted(g["jobs"]) == sorted(job_ids) and g["holders"] == 2,
          "shared GPU %s: jobs %s, holders %s; want %s" % (where, g["jobs"], g["holders"], job_ids))
    sq = dom.find(data_gpu=where)
    check(sq.attrs["data-state"] == "shared" and "gpu-shared" in sq.attrs["class"].split() and
          sorted(int(j) for j in sq.attrs["data-jobs"].split(",")) == sorted(job_ids) and
          sq.attrs["data-holders"] == "2" and
          sorted(int(a.text()) for a in sq.find_all("a")) == sorted(job_ids),
          "GPU %s is not shown shared by %s: %s" % (where, job_ids, sq.attrs))
    others = [x for x in dom.find_all(data_gpu=True) if x.attrs["data-state"] == "shared"]
    check(len(others) == 1, "%d GPUs shown shared" % len(others))
    return where


def check_job(dom, api, who, job_id):
    job = api.get("/v1/jobs/%d" % job_id, who)
    check(dom.find(id="job-title").attrs["data-job"] == str(job_id), "job title")
    facts = {dd.attrs["data-k"]: (dd.attrs["data-v"], dd.text().strip())
             for dd in dom.find(id="facts").find_all("dd")}
    for k in ("state", "user", "priority", "preemptions", "gpus", "exit_code", "reason"):
        want = job[k]
        got = facts[k][0]
        check((got == "" and want is None) or got == str(want) or
              (isinstance(want, (int, float)) and num(got) == want),
              "job %d %s: %r vs %r" % (job_id, k, got, want))
    check(facts["placement"][0] == (job["placement"] or ""), "placement of %d" % job_id)
    check(facts["state"][1] == job["state"], "shown state of %d" % job_id)
    p = job["progress"]
    check(facts["progress"][0] == ("" if p is None else str(p["fraction"])) or
          (p is not None and num(facts["progress"][0]) == p["fraction"]), "progress of %d" % job_id)
    if job["state"] != "running":
        check(num(facts["run_time_s"][0]) == job["run_time_s"], "run time of %d" % job_id)
    events = [li.attrs["data-event"] for li in dom.find(id="timeline").find_all("li")]
    check(events[0] == "submitted", "timeline of %d starts %s" % (job_id, events))
    check(("started" in events) == (job["first_start"] is not None), "started in %s" % events)
    check(("preempted" in events) == (job["preemptions"] > 0), "preempted in %s" % events)
    check(("finished" in events) == (job["finish_time"] is not None), "finished in %s" % events)
    rows = [(li.attrs["data-kind"], li.attrs["data-v"], li.attrs["data-detail"])
            for li in dom.find(id="timeline").find_all("li") if "data-kind" in li.attrs]
    check(rows == [(e["kind"], e["at"], e["detail"]) for e in job["timeline"]],
          "timeline of %d: %s vs the API's %s" % (job_id, rows, job["timeline"]))
    for li in dom.find(id="timeline").find_all("li", data_kind="launch"):
        check(li.attrs["data-detail"] in li.text(), "placement not shown: %r" % li.text())
    check_gpu_usage(dom, api, who, job)
    return job, events, dom.find(id="log-stdout").text()


def check_gpu_usage(dom, api, who, job):
    """The job's GPU samples as the page shows them, against the API's (read after the page's:
    the monitor keeps sampling, so the count only grows; the state the test wrote stays)."""
    later = api.get("/v1/jobs/%d" % job["id"], who)["gpu_usage"]
    if job["gpu_usage"] is None and later is None:
        check(dom.find(id="gpu-usage-none") is not None and dom.find(id="gpu-usage") is None,
              "job %d shows GPU samples the API does not have" % job["id"])
        return
    u = later
    facts = {dd.attrs["data-k"]: (dd.attrs["data-v"], dd.text().strip())
             for dd in dom.find(id="gpu-usage").find_all("dd")}
    for k in ("memory_mib", "peak_memory_mib", "utilization"):
        check(num(facts[k][0]) == u[k], "job %d %s: %s vs %s" % (job["id"], k, facts[k], u[k]))
    check(facts["utilization"][1] == "%.1f%%" % (u["utilization"] * 100), "shown utilisation")
    check(0 < num(facts["samples"][0]) <= u["samples"], "samples of %d" % job["id"])
    limit = job["spec"].get("memory_mib")
    check((facts["memory_limit_mib"][0] == "") == (limit is None) and
          (limit is None or num(facts["memory_limit_mib"][0]) == limit), "limit of %d" % job["id"])
    chart = dom.find(id="gpu-usage-chart")
    series = {p.attrs["data-series"]: p.attrs for p in chart.walk() if "data-series" in p.attrs}
    mem = [num(v) for v in series["memory_mib"]["data-v"].split(",")]
    api_mem = {p["memory_mib"] for p in u["recent"]}
    check(mem and set(mem) <= api_mem and len(mem) <= len(u["recent"]),
          "job %d memory series %s vs the API's %s" % (job["id"], mem, sorted(api_mem)))
    utils = [num(v) for v in series["utilization"]["data-v"].split(",")]
    check(set(utils) <= {p["utilization"] for p in u["recent"]}, "utilisation series")
    check(("limit" in series) == (limit is not None) and
          (limit is None or num(series["limit"]["data-v"]) == limit), "limit line")


def check_tenants(dom, api, who):
    t = api.get("/v1/tenants", who)
    rows = dom.find("table", id="tenants").find("tbody").find_all("tr")
    check([r.attrs["data-tenant"] for r in rows] == [x["name"] for x in t["tenants"]],
          "tenant rows")
    for r, x in zip(rows, t["tenants"]):
        c = r.cells()
        for k in ("guaranteed_share", "max_share", "guaranteed_gpus", "cap_gpus", "gpus_held",
                  "gpus_borrowed", "jobs_running", "jobs_waiting"):
            check((c[k][0] == "" and x[k] is None) or num(c[k][0]) == x[k],
                  "tenant %s %s: %r vs %r" % (x["name"], k, c[k][0], x[k]))
        for k in ("guaranteed_gpus", "cap_gpus", "gpus_held", "jobs_running", "jobs_waiting"):
            check(c[k][1] == ("—" if x[k] is None else str(x[k])), "shown %s of %s" % (k, x["name"]))
    return t


def check_history(dom, api, who):
    h = api.get("/v1/history", who)
    meta = dom.find(id="history-meta")
    check(num(meta.attrs["data-interval"]) == h["interval_s"] and
          num(meta.attrs["data-capacity"]) == h["capacity"], "history meta")
    by_at = {s["at"]: s for s in h["samples"]}
    rows = dom.find("table", id="history").find("tbody").find_all("tr")
    check(rows, "no history rows")
    for r in rows:
        s = by_at.get(r.attrs["data-at"])
        check(s is not None, "sample %s not in the API's history" % r.attrs["data-at"])
        c = r.cells()
        for k in ("queue_length", "pending", "running", "gpus_allocated", "gpus_total"):
            check(num(c[k][0]) == s[k] and c[k][1] == str(s[k]), "sample %s %s" % (s["at"], k))
        u = s["gpu_utilization"]
        check((c["gpu_utilization"][0] == "") == (u is None) and
              (u is None or (num(c["gpu_utilization"][0]) == u and
                             c["gpu_utilization"][1] == "%.1f%%" % (u * 100))),
              "sample %s utilisation: %s vs %s" % (s["at"], c["gpu_utilization"], u))
    chart = dom.find(id="history-chart")
    check(chart is not None, "no chart")
    series = {p.attrs["data-series"] for p in chart.walk() if "data-series" in p.attrs}
    reported = any(s["gpu_utilization"] is not None for s in h["samples"])
    check(("gpu_utilization" in series) == reported, "utilisation line: %s" % series)
    return h


def run(args):
    self_test_classifier()
    os.makedirs(args.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="dlsched-browser-")
    os.chmod(tmp, 0o711)  # as root, jobs run as alice's and bob's uids: they enter their dirs
    daemon = None
    summary = {}
    try:
        daemon, base, nvml_state = start_daemon(args.dlsched, tmp, args.fake_nvml)
        api = Api(base)
        status, headers, _ = api.call("GET", "/", None)
        csp = headers.get("Content-Security-Policy", "")
        check(status == 200 and "default-src 'none'" in csp and "connect-src 'self'" in csp,
              "GET / : %d, CSP %r" % (status, csp))
        jobs, victim, with_progress = make_jobs(api)
        observed = feed_monitor(api, nvml_state)
        browser = Browser(args.chromium, base, tmp, args.out)
        bob_ids = {jobs[n] for n in ("b-run", "b-urgent", "b-wait")}

        # Admin: every view, at 1280 px and at phone width.
        dom = browser.load("queue", "admin", shot="dashboard-queue.png")
        queue, running, finished = check_queue(dom, api, "admin")
        states = {q["id"]: q["state"] for q in queue["jobs"]}
        check(states.get(victim) == "suspended", "the preempted job is not shown waiting")
        check(jobs["a-done"] in [j["id"] for j in finished], "a-done not shown finished")
        check(any(j["progress"] for j in running), "no running job shows progress")
        # The preempted job (2 GPUs) waits for GPUs: the job with progress (3 GPUs, an ETA) frees
        # enough for it and nothing ahead; the 4-GPU job behind it, nothing ends for.
        eta = lambda: parse_time(api.get("/v1/jobs/%d" % with_progress)["progress"]["eta"])
        before = eta()
        estimates = {q["id"]: q for q in api.get("/v1/queue")["jobs"]}
        after = eta()
        check(estimates[victim]["estimated_start"] is not None and
              before <= parse_time(estimates[victim]["estimated_start"]) <= after and
              estimates[jobs["b-wait"]]["estimated_start"] is None,
              "start estimates %s; the ETA of %d in [%s, %s]" % (
                  estimates, with_progress, before, after))
        check(any(r.cells()["estimated_start"][0] for r in dom.find_all("tr", data_job=True)
                  if "estimated_start" in r.cells()), "no estimated start shown")
        dom = browser.load("cluster", "admin", shot="dashboard-cluster.png")
        nodes = check_cluster(dom, api, "admin")
        check(nodes["gpus_allocated"] == 8, "want a full cluster, got %d" % nodes["gpus_allocated"])
        check(all(g["device"] is not None for g in nodes["nodes"][0]["gpus"]),
              "the cluster view was checked without the monitor's samples")
        shared_ids = [jobs["a-small"], jobs["a-share"]]
        shared_gpu = check_shared(dom, nodes, shared_ids)
        for j in shared_ids:
            dom = browser.load("job/%d" % j, "admin", shot="dashboard-job-shared-%d.png" % j)
            job, _, _ = check_job(dom, api, "admin", j)
            check(job["placement"] == shared_gpu, "job %d on %s, not on the shared GPU %s" %
                  (j, job["placement"], shared_gpu))
        dom = browser.load("job/%d" % with_progress, "admin", shot="dashboard-job.png")
        job, _, log = check_job(dom, api, "admin", with_progress)
        check("started" in log, "log tail of %d: %r" % (with_progress, log))
        check(job["gpu_usage"] is not None and dom.find(id="gpu-usage-chart") is not None and
              job["gpu_usage"]["memory_mib"] == observed[with_progress],
              "job %d's GPU samples: %s" % (with_progress, job["gpu_usage"]))
        dom = browser.load("job/%d" % victim, "admin", shot="dashboard-job-preempted.png")
        _, events, _ = check_job(dom, api, "admin", victim)
        check("preempted" in events, "the preempted job's timeline: %s" % events)
        dom = browser.load("job/%d" % jobs["a-done"], "admin", shot="dashboard-job-finished.png")
        _, events, log = check_job(dom, api, "admin", jobs["a-done"])
        check("hello-from-a-done" in log and "finished" in events, "finished job: %s" % events)
        dom = browser.load("tenants", "admin", shot="dashboard-tenants.png")
        t = check_tenants(dom, api, "admin")
        check({x["name"] for x in t["tenants"]} >= {"team-a", "team-b"}, "tenants %s" % t)
        # A history sample after the monitor saw the jobs' GPUs busy (one every 10 s).
        eventually("a history sample with the GPUs busy", lambda: any(
            (x["gpu_utilization"] or 0) > 0 for x in api.get("/v1/history")["samples"]), within=30)
        dom = browser.load("history", "admin", shot="dashboard-history.png")
        h = check_history(dom, api, "admin")
        check(any((x["gpu_utilization"] or 0) > 0 for x in h["samples"]), "no busy sample")
        for view in ("queue", "cluster", "job/%d" % with_progress, "tenants", "history"):
            name = view.split("/")[0]
            browser.load(view, "admin", size=(390, 844), shot="dashboard-%s-phone.png" % name)

        # Alice: her own jobs only.
        raw = {}
        dom = browser.load("queue", "alice", shot="dashboard-queue-alice.png")
        queue, running, finished = check_queue(dom, api, "alice")
        shown = [int(r.attrs["data-job"]) for r in dom.find_all("tr", data_job=True)]
        check(shown and not (set(shown) & bob_ids), "alice sees jobs %s (bob's: %s)" %
              (shown, bob_ids))
        for r in dom.find_all("tr", data_job=True):
            c = r.cells()
            check(c["user"][0] == "alice", "alice sees a job of %s" % c["user"][0])
        raw["queue"] = dom.text()
        dom = browser.load("cluster", "alice")
        nodes = check_cluster(dom, api, "alice")
        bob_gpus = [g for g in dom.find_all(data_gpu=True) if g.attrs["data-holder"] == "other"]
        check(len(bob_gpus) >= 4 and all(g.attrs.get("data-job", "") == "" for g in bob_gpus),
              "bob's GPUs as alice sees them")
        raw["cluster"] = dom.text()
        dom = browser.load("job/%d" % jobs["b-urgent"], "alice", want_error="403")
        check(dom.find(id="facts") is None, "alice sees bob's job page")
        raw["job"] = dom.text()
        for view, text in raw.items():
            for name in ("b-run", "b-urgent", "b-wait", "bob"):
                check(name not in text, "alice's %s view shows %r" % (view, name))
        # No token: the API's 401, and no job.
        dom = browser.load("queue", None, want_error="401", shot="dashboard-no-token.png")
        check(not dom.find_all("tr", data_job=True), "jobs shown without a token")

        # An offline node: a second daemon on a fake Slurm whose node gpu2 is drained.
        slurm_daemon, slurm_base = start_slurm_daemon(args.dlsched, tmp)
        try:
            slurm_api = Api(slurm_base)
            nodes = eventually("gpu2 to be offline", lambda: (lambda n: n if [
                x["name"] for x in n["nodes"] if x["offline"]] == ["gpu2"] else None)(
                    json.loads(slurm_api.call("GET", "/v1/nodes", None)[2])))
            slurm_browser = Browser(args.chromium, slurm_base, tmp, args.out)
            slurm_browser.loads = browser.loads  # fresh profile and net-log names
            dom = slurm_browser.load("cluster", None, shot="dashboard-cluster-offline.png")
            check_cluster(dom, slurm_api, None)
            shown = dom.find(data_node="gpu2")
            check(shown.attrs["data-offline"] == "true" and
                  all(sq.attrs["data-state"] == "offline" for sq in shown.find_all(data_gpu=True)),
                  "gpu2 is not shown offline")
            check(all(sq.attrs["data-state"] == "free"
                      for sq in dom.find(data_node="gpu1").find_all(data_gpu=True)),
                  "gpu1 is not shown free")
            typ = nodes["nodes"][0]["gpus"][0]["type"]
            row = dom.find("table", id="by-type").find("tr", data_key=typ).cells()
            check(num(row["offline"][0]) == 4 and num(row["free"][0]) == 4, "per type: %s" % row)
            slurm_browser.load("cluster", None, size=(390, 844),
                               shot="dashboard-cluster-offline-phone.png")
            browser.loads = slurm_browser.loads
            browser.page_requests |= slurm_browser.page_requests
            browser.browser_requests |= slurm_browser.browser_requests
        finally:
            stop_daemon(slurm_daemon)

        # A lent GPU: a third daemon whose service lends one of its two GPUs to a training job.
        service_daemon, service_base = start_service_daemon(args.dlsched, tmp)
        try:
            service_api = Api(service_base)

            def submit(**job):
                status, _, raw = service_api.call("POST", "/v1/jobs", None, job)
                check(status == 201, "submit %s: %d %s" % (job, status, raw))
                return json.loads(raw)["id"]
            service = submit(name="svc", gpus=2, kind="service", service_load="0:1",
                             script="exec sleep 600")
            eventually("the service to run", lambda: json.loads(service_api.call(
                "GET", "/v1/jobs/%d" % service, None)[2])["state"] == "running")
            borrower = submit(name="borrower", gpus=1, script="exec sleep 600")

            def lent():
                n = json.loads(service_api.call("GET", "/v1/nodes", None)[2])
                gpus = n["nodes"][0]["gpus"]
                return n if [g["state"] for g in gpus].count("lent") == 1 and any(
                    g["state"] == "lent" and g["jobs"] == [borrower] for g in gpus) else None
            nodes = eventually("the service to lend a GPU to the borrower", lent)
            service_browser = Browser(args.chromium, service_base, tmp, args.out)
            service_browser.loads = browser.loads
            dom = service_browser.load("cluster", None, shot="dashboard-cluster-lent.png")
            nodes = check_cluster(dom, service_api, None)
            node = nodes["nodes"][0]
            for g in node["gpus"]:
                sq = dom.find(data_gpu="%s:%d" % (node["name"], g["index"]))
                if g["state"] == "lent":
                    check(g["lent_by"] == service and g["jobs"] == [borrower] and
                          "gpu-lent" in sq.attrs["class"].split() and
                          ("lent by job %d" % service) in sq.attrs["title"],
                          "the lent GPU as shown: %s (API: %s)" % (sq.attrs, g))
                else:
                    check(g["jobs"] == [service] and g["holder"] == "service" and
                          "gpu-service" in sq.attrs["class"].split(),
                          "the service's own GPU as shown: %s (API: %s)" % (sq.attrs, g))
            browser.loads = service_browser.loads
            browser.page_requests |= service_browser.page_requests
            browser.browser_requests |= service_browser.browser_requests
        finally:
            stop_daemon(service_daemon)

        check(any("/v1/" in u for u in browser.page_requests), "the page made no API request")
        summary = {"loads": browser.loads, "page_requests": sorted(browser.page_requests),
                   "browser_own_requests_blocked": sorted(browser.browser_requests)}
        with open(os.path.join(args.out, "netlog-summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        print("dashboard browser tests passed: %d page loads, %d distinct page requests, all to "
              "%s; screenshots in %s" % (browser.loads, len(browser.page_requests), base,
                                         args.out))
        return 0
    finally:
        if daemon is not None:
            stop_daemon(daemon)
        if os.environ.get("DLSCHED_KEEP_BROWSER_TMP"):
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dlsched", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--fake-nvml", required=True)
    parser.add_argument("--chromium", default="chromium")
    args = parser.parse_args()
    if shutil.which(args.chromium) is None:
        print("chromium not found (scripts/install-deps.sh test installs it)", file=sys.stderr)
        return 1 if os.environ.get("CI") else 77
    try:
        return run(args)
    except Failure as e:
        print("FAILED: %s" % e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
