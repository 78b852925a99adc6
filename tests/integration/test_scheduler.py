"""The scheduler on a real local cluster: consumable CPUs shared by jobs, GPUs by index,
features and --constraint, backfill around a blocked wide job, array throttles, partitions
(multi-partition jobs, access lists, limits) and multifactor priority with sprio."""

import re
import time

from conftest import wait_until


def running_on(cluster, job_id):
    job = cluster.show_job(job_id)
    return job["NodeList"] if job and job.get("JobState") == "RUNNING" else None


def output_of(cluster, path, timeout=30):
    return wait_until(lambda: path.exists() and path.read_text().strip() and path.read_text(),
                      timeout, f"output in {path}")


def test_two_one_cpu_jobs_share_a_two_cpu_node(cluster):
    c = cluster(nodes=1, cpus=2)
    first = c.sbatch(["-n1", "--wrap", "sleep 60"])
    c.wait_job(first, "RUNNING")
    assert c.node_state("n1") == "mix"
    second = c.sbatch(["-n1", "--wrap", "sleep 60"])
    c.wait_job(second, "RUNNING")
    assert running_on(c, first) == running_on(c, second) == "n1"
    assert c.node_state("n1") == "alloc"
    # A third one has no CPU left: it waits for Resources.
    third = c.sbatch(["-n1", "--wrap", "true"])
    wait_until(lambda: c.show_job(third)["Reason"] == "Resources", 10, "Resources reason")
    c.run(["scancel", str(first)])
    c.wait_job(third, "COMPLETED")


def test_gpu_jobs_get_distinct_gpu_indexes(cluster, tmp_path):
    c = cluster(nodes=1, cpus=4, conf=["GresTypes=gpu", "NodeName=n1 Gres=gpu:a100:4",
                                        "SchedulerParameters=bf_interval=1"])
    outs = [tmp_path / f"gpu{i}.out" for i in range(2)]
    ids = [c.sbatch(["--gres=gpu:2", "-o", str(o), "--wrap",
                     "echo $CUDA_VISIBLE_DEVICES $SLURM_JOB_GPUS; sleep 300"]) for o in outs]
    for j in ids:
        c.wait_job(j, "RUNNING")
    seen = []
    for o in outs:
        visible, job_gpus = output_of(c, o).split()
        assert visible == job_gpus
        seen.append(set(visible.split(",")))
    assert len(seen[0]) == len(seen[1]) == 2
    assert not seen[0] & seen[1], f"GPUs given twice: {seen}"
    assert seen[0] | seen[1] == {"0", "1", "2", "3"}
    node = c.run(["scontrol", "-d", "show", "node", "n1"]).stdout
    assert "Gres=gpu:a100:4" in node
    assert "GresUsed=gpu:a100:4(IDX:0-3)" in node
    # All four are in use: a third GPU job waits; a CPU-only job is backfilled around it.
    waiting = c.sbatch(["--gpus=1", "--wrap", "true"])
    cpu_only = c.sbatch(["--wrap", "true"])
    assert c.wait_job(cpu_only, timeout=20) == "COMPLETED"
    assert c.job_state(waiting) == "PENDING"
    assert c.show_job(waiting)["Reason"] == "Resources"
    c.run(["scancel", str(ids[0])])
    assert c.wait_job(waiting) == "COMPLETED"
    # A typed request for a type nobody has, and a GRES the cluster lacks, are refused.
    r = c.run(["sbatch", "--gres=gpu:v100:1", "--wrap", "true"], check=False)
    assert r.returncode != 0
    assert "Invalid generic resource (gres) specification" in r.stderr
    r = c.run(["sbatch", "--gres=gpu:8", "--wrap", "true"], check=False)
    assert r.returncode != 0
    assert "Requested node configuration is not available" in r.stderr or \
        "Invalid generic resource" in r.stderr


