"""Fidelity of the fake Kubernetes API server (tests/k8s/fakekube) against real clients.

kubectl (Debian's kubernetes-client; $KUBECTL overrides) and the official Python client
(python3-kubernetes) run against it for the verbs the operator's tests use; plain HTTP checks
cover conflicts, watch resumption, finalizers, garbage collection and patches.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "k8s"))

from fakekube import FakeKube  # noqa: E402

KUBECTL = os.environ.get("KUBECTL") or shutil.which("kubectl") or "kubectl"

NODESET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "nodesets.shoal.dev"},
    "spec": {
        "group": "shoal.dev",
        "scope": "Namespaced",
        "names": {"plural": "nodesets", "singular": "nodeset", "kind": "NodeSet",
                  "listKind": "NodeSetList", "shortNames": ["nss"]},
        "versions": [{
            "name": "v1alpha1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector"}},
            "additionalPrinterColumns": [
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"}],
            "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {"type": "object", "required": ["controllerRef"], "properties": {
                        "controllerRef": {"type": "object",
                                          "properties": {"name": {"type": "string"}}},
                        "replicas": {"type": "integer", "minimum": 0, "default": 1},
                        "image": {"type": "string"},
                        "template": {"type": "object",
                                     "x-kubernetes-preserve-unknown-fields": True}}},
                    "status": {"type": "object", "properties": {
                        "replicas": {"type": "integer"},
                        "readyReplicas": {"type": "integer"},
                        "selector": {"type": "string"}}}}}}}]}}


# ------------------------------------------------------------------------------ helpers

@pytest.fixture
def kube():
    k = FakeKube(bookmark_interval=0.5).start()
    yield k
    k.stop()


class Http:
    def __init__(self, url):
        self.url = url

    def __call__(self, method, path, body=None, ct="application/json", raw=False):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": ct,
                                              "Authorization": "Bearer test-token"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                text = r.read()
                return r.status, (text if raw else json.loads(text))
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def watch(self, path):
        """Reads a whole (short, timeoutSeconds-bounded) watch stream as a list of events."""
        with urllib.request.urlopen(self.url + path, timeout=15) as r:
            assert r.headers.get("Transfer-Encoding") == "chunked"
            return [json.loads(line) for line in r.read().splitlines() if line.strip()]


@pytest.fixture
def http(kube):
    return Http(kube.url)


@pytest.fixture
def kubectl(kube, tmp_path):
    cfg = tmp_path / "kubeconfig"
    cfg.write_text(kube.kubeconfig(token="kubectl-token"))

    def run(*args, check=True, timeout=60, input=None):
        p = subprocess.run([KUBECTL, "--kubeconfig", str(cfg), *args], capture_output=True,
                           text=True, timeout=timeout, input=input)
        if check and p.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({p.returncode}):\n"
                                 f"{p.stdout}\n{p.stderr}")
        return p
    run.config = cfg
    return run


def ready_node(name, labels=None, taints=None):
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": dict({"kubernetes.io/hostname": name},
                                                      **(labels or {}))},
            "spec": {"taints": taints or []},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                       "nodeInfo": {  # all required by the Python client's model
                           "architecture": "amd64", "bootID": "b", "containerRuntimeVersion": "x",
                           "kernelVersion": "6", "kubeProxyVersion": "v1.20.2",
                           "kubeletVersion": "v1.20.2", "machineID": "m",
                           "operatingSystem": "linux", "osImage": "Debian", "systemUUID": "u"}}}


def pod(name, labels=None, owner=None, node_selector=None, **spec):
    md = {"name": name, "labels": labels or {}}
    if owner:
        md["ownerReferences"] = [owner]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": dict({"containers": [{"name": "c", "image": "busybox"}],
                          "nodeSelector": node_selector or {}}, **spec)}


def owner_ref(obj, controller=True):
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
            "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"],
            "controller": controller, "blockOwnerDeletion": True}


def mark_running(http, ns, name):
    """What a kubelet does once the pod's containers run."""
    code, _ = http("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status",
                   {"status": {"phase": "Running", "podIP": "10.0.0.9", "conditions": [
                       {"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "c", "ready": True, "restartCount": 0,
                                              "image": "busybox", "imageID": "",
                                              "state": {"running": {}}}]}},
                   ct="application/strategic-merge-patch+json")
    assert code == 200


