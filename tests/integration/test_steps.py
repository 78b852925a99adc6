"""Job steps, srun and salloc end to end (issue 5), without MPI (MPI launch: test_mpi.py).

What Slurm 22.05 prints and returns in each case was observed on real Slurm and written down in
docs/notes/slurm-steps-observed.md; the texts below come from there.

Every "node" of a test cluster runs on this one host, so "no task process left on any node" is
checked in this host's process table. Tasks that must be found are `sleep <marker>` with a
random marker per test; those that must outlive a polite SIGTERM ignore it (`trap "" TERM` before
`exec sleep`: an ignored signal stays ignored across exec), so that only the SIGKILL that follows
KillWait ends them.

Run as a script, this file is also the helper that forges a LaunchTasks request as an
unprivileged user (see test_forged_launch_tasks_is_refused):
    test_steps.py forge-launch AUTH_SOCKET NODE_PORT JOB_ID MARKER_FILE
"""

import fcntl
import hashlib
import json
import os
import random
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import pytest  # noqa: E402

import wire  # noqa: E402
from conftest import BIN, parse_kv, pid_alive, processes_mentioning, wait_until  # noqa: E402
from hostlist import expand  # noqa: E402

KILL_WAIT = 2     # the KillWait the fault tests configure (seconds)
SLACK = 10        # what a teardown may take beyond KillWait on a loaded 2-core machine
DENIED = "Access/permission denied"
AUTH_FAILURE = 11   # src/common/errors.h

# ------------------------------------------------------------------------------------------
# Slurm's texts (docs/notes/slurm-steps-observed.md)
# ------------------------------------------------------------------------------------------

# Ctrl-C once: srun reports and goes on; twice within a second: the step is cancelled.
CTRL_C_ONCE = re.compile(r"srun: interrupt \(one more within 1 sec to abort\)")
CTRL_C_STATUS = re.compile(r"srun: StepId=(\d+)\.0 tasks 0-1: running")
CTRL_C_TWICE = "srun: sending Ctrl-C to StepId={}.0"
FORCING = "srun: forcing job termination"
# Per failed task: "srun: error: n1: task 0: Exited with exit code 1", "... task 0: Killed".
TASK_EXITED = re.compile(r"^srun: error: n1: task 0: Exited with exit code 1$", re.M)
TASK_KILLED = re.compile(r"^srun: error: n1: task 0: Killed$", re.M)
EXEC_FAILED = re.compile(r"error: execve\(\): /nonexistent/program: No such file or directory")
GRANTED = re.compile(r"^salloc: Granted job allocation (\d+)$", re.M)
RELINQUISHING = "salloc: Relinquishing job allocation {}"
SRUN_IMMEDIATE_BUSY = "srun: error: Unable to allocate resources: Requested nodes are busy"
SALLOC_IMMEDIATE_BUSY = ("salloc: error: Unable to allocate resources: Immediate execution "
                         "impossible, insufficient priority")


# ------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------

def new_marker():
    return random.randint(100000, 999999)


def sleepers(marker):
    """Pids of the task processes `sleep <marker>` (alive, not zombies)."""
    return [pid for pid, cmd in processes_mentioning(f"sleep {marker}") if cmd == f"sleep {marker}"]


def task_processes(text):
    """Pids whose command line mentions `text`, other than srun itself."""
    return [pid for pid, cmd in processes_mentioning(text)
            if os.path.basename(cmd.split(" ", 1)[0]) != "srun"]


def wait_sleepers(marker, count, timeout=30):
    wait_until(lambda: len(sleepers(marker)) == count, timeout,
               f"{count} task(s) 'sleep {marker}' to run")


def wait_no_sleepers(marker, timeout, what="the tasks"):
    wait_until(lambda: not sleepers(marker), timeout,
               f"{what} ('sleep {marker}') to be gone from every node")


