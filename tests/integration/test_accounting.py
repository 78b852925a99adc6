"""Accounting: shoaldbd on SQLite (the default) and on a real MariaDB server, sacct after a mix of
jobs, records that survive an outage of shoaldbd or of the database, sacctmgr associations and
limits enforced by the controller, and hostile input."""

import os
import re
import signal
import time

import pytest

from conftest import FINISHED_STATES, dbd_conf_for, wait_until

def sacct(c, *args, user=None, check=True):
    return c.run(["sacct", *args], user=user, check=check)


def sacct_rows(c, *args):
    """sacct -P -n output as a list of field lists."""
    r = sacct(c, "-P", "-n", *args)
    return [line.split("|") for line in r.stdout.splitlines() if line]


def squeue_empty_except(c, keep):
    r = c.run(["squeue", "-h", "-o", "%i"])
    return set(r.stdout.split()) <= {str(j) for j in keep}


MIX_STEPS = """#!/bin/bash
srun -n1 hostname
srun -n1 true
"""


@pytest.mark.parametrize("backend,outage", [
    ("sqlite", "dbd"),
    ("mariadb", "dbd"),
    ("mariadb", "database"),
])
def test_sacct_after_outage(cluster, request, backend, outage):
    """While shoaldbd (or MariaDB under it) is down for a minute, a mix of jobs and 500 trivial
    jobs run; afterwards every record is in the database exactly once, and sacct shows each job
    with Slurm's state, exit code and steps."""
    server = request.getfixturevalue("mariadb") if backend == "mariadb" else None
    db_name = f"shoal_it_{outage}_{os.getpid()}"
    c = cluster(nodes=4, cpus=4, conf=["KillWait=2", "MinJobAge=2"],
                dbd_conf=dbd_conf_for(backend, server, db_name))
    begin = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() - 5))
    # Runs before the outage so its records exist in both states (running, then TIMEOUT).
    timeout_job = c.sbatch(["-t", "1", "-J", "timeout", "--wrap", "sleep 600"])
    c.wait_job(timeout_job, "RUNNING", timeout=30)
    wait_until(lambda: any(r[0] == str(timeout_job) and r[1] == "RUNNING"
                           for r in sacct_rows(c, "-X", "-j", str(timeout_job),
                                               "-o", "JobID,State")),
               30, "sacct to show the running job")

    down_since = time.monotonic()
    if outage == "dbd":
        c.kill_dbd(signal.SIGKILL)
    else:
        server.stop()

    done = c.sbatch(["-J", "done", "--wrap", "echo hello"])
    failed = c.sbatch(["-J", "failed", "--wrap", "exit 3"])
    held = c.sbatch(["-J", "held", "--hold", "--wrap", "true"])
    running = c.sbatch(["-J", "killed", "--wrap", "sleep 300"])
    array = c.sbatch(["-J", "arr", "--array=1-3",
                      "--wrap", 'test "$SLURM_ARRAY_TASK_ID" != 2'])
    steps = c.sbatch(["-J", "steps", "-n", "1"], MIX_STEPS)
    c.wait_job(running, "RUNNING", timeout=30)
    c.run(["scancel", str(held), str(running)])
    many = []
    r = c.run("for i in $(seq 500); do sbatch --parsable -J many --wrap true || exit 1; done",
              timeout=240)
    many = [int(x) for x in r.stdout.split()]
    assert len(many) == 500
    wait_until(lambda: squeue_empty_except(c, {timeout_job}), 240, "the 500 jobs to finish")

    # Everything finished while accounting was away; bring it back after a minute.
    time.sleep(max(0.0, 60 - (time.monotonic() - down_since)))
    if outage == "dbd":
        c.start_dbd()
    else:
        server.start()
    assert c.wait_job(timeout_job, timeout=120) in ("TIMEOUT",)

    def all_stored():
        # The database server has just come back: shoaldbd may still be reconnecting to it.
        r = sacct(c, "-P", "-n", "-X", "-a", "-S", begin, "-o", "JobIDRaw,State", check=False)
        if r.returncode != 0:
            assert "Database is unavailable" in r.stderr, r.stderr
            return False
        rows = [line.split("|") for line in r.stdout.splitlines() if line]
        ids = [row[0] for row in rows]
        return len([i for i in ids if int(i) in set(many)]) == 500 and \
            all(row[1].split()[0] in FINISHED_STATES for row in rows) and rows
    wait_until(all_stored, 120, "every record to reach the database", interval=1)

    rows = sacct_rows(c, "-X", "-a", "-S", begin, "-o", "JobIDRaw,JobName,State")
    ids = [row[0] for row in rows]
    assert len(ids) == len(set(ids)), "a job recorded twice"
    assert sorted(int(i) for i in ids if int(i) in set(many)) == sorted(many)
    assert all(row[2] == "COMPLETED" for row in rows if row[1] == "many")

    # The mix, with Slurm's states, exit codes and steps.
    ids = ",".join(str(j) for j in (done, failed, held, running, array, steps, timeout_job))
    rows = sacct_rows(c, "-j", ids, "-o", "JobID,JobName,State,ExitCode")
    table = {row[0]: row[1:] for row in rows}
    assert table[str(done)] == ["done", "COMPLETED", "0:0"]
    assert table[f"{done}.batch"][1:] == ["COMPLETED", "0:0"]
    assert table[str(failed)] == ["failed", "FAILED", "3:0"]
    assert table[f"{failed}.batch"][1:] == ["FAILED", "3:0"]
    assert table[str(held)][:2] == ["held", "CANCELLED by 0"]
    assert f"{held}.batch" not in table  # never ran
    # As Slurm records them: the job 0:0, its batch step CANCELLED by the signal.
    assert table[str(running)] == ["killed", "CANCELLED by 0", "0:0"]
    assert table[f"{running}.batch"][1:] == ["CANCELLED", "0:15"]
    assert table[str(timeout_job)] == ["timeout", "TIMEOUT", "0:0"]
    assert table[f"{timeout_job}.batch"][1:] == ["CANCELLED", "0:15"]
    assert table[f"{array}_1"][1:] == ["COMPLETED", "0:0"]
    assert table[f"{array}_2"][1:] == ["FAILED", "1:0"]
    assert table[f"{array}_3"][1:] == ["COMPLETED", "0:0"]
    assert table[str(steps)][1:] == ["COMPLETED", "0:0"]
    assert table[f"{steps}.batch"][1:] == ["COMPLETED", "0:0"]
    assert table[f"{steps}.0"] == ["hostname", "COMPLETED", "0:0"]
    assert table[f"{steps}.1"] == ["true", "COMPLETED", "0:0"]

    # The default layout: Slurm's header, dashes and columns.
    out = sacct(c, "-j", str(failed)).stdout.splitlines()
    assert out[0].split() == ["JobID", "JobName", "Partition", "Account", "AllocCPUS", "State",
                              "ExitCode"]
    assert set(out[1].replace(" ", "")) == {"-"}
    assert out[2].split()[0] == str(failed) and out[2].split()[-2:] == ["FAILED", "3:0"]
    # Elapsed is present and sane for the timed-out job (about a minute).
    elapsed = sacct_rows(c, "-X", "-j", str(timeout_job), "-o", "Elapsed")[0][0]
    h, m, s = (int(x) for x in elapsed.split(":"))
    assert 55 <= h * 3600 + m * 60 + s <= 130, elapsed


