"""Power saving and reboot details: jobs CONFIGURING while their nodes power up (start time
reset after the boot), scontrol update State=POWER_UP/POWER_DOWN/POWER_DOWN_FORCE (its jobs
requeued), SuspendExcNodes=<nodes>:<count>, State=CLOUD nodes, scontrol reboot nextstate=DOWN."""

import os
import time

from conftest import SBIN, wait_until
from test_node_lifecycle import SLEEPER, program, restart_script, show_node, slurmd_start, \
    stop_script


def power_cluster(cluster, tmp_path, nodes=1, extra=(), resume_delay=0):
    suspend = tmp_path / "suspend.sh"
    resume = tmp_path / "resume.sh"
    c = cluster(nodes=nodes, conf=["SuspendTimeout=2", "ResumeTimeout=30",
                                   f"SuspendProgram={suspend}", f"ResumeProgram={resume}",
                                   *extra])
    program(suspend, stop_script(c))
    program(resume, f"sleep {resume_delay}\n" + restart_script(c))
    os.chmod(tmp_path, 0o755)
    return c


def power_down(c, node):
    c.run(["scontrol", "update", f"NodeName={node}", "State=POWER_DOWN"])
    wait_until(lambda: c.node_state(node) == "idle~", 20, f"{node} to be powered down")


def test_job_configuring_while_nodes_power_up(cluster, tmp_path):
    c = power_cluster(cluster, tmp_path, resume_delay=3)
    power_down(c, "n1")
    submitted = time.time()
    job = c.sbatch(["-o", str(tmp_path / "out.txt")], SLEEPER.format(2))
    wait_until(lambda: c.node_state("n1").endswith("#"), 10, "n1 to power up")
    info = c.show_job(job)
    assert info["JobState"] == "CONFIGURING", info
    r = c.run(["squeue", "-h", "-j", str(job), "-o", "%t %T"])
    assert r.stdout.split() == ["CF", "CONFIGURING"]
    assert c.wait_job(job, "RUNNING", timeout=60) == "RUNNING"
    assert c.show_job(job)["JobState"] == "RUNNING"
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    # The start time is when the node was back (ResumeProgram waits 3 s, then restarts it),
    # not when the job was placed.
    r = c.run(["squeue", "-h", "-t", "all", "-j", str(job), "-o", "%S"])
    started = time.mktime(time.strptime(r.stdout.strip(), "%Y-%m-%dT%H:%M:%S"))
    assert started >= int(submitted) + 3, (started, submitted)


def test_power_down_and_power_up_updates(cluster, tmp_path):
    c = power_cluster(cluster, tmp_path)
    pid = c.pid("n1")
    c.run(["scontrol", "update", "NodeName=n1", "State=POWER_DOWN"])
    node, text = show_node(c, "n1")
    wait_until(lambda: c.node_state("n1") == "idle~", 20, "n1 to be powered down")
    node, text = show_node(c, "n1")
    assert node["State"] == "IDLE+POWERED_DOWN", text
    assert not os.path.exists(f"/proc/{pid}")  # SuspendProgram stopped its shoald
    before = slurmd_start(c, "n1")
    c.run(["scontrol", "update", "NodeName=n1", "State=POWER_UP"])
    wait_until(lambda: c.node_state("n1") == "idle", 30, "n1 to power up")
    assert slurmd_start(c, "n1") != before  # ResumeProgram started it again
    node, text = show_node(c, "n1")
    assert node["State"] == "IDLE", text
    r = c.run(["scontrol", "update", "NodeName=n1", "State=POWER_SIDEWAYS"], check=False)
    assert r.returncode != 0


def test_power_down_force_requeues_running_jobs(cluster, tmp_path):
    c = power_cluster(cluster, tmp_path)
    job = c.sbatch([], SLEEPER.format(300))
    c.wait_job(job, "RUNNING")
    c.run(["scontrol", "update", "NodeName=n1", "State=POWER_DOWN_FORCE"])

    def requeued():
        info = c.show_job(job)
        return info["Restarts"] == "1" and info["JobState"] != "NODE_FAIL"
    wait_until(requeued, 20, "the job to be requeued")
    wait_until(lambda: c.node_state("n1").endswith(("~", "%", "#")), 30, "n1 to power down")
    # Requeued, it runs again once ResumeProgram brought the node back.
    assert c.wait_job(job, "RUNNING", timeout=60) == "RUNNING"
    c.run(["scancel", str(job)])
    assert c.wait_job(job, timeout=30) == "CANCELLED"