def kill_sleepers(marker):
    for pid in sleepers(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def labelled(text):
    """`-l` output as a sorted list of lines."""
    return sorted(line for line in text.splitlines() if line)


def all_jobs(c):
    """Every job the controller knows (scontrol show job), as dicts."""
    r = c.run(["scontrol", "show", "job"], check=False)
    return [parse_kv(block) for block in re.split(r"\n\s*\n", r.stdout) if "JobId=" in block]


def only_job(c):
    jobs = all_jobs(c)
    assert len(jobs) == 1, f"expected one job, the controller has {len(jobs)}: {jobs}"
    return jobs[0]


def jobs_of(c, user):
    """Job ids of `user` that squeue still lists as active."""
    r = c.run(["squeue", "-h", "-u", user.name, "-o", "%i"])
    return [int(x) for x in r.stdout.split()]


def step_ids(c):
    """The step ids squeue -s lists ("123.0", ...)."""
    r = c.run(["squeue", "-s", "-h"])
    return [line.split()[0] for line in r.stdout.splitlines() if line.strip()]


def nodes_idle(c):
    return all(c.node_state(n) == "idle" for n in c.node_names)


def wait_nodes_idle(c, timeout=30):
    wait_until(lambda: nodes_idle(c), timeout, "every node to be idle")


def daemons_alive(c):
    return all(c.pid(name) and pid_alive(c.pid(name)) for name in ["shoalctld", *c.node_names])


def node_port(c, node):
    m = re.search(rf"^NodeName={node}\b.*\bPort=(\d+)", c.conf_path.read_text(), re.M)
    return int(m.group(1))


def user_env(c, user, env=None):
    run_env = dict(c.env)
    if user is not None:
        run_env.update(HOME=str(user.home), USER=user.name, LOGNAME=user.name)
    if env:
        run_env.update(env)
    return run_env


def user_kwargs(user):
    return dict(user=user.uid, group=user.gid, extra_groups=[]) if user is not None else {}


class Live:
    """A command running in the background (its own session, so that a signal sent to it
    reaches it alone), its stdout and stderr read line by line, each line with its arrival time."""

    def __init__(self, c, cmd, user=None, cwd=None, env=None):
        self.cmd = [str(x) for x in cmd]
        self.lines = {"out": [], "err": []}
        self._lock = threading.Lock()
        self.proc = subprocess.Popen(
            self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=cwd or (user.home if user else c.work), env=user_env(c, user, env),
            start_new_session=True, **user_kwargs(user))
        self._threads = [threading.Thread(target=self._read, args=(f, name), daemon=True)
                         for f, name in ((self.proc.stdout, "out"), (self.proc.stderr, "err"))]
        for t in self._threads:
            t.start()

    def _read(self, f, name):
        for raw in iter(f.readline, b""):
            with self._lock:
                self.lines[name].append((time.monotonic(), raw.decode(errors="replace")))

    def text(self, name="out"):
        with self._lock:
            return "".join(line for _, line in self.lines[name])

    def first_time(self, pattern, name="out"):
        with self._lock:
            for t, line in self.lines[name]:
                if re.search(pattern, line):
                    return t
        return None

    def wait_for(self, pattern, timeout, name="out"):
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text(name), re.M):
            if time.monotonic() >= deadline or (self.proc.poll() is not None and
                                                not any(t.is_alive() for t in self._threads)):
                pytest.fail(f"no {pattern!r} on std{name} of {self.cmd} after {timeout}s "
                            f"(rc={self.proc.poll()}):\nstdout: {self.text('out')}\n"
                            f"stderr: {self.text('err')}")
            time.sleep(0.05)

    def alive(self):
        return self.proc.poll() is None

    def signal(self, sig):
        os.kill(self.proc.pid, sig)

    def finish(self, timeout):
        """Waits for the exit (failing the test after `timeout`) and returns the exit code."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.cmd} still runs after {timeout}s:\nstdout: {self.text('out')}\n"
                        f"stderr: {self.text('err')}")
        for t in self._threads:
            t.join(timeout=5)
        self.ended = time.monotonic()
        return rc

    def stop(self):
        if self.alive():
            self.proc.kill()
        self.proc.wait()


@pytest.fixture
def live(cluster):
    """Factory: live(c, cmd, user=None, cwd=None, env=None) -> Live; every command still
    running at the end is killed (before the cluster stops)."""
    started = []

    def start(c, cmd, **kwargs):
        p = Live(c, cmd, **kwargs)
        started.append(p)
        return p

    yield start
    for p in started:
        p.stop()


@pytest.fixture(autouse=True)
def shoal_srun():
    """srun and salloc must be Shoal's: Debian's slurm-client puts Slurm's on PATH too, and
    those would talk munge to a Shoal cluster."""
    missing = [name for name in ("srun", "salloc") if not os.access(BIN / name, os.X_OK)]
    if missing:
        pytest.fail("not built: " + ", ".join(str(BIN / name) for name in missing))


@pytest.fixture
def marker():
    """A fresh sleep marker; its sleepers are killed at the end whatever happened."""
    m = new_marker()
    yield m
    kill_sleepers(m)


# ------------------------------------------------------------------------------------------
# Parallel launch and the task environment
# ------------------------------------------------------------------------------------------

def test_srun_label_four_nodes(cluster, users, submit_dir):
    """The acceptance line: four labelled lines from four nodes; the job srun made is done."""
    c = cluster(nodes=4)
    alice = users["shoaltest1"]
    r = c.run(["srun", "-N4", "-l", "printenv", "SLURMD_NODENAME"], user=alice,
              cwd=submit_dir(alice))
    assert labelled(r.stdout) == ["0: n1", "1: n2", "2: n3", "3: n4"], r.stdout + r.stderr
    assert "error" not in r.stderr, r.stderr

    job = only_job(c)
    assert job["UserId"] == f"{alice.name}({alice.uid})"
    assert job["NumNodes"] == "4"
    assert c.wait_job(job["JobId"], timeout=30) == "COMPLETED"
    assert c.show_job(job["JobId"])["ExitCode"] == "0:0"
    wait_nodes_idle(c)


def test_task_environment(cluster, users, submit_dir):
    c = cluster(nodes=4)
    alice = users["shoaltest1"]
    workdir = submit_dir(alice)
    r = c.run(["srun", "-N2", "-n4", "-l", "printenv"], user=alice, cwd=workdir)
    env = {}
    for task, key, value in re.findall(r"^(\d+): ([A-Za-z_][A-Za-z0-9_]*)=(.*)$", r.stdout, re.M):
        env.setdefault(int(task), {})[key] = value
    assert sorted(env) == [0, 1, 2, 3], r.stdout + r.stderr

    job_id = env[0]["SLURM_JOB_ID"]
    assert job_id.isdigit()
    nodelist = env[0]["SLURM_STEP_NODELIST"]
    nodes = expand(nodelist)
    assert len(nodes) == 2 and len(set(nodes)) == 2 and set(nodes) <= set(c.node_names), nodelist
    for task in range(4):
        e = env[task]
        where = f"task {task}: {e}"
        # Same for every task of the step.
        assert e["SLURM_JOB_ID"] == job_id, where
        assert e["SLURM_JOBID"] == job_id, where
        assert e["SLURM_STEP_ID"] == "0", where
        assert e["SLURM_STEPID"] == "0", where
        assert e["SLURM_STEP_NODELIST"] == nodelist, where
        assert e["SLURM_NODELIST"] == nodelist, where
        assert e["SLURM_JOB_NODELIST"] == nodelist, where
        assert e["SLURM_STEP_NUM_TASKS"] == "4", where
        assert e["SLURM_NTASKS"] == "4", where
        assert e["SLURM_NPROCS"] == "4", where
        assert e["SLURM_STEP_NUM_NODES"] == "2", where
        assert e["SLURM_NNODES"] == "2", where
        assert e["SLURM_JOB_NUM_NODES"] == "2", where
        assert e["SLURM_STEP_TASKS_PER_NODE"] == "2(x2)", where
        assert e["SLURM_TASKS_PER_NODE"] == "2(x2)", where
        assert e["SLURM_SUBMIT_DIR"] == str(workdir), where
        assert e["SLURM_JOB_NAME"] == "printenv", where
        assert e["SLURM_JOB_PARTITION"] == "debug", where
        assert e["SLURM_JOB_USER"] == alice.name, where
        assert e["SLURM_JOB_UID"] == str(alice.uid), where
        assert e["SLURM_JOB_GID"] == str(alice.gid), where
        assert e["SLURM_LABELIO"] == "1", where
        assert e["SLURM_TASK_PID"].isdigit(), where
        assert e["USER"] == alice.name and e["HOME"] == str(alice.home), where
        # Per task: block distribution puts tasks 0,1 on the first node and 2,3 on the second.
        assert e["SLURM_PROCID"] == str(task), where
        assert e["SLURM_NODEID"] == str(task // 2), where
        assert e["SLURM_LOCALID"] == str(task % 2), where
        assert e["SLURMD_NODENAME"] == nodes[task // 2], where
        assert e["SLURM_GTIDS"] == ("0,1" if task < 2 else "2,3"), where
        assert int(e["SLURM_CPUS_ON_NODE"]) >= 2, where
    assert len({env[t]["SLURM_TASK_PID"] for t in range(4)}) == 4


# ------------------------------------------------------------------------------------------
# Steps of a batch job
# ------------------------------------------------------------------------------------------

def test_steps_of_a_batch_job(cluster):
    """srun in a batch script makes steps 0, 1, 2, ...; squeue -s and scontrol show step list
    the running one; scancel J.S ends that step alone; the rest end with the job."""
    c = cluster(nodes=2, conf=["KillWait=2"])
    alone, last = new_marker(), new_marker()
    try:
        job = c.sbatch(["-N2", "-o", "steps-%j.out"], f"""#!/bin/bash
