"""kill -9 of a node daemon does not kill its jobs: the supervisors outlive it, and jobs that
end while it is down are reported once it is back."""

import time

from conftest import pid_alive, wait_until


def test_shoald_kill9_jobs_survive(cluster):
    c = cluster(nodes=2)
    short = c.sbatch(["-w", "n1", "-J", "short"], "#!/bin/bash\nsleep 2\necho short done\nexit 5\n")
    long = c.sbatch(["-w", "n1", "-J", "long"], "#!/bin/bash\nsleep 10\necho long done\nexit 6\n")
    c.wait_job(short, "RUNNING", timeout=30)
    c.wait_job(long, "RUNNING", timeout=30)
    stepds = [wait_until(lambda: c.stepd_pid("n1", j), 10, f"the stepd.pid of job {j}")
              for j in (short, long)]

    c.kill_node("n1")
    assert all(pid_alive(p) for p in stepds), "job supervisors died with shoald"
    time.sleep(4)  # the short job ends while shoald is down
    assert c.job_state(short) == "RUNNING", "the controller cannot know yet"
    c.start_node("n1")

    assert c.wait_job(short, timeout=30) == "FAILED"
    assert c.show_job(short)["ExitCode"] == "5:0"
    assert c.wait_job(long, timeout=60) == "FAILED"
    assert c.show_job(long)["ExitCode"] == "6:0"
    assert (c.work / f"slurm-{short}.out").read_text() == "short done\n"
    assert (c.work / f"slurm-{long}.out").read_text() == "long done\n"
    assert c.node_state("n1") == "idle"


def test_all_shoalds_kill9_and_back(cluster):
    c = cluster(nodes=3)
    jobs = [c.sbatch(["-N1"], "#!/bin/bash\nsleep 5\n") for _ in range(3)]
    for job in jobs:
        c.wait_job(job, "RUNNING", timeout=30)
    for node in c.node_names:
        c.kill_node(node)
    for node in c.node_names:
        c.start_node(node)
    for job in jobs:
        assert c.wait_job(job, timeout=60) == "COMPLETED"


def test_job_cancelled_while_its_shoald_is_down_ends_once_it_is_back(cluster):
    # The TerminateJob of the scancel finds no node to take it; the controller asks again when
    # the node registers (and every KillWait + 20 s while the job stays COMPLETING).
    c = cluster(nodes=1)
    job = c.sbatch(["-w", "n1"], "#!/bin/bash\ntrap 'echo got TERM; exit 3' TERM\n"
                                 "sleep 300 & wait\n")
    c.wait_job(job, "RUNNING", timeout=30)
    stepd = wait_until(lambda: c.stepd_pid("n1", job), 10, "the job's stepd.pid")
    c.kill_node("n1")
    c.run(["scancel", str(job)])
    time.sleep(1)
    assert pid_alive(stepd), "the batch script's supervisor ended without its node daemon"
    assert c.job_state(job) == "COMPLETING"
    c.start_node("n1")
    # At its registration, not at the periodic resend (KillWait + 20 s later).
    assert c.wait_job(job, timeout=10) == "CANCELLED"
    wait_until(lambda: not pid_alive(stepd), 10, "the job's supervisor to end")
    assert (c.work / f"slurm-{job}.out").read_text() == "got TERM\n"
    assert c.node_state("n1") == "idle"
