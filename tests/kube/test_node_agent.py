"""The node agent (tests/k8s/kubelet_sim.py, OCI mode) against a REAL control plane
(tests/kube/controlplane.py: etcd, kube-apiserver with Node,RBAC authorization and
NodeRestriction, kube-controller-manager, kube-scheduler): nodes register and heartbeat as
system:node:NAME, the real scheduler binds pods to them, and the pods run as podman containers.

One control plane and two node agents for the module (a third node comes and goes in the
NotReady test); each test works in its own namespace. Needs root, podman, busybox-static and
the binaries of scripts/build-k8s.sh; skipped otherwise (failed under SHOAL_REQUIRE_KUBE). Everything is removed afterwards
(containers, netns, the bridge, processes), also when a test fails; every wait is bounded.
SHOAL_KEEP_DIRS keeps the directory with the control plane's and agents' logs.
"""

import base64
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from conftest import _require  # noqa: E402
from controlplane import ControlPlane, k8s_bin_dir  # noqa: E402
import nodes  # noqa: E402

BRIDGE = "shktest0"  # its own bridge and CIDR: other suites' bridges are left alone
CIDR = "10.251.0.0/16"
NODES = ["kn-1", "kn-2"]


def _require_all():
    """Skips (fails under SHOAL_REQUIRE_KUBE, see conftest._require) without a prerequisite."""
    _require("root", os.geteuid() == 0, "run as root (network namespaces, podman)")
    _require("podman", shutil.which("podman"), "apt-get install podman")
    _require("busybox-static", Path("/usr/bin/busybox").exists(),
             "apt-get install busybox-static (the test image)")
    missing = [b for b in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                           "kubectl") if not (k8s_bin_dir() / b).exists()]
    _require("the Kubernetes control plane", not missing, "run scripts/build-k8s.sh")


