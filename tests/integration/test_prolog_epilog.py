"""Prolog/Epilog (slurm.conf Prolog, Epilog, PrologFlags, SchedulerParameters=
nohold_on_prolog_fail), PrologSlurmctld, TaskProlog, HealthCheckProgram and the controller's
registration checks, against real daemons. Scripts write what they saw into files of the test's
own temporary directory; a script fails on the node named in a "fail-<node>" file."""

import os
import re
import signal
import socket
import time

from conftest import SBIN, parse_kv, wait_until

QUICK = "#!/bin/bash\necho hello\n"


def program(path, text):
    path.write_text("#!/bin/bash\n" + text)
    os.chmod(path, 0o755)
    return path


def node_script(path, out_dir):
    """Writes its environment to <out_dir>/<script name>.<job>.<node>; exits 1 with a message
    when <out_dir>/fail-<node> exists."""
    name = path.name
    return program(path, f"""
env | sort > {out_dir}/{name}.$SLURM_JOB_ID.$SLURMD_NODENAME
if [ -e {out_dir}/fail-$SLURMD_NODENAME ]; then echo "{name} says no"; exit 1; fi
exit 0
""")


def env_of(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def show_node(c, name):
    return parse_kv(c.run(["scontrol", "show", "node", name]).stdout)


def node_reason(c, name):
    """The node's Reason, without the "[user@time]" scontrol appends."""
    text = c.run(["scontrol", "show", "node", name]).stdout
    m = re.search(r"Reason=(.*?)(?: \[[^\]]*\])?$", text, re.M)
    return m.group(1).strip() if m else ""


def drained(c, name, reason):
    n = show_node(c, name)
    return "DRAIN" in n.get("State", "") and node_reason(c, name).startswith(reason)


def test_health_check_drains_with_its_message_and_resume(cluster, tmp_path):
    check = program(tmp_path / "health.sh", f"""
if [ -e {tmp_path}/fail-$SLURMD_NODENAME ]; then
  echo "  disk /scratch full on $SLURMD_NODENAME  "; echo second line; exit 1
fi
exit 0
""")
    c = cluster(nodes=2, conf=[f"HealthCheckProgram={check}", "HealthCheckInterval=2",
                               "HealthCheckNodeState=ANY"])
    assert c.node_state("n2") == "idle"
    (tmp_path / "fail-n2").write_text("")
    # Within one interval (plus the drain's trip to the controller).
    wait_until(lambda: drained(c, "n2", "disk /scratch full on n2"), 6, "n2 drained")
    assert node_reason(c, "n2") == "disk /scratch full on n2"
    assert not drained(c, "n1", "")
    os.unlink(tmp_path / "fail-n2")
    c.run(["scontrol", "update", "nodename=n2", "state=resume"])
    wait_until(lambda: c.node_state("n2") == "idle", 5, "n2 back")
    # The passing check does not drain it again.
    time.sleep(4)
    assert c.node_state("n2") == "idle"


def test_health_check_node_state_idle_skips_allocated_nodes(cluster, tmp_path):
    check = program(tmp_path / "health.sh", f"""
[ -e {tmp_path}/fail-$SLURMD_NODENAME ] && {{ echo broken; exit 1; }}
exit 0
""")
    c = cluster(nodes=1, conf=[f"HealthCheckProgram={check}", "HealthCheckInterval=1",
                               "HealthCheckNodeState=IDLE"])
    job = c.sbatch(["-w", "n1", "--exclusive"], "#!/bin/bash\nsleep 6\n")
    c.wait_job(job, "RUNNING", timeout=20)
    wait_until(lambda: c.node_state("n1") == "alloc", 5, "n1 allocated")
    (tmp_path / "fail-n1").write_text("")
    time.sleep(3)
    assert not drained(c, "n1", ""), "checked while ALLOCATED with HealthCheckNodeState=IDLE"
    c.wait_job(job, timeout=30)
    wait_until(lambda: drained(c, "n1", "broken"), 8, "n1 drained once idle")


def test_prolog_failure_drains_and_requeues_held(cluster, tmp_path):
    prolog = node_script(tmp_path / "prolog", tmp_path)
    c = cluster(nodes=2, conf=[f"Prolog={prolog}"])
    (tmp_path / "fail-n1").write_text("")
    job = c.sbatch(["-w", "n1"], QUICK)
    wait_until(lambda: drained(c, "n1", "Prolog error"), 20, "n1 drained by the prolog")
    wait_until(lambda: c.show_job(job)["Reason"] == "launch_failed_requeued_held", 20,
               "job held")
    j = c.show_job(job)
    assert j["JobState"] == "PENDING"
    assert j["Priority"] == "0"
    assert int(j["Restarts"]) >= 1
    assert not (c.work / f"slurm-{job}.out").exists() or \
        "hello" not in (c.work / f"slurm-{job}.out").read_text()
    # The prolog ran with the job's environment.
    env = env_of(tmp_path / f"prolog.{job}.n1")
    assert env["SLURM_JOB_ID"] == str(job)
    assert env["SLURM_SCRIPT_CONTEXT"] == "prolog_slurmd"
    assert env["SLURMD_NODENAME"] == "n1"
    assert env["SLURM_JOB_USER"] == "root" and env["SLURM_JOB_UID"] == "0"
    assert env["SLURM_JOB_PARTITION"] == "debug"
    assert env["SLURM_JOB_NODELIST"] == "n1"
    assert "SLURM_CLUSTER_NAME" in env


def test_prolog_failure_with_nohold_runs_elsewhere(cluster, tmp_path):
    prolog = node_script(tmp_path / "prolog", tmp_path)
    c = cluster(nodes=2, conf=[f"Prolog={prolog}",
                               "SchedulerParameters=nohold_on_prolog_fail"])
    (tmp_path / "fail-n1").write_text("")
    job = c.sbatch([], QUICK)
    assert c.wait_job(job, timeout=40) == "COMPLETED"
    assert drained(c, "n1", "Prolog error")
    assert c.show_job(job)["NodeList"] == "n2"
    assert (tmp_path / f"prolog.{job}.n1").exists()
    assert (tmp_path / f"prolog.{job}.n2").exists()
    assert "hello" in (c.work / f"slurm-{job}.out").read_text()


def test_epilog_runs_on_every_node_and_failure_drains(cluster, tmp_path):
    prolog = node_script(tmp_path / "prolog", tmp_path)
    epilog = node_script(tmp_path / "epilog", tmp_path)
    c = cluster(nodes=2, conf=[f"Prolog={prolog}", f"Epilog={epilog}"])
    (tmp_path / "fail-n2").write_text("")
    # Without PrologFlags=Alloc the prolog runs on the batch host only (no step on n2).
    job = c.sbatch(["-N", "2"], QUICK)
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    wait_until(lambda: drained(c, "n2", "Epilog error"), 15, "n2 drained by the epilog")
    for node in ("n1", "n2"):
        env = env_of(tmp_path / f"epilog.{job}.{node}")
        assert env["SLURM_SCRIPT_CONTEXT"] == "epilog_slurmd"
        assert env["SLURM_JOB_ID"] == str(job)
        assert env["SLURMD_NODENAME"] == node
        assert env["SLURM_JOB_NODELIST"] == "n[1-2]"
    assert (tmp_path / f"prolog.{job}.n1").exists()
    assert not (tmp_path / f"prolog.{job}.n2").exists()
    assert not drained(c, "n1", "")


def test_job_completing_until_epilog_done(cluster, tmp_path):
    epilog = program(tmp_path / "epilog", f"sleep 4; touch {tmp_path}/epilog-done\n")
    c = cluster(nodes=1, conf=[f"Epilog={epilog}"])
    job = c.sbatch([], QUICK)
    wait_until(lambda: c.show_job(job)["JobState"] == "COMPLETING", 15, "job COMPLETING")
    assert not (tmp_path / "epilog-done").exists()
    wait_until(lambda: c.show_job(job)["JobState"] == "COMPLETED", 15, "job COMPLETED")
    assert (tmp_path / "epilog-done").exists()


def test_prolog_flags_alloc_runs_on_all_nodes_first(cluster, tmp_path):
    prolog = node_script(tmp_path / "prolog", tmp_path)
    c = cluster(nodes=2, conf=[f"Prolog={prolog}", "PrologFlags=Alloc"])
    job = c.sbatch(["-N", "2"], f"#!/bin/bash\nls {tmp_path} > {tmp_path}/seen\n")
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    seen = (tmp_path / "seen").read_text().split()
    # Both prologs had run before the batch script started.
    assert f"prolog.{job}.n1" in seen and f"prolog.{job}.n2" in seen


def test_prolog_flags_contain_shows_extern_step(cluster, tmp_path):
    c = cluster(nodes=2, conf=["PrologFlags=Contain"])
    job = c.sbatch(["-N", "2"], "#!/bin/bash\nsleep 30\n")
    c.wait_job(job, "RUNNING", timeout=20)

    def extern_step():
        r = c.run(["scontrol", "show", "step", f"{job}.extern"], check=False)
        return r.stdout if r.returncode == 0 else ""
    # The extern step is made when every node has answered the allocation's prolog request,
    # which can come just after the job shows RUNNING.
    wait_until(lambda: extern_step(), 20, "the extern step")
    out = extern_step()
    assert f"StepId={job}.extern" in out, out
    assert "NodeList=n[1-2]" in out, out
    steps = c.run(["squeue", "-s", "-h", "-o", "%i"]).stdout.split()
    assert f"{job}.extern" in steps and f"{job}.batch" in steps
    c.run(["scancel", str(job)])
    c.wait_job(job, timeout=30)

    def sacct_ids():
        r = c.run(["sacct", "-j", str(job), "-n", "-P", "-o", "JobID,State"], check=False)
        return dict(line.split("|", 1) for line in r.stdout.split() if "|" in line)
    # Accounting reaches shoaldbd after the controller (as in Slurm): wait for both steps.
    wait_until(lambda: {f"{job}.extern", f"{job}.batch"} <= sacct_ids().keys(), 20,
               "extern and batch steps in sacct")


def test_prolog_slurmctld_runs_and_failure_requeues(cluster, tmp_path):
    ctld = program(tmp_path / "pctld", f"""
env | sort > {tmp_path}/pctld.$SLURM_JOB_ID
[ -e {tmp_path}/fail ] && exit 3
exit 0
""")
    ectld = program(tmp_path / "ectld", f"env | sort > {tmp_path}/ectld.$SLURM_JOB_ID\n")
    c = cluster(nodes=1, conf=[f"PrologSlurmctld={ctld}", f"EpilogSlurmctld={ectld}"])
    job = c.sbatch([], QUICK)
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    env = env_of(tmp_path / f"pctld.{job}")
    assert env["SLURM_SCRIPT_CONTEXT"] == "prolog_slurmctld"
    assert env["SLURM_JOB_NODELIST"] == "n1"
    wait_until(lambda: (tmp_path / f"ectld.{job}").exists(), 10, "EpilogSlurmctld")
    assert env_of(tmp_path / f"ectld.{job}")["SLURM_SCRIPT_CONTEXT"] == "epilog_slurmctld"
    (tmp_path / "fail").write_text("")
    bad = c.sbatch([], QUICK)
    wait_until(lambda: int(c.show_job(bad).get("Restarts", "0")) >= 1, 30, "requeue")
    assert c.show_job(bad)["JobState"] in ("PENDING", "CONFIGURING")
    assert not (c.work / f"slurm-{bad}.out").exists()
    c.run(["scancel", str(bad)])


def test_task_prolog_exports_to_the_task(cluster, tmp_path):
    tp = program(tmp_path / "taskprolog", """
echo "export FROM_TASK_PROLOG=yes-$SLURM_JOB_ID"
echo "unset TO_BE_REMOVED"
echo "print hello from the task prolog"
""")
    te = program(tmp_path / "taskepilog", f"echo $SLURM_JOB_ID > {tmp_path}/taskepilog.$SLURM_JOB_ID\n")
    c = cluster(nodes=1, conf=[f"TaskProlog={tp}", f"TaskEpilog={te}"])
    job = c.sbatch(["--export=ALL,TO_BE_REMOVED=1"],
                   "#!/bin/bash\necho var=$FROM_TASK_PROLOG\necho rm=${TO_BE_REMOVED-unset}\n")
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    out = (c.work / f"slurm-{job}.out").read_text()
    assert f"var=yes-{job}" in out, out
    assert "rm=unset" in out, out
    assert "hello from the task prolog" in out, out
    wait_until(lambda: (tmp_path / f"taskepilog.{job}").exists(), 10, "TaskEpilog")
    r = c.run(["srun", "-n", "1", "bash", "-c", "echo step=$FROM_TASK_PROLOG"])
    assert "step=yes-" in r.stdout, r.stdout


def test_task_epilog_runs_after_each_srun_task(cluster, tmp_path):
    te = program(tmp_path / "taskepilog",
                 f"echo $SLURM_STEP_ID $SLURMD_NODENAME $(id -un) > "
                 f"{tmp_path}/te.$SLURM_JOB_ID.$SLURM_PROCID\n")
    c = cluster(nodes=2, conf=[f"TaskEpilog={te}"])
    os.chmod(tmp_path, 0o777)
    r = c.run(["srun", "-N2", "-n3", "true"])
    assert r.returncode == 0, r.stderr
    files = sorted(tmp_path.glob("te.*"))
    # srun returns only after every node ran its tasks' epilogs.
    assert [f.name.rsplit(".", 1)[1] for f in files] == ["0", "1", "2"], files
    lines = [f.read_text().split() for f in files]
    assert {l[0] for l in lines} == {"0"}, lines
    assert {l[1] for l in lines} == {"n1", "n2"}, lines


def test_node_takes_no_job_while_an_epilog_runs(cluster, tmp_path):
    ep = program(tmp_path / "epilog",
                 f"sleep 3; date +%s.%N > {tmp_path}/epilog-end.$SLURM_JOB_ID\n")
    c = cluster(nodes=1, conf=[f"Epilog={ep}"])
    first = c.sbatch([], "#!/bin/bash\ntrue\n")
    wait_until(lambda: c.job_state(first) in ("COMPLETED", "COMPLETING"), 30, "first job ends")
    os.chmod(tmp_path, 0o777)
    second = c.sbatch([], f"#!/bin/bash\ndate +%s.%N > {tmp_path}/second-start\n")
    assert c.wait_job(second, timeout=40) == "COMPLETED"
    epilog_end = float((tmp_path / f"epilog-end.{first}").read_text())
    second_start = float((tmp_path / "second-start").read_text())
    # The only node was busy with the first job's Epilog until it ended.
    assert second_start >= epilog_end, (second_start, epilog_end)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_registration_with_low_memory_is_drained(cluster):
    c = cluster(nodes=1)
    host = socket.gethostname().split(".")[0]
    # A node daemon alone under the host's own name reports what it found: far less memory
    # than this configuration claims.
    conf = c.conf_path.read_text()
    c.conf_path.write_text(conf + f"NodeName={host} NodeAddr=127.0.0.1 CPUs=1 "
                           f"RealMemory=900000000 Port={free_port()}\n")
    c.kill_controller(signal.SIGTERM)
    c.start_controller()
    c._spawn(host, [SBIN / "shoald", "-D", "-f", c.conf_path, "-N", host])
    mem_mb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)

    wait_until(lambda: node_reason(c, host).startswith("Low RealMemory"), 20, "low memory drain")
    got = node_reason(c, host)
    reported = int(got.split("reported:")[1].split(" ")[0])
    assert abs(reported - mem_mb) <= 64, got
    assert got == f"Low RealMemory (reported:{reported} < 100.00% of configured:900000000)"
    assert "DRAIN" in show_node(c, host)["State"]
    c.kill_node(host, signal.SIGTERM)


