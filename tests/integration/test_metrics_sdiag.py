"""Operations surfaces: OpenMetrics and health probes on the controller and node ports
(MetricsType=metrics/openmetrics, Slurm 25.11's endpoints), sdiag's report and --reset, and the
Grafana dashboard's metric names."""

import json
import os
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import shoal_metric, wait_until

REPO = Path(__file__).resolve().parents[2]
SLEEPER = "#!/bin/bash\nsleep 120\n"
OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
METRIC_PATHS = ["/metrics", "/metrics/jobs", "/metrics/nodes", "/metrics/partitions",
                "/metrics/scheduler", "/metrics/jobs-users-accts", "/metrics/shoal"]


def curl(port, path, method="GET"):
    """(status, content type, body) of one request with curl."""
    cmd = ["curl", "-s", "-S", "-o", "-", "-w", "\n%{http_code} %{content_type}",
           "--max-time", "10", f"http://127.0.0.1:{port}{path}"]
    if method == "HEAD":
        cmd.insert(1, "-I")
    elif method != "GET":
        cmd[1:1] = ["-X", method]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, f"curl {path}: rc={r.returncode} {r.stderr}"
    body, _, tail = r.stdout.rpartition("\n")
    code, _, ctype = tail.partition(" ")
    return int(code), ctype, body


def families(port, path):
    code, ctype, body = curl(port, path)
    assert code == 200, f"{path}: HTTP {code}: {body}"
    assert ctype == OPENMETRICS_TYPE
    assert body.endswith("# EOF\n")
    return {f.name: f for f in text_string_to_metric_families(body)}


def value(fams, name, **labels):
    for s in fams[name].samples:
        if s.name in (name, name + "_total") and all(s.labels.get(k) == v
                                                     for k, v in labels.items()):
            return s.value
    raise AssertionError(f"no sample {name}{labels}")


def squeue_count(c, state):
    return len(c.run(["squeue", "-h", "-t", state, "-o", "%i"]).stdout.split())


