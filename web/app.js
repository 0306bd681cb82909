// The dlsched dashboard: a read-only view of the daemon's REST API (docs/api/openapi.yaml).
// Plain JavaScript, no build step, no library, no request to any other origin. Every number on
// the page is a number of the API's replies (durations formatted); each value cell also carries
// the API's raw value in data-v, which the browser tests compare with the API's own answer.
//
// Views (location.hash): #/queue, #/cluster, #/job/ID, #/tenants, #/history. A token (with
// `serve --tokens`) is pasted once into the header's box, or passed once as #token=TOKEN, and
// kept in this browser's localStorage; it is sent as `Authorization: Bearer` to the API only.
"use strict";

const REFRESH_MS = 5000;
const TOKEN_KEY = "dlsched.token";
const LOG_TAIL_LINES = 200;
const MAX_PROGRESS_READS = 200;  // running jobs whose progress the queue view reads, one request each

// ---- small DOM helpers (text only: names and logs are user data, never parsed as HTML) ----

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") node.className = v;
    else node.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// A table cell showing `text` for API value `v` under key `k` (data-k, data-v).
function cell(k, v, text, cls) {
  return el("td", {"data-k": k, "data-v": v === null || v === undefined ? "" : v, class: cls},
            text === undefined ? (v === null || v === undefined ? "—" : String(v)) : text);
}

// A table; each cell also gets its column's name in data-label, which the phone layout shows
// beside the value (each row a card).
function table(headers, rows, id) {
  for (const row of rows) {
    [...row.children].forEach((td, i) => { if (headers[i]) td.dataset.label = headers[i].label; });
  }
  const head = el("tr", {}, headers.map(h => el("th", {class: h.num ? "num" : null}, h.label)));
  return el("div", {class: "scroll"}, el("table", {id: id}, el("thead", {}, head),
                                         el("tbody", {}, rows)));
}

function stateBadge(state) {
  return el("span", {class: "state state-" + state, "data-state": state}, state);
}

function jobLink(id) { return el("a", {href: "#/job/" + id}, String(id)); }

// ---- formatting ----

function fmtDuration(s) {
  if (s === null || s === undefined || !isFinite(s)) return "—";
  s = Math.max(0, Math.floor(s));
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600);
  const m = Math.floor(s % 3600 / 60), sec = s % 60;
  if (d > 0) return d + "d " + h + "h";
  if (h > 0) return h + "h " + String(m).padStart(2, "0") + "m";
  if (m > 0) return m + "m " + String(sec).padStart(2, "0") + "s";
  return sec + "s";
}

