"""An srun step the OOM killer ends (--mem=100M, 500 MB allocated): srun says "Out Of Memory"
and exits non-zero, the step is OUT_OF_MEMORY with ExitCode 0:125 in sacct, and srun's own
allocation (interactive: BatchFlag=0) ends OUT_OF_MEMORY as in Slurm."""

import re
import time

SLURM_CONF = ["TaskPlugin=task/affinity,task/cgroup", "ProctrackType=proctrack/cgroup",
              "KillWait=2"]
CG_CONF = "ConstrainCores=yes\nConstrainRAMSpace=yes\n"
HOG = "import sys; b = b'x' * (500 << 20); print('survived')"


def sacct_rows(c, job):
    r = c.run(["sacct", "-n", "-P", "-j", str(job), "-o", "JobID,State,ExitCode"], check=False)
    return {p[0]: (p[1], p[2]) for p in (line.split("|") for line in r.stdout.splitlines())
            if len(p) == 3}


def wait_rows(c, job, want, timeout=30):
    """Accounting reaches shoaldbd after the controller's state changes (as in Slurm): wait
    until every row in `want` (JobID -> (State, ExitCode)) has its final value."""
    deadline = time.monotonic() + timeout
    rows = {}
    while time.monotonic() < deadline:
        rows = sacct_rows(c, job)
        if all(rows.get(key) == value for key, value in want.items()):
            return rows
        time.sleep(0.5)
    raise AssertionError(f"sacct rows, want {want}: {rows}")


def test_srun_step_oom_states(cluster):
    c = cluster(nodes=1, cpus=2, memory=2000, conf=SLURM_CONF,
                etc_files={"cgroup.conf": CG_CONF})

    # srun outside an allocation: its allocation is interactive and ends like its step.
    r = c.run(["srun", "--mem=100M", "-n1", "python3", "-c", HOG], check=False, timeout=60)
    assert r.returncode != 0
    assert "survived" not in r.stdout, r.stdout
    assert "srun: error: n1: task 0: Out Of Memory" in r.stderr, r.stderr
    m = re.search(r"slurmstepd: error: Detected 1 oom_kill event in StepId=(\d+)\.0\. "
                  r"Some of the step tasks have been OOM Killed\.", r.stderr)
    assert m, r.stderr
    job = int(m.group(1))
    # Slurm's order: the step daemon's line, then srun's.
    assert r.stderr.index("oom_kill event") < r.stderr.index("Out Of Memory"), r.stderr
    info = c.show_job(job)
    assert info["BatchFlag"] == "0", info
    assert info["JobState"] == "OUT_OF_MEMORY", info
    assert info["ExitCode"] == "0:125", info
    wait_rows(c, job, {str(job): ("OUT_OF_MEMORY", "0:125")})

    # A step of a batch job: OUT_OF_MEMORY in sacct, the script goes on and sees srun fail.
    script = (f"#!/bin/bash\nsrun --mem=100M python3 -c \"{HOG}\"\necho srun_rc=$?\n"
              "srun true\n")
    b = c.sbatch(["--mem=200M"], script)
    assert c.wait_job(b, timeout=60) == "COMPLETED"
    assert c.show_job(b)["BatchFlag"] == "1"
    out = (c.work / f"slurm-{b}.out").read_text()
    assert re.search(r"^srun_rc=[1-9]\d*$", out, re.M), out
    assert "srun: error: n1: task 0: Out Of Memory" in out, out
    wait_rows(c, b, {f"{b}.0": ("OUT_OF_MEMORY", "0:125"), f"{b}.1": ("COMPLETED", "0:0"),
                     f"{b}.batch": ("COMPLETED", "0:0"), str(b): ("COMPLETED", "0:0")})