srun -l printenv SLURM_STEP_ID
srun -N1 -n1 printenv SLURM_STEP_ID
srun -N1 -n1 sleep {alone}
echo "step 2 ended: $?"
srun -N2 sleep {last}
echo "not reached"
""")
        out = c.work / f"steps-{job}.out"
        wait_sleepers(alone, 1)
        lines = out.read_text().splitlines()
        assert sorted(lines[:2]) == ["0: 0", "1: 0"] and lines[2] == "1", lines

        # The running step, as squeue -s and scontrol show step see it.
        listed = step_ids(c)
        assert f"{job}.2" in listed, listed
        assert f"{job}.0" not in listed and f"{job}.1" not in listed, listed
        line = [ln for ln in c.run(["squeue", "-s", "-h"]).stdout.splitlines()
                if ln.split()[0] == f"{job}.2"][0]
        fields = line.split()
        assert fields[1] == "sleep" and fields[2] == "debug" and fields[3] == "root", line
        assert fields[-1] in c.node_names, line
        step = parse_kv(c.run(["scontrol", "show", "step", f"{job}.2"]).stdout)
        assert step["StepId"] == f"{job}.2", step
        assert step["State"] == "RUNNING", step
        assert step["NodeList"] == fields[-1], step
        assert step["Tasks"] == "1" and step["Nodes"] == "1", step
        assert step["Name"] == "sleep", step
        everything = c.run(["scontrol", "show", "step"]).stdout
        assert f"StepId={job}.2 " in everything, everything
        r = c.run(["scontrol", "show", "step", f"{job}.7"], check=False)
        assert r.returncode == 1 and r.stdout == f"Job step {job}.7 not found\n", r

        # scancel J.2 ends that step only: the script goes on to step 3.
        c.run(["scancel", f"{job}.2"])
        wait_no_sleepers(alone, KILL_WAIT + SLACK, "step 2")
        wait_until(lambda: "step 2 ended: " in out.read_text(), 15, "the script to go on")
        rc = re.search(r"step 2 ended: (\d+)", out.read_text()).group(1)
        assert rc != "0", out.read_text()
        assert c.job_state(job) == "RUNNING"
        wait_sleepers(last, 2)
        listed = step_ids(c)
        assert f"{job}.3" in listed and f"{job}.2" not in listed, listed

        # Cancelling the job ends its steps, on every node.
        c.run(["scancel", str(job)])
        assert c.wait_job(job, timeout=30) == "CANCELLED"
        wait_no_sleepers(last, KILL_WAIT + SLACK, "step 3")
        wait_until(lambda: not [s for s in step_ids(c) if s.startswith(f"{job}.")], 15,
                   "squeue -s to drop the job's steps")
        shown = c.run(["scontrol", "show", "step", f"{job}.3"], check=False)
        assert "State=RUNNING" not in shown.stdout, shown.stdout
        assert "not reached" not in out.read_text()
        wait_nodes_idle(c)
    finally:
        kill_sleepers(alone)
        kill_sleepers(last)


# ------------------------------------------------------------------------------------------
# Exit codes
# ------------------------------------------------------------------------------------------

def test_exit_codes(cluster):
    c = cluster(nodes=2)
    # The highest exit code of all tasks.
    r = c.run(["srun", "-n2", "bash", "-c", "exit $((SLURM_PROCID+3))"], check=False)
    assert r.returncode == 4, r.stderr
    # A task killed by a signal: 128 + the signal.
    r = c.run(["srun", "-n1", "bash", "-c", "kill -9 $$"], check=False)
    assert r.returncode == 128 + 9, r.stderr
    assert TASK_KILLED.search(r.stderr), r.stderr
    # srun false: the task's exit code, and Slurm's report of it on stderr.
    r = c.run(["srun", "false"], check=False)
    assert r.returncode == 1, r.stderr
    assert TASK_EXITED.search(r.stderr), r.stderr
    r = c.run(["srun", "-N2", "true"], check=False)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    # A program that cannot be started: exit code 2 (ENOENT), said by the node, no hang.
    r = c.run(["srun", "-n1", "/nonexistent/program"], check=False, timeout=30)
    assert r.returncode == 2, r.stderr
    assert EXEC_FAILED.search(r.stderr), r.stderr
    # Every job srun made is over, and the nodes are free.
    for job in all_jobs(c):
        assert c.wait_job(job["JobId"], timeout=30) in ("COMPLETED", "FAILED"), job
    wait_nodes_idle(c)


# ------------------------------------------------------------------------------------------
# Standard input, output and error
# ------------------------------------------------------------------------------------------

def test_stdin(cluster, users, submit_dir):
    """srun's stdin goes to every task by default (Slurm: "stdin will be redirected from the
    standard input of srun to all remote tasks", and so it does in 22.05), to one task with
    -i <task id>, to none with -i none."""
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    cwd = submit_dir(alice)
    r = c.run(["srun", "-n2", "-l", "cat"], user=alice, cwd=cwd, input="hello\n")
    assert labelled(r.stdout) == ["0: hello", "1: hello"], r.stdout + r.stderr
    r = c.run(["srun", "-n2", "-l", "-i", "all", "cat"], user=alice, cwd=cwd, input="hi\n")
    assert labelled(r.stdout) == ["0: hi", "1: hi"], r.stdout + r.stderr
    r = c.run(["srun", "-n2", "-l", "-i", "0", "cat"], user=alice, cwd=cwd, input="hello\n")
    assert r.stdout == "0: hello\n", r.stdout + r.stderr
    r = c.run(["srun", "-n2", "-l", "--input=1", "cat"], user=alice, cwd=cwd, input="one\n")
    assert r.stdout == "1: one\n", r.stdout + r.stderr
    r = c.run(["srun", "-n2", "-l", "-i", "none", "cat"], user=alice, cwd=cwd, input="x\n",
              timeout=30)
    assert r.returncode == 0 and r.stdout == "", r.stdout + r.stderr
    # Many lines, larger than any pipe buffer, arrive whole and in order.
    data = "".join(f"line {i}\n" for i in range(20000))
    r = c.run(["srun", "-n1", "cat"], user=alice, cwd=cwd, input=data)
    assert r.stdout == data, f"{len(r.stdout)} bytes back of {len(data)}: {r.stderr}"


def test_output_streams_live(cluster, users, submit_dir, live):
    """A task's first line reaches srun's stdout while the task still runs; stderr goes to
    srun's stderr."""
    c = cluster(nodes=1)
    alice = users["shoaltest1"]
    p = live(c, ["srun", "-n1", "bash", "-c", "echo first; sleep 4; echo oops >&2; echo last"],
             user=alice, cwd=submit_dir(alice))
    p.wait_for(r"^first$", 30)
    first = p.first_time(r"^first$")
    assert p.alive(), "srun ended before the test saw the first line"
    assert p.finish(30) == 0, p.text("err")
    assert p.ended - first >= 3, f"the first line came only {p.ended - first:.1f}s before the end"
    assert p.text("out") == "first\nlast\n"
    assert "oops\n" in p.text("err") and "oops" not in p.text("out")


