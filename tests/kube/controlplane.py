#!/usr/bin/env python3
"""A real Kubernetes control plane on loopback, for tests and for trying Shoal by hand: etcd,
kube-apiserver, kube-controller-manager and kube-scheduler built from their own sources by
scripts/build-k8s.sh, configured the way kubeadm, kind and envtest configure them:

- TLS everywhere: one cluster CA signs the API server's serving certificate and every client
  certificate (admin in system:masters; the controller-manager and scheduler under their
  system: names; each node as system:node:NAME in system:nodes).
- Authorization Node,RBAC; admission with the defaults (ServiceAccount, PodSecurity, ...) plus
  NodeRestriction; ServiceAccount tokens signed by the API server's own key, with a real issuer.
- The controller-manager runs every default controller (garbage collector, ServiceAccount
  tokens and root-CA ConfigMaps, namespace deletion, node lifecycle, disruption/PDB, HPA,
  Deployments, StatefulSets, DaemonSets, Jobs, EndpointSlices, ...) with per-controller
  ServiceAccount credentials; the real scheduler binds pods.

  controlplane.py up DIR [--advertise IP] [--san IP]...   start; DIR/kubeconfig is the admin's
  controlplane.py down DIR                                stop what `up DIR` started

As a library: ControlPlane(dir, ...).start() / .stop(); .kubeconfig, .url, .node_kubeconfig().
"""

import argparse
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pki import Pki  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SERVICE_CIDR = "10.96.0.0/16"
SERVICE_IP = "10.96.0.1"  # the `kubernetes` Service's ClusterIP: first of SERVICE_CIDR
ISSUER = "https://kubernetes.default.svc.cluster.local"


def k8s_bin_dir():
    if os.environ.get("SHOAL_K8S_BIN"):
        return Path(os.environ["SHOAL_K8S_BIN"])
    build = Path(os.environ.get("BUILD_DIR", "build"))
    if not build.is_absolute():
        build = REPO / build
    return build / "k8s" / "bin"


def wait(pred, timeout, what, interval=0.5):
    """Polls pred() until it returns something true (returned), failing after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def stop_group(proc, timeout, kill_wait=10):
    """SIGTERM to a process group we started (start_new_session), SIGKILL after `timeout` s."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(kill_wait)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kubeconfig_yaml(server, ca, cert, key, user, namespace="default"):
    return (f"apiVersion: v1\nkind: Config\nclusters:\n- name: shoal-test\n  cluster:\n"
            f"    server: {server}\n    certificate-authority: {ca}\n"
            f"users:\n- name: {user}\n  user:\n    client-certificate: {cert}\n"
            f"    client-key: {key}\ncontexts:\n- name: {user}@shoal-test\n  context:\n"
            f"    cluster: shoal-test\n    user: {user}\n    namespace: {namespace}\n"
            f"current-context: {user}@shoal-test\n")