class FakeKubelet(threading.Thread):
    """Finishes graceful pod deletions the way a kubelet does (DELETE gracePeriodSeconds=0)."""

    def __init__(self, http):
        super().__init__(daemon=True)
        self.http = http
        self.stopped = threading.Event()
        self.deleted = []

    def run(self):
        while not self.stopped.wait(0.2):
            _, lst = self.http("GET", "/api/v1/pods")
            for p in lst["items"]:
                md = p["metadata"]
                if md.get("deletionTimestamp"):
                    code, _ = self.http(
                        "DELETE", f"/api/v1/namespaces/{md['namespace']}/pods/{md['name']}",
                        {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                         "preconditions": {"uid": md["uid"]}})
                    if code == 200:
                        self.deleted.append(md["name"])


def wait_for(pred, timeout=20, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


# ------------------------------------------------------------------------------ kubectl

def test_kubectl_crd_apply_get_scale_patch_delete(kube, kubectl, tmp_path):
    crd = tmp_path / "crd.json"
    crd.write_text(json.dumps(NODESET_CRD))
    kubectl("apply", "-f", str(crd))
    established = kube.get("apiextensions.k8s.io", "v1", "customresourcedefinitions", "",
                           "nodesets.shoal.dev")
    assert {c["type"]: c["status"] for c in established["status"]["conditions"]} == \
        {"NamesAccepted": "True", "Established": "True"}
    assert established["status"]["acceptedNames"]["kind"] == "NodeSet"

    ns_yaml = tmp_path / "nodeset.yaml"
    ns_yaml.write_text("apiVersion: shoal.dev/v1alpha1\nkind: NodeSet\n"
                       "metadata:\n  name: w\nspec:\n  controllerRef: {name: c}\n"
                       "  image: shoal:1\n  unknownField: dropped\n")
    assert "nodeset.shoal.dev/w created" in kubectl("apply", "-f", str(ns_yaml)).stdout
    obj = json.loads(kubectl("get", "nodeset", "w", "-o", "json").stdout)
    assert obj["spec"]["replicas"] == 1  # schema default applied
    assert "unknownField" not in obj["spec"]  # pruned
    assert obj["metadata"]["generation"] == 1

    # Table output with the CRD's printer columns, via plural, short name and kind.
    out = kubectl("get", "nodesets").stdout
    assert out.split("\n")[0].split() == ["NAME", "REPLICAS", "READY"]
    assert out.split("\n")[1].split()[:2] == ["w", "1"]
    assert "w" in kubectl("get", "nss").stdout

    # apply again with a change: a JSON merge patch built from last-applied-configuration.
    ns_yaml.write_text(ns_yaml.read_text().replace("shoal:1", "shoal:2"))
    assert "configured" in kubectl("apply", "-f", str(ns_yaml)).stdout
    obj = json.loads(kubectl("get", "nss", "w", "-o", "json").stdout)
    assert obj["spec"]["image"] == "shoal:2" and obj["metadata"]["generation"] == 2
    assert "kubectl.kubernetes.io/last-applied-configuration" in obj["metadata"]["annotations"]
    # without client-side validation too
    ns_yaml.write_text(ns_yaml.read_text().replace("shoal:2", "shoal:3"))
    kubectl("apply", "--validate=false", "-f", str(ns_yaml))

    # scale subresource
    assert "scaled" in kubectl("scale", "nodeset/w", "--replicas=3").stdout
    obj = json.loads(kubectl("get", "nodeset", "w", "-o", "json").stdout)
    assert obj["spec"]["replicas"] == 3 and obj["spec"]["image"] == "shoal:3"

    # status: the main endpoint ignores it, /status takes only it; scale reports the selector
    kubectl("patch", "nodeset", "w", "--type=merge", "-p",
            json.dumps({"status": {"replicas": 9}, "spec": {"image": "shoal:4"}}))
    obj = kube.get("shoal.dev", "v1alpha1", "nodesets", "default", "w")
    assert obj["spec"]["image"] == "shoal:4" and "status" not in obj
    code, _ = Http(kube.url)("PATCH", "/apis/shoal.dev/v1alpha1/namespaces/default/nodesets/w"
                             "/status", {"status": {"replicas": 3, "selector": "a=b"}},
                             ct="application/merge-patch+json")
    assert code == 200
    code, scale = Http(kube.url)("GET", "/apis/shoal.dev/v1alpha1/namespaces/default/nodesets/w"
                                 "/scale")
    assert (code, scale["kind"], scale["spec"], scale["status"]) == \
        (200, "Scale", {"replicas": 3}, {"replicas": 3, "selector": "a=b"})

    # validation: 422 Invalid with the schema's message
    bad = kubectl("patch", "nodeset", "w", "--type=merge", "-p", '{"spec":{"replicas":-1}}',
                  check=False)
    assert bad.returncode != 0 and "Invalid" in bad.stderr and "spec.replicas" in bad.stderr
    # strategic merge patches are refused for custom resources, as by the real server
    code, st = Http(kube.url)("PATCH", "/apis/shoal.dev/v1alpha1/namespaces/default/nodesets/w",
                              {"spec": {"image": "x"}},
                              ct="application/strategic-merge-patch+json")
    assert (code, st["reason"]) == (415, "UnsupportedMediaType")

    assert 'nodeset.shoal.dev "w" deleted' in kubectl("delete", "nodeset", "w").stdout
    assert "No resources found" in kubectl("get", "nodesets").stderr
    # kubectl (clientcmd) sends no credentials to a plain-http server
    assert "kubectl-token" not in kube.tokens


def test_kubectl_builtin_apply_get_selectors_watch(kube, kubectl, http, tmp_path):
    manifest = tmp_path / "objs.yaml"
    manifest.write_text("""
apiVersion: v1
kind: ConfigMap
metadata: {name: cm1, labels: {tier: a}}
data: {k: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm2, labels: {tier: b}}
data: {k: "2"}
---
apiVersion: v1
kind: Service
metadata: {name: svc1}
spec:
  selector: {app: x}
  ports: [{port: 6817, name: ctld}]
""")
    kubectl("apply", "-f", str(manifest))
    kubectl("apply", "-f", str(manifest))  # unchanged: no-op patches
    names = lambda out: sorted(i["metadata"]["name"] for i in json.loads(out)["items"])  # noqa
    assert names(kubectl("get", "cm", "-o", "json").stdout) == ["cm1", "cm2"]
    assert names(kubectl("get", "cm", "-l", "tier=a", "-o", "json").stdout) == ["cm1"]
    assert names(kubectl("get", "cm", "-l", "tier in (a,b),tier!=b", "-o", "json").stdout) == \
        ["cm1"]
    assert names(kubectl("get", "cm", "-l", "!tier", "-o", "json").stdout) == []
    assert names(kubectl("get", "cm", "--field-selector", "metadata.name=cm2", "-o",
                         "json").stdout) == ["cm2"]
    svc = json.loads(kubectl("get", "svc", "svc1", "-o", "json").stdout)
    assert svc["spec"]["ports"][0]["targetPort"] == 6817 and svc["spec"]["clusterIP"]

    # strategic merge via apply on a Pod: containers merged by name
    kubectl("apply", "-f", "-", input=json.dumps(ready_node("n1")))
    p = pod("p1")
    p["spec"]["containers"].append({"name": "side", "image": "busybox:1"})
    kubectl("apply", "-f", "-", input=json.dumps(p))
    p["spec"]["containers"][1]["image"] = "busybox:2"
    kubectl("apply", "-f", "-", input=json.dumps(p))
    got = kube.get("", "v1", "pods", "default", "p1")
    assert [(c["name"], c["image"]) for c in got["spec"]["containers"]] == \
        [("c", "busybox"), ("side", "busybox:2")]
    assert got["spec"]["nodeName"] == "n1"  # the scheduler bound it
    out = kubectl("get", "pods", "-o", "wide").stdout
    assert out.split("\n")[1].split()[:3] == ["p1", "0/2", "Pending"]

    # kubectl get --watch sees a new object
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", str(kubectl.config), "get", "cm",
                             "--watch", "--request-timeout=20s"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: any(m == "GET" and "watch=true" in p for m, p in kube.requests),
                 what="kubectl watch request")
        # (not `kubectl create configmap`: newer kubectl sends that as protobuf)
        kubectl("create", "-f", "-", input=json.dumps(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm3"}}))
        lines = []
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not any(ln.startswith("cm3") for ln in lines):
            lines.append(proc.stdout.readline())
        assert any(ln.startswith("cm3") for ln in lines), lines
    finally:
        proc.kill()
        proc.wait()

    assert 'configmap "cm1" deleted' in kubectl("delete", "cm", "cm1").stdout
    assert kubectl("get", "cm", "cm1", check=False).returncode != 0


def test_kubectl_cordon_drain_pdb_eviction(kube, kubectl, http):
    for n in ("n1", "n2"):
        assert http("POST", "/api/v1/nodes", ready_node(n))[0] == 201
    _, rs = http("POST", "/apis/apps/v1/namespaces/default/replicasets",
                 {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "w"}},
                           "template": {"metadata": {"labels": {"app": "w"}}}}})
    _, ds = http("POST", "/apis/apps/v1/namespaces/default/daemonsets",
                 {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"},
                  "spec": {"selector": {"matchLabels": {"app": "d"}},
                           "template": {"metadata": {"labels": {"app": "d"}}}}})
    sel = {"kubernetes.io/hostname": "n1"}
    protect = "nodeset.shoal.dev/pod-protect"
    for name, labels, owner in (("w-0", {"app": "w", protect: "true"}, rs),
                                ("w-1", {"app": "w"}, rs), ("d-1", {"app": "d"}, ds)):
        assert http("POST", "/api/v1/namespaces/default/pods",
                    pod(name, labels, owner_ref(owner), sel))[0] == 201
        mark_running(http, "default", name)
    assert http("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
                {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                 "metadata": {"name": "w-protect"},
                 "spec": {"maxUnavailable": 0,
                          "selector": {"matchLabels": {protect: "true"}}}})[0] == 201
    _, pdb = http("GET", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/w-protect")
    assert {k: pdb["status"][k] for k in ("currentHealthy", "desiredHealthy", "expectedPods",
                                          "disruptionsAllowed")} == \
        {"currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1, "disruptionsAllowed": 0}

    # direct eviction of the protected pod: 429 with the message kubectl shows
    code, st = http("POST", "/api/v1/namespaces/default/pods/w-0/eviction",
                    {"apiVersion": "policy/v1beta1", "kind": "Eviction",
                     "metadata": {"name": "w-0", "namespace": "default"}})
    assert (code, st["reason"], st["message"]) == (
        429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption "
                                "budget.")

    kubectl("cordon", "n2")
    assert kube.get("", "v1", "nodes", "", "n2")["spec"]["unschedulable"] is True
    kubectl("uncordon", "n2")
    assert not kube.get("", "v1", "nodes", "", "n2")["spec"].get("unschedulable")

    kubelet = FakeKubelet(http)
    kubelet.start()
    drain = subprocess.Popen([KUBECTL, "--kubeconfig", str(kubectl.config), "drain", "n1",
                              "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: "w-1" in kubelet.deleted, what="w-1 evicted and deleted")
        assert kube.get("", "v1", "nodes", "", "n1")["spec"]["unschedulable"] is True
        time.sleep(6)  # at least one retry of the refused eviction
        w0 = kube.get("", "v1", "pods", "default", "w-0")
        assert w0 is not None and "deletionTimestamp" not in w0["metadata"]
        assert drain.poll() is None
        # the job ended: the protect label goes, and the next eviction attempt succeeds
        kubectl("label", "pod", "w-0", f"{protect}-")
        out, _ = drain.communicate(timeout=30)
    finally:
        if drain.poll() is None:
            drain.kill()
        kubelet.stopped.set()
        kubelet.join()
    assert drain.returncode == 0, out
    assert "Cannot evict pod as it would violate the pod's disruption budget." in out
    assert "node/n1 drained" in out or "node/n1 evicted" in out  # kubectl 1.20 says evicted
    assert sorted(kubelet.deleted) == ["w-0", "w-1"]
    assert kube.get("", "v1", "pods", "default", "d-1") is not None  # daemonset pod ignored
    kubectl("uncordon", "n1")


# ------------------------------------------------------------------------------ python client

def test_python_client(kube):
    from kubernetes import client, watch  # python3-kubernetes (scripts/setup.sh)

    cfg = client.Configuration(host=kube.url)
    cfg.api_key = {"authorization": "py-token"}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    api = client.ApiClient(cfg)
    core = client.CoreV1Api(api)
    core.create_node(ready_node("n1"))
    created = core.create_namespaced_pod("default", pod("p1", {"app": "x"}))
    assert created.metadata.uid and created.status.phase == "Pending"
    pods = core.list_namespaced_pod("default", label_selector="app=x")
    assert [p.metadata.name for p in pods.items] == ["p1"]
    patched = core.patch_namespaced_pod("p1", "default", {"metadata": {"labels": {"b": "c"}}})
    assert patched.metadata.labels == {"app": "x", "b": "c"}

    events = []
    w = watch.Watch()
    for ev in w.stream(core.list_namespaced_pod, "default", timeout_seconds=5):
        events.append((ev["type"], ev["object"].metadata.name))
        if len(events) == 1:
            core.delete_namespaced_pod("p1", "default", grace_period_seconds=0)
        if ev["type"] == "DELETED":
            w.stop()
    assert events[0] == ("ADDED", "p1") and events[-1] == ("DELETED", "p1")
    assert "py-token" in kube.tokens

    crd_api = client.ApiextensionsV1Api(api)
    crd_api.create_custom_resource_definition(NODESET_CRD)
    co = client.CustomObjectsApi(api)
    co.create_namespaced_custom_object("shoal.dev", "v1alpha1", "default", "nodesets", {
        "apiVersion": "shoal.dev/v1alpha1", "kind": "NodeSet", "metadata": {"name": "w"},
        "spec": {"controllerRef": {"name": "c"}, "replicas": 2}})
    got = co.get_namespaced_custom_object("shoal.dev", "v1alpha1", "default", "nodesets", "w")
    assert got["spec"]["replicas"] == 2
    st = co.patch_namespaced_custom_object_status("shoal.dev", "v1alpha1", "default",
                                                  "nodesets", "w",
                                                  {"status": {"readyReplicas": 2}})
    assert st["status"] == {"readyReplicas": 2}
    assert st["metadata"]["generation"] == 1  # status changes do not bump generation

    coord = client.CoordinationV1Api(api)
    lease = coord.create_namespaced_lease("default", {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "shoal-operator"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}})
    stale = lease.metadata.resource_version
    lease.spec.holder_identity = "b"
    renewed = coord.replace_namespaced_lease("shoal-operator", "default", lease)
    assert renewed.spec.holder_identity == "b"
    lease.spec.holder_identity = "c"
    lease.metadata.resource_version = stale
    with pytest.raises(client.exceptions.ApiException) as e:
        coord.replace_namespaced_lease("shoal-operator", "default", lease)
    assert e.value.status == 409 and json.loads(e.value.body)["reason"] == "Conflict"


# ------------------------------------------------------------------------------ plain HTTP

def test_conflicts_generation_and_errors(http):
    base = "/api/v1/namespaces/default/configmaps"
    code, cm = http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"generateName": "cm-"}, "data": {"a": "1"}})
    assert code == 201 and cm["metadata"]["name"].startswith("cm-")
    assert len(cm["metadata"]["name"]) == 8
    name, rv = cm["metadata"]["name"], cm["metadata"]["resourceVersion"]
    code, st = http("POST", base, cm)
    assert (code, st["kind"], st["status"], st["reason"]) == (409, "Status", "Failure",
                                                              "AlreadyExists")
    cm["data"]["a"] = "2"
    code, cm2 = http("PUT", f"{base}/{name}", cm)
    assert code == 200 and int(cm2["metadata"]["resourceVersion"]) > int(rv)
    code, st = http("PUT", f"{base}/{name}", cm)  # cm still carries the old resourceVersion
    assert (code, st["reason"], st["details"]["name"]) == (409, "Conflict", name)
    assert "the object has been modified" in st["message"]
    # a no-op update does not change the resourceVersion
    code, cm3 = http("PUT", f"{base}/{name}", cm2)
    assert cm3["metadata"]["resourceVersion"] == cm2["metadata"]["resourceVersion"]
    code, st = http("GET", f"{base}/nope")
    assert (code, st["reason"], st["message"]) == (404, "NotFound",
                                                   'configmaps "nope" not found')
    code, st = http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "Bad_Name!"}})
    assert (code, st["reason"]) == (422, "Invalid")
    code, st = http("POST", "/api/v1/namespaces/nowhere/configmaps",
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    assert code == 404 and st["message"] == 'namespaces "nowhere" not found'
    code, st = http("PATCH", f"{base}/{name}", {"data": {"b": "x"}}, ct="text/plain")
    assert code == 415
    code, _ = http("DELETE", f"{base}/{name}", {"preconditions": {"uid": "wrong"}})
    assert code == 409

    # generation: bumped by spec changes only
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}}}}
    dpath = "/apis/apps/v1/namespaces/default/deployments/d"
    assert http("POST", "/apis/apps/v1/namespaces/default/deployments", dep)[0] == 201
    _, d = http("PATCH", dpath, {"metadata": {"labels": {"x": "y"}}},
                ct="application/merge-patch+json")
    assert d["metadata"]["generation"] == 1
    _, d = http("PATCH", dpath, [{"op": "replace", "path": "/spec/replicas", "value": 4}],
                ct="application/json-patch+json")
    assert d["metadata"]["generation"] == 2 and d["spec"]["replicas"] == 4
    code, _ = http("PATCH", dpath, [{"op": "test", "path": "/spec/replicas", "value": 1}],
                   ct="application/json-patch+json")
    assert code == 422
    _, d = http("PUT", dpath + "/status", dict(d, status={"replicas": 4}))
    assert d["metadata"]["generation"] == 2 and d["status"] == {"replicas": 4}
    _, scale = http("GET", dpath + "/scale")
    assert scale["status"] == {"replicas": 4, "selector": "a=b"}
    code, scale = http("PUT", dpath + "/scale", dict(scale, spec={"replicas": 0}))
    assert code == 200 and scale["spec"]["replicas"] == 0