def test_output_to_files_per_task(cluster, users, submit_dir):
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    cwd = submit_dir(alice)
    r = c.run(["srun", "-N2", "-n2", "-o", "out-%j-%t.txt", "bash", "-c",
               "echo task $SLURM_PROCID on $SLURMD_NODENAME; echo warn $SLURM_PROCID >&2"],
              user=alice, cwd=cwd)
    assert r.stdout == "", r.stdout
    files = sorted(cwd.glob("out-*-*.txt"))
    assert [f.name.rsplit("-", 1)[1] for f in files] == ["0.txt", "1.txt"], files
    job = only_job(c)["JobId"]
    for task, path in enumerate(files):
        assert path.name == f"out-{job}-{task}.txt"
        assert path.stat().st_uid == alice.uid, f"{path} is not owned by {alice.name}"
        # Without -e, stderr goes to the -o file too.
        lines = path.read_text().splitlines()
        assert sorted(lines) == sorted([f"task {task} on n{task + 1}", f"warn {task}"]), lines


# ------------------------------------------------------------------------------------------
# --multi-prog, --kill-on-bad-exit
# ------------------------------------------------------------------------------------------

def test_multi_prog(cluster, users, submit_dir):
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    cwd = submit_dir(alice)
    conf = c.write_script(cwd, "multi.conf", "\n".join([
        "# srun --multi-prog test: ranks, ranges, offsets, and '*' for the rest",
        "0      echo zero task:%t",
        "1-2    echo offset:%o task:%t",
        "*      printenv SLURM_PROCID",
        "",
    ]), user=alice)
    r = c.run(["srun", "-n4", "-l", "--multi-prog", conf.name], user=alice, cwd=cwd)
    assert labelled(r.stdout) == ["0: zero task:0", "1: offset:0 task:1", "2: offset:1 task:2",
                                  "3: 3"], r.stdout + r.stderr


def test_kill_on_bad_exit(cluster, users, submit_dir):
    c = cluster(nodes=2, conf=["KillWait=2"])
    alice = users["shoaltest1"]
    cwd = submit_dir(alice)
    for flag in ("--kill-on-bad-exit", "-K", "-K1"):
        m = new_marker()
        try:
            # Task 1 fails at once; task 0 would sleep for days.
            script = f"if [ $SLURM_PROCID = 1 ]; then exit 3; fi; exec sleep {m}"
            began = time.monotonic()
            r = c.run(["srun", "-N2", "-n2", flag, "bash", "-c", script], user=alice, cwd=cwd,
                      check=False, timeout=KILL_WAIT + SLACK + 30)
            took = time.monotonic() - began
            # Task 0 terminated (SIGTERM): 128 + 15 beats task 1's 3.
            assert r.returncode == 143, f"{flag}: {r.stderr}"
            assert took < KILL_WAIT + SLACK, f"{flag}: srun took {took:.1f}s"
            wait_no_sleepers(m, KILL_WAIT + SLACK, f"{flag}: task 0")
        finally:
            kill_sleepers(m)
    # Without it (KillOnBadExit=0), or with -K0, the other tasks run to their end.
    for flags in ([], ["-K0"]):
        script = "if [ $SLURM_PROCID = 1 ]; then exit 3; fi; sleep 3"
        began = time.monotonic()
        r = c.run(["srun", "-N2", "-n2", *flags, "bash", "-c", script], user=alice, cwd=cwd,
                  check=False, timeout=60)
        took = time.monotonic() - began
        assert r.returncode == 3, f"{flags}: {r.stderr}"
        assert took >= 2.5, f"{flags}: srun returned after {took:.1f}s; task 0 sleeps 3s"


# ------------------------------------------------------------------------------------------
# Signals: Ctrl-C, forwarding
# ------------------------------------------------------------------------------------------

