"""A job cancelled in the moment between its allocation and its launch (the allocation is being
saved to the state journal, so the controller has not asked any node to run it yet) ends
CANCELLED at once: no node knows the job, so none would ever report its end.

The moment is made long on purpose: strace delays every fdatasync of the controller by 1 s
(fault injection, `-e inject=fdatasync:delay_exit=`), so the job shows RUNNING while its
allocation is still on its way to the disk."""

import os
import shutil
import subprocess
import time

from conftest import wait_until

DELAY_US = 1_000_000


def traced_by(pid, tracer):
    """True when every thread of `pid` is traced by `tracer` (strace -f attaches each one)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
        for t in tasks:
            with open(f"/proc/{pid}/task/{t}/status") as f:
                line = next(l for l in f if l.startswith("TracerPid:"))
            if int(line.split()[1]) != tracer:
                return False
    except (OSError, StopIteration):
        return False
    return bool(tasks)


def test_job_cancelled_before_its_launch_ends_cancelled(cluster, tmp_path):
    assert shutil.which("strace"), "strace is needed (scripts/setup.sh installs it)"
    c = cluster(nodes=1)
    marker = tmp_path / "ran"
    tracer = subprocess.Popen(
        ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=fdatasync",
         "-e", f"inject=fdatasync:delay_exit={DELAY_US}", "-p", str(c.pid("shoalctld"))],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        ctld = c.pid("shoalctld")
        wait_until(lambda: tracer.poll() is not None or traced_by(ctld, tracer.pid), 30,
                   "strace to attach to every thread of the controller")
        assert tracer.poll() is None, "strace could not attach to the controller"
        job = c.sbatch(["-J", "racer"], f"#!/bin/bash\ntouch {marker}\nsleep 100\n")
        # RUNNING in memory while the allocation's commit is delayed: cancel it now.
        c.wait_job(job, "RUNNING", timeout=10)
        c.run(["scancel", str(job)])
    finally:
        tracer.terminate()
        tracer.wait(timeout=30)
    assert c.wait_job(job, timeout=10) == "CANCELLED", c.show_job(job)
    info = c.show_job(job)
    assert info["JobState"] == "CANCELLED", info
    # Never launched: its script did not run, and the node is free for the next job.
    time.sleep(1)
    assert not marker.exists(), "the script of a job cancelled before its launch ran"
    wait_until(lambda: c.node_state("n1") == "idle", 10, "n1 to be idle again")
    assert c.wait_job(c.sbatch(["--wrap", "true"]), timeout=30) == "COMPLETED"
