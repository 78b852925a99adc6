"""shoal-operator's I/O side: leader election on a Lease (one leader; a successor takes over when
the leader dies; a graceful stop hands the lease back), watches and reconciles against the fake
Kubernetes API server (a Controller CR yields the objects the planner asks for, and a spec change
updates them), the probe endpoints, and the operator's Shoal API client (JWT over Shoal's RPC)
against a real cluster: list nodes with a running job, drain, undrain, comment, a wrong key."""

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

from conftest import REPO, SBIN, http_status, wait_until

sys.path.insert(0, str(REPO))
from tests.k8s.fakekube import FakeKube  # noqa: E402

OPERATOR = SBIN / "shoal-operator"
NS = "hpc"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Api:
    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None, ctype="application/json", ok404=False):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": ctype} if data else {})
        try:
            with urllib.request.urlopen(req, timeout=15) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            if e.code == 404 and ok404:
                return None
            raise AssertionError(f"{method} {path}: {e.code} {e.read().decode()}") from None

    def lease(self, ns="default", name="shoal-operator"):
        return self.call("GET", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}",
                         ok404=True)


@pytest.fixture
def kube(tmp_path):
    k = FakeKube().start()
    procs = []
    api = Api(k.url)
    api.tmp = tmp_path
    api.procs = procs
    api.kubeconfig = tmp_path / "kubeconfig"
    api.kubeconfig.write_text(k.kubeconfig(namespace=NS))
    yield api
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(10)
    k.stop()


def start_operator(api, name, *extra):
    log = open(api.tmp / f"{name}.log", "ab")
    p = subprocess.Popen([str(OPERATOR), *extra], stdout=log, stderr=subprocess.STDOUT)
    log.close()
    api.procs.append(p)
    return p


def log_of(api, name):
    try:
        return (api.tmp / f"{name}.log").read_text()
    except OSError:
        return ""


def holder(api):
    lease = api.lease()
    return lease and lease["spec"].get("holderIdentity")


def test_leader_election_takeover_and_release(kube):
    apply_crds(kube)  # without its CRDs the operator is alive but never ready
    common = ["--api", kube.url, "--leader-elect", "--lease-namespace", "default",
              "--lease-duration-seconds", "4", "--resync-seconds", "5"]
    pa, pb = free_port(), free_port()
    a = start_operator(kube, "a", *common, "--identity", "op-a", "--health-port", str(pa))
    wait_until(lambda: holder(kube) == "op-a", 20, "op-a to acquire the lease")
    b = start_operator(kube, "b", *common, "--identity", "op-b", "--health-port", str(pb))
    wait_until(lambda: http_status(pb, "/livez") == 200, 20, "op-b's /livez")
    lease = kube.lease()
    assert lease["spec"]["leaseDurationSeconds"] == 4
    assert lease["spec"]["renewTime"].endswith("Z") and "." in lease["spec"]["renewTime"]
    first_renew = lease["spec"]["renewTime"]
    # The leader renews; the standby waits and stays out.
    wait_until(lambda: kube.lease()["spec"]["renewTime"] != first_renew, 10, "a renewal")
    time.sleep(2)
    assert holder(kube) == "op-a"
    assert "acquired lease" not in log_of(kube, "b")
    wait_until(lambda: http_status(pa, "/readyz") == 200, 20, "the leader's /readyz")
    assert http_status(pa, "/nope") == 404

    # The leader dies without releasing: the standby takes over once the lease expires.
    transitions = kube.lease()["spec"].get("leaseTransitions", 0)
    a.send_signal(signal.SIGKILL)
    a.wait(10)
    t0 = time.time()
    wait_until(lambda: holder(kube) == "op-b", 20, "op-b to take over")
    assert time.time() - t0 >= 1.0, "took over a lease that had not expired"
    assert kube.lease()["spec"]["leaseTransitions"] == transitions + 1
    wait_until(lambda: "acquired lease" in log_of(kube, "b"), 5, "op-b to log its leadership")

    # A graceful stop hands the lease back at once.
    b.send_signal(signal.SIGTERM)
    assert b.wait(20) == 0, log_of(kube, "b")
    assert holder(kube) == "", kube.lease()


def apply_crds(api):
    for f in sorted((REPO / "deploy" / "crds").glob("shoal.dev_*.yaml")):
        crd = yaml.safe_load(f.read_text())
        api.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    wait_until(lambda: api.call("GET", f"/apis/shoal.dev/v1alpha1/namespaces/{NS}/controllers",
                                ok404=True) is not None, 10, "the CRDs to be served")


def owned(api, kind_path, name):
    return api.call("GET", f"/api/v1/namespaces/{NS}/{kind_path}/{name}", ok404=True)


