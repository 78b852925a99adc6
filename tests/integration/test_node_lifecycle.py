"""Node lifecycle: scontrol reboot / cancel_reboot (RebootProgram, nextstate, ASAP, ResumeTimeout),
DRAINING -> DRAINED, and power saving (SuspendTime, SuspendProgram, ResumeProgram,
ResumeTimeout). The host cannot reboot: RebootProgram restarts the node's shoald, which the
controller accepts as a reboot (newer shoald start time)."""

import os
import time

from conftest import BIN, SBIN, parse_kv, pid_alive, wait_until

SLEEPER = "#!/bin/bash\nsleep {}\n"


def program(path, text):
    path.write_text("#!/bin/bash\n" + text)
    os.chmod(path, 0o755)
    return path


def restart_script(c):
    """Restarts shoald of the nodes named by $1 (a hostlist), or of n1 when no argument."""
    return f"""
export SLURM_CONF={c.conf_path} PATH={BIN}:$PATH
hosts=n1
[ -n "$1" ] && hosts=$(scontrol show hostnames "$1")
for h in $hosts; do
  pid=$(cat {c.dir}/run/$h.pid 2>/dev/null)
  if [ -n "$pid" ]; then kill $pid; while kill -0 $pid 2>/dev/null; do sleep 0.1; done; fi
  sleep 1.1  # a newer start time, to the second
  setsid {SBIN}/shoald -D -f {c.conf_path} -N $h >>{c.dir}/log/$h.out 2>&1 </dev/null &
  echo $! > {c.dir}/run/$h.pid
done
"""


def stop_script(c):
    return f"""
export SLURM_CONF={c.conf_path} PATH={BIN}:$PATH
for h in $(scontrol show hostnames "$1"); do
  pid=$(cat {c.dir}/run/$h.pid 2>/dev/null)
  [ -n "$pid" ] && kill $pid
done
exit 0
"""


def show_node(c, name):
    r = c.run(["scontrol", "show", "node", name])
    return parse_kv(r.stdout), r.stdout


def slurmd_start(c, name):
    return show_node(c, name)[0].get("SlurmdStartTime")


def test_reboot_nextstate_resume_clears_drain(cluster, tmp_path):
    script = tmp_path / "reboot.sh"
    c = cluster(nodes=1, conf=[f"RebootProgram={script}", "ResumeTimeout=30"])
    program(script, restart_script(c))
    before = slurmd_start(c, "n1")
    c.run(["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=maint"])
    assert c.node_state("n1") == "drain"
    time.sleep(1.1)
    c.run(["scontrol", "reboot", "nextstate=RESUME", "n1"])
    seen = set()

    def back():
        st = c.node_state("n1")
        seen.add(st)
        return st == "idle"
    wait_until(back, 30, "n1 to come back idle", interval=0.05)
    node, text = show_node(c, "n1")
    assert node["State"] == "IDLE", text
    assert "Reason=" not in text
    assert node["SlurmdStartTime"] != before
    # In between it was drained with the reboot pending or issued ("drain@" / "drain^").
    assert seen & {"drain@", "drain^", "boot^"}, seen


def test_reboot_issued_state_and_timeout(cluster, tmp_path):
    # A RebootProgram that does nothing: the node never comes back -> DOWN after ResumeTimeout.
    c = cluster(nodes=1, conf=["RebootProgram=/bin/true", "ResumeTimeout=4"])
    c.run(["scontrol", "reboot", "n1"])
    wait_until(lambda: c.node_state("n1") == "boot^", 10, "n1 to show boot^")
    node, text = show_node(c, "n1")
    assert node["State"] == "DOWN+REBOOT_ISSUED", text
    assert "Reason=reboot requested : reboot issued" in text
    r = c.run(["sinfo", "-h", "-n", "n1", "-o", "%T"])
    assert r.stdout.strip() == "reboot^"
    wait_until(lambda: c.node_state("n1") == "down", 20, "n1 to go down (ResumeTimeout)")
    _, text = show_node(c, "n1")
    assert "Reason=reboot requested : reboot issued : reboot timed out" in text


def test_reboot_asap_drains_busy_node_then_reboots(cluster, tmp_path):
    script = tmp_path / "reboot.sh"
    c = cluster(nodes=1, cpus=2, conf=[f"RebootProgram={script}", "ResumeTimeout=30"])
    program(script, restart_script(c))
    busy = c.sbatch(["-n", "1"], SLEEPER.format(6))
    c.wait_job(busy, "RUNNING")
    before = slurmd_start(c, "n1")
    c.run(["scontrol", "reboot", "ASAP", "nextstate=RESUME", "n1"])
    node, text = show_node(c, "n1")
    assert node["State"] == "MIXED+DRAIN+REBOOT_REQUESTED", text
    assert "Reason=Reboot ASAP" in text
    assert c.node_state("n1") == "drng@"
    # No new job starts on it meanwhile.
    later = c.sbatch(["-n", "1"], SLEEPER.format(1))
    time.sleep(2)
    assert c.job_state(later) == "PENDING"
    assert c.wait_job(busy, timeout=30) == "COMPLETED"
    wait_until(lambda: slurmd_start(c, "n1") != before, 30, "n1's shoald to restart")
    assert c.wait_job(later, timeout=60) == "COMPLETED"
    node, text = show_node(c, "n1")
    assert "DRAIN" not in node["State"] and "REBOOT" not in node["State"], text
    assert "Reason=" not in text