class ControlPlane:
    def __init__(self, root, advertise="127.0.0.1", sans=(), bin_dir=None,
                 node_monitor_grace="20s"):
        self.root = Path(root).resolve()
        self.bin = Path(bin_dir) if bin_dir else k8s_bin_dir()
        self.advertise = advertise
        self.sans = [s for s in sans if s]
        self.node_monitor_grace = node_monitor_grace
        self.pki = Pki(self.root / "pki")
        self.logs = self.root / "logs"
        self.procs = {}
        self.state_file = self.root / "controlplane.json"
        self.kubeconfig = self.root / "kubeconfig"

    # --- configuration ---------------------------------------------------------------------

    def _kubeconfig(self, name, cn, orgs=()):
        crt, key = self.pki.issue(name, cn, orgs=orgs)
        path = self.root / f"{name}.kubeconfig"
        path.write_text(kubeconfig_yaml(self.url, self.pki.ca, crt, key, name))
        path.chmod(0o600)
        return path

    def node_kubeconfig(self, node):
        """A kubeconfig for a node agent: system:node:NODE in system:nodes, as the kubelet
        authenticates (the Node authorizer and NodeRestriction then limit it to its own Node,
        Lease and pods)."""
        path = self.root / f"node-{node}.kubeconfig"
        if not path.exists():
            path = self._kubeconfig(f"node-{node}", f"system:node:{node}", ["system:nodes"])
        return path

    def _prepare(self):
        self.root.mkdir(parents=True, exist_ok=True)
        self.logs.mkdir(exist_ok=True)
        self.ports = {"etcd": free_port(), "etcd-peer": free_port(), "apiserver": free_port(),
                      "controller-manager": free_port(), "scheduler": free_port()}
        self.url = f"https://{self.advertise}:{self.ports['apiserver']}"
        self.pki.create_ca()
        ips = sorted({"127.0.0.1", SERVICE_IP, self.advertise, *self.sans})
        self.pki.issue("apiserver", "kube-apiserver", server=True, client=False,
                       dns=["localhost", "kubernetes", "kubernetes.default",
                            "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"],
                       ips=ips)
        # The API server's client identity towards kubelets (logs/exec): unused by our node
        # agent, set so the flags are as in production.
        self.pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                       orgs=["kubeadm:cluster-admins"])
        admin_crt, admin_key = self.pki.issue("admin", "shoal-test-admin", orgs=["system:masters"])
        self.kubeconfig.write_text(kubeconfig_yaml(self.url, self.pki.ca, admin_crt, admin_key,
                                                   "admin"))
        self.kubeconfig.chmod(0o600)
        self.admin_cert = (admin_crt, admin_key)
        self.kcm_conf = self._kubeconfig("controller-manager", "system:kube-controller-manager")
        self.sched_conf = self._kubeconfig("scheduler", "system:kube-scheduler")

    def _argv(self, name):
        p, pki, b = self.ports, self.pki, self.bin
        if name == "etcd":
            peer = f"http://127.0.0.1:{p['etcd-peer']}"
            client = f"http://127.0.0.1:{p['etcd']}"
            return [str(b / "etcd"), "--name", "default", "--data-dir", str(self.root / "etcd"),
                    "--listen-client-urls", client, "--advertise-client-urls", client,
                    "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                    "--initial-cluster", f"default={peer}", "--unsafe-no-fsync",
                    "--log-level", "warn"]
        if name == "apiserver":
            return [str(b / "kube-apiserver"),
                    "--advertise-address", self.advertise, "--bind-address", "0.0.0.0",
                    "--secure-port", str(p["apiserver"]),
                    "--etcd-servers", f"http://127.0.0.1:{p['etcd']}",
                    "--tls-cert-file", str(pki.path("apiserver", "crt")),
                    "--tls-private-key-file", str(pki.path("apiserver", "key")),
                    "--client-ca-file", str(pki.ca),
                    "--kubelet-client-certificate", str(pki.path("apiserver-kubelet-client", "crt")),
                    "--kubelet-client-key", str(pki.path("apiserver-kubelet-client", "key")),
                    "--kubelet-certificate-authority", str(pki.ca),
                    "--service-account-issuer", ISSUER,
                    "--api-audiences", ISSUER,
                    "--service-account-key-file", str(pki.path("sa", "pub")),
                    "--service-account-signing-key-file", str(pki.path("sa", "key")),
                    "--service-cluster-ip-range", SERVICE_CIDR,
                    "--authorization-mode", "Node,RBAC",
                    "--enable-admission-plugins", "NodeRestriction",
                    "--allow-privileged=true",
                    "--cert-dir", str(self.root / "apiserver-certs"),
                    # The `kubernetes` Service's endpoint is the advertised address, which may
                    # not be loopback: with nothing else to advertise (no pods to reach it),
                    # leave that Service without endpoints.
                    *(["--endpoint-reconciler-type", "none"]
                      if self.advertise.startswith("127.") else []),
                    "--v", "1"]
        if name == "controller-manager":
            return [str(b / "kube-controller-manager"),
                    "--kubeconfig", str(self.kcm_conf),
                    "--authentication-kubeconfig", str(self.kcm_conf),
                    "--authorization-kubeconfig", str(self.kcm_conf),
                    "--bind-address", "127.0.0.1", "--secure-port", str(p["controller-manager"]),
                    "--cert-dir", str(self.root / "kcm-certs"),
                    "--leader-elect=false",
                    "--use-service-account-credentials=true",
                    "--service-account-private-key-file", str(pki.path("sa", "key")),
                    "--root-ca-file", str(pki.ca),
                    "--cluster-signing-cert-file", str(pki.ca),
                    "--cluster-signing-key-file", str(pki.path("ca", "key")),
                    "--controllers", "*,bootstrapsigner,tokencleaner",
                    "--service-cluster-ip-range", SERVICE_CIDR,
                    # A node agent that stops renewing its Lease is NotReady after this long.
                    "--node-monitor-grace-period", self.node_monitor_grace,
                    "--node-monitor-period", "2s",
                    "--horizontal-pod-autoscaler-sync-period", "5s",
                    "--v", "1"]
        if name == "scheduler":
            return [str(b / "kube-scheduler"),
                    "--kubeconfig", str(self.sched_conf),
                    "--authentication-kubeconfig", str(self.sched_conf),
                    "--authorization-kubeconfig", str(self.sched_conf),
                    "--bind-address", "127.0.0.1", "--secure-port", str(p["scheduler"]),
                    "--cert-dir", str(self.root / "scheduler-certs"),
                    "--leader-elect=false", "--v", "1"]
        raise ValueError(name)

    # --- processes -------------------------------------------------------------------------

    def _spawn(self, name):
        log = open(self.logs / f"{name}.log", "ab")
        try:
            proc = subprocess.Popen(self._argv(name), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        self.procs[name] = proc
        self._save()
        return proc

    def _save(self):
        self.state_file.write_text(json.dumps(
            {"url": self.url, "ports": self.ports,
             "pids": {n: p.pid for n, p in self.procs.items()}}, indent=1))

    def _wait(self, name, ok, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            proc = self.procs[name]
            if proc.poll() is not None:
                tail = (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")
            if ok():
                return
            time.sleep(0.2)
        tail = (self.logs / f"{name}.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"{name} not ready after {timeout}s:\n{tail}")

    def _get(self, url, client_cert=None, verify=True):
        ctx = ssl.create_default_context(cafile=str(self.pki.ca)) if verify else \
            ssl._create_unverified_context()
        if client_cert:
            ctx.load_cert_chain(*map(str, client_cert))
        try:
            with urllib.request.urlopen(url, context=ctx, timeout=3) as r:
                return r.status, r.read().decode(errors="replace")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")
        except OSError:
            return None, ""

    def get(self, path):
        """GET PATH from the API server as the admin: (status, body)."""
        return self._get(self.url + path, self.admin_cert)

    def start(self, timeout=90):
        missing = [b for b in ("etcd", "kube-apiserver", "kube-controller-manager",
                               "kube-scheduler", "kubectl") if not (self.bin / b).exists()]
        if missing:
            raise FileNotFoundError(f"{', '.join(missing)} not in {self.bin}: run "
                                    "scripts/build-k8s.sh")
        t0 = time.monotonic()
        self._prepare()
        try:
            self._spawn("etcd")
            self._wait("etcd", lambda: self._get(
                f"http://127.0.0.1:{self.ports['etcd']}/health")[0] == 200, timeout)
            self._spawn("apiserver")
            self._wait("apiserver", lambda: self.get("/readyz")[0] == 200, timeout)
            self._spawn("controller-manager")
            self._spawn("scheduler")
            for name in ("controller-manager", "scheduler"):
                url = f"https://127.0.0.1:{self.ports[name]}/healthz"
                self._wait(name, lambda u=url: self._get(u, verify=False)[0] == 200, timeout)
            # The ServiceAccount controller has made `default` in `default`: pods can be
            # admitted (the ServiceAccount admission plugin refuses them before that).
            self._wait("controller-manager", lambda: self.get(
                "/api/v1/namespaces/default/serviceaccounts/default")[0] == 200, timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def stop(self, timeout=20):
        order = ["scheduler", "controller-manager", "apiserver", "etcd"]
        procs = [(n, self.procs[n]) for n in order if n in self.procs]
        for _, p in procs:
            stop_group(p, timeout, kill_wait=5)
        self.procs.clear()
        if self.state_file.exists():
            self.state_file.unlink()

    def kubectl(self, *args, input=None, check=True, timeout=60, kubeconfig=None):
        r = subprocess.run([str(self.bin / "kubectl"), "--kubeconfig",
                            str(kubeconfig or self.kubeconfig), *args],
                           input=input, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {r.stdout}{r.stderr}")
        return r


def down(root):
    """Stops what `up ROOT` started (by the pids it recorded)."""
    state = Path(root) / "controlplane.json"
    if not state.exists():
        return
    pids = json.loads(state.read_text()).get("pids", {})
    for name in ("scheduler", "controller-manager", "apiserver", "etcd"):
        pid = pids.get(name)
        if not pid:
            continue
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.2)
        else:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    state.unlink()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["up", "down"])
    ap.add_argument("dir")
    ap.add_argument("--advertise", default="127.0.0.1",
                    help="the address the API server advertises (pods reach it there)")
    ap.add_argument("--san", action="append", default=[],
                    help="another IP for the serving certificate (repeatable)")
    a = ap.parse_args()
    if a.action == "down":
        down(a.dir)
        return
    cp = ControlPlane(a.dir, advertise=a.advertise, sans=a.san).start()
    print(f"control plane up in {cp.start_seconds:.1f} s: {cp.url}; "
          f"export KUBECONFIG={cp.kubeconfig}")


if __name__ == "__main__":
    main()
