"""Configless operation and live reconfiguration.

SlurmctldParameters=enable_configless: a shoald started with only --conf-server (no slurm.conf
on its command line or in its environment) fetches the configuration, caches it in
/run/shoal/conf, joins and runs jobs without ever opening /etc/slurm/slurm.conf, and commands
without $SLURM_CONF find the cache where /etc/slurm has no slurm.conf. Both run in a mount
namespace with /etc/slurm of the test's own, so a Slurm installed on the host changes nothing. Then
`scontrol reconfigure` adds a partition and a node while a job runs and another waits; a
malformed slurm.conf is refused with the problem named; a normal user may not reconfigure.
"""

import errno
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SBIN, pid_alive, wait_until, with_own_etc_slurm

CACHE = Path("/run/shoal/conf")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_without_conf(c):
    env = {k: v for k, v in c.env.items() if k != "SLURM_CONF"}
    return env


def decoy_etc(c):
    """An /etc/slurm whose slurm.conf is a FIFO: opening it blocks until a writer comes, so a
    daemon that opened it would hang instead of registering."""
    etc = c.dir / "decoy-etc-slurm"
    if not etc.exists():
        etc.mkdir()
        os.mkfifo(etc / "slurm.conf")
    return etc


def opened_by_nobody(fifo):
    """True when no process has the FIFO open for reading (a writer's non-blocking open fails
    with ENXIO then)."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno == errno.ENXIO:
            return True
        raise
    os.close(fd)
    return False


def spawn_configless(c, name, server):
    """shoald with only --conf-server, -N and the key: no slurm.conf anywhere in sight, and in
    its /etc/slurm the decoy."""
    log = open(c.log_dir / f"{name}.out", "ab")
    child = subprocess.Popen(
        with_own_etc_slurm([SBIN / "shoald", "-D", "--conf-server", server, "-N", name,
                            "--key", c.key_path], etc=decoy_etc(c)),
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True, env=env_without_conf(c), cwd="/")
    log.close()
    c._children.append(child)  # reaped by the fixture; `shoal stop` ends it via the pid file
    (c.dir / "run" / f"{name}.pid").write_text(f"{child.pid}\n")
    return child


def responding(c, name):
    state = c.node_state(name)
    return bool(state) and not state.endswith("*") and not state.startswith(("down", "unk"))


@pytest.fixture
def clean_cache():
    shutil.rmtree(CACHE, ignore_errors=True)
    yield
    shutil.rmtree(CACHE, ignore_errors=True)


def test_configless_node_and_live_reconfigure(cluster, users, clean_cache):
    p1, p2 = free_port(), free_port()
    c = cluster(nodes=1, conf=[
        "SlurmctldParameters=enable_configless",
        f"NodeName=cl1 NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 Port={p1}",
        "PartitionName=cfgl Nodes=cl1",
    ])
    server = f"127.0.0.1:{c.controller_port()}"

    # (a) A configless node daemon joins and runs a job.
    spawn_configless(c, "cl1", server)
    wait_until(lambda: responding(c, "cl1"), 30, "the configless node cl1 to respond")
    assert (CACHE / "slurm.conf").read_text() == c.conf_path.read_text()
    assert os.readlink(CACHE / "slurm.key") == str(c.key_path)
    job = c.sbatch(["-p", "cfgl", "-o", "/dev/null", "--wrap", "hostname"])
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    assert c.show_job(job)["NodeList"] == "cl1"

    # The node took its configuration from the controller alone: /etc/slurm/slurm.conf, where
    # it looked, is the decoy, which nothing opened.
    assert opened_by_nobody(decoy_etc(c) / "slurm.conf")
    # A command with no $SLURM_CONF and no /etc/slurm/slurm.conf (an empty /etc/slurm of its
    # own, whatever the host has) finds the cached copy.
    r = subprocess.run(with_own_etc_slurm(["sinfo", "-h", "-o", "%P"]), capture_output=True,
                       text=True, env=env_without_conf(c), cwd="/", timeout=30)
    assert r.returncode == 0, r.stderr
    assert "cfgl" in r.stdout.split()

    # (b) Reconfigure while a job runs and another waits for its node.
    running = c.sbatch(["-p", "debug", "-w", "n1", "--exclusive", "-o", "/dev/null",
                        "--wrap", "sleep 300"])
    c.wait_job(running, "RUNNING", timeout=30)
    started = c.show_job(running)["StartTime"]
    queued = c.sbatch(["-p", "debug", "-w", "n1", "-o", "/dev/null", "--wrap", "true"])
    time.sleep(1)
    assert c.job_state(queued) == "PENDING"

    original = c.conf_path.read_text()
    c.conf_path.write_text(original +
                           f"NodeName=cl2 NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 Port={p2}\n"
                           "PartitionName=newp Nodes=cl2 MaxTime=10\n")
    c.run(["scontrol", "reconfigure"])
    r = c.run(["sinfo", "-h", "-p", "newp", "-o", "%P %N"])
    assert r.stdout.split() == ["newp", "cl2"]
    c.start_node("cl2")
    new_job = c.sbatch(["-p", "newp", "-o", "/dev/null", "--wrap", "true"])
    assert c.wait_job(new_job, timeout=60) == "COMPLETED"
    assert c.show_job(new_job)["NodeList"] == "cl2"
    # Running job untouched, queue kept.
    assert c.job_state(running) == "RUNNING"
    assert c.show_job(running)["StartTime"] == started
    assert c.job_state(queued) == "PENDING"
    # The configless node got the new files pushed into its cache.
    wait_until(lambda: "PartitionName=newp" in (CACHE / "slurm.conf").read_text(), 15,
               "the new slurm.conf in the configless cache")

    # (c) A malformed file is refused, naming file and line; the old configuration stays.
    # The command itself reads slurm.conf first and already names the problem; with a good
    # copy of its own it reaches the controller, which refuses the file the same way.
    good = c.conf_path.read_text()
    client_conf = c.dir / "etc" / "client.conf"
    client_conf.write_text(good)
    c.conf_path.write_text(good + "NodeName=bad CPUs=many\n")
    bad_line = len(good.splitlines()) + 1
    problem = f"slurm.conf:{bad_line}: invalid CPUs value 'many'"
    r = c.run(["scontrol", "reconfigure"], check=False)
    assert r.returncode == 1 and problem in r.stderr, r.stderr
    r = c.run(["scontrol", "reconfigure"], check=False, env={"SLURM_CONF": str(client_conf)})
    assert r.returncode == 1
    assert f"slurm_reconfigure error: {c.conf_path}:{bad_line}: invalid CPUs value 'many'" \
        in r.stderr, r.stderr
    assert "reconfigure (scontrol reconfigure by uid 0) refused" in \
        (c.log_dir / "shoalctld.log").read_text()
    c.conf_path.write_text(good)
    assert c.run(["scontrol", "ping"]).stdout.strip().endswith("is UP")
    r = c.run(["sinfo", "-h", "-o", "%P"])
    assert "newp" in r.stdout.split() and "cfgl" in r.stdout.split()
    assert responding(c, "cl1") and responding(c, "cl2")

    # (d) A normal user may not reconfigure.
    user = users["shoaltest1"]
    r = c.run(["scontrol", "reconfigure"], user=user, check=False)
    assert r.returncode == 1
    assert "slurm_reconfigure error: Access/permission denied" in r.stderr

    # Restart with the controller down: the configless node starts from its cache.
    c.kill_node("cl1")
    c.kill_controller()
    spawn_configless(c, "cl1", server)
    log = c.log_dir / "cl1.out"  # -D: the daemon logs to its stderr
    wait_until(lambda: log.exists() and "using the cached configuration" in log.read_text(),
               30, "cl1 to start from its cache")
    c.start_controller()
    wait_until(lambda: responding(c, "cl1"), 40, "cl1 to register after the restart")
    assert opened_by_nobody(decoy_etc(c) / "slurm.conf")
    assert c.job_state(running) == "RUNNING"
    c.run(["scancel", str(running)])


def test_config_files_refused_without_enable_configless(cluster, clean_cache):
    c = cluster(nodes=1)
    r = subprocess.run(
        [str(SBIN / "shoald"), "-D", "--conf-server", f"127.0.0.1:{c.controller_port()}",
         "-N", "n9", "--key", str(c.key_path)],
        capture_output=True, text=True, env=env_without_conf(c), cwd="/", timeout=30)
    assert r.returncode != 0
    assert "configless mode is not enabled" in r.stderr, r.stderr
    assert not (CACHE / "slurm.conf").exists()

    # SIGHUP rereads slurm.conf as `scontrol reconfigure` does; a pending job whose partition
    # disappears keeps pending.
    c.conf_path.write_text(c.conf_path.read_text() +
                           "PartitionName=hup Nodes=n1 State=DOWN\n")
    os.kill(c.pid("shoalctld"), signal.SIGHUP)
    wait_until(lambda: "hup" in c.run(["sinfo", "-h", "-o", "%P"]).stdout.split(), 15,
               "partition hup after SIGHUP")
    job = c.sbatch(["-p", "hup", "-o", "/dev/null", "--wrap", "true"])
    wait_until(lambda: c.show_job(job)["Reason"] == "PartitionDown", 15, "job to wait")
    lines = c.conf_path.read_text().splitlines()
    c.conf_path.write_text("\n".join(l for l in lines if not l.startswith("PartitionName=hup"))
                           + "\n")
    os.kill(c.pid("shoalctld"), signal.SIGHUP)
    wait_until(lambda: "hup" not in c.run(["sinfo", "-h", "-o", "%P"]).stdout.split(), 15,
               "partition hup to go")
    time.sleep(1)
    assert c.job_state(job) == "PENDING"


def test_watch_config_applies_a_changed_file(cluster):
    """SlurmctldParameters=shoal_watch_config (a Shoal extension): no command needed."""
    c = cluster(nodes=1, conf=["SlurmctldParameters=shoal_watch_config"])
    c.conf_path.write_text(c.conf_path.read_text() + "PartitionName=watched Nodes=n1\n")
    wait_until(lambda: "watched" in c.run(["sinfo", "-h", "-o", "%P"]).stdout.split(), 15,
               "the watcher to apply the new partition")
    job = c.sbatch(["-p", "watched", "-o", "/dev/null", "--wrap", "true"])
    assert c.wait_job(job, timeout=30) == "COMPLETED"