def test_ctrl_c_once_reports_twice_cancels(cluster, users, submit_dir, live, marker):
    c = cluster(nodes=2, conf=["KillWait=2"])
    alice = users["shoaltest1"]
    p = live(c, ["srun", "-N2", "-n2", "sleep", marker], user=alice, cwd=submit_dir(alice))
    wait_sleepers(marker, 2)
    job = jobs_of(c, alice)[0]

    # Once: the status of the tasks on stderr, and they go on.
    p.signal(signal.SIGINT)
    p.wait_for(CTRL_C_ONCE.pattern, 10, "err")
    p.wait_for(CTRL_C_STATUS.pattern, 10, "err")
    assert CTRL_C_STATUS.search(p.text("err")).group(1) == str(job), p.text("err")
    time.sleep(1.5)  # past the one-second window
    assert p.alive(), f"srun ended after one Ctrl-C:\n{p.text('err')}"
    assert len(sleepers(marker)) == 2, "the tasks died after one Ctrl-C"
    assert c.job_state(job) == "RUNNING"

    # Twice within a second: SIGINT to the tasks, the step is cancelled; srun exits with the
    # tasks' 128 + SIGINT.
    p.signal(signal.SIGINT)
    time.sleep(0.2)
    p.signal(signal.SIGINT)
    rc = p.finish(KILL_WAIT + SLACK)
    assert rc == 130, p.text("err")
    assert CTRL_C_TWICE.format(job) in p.text("err"), p.text("err")
    assert FORCING in p.text("err"), p.text("err")
    wait_no_sleepers(marker, KILL_WAIT + SLACK)
    assert c.wait_job(job, timeout=30) in ("CANCELLED", "FAILED", "COMPLETED")
    wait_nodes_idle(c)


def test_signals_are_forwarded(cluster, users, submit_dir, live, marker):
    """SIGUSR1 to srun reaches every task, which goes on. SIGTERM to srun ends the step: Slurm
    says "forcing job termination" and kills the tasks (exit 137), a trap cannot delay it."""
    c = cluster(nodes=2, conf=["KillWait=2"])
    alice = users["shoaltest1"]
    tag = f"fwd-{marker}"
    script = ('trap "echo got USR1" USR1; echo ready; '
              'while :; do sleep 0.1; done')
    p = live(c, ["srun", "-N2", "-n2", "-l", "bash", "-c", script, tag], user=alice,
             cwd=submit_dir(alice))
    p.wait_for(r"^0: ready$", 30)
    p.wait_for(r"^1: ready$", 30)
    p.signal(signal.SIGUSR1)
    p.wait_for(r"^0: got USR1$", 15)
    p.wait_for(r"^1: got USR1$", 15)
    assert p.alive() and len(task_processes(tag)) >= 2, "the tasks ended on SIGUSR1"

    p.signal(signal.SIGTERM)
    rc = p.finish(KILL_WAIT + SLACK)
    assert rc == 137, p.text("err")
    assert FORCING in p.text("err"), p.text("err")
    wait_until(lambda: not task_processes(tag), KILL_WAIT + SLACK, "the tasks to end on SIGTERM")
    wait_nodes_idle(c)


# ------------------------------------------------------------------------------------------
# srun --pty
# ------------------------------------------------------------------------------------------

def test_srun_pty_bash(cluster, users, submit_dir):
    """srun --pty bash through a pseudo-terminal: an interactive shell whose stdin is a tty of
    the terminal's size; `exit` ends the step and the allocation."""
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))

    def controlling_tty():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen([str(x) for x in ["srun", "--pty", "bash"]], stdin=slave,
                            stdout=slave, stderr=slave, cwd=submit_dir(alice),
                            env=user_env(c, alice, {"TERM": "xterm"}), start_new_session=True,
                            preexec_fn=controlling_tty, **user_kwargs(alice))
    os.close(slave)
    seen = bytearray()

    def read_until(pattern, timeout):
        deadline = time.monotonic() + timeout
        while not re.search(pattern, seen):
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            ready, _, _ = select.select([master], [], [], min(left, 0.2))
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: every holder of the terminal's other end is gone
                    return bool(re.search(pattern, seen))
                if not chunk:
                    return bool(re.search(pattern, seen))
                seen.extend(chunk)
        return True

    try:
        # The shell's prompt ("...$ ") says it reads its terminal.
        assert read_until(rb"\$ ", 30), f"no prompt from srun --pty bash: {bytes(seen)!r}"
        os.write(master, b"echo STEP=$SLURM_STEP_ID JOB=$SLURM_JOB_ID; tty; stty size\n")
        assert read_until(rb"STEP=\d+ JOB=\d+\r?\n.*/dev/pts/\d+\r?\n\d+ \d+", 20), bytes(seen)
        os.write(master, b"exit\n")
        read_until(rb"(?!x)x", 10)  # to EOF
        rc = proc.wait(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = seen.decode(errors="replace")
    assert rc == 0, text
    m = re.search(r"STEP=(\d+) JOB=(\d+)", text)
    assert m.group(1) == "0", text
    assert re.search(r"^/dev/pts/\d+\r?$", text, re.M), f"the shell has no terminal: {text!r}"
    assert re.search(r"^30 100\r?$", text, re.M), f"the terminal's size did not follow: {text!r}"
    job = int(m.group(2))
    # The allocation ended with the shell.
    wait_until(lambda: not jobs_of(c, alice), 15, "the allocation to end")
    assert c.wait_job(job, timeout=15) == "COMPLETED"
    wait_nodes_idle(c)


# ------------------------------------------------------------------------------------------
# salloc
# ------------------------------------------------------------------------------------------

def test_salloc_runs_command_in_allocation(cluster, users, submit_dir):
    c = cluster(nodes=4)
    alice = users["shoaltest1"]
    r = c.run(["salloc", "-N2", "bash", "-c",
               "echo salloc-job=$SLURM_JOB_ID; srun hostname; srun printenv SLURM_JOB_ID; "
               "srun -l printenv SLURMD_NODENAME"],
              user=alice, cwd=submit_dir(alice), timeout=60)
    job = int(re.search(r"salloc-job=(\d+)", r.stdout).group(1))
    m = GRANTED.search(r.stderr)
    assert m and int(m.group(1)) == job, r.stderr
    assert RELINQUISHING.format(job) in r.stderr, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith("salloc-job=")]
    host = socket.gethostname()
    assert lines.count(host) == 2, f"srun hostname did not run on two nodes: {r.stdout}"
    assert lines.count(str(job)) == 2, f"srun did not use the allocation {job}: {r.stdout}"
    names = [ln.split(": ", 1)[1] for ln in lines if re.match(r"\d+: ", ln)]
    assert len(names) == 2 and len(set(names)) == 2, r.stdout
    assert set(expand(c.show_job(job)["NodeList"])) == set(names)
    # Exiting releases the allocation.
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    assert c.show_job(job)["NumNodes"] == "2"
    wait_nodes_idle(c)
    # salloc exits with its command's exit code.
    r = c.run(["salloc", "-N1", "sh", "-c", "exit 7"], user=alice, check=False, timeout=60)
    assert r.returncode == 7, r.stderr
    wait_nodes_idle(c)