def test_constraint_selects_nodes_by_feature(cluster):
    c = cluster(nodes=3, cpus=1, conf=["NodeName=n1 Features=intel,ib",
                                        "NodeName=n2 Features=amd,ib",
                                        "NodeName=n3 Features=amd"])
    j = c.sbatch(["-C", "amd&ib", "--wrap", "sleep 20"])
    c.wait_job(j, "RUNNING")
    assert running_on(c, j) == "n2"
    j2 = c.sbatch(["-C", "intel|amd", "-N2", "--wrap", "sleep 20"])
    c.wait_job(j2, "RUNNING")
    assert running_on(c, j2) == "n[1,3]"
    r = c.run(["sbatch", "-C", "intel&amd", "--wrap", "true"], check=False)
    assert r.returncode != 0 and "Requested node configuration is not available" in r.stderr
    r = c.run(["sbatch", "-C", "gpu", "--wrap", "true"], check=False)
    assert r.returncode != 0 and "Invalid feature specification" in r.stderr
    r = c.run(["sbatch", "-C", "amd&|", "--wrap", "true"], check=False)
    assert r.returncode != 0 and "Invalid feature specification" in r.stderr


def test_backfill_runs_a_short_job_around_a_blocked_wide_job(cluster):
    c = cluster(nodes=2, cpus=1, conf=["SchedulerParameters=bf_interval=1,bf_resolution=1",
                                        "KillWait=1"])
    # n1 is busy for at most two minutes (its time limit); the wide job needs both nodes.
    blocker = c.sbatch(["-N1", "-w", "n1", "-t", "2", "--wrap", "sleep 300"])
    c.wait_job(blocker, "RUNNING")
    blocker_start = _epoch(c, blocker, "StartTime")
    wide = c.sbatch(["-N2", "-t", "5", "--wrap", "sleep 1"])
    wait_until(lambda: c.show_job(wide)["Reason"] == "Resources" and
               c.show_job(wide)["StartTime"] != "Unknown", 15, "a reservation for the wide job")
    expected = _epoch(c, wide, "StartTime")
    assert abs(expected - (blocker_start + 120)) <= 2, (expected, blocker_start)
    assert "SchedNodeList=n[1-2]" in c.run(["scontrol", "show", "job", str(wide)]).stdout
    # A one-minute job ends before the reservation: backfill starts it on the idle node.
    short = c.sbatch(["-N1", "-t", "1", "--wrap", "sleep 2"])
    assert c.wait_job(short, "RUNNING", timeout=15) == "RUNNING"
    assert running_on(c, short) == "n2"
    # A long job would delay the wide one: it waits, even though n2 is free again.
    assert c.wait_job(short) == "COMPLETED"
    long_job = c.sbatch(["-N1", "-t", "10", "--wrap", "sleep 1"])
    time.sleep(3)
    assert c.job_state(long_job) == "PENDING"
    assert c.show_job(long_job)["Reason"] in ("Priority", "Resources")
    assert _epoch(c, wide, "StartTime") <= expected
    out = c.run(["squeue", "--start", "-h", "-j", str(wide)]).stdout
    assert "n[1-2]" in out
    # The wide job starts when the blocker reaches its limit, at its expected time.
    c.wait_job(wide, {"RUNNING", "COMPLETED"}, timeout=150)
    started = _epoch(c, wide, "StartTime")
    assert started <= expected + 5, (started, expected)
    assert c.wait_job(blocker) == "TIMEOUT"


def _epoch(cluster, job_id, key):
    value = cluster.show_job(job_id)[key]
    r = cluster.run(["date", "-d", value, "+%s"])
    return int(r.stdout.strip())


def test_array_throttle_never_runs_more_than_its_limit(cluster):
    c = cluster(nodes=2, cpus=4)
    job = c.sbatch(["--array=1-8%2", "--wrap", "sleep 1"])
    most = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        out = c.run(["squeue", "-h", "-r", "-t", "R", "-o", "%i"]).stdout.split()
        most = max(most, len(out))
        left = c.run(["squeue", "-h", "-r", "-o", "%i"]).stdout.split()
        if not left:
            break
        time.sleep(0.1)
    assert most == 2
    states = c.run(["scontrol", "show", "job", str(job)]).stdout
    assert states.count("JobState=COMPLETED") == 8