def test_job_configuring_while_alloc_prologs_run(cluster, tmp_path):
    prolog = program(tmp_path / "prolog", "sleep 3\n")
    c = cluster(nodes=2, conf=[f"Prolog={prolog}", "PrologFlags=Alloc"])
    job = c.sbatch(["-N", "2"], QUICK)
    wait_until(lambda: c.job_state(job) == "CONFIGURING", 10, "job CONFIGURING")
    assert c.run(["squeue", "-h", "-j", str(job), "-o", "%t"]).stdout.strip() == "CF"
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    assert "hello" in (c.work / f"slurm-{job}.out").read_text()


def test_cancel_while_prolog_runs_never_starts_the_script(cluster, tmp_path):
    prolog = program(tmp_path / "prolog", "sleep 3\n")
    c = cluster(nodes=1, conf=[f"Prolog={prolog}"])
    job = c.sbatch([], f"#!/bin/bash\ntouch {tmp_path}/script-ran\n")
    c.wait_job(job, "RUNNING", timeout=10)
    c.run(["scancel", str(job)])
    assert c.wait_job(job, timeout=30) == "CANCELLED"
    time.sleep(1)
    assert not (tmp_path / "script-ran").exists()
    assert not drained(c, "n1", "")


def test_contain_creates_extern_cgroup_on_every_node_until_the_end(cluster, tmp_path):
    from test_cgroups import CG_CONF, SLURM_CONF, V1_ROOTS, node_key
    c = cluster(nodes=2, cpus=2, memory=2000, conf=SLURM_CONF + ["PrologFlags=Contain"],
                etc_files={"cgroup.conf": CG_CONF})
    job = c.sbatch(["-N", "2"], "#!/bin/bash\nsleep 30\n")
    c.wait_job(job, "RUNNING", timeout=20)

    def extern_dirs():
        found = set()
        for root in V1_ROOTS + ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]:
            for node in ("n1", "n2"):
                if os.path.isdir(os.path.join(root, "shoal", node_key(c, node), f"job_{job}",
                                              "step_extern")):
                    found.add(node)
        return found
    wait_until(lambda: extern_dirs() == {"n1", "n2"}, 10, "extern step cgroups on both nodes")
    c.run(["scancel", str(job)])
    c.wait_job(job, timeout=30)
    wait_until(lambda: not extern_dirs(), 20, "extern step cgroups removed")


