"""The kubelet simulator (tests/k8s/kubelet_sim.py) against the fake API server: pods run as
real processes in their own network namespaces, with volumes, env, probes, cluster DNS by
/etc/hosts, preStop hooks and graceful deletion, and nothing left behind afterwards; a real
shoalctld and two configless shoald run a job as pods."""

import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import BIN, REPO, SBIN, pid_alive, wait_until

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "k8s"))
from tests.k8s.fakekube import FakeKube  # noqa: E402
import kubelet_pod as kp  # noqa: E402

SIM = REPO / "tests" / "k8s" / "kubelet_sim.py"
BRIDGE = "kstest0"  # not the default: the end-to-end tests may run a simulator meanwhile
CIDR = "10.246.0.0/16"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


# --- pure helpers (no root needed) -------------------------------------------------------

def test_expand_and_dns_names():
    assert kp.expand("a-$(X)-$(Y)-$$(X)", {"X": "1"}) == "a-1-$(Y)-$(X)"
    assert kp.dns_names("w-0.w.ns1.svc.cluster.local", "ns1") == [
        "w-0.w.ns1.svc.cluster.local", "w-0.w.ns1.svc", "w-0.w.ns1", "w-0.w"]
    assert kp.dns_names("c.ns1.svc.cluster.local", "other") == [
        "c.ns1.svc.cluster.local", "c.ns1.svc", "c.ns1"]


def test_merge_conditions_keeps_other_writers():
    theirs = [{"type": "ShoalNodeStateIdle", "status": "True"},
              {"type": "Ready", "status": "True", "lastTransitionTime": "t0"}]
    ours = [{"type": "Ready", "status": "True", "lastTransitionTime": "t1"}]
    assert kp.merge_conditions(theirs, ours) == [
        {"type": "ShoalNodeStateIdle", "status": "True"},
        {"type": "Ready", "status": "True", "lastTransitionTime": "t0"}]


def test_dns_records_collapse_cluster_ip_and_name_headless_pods():
    def pod(name, ip, ready):
        cond = {"type": "Ready", "status": "True" if ready else "False"}
        return {"metadata": {"name": name, "namespace": "ns", "labels": {"app": "w"}},
                "spec": {"hostname": name, "subdomain": "w"},
                "status": {"podIP": ip, "conditions": [cond]}}

    pods = [pod("w-0", "10.0.0.2", True), pod("w-1", "10.0.0.3", False)]
    headless = {"metadata": {"name": "w", "namespace": "ns"},
                "spec": {"clusterIP": "None", "selector": {"app": "w"}}}
    cip = {"metadata": {"name": "c", "namespace": "ns"},
           "spec": {"clusterIP": "10.96.0.5", "selector": {"app": "w"}, "ports": [{"port": 6817}]}}
    recs = kp.dns_records([headless, cip], pods)
    assert ("c.ns.svc.cluster.local", "10.0.0.2", "ns") in recs
    assert ("w-0.w.ns.svc.cluster.local", "10.0.0.2", "ns") in recs
    assert not [r for r in recs if r[1] == "10.0.0.3"]  # not ready: not published
    headless["spec"]["publishNotReadyAddresses"] = True
    assert ("w-1.w.ns.svc.cluster.local", "10.0.0.3", "ns") in kp.dns_records([headless], pods)
    env = kp.service_env([cip, headless], "ns", lambda s: "10.0.0.2")
    assert env["C_SERVICE_HOST"] == "10.0.0.2" and env["C_SERVICE_PORT"] == "6817"
    assert "W_SERVICE_HOST" not in env


# --- the simulator --------------------------------------------------------------------------