def test_multi_partition_job_runs_where_it_can(cluster):
    c = cluster(nodes=2, cpus=1, conf=[
        "PartitionName=debug Nodes=n1 Default=YES",
        "PartitionName=other Nodes=n2 PriorityTier=1"])
    busy = c.sbatch(["-p", "debug", "--wrap", "sleep 30"])
    c.wait_job(busy, "RUNNING")
    j = c.sbatch(["-p", "debug,other", "--wrap", "sleep 5"])
    c.wait_job(j, "RUNNING")
    job = c.show_job(j)
    assert job["Partition"] == "other" and job["NodeList"] == "n2"
    r = c.run(["sbatch", "-p", "debug,nosuch", "--wrap", "true"], check=False)
    assert r.returncode != 0 and "invalid partition specified" in r.stderr.lower()


def test_partition_access_and_limits(cluster, users):
    c = cluster(nodes=2, cpus=1, conf=[
        "PartitionName=debug Nodes=ALL Default=YES",
        "PartitionName=staff Nodes=ALL AllowGroups=root",
        "PartitionName=acct Nodes=ALL AllowAccounts=physics",
        "PartitionName=closed Nodes=ALL State=INACTIVE",
        "PartitionName=small Nodes=ALL MaxNodes=1",
        "PartitionName=off Nodes=ALL State=DOWN"])
    user = users["shoaltest1"]
    r = c.run(["sbatch", "-p", "staff", "--wrap", "true"], user=user, check=False)
    assert r.returncode != 0
    assert "User's group not permitted to use this partition" in r.stderr
    # root is in the group (and is an administrator anyway).
    assert c.wait_job(c.sbatch(["-p", "staff", "--wrap", "true"])) == "COMPLETED"
    r = c.run(["sbatch", "-p", "acct", "--wrap", "true"], user=user, check=False)
    assert r.returncode != 0
    assert "Invalid account or account/partition combination specified" in r.stderr
    ok = c.sbatch(["-p", "acct", "-A", "physics", "--wrap", "true"], user=user)
    assert c.wait_job(ok) == "COMPLETED"
    r = c.run(["sbatch", "-p", "closed", "--wrap", "true"], user=user, check=False)
    assert r.returncode != 0
    assert "Required partition not available (inactive or drain)" in r.stderr
    down = c.sbatch(["-p", "off", "--wrap", "true"], user=user)
    wait_until(lambda: c.show_job(down)["Reason"] == "PartitionDown", 10, "PartitionDown")
    # The controller is still up and answering after every refusal.
    c.run(["squeue"])


def test_multifactor_priority_and_sprio(cluster, users):
    c = cluster(nodes=1, cpus=1, conf=[
        "PriorityType=priority/multifactor", "PriorityWeightJobSize=1000",
        "PriorityWeightPartition=1000", "PriorityWeightAge=100", "PriorityFavorSmall=YES",
        "PartitionName=debug Nodes=ALL Default=YES PriorityJobFactor=10",
        "PartitionName=low Nodes=ALL PriorityJobFactor=1"])
    blocker = c.sbatch(["--wrap", "sleep 60"])
    c.wait_job(blocker, "RUNNING")
    high = c.sbatch(["-p", "debug", "--wrap", "true"])
    low = c.sbatch(["-p", "low", "--wrap", "true"])
    out = c.run(["sprio"]).stdout
    lines = out.splitlines()
    assert re.split(r"\s+", lines[0].strip())[:4] == ["JOBID", "PARTITION", "PRIORITY", "SITE"]
    assert "JOBSIZE" in lines[0] and "AGE" in lines[0] and "FAIRSHARE" not in lines[0]
    rows = {int(l.split()[0]): l.split() for l in lines[1:]}
    assert set(rows) == {high, low}
    assert int(rows[high][2]) > int(rows[low][2])
    w = c.run(["sprio", "-w"]).stdout
    assert "Weights" in w and "1000" in w
    r = c.run(["sprio", "-j", str(high), "-o", "%i %Y %P"])
    assert r.stdout.split()[:3] == ["JOBID", "PRIORITY", "PARTITION"]
    # The high-priority job runs first once the CPU frees up.
    c.run(["scancel", str(blocker)])
    assert c.wait_job(high) == "COMPLETED"
    assert c.wait_job(low) == "COMPLETED"
    assert _epoch(c, high, "StartTime") <= _epoch(c, low, "StartTime")


def test_sprio_refuses_priority_basic(cluster):
    c = cluster(nodes=1)
    r = c.run(["sprio"], check=False)
    assert r.returncode != 0
    assert "You are not running a supported priority plugin" in r.stderr


