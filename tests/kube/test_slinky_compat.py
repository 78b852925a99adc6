"""Slinky compatibility on a real API server (docs/kubernetes-slinky.md): the slinky.slurm.net
CRDs installed, a Controller and a NodeSet applied as Slinky's documentation and chart write
them, and shoal-operator (the build's binary, on the host, with --slinky-api) makes the same
controller and worker pods as the equivalent shoal.dev resources do. Fields Shoal cannot honour
are refused: by CEL at admission, or by the operator with a condition and an Event. No node is
needed: the pods stay Pending."""

import copy
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml
from controlplane import wait

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("BUILD_DIR", "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
OPERATOR = BUILD / "sbin" / "shoal-operator"
SLINKY_EXAMPLE = REPO / "deploy" / "examples" / "slinky" / "slurm.yaml"



def get(cp, *args):
    r = cp.kubectl("get", *args, "-o", "json", check=False)
    return json.loads(r.stdout) if r.returncode == 0 else None


def apply(cp, ns, objs, check=True):
    text = "".join("---\n" + json.dumps(o) + "\n" for o in objs)
    return cp.kubectl("-n", ns, "apply", "-f", "-", input=text, check=check)


def example(kind):
    (obj,) = [o for o in yaml.safe_load_all(SLINKY_EXAMPLE.read_text())
              if o and o["kind"] == kind]
    obj["metadata"].pop("namespace", None)
    return obj


def secrets():
    return [{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
             "stringData": {key: "0123456789abcdef0123456789abcdef"}}
            for name, key in (("slurm-auth-slurm", "slurm.key"), ("slurm-auth-jwt", "jwt.key"))]


def shoal_equivalents():
    """The shoal.dev resources the Slinky Controller and NodeSet stand for (as the unit tests
    in tests/unit/operator_slinky_test.cc write them)."""
    linux = {"nodeSelector": {"kubernetes.io/os": "linux"}}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "kubernetes.io/hostname", "labelSelector": {"matchExpressions": [
            {"key": "app.kubernetes.io/name", "operator": "In", "values": ["shoal-worker"]}]}}]}}
    ctl = {"apiVersion": "shoal.dev/v1alpha1", "kind": "Controller",
           "metadata": {"name": "slurm"},
           "spec": {"clusterName": None,  # set per namespace
                    "slurmKeyRef": {"name": "slurm-auth-slurm", "key": "slurm.key"},
                    "jwtKeyRef": {"name": "slurm-auth-jwt", "key": "jwt.key"},
                    "extraConf": "NodeSet=slinky Feature=slinky\n"
                                 "PartitionName=slinky Nodes=slinky\n"
                                 "PartitionName=all Nodes=ALL Default=YES MaxTime=UNLIMITED",
                    "image": "shoal/controller:latest", "imagePullPolicy": "IfNotPresent",
                    "template": {"spec": linux},
                    "persistence": {"enabled": True, "size": "4Gi"}}}
    ns = {"apiVersion": "shoal.dev/v1alpha1", "kind": "NodeSet",
          "metadata": {"name": "slurm-worker-slinky"},
          "spec": {"controllerRef": {"name": "slurm"}, "replicas": 1,
                   "scalingMode": "StatefulSet", "image": "shoal/worker:latest",
                   "imagePullPolicy": "IfNotPresent",
                   "template": {"spec": dict(linux, affinity=anti)},
                   "features": ["slinky"], "partition": {"enabled": False},
                   "updateStrategy": {"type": "RollingUpdate",
                                      "rollingUpdate": {"maxUnavailable": "25%"}},
                   "workloadDisruptionProtection": True, "pruneNodeRecords": "Never"}}
    return ctl, ns


def comparable(pod, ns):
    """A pod's spec and labels with what differs by namespace or server run taken out."""
    labels = dict(pod["metadata"].get("labels", {}))
    labels.pop("nodeset.shoal.dev/revision", None)  # hashes the controller's host name
    text = json.dumps({"labels": labels, "spec": pod["spec"]})
    spec = json.loads(text.replace(ns, "NS"))
    for key in ("nodeName", "serviceAccountName", "serviceAccount"):
        spec["spec"].pop(key, None)
    spec["spec"]["volumes"] = [v for v in spec["spec"].get("volumes", [])
                               if not v["name"].startswith("kube-api-access-")]
    for c in spec["spec"]["containers"] + spec["spec"].get("initContainers", []):
        c["volumeMounts"] = [m for m in c.get("volumeMounts", [])
                             if not m["name"].startswith("kube-api-access-")]
    return spec


@pytest.fixture
def operator(control_plane, tmp_path):
    assert OPERATOR.exists(), f"{OPERATOR} not built"
    for d in ("deploy/crds/slinky-compat", "deploy/crds"):
        control_plane.kubectl("apply", "--server-side", "-f", str(REPO / d))
    control_plane.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                          *[f"crd/{p}.{g}" for g in ("slinky.slurm.net", "shoal.dev")
                            for p in ("controllers", "nodesets", "loginsets", "accountings",
                                      "restapis", "tokens")])
    log = open(tmp_path / "operator.log", "w")
    proc = subprocess.Popen([str(OPERATOR), "--kubeconfig", str(control_plane.kubeconfig),
                             "--slinky-api", "--health-port", "0", "--resync-seconds", "5",
                             "-v"], stdout=log, stderr=subprocess.STDOUT)
    yield proc
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
    if os.environ.get("SHOAL_KEEP_DIRS") or proc.returncode not in (0, -15):
        print((tmp_path / "operator.log").read_text()[-20000:])


