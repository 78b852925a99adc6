"""A dynamic node (`shoald -Z --conf ...`, as `slurmd -Z`) registers with its own resources,
joins the partitions that take ALL nodes, runs jobs, and survives a controller restart."""

import socket

from conftest import SBIN, wait_until


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dynamic_node_registers_and_runs_jobs(cluster):
    c = cluster(nodes=1)
    port = free_port()
    c._spawn("dyn1", [SBIN / "shoald", "-D", "-f", c.conf_path, "-Z", "-N", "dyn1",
                      "--conf", f"CPUs=3 RealMemory=777 Features=fast,ib Port={port}"])

    def registered():
        state = c.node_state("dyn1")
        return state is not None and state.startswith("idle") and not state.endswith("*")

    wait_until(registered, 30, "dyn1 to register")
    node = c.run(["scontrol", "show", "node", "dyn1"]).stdout
    assert "CPUTot=3" in node, node
    assert "RealMemory=777" in node, node
    assert "AvailableFeatures=fast,ib" in node, node
    rows = c.run(["sinfo", "-h", "-N", "-o", "%N %P"]).stdout.split("\n")
    assert "dyn1 debug*" in rows, rows

    job = c.sbatch(["-w", "dyn1"], "#!/bin/bash\necho on $SLURMD_NODENAME\n")
    assert c.wait_job(job) == "COMPLETED"
    assert (c.work / f"slurm-{job}.out").read_text() == "on dyn1\n"

    # The controller remembers the dynamic node across a crash.
    c.kill_controller()
    c.start_controller()
    wait_until(registered, 30, "dyn1 to register again")
    job = c.sbatch(["-w", "dyn1"], "#!/bin/bash\necho again\n")
    assert c.wait_job(job) == "COMPLETED"
