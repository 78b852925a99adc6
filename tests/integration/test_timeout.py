"""Time limits: a job that runs past its limit gets SIGTERM, then SIGKILL after KillWait, and ends
in state TIMEOUT. Slurm's smallest limit is one minute, so this test takes a little over that."""

import time

SCRIPT = """#!/bin/bash
trap 'echo got TERM; exit 7' TERM
echo started
sleep 600 &
wait
"""


def test_time_limit(cluster):
    c = cluster(nodes=1, conf=["KillWait=2"])
    job = c.sbatch(["-t", "1"], SCRIPT)
    c.wait_job(job, "RUNNING", timeout=30)
    began = time.monotonic()
    info = c.show_job(job)
    assert info["TimeLimit"] == "00:01:00"
    assert c.wait_job(job, timeout=120) == "TIMEOUT"
    took = time.monotonic() - began
    assert 50 <= took <= 110, f"TIMEOUT after {took:.0f}s for a 1 minute limit"
    out = (c.work / f"slurm-{job}.out").read_text()
    assert "started" in out
    assert "got TERM" in out, "the script did not get SIGTERM before the kill"
    assert c.show_job(job)["Reason"] == "TimeLimit"


def test_time_limit_lowered_on_running_job(cluster):
    """scontrol update TimeLimit on a running job: once elapsed > limit the job ends TIMEOUT."""
    c = cluster(nodes=1, conf=["KillWait=2"])
    job = c.sbatch(["-t", "10"], SCRIPT)
    c.wait_job(job, "RUNNING", timeout=30)
    c.run(["scontrol", "update", f"JobId={job}", "TimeLimit=1"])
    assert c.show_job(job)["TimeLimit"] == "00:01:00"
    assert c.wait_job(job, timeout=120) == "TIMEOUT"