def submit_eventually(c, args, user, timeout=15):
    """sbatch as `user`, retried while the controller has not yet heard of a new association
    (it polls shoaldbd every 2 s)."""
    deadline = time.monotonic() + timeout
    while True:
        r = c.run(["sbatch", "--parsable", *args], user=user, check=False)
        if r.returncode == 0:
            return int(r.stdout.strip().split(";")[0])
        if time.monotonic() >= deadline:
            pytest.fail(f"sbatch as {user.name} kept failing: {r.stderr}")
        time.sleep(0.5)


@pytest.mark.parametrize("backend", ["sqlite", "mariadb"])
def test_associations_and_limits(cluster, users, request, backend):
    """sacctmgr creates an account and a user with MaxJobs=2: the third job waits with
    AssocMaxJobsLimit; a user without an association is rejected; enforcement goes on from the
    controller's cached associations while shoaldbd is down, also across a controller restart."""
    server = request.getfixturevalue("mariadb") if backend == "mariadb" else None
    c = cluster(nodes=2, cpus=4, conf=["AccountingStorageEnforce=associations,limits,qos,safe",
                                      "PriorityType=priority/multifactor"],
                dbd_conf=dbd_conf_for(backend, server, f"shoal_it_assoc_{os.getpid()}"))
    u1, u2 = users["shoaltest1"], users["shoaltest2"]
    r = c.run(["sacctmgr", "-i", "add", "account", "physics", "Description=particles",
               "Organization=uni"])
    assert "Adding Account(s)" in r.stdout and "physics" in r.stdout
    r = c.run(["sacctmgr", "-i", "add", "user", u1.name, "account=physics"])
    assert u1.name in r.stdout
    c.run(["sacctmgr", "-i", "modify", "user", u1.name, "set", "MaxJobs=2"])
    rows = c.run(["sacctmgr", "-n", "-P", "show", "assoc", "where", f"user={u1.name}",
                  "format=account,user,maxjobs"]).stdout.split()
    assert f"physics|{u1.name}|2" in rows

    first = submit_eventually(c, ["--wrap", "sleep 300"], u1)
    time.sleep(2.5)  # the MaxJobs change arrives with the same poll as the association
    second = c.sbatch(["--wrap", "sleep 300"], user=u1)
    third = c.sbatch(["--wrap", "sleep 300"], user=u1)
    for job in (first, second):
        c.wait_job(job, "RUNNING", timeout=30)

    def reason(job):
        return c.run(["squeue", "-h", "-j", str(job), "-o", "%T %r"]).stdout.strip()
    wait_until(lambda: reason(third) == "PENDING AssocMaxJobsLimit", 15,
               "the third job to wait on AssocMaxJobsLimit")
    assert c.show_job(third)["Account"] == "physics"

    # No association: rejected with Slurm's message; a wrong account as well.
    r = c.run(["sbatch", "--wrap", "true"], user=u2, check=False)
    assert r.returncode != 0
    assert "Invalid account or account/partition combination specified" in r.stderr
    r = c.run(["sbatch", "-A", "chemistry", "--wrap", "true"], user=u1, check=False)
    assert r.returncode != 0
    assert "Invalid account or account/partition combination specified" in r.stderr

    # A non-admin cannot administer.
    r = c.run(["sacctmgr", "-i", "add", "account", "mine"], user=u1, check=False)
    assert r.returncode != 0
    assert "mine" not in c.run(["sacctmgr", "-n", "-P", "show", "account",
                                "format=account"]).stdout.split()

    # shoaldbd down: the controller keeps enforcing from its cache, also after a restart.
    c.kill_dbd()
    c.kill_controller()
    c.start_controller()
    assert reason(third) == "PENDING AssocMaxJobsLimit"
    r = c.run(["sbatch", "--wrap", "true"], user=u2, check=False)
    assert "Invalid account or account/partition combination specified" in r.stderr
    c.start_dbd()

    # Raising the limit lets the third job start.
    c.run(["sacctmgr", "-i", "modify", "user", "where", f"name={u1.name}", "set", "MaxJobs=-1"])
    c.wait_job(third, "RUNNING", timeout=30)
    c.run(["scancel", "-u", u1.name])

    # A user's sacct shows that user's jobs (and root's sacct everyone's).
    wait_until(lambda: len(sacct_rows(c, "-X", "-u", u1.name, "-o", "JobID")) >= 3, 20,
               "the user's job records")
    mine = c.run(["sacct", "-X", "-n", "-P", "-o", "User,Account"], user=u1).stdout.split()
    assert mine and set(mine) == {f"{u1.name}|physics"}, mine

    # sshare shows the account and the user under it.
    r = c.run(["sshare", "-a", "-P"])
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Account|User|RawShares|NormShares|RawUsage|")
    assert any(l.split("|")[0].strip() == "physics" and l.split("|")[1] == u1.name
               for l in lines[1:])