def test_operator_reconciles_controller_from_watch(kube):
    kube.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    apply_crds(kube)
    key = base64.b64encode(os.urandom(32)).decode()
    for name, k in (("shoal-jwt", "jwt.key"), ("shoal-key", "slurm.key")):
        kube.call("POST", f"/api/v1/namespaces/{NS}/secrets",
                  {"metadata": {"name": name}, "type": "Opaque", "data": {k: key}})
    port = free_port()
    # Through a kubeconfig this time (the --api path is covered above).
    start_operator(kube, "op", "--kubeconfig", str(kube.kubeconfig), "--namespace", NS,
                   "--resync-seconds", "5", "--health-port", str(port), "-v")
    wait_until(lambda: http_status(port, "/readyz") == 200, 30, "the operator's watches to sync")
    ctl = {"apiVersion": "shoal.dev/v1alpha1", "kind": "Controller",
           "metadata": {"name": "c", "namespace": NS},
           "spec": {"clusterName": "k8s", "jwtKeyRef": {"name": "shoal-jwt", "key": "jwt.key"},
                    "slurmKeyRef": {"name": "shoal-key", "key": "slurm.key"},
                    "extraConf": "MaxJobCount=1000"}}
    created = kube.call("POST", f"/apis/shoal.dev/v1alpha1/namespaces/{NS}/controllers", ctl)
    uid = created["metadata"]["uid"]

    def config_map():
        return owned(kube, "configmaps", "c-config")

    wait_until(lambda: config_map() is not None, 30,
               "the operator to create the controller's ConfigMap\n" + log_of(kube, "op"))
    cm = config_map()
    labels = cm["metadata"]["labels"]
    assert labels["app.kubernetes.io/managed-by"] == "shoal-operator"
    assert labels["app.kubernetes.io/instance"] == "c"
    assert cm["metadata"]["ownerReferences"][0]["uid"] == uid
    first_hash = cm["metadata"]["annotations"]["shoal.dev/spec-hash"]
    assert "MaxJobCount=1000" in json.dumps(cm["data"])
    wait_until(lambda: owned(kube, "services", "c") is not None, 20, "the controller Service")
    wait_until(lambda: owned(kube, "pods", "c-0") is not None, 20, "the controller pod")

    # A spec change arrives by watch and replaces the ConfigMap (new hash, same object).
    live = kube.call("GET", f"/apis/shoal.dev/v1alpha1/namespaces/{NS}/controllers/c")
    live["spec"]["extraConf"] = "MaxJobCount=2000"
    kube.call("PUT", f"/apis/shoal.dev/v1alpha1/namespaces/{NS}/controllers/c", live)
    wait_until(lambda: "MaxJobCount=2000" in json.dumps(config_map()["data"]), 20,
               "the ConfigMap update\n" + log_of(kube, "op"))
    cm2 = config_map()
    assert cm2["metadata"]["annotations"]["shoal.dev/spec-hash"] != first_hash
    assert cm2["metadata"]["uid"] == cm["metadata"]["uid"]
    # The operator's own /metrics counts what it did (OpenMetrics, on the probe port).
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
        assert r.headers["Content-Type"].startswith("application/openmetrics-text")
    values = dict(line.rsplit(" ", 1) for line in text.splitlines()
                  if line and not line.startswith("#"))
    assert values["shoal_operator_leader"] == "1"
    assert int(values["shoal_operator_reconciles_total"]) >= 2
    assert int(values["shoal_operator_actions_total"]) >= 5
    assert text.endswith("# EOF\n")

    # An owned object deleted behind the operator's back comes back (watch on owned kinds).
    kube.call("DELETE", f"/api/v1/namespaces/{NS}/configmaps/c-config")
    wait_until(lambda: config_map() is not None and config_map()["metadata"]["uid"] !=
               cm["metadata"]["uid"], 20, "the ConfigMap to be recreated")


# --- the Shoal API client against a real cluster -----------------------------------------------