// RFC 3339 from the API, shown as UTC "YYYY-MM-DD HH:MM:SSZ".
function fmtTime(t) {
  if (!t) return "—";
  return t.replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function secondsSince(t, now) { return t ? (now - Date.parse(t)) / 1000 : null; }

function fmtPercent(f) { return f === null || f === undefined ? "—" : (f * 100).toFixed(1) + "%"; }

function fmtMib(mib) {
  if (!mib) return "—";
  return mib >= 1024 ? (mib / 1024).toFixed(mib % 1024 ? 1 : 0) + " GiB" : mib + " MiB";
}

function request(job) {
  const spec = job.spec || {};
  let r = job.gpus + " GPU" + (job.gpus === 1 ? "" : "s");
  if (job.gpu_type) r += " " + job.gpu_type;
  if (spec.memory_mib) r += ", " + fmtMib(spec.memory_mib);
  return r;
}

// ---- the API ----

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function token() { return localStorage.getItem(TOKEN_KEY) || ""; }

async function api(path) {
  const headers = {"Accept": "application/json"};
  if (token()) headers["Authorization"] = "Bearer " + token();
  const res = await fetch(path, {headers: headers, cache: "no-store", credentials: "omit"});
  if (!res.ok) {
    let message = res.status + " " + res.statusText;
    try { message = (await res.json()).error.message; } catch (e) { /* not JSON */ }
    throw new ApiError(res.status, message);
  }
  return path.includes("/logs") ? res.text() : res.json();
}

// Every page of GET /v1/jobs for `query` (the API pages by next_after).
async function allJobs(query) {
  let jobs = [], after = null;
  for (;;) {
    const page = await api("/v1/jobs?" + query + (after === null ? "" : "&after=" + after));
    jobs = jobs.concat(page.jobs);
    if (page.next_after === null) return jobs;
    after = page.next_after;
  }
}

// ---- views: each returns the nodes of <main> ----

async function viewQueue() {
  const now = Date.now();
  const [queue, waiting, listed, recent] = await Promise.all([
    api("/v1/queue"), allJobs("state=queued,suspended,pending"), allJobs("state=running"),
    api("/v1/jobs?state=succeeded,failed,killed,rejected&order=desc&limit=20")]);
  // The list leaves out progress; a running job's own record has it (and its ETA).
  const running = await Promise.all(listed.slice(0, MAX_PROGRESS_READS).map(
    j => api("/v1/jobs/" + j.id).catch(() => j)));
  running.push(...listed.slice(MAX_PROGRESS_READS));
  const byId = new Map(waiting.map(j => [j.id, j]));
  const summary = el("div", {class: "summary"},
    summaryCard("Waiting", queue.length, "queue-length"),
    summaryCard("Pending admission", queue.pending, "queue-pending"),
    summaryCard("Running", queue.running, "queue-running"),
    summaryCard("Policy", queue.policy, "queue-policy"));

  const waitRows = queue.jobs.map(q => {
    const job = byId.get(q.id) || {};
    return el("tr", {"data-job": q.id},
      cell("position", q.position, undefined, "num"), cell("id", q.id, jobLink(q.id), "num"),
      cell("name", q.name), cell("user", q.user), cell("queue", (job.spec || {}).queue || ""),
      cell("state", q.state, stateBadge(q.state)),
      cell("gpus", q.gpus, request(Object.assign({spec: job.spec}, q))),
      cell("priority", q.priority, undefined, "num"),
      cell("wait_s", secondsSince(q.queued_since, now), fmtDuration(secondsSince(q.queued_since, now)), "num"),
      cell("cause", q.cause, el("span", {class: "cause"}, q.cause)),
      cell("reason", q.reason, q.reason || "not looked at in the last cycle", "wrap"),
      cell("estimated_start", q.estimated_start, fmtTime(q.estimated_start)));
  });
  const runRows = running.map(j => {
    const p = j.progress;
    return el("tr", {"data-job": j.id},
      cell("id", j.id, jobLink(j.id), "num"), cell("name", j.name), cell("user", j.user),
      cell("gpus", j.gpus, request(j)), cell("placement", j.placement),
      cell("run_time_s", j.run_time_s, fmtDuration(j.run_time_s), "num"),
      cell("progress", p ? p.fraction : null, progressBar(p)),
      cell("eta", p ? p.eta : null, p && p.eta ? fmtTime(p.eta) : "—"),
      cell("preemptions", j.preemptions, undefined, "num"));
  });
  const doneRows = recent.jobs.map(j => el("tr", {"data-job": j.id},
    cell("id", j.id, jobLink(j.id), "num"), cell("name", j.name), cell("user", j.user),
    cell("state", j.state, stateBadge(j.state)), cell("gpus", j.gpus, undefined, "num"),
    cell("run_time_s", j.run_time_s, fmtDuration(j.run_time_s), "num"),
    cell("finish_time", j.finish_time, fmtTime(j.finish_time)),
    cell("reason", j.reason, j.reason || "", "wrap")));
  const n = (h, num) => ({label: h, num: num});
  return [
    summary,
    el("h2", {}, "Waiting ", el("span", {class: "count"}, "(" + queue.jobs.length + ")")),
    queue.jobs.length ? table([n("#", 1), n("Job", 1), n("Name"), n("User"), n("Tenant"),
                               n("State"), n("Request"), n("Priority", 1), n("Waited", 1),
                               n("Cause"), n("Why pending"), n("Est. start")], waitRows, "waiting")
                      : el("p", {class: "muted", id: "waiting-empty"}, "Nothing waits."),
    el("h2", {}, "Running ", el("span", {class: "count"}, "(" + running.length + ")")),
    running.length ? table([n("Job", 1), n("Name"), n("User"), n("Request"), n("Placement"),
                            n("Run time", 1), n("Progress"), n("ETA"), n("Preempted", 1)],
                           runRows, "running")
                   : el("p", {class: "muted", id: "running-empty"}, "Nothing runs."),
    el("h2", {}, "Finished recently ", el("span", {class: "count"}, "(" + recent.jobs.length + ")")),
    recent.jobs.length ? table([n("Job", 1), n("Name"), n("User"), n("State"), n("GPUs", 1),
                                n("Run time", 1), n("Finished"), n("Reason")], doneRows, "finished")
                       : el("p", {class: "muted", id: "finished-empty"}, "No job has finished."),
    el("p", {class: "muted"}, "Queue as of the cycle at " + fmtTime(queue.at) +
       ". “Est. start”: when running jobs with an ETA free enough GPUs for the job and every " +
       "job ahead of it (a count of GPUs, for jobs waiting for GPUs; — when unknown)."),
  ];
}

function summaryCard(label, value, id) {
  return el("div", {class: "card"}, el("div", {class: "muted"}, label),
            el("div", {class: "big", id: id, "data-v": value}, String(value)));
}

function progressBar(p) {
  if (!p || p.fraction === null) return p ? String(p.iterations_done) + " it" : "—";
  const bar = el("div", {class: "bar"}, el("span"));
  bar.firstChild.style.width = (p.fraction * 100).toFixed(1) + "%";
  return el("div", {}, bar, el("span", {class: "muted"}, fmtPercent(p.fraction)));
}

// A GPU's state as GET /v1/nodes gives it: free, allocated, shared (several jobs), lent (by a
// service) or offline (its node out of service).
const GPU_STATES = [["free", "free"], ["allocated", "a job"], ["shared", "shared by two or more jobs"],
                    ["service", "a service"], ["lent", "lent by a service"],
                    ["other", "another user's job"], ["offline", "offline node"]];

async function viewCluster() {
  const nodes = await api("/v1/nodes");
  const grid = el("div", {class: "grid", id: "grid"});
  const byType = new Map(), byClass = new Map();
  let monitored = 0;
  const add = (map, key, gpu) => {
    const t = map.get(key) || {total: 0, allocated: 0, offline: 0};
    t.total += 1;
    if (gpu.allocated) t.allocated += 1;
    if (gpu.state === "offline") t.offline += 1;
    map.set(key, t);
  };
  for (const node of nodes.nodes) {
    const labels = Object.entries(node.labels).map(([k, v]) => k + "=" + v).sort().join(",");
    const squares = node.gpus.map(g => {
      add(byType, g.type, g);
      add(byClass, labels || "(no labels)", g);
      const holder = g.allocated ? g.holder : "free";
      // The colour: the state, except that an allocated GPU shows whose it is.
      const look = g.state === "allocated" && holder !== "training" ? holder : g.state;
      const d = g.device;
      if (d) monitored += 1;
      const jobs = g.jobs.length ? g.jobs.map(jobLink).flatMap((a, i) => i ? ["+", a] : [a])
                                 : [g.state === "lent" ? "lent" : g.allocated ? "taken" : g.state];
      const square = el("div", {class: "gpu gpu-" + look, "data-gpu": node.name + ":" + g.index,
                                "data-state": g.state, "data-holder": holder, "data-job": g.job,
                                "data-jobs": g.jobs.join(","), "data-holders": g.holders,
                                title: node.name + " GPU " + g.index + ": " + g.type + ", " +
                                       g.state + (g.holders > 1 ? " by " + g.holders + " jobs" : "") +
                                       (g.lent_by !== null ? " (lent by job " + g.lent_by + ")" : "")},
        el("div", {}, "#" + g.index + " " + g.type),
        el("div", {class: "gpu-jobs"}, jobs),
        d ? el("div", {"data-k": "memory", "data-v": d.memory_used_mib, "data-total": d.memory_total_mib},
               fmtMib(d.memory_used_mib) + " / " + fmtMib(d.memory_total_mib))
          : el("div", {}, fmtMib(g.memory_mib)),
        d ? el("div", {"data-k": "utilization", "data-v": d.utilization}, fmtPercent(d.utilization) + " busy")
          : null,
        d ? memoryBar(d.memory_used_mib, d.memory_total_mib) : null);
      // A training job's GPUs share one shade of blue, so a gang reads as one block.
      if (look === "allocated" && g.job !== null) {
        square.style.background = "hsl(" + (200 + g.job * 37 % 60) + ", 62%, " + (38 + g.job * 13 % 16) + "%)";
      }
      return square;
    });
    grid.append(el("div", {class: "node" + (node.offline ? " node-offline" : ""), "data-node": node.name,
                           "data-offline": String(node.offline)},
      el("div", {class: "node-name", title: labels},
         node.name, node.offline ? el("span", {class: "state state-offline"}, "offline") : null,
         el("br"), el("span", {class: "muted", "data-k": "node-alloc", "data-v": node.gpus_allocated},
                      node.gpus_allocated + "/" + node.gpus_total + " GPUs")),
      el("div", {class: "gpus"}, squares)));
  }
  const totals = (map, id, what) => table([{label: what}, {label: "GPUs", num: 1},
                                           {label: "Allocated", num: 1}, {label: "Free", num: 1},
                                           {label: "Offline", num: 1}],
    [...map.entries()].sort().map(([k, t]) => el("tr", {"data-key": k}, cell("key", k),
      cell("total", t.total, undefined, "num"), cell("allocated", t.allocated, undefined, "num"),
      cell("free", t.total - t.allocated - t.offline, undefined, "num"),
      cell("offline", t.offline, undefined, "num"))), id);
  const legend = el("div", {class: "legend"}, GPU_STATES.map(([c, text]) =>
      el("span", {}, el("span", {class: "gpu gpu-" + c}), text)));
  return [
    el("div", {class: "summary"},
       summaryCard("GPUs", nodes.gpus_total, "gpus-total"),
       summaryCard("Allocated", nodes.gpus_allocated, "gpus-allocated"),
       summaryCard("Allocation", fmtPercent(nodes.allocation), "gpus-allocation")),
    legend, grid,
    el("h2", {}, "Per GPU type"), totals(byType, "by-type", "Type"),
    el("h2", {}, "Per label class"), totals(byClass, "by-class", "Labels"),
    el("p", {class: "muted", id: "monitor-note", "data-monitored": monitored},
       monitored ? "Memory in use against each GPU's total and its utilisation are the GPU " +
                   "monitor's latest sample (serve --monitor-period)."
                 : "No GPU monitor reports memory use or utilisation of these GPUs (the monitor " +
                   "samples the daemon's own machine: a cluster of one node): each GPU shows its " +
                   "memory size."),
  ];
}

// A bar of memory used against a total (or a limit).
function memoryBar(used, total) {
  const bar = el("div", {class: "bar mem"}, el("span"));
  const f = total > 0 ? Math.min(1, used / total) : 0;
  bar.firstChild.style.width = (f * 100).toFixed(1) + "%";
  if (f > 0.9) bar.classList.add("bar-high");
  return bar;
}

async function viewJob(id) {
  const job = await api("/v1/jobs/" + encodeURIComponent(id));
  let log = "", stderr = "";
  try {
    log = await api("/v1/jobs/" + job.id + "/logs?stream=stdout");
    stderr = await api("/v1/jobs/" + job.id + "/logs?stream=stderr");
  } catch (e) { /* a job that never started has no log yet */ }
  const tail = text => text.split("\n").slice(-LOG_TAIL_LINES - 1).join("\n");
  const p = job.progress;
  const facts = [
    ["State", stateBadge(job.state), "state", job.state],
    ["User", job.user, "user", job.user], ["Tenant", job.spec.queue || "", "queue", job.spec.queue || ""],
    ["Kind", job.kind, "kind", job.kind], ["Request", request(job), "gpus", job.gpus],
    ["Priority", job.priority, "priority", job.priority], ["QoS", job.qos, "qos", job.qos],
    ["Placement", job.placement || "—", "placement", job.placement],
    ["Run time", fmtDuration(job.run_time_s), "run_time_s", job.run_time_s],
    ["GPU time", fmtDuration(job.attained_gpu_s), "attained_gpu_s", job.attained_gpu_s],
    ["Preemptions", job.preemptions, "preemptions", job.preemptions],
    ["Progress", p ? progressBar(p) : "—", "progress", p ? p.fraction : null],
    ["ETA", p && p.eta ? fmtTime(p.eta) : "—", "eta", p ? p.eta : null],
    ["Exit code", job.exit_code === null ? "—" : job.exit_code, "exit_code", job.exit_code],
    ["Why pending", job.pending_reason || "—", "pending_reason", job.pending_reason],
    ["Cause", job.pending_cause || "—", "pending_cause", job.pending_cause],
    ["Reason", job.reason || "—", "reason", job.reason],
  ];
  const dl = el("dl", {class: "facts", id: "facts"});
  for (const [label, shown, k, v] of facts) {
    dl.append(el("dt", {}, label),
              el("dd", {"data-k": k, "data-v": v === null || v === undefined ? "" : v}, shown));
  }
  return [
    el("h2", {id: "job-title", "data-job": job.id}, "Job " + job.id + " · " + job.name),
    el("div", {class: "card"}, dl),
    el("h2", {}, "Timeline"), el("div", {class: "card"}, timeline(job)),
    el("h2", {}, "GPU memory"), gpuUsage(job),
    el("h2", {}, "Log tail (stdout)"), el("pre", {class: "log", id: "log-stdout"}, tail(log) || "(empty)"),
    el("h2", {}, "Log tail (stderr)"), el("pre", {class: "log", id: "log-stderr"}, tail(stderr) || "(empty)"),
  ];
}

// The GPU monitor's observations of the job (gpu_usage): the latest, the peak, and a chart of
// the recent samples' memory against the job's limit (spec.memory_mib) and their utilisation.
function gpuUsage(job) {
  const u = job.gpu_usage;
  const limit = job.spec.memory_mib || null;
  if (!u) {
    return el("p", {class: "muted", id: "gpu-usage-none"}, "Memory limit: " + fmtMib(limit) +
              "; the GPU monitor has not observed this job (no monitor, or it has not run with one).");
  }
  const facts = el("dl", {class: "facts", id: "gpu-usage"});
  for (const [label, shown, k, v] of [
      ["Memory (latest)", fmtMib(u.memory_mib), "memory_mib", u.memory_mib],
      ["Peak", fmtMib(u.peak_memory_mib), "peak_memory_mib", u.peak_memory_mib],
      ["Limit", limit ? fmtMib(limit) : "none set", "memory_limit_mib", limit],
      ["Utilisation (latest)", fmtPercent(u.utilization), "utilization", u.utilization],
      ["Samples", u.samples, "samples", u.samples],
      ["Sampled at", fmtTime(u.sampled_at), "sampled_at", u.sampled_at]]) {
    facts.append(el("dt", {}, label),
                 el("dd", {"data-k": k, "data-v": v === null || v === undefined ? "" : v}, shown));
  }
  return el("div", {class: "card"}, facts, usageChart(u.recent, limit),
            el("p", {class: "muted"}, legendLine([["#3b78d8", "memory (MiB, left)"],
                                                  ["#b42318", "limit"],
                                                  ["#067647", "utilisation (%, right)"]]),
               " The last " + u.recent.length + " samples."));
}

function svgChart(id) {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("id", id);
  svg.setAttribute("viewBox", "0 0 800 220");
  svg.setAttribute("preserveAspectRatio", "none");
  const mk = (tag, attrs) => {
    const n = document.createElementNS(NS, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    svg.append(n);
    return n;
  };
  return [svg, mk];
}

// Memory samples (left axis, MiB) against the limit, utilisation (right axis, 0..100%).
function usageChart(points, limit) {
  const [svg, mk] = svgChart("gpu-usage-chart");
  if (!points.length) return svg;
  const t0 = Date.parse(points[0].at), t1 = Date.parse(points[points.length - 1].at);
  const ymax = Math.max(1, limit || 0, ...points.map(p => p.memory_mib)) * 1.05;
  const X = t => 50 + 700 * (t1 > t0 ? (Date.parse(t) - t0) / (t1 - t0) : 1);
  const Y = v => 200 - 185 * v / ymax;
  const U = f => 200 - 185 * f;
  for (const v of [0, ymax / 2, ymax]) {
    mk("line", {x1: 50, x2: 750, y1: Y(v), y2: Y(v), class: "grid-line"});
    mk("text", {x: 2, y: Y(v) + 4}).textContent = String(Math.round(v));
  }
  for (const f of [0, 0.5, 1]) {
    mk("text", {x: 798, y: U(f) + 4, "text-anchor": "end"}).textContent = (f * 100) + "%";
  }
  mk("text", {x: 50, y: 216}).textContent = fmtTime(points[0].at);
  mk("text", {x: 750, y: 216, "text-anchor": "end"}).textContent = fmtTime(points[points.length - 1].at);
  if (limit) {
    mk("line", {x1: 50, x2: 750, y1: Y(limit), y2: Y(limit), stroke: "#b42318",
                "stroke-dasharray": "6 4", "stroke-width": 1.5, "data-series": "limit",
                "data-v": limit});
  }
  mk("polyline", {points: points.map(p => X(p.at).toFixed(1) + "," + Y(p.memory_mib).toFixed(1)).join(" "),
                  fill: "none", stroke: "#3b78d8", "stroke-width": 2, "data-series": "memory_mib",
                  "data-v": points.map(p => p.memory_mib).join(",")});
  mk("polyline", {points: points.map(p => X(p.at).toFixed(1) + "," + U(p.utilization).toFixed(1)).join(" "),
                  fill: "none", stroke: "#067647", "stroke-width": 1.5, "data-series": "utilization",
                  "data-v": points.map(p => p.utilization).join(",")});
  return svg;
}

// The job's life: the daemon's event log about it (job.timeline, since this daemon started),
// with words for each row and the placement or reason it carries; then, for a waiting job, why
// it waits. A job the daemon restored has no rows from before: its record tells the rest.
function timeline(job) {
  const rows = job.timeline || [];
  if (!rows.length) return recordTimeline(job);
  const events = [];
  let launched = false, migrating = false;
  for (const e of rows) {
    let name = e.kind, text = e.detail;
    switch (e.kind) {
      case "submit": name = "submitted"; text = "accepted by the daemon"; break;
      case "launch":
        name = !launched ? "started" : migrating ? "migrated" : "resumed";
        text = "on " + e.detail;
        launched = true;
        migrating = false;
        break;
      case "preempt":
        migrating = e.detail === "migration";
        text = migrating ? "stopped to move it to other GPUs" : "stopped for another job";
        name = "preempted";
        break;
      case "suspended": text = "checkpointed and stopped (" + e.detail + ")"; break;
      case "launch_failed": name = "launch failed"; break;
      case "finished": text = e.detail; break;
      case "cancel": name = "cancelled"; text = "by its user or an admin"; break;
      case "kill": name = "killed"; text = "stop signal sent"; break;
      case "reject": name = "rejected"; break;
    }
    events.push([name, e.at, text, e]);
  }
  if (job.queued_since) events.push(["queued", job.queued_since, job.pending_reason || "waiting", null]);
  return timelineList(events);
}

// The job's life as its record tells it: the API keeps its first start, its current run
// segment's start, its preemption count and its end, not every event in between.
function recordTimeline(job) {
  const events = [["submitted", job.submit_time, "accepted by the daemon", null]];
  if (job.first_start) events.push(["started", job.first_start, "first run segment", null]);
  if (job.preemptions > 0) {
    events.push(["preempted", null, job.preemptions + " time" + (job.preemptions === 1 ? "" : "s") +
                 (job.state === "suspended" ? "; waits to resume" : ""), null]);
  }
  if (job.state === "running" && job.segment_start && job.segment_start !== job.first_start) {
    events.push(["resumed", job.segment_start, "current run segment on " + job.placement, null]);
  } else if (job.state === "running") {
    events.push(["running", job.segment_start, "on " + job.placement, null]);
  }
  if (job.queued_since) events.push(["queued", job.queued_since, job.pending_reason || "waiting", null]);
  if (job.finish_time) events.push(["finished", job.finish_time, job.state + (job.reason ? ": " + job.reason : ""), null]);
  return timelineList(events);
}

function timelineList(events) {
  return el("ol", {class: "timeline", id: "timeline"}, events.map(([name, t, text, row]) =>
    el("li", {class: "ev-" + name.replace(/ /g, "-"), "data-event": name, "data-v": t || "",
              "data-kind": row ? row.kind : null, "data-detail": row ? row.detail : null},
       el("strong", {}, name), " ", el("span", {class: "muted"}, t ? fmtTime(t) : ""), " — ", text)));
}

async function viewTenants() {
  const t = await api("/v1/tenants");
  const share = s => s === null ? "—" : (s * 100).toFixed(0) + "%";
  const rows = t.tenants.map(x => el("tr", {"data-tenant": x.name},
    cell("name", x.name, x.name || "(no tenant)"),
    cell("guaranteed_share", x.guaranteed_share, share(x.guaranteed_share), "num"),
    cell("guaranteed_gpus", x.guaranteed_gpus, undefined, "num"),
    cell("max_share", x.max_share, share(x.max_share), "num"),
    cell("cap_gpus", x.cap_gpus, undefined, "num"),
    cell("gpus_held", x.gpus_held, undefined, "num"),
    cell("gpus_borrowed", x.gpus_borrowed, undefined, "num"),
    cell("use", x.gpus_held, useBar(x, t.gpus_total)),
    cell("jobs_running", x.jobs_running, undefined, "num"),
    cell("jobs_waiting", x.jobs_waiting, undefined, "num")));
  const n = (h, num) => ({label: h, num: num});
  return [
    el("div", {class: "summary"}, summaryCard("GPUs", t.gpus_total, "tenants-gpus"),
       summaryCard("Policy", t.policy, "tenants-policy")),
    t.tenants.length ? table([n("Tenant"), n("Guaranteed", 1), n("Guaranteed GPUs", 1),
                              n("Cap", 1), n("Cap GPUs", 1), n("Holds", 1), n("Borrows", 1),
                              n("Use"),
                              n("Running", 1), n("Waiting", 1)], rows, "tenants")
                     : el("p", {class: "muted", id: "tenants-empty"}, "No tenant has a job."),
    el("p", {class: "muted"}, "Tenants are the jobs' queue field. Shares are of all " + t.gpus_total +
       " GPUs; “borrows” is what a tenant holds beyond its guarantee. Without quotas in the " +
       "policy profile the quota columns stay empty."),
  ];
}

function useBar(x, total) {
  const bar = el("div", {class: "bar", title: x.gpus_held + " of " + total + " GPUs"},
                 el("span"));
  bar.firstChild.style.width = (total ? 100 * x.gpus_held / total : 0).toFixed(1) + "%";
  return bar;
}

async function viewHistory() {
  const h = await api("/v1/history");
  const s = h.samples;
  const utilised = s.some(x => x.gpu_utilization !== null);
  const rows = s.slice(-30).reverse().map(x => el("tr", {"data-at": x.at},
    cell("at", x.at, fmtTime(x.at)), cell("queue_length", x.queue_length, undefined, "num"),
    cell("pending", x.pending, undefined, "num"), cell("running", x.running, undefined, "num"),
    cell("gpus_allocated", x.gpus_allocated, undefined, "num"),
    cell("gpus_total", x.gpus_total, undefined, "num"),
    cell("gpu_utilization", x.gpu_utilization, fmtPercent(x.gpu_utilization), "num")));
  const n = (h, num) => ({label: h, num: num});
  return [
    el("p", {class: "muted", id: "history-meta", "data-interval": h.interval_s,
             "data-capacity": h.capacity},
       "One sample every " + h.interval_s + " s, the last " + h.capacity + " kept in the daemon's " +
       "memory (" + fmtDuration(h.interval_s * h.capacity) + "); " + s.length + " so far."),
    chart(s), el("p", {class: "muted"}, legendLine(HISTORY_SERIES.filter(
        ([, , key]) => key !== "gpu_utilization" || utilised))),
    el("h2", {}, "Latest samples"),
    table([n("Time"), n("Queue", 1), n("Pending", 1), n("Running", 1), n("GPUs allocated", 1),
           n("GPUs", 1), n("GPU utilisation", 1)], rows, "history"),
    utilised ? null : el("p", {class: "muted", id: "history-no-utilization"},
                         "GPU utilisation: no GPU monitor reports it to this daemon."),
  ];
}

// The series of the history chart: [colour, label, key].
const HISTORY_SERIES = [["#3b78d8", "GPUs allocated", "gpus_allocated"],
                        ["#b54708", "queue length", "queue_length"],
                        ["#067647", "GPU utilisation (%, right)", "gpu_utilization"]];

// A legend: a coloured key per [colour, label].
function legendLine(series) {
  const key = color => { const k = el("span", {class: "key"}); k.style.background = color; return k; };
  return el("span", {}, series.flatMap(([color, label]) => [key(color), label]));
}

// A line chart of GPUs allocated and queue length (left axis) and GPU utilisation where the
// monitor reports it (right axis, 0..100%) over the samples' time span.
function chart(samples) {
  const [svg, mk] = svgChart("history-chart");
  if (samples.length === 0) return svg;
  const t0 = Date.parse(samples[0].at), t1 = Date.parse(samples[samples.length - 1].at);
  const ymax = Math.max(1, ...samples.map(x => Math.max(x.gpus_total, x.queue_length)));
  const X = t => 40 + 720 * (t1 > t0 ? (Date.parse(t) - t0) / (t1 - t0) : 1);
  const Y = v => 200 - 185 * v / ymax;
  const U = f => 200 - 185 * f;
  for (const v of [0, ymax / 2, ymax]) {
    mk("line", {x1: 40, x2: 760, y1: Y(v), y2: Y(v), class: "grid-line"});
    mk("text", {x: 4, y: Y(v) + 4}).textContent = String(Math.round(v));
  }
  mk("text", {x: 40, y: 216}).textContent = fmtTime(samples[0].at);
  mk("text", {x: 760, y: 216, "text-anchor": "end"}).textContent =
      fmtTime(samples[samples.length - 1].at);
  // Steps: a value holds from its sample to the next.
  const line = (key, color, scale) => {
    const pts = samples.filter(x => x[key] !== null);
    if (!pts.length) return;
    mk("polyline", {
      points: pts.map((x, i) => (i ? X(x.at).toFixed(1) + "," + scale(pts[i - 1][key]).toFixed(1) + " " : "") +
                                X(x.at).toFixed(1) + "," + scale(x[key]).toFixed(1)).join(" "),
      fill: "none", stroke: color, "stroke-width": 2, "data-series": key});
  };
  line("gpus_allocated", HISTORY_SERIES[0][0], Y);
  line("queue_length", HISTORY_SERIES[1][0], Y);
  if (samples.some(x => x.gpu_utilization !== null)) {
    for (const f of [0, 0.5, 1]) {
      mk("text", {x: 798, y: U(f) + 4, "text-anchor": "end"}).textContent = (f * 100) + "%";
    }
    line("gpu_utilization", HISTORY_SERIES[2][0], U);
  }
  return svg;
}

// ---- routing and refresh ----

const VIEWS = {queue: viewQueue, cluster: viewCluster, job: viewJob, tenants: viewTenants,
               history: viewHistory};
let timer = null;
let generation = 0;

function route() {
  const hash = location.hash.replace(/^#\/?/, "");
  const [name, arg] = hash.split("/");
  return VIEWS[name] ? {name: name, arg: arg} : {name: "queue", arg: undefined};
}

async function render() {
  clearTimeout(timer);
  const mine = ++generation;
  const {name, arg} = route();
  for (const a of document.querySelectorAll("[data-nav]")) {
    a.classList.toggle("active", a.dataset.nav === name);
  }
  const status = document.getElementById("status");
  try {
    const nodes = await VIEWS[name](arg);
    if (mine !== generation) return;  // a newer render (another view) took over
    document.getElementById("view").replaceChildren(...nodes.filter(n => n !== null));
    status.className = "";
    delete document.body.dataset.error;
    status.textContent = "Updated " + new Date().toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
    document.body.dataset.view = name;
    document.body.dataset.renders = String(Number(document.body.dataset.renders || 0) + 1);
  } catch (e) {
    if (mine !== generation) return;
    status.className = "error";
    status.textContent = e.status === 401 ? "This daemon wants a token: paste yours above. (" + e.message + ")"
                                          : "Error: " + e.message;
    document.body.dataset.error = String(e.status || "network");
    // Another view's content would pass for this one's: show none (a refresh of the same view
    // keeps its last good content under the error line).
    if (document.body.dataset.view !== name) {
      document.getElementById("view").replaceChildren(
          el("p", {class: "muted", id: "view-error"}, "Nothing to show: " + e.message));
      delete document.body.dataset.view;
    }
  }
  timer = setTimeout(render, REFRESH_MS);
}

// #token=TOKEN (once, e.g. from a link): kept, then dropped from the address bar and history.
function takeTokenFromHash() {
  const m = location.hash.match(/^#token=([^&]*)(?:&(.*))?$/);
  if (!m) return;
  localStorage.setItem(TOKEN_KEY, decodeURIComponent(m[1]));
  history.replaceState(null, "", location.pathname + (m[2] ? "#" + m[2] : "#/queue"));
}

function init() {
  takeTokenFromHash();
  document.getElementById("refresh-s").textContent = String(REFRESH_MS / 1000);
  document.getElementById("token-form").addEventListener("submit", ev => {
    ev.preventDefault();
    const input = document.getElementById("token-input");
    if (input.value.trim()) localStorage.setItem(TOKEN_KEY, input.value.trim());
    input.value = "";
    render();
  });
  document.getElementById("token-forget").addEventListener("click", () => {
    localStorage.removeItem(TOKEN_KEY);
    render();
  });
  window.addEventListener("hashchange", render);
  render();
}

init();