@pytest.mark.parametrize("backend", ["sqlite", "mariadb"])
def test_bad_input_and_injection(cluster, users, request, backend):
    """Malformed sacctmgr/sacct input gets clear errors; SQL in names and filters changes
    nothing; every daemon stays up."""
    server = request.getfixturevalue("mariadb") if backend == "mariadb" else None
    c = cluster(nodes=1, dbd_conf=dbd_conf_for(backend, server, f"shoal_it_bad_{os.getpid()}"))
    job = c.sbatch(["--wrap", "true"])
    c.wait_job(job)
    wait_until(lambda: sacct_rows(c, "-X", "-j", str(job), "-o", "State") == [["COMPLETED"]],
               20, "the job's record")

    for args, needle in [
        (["add"], ""),
        (["add", "account", "x", "Foo=bar"], "Foo"),
        (["frobnicate", "account", "x"], "frobnicate"),
        (["show", "bogus"], "No valid entity"),
        (["modify", "user", "nobody_here", "set", "MaxJobs=2"], ""),
        (["-i", "add", "account", "x');DROP TABLE jobs;--"], ""),
        (["-i", "add", "account", "a' OR '1'='1"], ""),
        (["-i", "modify", "account", "where", "name=a' OR '1'='1", "set", "Description=x"], ""),
    ]:
        r = c.run(["sacctmgr", *args], check=False, input="n\n")
        assert r.returncode != 0, f"sacctmgr {args} succeeded: {r.stdout}"
        assert (r.stderr + r.stdout).strip(), f"sacctmgr {args} said nothing"
        assert needle in r.stderr + r.stdout, f"sacctmgr {args}: {r.stderr}"

    for args, needle in [(["-o", "Foo"], "Foo"), (["-j", "abc"], "abc"),
                         (["-S", "garbage"], "garbage"), (["--bogus"], "bogus")]:
        r = sacct(c, *args, check=False)
        assert r.returncode != 0, f"sacct {args} succeeded"
        assert needle in r.stderr, f"sacct {args}: {r.stderr}"

    # Filters with SQL in them match nothing and break nothing.
    r = sacct(c, "-n", "-X", "-a", "-u", "a' OR '1'='1", check=False)
    assert r.stdout.strip() == ""
    r = sacct(c, "-n", "-X", "-a", "--name", "x' OR 1=1 --", check=False)
    assert r.stdout.strip() == ""
    assert sacct_rows(c, "-X", "-j", str(job), "-o", "State") == [["COMPLETED"]]
    accounts = c.run(["sacctmgr", "-n", "-P", "show", "account", "format=account"]).stdout.split()
    assert accounts == ["root"]
    for name in ("shoaldbd", "shoalctld", "n1"):
        assert c.pid(name) and os.path.exists(f"/proc/{c.pid(name)}")