def test_salloc_no_shell_then_srun_jobid(cluster, users, submit_dir):
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    cwd = submit_dir(alice)
    r = c.run(["salloc", "-N1", "--no-shell"], user=alice, cwd=cwd, timeout=30)
    job = int(GRANTED.search(r.stderr).group(1))
    # The allocation outlives salloc.
    assert c.job_state(job) == "RUNNING"
    assert c.show_job(job)["JobName"] == "no-shell"
    r = c.run(["srun", f"--jobid={job}", "printenv", "SLURM_JOB_ID", "SLURM_STEP_ID"],
              user=alice, cwd=cwd)
    assert r.stdout.split() == [str(job), "0"], r.stdout + r.stderr
    r = c.run(["srun", f"--jobid={job}", "printenv", "SLURM_STEP_ID"], user=alice, cwd=cwd)
    assert r.stdout.split() == ["1"], r.stdout + r.stderr
    c.run(["scancel", str(job)], user=alice)
    assert c.wait_job(job, timeout=30) == "CANCELLED"
    wait_nodes_idle(c)


def test_salloc_hears_its_allocation_revoked(cluster, users, submit_dir):
    """scancel of a salloc's job: salloc says the allocation was revoked; with -K it signals its
    command (here the command would otherwise sleep for minutes) and exits promptly."""
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    cwd = submit_dir(alice)
    p = Live(c, ["salloc", "-K", "-N1", "sleep", "300"], user=alice, cwd=cwd)
    p.wait_for(r"Granted job allocation \d+", 30, name="err")
    job = int(GRANTED.search(p.text("err")).group(1))
    began = time.monotonic()
    c.run(["scancel", str(job)], user=alice)
    p.finish(15)
    assert time.monotonic() - began < 15
    assert f"salloc: Job allocation {job} has been revoked." in p.text("err"), p.text("err")
    assert c.wait_job(job, timeout=30) == "CANCELLED"


def test_salloc_immediate_on_busy_cluster(cluster, users, submit_dir):
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    filler = c.sbatch(["-N2", "--exclusive"], "#!/bin/bash\nsleep 300\n")
    c.wait_job(filler, "RUNNING", timeout=30)
    cwd = submit_dir(alice)
    for cmd, message in ((["salloc", "--immediate", "-N1", "true"], SALLOC_IMMEDIATE_BUSY),
                         (["srun", "--immediate", "-N1", "true"], SRUN_IMMEDIATE_BUSY)):
        began = time.monotonic()
        r = c.run(cmd, user=alice, cwd=cwd, check=False, timeout=30)
        assert r.returncode == 1, r.stdout + r.stderr
        assert time.monotonic() - began < 15
        assert message in r.stderr, r.stderr
        wait_until(lambda: not jobs_of(c, alice), 10, f"{cmd[0]} --immediate's job to be gone")
    assert c.job_state(filler) == "RUNNING"
    c.run(["scancel", str(filler)])


# ------------------------------------------------------------------------------------------
# Faults: kill -9 of srun, kill -9 of a node daemon
# ------------------------------------------------------------------------------------------

STUBBORN = 'trap "" TERM; exec sleep {}'  # a task that only SIGKILL ends


def test_kill9_standalone_srun_leaves_no_task(cluster, users, submit_dir, live, marker):
    c = cluster(nodes=2, conf=["KillWait=2"])
    alice = users["shoaltest1"]
    p = live(c, ["srun", "-N2", "-n2", "bash", "-c", STUBBORN.format(marker)], user=alice,
             cwd=submit_dir(alice))
    wait_sleepers(marker, 2)
    job = jobs_of(c, alice)[0]
    p.signal(signal.SIGKILL)
    p.finish(5)
    wait_no_sleepers(marker, KILL_WAIT + SLACK)
    assert c.wait_job(job, timeout=SLACK) in ("CANCELLED", "FAILED", "COMPLETED")
    wait_nodes_idle(c)


def test_kill9_srun_in_batch_job_leaves_no_task(cluster, marker):
    c = cluster(nodes=2, conf=["KillWait=2"])
    job = c.sbatch(["-N2"], f"""#!/bin/bash
srun -N2 -n2 bash -c '{STUBBORN.format(marker)}'
echo "srun rc=$?"
""")
    wait_sleepers(marker, 2)
    sruns = [pid for pid, cmd in processes_mentioning(f"sleep {marker}")
             if os.path.basename(cmd.split(" ", 1)[0]) == "srun"]
    assert sruns, processes_mentioning(f"sleep {marker}")
    for pid in sruns:
        os.kill(pid, signal.SIGKILL)
    wait_no_sleepers(marker, KILL_WAIT + SLACK)
    # The batch script goes on after its srun died, and the job ends as it says.
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    assert "srun rc=137" in (c.work / f"slurm-{job}.out").read_text()
    assert not [s for s in step_ids(c) if s.startswith(f"{job}.")]
    wait_nodes_idle(c)


def test_kill9_node_daemon_step_survives_and_is_cancellable(cluster, users, submit_dir, live,
                                                           marker):
    """As in Slurm, a step outlives its node daemon (the per-job supervisor runs the tasks);
    the restarted daemon takes it back, and cancelling the job then ends every task."""
    c = cluster(nodes=2, conf=["KillWait=2"])
    alice = users["shoaltest1"]
    p = live(c, ["srun", "-N2", "-n2", "bash", "-c", STUBBORN.format(marker)], user=alice,
             cwd=submit_dir(alice))
    wait_sleepers(marker, 2)
    job = jobs_of(c, alice)[0]

    c.kill_node("n2")
    time.sleep(2)
    assert len(sleepers(marker)) == 2 and p.alive(), "the step died with its node daemon"
    c.start_node("n2")
    assert f"{job}.0" in step_ids(c)
    assert c.job_state(job) == "RUNNING"

    c.run(["scancel", str(job)], user=alice)
    wait_no_sleepers(marker, KILL_WAIT + SLACK)
    assert p.finish(KILL_WAIT + SLACK) != 0
    assert c.wait_job(job, timeout=30) == "CANCELLED"
    wait_nodes_idle(c)


