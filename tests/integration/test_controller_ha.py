"""Active/passive controller HA: two shoalctld share StateSaveLocation; the one holding its lock
serves, the other waits in standby (answering "in standby mode", /readyz 503) and takes over
when the active one dies, with every acknowledged job intact."""

import re
import socket
import time

from conftest import SBIN, http_status, wait_until


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_standby_answers_then_takes_over(cluster):
    c = cluster(nodes=2)
    running = c.sbatch([], "#!/bin/sh\nsleep 6\necho survived\n")
    held = c.sbatch(["-H"], "#!/bin/sh\necho held job ran\n")
    c.wait_job(running, states=("RUNNING",))

    # A standby on another port (same state directory) answers, but does not serve.
    port2 = free_port()
    conf2 = c.dir / "etc" / "slurm-standby.conf"
    conf2.write_text(re.sub(r"^SlurmctldPort=\d+", f"SlurmctldPort={port2}",
                            c.conf_path.read_text(), flags=re.M))
    standby = c._spawn("standby2", [SBIN / "shoalctld", "-D", "-f", conf2])
    wait_until(lambda: http_status(port2, "/livez") == 200, 20, "the standby to listen")
    assert http_status(port2, "/readyz") == 503
    r = c.run(["squeue", "-h"], check=False, env={"SLURM_CONF": str(conf2)})
    assert r.returncode != 0
    assert "standby mode" in r.stderr, r.stderr
    # It never touched the state: the active controller still has both jobs.
    assert c.job_state(held) == "PENDING"
    standby.terminate()
    standby.wait(timeout=10)
    c._children.remove(standby)

    # A backup with the same configuration waits for the lock (the port is the active one's).
    backup = c._spawn("backup", [SBIN / "shoalctld", "-D", "-f", c.conf_path])
    time.sleep(1.5)
    assert backup.poll() is None, "the backup must wait, not exit"
    # (SlurmctldLogFile is shared: the backup logs there too)
    assert "standby: " in (c.log_dir / "shoalctld.log").read_text()

    c.kill_controller()  # kill -9 of the active controller
    t0 = time.monotonic()
    wait_until(lambda: c.run(["squeue", "-h"], check=False).returncode == 0, 20,
               "the backup to take over")
    took = time.monotonic() - t0
    ids = c.run(["squeue", "-h", "-o", "%i"]).stdout.split()
    assert str(running) in ids and str(held) in ids, ids
    # The running job kept running through the failover and finishes normally.
    assert c.wait_job(running, timeout=60) == "COMPLETED"
    assert (c.work / f"slurm-{running}.out").read_text() == "survived\n"
    c.run(["scontrol", "release", str(held)])
    assert c.wait_job(held, timeout=60) == "COMPLETED"
    assert took < 10, f"takeover took {took:.1f}s"