def wait_for(pred, timeout, what, interval=0.5):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class Cluster:
    def __init__(self, cp, agents, root, image):
        self.cp, self.agents, self.root, self.image = cp, agents, root, image
        self.namespaces = []

    # --- API as the admin -------------------------------------------------------------------

    def api(self, method, path, body=None, ctype="application/json", token=None, cafile=None,
            expect=(200, 201, 202)):
        ctx = ssl.create_default_context(cafile=str(cafile or self.cp.pki.ca))
        headers = {"Accept": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        else:
            ctx.load_cert_chain(*map(str, self.cp.admin_cert))
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = ctype
        req = urllib.request.Request(self.cp.url + path, data=data, method=method,
                                     headers=headers)
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=20) as r:
                status, raw = r.status, r.read()
        except urllib.error.HTTPError as e:
            status, raw = e.code, e.read()
        out = json.loads(raw) if raw.strip() else {}
        if expect and status not in expect:
            raise AssertionError(f"{method} {path}: HTTP {status}: {raw[:600]!r}")
        return status, out

    def get(self, path):
        status, body = self.api("GET", path, expect=None)
        return body if status == 200 else None

    def apply(self, obj):
        self.cp.kubectl("apply", "-f", "-", input=json.dumps(obj))

    def pod(self, ns, name):
        return self.get(f"/api/v1/namespaces/{ns}/pods/{name}")

    def exec(self, ns, pod, container, argv, **kw):
        return nodes.exec_in_pod(self.cp, ns, pod, container, argv, **kw)

    def make_namespace(self, labels=None):
        name = f"t-{uuid.uuid4().hex[:8]}"
        self.namespaces.append(name)
        self.apply({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "labels": labels or {}}})
        # The ServiceAccount admission plugin refuses pods until `default` exists.
        wait_for(lambda: self.get(f"/api/v1/namespaces/{name}/serviceaccounts/default"), 60,
                 f"ServiceAccount default in {name}")
        return name

    def wait_running(self, ns, name, timeout=120, ready=True):
        def ok():
            p = self.pod(ns, name)
            st = (p or {}).get("status") or {}
            conds = {c["type"]: c["status"] for c in st.get("conditions") or []}
            if st.get("phase") == "Running" and (not ready or conds.get("Ready") == "True"):
                return p
            return None
        return wait_for(ok, timeout, f"pod {ns}/{name} running" + (" and ready" if ready else ""))

    def container_status(self, ns, name, container):
        st = (self.pod(ns, name) or {}).get("status") or {}
        for cs in (st.get("containerStatuses") or []) + (st.get("initContainerStatuses") or []):
            if cs["name"] == container:
                return cs
        return None

    def pod_manifest(self, name, ns, containers, **spec):
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                "spec": dict({"containers": containers, "terminationGracePeriodSeconds": 5},
                             **spec)}

    def sleeper(self, name="c", **extra):
        c = {"name": name, "image": self.image, "imagePullPolicy": "Never",
             "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]}
        c.update(extra)
        return c


@pytest.fixture(scope="module")
def cluster():
    _require_all()
    keep = bool(os.environ.get("SHOAL_KEEP_DIRS"))
    root = Path(tempfile.mkdtemp(prefix="shoal-kube-agent-"))
    image = nodes.ensure_test_image()
    gw = nodes.ensure_bridge(BRIDGE, CIDR)
    cp = ControlPlane(root / "cp", advertise=gw)
    agents = None
    try:
        cp.start(timeout=180)
        agents = nodes.NodeAgents(cp, root / "nodes", NODES, bridge=BRIDGE, cidr=CIDR,
                                  cpus=4, memory="8Gi").start(timeout=180)
        yield Cluster(cp, agents, root, image)
    finally:
        try:
            if agents is not None:
                agents.stop()
        finally:
            cp.stop()
            nodes.remove_bridge(BRIDGE)
            if keep:
                print(f"kept {root}")
            else:
                shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(autouse=True)
def delete_namespaces(cluster):
    """Each test's namespaces go afterwards (their pods stopped by the agents meanwhile)."""
    yield
    for ns in cluster.namespaces:
        cluster.cp.kubectl("delete", "namespace", ns, "--wait=false", check=False)
    cluster.namespaces.clear()


# ------------------------------------------------------------------------------------------

def test_nodes_register_ready_with_owned_lease(cluster):
    for name in NODES:
        node = cluster.get(f"/api/v1/nodes/{name}")
        labels = node["metadata"]["labels"]
        assert labels["kubernetes.io/hostname"] == name
        assert labels["kubernetes.io/os"] == "linux" and labels["kubernetes.io/arch"]
        st = node["status"]
        assert st["capacity"]["cpu"] == "4" and st["allocatable"]["memory"] == "8Gi"
        assert {c["type"]: c["status"] for c in st["conditions"]}["Ready"] == "True"
        assert st["nodeInfo"]["containerRuntimeVersion"].startswith("podman://")
        assert {"type": "InternalIP", "address": nodes.gateway(CIDR)} in st["addresses"]
        lease = cluster.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"
                            f"{name}")
        assert lease["spec"]["holderIdentity"] == name
        assert lease["metadata"]["ownerReferences"] == [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node["metadata"]["uid"]}]
    # The node identity is confined by the Node authorizer: cluster-wide reads are refused
    # (what the agent needs of them it reads with its cluster-DNS identity).
    nk = cluster.cp.node_kubeconfig(NODES[0])
    r = cluster.cp.kubectl("get", "pods", "-A", kubeconfig=nk, check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr.lower()
    r = cluster.cp.kubectl("get", "node", NODES[1], kubeconfig=nk, check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr.lower()


def test_deployment_scheduled_onto_our_nodes_runs_in_containers(cluster):
    ns = cluster.make_namespace()
    labels = {"app": "web"}
    cluster.apply({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"replicas": 2, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {
                     "terminationGracePeriodSeconds": 5,
                     "topologySpreadConstraints": [{
                         "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                         "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {
                             "matchLabels": labels}}],
                     "containers": [{
                         "name": "web", "image": cluster.image, "imagePullPolicy": "Never",
                         "command": ["httpd", "-f", "-p", "8080", "-h", "/etc"],
                         "ports": [{"name": "http", "containerPort": 8080}],
                         "resources": {"requests": {"cpu": "100m", "memory": "16Mi"},
                                       "limits": {"memory": "64Mi"}},
                         "readinessProbe": {"httpGet": {"path": "/os-release", "port": "http"},
                                            "periodSeconds": 1}}]}}}})
    cluster.apply({"apiVersion": "v1", "kind": "Service",
                   "metadata": {"name": "web", "namespace": ns},
                   "spec": {"selector": labels, "ports": [{"port": 8080}]}})
    wait_for(lambda: (cluster.get(f"/apis/apps/v1/namespaces/{ns}/deployments/web") or {})
             .get("status", {}).get("availableReplicas") == 2, 180,
             "the Deployment's 2 replicas available")
    pods = cluster.get(f"/api/v1/namespaces/{ns}/pods?labelSelector=app%3Dweb")["items"]
    assert sorted(p["spec"]["nodeName"] for p in pods) == NODES  # the real scheduler spread them
    host_pidns = os.readlink("/proc/self/ns/pid")
    for p in pods:
        name, st = p["metadata"]["name"], p["status"]
        assert st["podIP"] != st["hostIP"] and st["hostIP"] == nodes.gateway(CIDR)
        assert {c["type"]: c["status"] for c in st["conditions"]} == {
            "PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
            "ContainersReady": "True", "PodScheduled": "True"}
        cs = st["containerStatuses"][0]
        assert cs["containerID"].startswith("podman://") and cs["imageID"].startswith("sha256:")
        # The image's filesystem, a PID namespace of its own, an OCI runtime's process.
        r = cluster.exec(ns, name, "web", ["cat", "/etc/os-release"])
        assert "ID=shoal-test" in r.stdout
        r = cluster.exec(ns, name, "web", ["sh", "-c", "readlink /proc/1/ns/pid; "
                                           "cat /proc/1/cmdline | tr '\\0' ' '; echo; hostname"])
        pidns, cmdline, hostname = r.stdout.split("\n")[:3]
        assert pidns != host_pidns and cmdline.startswith("httpd -f -p 8080")
        assert hostname == name
        cid = cs["containerID"][len("podman://"):]
        pid = subprocess.run(["podman", "inspect", "--format", "{{.State.Pid}}", cid],
                             capture_output=True, text=True, check=True).stdout.strip()
        ppid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
        assert Path(f"/proc/{ppid}/comm").read_text().strip() == "conmon"
        # The memory limit is a real cgroup (v1) limit of the container.
        r = cluster.exec(ns, name, "web", ["cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes"])
        assert r.stdout.strip() == str(64 * 2 ** 20)
        # Environment: the Service's variables, the API server's address on the bridge.
        r = cluster.exec(ns, name, "web", ["env"])
        env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        assert env["KUBERNETES_SERVICE_HOST"] == nodes.gateway(CIDR)
        assert env["KUBERNETES_SERVICE_PORT"] == cluster.cp.url.rsplit(":", 1)[1]
        assert env["WEB_SERVICE_PORT"] == "8080" and env["WEB_SERVICE_HOST"]
    # Pod to pod over the bridge, by cluster DNS names (/etc/hosts) and by IP.
    a, b = pods[0]["metadata"]["name"], pods[1]["metadata"]["name"]
    hosts = cluster.exec(ns, a, "web", ["cat", "/etc/hosts"]).stdout
    assert f"web.{ns}.svc.cluster.local" in hosts and "kubernetes.default.svc" in hosts
    r = cluster.exec(ns, a, "web", ["wget", "-q", "-O-",
                                    f"http://{pods[1]['status']['podIP']}:8080/os-release"])
    assert "shoal-test" in r.stdout, r.stderr
    events = cluster.get(f"/api/v1/namespaces/{ns}/events")["items"]
    reasons = {(e["involvedObject"]["name"], e["reason"]) for e in events}
    assert {(a, "Scheduled"), (a, "Pulled"), (a, "Created"), (a, "Started")} <= reasons
    del b