def test_srun_runs_prolog_before_first_step_on_each_node(cluster, tmp_path):
    prolog = node_script(tmp_path / "prolog", tmp_path)
    c = cluster(nodes=2, conf=[f"Prolog={prolog}"])
    r = c.run(["srun", "-N", "2", "-l", "bash", "-c", f"ls {tmp_path}"])
    lines = r.stdout.split()
    jobs = {f.split(".")[1] for f in os.listdir(tmp_path) if f.startswith("prolog.")}
    assert len(jobs) == 1
    job = jobs.pop()
    # Each node's prolog had run before that node's task listed the directory.
    assert f"prolog.{job}.n1" in lines and f"prolog.{job}.n2" in lines, r.stdout
    env = env_of(tmp_path / f"prolog.{job}.n2")
    assert env["SLURM_JOB_NODELIST"] == "n[1-2]"
    assert env["SLURMD_NODENAME"] == "n2"

    (tmp_path / "fail-n2").write_text("")
    r = c.run(["srun", "-N", "2", "true"], check=False)
    assert r.returncode != 0
    wait_until(lambda: drained(c, "n2", "Prolog error"), 10, "n2 drained")


def test_registration_with_fewer_gres_is_drained(cluster):
    c = cluster(nodes=2, conf=["GresTypes=gpu", "NodeName=n1 Gres=gpu:4"],
                etc_files={"gres.conf": "NodeName=n1 Name=gpu Count=2\n"})
    wait_until(lambda: drained(c, "n1", "gres/gpu"), 15, "n1 drained for missing GPUs")
    assert node_reason(c, "n1") == "gres/gpu count reported lower than configured (2 < 4)"
    assert not drained(c, "n2", "")