def raw_exchange(port, payload, read=True):
    """Sends raw bytes on the controller port; returns what came back (b"" on a reset)."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as s:
        try:
            s.sendall(payload)
        except OSError:
            return b""  # the daemon closed first (a 431 after 8 KiB of a huge head)
        if not read:
            return b""
        chunks = []
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                chunks.append(data)
        except (ConnectionResetError, socket.timeout):
            pass
        return b"".join(chunks)


def node_port(c, name):
    m = re.search(rf"^NodeName={name}\b.*\bPort=(\d+)", c.conf_path.read_text(), re.M)
    assert m, f"no Port= for {name} in slurm.conf"
    return int(m.group(1))


def test_metrics_match_squeue_and_sinfo_and_survive_garbage(cluster, users):
    c = cluster(nodes=3, cpus=2, conf=["MetricsType=metrics/openmetrics"])
    port = c.controller_port()
    user = users["shoaltest1"]
    c.run(["scontrol", "update", "NodeName=n3", "State=DRAIN", "Reason=maint"])
    running = [c.sbatch(["-w", n, "-c", "2"], SLEEPER) for n in ("n1", "n2")]
    for j in running:
        c.wait_job(j, "RUNNING", timeout=30)
    pending = [c.sbatch(["-c", "2"], SLEEPER, user=user) for _ in range(2)]
    held = c.sbatch(["-H", "-c", "1"], SLEEPER)
    for j in pending + [held]:
        assert c.job_state(j) == "PENDING"
    time.sleep(1.2)  # past the metrics' one-second cache

    fams = {p: families(port, p) for p in METRIC_PATHS}
    jobs, nodes, parts = fams["/metrics/jobs"], fams["/metrics/nodes"], fams["/metrics/partitions"]
    # Job counts as squeue shows them.
    assert value(jobs, "slurm_jobs_running") == squeue_count(c, "R") == 2
    assert value(jobs, "slurm_jobs_pending") == squeue_count(c, "PD") == 3
    assert value(jobs, "slurm_jobs_hold") == 1
    assert value(jobs, "slurm_jobs") == 5
    assert value(jobs, "slurm_jobs_cpus_alloc") == 4
    # Node counts as sinfo shows them (Slurm counts a drained idle node as idle + drain).
    states = dict(line.split() for line in
                  c.run(["sinfo", "-h", "-N", "-o", "%N %t"]).stdout.splitlines())
    assert states == {"n1": "alloc", "n2": "alloc", "n3": "drain"}
    assert value(nodes, "slurm_nodes") == 3
    assert value(nodes, "slurm_nodes_alloc") == 2
    assert value(nodes, "slurm_nodes_idle") == 1
    assert value(nodes, "slurm_nodes_drain") == value(nodes, "slurm_nodes_drained") == 1
    assert value(nodes, "slurm_node_cpus_alloc", node="n1") == 2
    assert value(nodes, "slurm_node_cpus_idle", node="n3") == 2
    part = c.run(["sinfo", "-h", "-o", "%R"]).stdout.split()[0].rstrip("*")
    assert value(parts, "slurm_partitions") == 1
    assert value(parts, "slurm_partition_jobs_pending", partition=part) == 3
    assert value(parts, "slurm_partition_jobs_running", partition=part) == 2
    assert value(parts, "slurm_partition_nodes", partition=part) == 3
    assert value(parts, "slurm_partition_jobs_max_job_nodes_nohold", partition=part) == 1
    ua = fams["/metrics/jobs-users-accts"]
    assert value(ua, "slurm_user_jobs_pending", username="shoaltest1") == 2
    assert value(ua, "slurm_user_jobs_running", username="root") == 2
    sched = fams["/metrics/scheduler"]
    assert value(sched, "slurm_schedule_cycle_cnt") >= 1
    assert value(sched, "slurm_sdiag_jobs_submitted") == 5
    # /metrics has everything, Shoal's own series included.
    everything = fams["/metrics"]
    for name in ("slurm_jobs_pending", "slurm_nodes_idle", "slurm_partition_jobs_pending",
                 "slurm_schedule_cycle_last", "slurm_bf_cycle_last", "shoal_rpc_requests",
                 "shoal_rpc_duration_seconds", "shoal_journal_commit_seconds"):
        assert name in everything, name
    assert value(everything, "shoal_rpc_requests", type="REQUEST_SUBMIT_BATCH_JOB") >= 5
    assert value(everything, "shoal_rpc_user_requests", user="shoaltest1") >= 2
    commits = [s for s in everything["shoal_journal_commit_seconds"].samples
               if s.name.endswith("_count")]
    assert commits and commits[0].value >= 5

    # Probes, unknown paths, other methods, HEAD.
    for probe in ("/livez", "/readyz", "/healthz"):
        assert curl(port, probe)[0] == 200
    assert curl(port, "/nope")[0] == 404
    assert curl(port, "/metrics/nope")[0] == 404
    assert curl(port, "/metrics", method="POST")[0] == 405
    code, ctype, body = curl(port, "/metrics/jobs", method="HEAD")
    assert code == 200

    # Garbage, a truncated head, a 1 MB head: answered or dropped, the controller stays up.
    assert raw_exchange(port, b"GET /metrics HTTP/1.1\r\nbad header line\r\n\r\n").startswith(
        b"HTTP/1.1 400 ")
    assert raw_exchange(port, b"GARBAGE!\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert raw_exchange(port, b"\x00\x01\x02\x03not a frame at all") == b""
    big = raw_exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20)
                       + b"\r\n\r\n")
    assert big == b"" or big.startswith(b"HTTP/1.1 431 ")
    assert c.run(["squeue", "-h"]).returncode == 0
    assert curl(port, "/livez")[0] == 200

    # The node daemons: probes and their own metrics.
    n1 = node_port(c, "n1")
    for probe in ("/livez", "/readyz", "/healthz"):
        assert curl(n1, probe)[0] == 200
    nfams = families(n1, "/metrics")
    assert value(nfams, "shoal_node_registered", node="n1") == 1
    assert value(nfams, "shoal_node_jobs", node="n1") == 1
    assert curl(n1, "/nope")[0] == 404

    # A one-second scrape loop while a short job runs does not disturb it.
    for j in running + pending + [held]:
        c.run(["scancel", str(j)])
    stop = threading.Event()
    errors = []

    def scrape():
        while not stop.is_set():
            for p in METRIC_PATHS:
                try:
                    families(port, p)
                except Exception as e:  # noqa: BLE001 (reported below)
                    errors.append(f"{p}: {e!r}")
            time.sleep(1)

    t = threading.Thread(target=scrape)
    t.start()
    try:
        short = c.sbatch([], "#!/bin/bash\nsleep 3\necho done\n")
        assert c.wait_job(short, timeout=60) == "COMPLETED"
    finally:
        stop.set()
        t.join()
    assert not errors, errors[:3]

    # The dashboard only names series the controller serves.
    served = set()
    for fam in everything.values():
        served.add(fam.name)
        served.update(s.name for s in fam.samples)
    served.update(s.name for fam in fams["/metrics/jobs-users-accts"].values()
                  for s in fam.samples)
    dashboard = json.loads((REPO / "deploy/grafana/shoal-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    referenced = set()
    for e in exprs:
        referenced.update(re.findall(r"\b((?:slurm|shoal)_[a-z0-9_]+)", e))
    assert referenced, "the dashboard references no metric"
    unknown = sorted(referenced - served)
    assert not unknown, f"dashboard metrics the controller does not serve: {unknown}"


def test_metrics_off_without_metrics_type_and_sdiag(cluster, users):
    c = cluster(nodes=1)
    port = c.controller_port()
    user = users["shoaltest2"]
    # Probes are always on; metrics need MetricsType=metrics/openmetrics, as in Slurm.
    assert curl(port, "/livez")[0] == 200
    assert curl(port, "/readyz")[0] == 200
    assert curl(port, "/metrics")[0] == 404

    before = c.run(["sdiag"]).stdout
    submitted = int(re.search(r"^Jobs submitted: (\d+)$", before, re.M).group(1))
    for _ in range(3):
        c.sbatch([], "#!/bin/bash\ntrue\n", user=user)
    out = c.run(["sdiag"]).stdout
    lines = out.splitlines()
    assert lines[0] == "*" * 55
    assert re.match(r"^sdiag output at \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4} \(\d+\)$", lines[1])
    assert lines[2].startswith("Data since      ")
    for head in ("Server thread count:  ", "Agent queue size:     ", "DBD Agent queue size: ",
                 "Jobs submitted: ", "Jobs started:   ", "Jobs completed: ", "Jobs canceled:  ",
                 "Jobs failed:    ", "Job states ts:  ", "Jobs pending:   ", "Jobs running:   ",
                 "Main schedule statistics (microseconds):", "\tLast cycle:   ",
                 "Backfilling stats", "\tTotal backfilled jobs (since last slurm start): ",
                 "Latency for 1000 calls to gettimeofday(): ",
                 "Remote Procedure Call statistics by message type",
                 "Remote Procedure Call statistics by user", "Pending RPC statistics"):
        assert any(line.startswith(head) for line in lines), head
    assert int(re.search(r"^Jobs submitted: (\d+)$", out, re.M).group(1)) == submitted + 3
    row = re.search(r"^\tREQUEST_SUBMIT_BATCH_JOB\s+\( 4003\) count:(\d+)\s+ave_time:(\d+)\s+"
                    r"total_time:(\d+)$", out, re.M)
    assert row and int(row.group(1)) == 3
    urow = re.search(r"^\tshoaltest2\s+\(\s*%d\) count:(\d+) " % user.uid, out, re.M)
    assert urow and int(urow.group(1)) >= 3
    # Sorted by count, most first.
    counts = [int(m) for m in re.findall(r"^\t\S+\s+\(\s*\d+\) count:(\d+)", out.split(
        "by message type\n")[1].split("\n\n")[0], re.M)]
    assert counts == sorted(counts, reverse=True)
    by_id = c.run(["sdiag", "--sort-by-id"]).stdout
    ids = [int(m) for m in re.findall(r"^\t\S+\s+\(\s*(\d+)\) count:", by_id.split(
        "by message type\n")[1].split("\n\n")[0], re.M)]
    assert ids == sorted(ids)

    # --reset: admins only, with Slurm's message; then the counters start again.
    r = c.run(["sdiag", "-r"], user=user, check=False)
    assert r.returncode != 0
    assert "slurm_reset_statistics: Access/permission denied" in r.stderr
    r = c.run(["sdiag", "--reset"])
    assert r.stdout == "Reset scheduling statistics\n"
    after = c.run(["sdiag"]).stdout
    assert re.search(r"^Jobs submitted: 0$", after, re.M)
    assert "REQUEST_SUBMIT_BATCH_JOB" not in after
    wait_until(lambda: c.run(["squeue", "-h"]).stdout.strip() == "", 30, "the jobs to end")


def test_metrics_auth_users_need_a_token(cluster, users, tmp_path):
    """MetricsAuthUsers: only those users (and root/SlurmUser), proving it with an auth/jwt
    token; no token is 401, another user's is 403."""
    key_path = tmp_path / "jwt_hs256.key"
    key_path.write_bytes(os.urandom(32))
    os.chmod(key_path, 0o600)
    c = cluster(nodes=1, conf=["MetricsType=metrics/openmetrics", "MetricsAuthUsers=shoaltest1",
                               "AuthAltTypes=auth/jwt", f"AuthAltParameters=jwt_key={key_path}"])
    port = c.controller_port()

    def token(user=None):
        out = c.run(["scontrol", "token"], user=user).stdout.strip()
        assert out.startswith("SLURM_JWT="), out
        return out[len("SLURM_JWT="):]

    def get(headers):
        cmd = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10"]
        for h in headers:
            cmd += ["-H", h]
        r = subprocess.run(cmd + [f"http://127.0.0.1:{port}/metrics/jobs"], capture_output=True,
                           text=True, timeout=20)
        return int(r.stdout)

    assert get([]) == 401
    assert get([f"X-SLURM-USER-TOKEN: {token(users['shoaltest1'])}"]) == 200
    assert get([f"Authorization: Bearer {token()}"]) == 200  # root
    assert get([f"X-SLURM-USER-TOKEN: {token(users['shoaltest2'])}"]) == 403
    assert get(["X-SLURM-USER-TOKEN: not.a.token"]) == 401
    assert curl(port, "/livez")[0] == 200  # probes stay open