def test_missing_image_waits_as_kubelet_reports_it(cluster):
    ns = cluster.make_namespace()
    cluster.apply(cluster.pod_manifest("never", ns, [
        {"name": "c", "image": "localhost/shoal-test/absent:1", "imagePullPolicy": "Never"}]))
    cluster.apply(cluster.pod_manifest("pull", ns, [
        {"name": "c", "image": "registry.invalid/absent:1"}]))

    def waiting(name):
        cs = cluster.container_status(ns, name, "c") or {}
        return (cs.get("state") or {}).get("waiting")

    w = wait_for(lambda: (waiting("never") or {}).get("reason") == "ErrImageNeverPull"
                 and waiting("never"), 60, "ErrImageNeverPull")
    assert w["message"] == ('Container image "localhost/shoal-test/absent:1" is not present '
                            "with pull policy of Never")
    wait_for(lambda: (waiting("pull") or {}).get("reason") in ("ErrImagePull",
                                                                "ImagePullBackOff"), 60,
             "ErrImagePull")
    assert cluster.pod(ns, "pull")["status"]["phase"] == "Pending"


def test_volumes_env_and_service_account_token(cluster):
    ns = cluster.make_namespace()
    cluster.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "app", "namespace": ns}})
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg",
                   "namespace": ns}, "data": {"app.conf": "color=blue\n", "mode": "fast"}})
    cluster.apply({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec",
                   "namespace": ns}, "stringData": {"password": "s3cret", "multi": "a\nb"}})
    c = cluster.sleeper(
        env=[{"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "sec",
                                                                  "key": "password"}}},
             {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "mode"}}},
             {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
             {"name": "MY_NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
             {"name": "GREETING", "value": "node $(MY_NODE)"}],
        envFrom=[{"prefix": "S_", "secretRef": {"name": "sec"}}],
        workingDir="/tmp",
        volumeMounts=[{"name": "cfg", "mountPath": "/etc/app"},
                      {"name": "sec", "mountPath": "/etc/sec"},
                      {"name": "all", "mountPath": "/etc/all"},
                      {"name": "scratch", "mountPath": "/scratch"}])
    init = {"name": "init", "image": cluster.image, "imagePullPolicy": "Never",
            "command": ["sh", "-c", "echo from-init > /scratch/init"],
            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}]}
    cluster.apply(cluster.pod_manifest("vol", ns, [c], serviceAccountName="app",
                                       initContainers=[init], volumes=[
        {"name": "cfg", "configMap": {"name": "cfg"}},
        {"name": "sec", "secret": {"secretName": "sec", "defaultMode": 0o400}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "all", "projected": {"sources": [
            {"configMap": {"name": "cfg", "items": [{"key": "mode", "path": "mode"}]}},
            {"downwardAPI": {"items": [{"path": "name",
                                        "fieldRef": {"fieldPath": "metadata.name"}}]}},
            {"serviceAccountToken": {"path": "vault-token", "audience": "vault",
                                     "expirationSeconds": 600}}]}}]))
    pod = cluster.wait_running(ns, "vol")
    sh = lambda script: cluster.exec(ns, "vol", "c", ["sh", "-c", script])  # noqa: E731
    out = sh("cat /etc/app/app.conf; cat /etc/sec/password; echo; stat -c %a /etc/sec/password;"
             " cat /etc/all/mode /etc/all/name; echo; pwd; echo $PASSWORD $MODE $MY_IP;"
             " echo $GREETING; echo \"$S_multi\"; cat /scratch/init;"
             " touch /etc/app/x 2>&1 || echo ro")
    lines = out.stdout.splitlines()
    assert lines[:4] == ["color=blue", "s3cret", "400", "fastvol"]
    assert lines[4] == "/tmp"
    assert lines[5] == f"s3cret fast {pod['status']['podIP']}"
    assert lines[6] == f"node {pod['spec']['nodeName']}"
    assert lines[7:10] == ["a", "b", "from-init"]
    init_st = cluster.container_status(ns, "vol", "init")["state"]["terminated"]
    assert init_st["exitCode"] == 0 and init_st["reason"] == "Completed"
    assert "Read-only file system" in out.stdout or lines[-1] == "ro"
    # The token kubelet projects for the pod's ServiceAccount: TokenRequest-made, bound to the
    # pod, accepted by the API server as system:serviceaccount:NS:app.
    sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount"
    token = sh(f"cat {sa_dir}/token").stdout.strip()
    assert sh(f"cat {sa_dir}/namespace").stdout == ns
    ca = cluster.root / f"ca-{ns}.crt"
    ca.write_text(sh(f"cat {sa_dir}/ca.crt").stdout)
    assert ca.read_text() == Path(cluster.cp.pki.ca).read_text()
    claims = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    assert claims["kubernetes.io"]["pod"]["uid"] == pod["metadata"]["uid"]
    # From the host, TLS verified with the pod's ca.crt at the address pods are given.
    env = dict(line.split("=", 1) for line in sh("env").stdout.splitlines() if "=" in line)
    ctx = ssl.create_default_context(cafile=str(ca))
    url = f"https://{env['KUBERNETES_SERVICE_HOST']}:{env['KUBERNETES_SERVICE_PORT']}"
    review = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
    req = urllib.request.Request(url + "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                 data=json.dumps(review).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    with urllib.request.urlopen(req, context=ctx, timeout=20) as r:
        who = json.loads(r.read())
    assert who["status"]["userInfo"]["username"] == f"system:serviceaccount:{ns}:app"
    # From inside the pod the API server is reachable at that address (busybox's own TLS
    # cannot negotiate with Go's for an ECDSA certificate, so a TCP connection only).
    r = sh("nc -w 5 $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT </dev/null && echo open")
    assert r.stdout.strip().endswith("open"), r.stderr
    # The projected token of another audience is not accepted by the API server.
    vault = sh("cat /etc/all/vault-token").stdout.strip()
    vclaims = json.loads(base64.urlsafe_b64decode(vault.split(".")[1] + "=="))
    assert vclaims["aud"] == ["vault"]
    status, _ = cluster.api("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                            review, token=vault, expect=None)
    assert status == 401
    # A changed ConfigMap reaches the volume (not the environment).
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg",
                   "namespace": ns}, "data": {"app.conf": "color=red\n", "mode": "fast"}})
    wait_for(lambda: sh("cat /etc/app/app.conf").stdout == "color=red\n", 60,
             "the ConfigMap's update in the volume")