def test_prolog_past_prolog_epilog_timeout_is_killed_and_fails(cluster, tmp_path):
    prolog = program(tmp_path / "prolog", f"sleep 60; touch {tmp_path}/prolog-finished\n")
    c = cluster(nodes=1, conf=[f"Prolog={prolog}", "PrologEpilogTimeout=2"])
    job = c.sbatch([], QUICK)
    began = time.monotonic()
    wait_until(lambda: drained(c, "n1", "Prolog error"), 15, "n1 drained")
    assert time.monotonic() - began < 10
    wait_until(lambda: c.show_job(job)["Reason"] == "launch_failed_requeued_held", 10, "held")
    assert not (tmp_path / "prolog-finished").exists()


DRAIN_CLIENT = """
import sys
sys.path.insert(0, {here!r})
import wire
node, reason, sock, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
# Request{{node_drain(24): NodeDrainRequest{{node_name(1), reason(2), health_check(4)}}}}
body = wire.field_bytes(24, wire.field_bytes(1, node) + wire.field_bytes(2, reason) +
                        wire.field_varint(4, 1))
rc, error, cred = wire.ask_agent(sock, body)
resp = wire.call(("127.0.0.1", port), body, wire.encode_credential(cred))
print(wire.first(resp, 1, 0), wire.first(resp, 2, b"").decode())
"""


