"""A node that falls silent past SlurmdTimeout is marked DOWN; its jobs end NODE_FAIL, or are
requeued when they asked for it (--requeue)."""

import os
import re
import signal

from conftest import session_members, wait_until

SLEEPER = "#!/bin/bash\nsleep 300\n"


def kill_node_and_jobs(c, node, jobs):
    """The node dies whole: its shoald, and each job's supervisor with every process of the job
    (a shoal-stepd leads the session its job runs in)."""
    # A job is RUNNING once the node accepted it, maybe before its stepd wrote its pid.
    stepds = [wait_until(lambda: c.stepd_pid(node, j), 10, f"{node}'s stepd.pid of job {j}")
              for j in jobs]
    c.kill_node(node)

    def kill_session(sid):
        # Again on every poll: a member may fork between the listing and its kill.
        members = session_members(sid)
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        return not members

    for sid in stepds:
        wait_until(lambda: kill_session(sid), 10, f"the processes of session {sid} to die")


def test_silent_node_goes_down_and_jobs_fail_or_requeue(cluster):
    c = cluster(nodes=4, conf=["SlurmdTimeout=5"])
    plain = c.sbatch(["-w", "n2", "--no-requeue"], SLEEPER)
    again = c.sbatch(["-w", "n3", "--requeue"], SLEEPER)
    for job, node in ((plain, "n2"), (again, "n3")):
        c.wait_job(job, "RUNNING", timeout=30)
        assert c.show_job(job)["NodeList"] == node

    kill_node_and_jobs(c, "n2", [plain])
    kill_node_and_jobs(c, "n3", [again])

    for node in ("n2", "n3"):
        wait_until(lambda: (c.node_state(node) or "").startswith("down"), 40, f"{node} DOWN")
        assert c.node_state(node) == "down*"
    text = c.run(["scontrol", "show", "node", "n2"]).stdout
    assert re.search(r"State=DOWN\S*NOT_RESPONDING", text), text
    assert "Reason=Not responding" in text, text

    assert c.wait_job(plain, timeout=30) == "NODE_FAIL"
    # Requeued: back to PENDING (it asked for n3 only, which is down), a restart counted.
    c.wait_job(again, "PENDING", timeout=30)
    assert int(c.show_job(again).get("Restarts", "0")) == 1

    # The other nodes keep working.
    assert c.node_state("n1") == "idle"
    ok = c.sbatch(["-w", "n1"], "#!/bin/bash\ntrue\n")
    assert c.wait_job(ok, timeout=30) == "COMPLETED"
    c.run(["scancel", str(again)])


def test_requeued_job_runs_again_elsewhere(cluster):
    c = cluster(nodes=2, conf=["SlurmdTimeout=5"])
    job = c.sbatch(["--requeue", "-N1"], "#!/bin/bash\necho run $SLURM_RESTART_COUNT\nsleep 300\n")
    c.wait_job(job, "RUNNING", timeout=30)
    first = c.show_job(job)["NodeList"]
    kill_node_and_jobs(c, first, [job])
    other = "n1" if first == "n2" else "n2"

    def running_elsewhere():
        info = c.show_job(job)
        return info and info["JobState"] == "RUNNING" and info["NodeList"] == other

    # Slurm delays a requeued job's start (BeginTime) a little; allow for it.
    wait_until(running_elsewhere, 200, f"job {job} to run again on {other}", interval=0.5)
    assert int(c.show_job(job)["Restarts"]) == 1
    c.run(["scancel", str(job)])
    assert c.wait_job(job, timeout=30) == "CANCELLED"


def test_node_returns_after_restart(cluster):
    c = cluster(nodes=2, conf=["SlurmdTimeout=5", "ReturnToService=2"])
    c.kill_node("n1")
    wait_until(lambda: (c.node_state("n1") or "").startswith("down"), 40, "n1 to be DOWN")
    c.start_node("n1")
    assert c.node_state("n1") == "idle"
    job = c.sbatch(["-w", "n1"], "#!/bin/bash\ntrue\n")
    assert c.wait_job(job, timeout=30) == "COMPLETED"