def test_suspend_exc_nodes_count_keeps_nodes_up(cluster, tmp_path):
    c = power_cluster(cluster, tmp_path, nodes=3,
                      extra=["SuspendTime=2", "SuspendExcNodes=n[1-3]:1"])

    def states():
        return [c.node_state(n) for n in ("n1", "n2", "n3")]
    wait_until(lambda: states().count("idle~") == 2, 30, "two nodes to power down")
    time.sleep(4)  # more than SuspendTime + SuspendTimeout: the third one stays up
    assert sorted(states()) == ["idle", "idle~", "idle~"], states()


def test_cloud_node_powered_down_until_a_job_needs_it(cluster, tmp_path):
    c = power_cluster(cluster, tmp_path, nodes=2, extra=["NodeName=n2 State=CLOUD"])
    node, text = show_node(c, "n2")
    assert node["State"] == "IDLE+CLOUD", text
    # A cloud node whose daemon is not running when the controller starts (cold: -c, no saved
    # state) is powered down until a job needs it.
    c.kill_node("n2")
    c.kill_controller()
    c._spawn("shoalctld", [SBIN / "shoalctld", "-D", "-c", "-f", c.conf_path])
    wait_until(lambda: c.run(["squeue", "-h"], check=False).returncode == 0, 30,
               "the controller to answer")
    wait_until(lambda: c.node_state("n2") == "idle~", 20, "n2 to show powered down")
    node, text = show_node(c, "n2")
    assert node["State"] == "IDLE+CLOUD+POWERED_DOWN", text
    out = tmp_path / "out.txt"
    job = c.sbatch(["-w", "n2", "-o", str(out)], "#!/bin/bash\necho on $SLURMD_NODENAME\n")
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    assert out.read_text().strip() == "on n2"
    node, text = show_node(c, "n2")
    assert node["State"] == "IDLE+CLOUD", text


def test_reboot_nextstate_down_keeps_node_down(cluster, tmp_path):
    script = tmp_path / "reboot.sh"
    c = cluster(nodes=1, conf=[f"RebootProgram={script}", "ResumeTimeout=30"])
    program(script, restart_script(c))
    before = slurmd_start(c, "n1")
    time.sleep(1.1)
    c.run(["scontrol", "reboot", "nextstate=DOWN", "n1"])
    wait_until(lambda: slurmd_start(c, "n1") != before, 30, "n1's shoald to restart")
    wait_until(lambda: c.node_state("n1") == "down", 10, "n1 to be down after the reboot")
    node, text = show_node(c, "n1")
    assert node["State"] == "DOWN", text
    assert "Reason=reboot requested : reboot issued : reboot complete" in text
    job = c.sbatch([], SLEEPER.format(1))
    time.sleep(2)
    assert c.job_state(job) == "PENDING"  # nothing runs on it until an admin resumes it
    c.run(["scontrol", "update", "NodeName=n1", "State=RESUME"])
    assert c.wait_job(job, timeout=30) == "COMPLETED"


def test_power_down_waits_for_jobs_with_bang_suffix(cluster, tmp_path):
    c = power_cluster(cluster, tmp_path)
    job = c.sbatch(["-n", "1"], SLEEPER.format(4))
    c.wait_job(job, "RUNNING")
    c.run(["scontrol", "update", "NodeName=n1", "State=POWER_DOWN"])
    assert c.node_state("n1") in ("mix!", "alloc!")
    node, text = show_node(c, "n1")
    assert node["State"] in ("MIXED+POWER_DOWN", "ALLOCATED+POWER_DOWN"), text
    assert c.wait_job(job, timeout=30) == "COMPLETED"  # the job is not disturbed
    wait_until(lambda: c.node_state("n1") == "idle~", 20, "n1 to power down after the job")
    node, text = show_node(c, "n1")
    assert node["State"] == "IDLE+POWERED_DOWN", text