def test_failing_liveness_probe_restarts_the_container(cluster):
    ns = cluster.make_namespace()
    c = cluster.sleeper(livenessProbe={"exec": {"command": ["test", "-e", "/tmp/never"]},
                                       "periodSeconds": 1, "failureThreshold": 2},
                        command=["sh", "-c", "echo hello from $HOSTNAME; trap 'exit 0' TERM; "
                                 "while true; do sleep 1; done"])
    cluster.apply(cluster.pod_manifest("live", ns, [c], terminationGracePeriodSeconds=2))
    first = wait_for(lambda: (cluster.container_status(ns, "live", "c") or {}).get(
        "containerID"), 120, "the first container")
    cs = wait_for(lambda: (lambda s: s if s and s["restartCount"] >= 2 else None)(
        cluster.container_status(ns, "live", "c")), 120, "restartCount >= 2")
    assert cs["lastState"]["terminated"]["exitCode"] in (0, 137, 143)
    cs = wait_for(lambda: (lambda s: s if s and "running" in s["state"] else None)(
        cluster.container_status(ns, "live", "c")), 60, "running again")
    assert cs["containerID"] != first
    events = cluster.get(f"/api/v1/namespaces/{ns}/events")["items"]
    assert any(e["reason"] == "Unhealthy" for e in events)
    # kubectl logs through the API server, which fetches them from the agent's port 10250
    # stand-in (TLS both ways with the cluster CA), the previous container's too.
    for extra in ([], ["--previous"]):
        r = cluster.cp.kubectl("logs", "-n", ns, "live", "-c", "c", *extra)
        assert r.stdout == "hello from live\n"


