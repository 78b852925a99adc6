"""A whole Kubernetes stand-in for the operator's end-to-end tests: the fake API server
(tests/k8s/fakekube), a kubelet simulator running pods as real processes in network namespaces
(tests/k8s/kubelet_sim.py), the real `kubectl`, and the real `shoal-operator` running on the host
as an out-of-cluster operator would."""

import base64
import ipaddress
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from conftest import BIN, REPO, SBIN, pid_alive, wait_until

sys.path.insert(0, str(REPO))
from tests.k8s.fakekube import FakeKube  # noqa: E402

SIM = REPO / "tests" / "k8s" / "kubelet_sim.py"
CRDS = REPO / "deploy" / "crds"
BRIDGE = "kope0"  # not the simulator's test bridge: the two test files may overlap in a run
CIDR = "10.247.0.0/16"
HOST_IP = "10.247.0.1"
NS = "hpc"


class K8s:
    """Started by start(); stop() tears everything down (processes, namespaces, bridge)."""

    def __init__(self, k8s_nodes=("k1", "k2", "k3"), bridge=BRIDGE, cidr=CIDR):
        self.k8s_nodes = list(k8s_nodes)
        # A test file that may run beside another (each tears its bridge down) picks its own.
        self.bridge, self.cidr = bridge, cidr
        # The bridge's own address (the simulator's gateway): how pods reach the host.
        self.host_ip = str(next(ipaddress.ip_network(cidr).hosts()))
        self.root = Path(tempfile.mkdtemp(prefix="shoal-k8s-", dir="/tmp"))
        os.chmod(self.root, 0o755)
        self.kube = None
        self.sim = None
        self.operator = None
        self.kubeconfig = self.root / "kubeconfig"

    # --- lifecycle -------------------------------------------------------------------------

    def start(self):
        self.kube = FakeKube(host="0.0.0.0").start()
        self.url = self.kube.url
        self.kubeconfig.write_text(self.kube.kubeconfig(namespace=NS))
        log = open(self.root / "sim.log", "wb")
        cmd = [sys.executable, str(SIM), "--api", self.url, "--root", str(self.root / "sim"),
               "--bin-dir", str(BIN), "--bin-dir", str(SBIN), "--bridge", self.bridge,
               "--cidr", self.cidr]
        for n in self.k8s_nodes:
            cmd += ["--node", n]
        self.sim = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        log.close()
        wait_until(lambda: (self.root / "sim" / "state" / "ready").exists()
                   or self.sim.poll() is not None, 30, "the kubelet simulator")
        assert self.sim.poll() is None, (self.root / "sim.log").read_text()
        self.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
        self.kubectl("apply", "-f", str(CRDS))
        return self

    def start_operator(self, *extra, name="operator"):
        log = open(self.root / f"{name}.log", "ab")
        proc = subprocess.Popen([str(SBIN / "shoal-operator"), "--api", self.url, "-v", *extra],
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        if name == "operator":
            self.operator = proc
        return proc

    def stop(self, keep=False):
        for p in (self.operator, self.sim):
            if p is not None and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(40)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(10)
        subprocess.run([sys.executable, str(SIM), "--cleanup", "--root", str(self.root / "sim"),
                        "--bridge", self.bridge, "--cidr", self.cidr], timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.kube is not None:
            self.kube.stop()
        if keep:
            print(f"operator, simulator and pod logs kept in {self.root}")
        else:
            shutil.rmtree(self.root, ignore_errors=True)

    # --- the API -------------------------------------------------------------------------

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

    def kubectl(self, *args, check=True, input=None, timeout=120):
        kubectl = os.environ.get("KUBECTL", "kubectl")
        r = subprocess.run([kubectl, "--kubeconfig", str(self.kubeconfig), *args],
                           capture_output=True, text=True, input=input, timeout=timeout)
        if check:
            assert r.returncode == 0, f"kubectl {' '.join(args)}: {r.stdout}{r.stderr}"
        return r

    def apply(self, obj):
        return self.kubectl("apply", "-f", "-", input=json.dumps(obj))

    def pods(self, selector):
        q = urllib.request.quote(selector)
        return self.call("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={q}")["items"]

    def pod(self, name):
        return self.call("GET", f"/api/v1/namespaces/{NS}/pods/{name}", ok404=True)

    def cr(self, plural, name):
        return self.call("GET", f"/apis/shoal.dev/v1alpha1/namespaces/{NS}/{plural}/{name}",
                         ok404=True)

    def secret(self, name, data):
        enc = {k: base64.b64encode(v if isinstance(v, bytes) else v.encode()).decode()
               for k, v in data.items()}
        self.call("POST", f"/api/v1/namespaces/{NS}/secrets",
                  {"metadata": {"name": name}, "type": "Opaque", "data": enc})

    # --- Shoal, from inside the controller pod ------------------------------------------

    def ctl_pod(self):
        """The controller pod to run commands in (a test may pick the active one of a pair)."""
        return "shoal-0"

    def ctl(self, *argv, pod=None, env=None):
        return self.in_pod(pod or self.ctl_pod(), *argv, cwd=self.work, env=env)

    def submit(self, *args, script=None):
        argv = ["sbatch", "--parsable", "-D", str(self.work), *args]
        if script is not None:
            argv.append(str(script))
        r = self.ctl(*argv)
        assert r.returncode == 0, r.stdout + r.stderr
        return r.stdout.strip().split(";")[0]

    def job_state(self, job):
        for tok in self.ctl("scontrol", "show", "job", job).stdout.split():
            if tok.startswith("JobState="):
                return tok.split("=", 1)[1]
        return None

    def wait_job(self, job, states=("COMPLETED",), timeout=120):
        return wait(lambda: self.job_state(job) in states, timeout, f"job {job} to be {states}")

    # --- inside pods -----------------------------------------------------------------------

    def running_container(self, pod_name, timeout=60):
        """(pod, pid of its first container), once the pod exists and that container runs: a
        pod is created before its container starts (no containerID yet), and a restarted
        container has a new pid."""
        def running():
            pod = self.pod(pod_name)
            statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or []
            if not statuses or "running" not in (statuses[0].get("state") or {}):
                return None
            cid = statuses[0].get("containerID") or ""
            pid = int(cid.rsplit("/", 1)[1]) if "/" in cid else None
            return (pod, pid) if pid and pid_alive(pid) else None
        return wait(running, timeout, f"the container of pod {pod_name} to run", interval=0.2)

    def container_pid(self, pod_name, timeout=60):
        return self.running_container(pod_name, timeout)[1]

    def in_pod(self, pod_name, *argv, cwd=None, timeout=30, env=None):
        """Runs argv in the pod's mount, UTS and network namespaces (its /etc/slurm, its DNS),
        once its container runs."""
        pod, pid = self.running_container(pod_name)
        run_env = {"PATH": f"{BIN}:{SBIN}:/usr/bin:/bin"}
        # The container's own SLURM_CONF (where the operator mounted the configuration).
        for e in pod["spec"]["containers"][0].get("env") or []:
            if e["name"] == "SLURM_CONF" and "value" in e:
                run_env["SLURM_CONF"] = e["value"]
        run_env.update(env or {})
        return subprocess.run(["nsenter", "-t", str(pid), "-m", "-u", "-n", "--", *argv],
                              env=run_env, cwd=cwd, capture_output=True, text=True,
                              timeout=timeout)


def ready(pod):
    conds = (pod or {}).get("status", {}).get("conditions", [])
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conds)


def condition_types(pod):
    return sorted(c["type"] for c in (pod or {}).get("status", {}).get("conditions", [])
                  if c["type"].startswith("ShoalNodeState") and c["status"] == "True")


def wait(pred, timeout, what, interval=0.5):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)
