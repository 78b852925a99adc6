"""Held jobs are kept packed (serialized) in the controller's memory and parsed back the moment
anyone looks at them or changes them (src/ctld/packed_job.h). Whatever a user or admin does with
a held job must give what it gives with any other job: listings, filters, show, update, release,
cancel, a controller crash, and another user's attempts. shoal_jobs_packed (OpenMetrics) says how
many are packed, so the test knows the packed paths were the ones taken."""

from conftest import shoal_metric, wait_until

SLEEPER = "#!/bin/bash\nsleep 300\n"
QUICK = "#!/bin/bash\necho released\n"


def packed(c):
    return shoal_metric(c, "shoal_jobs_packed")


def wait_packed(c, n):
    wait_until(lambda: packed(c) == n, 10, f"{n} packed jobs (now {packed(c)})", interval=0.2)


def test_held_jobs_kept_packed_answer_and_act_as_any_job(cluster, users):
    c = cluster(nodes=2, conf=["MetricsType=metrics/openmetrics"])
    owner, other = users["shoaltest1"], users["shoaltest2"]
    uid = owner.uid
    held = [c.sbatch(["-H", "-J", "packme", "--comment", "hello", "-t", "5"], script, user=owner)
            for script in (SLEEPER, SLEEPER, QUICK)]
    array = c.sbatch(["-H", "-J", "packarr", "--array=0-3", "-t", "7"], SLEEPER, user=owner)
    free = c.sbatch(["-J", "free", "-t", "5"], SLEEPER, user=owner)  # runs: never packed
    c.wait_job(free, states={"RUNNING"}, timeout=30)
    wait_packed(c, 7)

    # Listings: every column from the packed bytes, as for any job.
    rows = c.run(["squeue", "-h", "-r", "-u", owner.name, "-t", "PD", "-o",
                  "%i|%j|%u|%T|%r|%l|%k"]).stdout.splitlines()
    assert len(rows) == 7, rows
    for row in rows:
        job, name, user, state, reason, limit, comment = row.split("|")
        assert user == owner.name and state == "PENDING" and reason == "JobHeldUser", row
        assert (name, limit) in {("packme", "5:00"), ("packarr", "7:00")}, row
        assert comment == ("hello" if name == "packme" else "(null)"), row
    # Filters the packed header answers (user, state) and those that parse (name, partition).
    assert len(c.run(["squeue", "-h", "-n", "packme", "-o", "%i"]).stdout.split()) == 3
    part = c.run(["sinfo", "-h", "-o", "%R"]).stdout.split()[0].rstrip("*")
    assert len(c.run(["squeue", "-h", "-r", "-p", part, "-t", "PD", "-o", "%i"]).stdout.split()) == 7
    assert c.run(["squeue", "-h", "-u", "root", "-o", "%i"]).stdout.split() == []
    assert len(c.run(["squeue", "-h", "-r", "-j", str(array), "-o", "%i"]).stdout.split()) == 4
    assert c.run(["squeue", "-h", "-j", str(array), "-o", "%i"]).stdout.split() == [f"{array}_[0-3]"]
    job = c.show_job(held[0])
    assert job["JobName"] == "packme" and job["Comment"] == "hello"
    assert job["UserId"] == f"{owner.name}({uid})" and job["JobState"] == "PENDING"
    assert job["Reason"] == "JobHeldUser" and job["TimeLimit"] == "00:05:00"
    assert "Command" in job and job["WorkDir"] == str(owner.home)
    assert packed(c) >= 6  # looked at: unpacked; packed again by the next tick
    wait_packed(c, 7)

    # Another user can neither release nor cancel them; nothing changes.
    r = c.run(["scancel", str(held[0])], user=other, check=False)
    assert r.returncode != 0 and "Access/permission denied" in r.stderr, r.stderr
    r = c.run(["scontrol", "release", str(held[1])], user=other, check=False)
    assert r.returncode != 0, r.stdout + r.stderr
    assert c.job_state(held[0]) == c.job_state(held[1]) == "PENDING"

    # An update unpacks it; still held, it is packed again with the change.
    c.run(["scontrol", "update", f"JobId={held[0]}", "Comment=changed"], user=owner)
    wait_packed(c, 7)
    assert c.show_job(held[0])["Comment"] == "changed"

    # A crash of the controller loses nothing; they come back packed.
    c.kill_controller()
    c.start_controller()
    wait_packed(c, 7)
    assert c.show_job(held[0])["Comment"] == "changed"
    assert len(c.run(["squeue", "-h", "-r", "-t", "PD", "-o", "%i"]).stdout.split()) == 7

    # Released, it runs like any job.
    c.run(["scancel", str(free)], user=owner)
    c.run(["scontrol", "release", str(held[2])], user=owner)
    wait_packed(c, 6)
    assert c.wait_job(held[2], timeout=30) == "COMPLETED"
    assert (owner.home / f"slurm-{held[2]}.out").read_text() == "released\n"

    # A filtered cancel reaches the packed jobs too.
    c.run(["scancel", "-u", owner.name, "-n", "packarr"], user=owner)
    assert len(c.run(["squeue", "-h", "-r", "-t", "PD", "-o", "%i"]).stdout.split()) == 2
    c.run(["scancel", "-u", owner.name], user=owner)
    wait_packed(c, 0)
    assert c.run(["squeue", "-h", "-t", "PD", "-o", "%i"]).stdout.split() == []