def test_sreport_and_events(cluster):
    """sreport cluster utilization accounts for the CPU time jobs used; a drained node is an
    event in sacctmgr show event."""
    c = cluster(nodes=2, cpus=2)
    # sreport works in whole hours, as Slurm's does: from the hour before this one to now.
    hour = int(time.time()) // 3600 * 3600
    start = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(hour - 3600))
    job = c.sbatch(["-n", "2", "--wrap", "sleep 3"])
    c.wait_job(job, timeout=30)
    c.run(["scontrol", "update", "NodeName=n2", "State=DRAIN", "Reason=disk_check"])
    wait_until(lambda: "disk_check" in c.run(["sacctmgr", "-n", "-P", "show", "event",
                                             "format=NodeName,Reason"], check=False).stdout,
               20, "the drain event to be recorded")
    end = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(hour + 7200))
    wait_until(lambda: sacct_rows(c, "-X", "-j", str(job), "-o", "State") == [["COMPLETED"]],
               20, "the job's record")
    r = c.run(["sreport", "-n", "-P", "cluster", "utilization", f"start={start}", f"end={end}",
               "-t", "seconds"])
    fields = r.stdout.strip().splitlines()[0].split("|")
    assert fields[0] == "shoal"
    allocated = int(fields[1])
    assert 5 <= allocated <= 20, r.stdout  # 2 CPUs x about 3 s


def test_two_clusters_share_one_dbd(cluster):
    """Two clusters record into one shoaldbd: sacctmgr lists both, sacct -M/-L shows each one's
    jobs under its own name, and job ids may repeat across clusters without clashing."""
    a = cluster(nodes=1)
    port = re.search(r"^AccountingStoragePort=(\d+)", a.conf_path.read_text(), re.M).group(1)
    b = cluster(nodes=1, accounting=False,
                etc_files={"slurm.key": a.key_path.read_bytes()},
                conf=["ClusterName=other", "AccountingStorageType=accounting_storage/slurmdbd",
                      "AccountingStorageHost=127.0.0.1", f"AccountingStoragePort={port}"])
    ja = a.sbatch(["-J", "in_a", "--wrap", "true"])
    jb = b.sbatch(["-J", "in_b", "--wrap", "true"])
    assert ja == jb == 1  # each cluster numbers its own jobs
    a.wait_job(ja)
    b.wait_job(jb)
    wait_until(lambda: {"shoal", "other"} <= set(
        a.run(["sacctmgr", "-n", "-P", "show", "cluster", "format=cluster"]).stdout.split()),
               20, "both clusters to register")

    def names(c, *args):
        return sorted(r[0] + ":" + r[1] for r in sacct_rows(c, "-X", *args,
                                                            "-o", "Cluster,JobName"))
    wait_until(lambda: names(a, "-L") == ["other:in_b", "shoal:in_a"], 20,
               "both clusters' jobs in the shared database")
    assert names(a) == ["shoal:in_a"]           # the own cluster by default
    assert names(b) == ["other:in_b"]
    assert names(b, "-M", "shoal") == ["shoal:in_a"]