class Api:
    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None, ctype="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": ctype} if data else {})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise

    def create(self, plural, obj, ns="default"):
        return self.call("POST", f"/api/v1/namespaces/{ns}/{plural}", obj)

    def merge(self, path, body):
        return self.call("PATCH", path, body, ctype="application/merge-patch+json")

    def delete_pod(self, name, ns="default"):
        return self.call("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}")

    def pod(self, name, ns="default"):
        return self.call("GET", f"/api/v1/namespaces/{ns}/pods/{name}")

    def wait_pod(self, name, predicate, timeout, what):
        """The pod once predicate(pod) holds."""
        def check():
            p = self.pod(name)
            return p if p and predicate(p) else None
        return wait_until(check, timeout, what)

    def wait_ready(self, name, timeout=30):
        return self.wait_pod(name, ready, timeout, f"{name} to be Ready")


def ready(pod):
    conds = pod.get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def netns_of(pod):
    return "kpod-" + pod["metadata"]["uid"].replace("-", "")[:8]


def container_pid(pod):
    return int(pod["status"]["containerStatuses"][0]["containerID"].rsplit("/", 1)[1])


def http_get(url, timeout=3):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def web_pod(name, node, claim):
    script = ('cp /etc/cfg/a.conf /www/ && echo "$POD $SEC $GREETING $IP" > /www/env.txt && '
              'cat /data/prestop >> /www/env.txt 2>/dev/null; '
              'cd /www && exec python3 -m http.server 8080')
    env = [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "SEC", "valueFrom": {"secretKeyRef": {"name": "s1", "key": "key"}}},
           {"name": "GREETING", "value": "hi-$(POD)"}]
    pre_stop = {"exec": {"command": ["sh", "-c", "echo stopped-$POD > /data/prestop"]}}
    return {
        "metadata": {"name": name, "labels": {"app": "web"}},
        "spec": {
            "nodeName": node, "hostname": name, "subdomain": "web",
            "terminationGracePeriodSeconds": 20,
            "containers": [{
                "name": "main", "image": "shoal/test", "command": ["sh", "-c", script], "env": env,
                "readinessProbe": {"httpGet": {"path": "/env.txt", "port": 8080},
                                   "periodSeconds": 1},
                "lifecycle": {"preStop": pre_stop},
                "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"},
                                 {"name": "sec", "mountPath": "/etc/sec", "readOnly": True},
                                 {"name": "www", "mountPath": "/www"},
                                 {"name": "data", "mountPath": "/data"}]}],
            "volumes": [
                {"name": "cfg", "configMap": {"name": "cm1",
                                              "items": [{"key": "a.conf", "path": "a.conf"}]}},
                {"name": "sec", "secret": {"secretName": "s1", "defaultMode": 0o400}},
                {"name": "www", "emptyDir": {}},
                {"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}}


def sim_cmd(*args):
    return [sys.executable, str(SIM), *args, "--bridge", BRIDGE, "--cidr", CIDR]


@pytest.fixture
def sim(request):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    kube = FakeKube().start()
    root = Path(tempfile.mkdtemp(prefix="kubelet-sim-", dir="/tmp"))
    log = open(root / "sim.log", "wb")
    cmd = sim_cmd("--api", kube.url, "--node", "k1", "--node", "k2", "--root", str(root),
                  "--bin-dir", str(BIN), "--bin-dir", str(SBIN))
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    wait_until(lambda: (root / "state" / "ready").exists() or proc.poll() is not None, 30,
               "the simulator")
    assert proc.poll() is None, (root / "sim.log").read_text()
    yield kube, Api(kube.url), root, proc
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    subprocess.run(sim_cmd("--cleanup", "--root", str(root)), timeout=60)
    kube.stop()
    log.close()
    if getattr(request.node, "rep_call", None) is None or request.node.rep_call.failed:
        print(f"simulator log and pod logs kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)


def test_pods_run_as_processes_in_their_own_netns(sim):
    kube, api, root, proc = sim
    # Nodes registered Ready, with a lease.
    for n in ("k1", "k2"):
        node = wait_until(lambda: api.call("GET", f"/api/v1/nodes/{n}"), 10, f"node {n}")
        conds = {c["type"]: c["status"] for c in node["status"]["conditions"]}
        assert conds["Ready"] == "True"
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == n
        lease = wait_until(lambda: api.call("GET", f"{LEASES}/{n}"), 15, f"lease of {n}")
        assert lease["spec"]["holderIdentity"] == n

    api.create("configmaps", {"metadata": {"name": "cm1"}, "data": {"a.conf": "v1\n"}})
    api.create("secrets", {"metadata": {"name": "s1"}, "type": "Opaque",
                           "data": {"key": "c2VjcmV0"}})
    for claim in ("data-0", "data-1"):
        api.create("persistentvolumeclaims", {"metadata": {"name": claim}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    api.create("services", {"metadata": {"name": "web"}, "spec": {
        "clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 8080}]}})
    api.create("pods", web_pod("web-0", "k1", "data-0"))
    api.create("pods", web_pod("web-1", "k2", "data-1"))
    api.create("pods", {"metadata": {"name": "other"}, "spec": {"nodeName": "k1", "containers": [
        {"name": "c", "image": "docker.io/library/busybox", "command": ["sleep", "100"]}]}})

    pods = {n: api.wait_ready(n) for n in ("web-0", "web-1")}
    for name, p in pods.items():
        st = p["status"]
        assert st["phase"] == "Running"
        assert {c["type"] for c in st["conditions"]} >= {
            "PodScheduled", "Initialized", "ContainersReady", "Ready"}
        assert st["containerStatuses"][0]["ready"]
        assert "running" in st["containerStatuses"][0]["state"]
        # Reachable from the host at its pod IP; env from fieldRef, secret and $(VAR); the
        # configMap volume.
        env_txt = http_get(f"http://{st['podIP']}:8080/env.txt").split()
        assert env_txt == [name, "secret", f"hi-{name}", st["podIP"]]
        assert http_get(f"http://{st['podIP']}:8080/a.conf") == "v1\n"
    pvc = api.call("GET", "/api/v1/namespaces/default/persistentvolumeclaims/data-0")
    assert pvc["status"]["phase"] == "Bound"

    # A pod of another image is not run.
    other = api.wait_pod("other", lambda p: p["status"].get("containerStatuses"), 10,
                         "status of the foreign pod")
    assert other["status"]["phase"] == "Pending"
    waiting = other["status"]["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "ErrImagePull"

    # Another writer's pod condition (the operator's) survives the simulator's updates.
    conds = pods["web-1"]["status"]["conditions"] + [
        {"type": "ShoalNodeStateIdle", "status": "True", "reason": "Idle"}]
    api.merge("/api/v1/namespaces/default/pods/web-1/status", {"status": {"conditions": conds}})

    # Pod to pod by headless-service DNS name, from inside web-0's netns; own hostname.
    ip0, ip1 = pods["web-0"]["status"]["podIP"], pods["web-1"]["status"]["podIP"]
    ns0 = netns_of(pods["web-0"])

    def resolve(name):
        r = subprocess.run(["ip", "netns", "exec", ns0, "getent", "hosts", name],
                           capture_output=True, text=True)
        return r.stdout.split()[0] if r.returncode == 0 else None

    # Like real cluster DNS, records follow readiness after a short propagation delay.
    wait_until(lambda: resolve("web-1.web") == ip1, 5, "web-1.web to resolve in web-0")
    assert resolve("web-1.web.default.svc.cluster.local") == ip1
    assert resolve("web") in (ip0, ip1)
    assert resolve("nosuchservice") is None
    fetch = ("import urllib.request; print(urllib.request.urlopen("
             "'http://web-1.web:8080/env.txt', timeout=3).read().decode())")
    r = subprocess.run(["ip", "netns", "exec", ns0, sys.executable, "-c", fetch],
                       capture_output=True, text=True, timeout=10)
    assert r.stdout.split()[:1] == ["web-1"], r.stderr
    pid0 = container_pid(pods["web-0"])
    r = subprocess.run(["nsenter", "-t", str(pid0), "-u", "hostname"], capture_output=True,
                       text=True)
    assert r.stdout.strip() == "web-0"
    # Host processes (e.g. the operator) can use the cluster DNS through <root>/hosts.
    r = subprocess.run(["unshare", "-m", "sh", "-c",
                        f"mount --bind {root}/hosts /etc/hosts && getent hosts web-1.web"],
                       capture_output=True, text=True, timeout=10)
    assert r.stdout.split()[:1] == [ip1], r.stderr

    # A ConfigMap change reaches the mounted files.
    api.merge("/api/v1/namespaces/default/configmaps/cm1", {"data": {"a.conf": "v2\n"}})

    def mounted_conf():
        return subprocess.run(["nsenter", "-t", str(pid0), "-m", "cat", "/etc/cfg/a.conf"],
                              capture_output=True, text=True).stdout
    wait_until(lambda: mounted_conf() == "v2\n", 10, "configMap refresh")

    # Deletion runs preStop (into the PVC), stops the process, removes the netns, deletes
    # the pod.
    api.delete_pod("web-0")
    wait_until(lambda: api.pod("web-0") is None, 30, "web-0 to be deleted")
    assert (root / "pvc" / "default" / "data-0" / "prestop").read_text() == "stopped-web-0\n"
    assert not pid_alive(pid0)
    assert not Path(f"/run/netns/{ns0}").exists()
    assert any(c["type"] == "ShoalNodeStateIdle" for c in api.pod("web-1")["status"]["conditions"])

    # Recreated with the same claim: the PVC content survived.
    api.create("pods", web_pod("web-0", "k1", "data-0"))
    p = api.wait_ready("web-0")
    assert http_get(f"http://{p['status']['podIP']}:8080/env.txt").split()[-1] == "stopped-web-0"

    # A pod whose preStop hangs and that ignores SIGTERM still goes by its grace period.
    api.create("pods", {"metadata": {"name": "stuck"}, "spec": {
        "nodeName": "k2", "terminationGracePeriodSeconds": 2, "containers": [{
            "name": "c", "image": "shoal/test",
            "command": ["sh", "-c", "trap '' TERM; while :; do sleep 0.2; done"],
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "1000"]}}}}]}})
    stuck = api.wait_ready("stuck", 20)
    start = time.monotonic()
    api.delete_pod("stuck")
    wait_until(lambda: api.pod("stuck") is None, 15, "the stuck pod to be deleted")
    assert time.monotonic() - start < 10
    assert not pid_alive(container_pid(stuck))

    # Exit: every pod process and netns goes, the bridge too.
    pids = [container_pid(api.pod(n)) for n in ("web-0", "web-1")]
    namespaces = [netns_of(api.pod(n)) for n in ("web-0", "web-1")]
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)
    for pid in pids:
        assert not pid_alive(pid)
    for ns in namespaces:
        assert not Path(f"/run/netns/{ns}").exists()
        assert not Path(f"/etc/netns/{ns}").exists()
    assert subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode != 0


def test_init_containers_restarts_probes_and_users(sim):
    kube, api, root, proc = sim
    # Init containers run in order before the main one; runAsUser applies; a liveness exec
    # probe that starts failing restarts the container; restartCount counts.
    mount = [{"name": "w", "mountPath": "/w"}]
    api.create("pods", {"metadata": {"name": "life"}, "spec": {
        "nodeName": "k1", "terminationGracePeriodSeconds": 1,
        "securityContext": {"runAsUser": 65534, "runAsGroup": 65534},
        "initContainers": [
            {"name": "one", "image": "shoal/test", "command": ["sh", "-c", "echo one >> /w/order"],
             "volumeMounts": mount},
            {"name": "two", "image": "shoal/test", "command": ["sh", "-c", "echo two >> /w/order"],
             "volumeMounts": mount}],
        "containers": [{
            "name": "main", "image": "shoal/test",
            "command": ["sh", "-c",
                        "cp /w/order /w/seen; id -u > /w/uid; touch /w/alive; exec sleep 1000"],
            "livenessProbe": {"exec": {"command": ["test", "-e", "/w/alive"]}, "periodSeconds": 1,
                              "failureThreshold": 2},
            "volumeMounts": mount}],
        "volumes": [{"name": "w", "emptyDir": {}}]}})
    p = api.wait_ready("life", 20)
    wdir = root / "pods" / p["metadata"]["uid"] / "volumes" / "w"
    wait_until(lambda: (wdir / "alive").exists(), 10, "the main container to write its files")
    assert (wdir / "seen").read_text() == "one\ntwo\n"
    assert (wdir / "uid").read_text() == "65534\n"
    inits = p["status"]["initContainerStatuses"]
    assert [s["state"]["terminated"]["exitCode"] for s in inits] == [0, 0]
    first = container_pid(p)
    (wdir / "alive").unlink()
    p = api.wait_pod("life", lambda p: p["status"]["containerStatuses"][0]["restartCount"] >= 1
                     and ready(p), 20, "a liveness restart")
    assert not pid_alive(first)
    assert "terminated" in p["status"]["containerStatuses"][0]["lastState"]
    events = api.call("GET", "/api/v1/namespaces/default/events")["items"]
    assert any(e["reason"] == "Unhealthy" and e["involvedObject"]["name"] == "life"
               for e in events)

    # restartPolicy Never: a failing container ends the pod Failed; OnFailure + exit 0 ends it
    # Succeeded.
    for name, policy, code in (("never", "Never", 3), ("onfailure", "OnFailure", 0)):
        api.create("pods", {"metadata": {"name": name}, "spec": {
            "nodeName": "k2", "restartPolicy": policy, "containers": [
                {"name": "c", "image": "shoal/test", "command": ["sh", "-c", f"exit {code}"]}]}})
    p = api.wait_pod("never", lambda p: p["status"].get("phase") == "Failed", 20,
                     "the Never pod to fail")
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3
    api.wait_pod("onfailure", lambda p: p["status"].get("phase") == "Succeeded", 20,
                 "the OnFailure pod to succeed")

    # restartPolicy Always: a crashing container is restarted with back-off.
    api.create("pods", {"metadata": {"name": "crash"}, "spec": {"nodeName": "k2", "containers": [
        {"name": "c", "image": "shoal/test", "command": ["sh", "-c", "exit 1"]}]}})

    def restarted_twice(p):
        st = (p["status"].get("containerStatuses") or [{}])[0]
        return st.get("restartCount", 0) >= 2

    p = api.wait_pod("crash", restarted_twice, 20, "two restarts of the crashing pod")
    assert p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    assert p["status"]["phase"] == "Running"


def test_cleanup_after_a_killed_simulator(sim):
    kube, api, root, proc = sim
    api.create("pods", {"metadata": {"name": "orphan"}, "spec": {"nodeName": "k1", "containers": [
        {"name": "c", "image": "shoal/test",
         "command": ["sh", "-c", "setsid sleep 1000 & exec sleep 1000"]}]}})
    ns = netns_of(api.wait_ready("orphan", 20))

    def pids():
        return subprocess.run(["ip", "netns", "pids", ns], capture_output=True,
                              text=True).stdout.split()
    left = wait_until(lambda: (lambda p: p if len(p) >= 2 else None)(pids()), 10,
                      "both processes of the pod")
    proc.kill()  # no chance to clean up
    proc.wait(10)
    assert Path(f"/run/netns/{ns}").exists()
    r = subprocess.run(sim_cmd("--cleanup", "--root", str(root)), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    assert not Path(f"/run/netns/{ns}").exists()
    assert not Path(f"/etc/netns/{ns}").exists()
    for pid in left:
        assert not pid_alive(int(pid))
    assert subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode != 0


SLURM_CONF = """ClusterName=k8s
SlurmctldHost=c-0(c)
SlurmctldParameters=enable_configless
SlurmUser=root
StateSaveLocation=/var/spool/shoalctld
SlurmdSpoolDir=/var/spool/slurmd/%n
KillWait=5
ReturnToService=2
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def test_real_controller_and_configless_workers_as_pods(sim):
    """shoalctld and two dynamic, configless shoald run as pods (each with its own /run, so
    their caches and sockets do not collide) and run a two-node job with srun."""
    kube, api, root, proc = sim
    api.create("configmaps", {"metadata": {"name": "c-config"},
                              "data": {"slurm.conf": SLURM_CONF}})
    api.create("secrets", {"metadata": {"name": "slurm-key"}, "type": "Opaque",
                           "data": {"slurm.key": base64.b64encode(os.urandom(32)).decode()}})
    api.create("persistentvolumeclaims", {"metadata": {"name": "c-state"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    api.create("services", {"metadata": {"name": "c"}, "spec": {
        "selector": {"app": "ctl"}, "ports": [{"port": 6817}]}})
    api.create("services", {"metadata": {"name": "w"}, "spec": {
        "clusterIP": "None", "publishNotReadyAddresses": True, "selector": {"app": "w"},
        "ports": [{"port": 6818}]}})
    key = {"name": "key", "secret": {"secretName": "slurm-key", "defaultMode": 0o600}}
    api.create("pods", {"metadata": {"name": "c-0", "labels": {"app": "ctl"}}, "spec": {
        "nodeName": "k1", "terminationGracePeriodSeconds": 5, "containers": [{
            "name": "shoalctld", "image": "shoal/controller",
            "command": ["shoalctld", "-D", "-f", "/etc/slurm/slurm.conf"],
            "readinessProbe": {"tcpSocket": {"port": 6817}, "periodSeconds": 1},
            "volumeMounts": [
                {"name": "conf", "mountPath": "/etc/slurm/slurm.conf", "subPath": "slurm.conf"},
                {"name": "key", "mountPath": "/etc/slurm/slurm.key", "subPath": "slurm.key"},
                {"name": "state", "mountPath": "/var/spool/shoalctld"}]}],
        "volumes": [{"name": "conf", "configMap": {"name": "c-config"}}, key,
                    {"name": "state", "persistentVolumeClaim": {"claimName": "c-state"}}]}})
    for i in range(2):
        api.create("pods", {"metadata": {"name": f"w-{i}", "labels": {"app": "w"}}, "spec": {
            "nodeName": f"k{i + 1}", "hostname": f"w-{i}", "subdomain": "w",
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "shoald", "image": "shoal/worker",
                "env": [{"name": "POD_NAME",
                         "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                "command": ["shoald", "-D", "-Z", "-N", "$(POD_NAME)", "--conf-server", "c",
                            "--conf", "CPUs=1 RealMemory=500", "--key", "/etc/shoal/key/slurm.key"],
                "volumeMounts": [{"name": "key", "mountPath": "/etc/shoal/key"}]}],
            "volumes": [key]}})
    pid = container_pid(api.wait_ready("c-0"))
    work = Path(tempfile.mkdtemp(prefix="kubelet-sim-work-", dir="/tmp"))
    os.chmod(work, 0o755)

    def in_controller(*argv):
        # Commands run in the controller pod's namespaces (its /etc/slurm, its cluster DNS).
        env = {"PATH": f"{BIN}:/usr/bin:/bin", "SLURM_CONF": "/etc/slurm/slurm.conf"}
        return subprocess.run(["nsenter", "-t", str(pid), "-m", "-u", "-n", "--", *argv],
                              env=env, cwd=work, capture_output=True, text=True, timeout=20)

    def idle_nodes():
        out = in_controller("sinfo", "-h", "-N", "-o", "%N %t").stdout.split("\n")
        return sorted(line.split()[0] for line in out if line.endswith(" idle"))

    def output_lines():
        out = work / "out.txt"
        return out.read_text().split() if out.exists() else []

    try:
        wait_until(lambda: idle_nodes() == ["w-0", "w-1"], 40, "both workers to register idle")
        r = in_controller("sbatch", "-N2", "-o", f"{work}/out.txt", "--wrap", "srun hostname")
        assert r.returncode == 0, r.stderr
        wait_until(lambda: len(output_lines()) == 2, 30, "the two-node job's output")
        assert sorted(output_lines()) == ["w-0", "w-1"]
    finally:
        shutil.rmtree(work, ignore_errors=True)