def _preempt_cluster(cluster, mode):
    return cluster(nodes=1, cpus=1, conf=[
        "PreemptType=preempt/partition_prio", f"PreemptMode={mode}", "KillWait=1",
        "PartitionName=low Nodes=ALL Default=YES PriorityTier=1",
        "PartitionName=high Nodes=ALL PriorityTier=10"])


def test_high_tier_job_preempts_and_requeues_a_low_tier_job(cluster):
    c = _preempt_cluster(cluster, "REQUEUE")
    low = c.sbatch(["--wrap", "sleep 300"])
    c.wait_job(low, "RUNNING")
    high = c.sbatch(["-p", "high", "--wrap", "sleep 2"])
    c.wait_job(high, "RUNNING", timeout=20)
    job = c.show_job(low)
    assert job["JobState"] == "PENDING"
    assert job["Restarts"] == "1"
    assert job.get("PreemptTime", "None") != "None"
    assert c.wait_job(high) == "COMPLETED"
    # Requeued, it runs again once the high-tier job is done.
    c.wait_job(low, "RUNNING", timeout=20)
    c.run(["scancel", str(low)])


def test_cancel_mode_preemption_ends_the_low_tier_job_preempted(cluster):
    c = _preempt_cluster(cluster, "CANCEL")
    low = c.sbatch(["--wrap", "sleep 300"])
    c.wait_job(low, "RUNNING")
    high = c.sbatch(["-p", "high", "--wrap", "true"])
    assert c.wait_job(low, timeout=20) == "PREEMPTED"
    assert c.wait_job(high) == "COMPLETED"
    # Equal tiers never preempt each other.
    other = c.sbatch(["--wrap", "sleep 300"])
    c.wait_job(other, "RUNNING")
    same = c.sbatch(["--wrap", "true"])
    time.sleep(3)
    assert c.job_state(other) == "RUNNING" and c.job_state(same) == "PENDING"


def test_scontrol_update_throttle_dependency_and_deadline(cluster):
    c = cluster(nodes=1, cpus=4)
    array = c.sbatch(["--array=1-4%1", "--wrap", "sleep 20"])
    wait_until(lambda: len(c.run(["squeue", "-h", "-r", "-t", "R"]).stdout.split("\n")) >= 1 and
               c.run(["squeue", "-h", "-r", "-t", "R", "-o", "%i"]).stdout.strip(), 10, "a task")
    time.sleep(1)
    assert len(c.run(["squeue", "-h", "-r", "-t", "R", "-o", "%i"]).stdout.split()) == 1
    c.run(["scontrol", "update", f"JobId={array}", "ArrayTaskThrottle=3"])
    wait_until(lambda: len(c.run(["squeue", "-h", "-r", "-t", "R", "-o", "%i"]).stdout.split())
               == 3, 10, "three tasks running")
    c.run(["scancel", str(array)])

    first = c.sbatch(["--wrap", "sleep 30"])
    second = c.sbatch(["--hold", "--wrap", "true"])
    c.run(["scontrol", "update", f"JobId={second}", f"Dependency=afterok:{first}"])
    c.run(["scontrol", "release", str(second)])
    wait_until(lambda: c.show_job(second)["Reason"] == "Dependency", 10, "Dependency reason")
    c.run(["scancel", str(first)])
    wait_until(lambda: c.show_job(second)["Reason"] == "DependencyNeverSatisfied", 10,
               "DependencyNeverSatisfied")
    r = c.run(["scontrol", "update", f"JobId={second}", "Dependency=afterok:999999"],
              check=False)
    assert r.returncode != 0
    c.run(["scancel", str(second)])

    # A ten-minute job cannot end before a deadline one minute away: it is removed.
    late = c.sbatch(["-t", "10", "--deadline=now+1minute", "--wrap", "true"])
    assert c.wait_job(late, timeout=15) == "DEADLINE"
    on_time = c.sbatch(["-t", "1", "--deadline=now+1hour", "--wrap", "true"])
    assert c.wait_job(on_time) == "COMPLETED"