def test_node_daemon_gone_for_good_leaves_no_task(cluster, users, submit_dir, live, marker):
    """A node daemon killed mid-step that does not come back: the node goes DOWN after
    SlurmdTimeout, the job ends NODE_FAIL, srun ends, and the tasks are torn down on the nodes
    still up within KillWait; the dead daemon's node, once back, kills what is left there."""
    c = cluster(nodes=2, conf=["KillWait=2", "SlurmdTimeout=5"])
    alice = users["shoaltest1"]
    p = live(c, ["srun", "-N2", "-n2", "-l", "bash", "-c",
                 f'echo $SLURMD_NODENAME; {STUBBORN.format(marker)}'],
             user=alice, cwd=submit_dir(alice))
    wait_sleepers(marker, 2)
    p.wait_for(r"^1: n2$", 10)
    job = jobs_of(c, alice)[0]

    c.kill_node("n2")
    assert c.wait_job(job, timeout=60) == "NODE_FAIL"
    assert p.finish(KILL_WAIT + SLACK) != 0, p.text("err")
    # At most n2's task is left (its supervisor has no daemon to hear from); n1's is gone.
    wait_until(lambda: len(sleepers(marker)) <= 1, KILL_WAIT + SLACK, "n1's task to be gone")
    c.start_node("n2")
    wait_no_sleepers(marker, KILL_WAIT + SLACK, "n2's task, once its daemon is back")
    wait_nodes_idle(c)


# ------------------------------------------------------------------------------------------
# Security
# ------------------------------------------------------------------------------------------

def test_users_cannot_use_or_cancel_others_steps(cluster, users, submit_dir, marker):
    c = cluster(nodes=2)
    alice, bob = users["shoaltest1"], users["shoaltest2"]
    adir, bdir = submit_dir(alice), submit_dir(bob)
    job = c.sbatch(["-N1"], f"#!/bin/bash\nsrun sleep {marker}\necho step0 rc=$?\n", user=alice,
                   cwd=adir)
    wait_sleepers(marker, 1)
    assert f"{job}.0" in step_ids(c)

    pwned = bdir / "pwned"
    r = c.run(["srun", f"--jobid={job}", "touch", pwned], user=bob, cwd=bdir, check=False,
              timeout=30)
    assert r.returncode != 0, r.stdout + r.stderr
    assert r.stderr.startswith("srun: error: "), r.stderr
    assert DENIED in r.stderr, r.stderr
    r = c.run(["scancel", f"{job}.0"], user=bob, cwd=bdir, check=False)
    assert r.returncode != 0 and DENIED in r.stderr, r.stdout + r.stderr
    time.sleep(1)
    assert not pwned.exists(), "bob ran a task in alice's job"
    assert len(sleepers(marker)) == 1, "bob's scancel ended alice's step"
    assert c.job_state(job) == "RUNNING" and f"{job}.0" in step_ids(c)

    # Alice may: the step ends and her script goes on.
    c.run(["scancel", f"{job}.0"], user=alice, cwd=adir)
    wait_no_sleepers(marker, 5 + SLACK)
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    assert re.search(r"step0 rc=[1-9]", (adir / f"slurm-{job}.out").read_text())


def test_forged_launch_tasks_is_refused(cluster, users, submit_dir):
    """A user who speaks the node daemon's protocol directly cannot start tasks: LaunchTasks
    needs a step credential signed by the controller. Tried as alice, in her own running job,
    with a step credential that is absent, signed by her own auth agent (a genuine signature,
    but not the controller's), or forged outright."""
    c = cluster(nodes=1)
    alice = users["shoaltest1"]
    cwd = submit_dir(alice)
    job = c.sbatch(["-N1"], "#!/bin/bash\nsleep 300\n", user=alice, cwd=cwd)
    c.wait_job(job, "RUNNING", timeout=30)
    marker_file = cwd / f"forged-{new_marker()}"
    r = c.run(["/usr/bin/python3", __file__, "forge-launch", c.dir / "run" / "auth.sock",
               node_port(c, "n1"), job, marker_file], user=alice, cwd=cwd, timeout=60)
    results = json.loads(r.stdout)
    assert set(results) == {"no_step_cred", "user_signed", "forged_sig", "forged_frame"}, results
    for case, (rc, error) in results.items():
        assert rc != "refused", f"the node daemon does not listen on its Port: {results}"
        assert rc != 0, f"{case}: the node accepted a LaunchTasks request: {results}"
        assert "unsupported request" not in error, f"the node knows no LaunchTasks: {results}"
    # Without a valid frame credential it is refused as the controller refuses (test_auth.py).
    assert results["forged_frame"][0] in ("closed", AUTH_FAILURE), results
    time.sleep(2)
    assert not marker_file.exists(), "a forged LaunchTasks started a task"
    assert not processes_mentioning(str(marker_file))
    assert daemons_alive(c)
    assert c.job_state(job) == "RUNNING"
    c.run(["scancel", str(job)])


# ------------------------------------------------------------------------------------------
# Bad input
# ------------------------------------------------------------------------------------------

# Texts: Slurm 22.05's where it has one. Where Shoal differs on purpose:
#  - -N99 on 4 nodes: Slurm 22.05 queues the job ("Requested partition configuration not
#    available now") and srun waits forever; Shoal's sbatch already refuses a node count larger
#    than the cluster ("Node count specification invalid"), and srun does the same.
#  - --het-group=1: Slurm 22.05 silently runs it outside a heterogeneous job; Shoal has no
#    heterogeneous jobs and says so (issue 5 allows "not supported").
#  - -N 0: 22.05's text was not observed; Shoal's sbatch says "Invalid node count
#    specification: 0", Slurm's parser for "x" says "is not a valid node count".
@pytest.mark.parametrize("args, message", [
    (["-N", "0", "true"], re.compile(r"^srun: error: .*node count", re.M)),
    (["-n0", "true"], 'srun: error: Invalid numeric value "0" for --ntasks.'),
    (["--mpi=bogus", "true"],
     "srun: error: Invalid MPI type 'bogus', --mpi=list for acceptable types"),
    (["--het-group=1", "true"], re.compile(r"^srun: error: .*not supported", re.M)),
    (["-N99", "true"], "srun: error: Unable to allocate resources: "),
    (["-n1", "--bogus-option", "true"], "srun: unrecognized option '--bogus-option'"),
    (["-p", "nopart", "true"], "Unable to allocate resources: Invalid partition name specified"),
    (["-w", "n9", "true"], "Unable to allocate resources: Invalid node name specified"),
    (["--jobid=99999", "true"],
     "srun: error: Unable to confirm allocation for job 99999: Invalid job id specified"),
    ([], "srun: fatal: No command given to execute."),
], ids=["nodes0", "ntasks0", "mpi-bogus", "het-group", "too-many-nodes", "bogus-option",
        "bad-partition", "bad-node", "bad-jobid", "no-command"])
