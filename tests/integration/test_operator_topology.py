"""Network topology from Kubernetes Node annotations, end to end: the operator turns each
Node's topology annotation (Shoal's `topology.shoal.dev/line` or Slinky's
`topology.slinky.slurm.net/line`) into topology.conf next to slurm.conf, the real shoalctld
(a pod of the kubelet simulator) places each worker under its Kubernetes node's switch, a
changed annotation reaches the controller by `scontrol reconfigure` without restarting its pod,
and a `--switches=1` job stays on one leaf."""

import os
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from k8s_env import NS, K8s, ready, wait

WORKER_SEL = "app.kubernetes.io/instance=cpu,shoal.dev/nodeset=cpu"
SHOAL_ANNOT = "topology.shoal.dev/line"
SLINKY_ANNOT = "topology.slinky.slurm.net/line"


def controller_cr():
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "Controller",
            "metadata": {"name": "shoal", "namespace": NS},
            "spec": {"clusterName": "k8s",
                     "slurmKeyRef": {"name": "shoal-slurm-key", "key": "slurm.key"},
                     "jwtKeyRef": {"name": "shoal-jwt-key", "key": "jwt.key"},
                     "topology": {"plugin": "topology/tree"},
                     "extraConf": "SlurmdTimeout=30\nKillWait=5\n"}}


