"""Dynamic nodes made and removed by an admin (`scontrol create NodeName=...`, `scontrol delete
NodeName=...`, shoalrestd's `POST new/node/` and `DELETE node/{name}`), and the node Comment and
Extra strings (scontrol update, scontrol show node, sinfo -O, REST), across a controller crash."""

import socket

from conftest import SBIN, wait_until
from restd_client import Rest

V = "/slurm/v0.0.44"
NODE = f"{V}/node/{{node_name}}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def show_node(c, name):
    return c.run(["scontrol", "show", "node", name], check=False)


def test_scontrol_create_and_delete(cluster, users):
    c = cluster(nodes=1)
    alice = users["shoaltest1"]

    r = c.run(["scontrol", "create", "NodeName=dyn1", "CPUs=2"], user=alice, check=False)
    assert r.returncode != 0
    assert "Access/permission denied" in r.stderr, r.stderr
    assert show_node(c, "dyn1").returncode != 0

    c.run(["scontrol", "create", "NodeName=dyn1", "CPUs=2", "RealMemory=500", "Features=fast",
           "State=FUTURE"])
    node = show_node(c, "dyn1").stdout
    assert "CPUTot=2" in node and "RealMemory=500" in node, node
    assert "AvailableFeatures=fast" in node, node
    assert "State=FUTURE" in node, node
    rows = c.run(["sinfo", "-h", "-N", "-o", "%N %P"]).stdout.split("\n")
    assert "dyn1 debug*" in rows, rows
    # Names already in use and malformed lines are refused.
    for spec in (["NodeName=dyn1"], ["NodeName=n1"], ["NodeName=dyn9", "CPUs=x"]):
        r = c.run(["scontrol", "create"] + spec, check=False)
        assert r.returncode != 0 and r.stderr.strip(), (spec, r.stderr)
    assert show_node(c, "dyn9").returncode != 0
    # A created node that never registers is not scheduled: the job waits.
    job = c.sbatch(["-w", "dyn1", "--begin=now"], "#!/bin/sh\necho on $SLURMD_NODENAME\n")
    assert c.job_state(job) == "PENDING"

    # Its daemon registers (as slurmd -Z) and it comes into service.
    port = free_port()
    c._spawn("dyn1", [SBIN / "shoald", "-D", "-f", c.conf_path, "-Z", "-N", "dyn1",
                      "--conf", f"CPUs=2 RealMemory=500 Features=fast Port={port}"])
    assert c.wait_job(job) == "COMPLETED"
    assert (c.work / f"slurm-{job}.out").read_text() == "on dyn1\n"

    # A node with a job allocated cannot go; nor can one from slurm.conf; nor for a user.
    busy = c.sbatch(["-w", "dyn1"], "#!/bin/sh\nsleep 300\n")
    wait_until(lambda: c.job_state(busy) == "RUNNING", 30, "the job to run on dyn1")
    r = c.run(["scontrol", "delete", "NodeName=dyn1"], check=False)
    assert r.returncode != 0 and "busy" in r.stderr, r.stderr
    r = c.run(["scontrol", "delete", "NodeName=n1"], check=False)
    assert r.returncode != 0 and "non-dynamic" in r.stderr, r.stderr
    c.run(["scancel", str(busy)])
    c.wait_job(busy)
    r = c.run(["scontrol", "delete", "NodeName=dyn1"], user=alice, check=False)
    assert r.returncode != 0 and "Access/permission denied" in r.stderr, r.stderr

    # Its daemon stopped (it would register again), the node is deleted.
    c.kill_node("dyn1")
    c.run(["scontrol", "create", "NodeName=dyn2", "CPUs=1"])
    c.run(["scontrol", "delete", "NodeName=dyn1"])
    assert show_node(c, "dyn1").returncode != 0
    rows = c.run(["sinfo", "-h", "-N", "-o", "%N"]).stdout.split()
    assert "dyn1" not in rows and "dyn2" in rows, rows
    part = c.run(["scontrol", "show", "partition", "debug"]).stdout
    assert "dyn1" not in part, part

    # The journal agrees after a crash: dyn2 is back, dyn1 is not.
    c.kill_controller()
    c.start_controller()
    assert show_node(c, "dyn1").returncode != 0
    assert "CPUTot=1" in show_node(c, "dyn2").stdout
    # A deleted name can be created again.
    c.run(["scontrol", "create", "NodeName=dyn1", "CPUs=3"])
    assert "CPUTot=3" in show_node(c, "dyn1").stdout


