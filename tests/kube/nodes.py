#!/usr/bin/env python3
"""Nodes for a real control plane (tests/kube/controlplane.py): one node agent per node
(tests/k8s/kubelet_sim.py in OCI mode: pods as podman containers, each pod in its own network
namespace on a bridge), authenticated as system:node:NAME, plus the cluster-wide identities of
its cluster-DNS and local-storage parts (tests/kube/agent-rbac.yaml, ServiceAccount tokens).

    gw = ensure_bridge(BRIDGE, CIDR)                 # before the control plane: pods reach the
    cp = ControlPlane(d, advertise=gw).start()       # API server at the bridge's gateway address
    agents = NodeAgents(cp, d / "nodes", ["kn-1", "kn-2"], bridge=BRIDGE, cidr=CIDR).start()
    exec_in_pod(cp, "ns", "pod", "c", ["cat", "/etc/os-release"])
    agents.pause("kn-2"); agents.resume("kn-2")      # heartbeats off/on (Node NotReady)
    agents.stop()                                    # agents, containers, netns, bridge

    nodes.py up DIR [--nodes 2] [--bridge B --cidr C]   control plane in DIR + node agents
    nodes.py down DIR                                   stop both, clean up

Needs root and podman. Every wait is bounded; stop() cleans up even after a failed start.
"""

import argparse
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
AGENT = REPO / "tests" / "k8s" / "kubelet_sim.py"
RBAC = HERE / "agent-rbac.yaml"
PODMAN = shutil.which("podman") or "/usr/bin/podman"
IP = shutil.which("ip") or "/usr/sbin/ip"
DEFAULT_BRIDGE = "shkube0"
DEFAULT_CIDR = "10.252.0.0/16"  # not used by another test file (tests/integration: 246-250)
ROOT_LABEL = "shoal.dev/agent-root"
DNS_SA = "shoal-cluster-dns"
STORAGE_SA = "shoal-local-path-provisioner"

sys.path.insert(0, str(HERE))
from controlplane import stop_group  # noqa: E402


def gateway(cidr):
    return str(next(ipaddress.ip_network(cidr).hosts()))


def ensure_bridge(bridge=DEFAULT_BRIDGE, cidr=DEFAULT_CIDR):
    """Creates the pod bridge with its gateway address (the address the API server advertises
    to pods); returns that address."""
    gw = gateway(cidr)
    prefix = ipaddress.ip_network(cidr).prefixlen
    if subprocess.run([IP, "link", "show", bridge], capture_output=True).returncode != 0:
        subprocess.run([IP, "link", "add", "name", bridge, "type", "bridge"], capture_output=True)
    addrs = subprocess.run([IP, "-o", "addr", "show", "dev", bridge], capture_output=True,
                           text=True).stdout
    if f" {gw}/" not in addrs:
        subprocess.run([IP, "addr", "add", f"{gw}/{prefix}", "dev", bridge], check=True,
                       capture_output=True)
    subprocess.run([IP, "link", "set", bridge, "up"], check=True, capture_output=True)
    return gw


def remove_bridge(bridge):
    """Removes the bridge when nothing is attached to it any more."""
    r = subprocess.run([IP, "-o", "link", "show", "master", bridge], capture_output=True,
                       text=True)
    if r.returncode == 0 and not r.stdout.strip():
        subprocess.run([IP, "link", "del", bridge], capture_output=True)


def remove_containers(root):
    """Every container a node agent under `root` started (label shoal.dev/agent-root)."""
    r = subprocess.run([PODMAN, "ps", "-a", "-q", "--no-trunc", "--filter",
                        f"label={ROOT_LABEL}={Path(root).resolve()}"], capture_output=True,
                       text=True, timeout=120)
    ids = r.stdout.split()
    if ids:
        subprocess.run([PODMAN, "rm", "-f", "-v", *ids], capture_output=True, timeout=180)
    return ids


TEST_IMAGE = "localhost/shoal-test/busybox:1"


