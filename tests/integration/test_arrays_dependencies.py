"""Job arrays and dependencies, and ../shared/examples/pipeline.sh run unchanged."""

import re
import shutil
import time
from pathlib import Path

from conftest import wait_until

REPO = Path(__file__).resolve().parents[2]
PIPELINE = REPO.parent / "shared" / "examples" / "pipeline.sh"


def test_array_throttle_env_and_file_names(cluster):
    c = cluster(nodes=2, cpus=4)
    script = ("#!/bin/bash\n"
              "echo \"$SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT "
              "$SLURM_ARRAY_TASK_MIN $SLURM_ARRAY_TASK_MAX\"\n"
              "sleep 1\n")
    job = c.sbatch(["--array=0-5%2", "-o", "arr-%A_%a.out"], script)
    # Never more than 2 tasks running at once; the rest wait with JobArrayTaskLimit.
    saw_limit = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        rows = c.run(["squeue", "-h", "-r", "-j", str(job), "-o", "%i %t %r"]).stdout.split("\n")
        rows = [r for r in rows if r.strip()]
        if not rows:
            break
        running = [r for r in rows if r.split()[1] == "R"]
        assert len(running) <= 2, rows
        saw_limit |= any("JobArrayTaskLimit" in r for r in rows)
        time.sleep(0.1)
    assert saw_limit
    for task in range(6):
        out = (c.work / f"arr-{job}_{task}.out").read_text().split()
        assert out == [str(job), str(task), "6", "0", "5"], out


def test_pending_array_is_shown_compressed_and_cancelled_by_task(cluster):
    c = cluster(nodes=1)
    job = c.sbatch(["--hold", "--array=1-4"], "#!/bin/bash\ntrue\n")
    rows = c.run(["squeue", "-h", "-o", "%i"]).stdout.split()
    assert rows == [f"{job}_[1-4]"], rows
    c.run(["scancel", f"{job}_2"])
    rows = c.run(["squeue", "-h", "-o", "%i"]).stdout.split()
    assert rows == [f"{job}_[1,3-4]"], rows
    c.run(["scancel", str(job)])
    assert c.run(["squeue", "-h"]).stdout.strip() == ""


def test_afterok_on_failed_job_never_satisfied(cluster):
    c = cluster(nodes=1)
    bad = c.sbatch([], "#!/bin/bash\nexit 3\n")
    dep = c.sbatch([f"--dependency=afterok:{bad}"], "#!/bin/bash\ntrue\n")
    assert c.wait_job(bad) == "FAILED"
    wait_until(lambda: c.show_job(dep)["Reason"] == "DependencyNeverSatisfied", 30,
               "DependencyNeverSatisfied")
    assert c.job_state(dep) == "PENDING"
    good = c.sbatch([f"--dependency=afternotok:{bad}"], "#!/bin/bash\ntrue\n")
    assert c.wait_job(good) == "COMPLETED"


def test_dependency_on_unknown_job_is_rejected(cluster):
    c = cluster(nodes=1)
    r = c.run(["sbatch", "--dependency=afterok:999999", "--wrap", "true"], check=False)
    assert r.returncode != 0
    assert "Job dependency problem" in r.stderr


def test_pipeline_example_runs_unchanged(cluster):
    c = cluster(nodes=4)
    work = c.work / "pipeline"
    work.mkdir()
    script = work / "pipeline.sh"
    shutil.copy(PIPELINE if PIPELINE.exists() else REPO / "examples" / "pipeline.sh", script)
    r = c.run(["bash", str(script)], cwd=work)
    ids = [int(x) for x in re.findall(r"^(\d+)$", r.stdout, re.M)]
    assert len(ids) == 1, r.stdout  # the cleanup job id printed by the last --parsable sbatch
    cleanup = ids[0]
    assert c.wait_job(cleanup, timeout=90) == "COMPLETED"
    reduce_out = sorted(work.glob("reduce-*.out"))
    assert len(reduce_out) == 1
    assert reduce_out[0].read_text().strip() == "8"
    assert (work / "all.txt").read_text().splitlines() == sorted(
        f"task {i} of 8" for i in range(8))
    assert not list(work.glob("part-*.txt"))
    assert len(list(work.glob("pre-*_*.out"))) == 8
    assert "cleaned" in next(work.glob("cleanup-*.out")).read_text()