def test_srun_bad_input(cluster, args, message):
    c = cluster(nodes=4)
    r = c.run(["srun", *args], check=False, timeout=30)
    assert r.returncode != 0, r.stdout + r.stderr
    if isinstance(message, str):
        assert message in r.stderr, r.stderr
    else:
        assert message.search(r.stderr), r.stderr
    assert r.stdout == "", r.stdout
    # Nothing was left behind, and the cluster still works.
    assert daemons_alive(c)
    assert c.run(["squeue", "-h"]).stdout == ""
    wait_nodes_idle(c)
    r = c.run(["srun", "-N4", "-l", "printenv", "SLURMD_NODENAME"], timeout=30)
    assert labelled(r.stdout) == ["0: n1", "1: n2", "2: n3", "3: n4"]


def test_srun_het_group_zero(cluster):
    """--het-group=0 names the only component a plain job has: Slurm 22.05 runs the step; a
    Shoal that refuses het groups must say so clearly."""
    c = cluster(nodes=1)
    r = c.run(["srun", "--het-group=0", "echo", "ran"], check=False, timeout=30)
    if r.returncode == 0:
        assert r.stdout == "ran\n", r.stdout + r.stderr
    else:
        assert re.search(r"^srun: error: .*not supported", r.stderr, re.M), r.stderr
    assert daemons_alive(c)


# ------------------------------------------------------------------------------------------
# The forging helper (run as an unprivileged user; speaks wire.py's protocol)
# ------------------------------------------------------------------------------------------

def _strings(num, values):
    return b"".join(wire.field_bytes(num, v) for v in values)


def _uints(num, values):
    return b"".join(wire.field_varint(num, v) for v in values)


def forge_launch(auth_socket, port, job_id, marker_file):
    """Sends LaunchTasks for `touch MARKER_FILE` in job JOB_ID to the node daemon on PORT in
    four ways; prints {case: [Response.rc, or "closed" or "refused", error]} as JSON."""
    import pwd
    me = pwd.getpwuid(os.getuid())
    step_id = 7
    # StepCredential {job_id=1, step_id=2, uid=3, gid=4, user_name=5, nodes=6, cpus_per_node=7}
    step_cred = (wire.field_varint(1, job_id) + wire.field_varint(2, step_id) +
                 wire.field_varint(3, os.getuid()) + wire.field_varint(4, os.getgid()) +
                 wire.field_bytes(5, me.pw_name) + _strings(6, ["n1"]) + _uints(7, [1]))
    # StepRecord {job_id=1, step_id=2, name=3, uid=4, nodes=5, tasks_per_node=6, cpus_per_node=7,
    #             num_tasks=8, argv=19, mpi=20, work_dir=29}
    argv = ["/usr/bin/touch", marker_file]
    step = (wire.field_varint(1, job_id) + wire.field_varint(2, step_id) +
            wire.field_bytes(3, "touch") + wire.field_varint(4, os.getuid()) +
            _strings(5, ["n1"]) + _uints(6, [1]) + _uints(7, [1]) + wire.field_varint(8, 1) +
            _strings(19, argv) + wire.field_bytes(20, "none") +
            wire.field_bytes(29, os.getcwd()))
    # A port nobody listens on: a task that started anyway must not hang on its I/O.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    io_port = s.getsockname()[1]
    s.close()

    def launch(signed_step_cred):
        # LaunchTasksRequest {cred=1, step=2, node_id=3, global_task_ids=4, environment=5,
        #   work_dir=6, io_address=7, io_key=8, kill_wait_s=17, user_name=19, gid=20,
        #   tasks_per_node=24}
        body = ((wire.field_bytes(1, signed_step_cred) if signed_step_cred is not None else b"") +
                wire.field_bytes(2, step) + wire.field_varint(3, 0) + _uints(4, [0]) +
                _strings(5, ["PATH=/usr/bin:/bin", f"HOME={me.pw_dir}"]) +
                wire.field_bytes(6, os.getcwd()) + wire.field_bytes(7, f"127.0.0.1:{io_port}") +
                wire.field_bytes(8, os.urandom(16)) + wire.field_varint(17, 1) +
                wire.field_bytes(19, me.pw_name) + wire.field_varint(20, os.getgid()) +
                _uints(24, [1]))
        return wire.field_bytes(33, body)  # Request.launch_tasks

    def forged_credential(body):
        return {"uid": 0, "gid": 0, "expires": int(time.time()) + 300,
                "body_sha256": hashlib.sha256(body).digest(), "nonce": os.urandom(16),
                "hmac": os.urandom(32)}

    def send(request, frame_cred):
        try:
            response = wire.call(("127.0.0.1", port), request, wire.encode_credential(frame_cred))
        except ConnectionRefusedError as e:
            return ["refused", str(e)]  # nobody listens: proves nothing
        except (ConnectionError, OSError) as e:
            return ["closed", str(e)]   # the daemon hung up on the request: a refusal
        return [wire.first(response, 1, 0),
                wire.first(response, 2, b"").decode(errors="replace")]

    def as_me(request):
        rc, error, cred = wire.ask_agent(auth_socket, request)
        if cred is None:
            raise SystemExit(f"the auth agent refused: {rc} {error}")
        return send(request, cred)

    results = {}
    results["no_step_cred"] = as_me(launch(None))
    _, _, mine = wire.ask_agent(auth_socket, step_cred)
    results["user_signed"] = as_me(launch(wire.field_bytes(1, step_cred) +
                                          wire.field_bytes(2, wire.encode_credential(mine))))
    forged = (wire.field_bytes(1, step_cred) +
              wire.field_bytes(2, wire.encode_credential(forged_credential(step_cred))))
    results["forged_sig"] = as_me(launch(forged))
    request = launch(forged)
    results["forged_frame"] = send(request, forged_credential(request))
    print(json.dumps(results))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "forge-launch":
        forge_launch(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        sys.exit(f"usage: {sys.argv[0]} forge-launch AUTH_SOCKET NODE_PORT JOB_ID MARKER_FILE")
