"""Finished jobs are kept packed (serialized) in the controller's memory until MinJobAge, once
nothing can happen to them any more: epilogs done and shoaldbd's acknowledgement of the final
record in (src/ctld/packed_job.h). Whatever reads or changes a finished job must give what it
gives with a parsed one: listings by state, scontrol show job, dependencies, the array variables
of later tasks, a requeue, another user's attempts, a controller crash and the purge.
shoal_jobs_finished_packed (OpenMetrics) says how many are packed, so the test knows the packed
paths were the ones taken."""

import re

from conftest import shoal_metric, wait_until

OK = "#!/bin/bash\necho done\n"
FAILS = "#!/bin/bash\nexit 3\n"
# Tasks run one at a time and last a while, so the earlier ones are packed when the later start.
ARRAY = ("#!/bin/bash\n"
         "echo \"$SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN "
         "$SLURM_ARRAY_TASK_MAX\"\nsleep 2\n")


def finished_packed(c):
    return shoal_metric(c, "shoal_jobs_finished_packed")


def wait_finished_packed(c, n, timeout=20):
    wait_until(lambda: finished_packed(c) == n, timeout,
               f"{n} finished jobs packed (now {finished_packed(c)})", interval=0.2)


def all_states(c, user):
    rows = c.run(["squeue", "-h", "-r", "-u", user, "-t", "all", "-o", "%i %T"]).stdout
    return dict(line.split() for line in rows.splitlines())


def test_finished_jobs_kept_packed_answer_and_act_as_any_job(cluster, users):
    c = cluster(nodes=2, conf=["MetricsType=metrics/openmetrics", "MinJobAge=3600"])
    owner, other = users["shoaltest1"], users["shoaltest2"]
    ok = c.sbatch(["-J", "fin-ok", "-t", "5"], OK, user=owner)
    fails = c.sbatch(["-J", "fin-fail", "-t", "5"], FAILS, user=owner)
    array = c.sbatch(["-J", "fin-arr", "--array=0-3%1", "-t", "5"], ARRAY, user=owner)
    for job in (ok, fails):
        c.wait_job(job, timeout=30)
    for task in range(4):
        c.wait_job(f"{array}_{task}", timeout=60)
    # Each job is packed once its final record is in shoaldbd (the suite runs with accounting).
    wait_finished_packed(c, 6)

    # Later tasks saw the whole array, though earlier ones were packed by then.
    for task in range(4):
        out = (owner.home / f"slurm-{array}_{task}.out").read_text()
        assert out == f"{task} 4 0 3\n", out

    # Listings: by state, from the packed bytes; a default squeue leaves finished jobs out.
    states = all_states(c, owner.name)
    assert states[str(ok)] == "COMPLETED" and states[str(fails)] == "FAILED", states
    assert [states[f"{array}_{t}"] for t in range(4)] == ["COMPLETED"] * 4, states
    assert c.run(["squeue", "-h", "-u", owner.name, "-o", "%i"]).stdout.split() == []
    failed = c.run(["squeue", "-h", "-u", owner.name, "-t", "F", "-o", "%i"]).stdout.split()
    assert failed == [str(fails)], failed
    named = c.run(["squeue", "-h", "-t", "all", "-n", "fin-ok", "-o", "%i %j"]).stdout.split()
    assert named == [str(ok), "fin-ok"], named
    job = c.show_job(fails)
    assert job["JobState"] == "FAILED" and job["ExitCode"] == "3:0", job
    assert job["JobName"] == "fin-fail" and job["UserId"].startswith(owner.name), job
    assert job["EndTime"] != "Unknown" and job["NodeList"] not in ("", "(null)"), job
    assert finished_packed(c) == 6  # read where they lie, not unpacked

    # Dependencies read them packed too: afterok on the good one runs, on the failed one never.
    after_ok = c.sbatch([f"--dependency=afterok:{ok}", "-t", "5"], OK, user=owner)
    after_fail = c.sbatch([f"--dependency=afterok:{fails}", "-t", "5"], OK, user=owner)
    assert c.wait_job(after_ok, timeout=30) == "COMPLETED"
    wait_until(lambda: c.show_job(after_fail)["Reason"] == "DependencyNeverSatisfied", 15,
               "afterok on a failed job never satisfied")
    c.run(["scancel", str(after_fail)], user=owner)

    # Another user can neither requeue nor cancel them; nothing changes.
    r = c.run(["scontrol", "requeue", str(ok)], user=other, check=False)
    assert r.returncode != 0 and "Access/permission denied" in r.stderr, r.stderr
    assert c.job_state(ok) == "COMPLETED"

    # A crash of the controller loses nothing; they come back packed (the two dependent jobs
    # have finished too by now).
    settled = 8
    wait_finished_packed(c, settled)
    c.kill_controller()
    c.start_controller()
    loaded = re.findall(r"state loaded in \d+ ms: \d+ jobs \(\d+ packed, (\d+) finished packed\)",
                        (c.log_dir / "shoalctld.log").read_text())
    assert loaded and int(loaded[-1]) == settled, (loaded, settled)
    job = c.show_job(fails)
    assert job["JobState"] == "FAILED" and job["ExitCode"] == "3:0", job
    assert all_states(c, owner.name)[str(ok)] == "COMPLETED"

    # The owner requeues a finished one: it is parsed back, runs again, and is packed again.
    before = finished_packed(c)
    c.run(["scontrol", "requeue", str(ok)], user=owner)
    wait_until(lambda: c.job_state(ok) == "COMPLETED" and c.show_job(ok)["Restarts"] == "1", 60,
               "the requeued job completed again")
    wait_finished_packed(c, before)
    assert (owner.home / f"slurm-{ok}.out").read_text() == "done\n"


def test_finished_packed_jobs_are_purged_after_min_job_age(cluster, users):
    c = cluster(nodes=1, conf=["MetricsType=metrics/openmetrics", "MinJobAge=6"])
    owner = users["shoaltest1"]
    jobs = [c.sbatch(["-t", "5"], OK, user=owner) for _ in range(3)]
    for job in jobs:
        c.wait_job(job, timeout=30)
    wait_finished_packed(c, 3)
    wait_finished_packed(c, 0, timeout=30)  # MinJobAge passed: purged
    for job in jobs:
        r = c.run(["scontrol", "show", "job", str(job)], check=False)
        assert r.returncode != 0 and "Invalid job id specified" in r.stderr, r.stderr
    assert all_states(c, owner.name) == {}
    # Accounting still has them.
    out = c.run(["sacct", "-n", "-X", "-j", ",".join(map(str, jobs)), "-o", "JobID,State"]).stdout
    assert sorted(line.split()[0] for line in out.splitlines()) == sorted(map(str, jobs)), out