def test_cancel_reboot_undrains_and_keeps_node(cluster, tmp_path):
    marker = tmp_path / "rebooted"
    script = program(tmp_path / "reboot.sh", f"touch {marker}\n")
    c = cluster(nodes=1, cpus=2, conf=[f"RebootProgram={script}"])
    busy = c.sbatch(["-n", "1"], SLEEPER.format(3))
    c.wait_job(busy, "RUNNING")
    c.run(["scontrol", "reboot", "ASAP", "n1"])
    assert c.node_state("n1") == "drng@"
    c.run(["scontrol", "cancel_reboot", "n1"])
    node, text = show_node(c, "n1")
    assert node["State"] == "MIXED", text
    assert "Reason=" not in text
    c.wait_job(busy, timeout=30)
    time.sleep(2)
    assert not marker.exists()
    assert c.node_state("n1") == "idle"


def test_reboot_needs_admin_and_node_list(cluster, users, tmp_path):
    c = cluster(nodes=1, conf=["RebootProgram=/bin/true"])
    r = c.run(["scontrol", "reboot", "n1"], user=users["shoaltest1"], check=False)
    assert r.returncode == 1
    assert r.stderr.strip() == "scontrol_reboot_nodes error: Access/permission denied"
    r = c.run(["scontrol", "reboot", "ASAP"], check=False)
    assert r.returncode == 1 and "Missing node list. Specify ALL|<NodeList>" in r.stderr
    r = c.run(["scontrol", "reboot", "nextstate=bogus", "n1"], check=False)
    assert r.returncode == 1 and "Invalid state: bogus" in r.stderr
    assert c.node_state("n1") == "idle"


def test_draining_then_drained(cluster):
    c = cluster(nodes=1, cpus=2)
    job = c.sbatch(["-n", "1"], SLEEPER.format(3))
    c.wait_job(job, "RUNNING")
    c.run(["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=fix fan"])
    assert c.node_state("n1") == "drng"
    r = c.run(["sinfo", "-h", "-n", "n1", "-o", "%T"])
    assert r.stdout.strip() == "draining"
    node, text = show_node(c, "n1")
    assert node["State"] == "MIXED+DRAIN", text
    assert c.wait_job(job, timeout=30) == "COMPLETED"
    wait_until(lambda: c.node_state("n1") == "drain", 10, "n1 to be drained")
    r = c.run(["sinfo", "-h", "-n", "n1", "-o", "%T"])
    assert r.stdout.strip() == "drained"
    node, text = show_node(c, "n1")
    assert node["State"] == "IDLE+DRAIN", text
    assert "Reason=fix fan" in text


def test_power_save_suspend_and_resume_on_demand(cluster, tmp_path):
    suspend = tmp_path / "suspend.sh"
    resume = tmp_path / "resume.sh"
    c = cluster(nodes=2, conf=["SuspendTime=2", "SuspendTimeout=2", "ResumeTimeout=30",
                               f"SuspendProgram={suspend}", f"ResumeProgram={resume}",
                               "SuspendExcNodes=n2"])
    program(suspend, stop_script(c))
    program(resume, restart_script(c))
    pid = c.pid("n1")
    wait_until(lambda: c.node_state("n1") == "idle%", 20, "n1 to power down")
    wait_until(lambda: not pid_alive(pid), 10, "n1's shoald to stop")
    wait_until(lambda: c.node_state("n1") == "idle~", 10, "n1 to be powered down")
    node, text = show_node(c, "n1")
    assert node["State"] == "IDLE+POWERED_DOWN", text
    assert c.node_state("n2") == "idle"  # SuspendExcNodes
    out = tmp_path / "out.txt"
    os.chmod(tmp_path, 0o755)
    job = c.sbatch(["-w", "n1", "-o", str(out)], "#!/bin/bash\necho ran on $SLURMD_NODENAME\n")
    wait_until(lambda: c.node_state("n1") in ("mix#", "alloc#"), 10, "n1 to power up")
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    assert out.read_text().strip() == "ran on n1"
    assert not c.node_state("n1").endswith(("~", "#", "*"))


def test_resume_timeout_downs_node_and_requeues(cluster, tmp_path):
    suspend = tmp_path / "suspend.sh"
    c = cluster(nodes=1, conf=["SuspendTime=2", "SuspendTimeout=1", "ResumeTimeout=4",
                               f"SuspendProgram={suspend}", "ResumeProgram=/bin/true"])
    program(suspend, stop_script(c))
    wait_until(lambda: c.node_state("n1") == "idle~", 30, "n1 to be powered down")
    job = c.sbatch([], SLEEPER.format(1))
    wait_until(lambda: c.node_state("n1").endswith("#"), 10, "n1 to power up")
    wait_until(lambda: c.node_state("n1").startswith("down"), 20, "n1 to go down")
    _, text = show_node(c, "n1")
    assert "Reason=ResumeTimeout reached" in text
    wait_until(lambda: c.job_state(job) == "PENDING", 10, "the job to be requeued")