def test_graceful_delete_runs_prestop_then_stops(cluster):
    ns = cluster.make_namespace()
    mark = cluster.root / f"mark-{ns}"
    mark.mkdir()
    c = cluster.sleeper(
        command=["sh", "-c", "trap 'echo term >> /mark/log; exit 0' TERM; "
                 "while true; do sleep 1; done"],
        lifecycle={"preStop": {"exec": {"command": ["sh", "-c", "echo prestop >> /mark/log"]}}},
        volumeMounts=[{"name": "mark", "mountPath": "/mark"}])
    cluster.apply(cluster.pod_manifest("bye", ns, [c], terminationGracePeriodSeconds=20,
                                       volumes=[{"name": "mark", "hostPath": {
                                           "path": str(mark), "type": "Directory"}}]))
    pod = cluster.wait_running(ns, "bye")
    uid = pod["metadata"]["uid"]
    t0 = time.monotonic()
    cluster.cp.kubectl("delete", "pod", "bye", "-n", ns, "--grace-period=20", "--wait=false")
    wait_for(lambda: cluster.pod(ns, "bye") is None, 60, "the pod object gone")
    took = time.monotonic() - t0
    assert (mark / "log").read_text() == "prestop\nterm\n"
    assert took < 20  # the container exited on SIGTERM: no wait for the whole grace period
    left = subprocess.run(["podman", "ps", "-a", "-q", "--filter",
                           f"label=io.kubernetes.pod.uid={uid}"], capture_output=True,
                          text=True).stdout.split()
    assert left == []
    events = cluster.get(f"/api/v1/namespaces/{ns}/events")["items"]
    assert any(e["reason"] == "Killing" for e in events)


