"""scancel --signal: the signal reaches a trap in the batch script, and the job goes on."""

import pytest

from conftest import wait_until

SCRIPT = """#!/bin/bash
trap 'echo got USR1' USR1
echo ready
for i in $(seq 600); do sleep 0.2; done
"""


def output(c, job):
    path = c.work / f"slurm-{job}.out"
    return path.read_text() if path.exists() else ""


# Without -b/-f, Slurm does not signal the batch shell (man scancel); -b signals the shell only,
# -f the shell and its children.
@pytest.mark.parametrize("flag", ["--batch", "--full"])
def test_signal_reaches_trap(cluster, flag):
    c = cluster(nodes=1)
    job = c.sbatch([], SCRIPT)
    c.wait_job(job, "RUNNING", timeout=30)
    wait_until(lambda: "ready" in output(c, job), 30, "the script to set its trap")

    c.run(["scancel", flag, "--signal=USR1", str(job)])
    wait_until(lambda: "got USR1" in output(c, job), 15, "the trap to run")
    # A signal is not a cancel: the job still runs.
    assert c.job_state(job) == "RUNNING"

    c.run(["scancel", "-s", "USR1", "-b", str(job)])
    wait_until(lambda: output(c, job).count("got USR1") == 2, 15, "the second signal")

    c.run(["scancel", str(job)])
    assert c.wait_job(job, timeout=30) == "CANCELLED"


def test_bad_signal_name(cluster):
    c = cluster(nodes=1)
    job = c.sbatch(["--hold"], SCRIPT)
    r = c.run(["scancel", "--signal=NOPE", str(job)], check=False)
    assert r.returncode != 0
    assert "Unknown job signal: NOPE" in r.stderr
