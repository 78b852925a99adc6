"""Jobs that wait for resources are kept packed too (src/ctld/packed_job.h): the scheduling passes
weigh them from a small view and write what they conclude (reason, expected start, planned nodes)
beside the bytes, and the job is parsed again only when it starts or someone changes it. Whatever
a user or admin sees or does must be what they get with a parsed job: reasons, expected starts,
sprio, a priority recalculation, a partition limit, updates, another user's attempts, a crash of
the controller, and the jobs running once the resources free up. shoal_jobs_packed_runnable
(OpenMetrics) says how many are packed, so the test knows the packed paths were the ones taken."""

import re
import time

from conftest import shoal_metric, wait_until

QUICK = "#!/bin/bash\necho ran $SLURM_JOB_ID\n"


def packed_runnable(c):
    """shoal_jobs_packed_runnable, as of now."""
    return shoal_metric(c, "shoal_jobs_packed_runnable", fresh=True)


def wait_packed(c, n, timeout=15):
    wait_until(lambda: packed_runnable(c) == n, timeout,
               f"{n} packed runnable jobs (now {packed_runnable(c)})", interval=0)


def pending(c):
    """id -> (reason, start time, priority, name) of the pending jobs, from squeue."""
    out = c.run(["squeue", "-h", "-r", "-t", "PD", "-o", "%i|%r|%S|%Q|%j"]).stdout
    rows = {}
    for line in out.splitlines():
        job, reason, start, prio, name = line.split("|")
        rows[int(job)] = (reason, start, int(prio), name)
    return rows


def test_runnable_jobs_kept_packed_answer_and_act_as_any_job(cluster, users):
    c = cluster(nodes=2, conf=["MetricsType=metrics/openmetrics",
                               "PriorityType=priority/multifactor",
                               "SchedulerParameters=bf_interval=1"])
    owner, other = users["shoaltest1"], users["shoaltest2"]
    part = c.run(["sinfo", "-h", "-o", "%R"]).stdout.split()[0].rstrip("*")
    blocker = c.sbatch(["--exclusive", "-N", "2", "-t", "10", "-J", "blocker"],
                       "#!/bin/bash\nsleep 600\n")
    c.wait_job(blocker, states={"RUNNING"}, timeout=30)
    small = [c.sbatch(["-t", "5", "-J", "small"], QUICK, user=owner) for _ in range(3)]
    big = c.sbatch(["-t", "5", "-N", "2", "-J", "big"], QUICK, user=owner)
    array = c.sbatch(["-t", "5", "-J", "arr", "--array=0-2"], QUICK, user=owner)
    queued = small + [big]
    wait_packed(c, 7)  # the three small, the big one, the three array tasks

    # Listed from the packed bytes: reasons from the passes, expected starts from backfill
    # (the blocker ends within its 10 minutes), the planned nodes in scontrol show job.
    def planned():
        rows = pending(c)
        return len(rows) == 7 and all(r[1] not in ("N/A", "") for r in rows.values())
    wait_until(planned, 20, "expected start times for every queued job")
    rows = pending(c)
    assert {r[0] for r in rows.values()} <= {"Resources", "Priority"}, rows
    assert "Resources" in {r[0] for r in rows.values()}, rows
    job = c.show_job(small[0])
    assert job["JobState"] == "PENDING" and job["Reason"] in ("Resources", "Priority"), job
    assert job["StartTime"] != "Unknown", job
    assert job.get("SchedNodeList", "") not in ("", "(null)"), job
    assert job["UserId"].startswith(owner.name) and job["TimeLimit"] == "00:05:00", job
    assert packed_runnable(c) == 7  # read by id, not unpacked
    assert len(c.run(["squeue", "-h", "-r", "-j", str(array), "-o", "%i"]).stdout.split()) == 3

    # sprio lists them from their bytes; a recalculation with a job-size weight (reconfigure)
    # recomputes their priorities in place: the two-node job now comes first.
    sprio = c.run(["sprio", "-h", "-o", "%i"]).stdout.split()
    assert {int(x.split("_")[0]) for x in sprio} >= set(queued), sprio
    with open(c.conf_path, "a") as f:
        f.write("PriorityWeightJobSize=10000\n")
    c.run(["scontrol", "reconfigure"])
    wait_until(lambda: pending(c)[big][2] > max(pending(c)[s][2] for s in small), 10,
               "the big job's priority above the small ones'")
    wait_packed(c, 7)  # unpacked by the first pass after the partitions were reread; packed again
    line = c.run(["sprio", "-h", "-j", str(big), "-o", "%i %J"]).stdout.split()
    assert line[0] == str(big) and int(line[1]) > 0, line

    # A partition limit the jobs exceed (slurm.conf, reconfigure): once packed again, the
    # passes say so from the view.
    def set_max_time(value):
        text = c.conf_path.read_text()
        text = re.sub(rf"^(PartitionName={part} .*)MaxTime=\S+", rf"\1MaxTime={value}", text,
                      flags=re.M)
        c.conf_path.write_text(text)
        c.run(["scontrol", "reconfigure"])
    set_max_time("2")
    wait_until(lambda: {r[0] for r in pending(c).values()} == {"PartitionTimeLimit"}, 10,
               "PartitionTimeLimit for every queued job")
    wait_packed(c, 7)
    time.sleep(1)  # passes over the packed jobs
    assert {r[0] for r in pending(c).values()} == {"PartitionTimeLimit"}
    set_max_time("INFINITE")
    wait_until(lambda: "PartitionTimeLimit" not in {r[0] for r in pending(c).values()}, 10,
               "the partition limit lifted")
    wait_packed(c, 7)

    # Another user can neither cancel nor change them; nothing changes.
    r = c.run(["scancel", str(small[0])], user=other, check=False)
    assert r.returncode != 0 and "Access/permission denied" in r.stderr, r.stderr
    r = c.run(["scontrol", "update", f"JobId={small[1]}", "TimeLimit=3"], user=other, check=False)
    assert r.returncode != 0, r.stdout + r.stderr
    assert c.show_job(small[1])["TimeLimit"] == "00:05:00"
    # The owner's update unpacks it; still waiting, it is packed again with the change.
    c.run(["scontrol", "update", f"JobId={small[1]}", "TimeLimit=3"], user=owner)
    assert c.show_job(small[1])["TimeLimit"] == "00:03:00"
    wait_packed(c, 7)
    assert c.show_job(small[1])["TimeLimit"] == "00:03:00"

    # A crash of the controller loses nothing; they come back packed, reasons and all.
    c.kill_controller()
    c.start_controller()
    wait_packed(c, 7)
    rows = pending(c)
    assert len(rows) == 7 and {r[0] for r in rows.values()} <= {"Resources", "Priority"}, rows
    c.run(["scancel", str(small[2])], user=owner)
    wait_packed(c, 6)
    assert c.job_state(small[2]) == "CANCELLED"

    # Once the blocker ends, every one of them runs.
    c.run(["scancel", str(blocker)])
    for job in small[:2] + [big]:
        assert c.wait_job(job, timeout=60) == "COMPLETED", job
        assert (owner.home / f"slurm-{job}.out").read_text() == f"ran {job}\n"
    for task in range(3):
        assert c.wait_job(f"{array}_{task}", timeout=60) == "COMPLETED"
    wait_packed(c, 0)