def test_slinky_controller_and_nodeset_make_the_same_pods(control_plane, namespace, operator):
    cp = control_plane
    ctl, ns = example("Controller"), example("NodeSet")
    ctl["spec"].pop("accountingRef")  # no Accounting here
    apply(cp, namespace, secrets() + [ctl, ns])

    pod = wait(lambda: get(cp, "-n", namespace, "pod", "slurm-0"), 60, "the controller pod")
    worker = wait(lambda: get(cp, "-n", namespace, "pod", "slurm-worker-slinky-0"), 60,
                  "the worker pod")
    for p, kind, name in ((pod, "Controller", "slurm"),
                          (worker, "NodeSet", "slurm-worker-slinky")):
        (ref,) = p["metadata"]["ownerReferences"]
        assert (ref["apiVersion"], ref["kind"], ref["name"]) == \
            ("slinky.slurm.net/v1beta1", kind, name)
    assert pod["spec"]["containers"][0]["image"] == "shoal/controller:latest"
    assert worker["spec"]["containers"][0]["image"] == "shoal/worker:latest"
    assert "Features=slurm-worker-slinky,slinky" in json.dumps(worker["spec"]["containers"][0])
    conf = get(cp, "-n", namespace, "configmap", "slurm-config")["data"]["slurm.conf"]
    assert "NodeSet=slinky Feature=slinky\n" in conf
    assert "PartitionName=slinky Nodes=slinky\n" in conf
    for kind, name in (("service", "slurm"), ("service", "slurm-headless"),
                       ("persistentvolumeclaim", "slurm-state"),
                       ("service", "slurm-worker-slinky")):
        assert wait(lambda: get(cp, "-n", namespace, kind, name), 30, f"{kind} {name}")

    # Status in Slinky's shape (no Shoal controller answers: node counts unknown).
    status = wait(lambda: (get(cp, "-n", namespace, "nodesets.slinky.slurm.net",
                               "slurm-worker-slinky") or {}).get("status"), 30,
                  "the NodeSet status")
    assert status["replicas"] == 1 and status["desired"] == 1
    assert status["selector"] and "nodeSetHash" in status
    assert not [k for k in status if k.startswith("node") and k != "nodeSetHash"]

    # The shoal.dev equivalents, in a namespace of their own, make the same pods.
    other = f"t-{uuid.uuid4().hex[:8]}"
    cp.kubectl("create", "namespace", other)
    try:
        sctl, sns = shoal_equivalents()
        sctl["spec"]["clusterName"] = f"{other}-slurm"  # Slinky's default, as translated
        apply(cp, other, secrets() + [sctl, sns])
        spod = wait(lambda: get(cp, "-n", other, "pod", "slurm-0"), 60, "shoal.dev controller")
        sworker = wait(lambda: get(cp, "-n", other, "pod", "slurm-worker-slinky-0"), 60,
                       "shoal.dev worker")
        assert comparable(pod, namespace) == comparable(spod, other)
        assert comparable(worker, namespace) == comparable(sworker, other)
        sconf = get(cp, "-n", other, "configmap", "slurm-config")["data"]["slurm.conf"]
        assert conf.replace(namespace, "NS") == sconf.replace(other, "NS")
    finally:
        cp.kubectl("delete", "namespace", other, "--wait=false", check=False)


def test_unsupported_fields_are_refused(control_plane, namespace, operator):
    cp = control_plane
    ctl = example("Controller")
    ctl["spec"].pop("accountingRef")
    apply(cp, namespace, secrets() + [ctl])

    # What a CEL rule can say, the API server refuses at apply.
    pinned = example("NodeSet")
    pinned["metadata"]["name"] = "pinned"
    pinned["spec"]["pinToNode"] = True
    r = apply(cp, namespace, [pinned], check=False)
    assert r.returncode != 0 and "spec.pinToNode" in r.stderr, r.stdout + r.stderr
    external = copy.deepcopy(ctl)
    external["metadata"]["name"] = "outside"
    external["spec"].update(external=True, externalConfig={"host": "slurmctld.example.com",
                                                            "port": 6817})
    r = apply(cp, namespace, [external], check=False)
    assert r.returncode != 0 and "spec.external" in r.stderr, r.stdout + r.stderr

    # The rest, the operator: Ready=False/UnsupportedField naming the field, a Warning Event,
    # and no pod.
    big = example("NodeSet")
    big["metadata"]["name"] = "big"
    big["spec"]["extraConf"] = "RealMemory=1000"
    apply(cp, namespace, [big])

    def ready_condition():
        obj = get(cp, "-n", namespace, "nodesets.slinky.slurm.net", "big") or {}
        conds = obj.get("status", {}).get("conditions", [])
        return next((c for c in conds if c["type"] == "Ready"), None)
    cond = wait(ready_condition, 60, "the Ready condition")
    assert cond["status"] == "False" and cond["reason"] == "UnsupportedField", cond
    assert "spec.extraConf" in cond["message"] and "RealMemory" in cond["message"], cond

    def event():
        evs = get(cp, "-n", namespace, "events",
                  "--field-selector", "involvedObject.name=big") or {"items": []}
        return [e for e in evs["items"] if e["reason"] == "UnsupportedField"]
    (ev,) = wait(event, 30, "the UnsupportedField Event")
    assert ev["type"] == "Warning" and "spec.extraConf" in ev["message"], ev
    assert ev["involvedObject"]["apiVersion"] == "slinky.slurm.net/v1beta1"
    assert ev["involvedObject"]["kind"] == "NodeSet"
    assert get(cp, "-n", namespace, "pod", "big-0") is None