def test_comment_extra_and_rest_node_create_delete(cluster, users):
    c = cluster(nodes=1)
    alice = users["shoaltest1"]
    rest = Rest(c)

    node = show_node(c, "n1").stdout
    assert "Comment=" not in node and "Extra=" not in node, node
    c.run(["scontrol", "update", "NodeName=n1", "Comment=rack 4 slot 2", "Extra=tag=a"])
    lines = [l.strip() for l in show_node(c, "n1").stdout.split("\n")]
    assert "Comment=rack 4 slot 2" in lines and "Extra=tag=a" in lines, lines
    r = c.run(["sinfo", "-h", "-N", "-O", "NodeList:6,Comment:20,Extra:10"]).stdout
    assert r.split("\n")[0].split() == ["n1", "rack", "4", "slot", "2", "tag=a"], r
    r = c.run(["scontrol", "update", "NodeName=n1", "Comment=mine"], user=alice, check=False)
    assert r.returncode != 0 and "Access/permission denied" in r.stderr, r.stderr

    status, body = rest.get(f"{V}/node/n1", template=NODE)
    assert status == 200
    assert body["nodes"][0]["comment"] == "rack 4 slot 2"
    assert body["nodes"][0]["extra"] == "tag=a"
    status, body = rest.post(f"{V}/node/n1", {"comment": "via rest", "extra": "e2"},
                             template=NODE)
    assert status == 200, body
    assert not body.get("warnings"), body
    status, body = rest.get(f"{V}/node/n1", template=NODE)
    assert body["nodes"][0]["comment"] == "via rest" and body["nodes"][0]["extra"] == "e2"
    status, body = rest.post(f"{V}/node/n1", {"comment": "x"}, user=alice, template=NODE)
    assert status == 403, body

    # new/node and DELETE node/{name}.
    status, body = rest.post(f"{V}/new/node/", {"node_conf": "NodeName=rdyn CPUs=2"},
                             user=alice)
    assert status == 403, body
    status, body = rest.post(f"{V}/new/node/", {"node_conf": "NodeName=rdyn CPUs=2 Weight=7"})
    assert status == 200, body
    status, body = rest.get(f"{V}/node/rdyn", template=NODE)
    assert status == 200, body
    assert body["nodes"][0]["cpus"] == 2 and body["nodes"][0]["weight"] == 7
    assert "DYNAMIC_NORM" in body["nodes"][0]["state"], body["nodes"][0]["state"]
    status, body = rest.post(f"{V}/new/node/", {"node_conf": "NodeName=rdyn"})
    assert status != 200 and body["errors"], body
    status, body = rest.post(f"{V}/new/node/", {"node_conf": "CPUs=2"})
    assert status != 200 and body["errors"], body
    status, body = rest.delete(f"{V}/node/n1", template=NODE)
    assert status != 200 and body["errors"], body
    status, body = rest.delete(f"{V}/node/rdyn", user=alice, template=NODE)
    assert status == 403, body
    status, body = rest.delete(f"{V}/node/rdyn", template=NODE)
    assert status == 200, body
    status, body = rest.get(f"{V}/node/rdyn", template=NODE)
    assert status != 200, body

    # Comment and Extra are journalled with the node's admin state.
    c.kill_controller()
    c.start_controller()
    lines = [l.strip() for l in show_node(c, "n1").stdout.split("\n")]
    assert "Comment=via rest" in lines and "Extra=e2" in lines, lines
    assert show_node(c, "rdyn").returncode != 0


def test_nodeset_feature_places_dynamic_nodes(cluster):
    """A partition naming `NodeSet=x Feature=f` takes the dynamic nodes that carry f, when they
    are created or register, and keeps them across a restart (how the Kubernetes operator puts a
    NodeSet's pods in its partition)."""
    c = cluster(nodes=1, conf=["NodeSet=gpuset Feature=gpu",
                               "PartitionName=gpus Nodes=gpuset MaxTime=UNLIMITED"])
    c.run(["scontrol", "create", "NodeName=g1", "CPUs=1", "Features=gpu", "State=FUTURE"])
    c.run(["scontrol", "create", "NodeName=c1", "CPUs=1", "Features=cpu", "State=FUTURE"])

    def partitions_of(node):
        rows = c.run(["sinfo", "-h", "-N", "-o", "%N %P"]).stdout.split("\n")
        return sorted(r.split()[1].rstrip("*") for r in rows if r.split()[:1] == [node])

    # (debug is the harness's Nodes=ALL partition: every dynamic node is in it.)
    assert partitions_of("g1") == ["debug", "gpus"]
    assert partitions_of("c1") == ["debug"]
    # Changing a dynamic node's features moves it (the operator sets k8s/ features this way).
    c.run(["scontrol", "update", "NodeName=c1", "Features=cpu,gpu"])
    assert partitions_of("c1") == ["debug", "gpus"]
    c.run(["scontrol", "update", "NodeName=c1", "Features=cpu"])
    assert partitions_of("c1") == ["debug"]
    # A node that registers by itself (shoald -Z) with the feature joins too, and runs its job.
    port = free_port()
    c._spawn("g2", [SBIN / "shoald", "-D", "-f", c.conf_path, "-Z", "-N", "g2",
                    "--conf", f"CPUs=1 Features=gpu Port={port}"])
    wait_until(lambda: partitions_of("g2") == ["debug", "gpus"], 30, "g2 in partition gpus")
    job = c.sbatch(["-p", "gpus", "-w", "g2"], "#!/bin/sh\necho on $SLURMD_NODENAME\n")
    assert c.wait_job(job) == "COMPLETED"
    # With no NodeAddr of its own, its address is the one it registered from (a pod's IP).
    assert "NodeAddr=127.0.0.1 " in show_node(c, "g2").stdout
    # The placement is recomputed after a controller restart.
    c.kill_controller()
    c.start_controller()
    assert partitions_of("g1") == ["debug", "gpus"]
    assert partitions_of("c1") == ["debug"]