def ensure_test_image(ref=TEST_IMAGE, busybox="/usr/bin/busybox"):
    """A tiny local image for tests, made without a registry: Debian's static busybox
    (busybox-static) with /etc/passwd (root, app 1000, nobody), its own /etc/os-release
    (ID=shoal-test, unlike the host's) and CMD ["/bin/sh"]. Returns `ref`."""
    if subprocess.run([PODMAN, "image", "exists", ref], capture_output=True).returncode == 0:
        return ref
    import tarfile  # noqa: PLC0415
    import tempfile  # noqa: PLC0415
    with tempfile.TemporaryDirectory(prefix="shoal-test-image-") as t:
        rootfs = Path(t) / "rootfs"
        for d in ("bin", "etc", "tmp", "root", "home/app", "proc", "sys", "dev", "run",
                  "var/tmp"):
            (rootfs / d).mkdir(parents=True, exist_ok=True)
        (rootfs / "tmp").chmod(0o1777)
        shutil.copy2(busybox, rootfs / "bin" / "busybox")
        for app in ("sh", "ls", "cat", "id", "echo", "sleep", "hostname", "ps", "wget", "nc",
                    "grep", "true", "false", "touch", "mkdir", "env", "stat", "head", "test",
                    "kill", "date", "sed", "seq", "httpd", "printf", "readlink", "rm", "tr",
                    "wc", "cut", "base64"):
            (rootfs / "bin" / app).symlink_to("busybox")
        (rootfs / "etc" / "passwd").write_text(
            "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n"
            "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
        (rootfs / "etc" / "group").write_text("root:x:0:\napp:x:1000:\nnogroup:x:65534:\n")
        (rootfs / "etc" / "os-release").write_text(
            'PRETTY_NAME="Shoal test busybox"\nNAME="shoal-test-busybox"\nID=shoal-test\n')
        tar = Path(t) / "rootfs.tar"
        with tarfile.open(tar, "w") as tf:
            tf.add(rootfs, arcname=".")
        subprocess.run([PODMAN, "import", "--change", 'CMD ["/bin/sh"]', "--change",
                        "ENV PATH=/bin", str(tar), ref], check=True, capture_output=True,
                       timeout=300)
    return ref


def token_kubeconfig(cp, path, sa, namespace="kube-system", duration="720h"):
    """A kubeconfig authenticating as ServiceAccount NAMESPACE/SA with a TokenRequest token."""
    token = cp.kubectl("create", "token", sa, "-n", namespace, "--duration", duration).stdout
    path.write_text(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: shoal-test\n  cluster:\n"
        f"    server: {cp.url}\n    certificate-authority: {cp.pki.ca}\n"
        f"users:\n- name: {sa}\n  user:\n    token: {token.strip()}\n"
        f"contexts:\n- name: {sa}\n  context:\n    cluster: shoal-test\n    user: {sa}\n"
        f"current-context: {sa}\n")
    path.chmod(0o600)
    return path


def _pod(cp, namespace, name):
    status, body = cp.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    return json.loads(body) if status == 200 else None


def container_id(cp, namespace, pod, container, timeout=60):
    """The podman id of a pod's running container, from the pod's status (polled until the
    container has an id and is running)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        p = _pod(cp, namespace, pod)
        st = (p.get("status") or {}) if p else {}
        for cs in (st.get("containerStatuses") or []) + (st.get("initContainerStatuses") or []):
            if cs.get("name") != container:
                continue
            last = cs
            cid = cs.get("containerID") or ""
            if cid.startswith("podman://") and "running" in (cs.get("state") or {}):
                return cid[len("podman://"):]
        time.sleep(0.5)
    raise TimeoutError(f"container {container} of {namespace}/{pod} not running after "
                       f"{timeout}s (last status: {json.dumps(last)})")


def exec_in_pod(cp, namespace, pod, container, argv, user=None, input=None, timeout=60,
                wait=60):
    """Runs argv in a pod's container as `kubectl exec` would (podman exec on this host);
    returns the CompletedProcess (text when `input` is not bytes)."""
    cid = container_id(cp, namespace, pod, container, wait)
    cmd = [PODMAN, "exec"]
    if input is not None:
        cmd.append("--interactive")
    if user is not None:
        cmd += ["--user", str(user)]
    text = not isinstance(input, bytes)
    return subprocess.run(cmd + [cid, *argv], input=input, capture_output=True, text=text,
                          timeout=timeout, stdin=None if input is not None else subprocess.DEVNULL)


class NodeAgents:
    """N node agents for a ControlPlane: start(), add(), pause()/resume(), stop_node(),
    stop(); exec(). Each node's root is ROOT/NAME (its log ROOT/NAME.log)."""

    def __init__(self, cp, root, nodes=("kn-1", "kn-2"), bridge=DEFAULT_BRIDGE,
                 cidr=DEFAULT_CIDR, cpus=4, memory="8Gi", pods=110, lease_renew=5,
                 extra_args=()):
        # lease_renew: kubelet renews every 10 s against the controller-manager's default
        # 50 s node-monitor-grace-period; the fixture's grace is 20 s, so 5 s keeps a loaded
        # 2-core host from flapping nodes NotReady.
        self.cp = cp
        self.root = Path(root).resolve()
        self.names = list(nodes)
        self.bridge, self.cidr = bridge, cidr
        self.gateway = gateway(cidr)
        self.cpus, self.memory, self.pods = cpus, memory, pods
        self.lease_renew = lease_renew
        self.extra_args = list(extra_args)
        self.procs = {}
        self.identities = {}

    # --- setup ------------------------------------------------------------------------------

    def pod_api(self):
        """The API server URL as pods reach it: the bridge's gateway (the serving certificate
        must name it: ControlPlane(advertise=gateway) or sans=[gateway])."""
        url = self.cp.url
        if self.cp.advertise == self.gateway or self.gateway in self.cp.sans:
            port = url.rsplit(":", 1)[1]
            return f"https://{self.gateway}:{port}"
        return url

    def setup_identities(self):
        d = self.root / "identities"
        d.mkdir(parents=True, exist_ok=True)
        self.cp.kubectl("apply", "-f", str(RBAC))
        self.identities = {
            "dns": token_kubeconfig(self.cp, d / "cluster-dns.kubeconfig", DNS_SA),
            "storage": token_kubeconfig(self.cp, d / "local-path-provisioner.kubeconfig",
                                        STORAGE_SA)}

    def start(self, timeout=120):
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            ensure_bridge(self.bridge, self.cidr)
            self.setup_identities()
            for n in self.names:
                self.add(n, wait=False)
            for n in self.names:
                self.wait_ready(n, timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def serving(self, name):
        """A kubelet serving certificate from the cluster CA (the API server verifies it with
        --kubelet-certificate-authority when it fetches logs) and a free port on the node IP."""
        crt, key = self.cp.pki.issue(f"kubelet-{name}", f"system:node:{name}",
                                     orgs=["system:nodes"], server=True, client=False,
                                     ips=[self.gateway], dns=[name])
        with socket.socket() as s:
            s.bind((self.gateway, 0))
            port = s.getsockname()[1]
        return ["--serve-port", str(port), "--tls-cert-file", str(crt),
                "--tls-private-key-file", str(key), "--client-ca-file", str(self.cp.pki.ca)]

    def argv(self, name):
        return [sys.executable, str(AGENT), "--kubeconfig", str(self.cp.node_kubeconfig(name)),
                "--node", name, "--root", str(self.root / name),
                "--bridge", self.bridge, "--cidr", self.cidr, "--keep-bridge",
                "--node-ip", self.gateway,
                "--pod-api", self.pod_api(),
                "--dns-kubeconfig", str(self.identities["dns"]),
                "--storage-kubeconfig", str(self.identities["storage"]),
                "--storage-root", str(self.root / name / "local-path"),
                "--node-cpus", str(self.cpus), "--node-memory", str(self.memory),
                "--node-pods", str(self.pods), "--lease-renew", str(self.lease_renew),
                *self.serving(name), *self.extra_args]

    def add(self, name, wait=True, timeout=120):
        if name not in self.names:
            self.names.append(name)
        log = open(self.root / f"{name}.log", "ab")
        try:
            self.procs[name] = subprocess.Popen(self.argv(name), stdout=log,
                                                stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            log.close()
        if wait:
            self.wait_ready(name, timeout)
        return self.procs[name]

    def node(self, name):
        status, body = self.cp.get(f"/api/v1/nodes/{name}")
        return json.loads(body) if status == 200 else None

    @staticmethod
    def ready(node):
        for c in (node or {}).get("status", {}).get("conditions") or []:
            if c.get("type") == "Ready":
                return c.get("status")
        return None

    def wait_ready(self, name, timeout=120):
        """Until the Node is Ready and the node-lifecycle controller has lifted its not-ready
        taint (the scheduler skips the node before)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            p = self.procs.get(name)
            if p is not None and p.poll() is not None:
                raise RuntimeError(f"node agent {name} exited with {p.returncode}:\n"
                                   f"{self.log_tail(name)}")
            n = self.node(name)
            taints = [t.get("key") for t in (n or {}).get("spec", {}).get("taints") or []]
            if self.ready(n) == "True" and "node.kubernetes.io/not-ready" not in taints:
                return n
            time.sleep(0.5)
        raise TimeoutError(f"node {name} not Ready after {timeout}s:\n{self.log_tail(name)}")

    def log_tail(self, name, chars=4000):
        try:
            return (self.root / f"{name}.log").read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    # --- control --------------------------------------------------------------------------

    def pause(self, name):
        """Stops the node's heartbeats (Lease, status); its pods keep running."""
        os.kill(self.procs[name].pid, signal.SIGUSR1)

    def resume(self, name):
        os.kill(self.procs[name].pid, signal.SIGUSR2)

    def exec(self, namespace, pod, container, argv, **kw):
        return exec_in_pod(self.cp, namespace, pod, container, argv, **kw)

    def stop_node(self, name, timeout=60):
        """Stops one agent (its pods' containers go with it) and cleans its root."""
        p = self.procs.pop(name, None)
        if p is not None:
            stop_group(p, timeout)
        root = self.root / name
        if root.exists():
            subprocess.run([sys.executable, str(AGENT), "--cleanup", "--root", str(root),
                            "--bridge", self.bridge, "--cidr", self.cidr, "--keep-bridge"],
                           capture_output=True, timeout=180)
            remove_containers(root)

    def stop(self, timeout=60):
        """Stops every agent and removes what they left: containers, netns, veths, the bridge
        (when nothing else is attached)."""
        errors = []
        for name in list(self.procs) + [n for n in self.names if n not in self.procs]:
            try:
                self.stop_node(name, timeout)
            except Exception as e:  # noqa: BLE001 - clean up the others all the same
                errors.append(f"{name}: {e}")
        try:
            remove_containers(self.root)
            for d in self.root.iterdir() if self.root.exists() else []:
                if d.is_dir():
                    remove_containers(d)
        except Exception as e:  # noqa: BLE001
            errors.append(str(e))
        remove_bridge(self.bridge)
        if errors:
            raise RuntimeError("; ".join(errors))


# --- command line -----------------------------------------------------------------------------

def main():
    from controlplane import ControlPlane, down as cp_down  # noqa: PLC0415

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["up", "down"])
    ap.add_argument("dir")
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--bridge", default=DEFAULT_BRIDGE)
    ap.add_argument("--cidr", default=DEFAULT_CIDR)
    a = ap.parse_args()
    d = Path(a.dir).resolve()
    state = d / "nodes.json"
    if a.action == "down":
        if state.exists():
            st = json.loads(state.read_text())
            for name, pid in st.get("pids", {}).items():
                try:
                    os.killpg(pid, signal.SIGTERM)
                except ProcessLookupError:
                    continue
                for _ in range(300):
                    try:
                        os.kill(pid, 0)
                    except ProcessLookupError:
                        break
                    time.sleep(0.2)
                subprocess.run([sys.executable, str(AGENT), "--cleanup", "--root",
                                str(d / "nodes" / name), "--bridge", st["bridge"], "--cidr",
                                st["cidr"], "--keep-bridge"], capture_output=True, timeout=180)
                remove_containers(d / "nodes" / name)
            cp_down(d)
            remove_bridge(st["bridge"])
            state.unlink()
        else:
            cp_down(d)
        return
    gw = ensure_bridge(a.bridge, a.cidr)
    cp = ControlPlane(d, advertise=gw).start()
    agents = NodeAgents(cp, d / "nodes", [f"kn-{i + 1}" for i in range(a.nodes)],
                        bridge=a.bridge, cidr=a.cidr)
    try:
        agents.start()
    except BaseException:
        cp.stop()
        raise
    state.write_text(json.dumps({"bridge": a.bridge, "cidr": a.cidr,
                                 "pids": {n: p.pid for n, p in agents.procs.items()}}))
    print(f"control plane {cp.url}, nodes {', '.join(agents.names)}; "
          f"export KUBECONFIG={cp.kubeconfig}")


if __name__ == "__main__":
    main()