def test_scontrol_suspend_and_resume(cluster, users, tmp_path):
    c = cluster(nodes=1, cpus=1)
    out = tmp_path / "count.out"
    job = c.sbatch(["-o", str(out), "--wrap",
                    "i=0; while true; do i=$((i+1)); echo $i > " + str(out) + ".n; sleep 0.2; done"])
    c.wait_job(job, "RUNNING")
    counter = tmp_path / "count.out.n"
    wait_until(lambda: counter.exists() and counter.read_text().strip(), 10, "the job to count")
    r = c.run(["scontrol", "suspend", str(job)], user=users["shoaltest1"], check=False)
    assert r.returncode != 0 and "Access/permission denied" in r.stderr
    c.run(["scontrol", "suspend", str(job)])
    assert c.job_state(job) == "SUSPENDED"
    time.sleep(1)
    frozen = counter.read_text()
    time.sleep(1.5)
    assert counter.read_text() == frozen, "a suspended job kept running"
    # Its CPU is lent out while it is suspended.
    other = c.sbatch(["--wrap", "true"])
    assert c.wait_job(other, timeout=20) == "COMPLETED"
    c.run(["scontrol", "resume", str(job)])
    assert c.job_state(job) == "RUNNING"
    wait_until(lambda: counter.read_text() != frozen, 10, "the job to count again")
    r = c.run(["scontrol", "resume", str(job)], check=False)
    assert r.returncode != 0
    c.run(["scancel", str(job)])
    assert c.wait_job(job) == "CANCELLED"


def test_suspend_mode_preemption_suspends_then_resumes(cluster):
    c = cluster(nodes=1, cpus=1, conf=[
        "PreemptType=preempt/partition_prio", "PreemptMode=SUSPEND,GANG", "KillWait=1",
        "PartitionName=low Nodes=ALL Default=YES PriorityTier=1",
        "PartitionName=high Nodes=ALL PriorityTier=10"])
    low = c.sbatch(["--wrap", "sleep 300"])
    c.wait_job(low, "RUNNING")
    high = c.sbatch(["-p", "high", "--wrap", "sleep 2"])
    c.wait_job(high, "RUNNING", timeout=20)
    assert c.job_state(low) == "SUSPENDED"
    assert c.wait_job(high) == "COMPLETED"
    c.wait_job(low, "RUNNING", timeout=20)
    c.run(["scancel", str(low)])


def reasons(c):
    out = c.run(["squeue", "-h", "-t", "PD", "-o", "%i %r"]).stdout.split("\n")
    return dict(line.split(" ", 1) for line in out if line)


def queue_behind_blocker(c, nodes, count):
    """A job holding all `nodes`, RUNNING, and `count` one-node jobs pending behind it."""
    blocker = c.sbatch([f"-N{nodes}", "--wrap", "sleep 300"])
    c.wait_job(blocker, "RUNNING")
    return blocker, [c.sbatch(["-N1", "--wrap", "sleep 300"]) for _ in range(count)]


def test_default_queue_depth_bounds_event_passes(cluster):
    # Event-triggered passes (a submission, the 1-s tick) weigh only the first pending job;
    # with no periodic full pass, jobs deeper down keep the reason they were submitted with.
    c = cluster(nodes=6, cpus=1, conf=[
        "SchedulerParameters=default_queue_depth=1,sched_interval=-1,bf_interval=3600"])
    blocker, queued = queue_behind_blocker(c, 6, 8)
    time.sleep(3)  # three ticks
    r = reasons(c)
    assert r[str(queued[0])] == "Resources", r
    assert all(r[str(j)] == "None" for j in queued[1:]), r
    # Nodes free: a pass cut short that started a job runs again at once, so all six start
    # well before six ticks (each of which weighs one job) could have started them.
    c.run(["scancel", str(blocker)])
    wait_until(lambda: sum(c.job_state(j) == "RUNNING" for j in queued) == 6, 2.5,
               "six queued jobs to start")
    assert [c.job_state(j) for j in queued[6:]] == ["PENDING", "PENDING"]


def test_sched_interval_pass_weighs_every_pending_job(cluster):
    c = cluster(nodes=4, cpus=1, conf=[
        "SchedulerParameters=default_queue_depth=2,sched_interval=2,bf_interval=3600"])
    _, queued = queue_behind_blocker(c, 4, 6)
    wait_until(lambda: all(reasons(c)[str(j)] == "Priority" for j in queued[1:]), 10,
               "the full pass to give every deep job its reason")
    assert reasons(c)[str(queued[0])] == "Resources"