def test_list_pagination_and_selectors(http):
    for i in range(5):
        http("POST", "/api/v1/namespaces/default/configmaps",
             {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": f"c{i}", "labels": {"i": str(i)}}})
    _, page = http("GET", "/api/v1/namespaces/default/configmaps?limit=2")
    seen = [i["metadata"]["name"] for i in page["items"]]
    assert page["metadata"]["remainingItemCount"] == 3
    while page["metadata"].get("continue"):
        _, page = http("GET", "/api/v1/namespaces/default/configmaps?limit=2&continue="
                       + page["metadata"]["continue"])
        seen += [i["metadata"]["name"] for i in page["items"]]
    assert seen == ["c0", "c1", "c2", "c3", "c4"]
    _, lst = http("GET", "/api/v1/configmaps?labelSelector=i+notin+(0,1),i")
    assert [i["metadata"]["name"] for i in lst["items"]] == ["c2", "c3", "c4"]
    code, _ = http("GET", "/api/v1/configmaps?labelSelector=i+in+(")
    assert code == 400
    code, _ = http("DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=i+in+(1,3)")
    assert code == 200
    _, lst = http("GET", "/api/v1/namespaces/default/configmaps")
    assert [i["metadata"]["name"] for i in lst["items"]] == ["c0", "c2", "c4"]


def test_watch_resume_bookmarks_and_gone():
    with FakeKube(history_size=20, bookmark_interval=0.3) as kube:
        http = Http(kube.url)
        base = "/api/v1/namespaces/default/configmaps"
        _, c = http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "a", "labels": {"w": "1"}}})
        rv0 = c["metadata"]["resourceVersion"]
        http("PATCH", base + "/a", {"data": {"x": "1"}}, ct="application/merge-patch+json")
        http("PATCH", base + "/a", {"metadata": {"labels": {"w": "2"}}},
             ct="application/merge-patch+json")
        http("DELETE", base + "/a")
        evs = http.watch(f"{base}?watch=1&resourceVersion={rv0}&timeoutSeconds=1")
        assert [e["type"] for e in evs] == ["MODIFIED", "MODIFIED", "DELETED"]
        # with a selector, leaving it is a DELETED event
        evs = http.watch(f"/api/v1/watch/namespaces/default/configmaps?labelSelector=w%3D1"
                         f"&resourceVersion={rv0}&timeoutSeconds=1")
        assert [e["type"] for e in evs] == ["MODIFIED", "DELETED"]
        # bookmarks while idle
        evs = http.watch(f"{base}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1")
        assert evs and all(e["type"] == "BOOKMARK" for e in evs)
        assert evs[0]["object"]["metadata"]["resourceVersion"]
        # history is bounded: an old resourceVersion gets 410
        for i in range(30):
            http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": f"n{i}"}})
        evs = http.watch(f"{base}?watch=1&resourceVersion={rv0}&timeoutSeconds=1")
        assert evs[0]["type"] == "ERROR" and evs[0]["object"]["code"] == 410
        # no resourceVersion: synthetic ADDED for what exists
        evs = http.watch(f"{base}?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dn3")
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in evs] == [("ADDED", "n3")]