def test_priority_recalculation_is_counted_and_timed(cluster):
    """/metrics/shoal says how often the multifactor priorities were recalculated, over how many
    pending jobs and how long it took. A reconfigure recalculates at once."""
    c = cluster(nodes=2, conf=["MetricsType=metrics/openmetrics",
                               "PriorityType=priority/multifactor", "PriorityWeightAge=1000",
                               "PriorityWeightJobSize=100"])
    blocker = c.sbatch(["-N2", "--exclusive", "-t", "5"], SLEEPER)
    c.wait_job(blocker, states={"RUNNING"}, timeout=30)
    waiting = [c.sbatch(["-t", "5"], "#!/bin/bash\ntrue\n") for _ in range(3)]
    before = shoal_metric(c, "shoal_priority_recalcs_total", fresh=True)
    c.run(["scontrol", "reconfigure"])
    wait_until(lambda: shoal_metric(c, "shoal_priority_recalcs_total", fresh=True) > before, 15,
               "a recalculation after the reconfigure")
    assert shoal_metric(c, "shoal_priority_recalc_last_jobs") == len(waiting)
    # The time is a real duration: present, and well under a second for three jobs.
    last = shoal_metric(c, "shoal_priority_recalc_last_seconds")
    assert 0 <= last < 1, last
    c.run(["scancel", str(blocker)] + [str(j) for j in waiting])


