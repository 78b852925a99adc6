"""topology.conf naming dynamic nodes (the Kubernetes operator writes the worker pods' names
before they register): the controller starts with names it does not know yet, a node joins
its switch when it is created or registers, leaves it when deleted, and `scontrol reconfigure`
rereads topology.conf."""

from conftest import wait_until

TREE = ("SwitchName=s1 Nodes=n1,d1\n"
        "SwitchName=s2 Nodes=n2,d2\n"
        "SwitchName=s0 Switches=s[1-2]\n")


def topology(c):
    return c.run(["scontrol", "show", "topology"]).stdout.splitlines()


def test_dynamic_nodes_join_and_leave_the_topology(cluster):
    c = cluster(nodes=2, cpus=1, conf=["TopologyPlugin=topology/tree"],
                etc_files={"topology.conf": TREE})
    # d1 and d2 do not exist yet: not an error, they are simply not shown.
    assert topology(c) == [
        "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n1",
        "SwitchName=s2 Level=0 LinkSpeed=1 Nodes=n2",
        "SwitchName=s0 Level=1 LinkSpeed=1 Nodes=n[1-2] Switches=s[1-2]",
    ]
    c.run(["scontrol", "create", "NodeName=d1", "CPUs=1", "State=FUTURE"])
    assert topology(c)[0] == "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=d1,n1"
    assert topology(c)[2] == "SwitchName=s0 Level=1 LinkSpeed=1 Nodes=d1,n[1-2] Switches=s[1-2]"
    c.run(["scontrol", "delete", "NodeName=d1"])
    assert topology(c)[0] == "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n1"

    # A changed topology.conf is read again by scontrol reconfigure.
    (c.dir / "etc" / "topology.conf").write_text(
        "SwitchName=s1 Nodes=n[1-2],d[1-2]\nSwitchName=s9 Nodes=d9\n")
    c.run(["scontrol", "create", "NodeName=d2", "CPUs=1", "State=FUTURE"])
    c.run(["scontrol", "reconfigure"])
    wait_until(lambda: topology(c) == ["SwitchName=s1 Level=0 LinkSpeed=1 Nodes=d2,n[1-2]",
                                       "SwitchName=s9 Level=0 LinkSpeed=1"],
               10, "the new topology after reconfigure")