def test_finalizers_gc_and_namespace_deletion(http):
    base = "/api/v1/namespaces/default/configmaps"
    _, owner = http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "owner", "finalizers": ["x/keep"]}})
    for n in ("dep1", "dep2"):
        http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": n, "ownerReferences": [owner_ref(owner)]}})
    code, o = http("DELETE", base + "/owner")
    assert code == 200 and o["metadata"]["deletionTimestamp"]
    assert http("GET", base + "/dep1")[0] == 200  # owner still exists (finalizer)
    http("PATCH", base + "/owner", {"metadata": {"finalizers": None}},
         ct="application/merge-patch+json")
    assert http("GET", base + "/owner")[0] == 404
    assert http("GET", base + "/dep1")[0] == 404 and http("GET", base + "/dep2")[0] == 404

    # foreground: the owner waits for its dependents; orphan: dependents lose the reference
    _, owner = http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "fg"}})
    http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "fgdep", "finalizers": ["x/hold"],
                                     "ownerReferences": [owner_ref(owner)]}})
    _, o = http("DELETE", base + "/fg", {"propagationPolicy": "Foreground"})
    assert o["metadata"]["finalizers"] == ["foregroundDeletion"]
    _, dep = http("GET", base + "/fgdep")
    assert dep["metadata"]["deletionTimestamp"]
    http("PATCH", base + "/fgdep", [{"op": "remove", "path": "/metadata/finalizers"}],
         ct="application/json-patch+json")
    assert http("GET", base + "/fgdep")[0] == 404 and http("GET", base + "/fg")[0] == 404
    _, owner = http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "or"}})
    http("POST", base, {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "ordep", "ownerReferences": [owner_ref(owner)]}})
    http("DELETE", base + "/or?propagationPolicy=Orphan")
    _, dep = http("GET", base + "/ordep")
    assert http("GET", base + "/or")[0] == 404 and "ownerReferences" not in dep["metadata"]

    # pods: a bound pod waits for the kubelet; an unbound one goes at once
    http("POST", "/api/v1/nodes", ready_node("n1", taints=[
        {"key": "gpu", "value": "yes", "effect": "NoSchedule"}]))
    http("POST", "/api/v1/nodes", ready_node("n2"))
    http("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                        "metadata": {"name": "t"}})
    pbase = "/api/v1/namespaces/t/pods"
    http("POST", pbase, pod("bound", node_selector={"kubernetes.io/hostname": "n1"},
                            tolerations=[{"key": "gpu", "operator": "Exists"}]))
    http("POST", pbase, pod("nofit", node_selector={"kubernetes.io/hostname": "n1"}))
    _, b = http("GET", pbase + "/bound")
    assert b["spec"]["nodeName"] == "n1"
    assert {c["type"]: c["status"] for c in b["status"]["conditions"]} == {"PodScheduled": "True"}
    _, nf = http("GET", pbase + "/nofit")
    assert "nodeName" not in nf["spec"]
    assert nf["status"]["conditions"][0]["reason"] == "Unschedulable"
    _, b = http("DELETE", pbase + "/bound")
    assert b["metadata"]["deletionGracePeriodSeconds"] == 30
    code, _ = http("DELETE", pbase + "/nofit")
    assert code == 200 and http("GET", pbase + "/nofit")[0] == 404

    # namespace deletion deletes the contents, then the namespace
    http("POST", "/api/v1/namespaces/t/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                                     "metadata": {"name": "inside"}})
    _, ns = http("DELETE", "/api/v1/namespaces/t")
    assert ns["status"]["phase"] == "Terminating"
    assert http("GET", "/api/v1/namespaces/t/configmaps/inside")[0] == 404
    code, st = http("POST", "/api/v1/namespaces/t/configmaps",
                    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "late"}})
    assert code == 403
    assert http("GET", "/api/v1/namespaces/t")[0] == 200  # the bound pod is still terminating
    assert http("DELETE", pbase + "/bound?gracePeriodSeconds=0")[0] == 200
    assert http("GET", "/api/v1/namespaces/t")[0] == 404


