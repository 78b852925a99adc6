"""Round trips of the everyday commands: sbatch, squeue, sinfo, scontrol, scancel."""

import re

SQUEUE_HEADER = ("JOBID".rjust(18) + " " + "PARTITION".rjust(9) + " " + "NAME".rjust(8) + " " +
                 "USER".rjust(8) + " " + "ST".rjust(2) + " " + "TIME".rjust(10) + " " +
                 "NODES".rjust(6) + " " + "NODELIST(REASON)")
SINFO_HEADER = "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST"

SLEEPER = "#!/bin/bash\nsleep 300\n"


def squeue_rows(c, *args):
    r = c.run(["squeue", *args])
    return r.stdout.splitlines()


def test_headers_are_slurms(cluster):
    c = cluster(nodes=4)
    # squeue's default format is "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R".
    assert squeue_rows(c) == [SQUEUE_HEADER]
    assert SQUEUE_HEADER.strip() == \
        "JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"
    rows = c.run(["sinfo"]).stdout.splitlines()
    assert rows[0] == SINFO_HEADER
    assert rows[1:] == ["debug*       up   infinite      4   idle n[1-4]"]


def test_submit_hold_show_release_complete(cluster):
    c = cluster(nodes=4)
    job = c.sbatch(["--hold", "-J", "roundtrip"], "#!/bin/bash\necho hello from $SLURM_JOB_ID\n")

    rows = squeue_rows(c)
    assert rows[0] == SQUEUE_HEADER
    assert len(rows) == 2
    fields = rows[1].split()
    assert fields[:7] == [str(job), "debug", "roundtri", "root", "PD", "0:00", "1"], rows[1]
    assert re.fullmatch(r"\(JobHeld(User|Admin)\)", fields[7]), rows[1]
    # Right-justified under the header, as Slurm prints it.
    assert rows[1].index(str(job)) + len(str(job)) == rows[0].index("JOBID") + len("JOBID")

    info = c.show_job(job)
    assert info["JobId"] == str(job)
    assert info["JobName"] == "roundtrip"
    assert info["JobState"] == "PENDING"
    assert info["UserId"] == "root(0)"
    assert info["Partition"] == "debug"
    assert info["Priority"] == "0"

    assert c.run(["squeue", "-h", "-j", str(job), "-o", "%i %T %j"]).stdout.split() == \
        [str(job), "PENDING", "roundtrip"]

    c.run(["scontrol", "release", str(job)])
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    assert (c.work / f"slurm-{job}.out").read_text() == f"hello from {job}\n"
    info = c.show_job(job)
    assert info["ExitCode"] == "0:0"
    assert info["NodeList"] in {"n1", "n2", "n3", "n4"}


def test_failed_job_exit_code(cluster):
    c = cluster(nodes=1)
    job = c.sbatch([], "#!/bin/bash\nexit 3\n")
    assert c.wait_job(job, timeout=30) == "FAILED"
    assert c.show_job(job)["ExitCode"] == "3:0"


def test_scancel_running_job(cluster):
    c = cluster(nodes=2)
    job = c.sbatch([], SLEEPER)
    c.wait_job(job, "RUNNING", timeout=30)
    rows = squeue_rows(c, "-h")
    assert len(rows) == 1 and rows[0].split()[4] == "R"
    node = rows[0].split()[7]
    assert node in {"n1", "n2"}
    c.run(["scancel", str(job)])
    assert c.wait_job(job, timeout=30) == "CANCELLED"
    # A finished job stays visible for MinJobAge, but not in squeue's default (active) view.
    assert squeue_rows(c, "-h") == []


def test_scancel_unknown_job(cluster):
    c = cluster(nodes=1)
    r = c.run(["scancel", "999999"], check=False)
    assert "Invalid job id specified" in r.stderr
    assert r.returncode != 0
    r = c.run(["scontrol", "show", "job", "999999"], check=False)
    assert r.returncode != 0
    assert "Invalid job id specified" in r.stdout + r.stderr


def test_scontrol_show_node_and_partition(cluster):
    c = cluster(nodes=2, cpus=2, memory=1000)
    node = c.run(["scontrol", "show", "node", "n2"]).stdout
    assert node.startswith("NodeName=n2 "), node
    parse = dict(re.findall(r"(\w+)=(\S*)", node))
    assert parse["CPUTot"] == "2"
    assert parse["RealMemory"] == "1000"
    assert parse["State"] == "IDLE"
    assert parse["Partitions"] == "debug"

    part = c.run(["scontrol", "show", "partition", "debug"]).stdout
    assert part.startswith("PartitionName=debug"), part
    parse = dict(re.findall(r"(\w+)=(\S*)", part))
    assert parse["Nodes"] in {"n[1-2]", "ALL"}  # configured as Nodes=ALL
    assert parse["Default"] == "YES"
    assert parse["MaxTime"] == "UNLIMITED"
    assert parse["State"] == "UP"
    assert parse["TotalNodes"] == "2"
    assert parse["TotalCPUs"] == "4"


def test_scontrol_update_drain_resume(cluster):
    c = cluster(nodes=2)
    c.run(["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=maintenance"])
    assert c.node_state("n1") == "drain"
    job = c.sbatch(["-w", "n1"], "#!/bin/bash\ntrue\n")
    assert c.job_state(job) == "PENDING"
    c.run(["scontrol", "update", "NodeName=n1", "State=RESUME"])
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    assert c.node_state("n1") == "idle"