def test_partition_job_depth_bounds_each_partition(cluster):
    # Every pass weighs all jobs (sched_interval=1) but at most one per partition.
    c = cluster(nodes=2, cpus=1, conf=[
        "SchedulerParameters=partition_job_depth=1,sched_interval=1,bf_interval=3600",
        "PartitionName=debug Nodes=n1 Default=YES", "PartitionName=other Nodes=n2"])
    blockers = [c.sbatch(["-p", p, "--wrap", "sleep 300"]) for p in ("debug", "other")]
    for b in blockers:
        c.wait_job(b, "RUNNING")
    first = [c.sbatch(["-p", p, "--wrap", "sleep 300"]) for p in ("debug", "other")]
    second = [c.sbatch(["-p", p, "--wrap", "sleep 300"]) for p in ("debug", "other")]
    time.sleep(3)  # full passes
    r = reasons(c)
    assert [r[str(j)] for j in first] == ["Resources", "Resources"], r
    assert [r[str(j)] for j in second] == ["None", "None"], r
    # The first of a partition gone, the next one is weighed.
    c.run(["scancel", str(first[0])])
    wait_until(lambda: reasons(c)[str(second[0])] == "Resources", 5, "the next job weighed")


def test_defer_leaves_submissions_to_the_periodic_pass(cluster):
    def cycles_for_submissions(c):
        c.run(["sdiag", "--reset"])
        t0 = time.monotonic()
        for _ in range(30):
            c.sbatch(["--hold", "--wrap", "true"])
        elapsed = time.monotonic() - t0
        out = c.run(["sdiag"]).stdout
        main = out[out.index("Main schedule statistics"):]
        return int(re.search(r"Total cycles:\s+(\d+)", main).group(1)), elapsed

    plain = cluster(nodes=1)
    cycles, _ = cycles_for_submissions(plain)
    assert cycles >= 20, cycles  # a pass after (nearly) every submission
    deferred = cluster(nodes=1, conf=["SchedulerParameters=defer"])
    cycles, elapsed = cycles_for_submissions(deferred)
    assert cycles <= elapsed + 2, (cycles, elapsed)  # the once-a-second tick only
    # A deferred job still starts, on the next tick.
    assert deferred.wait_job(deferred.sbatch(["--wrap", "true"]), timeout=30) == "COMPLETED"


def test_throttled_array_tasks_do_not_fill_the_queue_depth(cluster):
    # Depth 1, no full pass: the array's waiting tasks (JobArrayTaskLimit) come first in
    # priority order, yet the job behind them is weighed and starts on the free node.
    c = cluster(nodes=2, cpus=1, conf=[
        "SchedulerParameters=default_queue_depth=1,sched_interval=-1,bf_interval=3600"])
    array = c.sbatch(["--array=0-3%1", "--wrap", "sleep 300"])
    wait_until(lambda: "JobArrayTaskLimit" in reasons(c).values(), 10,
               f"array {array} to be throttled")
    later = c.sbatch(["--wrap", "sleep 300"])
    c.wait_job(later, "RUNNING", timeout=5)


def test_queue_depth_does_not_cut_passes_across_partition_tiers(cluster):
    # The walk goes by priority, the planner by PriorityTier first: a later job of a higher tier
    # must still be weighed when the first job (lower tier, higher priority) fills the depth.
    c = cluster(nodes=2, cpus=1, conf=[
        "SchedulerParameters=default_queue_depth=1,sched_interval=-1,bf_interval=3600",
        "PartitionName=low Nodes=n1 Default=YES PriorityTier=1",
        "PartitionName=high Nodes=n2 PriorityTier=2"])
    blocker = c.sbatch(["-p", "low", "--wrap", "sleep 300"])
    c.wait_job(blocker, "RUNNING")
    waiting = c.sbatch(["-p", "low", "--wrap", "sleep 300"])
    wait_until(lambda: reasons(c).get(str(waiting)) == "Resources", 5, "the low job to wait")
    high = c.sbatch(["-p", "high", "--wrap", "sleep 300"])
    c.wait_job(high, "RUNNING", timeout=5)