def test_node_drain_request_needs_root(cluster, users):
    c = cluster(nodes=1)
    here = os.path.dirname(os.path.abspath(__file__))
    args = ["/usr/bin/python3", "-c", DRAIN_CLIENT.format(here=here)]
    tail = [str(c.dir / "run" / "auth.sock"), str(c.controller_port())]
    r = c.run(args + ["n1", "user says so"] + tail, user=users["shoaltest1"])
    assert r.stdout.split()[0] != "0" and "Access/permission denied" in r.stdout, r.stdout
    assert not drained(c, "n1", "")
    r = c.run(args + ["n1", "root says so"] + tail)
    assert r.stdout.split()[0] == "0", r.stdout
    assert drained(c, "n1", "root says so")


def test_salloc_waits_for_alloc_prologs_unless_nohold(cluster, tmp_path):
    prolog = program(tmp_path / "prolog", f"sleep 3; touch {tmp_path}/ran.$SLURM_JOB_ID\n")
    for flags, waits in (("Alloc", True), ("Alloc,NoHold", False)):
        c = cluster(nodes=1, conf=[f"Prolog={prolog}", f"PrologFlags={flags}"])
        began = time.monotonic()
        c.run(["salloc", "-N", "1", "true"])
        took = time.monotonic() - began
        assert (took >= 2.5) == waits, f"{flags}: salloc took {took:.1f}s"
        c.stop()


def test_prolog_flags_serial_runs_prologs_one_at_a_time(cluster, tmp_path):
    prolog = program(tmp_path / "prolog", f"""
echo start $(date +%s.%N) >> {tmp_path}/log.$SLURM_JOB_ID
sleep 1
echo end $(date +%s.%N) >> {tmp_path}/log.$SLURM_JOB_ID
""")
    c = cluster(nodes=1, cpus=2, conf=[f"Prolog={prolog}", "PrologFlags=Serial"])
    jobs = [c.sbatch(["-n", "1"], QUICK) for _ in range(2)]
    for job in jobs:
        assert c.wait_job(job, timeout=30) == "COMPLETED"
    spans = []
    for job in jobs:
        times = dict(line.split() for line in (tmp_path / f"log.{job}").read_text().splitlines())
        spans.append((float(times["start"]), float(times["end"])))
    spans.sort()
    assert spans[0][1] <= spans[1][0], f"prologs overlapped: {spans}"