def test_discovery(http):
    code, v = http("GET", "/version")
    assert code == 200 and v["major"] == "1"
    _, core = http("GET", "/api/v1")
    names = {r["name"]: r for r in core["resources"]}
    assert names["pods/eviction"]["group"] == "policy" and names["pods"]["shortNames"] == ["po"]
    assert "pods/status" in names and names["nodes"]["namespaced"] is False
    _, groups = http("GET", "/apis")
    assert {"apps", "policy", "coordination.k8s.io", "apiextensions.k8s.io"} <= \
        {g["name"] for g in groups["groups"]}
    http("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", NODESET_CRD)
    _, shoal = http("GET", "/apis/shoal.dev/v1alpha1")
    assert {r["name"] for r in shoal["resources"]} == {"nodesets", "nodesets/status",
                                                        "nodesets/scale"}
    assert http("GET", "/healthz", raw=True) == (200, b"ok")
    assert http("DELETE", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                          "nodesets.shoal.dev")[0] == 200
    assert http("GET", "/apis/shoal.dev/v1alpha1")[0] == 404


def test_scheduler_spreads_and_binding(http):
    for n in ("n1", "n2"):
        http("POST", "/api/v1/nodes", ready_node(n))
    http("POST", "/api/v1/nodes", dict(ready_node("n3"), spec={"unschedulable": True}))
    base = "/api/v1/namespaces/default/pods"
    for i in range(4):
        http("POST", base, pod(f"p{i}"))
    _, lst = http("GET", "/api/v1/pods")
    nodes = sorted(p["spec"]["nodeName"] for p in lst["items"])
    assert nodes == ["n1", "n1", "n2", "n2"]  # fewest pods first, never the cordoned node
    _, lst = http("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1")
    assert len(lst["items"]) == 2
    # pods for another scheduler wait for a Binding
    http("POST", base, pod("custom", schedulerName="other"))
    _, p = http("GET", base + "/custom")
    assert "nodeName" not in p["spec"]
    code, _ = http("POST", base + "/custom/binding",
                   {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "custom"},
                    "target": {"apiVersion": "v1", "kind": "Node", "name": "n3"}})
    assert code == 201
    _, p = http("GET", base + "/custom")
    assert p["spec"]["nodeName"] == "n3"
    code, st = http("POST", base + "/custom/binding",
                    {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "custom"},
                     "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})
    assert (code, st["reason"]) == (409, "Conflict")


def test_strategic_merge_lists_and_pod_immutability(http):
    http("POST", "/api/v1/nodes", ready_node("n1"))
    http("POST", "/api/v1/namespaces/default/pods", pod("p"))
    mark_running(http, "default", "p")  # status.conditions merged by type
    _, got = http("GET", "/api/v1/namespaces/default/pods/p")
    assert sorted(c["type"] for c in got["status"]["conditions"]) == ["PodScheduled", "Ready"]
    code, st = http("PATCH", "/api/v1/namespaces/default/pods/p",
                    {"spec": {"containers": [{"name": "c", "command": ["x"]}]}},
                    ct="application/strategic-merge-patch+json")
    assert (code, st["reason"]) == (422, "Invalid") and "Forbidden" in st["message"]
    code, got = http("PATCH", "/api/v1/namespaces/default/pods/p",
                     {"spec": {"containers": [{"name": "c", "image": "busybox:2"}]}},
                     ct="application/strategic-merge-patch+json")
    assert code == 200 and got["spec"]["containers"][0]["image"] == "busybox:2"

    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
               "metadata": {"labels": {"a": "b"}},
               "spec": {"containers": [{"name": "c", "image": "i"},
                                       {"name": "side", "image": "i",
                                        "env": [{"name": "A", "value": "1"}]}]}}}}
    path = "/apis/apps/v1/namespaces/default/deployments"
    http("POST", path, dep)
    code, got = http("PATCH", path + "/d",
                     {"metadata": {"finalizers": ["a/b"]}, "spec": {"template": {"spec": {
                         "containers": [{"name": "c", "$patch": "delete"},
                                        {"name": "side", "env": [{"name": "B",
                                                                  "value": "2"}]}]}}}},
                     ct="application/strategic-merge-patch+json")
    assert code == 200
    containers = got["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["side"]
    assert [e["name"] for e in containers[0]["env"]] == ["A", "B"]
    _, got = http("PATCH", path + "/d", {"metadata": {"finalizers": ["c/d"]}},
                  ct="application/strategic-merge-patch+json")
    assert got["metadata"]["finalizers"] == ["a/b", "c/d"]
    # a JSON merge patch replaces lists
    _, got = http("PATCH", path + "/d", {"metadata": {"finalizers": ["x/y"]}},
                  ct="application/merge-patch+json")
    assert got["metadata"]["finalizers"] == ["x/y"]