def test_priority_recalculation_runs_in_batches_and_reaches_every_job(cluster):
    """A recalculation over more pending jobs than one batch (2,048) is spread over turns of the
    main loop, so requests are answered between the batches, and it still reaches every job:
    after a reconfigure that changes a weight, each of 5,000 pending jobs has the new priority."""
    c = cluster(nodes=1, conf=["MetricsType=metrics/openmetrics", "MaxArraySize=5001",
                               "PriorityType=priority/multifactor", "PriorityWeightAge=0",
                               "PriorityWeightJobSize=1000"])
    blocker = c.sbatch(["-N1", "--exclusive", "-t", "5"], SLEEPER)
    c.wait_job(blocker, states={"RUNNING"}, timeout=30)
    array = c.sbatch(["--array=0-4999", "-t", "5", "-o", "/dev/null"], "#!/bin/bash\ntrue\n")

    def priorities():
        out = c.run(["squeue", "-h", "-r", "-t", "PD", "-j", str(array), "-o", "%Q"]).stdout
        return out.split()

    before = priorities()
    assert len(before) == 5000 and len(set(before)) == 1, set(before)
    text = c.conf_path.read_text()
    c.conf_path.write_text(text.replace("PriorityWeightJobSize=1000", "PriorityWeightJobSize=9000"))
    count = shoal_metric(c, "shoal_priority_recalcs_total", fresh=True)
    c.run(["scontrol", "reconfigure"])
    wait_until(lambda: shoal_metric(c, "shoal_priority_recalcs_total", fresh=True) > count, 15,
               "the recalculation after the reconfigure")
    assert shoal_metric(c, "shoal_priority_recalc_last_jobs") == 5000
    assert shoal_metric(c, "shoal_priority_recalc_last_batches") == 3  # 2,048 + 2,048 + 904
    longest = shoal_metric(c, "shoal_priority_recalc_last_longest_batch_seconds")
    assert 0 < longest <= shoal_metric(c, "shoal_priority_recalc_last_seconds"), longest
    after = priorities()
    assert len(after) == 5000 and len(set(after)) == 1, set(after)
    assert int(after[0]) > int(before[0]), (before[0], after[0])
    c.run(["scancel", str(blocker), str(array)])
