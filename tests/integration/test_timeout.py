"""Time limits: a job that runs past its limit gets SIGTERM, then SIGKILL after KillWait, and ends
in state TIMEOUT. Slurm's smallest limit is one minute, so this test takes a little over that;
both jobs run side by side to pay that minute once."""

import time

SCRIPT = """#!/bin/bash
trap 'echo got TERM; exit 7' TERM
echo started
sleep 600 &
wait
"""


def test_time_limit(cluster):
    c = cluster(nodes=2, conf=["KillWait=2"])
    # One submitted with -t 1; one submitted with 10 minutes whose limit is lowered while it
    # runs (scontrol update TimeLimit).
    limited = c.sbatch(["-t", "1", "-w", "n1"], SCRIPT)
    lowered = c.sbatch(["-t", "10", "-w", "n2"], SCRIPT)
    c.wait_job(limited, "RUNNING", timeout=30)
    began = time.monotonic()
    c.wait_job(lowered, "RUNNING", timeout=30)
    assert c.show_job(limited)["TimeLimit"] == "00:01:00"
    assert c.show_job(lowered)["TimeLimit"] == "00:10:00"
    c.run(["scontrol", "update", f"JobId={lowered}", "TimeLimit=1"])
    assert c.show_job(lowered)["TimeLimit"] == "00:01:00"

    assert c.wait_job(limited, timeout=120) == "TIMEOUT"
    took = time.monotonic() - began
    assert 50 <= took <= 110, f"TIMEOUT after {took:.0f}s for a 1 minute limit"
    assert c.wait_job(lowered, timeout=60) == "TIMEOUT"
    for job in (limited, lowered):
        out = (c.work / f"slurm-{job}.out").read_text()
        assert "started" in out
        assert "got TERM" in out, f"job {job} did not get SIGTERM before the kill: {out!r}"
        assert c.show_job(job)["Reason"] == "TimeLimit"