def nodeset_cr(replicas):
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": "cpu", "namespace": NS},
            "spec": {"controllerRef": {"name": "shoal"}, "replicas": replicas,
                     "partition": {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED"}}}


@pytest.fixture(scope="module")
def env(request):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    k = K8s(k8s_nodes=("k1", "k2"), bridge="kotp0", cidr="10.250.0.0/16").start()
    try:
        k.secret("shoal-slurm-key", {"slurm.key": secrets.token_bytes(32)})
        k.secret("shoal-jwt-key", {"jwt.key": secrets.token_hex(32)})
        # Before anything runs: each Kubernetes node names its leaf switch, one in Shoal's
        # spelling, one in Slinky's.
        k.kubectl("annotate", "node", "k1", f"{SHOAL_ANNOT}=switch:leaf1")
        k.kubectl("annotate", "node", "k2", f"{SLINKY_ANNOT}=topo-switch:leaf2,topo-block:b0")
        k.start_operator()
        k.apply(controller_cr())
        k.apply(nodeset_cr(4))
        k.work = Path(tempfile.mkdtemp(prefix="shoal-k8s-topo-", dir="/tmp"))
        os.chmod(k.work, 0o777)
        yield k
    finally:
        k.stop(keep=request.session.testsfailed > 0)
        shutil.rmtree(getattr(k, "work", "/nonexistent"), ignore_errors=True)


def topology(env):
    """scontrol show topology as {switch: {"Nodes": set, "Switches": str, "Level": str}}."""
    r = env.ctl("scontrol", "show", "topology")
    out = {}
    for line in r.stdout.splitlines():
        fields = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if "SwitchName" not in fields:
            continue
        nodes = fields.get("Nodes", "")
        expanded = env.ctl("scontrol", "show", "hostnames", nodes).stdout.split() if nodes else []
        out[fields["SwitchName"]] = {"Nodes": set(expanded), "Level": fields.get("Level"),
                                     "Switches": fields.get("Switches", "")}
    return out


def placement(env):
    """Worker pod name -> Kubernetes node name."""
    return {p["metadata"]["name"]: p["spec"].get("nodeName") for p in env.pods(WORKER_SEL)
            if not p["metadata"].get("deletionTimestamp")}


def leaves_match(env, leaf_of_k8s_node):
    topo = topology(env)
    want = {}
    for pod, k8s_node in placement(env).items():
        want.setdefault(leaf_of_k8s_node[k8s_node], set()).add(pod)
    got = {name: sw["Nodes"] for name, sw in topo.items() if sw["Level"] == "0"}
    return got == want and topo


def node_states(env):
    r = env.ctl("sinfo", "-h", "-N", "-o", "%N %t")
    if r.returncode != 0:
        return {}
    return dict(line.split() for line in r.stdout.strip().split("\n") if line.strip())


def test_workers_sit_under_their_kubernetes_nodes_switch(env):
    wait(lambda: env.pod("shoal-0") and ready(env.pod("shoal-0")), 90, "the controller pod")
    wait(lambda: sorted(node_states(env).values()) == ["idle"] * 4, 120, "four idle Shoal nodes")
    where = placement(env)
    assert sorted(set(where.values())) == ["k1", "k2"], where  # workers on both Kubernetes nodes
    try:
        topo = wait(lambda: leaves_match(env, {"k1": "leaf1", "k2": "leaf2"}), 60,
                    "each worker under its Kubernetes node's leaf switch")
    except AssertionError:
        raise AssertionError(f"placement {where}, topology {topology(env)}") from None
    # A top switch joins the leaves so a job may span them.
    assert topo["shoal-top"]["Level"] == "1"
    assert topo["shoal-top"]["Switches"] == "leaf[1-2]"
    assert topo["shoal-top"]["Nodes"] == set(where)
    # The operator's view of it, in the Controller's status.
    status = env.cr("controllers", "shoal")["status"]["topology"]
    assert status["plugin"] == "topology/tree" and status["nodes"] == 4 and \
        status["problems"] == [], status


def test_switches_job_stays_on_one_leaf(env):
    where = placement(env)
    per_leaf = {}
    for pod, node in where.items():
        per_leaf.setdefault(node, []).append(pod)
    biggest = max(len(v) for v in per_leaf.values())
    assert biggest >= 2, per_leaf  # four workers on two nodes
    job = env.submit("-N2", "--switches=1", "--wrap", "true")
    env.wait_job(job, timeout=60)
    show = env.ctl("scontrol", "show", "job", job).stdout
    nodelist = [t.split("=", 1)[1] for t in show.split() if t.startswith("NodeList=")][0]
    nodes = env.ctl("scontrol", "show", "hostnames", nodelist).stdout.split()
    assert len(nodes) == 2, show
    assert len({where[n] for n in nodes}) == 1, (nodes, where)


def test_annotation_change_follows_without_controller_restart(env):
    pod = env.pod("shoal-0")
    uid = pod["metadata"]["uid"]
    restarts = pod["status"]["containerStatuses"][0]["restartCount"]
    # k2 moves to leaf1 (Slinky's annotation) ...
    env.kubectl("annotate", "node", "k2", "--overwrite", f"{SLINKY_ANNOT}=topo-switch:leaf1")
    wait(lambda: leaves_match(env, {"k1": "leaf1", "k2": "leaf1"}), 60,
         "every worker under leaf1 after the annotation change")
    topo = topology(env)
    assert "leaf2" not in topo and "shoal-top" not in topo, topo  # one leaf: no top switch
    # ... and a bad value leaves k2's workers out, reported, with the rest intact.
    env.kubectl("annotate", "node", "k2", "--overwrite", f"{SLINKY_ANNOT}=rack=7")
    on_k1 = {p for p, n in placement(env).items() if n == "k1"}
    wait(lambda: {n: s["Nodes"] for n, s in topology(env).items()} == {"leaf1": on_k1}, 60,
         "only k1's workers in the topology")
    status = env.cr("controllers", "shoal")["status"]["topology"]
    assert len(status["problems"]) == 1 and "k2" in status["problems"][0], status
    events = env.call("GET", f"/api/v1/namespaces/{NS}/events")["items"]
    assert any(e.get("reason") == "TopologyInvalid" and "k2" in e.get("message", "")
               for e in events), [e.get("reason") for e in events]
    # The same controller process all along: reconfigure, never a restart.
    pod = env.pod("shoal-0")
    assert pod["metadata"]["uid"] == uid
    assert pod["status"]["containerStatuses"][0]["restartCount"] == restarts
