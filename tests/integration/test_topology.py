"""Network topology on a real local cluster: TopologyPlugin=topology/tree with topology.conf next
to slurm.conf, leaf-switch-aware placement of multi-node jobs, --switches=N@time, scontrol show
topology, and a controller that refuses to start on a malformed topology.conf."""

import signal
import subprocess
import time

from conftest import SBIN, wait_until

# Two leaf switches of two nodes each under one spine.
TREE = """# two leaves under one spine
SwitchName=s1 Nodes=n[1-2]
SwitchName=s2 Nodes=n[3-4] LinkSpeed=10
SwitchName=s0 Switches=s[1-2]
"""
TREE_CONF = ["TopologyPlugin=topology/tree"]


def tree_cluster(cluster, conf=()):
    return cluster(nodes=4, cpus=1, conf=TREE_CONF + list(conf),
                   etc_files={"topology.conf": TREE})


def running_on(c, job_id):
    job = c.show_job(job_id)
    return job["NodeList"] if job and job.get("JobState") == "RUNNING" else None


def hold_node(c, node):
    """A long one-CPU job pinned to `node` (each node has one CPU): it makes the node busy."""
    job = c.sbatch(["-w", node, "--wrap", "sleep 300"])
    wait_until(lambda: running_on(c, job) == node, 20, f"job {job} running on {node}")
    return job


def test_two_node_job_stays_under_one_leaf_switch(cluster):
    c = tree_cluster(cluster)
    # n1 busy: partition order would give n2+n3 (two leaves); s2 alone has n3+n4 free.
    hold_node(c, "n1")
    job = c.sbatch(["-N2", "--wrap", "sleep 300"])
    assert wait_until(lambda: running_on(c, job), 20, f"job {job} to start") == "n[3-4]"
    # With both leaves half busy no single leaf fits: the spine joins them (n2 and n4 remain).
    c.run(["scancel", str(job)])
    c.wait_job(job)
    hold_node(c, "n3")
    wide = c.sbatch(["-N2", "--wrap", "sleep 300"])
    assert wait_until(lambda: running_on(c, wide), 20, f"job {wide} to start") == "n[2,4]"


def test_switches_waits_for_one_leaf_then_starts(cluster):
    c = tree_cluster(cluster)
    hold_node(c, "n1")
    blocker = hold_node(c, "n4")
    # Only n2+n3 are free, one node per leaf: --switches=1 keeps the job pending (Resources,
    # as Slurm reports it) within its wait.
    job = c.sbatch(["-N2", "--switches=1@5:00", "--wrap", "sleep 300"])
    wait_until(lambda: (c.show_job(job) or {}).get("Reason") == "Resources", 10,
               "Reason=Resources")
    time.sleep(2)
    assert c.job_state(job) == "PENDING"
    # A whole leaf frees up: the job starts there at once.
    c.run(["scancel", str(blocker)])
    assert wait_until(lambda: running_on(c, job), 20, f"job {job} to start") == "n[3-4]"


def test_switches_wait_ends_at_max_switch_wait(cluster):
    # The job asks to wait up to a minute; max_switch_wait caps that at 3 s, after which it takes
    # the two-leaf placement (Slurm: "until ... the time limit expires").
    c = tree_cluster(cluster, conf=["SchedulerParameters=max_switch_wait=3,bf_interval=1"])
    hold_node(c, "n1")
    hold_node(c, "n4")
    start = time.monotonic()
    job = c.sbatch(["-N2", "--switches=1@1:00", "--wrap", "sleep 300"])
    time.sleep(1)
    assert c.job_state(job) == "PENDING"
    assert wait_until(lambda: running_on(c, job), 30, f"job {job} to start") == "n[2-3]"
    assert time.monotonic() - start >= 2.5


def test_scontrol_show_topology(cluster):
    c = tree_cluster(cluster)
    r = c.run(["scontrol", "show", "topology"])
    assert r.stdout.splitlines() == [
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-2]",
        "SwitchName=s2 Level=0 LinkSpeed=10 Nodes=n[3-4]",
        "SwitchName=s0 Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[1-2]",
    ]
    # A node: the switches above it; several nodes: the switches holding all of them.
    assert c.run(["scontrol", "show", "topology", "n1"]).stdout.splitlines() == [
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-2]",
        "SwitchName=s0 Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[1-2]",
    ]
    assert c.run(["scontrol", "show", "topology", "s2"]).stdout.splitlines() == [
        "SwitchName=s2 Level=0 LinkSpeed=10 Nodes=n[3-4]",
    ]
    assert c.run(["scontrol", "show", "topo", "n[2-3]"]).stdout.splitlines() == [
        "SwitchName=s0 Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[1-2]",
    ]
    # Nothing matching: an error message, exit code 0 (as Slurm 22.05).
    r = c.run(["scontrol", "show", "topology", "nx"])
    assert r.stdout == ""
    assert r.stderr.strip() == \
        "scontrol: error: Topology information contains no switch or node named nx"


def test_scontrol_show_topology_without_plugin(cluster):
    c = cluster(nodes=1)
    r = c.run(["scontrol", "show", "topology"])
    assert r.stdout == ""
    assert r.stderr.strip() == "scontrol: error: No topology information available"


def test_malformed_topology_conf_stops_the_controller(cluster):
    c = tree_cluster(cluster)
    c.kill_controller(signal.SIGTERM)
    topo = c.dir / "etc" / "topology.conf"
    topo.write_text("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s0 Switches=s[1-2]\n")
    r = subprocess.run([str(SBIN / "shoalctld"), "-D", "-f", str(c.conf_path)],
                       capture_output=True, text=True, timeout=30, env=c.env)
    assert r.returncode != 0
    expected = f"{topo}:2: switch 's2' is not defined"
    log = (c.log_dir / "shoalctld.log").read_text(errors="replace")
    assert expected in r.stderr or expected in log, (r.stderr, log[-2000:])
    # A missing file is refused too, naming it.
    topo.unlink()
    r = subprocess.run([str(SBIN / "shoalctld"), "-D", "-f", str(c.conf_path)],
                       capture_output=True, text=True, timeout=30, env=c.env)
    assert r.returncode != 0
    log = (c.log_dir / "shoalctld.log").read_text(errors="replace")
    assert f"{topo}: cannot read" in r.stderr + log


def test_block_topology_keeps_a_job_inside_one_block(cluster):
    blocks = "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockSizes=2\n"
    c = cluster(nodes=4, cpus=1, conf=["TopologyPlugin=topology/block"],
                etc_files={"topology.conf": blocks})
    # n1 busy: plain order would give n2+n3 across the two blocks; b2 alone has room.
    hold_node(c, "n1")
    job = c.sbatch(["-N2", "--wrap", "sleep 300"])
    assert wait_until(lambda: running_on(c, job), 20, f"job {job} to start") == "n[3-4]"