def test_pvc_bound_by_the_pv_controller_keeps_data_across_pods(cluster):
    ns = cluster.make_namespace()
    cluster.apply({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                   "metadata": {"name": "data", "namespace": ns},
                   "spec": {"storageClassName": "shoal-local", "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": "64Mi"}}}})
    # WaitForFirstConsumer: nothing happens before a pod uses the claim.
    time.sleep(2)
    assert cluster.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data")["status"][
        "phase"] == "Pending"

    def writer(name, script):
        c = cluster.sleeper(command=["sh", "-c", script + "; trap 'exit 0' TERM; "
                                     "while true; do sleep 1; done"],
                            volumeMounts=[{"name": "d", "mountPath": "/data"}])
        return cluster.pod_manifest(name, ns, [c], securityContext={"fsGroup": 3000}, volumes=[
            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}])

    cluster.apply(writer("one", "echo kept > /data/file"))
    cluster.wait_running(ns, "one")
    pvc = cluster.get(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/data")
    assert pvc["status"]["phase"] == "Bound"
    assert pvc["spec"]["volumeName"] == f"pvc-{pvc['metadata']['uid']}"
    assert pvc["metadata"]["annotations"].get("pv.kubernetes.io/bind-completed") == "yes"
    pv = cluster.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")
    assert pv["status"]["phase"] == "Bound"
    node = cluster.pod(ns, "one")["spec"]["nodeName"]
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0][
        "matchExpressions"][0]["values"] == [node]
    path = Path(pv["spec"]["hostPath"]["path"])
    assert (path / "file").read_text() == "kept\n"
    assert path.stat().st_gid == 3000  # fsGroup
    cluster.cp.kubectl("delete", "pod", "one", "-n", ns, "--grace-period=5")
    wait_for(lambda: cluster.pod(ns, "one") is None, 60, "pod one gone")
    cluster.apply(writer("two", "true"))
    cluster.wait_running(ns, "two")
    assert cluster.pod(ns, "two")["spec"]["nodeName"] == node  # the volume's node affinity
    assert cluster.exec(ns, "two", "c", ["cat", "/data/file"]).stdout == "kept\n"
    # Deleting the claim releases the volume; our provisioner deletes it and its directory.
    cluster.cp.kubectl("delete", "pod", "two", "-n", ns, "--grace-period=5")
    cluster.cp.kubectl("delete", "pvc", "data", "-n", ns, "--wait=false")
    wait_for(lambda: cluster.get(f"/api/v1/persistentvolumes/{pv['metadata']['name']}") is None,
             120, "the released volume deleted")
    assert not path.exists()