def shoal_api(c, key_path, *args, check=True):
    cmd = [str(OPERATOR), "shoal-api", "--controller-address",
           f"127.0.0.1:{c.controller_port()}", "--jwt-key-file", str(key_path), *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check:
        assert r.returncode == 0, f"{args}: {r.stdout}{r.stderr}"
    return r


def test_shoal_api_over_rpc_with_jwt(cluster, tmp_path):
    key = os.urandom(32)
    key_path = tmp_path / "jwt_hs256.key"
    key_path.write_bytes(key)
    os.chmod(key_path, 0o600)
    c = cluster(nodes=2, cpus=2, conf=["AuthAltTypes=auth/jwt",
                                       f"AuthAltParameters=jwt_key={key_path}"])
    shoal_api(c, key_path, "ping")
    job = c.sbatch(["-w", "n1", "-t", "5", "--wrap", "sleep 300"])
    wait_until(lambda: c.job_state(job) == "RUNNING", 30, "the job to start")

    nodes = {n["name"]: n for n in json.loads(shoal_api(c, key_path, "nodes").stdout)}
    assert set(nodes) == {"n1", "n2"}
    assert nodes["n1"]["running_jobs"] == 1
    assert nodes["n1"]["base_state"] in ("ALLOCATED", "MIXED")
    assert nodes["n1"]["latest_job_end"] > time.time() + 200  # start + 5 minutes
    assert nodes["n2"]["running_jobs"] == 0
    assert nodes["n2"]["base_state"] == "IDLE"
    assert nodes["n2"]["flags"] == []

    # Drain and undrain, as the operator does on scale-in.
    shoal_api(c, key_path, "drain", "n1", "shoal-operator: scale-in")
    show = c.run(["scontrol", "show", "node", "n1"]).stdout
    assert "DRAIN" in show and "Reason=shoal-operator: scale-in" in show, show
    nodes = {n["name"]: n for n in json.loads(shoal_api(c, key_path, "nodes").stdout)}
    assert "DRAIN" in nodes["n1"]["flags"]
    assert nodes["n1"]["reason"] == "shoal-operator: scale-in"
    assert nodes["n1"]["running_jobs"] == 1  # the drain killed nothing
    assert c.job_state(job) == "RUNNING"
    shoal_api(c, key_path, "undrain", "n1")
    show = c.run(["scontrol", "show", "node", "n1"]).stdout
    assert "DRAIN" not in show, show

    # The pod link lives in the node's Comment.
    link = json.dumps({"namespace": "hpc", "podName": "w-1", "node": "k1"})
    shoal_api(c, key_path, "comment", "n2", link)
    nodes = {n["name"]: n for n in json.loads(shoal_api(c, key_path, "nodes").stdout)}
    assert json.loads(nodes["n2"]["comment"]) == json.loads(link)

    # A wrong key is refused: an error value, nothing changed.
    bad = tmp_path / "bad.key"
    bad.write_bytes(os.urandom(32))
    r = shoal_api(c, bad, "drain", "n2", "shoal-operator: should not happen", check=False)
    assert r.returncode == 1
    assert "auth" in r.stderr.lower() or "credential" in r.stderr.lower(), r.stderr
    assert "DRAIN" not in c.run(["scontrol", "show", "node", "n2"]).stdout
    r = shoal_api(c, bad, "nodes", check=False)
    assert r.returncode == 1 and r.stdout == ""
    # An unreachable controller is an error too (fail closed), not an empty node list.
    r = subprocess.run([str(OPERATOR), "shoal-api", "--controller-address", "127.0.0.1:1",
                        "--jwt-key-file", str(key_path), "nodes"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "Unable to contact" in r.stderr
    c.run(["scancel", str(job)])


def test_watch_relists_after_410_gone(tmp_path):
    # A tiny event history: a watch resumed from an older resourceVersion gets 410 Gone.
    k = FakeKube(history_size=3, bookmark_interval=1000).start()
    api = Api(k.url)
    api.tmp, api.procs = tmp_path, []
    try:
        api.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        apply_crds(api)
        api.call("POST", f"/api/v1/namespaces/{NS}/secrets",
                 {"metadata": {"name": "shoal-jwt"}, "data": {"jwt.key": "a2V5"}})
        # Resync far away: only the watches can bring the operator back.
        start_operator(api, "op", "--api", k.url, "--namespace", NS, "--resync-seconds", "600",
                       "--watch-timeout-seconds", "1", "--health-port", "0", "-v")
        api.call("POST", f"/apis/shoal.dev/v1alpha1/namespaces/{NS}/controllers",
                 {"apiVersion": "shoal.dev/v1alpha1", "kind": "Controller",
                  "metadata": {"name": "c"},
                  "spec": {"clusterName": "k8s", "jwtKeyRef": {"name": "shoal-jwt"}}})
        wait_until(lambda: owned(api, "configmaps", "c-config"), 30, "the ConfigMap")
        time.sleep(2)  # the operator's watches are idle now
        for i in range(8):  # events the operator does not watch push its versions out
            api.call("POST", f"/api/v1/namespaces/{NS}/secrets", {"metadata": {"name": f"x{i}"}})
        wait_until(lambda: "expired, listing again" in log_of(api, "op"), 10,
                   "a 410 on a resumed watch\n" + log_of(api, "op"))
        old_uid = owned(api, "configmaps", "c-config")["metadata"]["uid"]
        api.call("DELETE", f"/api/v1/namespaces/{NS}/configmaps/c-config")
        wait_until(lambda: (owned(api, "configmaps", "c-config") or {}).get("metadata", {})
                   .get("uid") not in (None, old_uid), 15,
                   "the re-established watch to see the deletion\n" + log_of(api, "op"))
    finally:
        for p in api.procs:
            p.kill()
            p.wait(10)
        k.stop()
