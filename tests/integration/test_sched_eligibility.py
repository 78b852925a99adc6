"""Jobs that wait for an event (a dependency, a begin time, a release) are kept out of the
scheduling pass until the event comes (the controller's eligibility index). These tests check
that each such job still starts promptly once it may, with many blocked jobs in the queue."""

import time
from datetime import datetime

from conftest import wait_until


def ts(value):
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S").timestamp()


def reason(c, job_id):
    return c.show_job(job_id)["Reason"]


def started_after(c, waiter, blocker, within):
    """The waiter ran, and started at most `within` seconds after the blocker ended."""
    assert c.wait_job(waiter, timeout=30) == "COMPLETED"
    gap = ts(c.show_job(waiter)["StartTime"]) - ts(c.show_job(blocker)["EndTime"])
    assert 0 <= gap <= within, f"job {waiter} started {gap}s after job {blocker} ended"


def test_parked_jobs_start_promptly_once_eligible(cluster):
    c = cluster(nodes=1, cpus=4)
    # A queue of blocked jobs the pass no longer walks: held, waiting on a held job, and
    # waiting for a begin time an hour away.
    anchor = c.sbatch(["--hold", "--wrap", "true"])
    c.run(f"for i in $(seq 40); do sbatch --hold --wrap true -o /dev/null >/dev/null; "
          f"sbatch -d afterok:{anchor} --wrap true -o /dev/null >/dev/null; "
          f"sbatch --begin=now+3600 --wrap true -o /dev/null >/dev/null; done")

    # afterok: the dependent job starts once its dependency completed.
    first = c.sbatch(["--wrap", "sleep 2"])
    dep = c.sbatch([f"--dependency=afterok:{first}", "--wrap", "true"])
    wait_until(lambda: reason(c, dep) == "Dependency", 10, "Dependency reason")
    assert c.wait_job(first) == "COMPLETED"
    started_after(c, dep, first, 2)

    # afterany on a pending job that is cancelled.
    held = c.sbatch(["--hold", "--wrap", "true"])
    anyway = c.sbatch([f"--dependency=afterany:{held}", "--wrap", "true"])
    wait_until(lambda: reason(c, anyway) == "Dependency", 10, "Dependency reason")
    time.sleep(1.5)  # parked by now: several passes ran
    c.run(["scancel", str(held)])
    started_after(c, anyway, held, 2)

    # singleton: the second job of the same name and user waits for the first.
    s1 = c.sbatch(["-J", "solo", "-d", "singleton", "--wrap", "sleep 2"])
    s2 = c.sbatch(["-J", "solo", "-d", "singleton", "--wrap", "true"])
    wait_until(lambda: reason(c, s2) == "Dependency", 10, "singleton waits")
    assert c.wait_job(s1) == "COMPLETED"
    started_after(c, s2, s1, 2)

    # A begin time a few seconds away: pending with BeginTime, then runs on time.
    begin = c.sbatch(["--begin=now+3", "--wrap", "true"])
    assert reason(c, begin) == "BeginTime"
    assert c.wait_job(begin, timeout=15) == "COMPLETED"
    job = c.show_job(begin)
    assert 0 <= ts(job["StartTime"]) - ts(job["EligibleTime"]) <= 2

    # A begin time moved from an hour away to now (scontrol update), after it was parked.
    later = c.sbatch(["--begin=now+3600", "--wrap", "true"])
    time.sleep(1.5)
    assert reason(c, later) == "BeginTime"
    c.run(["scontrol", "update", f"JobId={later}", "StartTime=now"])
    assert c.wait_job(later, timeout=5) == "COMPLETED"

    # A dependency changed on a parked job (scontrol update) is looked at again at once.
    moved = c.sbatch([f"--dependency=afterok:{anchor}", "--wrap", "true"])
    time.sleep(1.5)
    assert reason(c, moved) == "Dependency"
    c.run(["scontrol", "update", f"JobId={moved}", f"Dependency=afterok:{first}"])
    assert c.wait_job(moved, timeout=5) == "COMPLETED"

    # A released held job starts promptly.
    hold = c.sbatch(["--hold", "--wrap", "true"])
    time.sleep(1.5)
    c.run(["scontrol", "release", str(hold)])
    assert c.wait_job(hold, timeout=5) == "COMPLETED"

    # Releasing the anchor frees its 40 dependents, which were parked all along.
    c.run(["scontrol", "release", str(anchor)])
    assert c.wait_job(anchor, timeout=10) == "COMPLETED"
    wait_until(lambda: c.run(["squeue", "-h", "-t", "PD", "-o", "%i %r"]).stdout.count(
        "Dependency") == 0, 20, "the anchor's dependents to leave the queue")
    # The rest stays queued with its reasons; sdiag still counts it.
    pending = c.run(["squeue", "-h", "-t", "PD", "-o", "%r"]).stdout.split()
    assert pending.count("BeginTime") == 40
    assert pending.count("JobHeldUser") == 40