def test_run_as_non_root_pod_in_a_restricted_namespace(cluster):
    ns = cluster.make_namespace({"pod-security.kubernetes.io/enforce": "restricted"})
    restricted = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                  "runAsNonRoot": True, "runAsUser": 1000, "runAsGroup": 1000,
                  "seccompProfile": {"type": "RuntimeDefault"}}
    # PodSecurity admission refuses a pod that is not restricted...
    bad = cluster.pod_manifest("bad", ns, [cluster.sleeper()])
    r = cluster.cp.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert r.returncode != 0 and "violates PodSecurity" in r.stderr
    # ... and admits one that is; it runs as its uid, without privileges.
    ok = cluster.pod_manifest("ok", ns, [cluster.sleeper(securityContext=restricted)])
    cluster.apply(ok)
    cluster.wait_running(ns, "ok")
    out = cluster.exec(ns, "ok", "c", ["sh", "-c", "id -u; id -g; grep -E "
                                       "'^(NoNewPrivs|Seccomp|CapEff):' /proc/1/status"]).stdout
    lines = out.split("\n")
    assert lines[:2] == ["1000", "1000"]
    status = dict(line.split(":\t") for line in lines[2:] if ":\t" in line)
    assert status == {"CapEff": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"}
    # Without privileges it may still bind a port below 1024 (the sandbox's
    # net.ipv4.ip_unprivileged_port_start=0, as containerd 2, CRI-O and Docker set it).
    r = cluster.exec(ns, "ok", "c", ["sh", "-c", "httpd -p 80 -h /tmp && echo bound"])
    assert r.stdout.strip() == "bound", r.stderr
    # runAsNonRoot with an image that runs as root and no runAsUser: kubelet's refusal.
    sc = dict(restricted)
    del sc["runAsUser"], sc["runAsGroup"]
    cluster.apply(cluster.pod_manifest("root", ns, [cluster.sleeper(securityContext=sc)]))
    w = wait_for(lambda: ((cluster.container_status(ns, "root", "c") or {}).get("state") or {})
                 .get("waiting", {}).get("reason") == "CreateContainerConfigError"
                 and cluster.container_status(ns, "root", "c")["state"]["waiting"], 60,
                 "CreateContainerConfigError")
    assert w["message"].startswith("container has runAsNonRoot and image will run as root")


def test_stopped_heartbeats_make_the_node_not_ready(cluster):
    name = "kn-lost"
    agents = cluster.agents
    try:
        agents.add(name, timeout=120)
        agents.pause(name)
        t0 = time.monotonic()
        # node-monitor-grace-period is 20 s in the fixture (kube-controller-manager flag).
        cond = wait_for(lambda: (lambda c: c if c and c["status"] != "True" else None)(
            next((c for c in (cluster.get(f"/api/v1/nodes/{name}") or {}).get(
                "status", {}).get("conditions", []) if c["type"] == "Ready"), None)),
            120, "the node-lifecycle controller marking the Node not ready")
        assert cond["status"] == "Unknown" and cond["reason"] == "NodeStatusUnknown"
        assert time.monotonic() - t0 >= 10
        taints = [t["key"] for t in cluster.get(f"/api/v1/nodes/{name}")["spec"].get(
            "taints") or []]
        assert "node.kubernetes.io/unreachable" in taints
        agents.resume(name)
        agents.wait_ready(name, 120)
    finally:
        agents.stop_node(name)
        cluster.cp.kubectl("delete", "node", name, "--wait=false", check=False)


def test_host_network_pod_uses_the_node_network(cluster):
    ns = cluster.make_namespace()
    cluster.apply(cluster.pod_manifest("hostnet", ns, [cluster.sleeper()], hostNetwork=True))
    pod = cluster.wait_running(ns, "hostnet")
    assert pod["status"]["podIP"] == pod["status"]["hostIP"] == nodes.gateway(CIDR)
    out = cluster.exec(ns, "hostnet", "c", ["cat", "/proc/net/dev"]).stdout
    assert BRIDGE in out  # the host's interfaces
    assert cluster.exec(ns, "hostnet", "c", ["hostname"]).stdout.strip() == os.uname().nodename


def test_agents_were_never_refused_by_the_api_server(cluster):
    """Everything the agents did (as their nodes, and with their cluster-DNS and storage
    identities) was allowed by the Node authorizer, NodeRestriction and RBAC; the only
    refusals are events for namespaces being deleted, which a real kubelet meets too. (Run
    last: it reads the logs of the whole module.)"""
    refused = []
    for log in sorted(cluster.agents.root.glob("*.log")):
        for line in log.read_text(errors="replace").splitlines():
            if ("HTTP 401" in line or "HTTP 403" in line) and "being terminated" not in line:
                refused.append(f"{log.name}: {line[:300]}")
    assert refused == []
