#!/usr/bin/env python3
"""A node agent for Shoal's Kubernetes tests, in two modes.

Process mode (the kubelet simulator of the older tests, against tests/k8s/fakekube): runs the
pods bound to its simulated nodes as real local processes with the build's binaries, each pod in
its own network namespace (own IP on a bridge, own hostname, own /etc/hosts that plays cluster
DNS), over the standard REST API (list/watch, merge-patch of pods/status, DELETE with
gracePeriodSeconds=0).

  kubelet_sim.py --api URL --node k1 [--node k2] --root DIR --bin-dir DIR [--bin-dir DIR2]
                 [--image-prefix shoal/] [--bridge shoalbr0 --cidr 10.244.0.0/16]

OCI mode (against a real kube-apiserver, tests/kube/): one agent per node, authenticated as
system:node:NAME by its --kubeconfig, registers its Node, heartbeats through its Lease and node
status, and runs its pods as real OCI containers with podman (oci_runtime.py says why this is
our own agent and not the real kubelet: Debian 12's containerd 1.6.20 is older than Kubernetes
1.31+ supports, and kubelet 1.35+ refuses these cgroup-v1-only hosts). Cluster DNS/Service
emulation reads the cluster with --dns-kubeconfig, the local storage provisioner writes
PersistentVolumes with --storage-kubeconfig: rights a node does not have.

  kubelet_sim.py --kubeconfig NODE.kubeconfig --node NAME --root DIR \
                 [--dns-kubeconfig F] [--storage-kubeconfig F] [--pod-api URL] \
                 [--bridge B --cidr C] [--node-cpus N --node-memory Q]
  kill -USR1 PID / kill -USR2 PID   # stop / resume heartbeats (the Node goes NotReady)
  kubelet_sim.py --cleanup --root DIR      # remove what a crashed run left behind

Needs root (ip netns, mount, podman). In process mode only pods whose every image starts with
--image-prefix run; others stay Pending with an ErrImagePull waiting reason. tests/kube/nodes.py
starts OCI-mode agents for a tests/kube/controlplane.py control plane.
"""

import argparse
import datetime
import fcntl
import http.client
import ipaddress
import json
import os
import shlex
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kubelet_pod as kp  # noqa: E402

IP = shutil.which("ip") or "/usr/sbin/ip"
NSENTER = shutil.which("nsenter") or "/usr/bin/nsenter"
UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"
SETPRIV = shutil.which("setpriv") or "/usr/bin/setpriv"
MOUNT = shutil.which("mount") or "/usr/bin/mount"
HOSTNAME = shutil.which("hostname") or "/usr/bin/hostname"
IP_DIR = Path("/run/shoal-kubelet-sim/ips")
SA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
SA_VOLUME = "kube-api-access-sim"  # shared by every simulator on this host
NETNS_ETC = Path("/etc/netns")
CMD_TIMEOUT = 10
BACKOFF_MIN, BACKOFF_MAX = 1.0, 10.0


def log(msg):
    sys.stderr.write(f"{datetime.datetime.now().strftime('%H:%M:%S.%f')[:-3]} kubelet-sim: {msg}\n")
    sys.stderr.flush()


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def run(argv, timeout=CMD_TIMEOUT, check=True):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: rc={r.returncode}: {r.stderr.strip()}")
    return r


# ------------------------------------------------------------------------------------------
# Kubernetes REST client
# ------------------------------------------------------------------------------------------

class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:300]}")
        self.status = status
        self.body = body


class Kube:
    """A small Kubernetes REST client. With a CA the server's certificate is verified; a client
    certificate/key or a bearer token authenticates (load_kubeconfig reads them from a
    kubeconfig). Without a CA (the fake API server of the older tests) TLS is unverified."""

    def __init__(self, url, token=None, ca=None, cert=None, key=None, token_file=None):
        u = urllib.parse.urlsplit(url)
        self.https = u.scheme == "https"
        self.host = u.hostname
        self.port = u.port or (443 if self.https else 80)
        self.prefix = u.path.rstrip("/")
        self.url = url
        self.token = token
        self.token_file = token_file
        self.ctx = None
        if self.https:
            if ca:
                self.ctx = ssl.create_default_context(cafile=str(ca))
            else:
                self.ctx = ssl._create_unverified_context()
            if cert:
                self.ctx.load_cert_chain(str(cert), str(key))
        # One kept-alive connection per thread against a real API server (TLS handshakes are
        # not free on a 2-core host); a fresh one per request otherwise, as before.
        self.reuse = bool(ca)
        self.local = threading.local()

    def _conn(self, timeout):
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=self.ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def _headers(self, ctype=None):
        h = {"Accept": "application/json", "User-Agent": "shoal-kubelet-sim/1.0"}
        if ctype:
            h["Content-Type"] = ctype
        token = self.token
        if self.token_file:
            try:
                token = Path(self.token_file).read_text().strip()
            except OSError:
                pass
        if token:
            h["Authorization"] = f"Bearer {token}"
        return h

    def request(self, method, path, body=None, ctype="application/json", params=None, timeout=10):
        if params:
            path += "?" + urllib.parse.urlencode(params)
        data = json.dumps(body).encode() if body is not None else None
        headers = self._headers(ctype if data is not None else None)
        for attempt in (0, 1):
            conn = getattr(self.local, "conn", None) if self.reuse else None
            fresh = conn is None
            if fresh:
                conn = self._conn(timeout)
            try:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request(method, self.prefix + path, body=data, headers=headers)
                resp = conn.getresponse()
                raw = resp.read().decode(errors="replace")
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                    http.client.CannotSendRequest, http.client.ResponseNotReady):
                conn.close()
                self.local.conn = None
                if fresh or attempt:
                    raise
                continue  # a kept-alive connection the server had closed: once more
            except BaseException:
                conn.close()
                self.local.conn = None
                raise
            if self.reuse and not resp.will_close:
                self.local.conn = conn
            else:
                conn.close()
                self.local.conn = None
            break
        if resp.status >= 300:
            raise ApiError(resp.status, raw)
        return json.loads(raw) if raw.strip() else {}

    def get(self, path, params=None):
        try:
            return self.request("GET", path, params=params)
        except ApiError as e:
            if e.status == 404:
                return None
            raise

    def merge_patch(self, path, body):
        return self.request("PATCH", path, body, ctype="application/merge-patch+json")

    def strategic_patch(self, path, body):
        return self.request("PATCH", path, body, ctype="application/strategic-merge-patch+json")

    def watch(self, path, params, stop):
        """Yields (type, object) of a watch stream until it ends or `stop` is set."""
        q = dict(params, watch="true", allowWatchBookmarks="true", timeoutSeconds="60")
        conn = self._conn(75)
        try:
            conn.request("GET", self.prefix + path + "?" + urllib.parse.urlencode(q),
                         headers=self._headers())
            resp = conn.getresponse()
            if resp.status >= 300:
                raise ApiError(resp.status, resp.read().decode(errors="replace"))
            while not stop.is_set():
                line = resp.readline()
                if not line:
                    return
                if not line.strip():
                    continue
                ev = json.loads(line)
                yield ev.get("type"), ev.get("object") or {}
        finally:
            conn.close()


def load_kubeconfig(path, context=None):
    """A Kube for a kubeconfig's current (or named) context: server, certificate-authority
    (-data), client-certificate/-key (-data), token or tokenFile. Inline data goes through a
    private temporary directory, removed once loaded (ssl wants files)."""
    import base64
    import tempfile
    try:
        import yaml
        cfg = yaml.safe_load(Path(path).read_text())
    except ImportError:
        cfg = json.loads(Path(path).read_text())
    base = Path(path).resolve().parent
    name = context or cfg.get("current-context")
    ctx = next((c["context"] for c in cfg.get("contexts") or [] if c.get("name") == name),
               (cfg.get("contexts") or [{}])[0].get("context", {}))
    cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx.get("cluster",
                   cfg["clusters"][0]["name"]))
    users = cfg.get("users") or []
    user = next((u.get("user") or {} for u in users if u.get("name") == ctx.get("user")),
                users[0].get("user", {}) if users else {})
    tmp = None

    def file_of(field):
        nonlocal tmp
        for src in (cluster, user):
            if src.get(field):
                p = Path(src[field])
                return p if p.is_absolute() else base / p
            if src.get(field + "-data"):
                if tmp is None:
                    tmp = Path(tempfile.mkdtemp(prefix="kubeconfig-"))
                p = tmp / field
                p.write_bytes(base64.b64decode(src[field + "-data"]))
                p.chmod(0o600)
                return p
        return None

    token_file = user.get("tokenFile")
    if token_file and not Path(token_file).is_absolute():
        token_file = base / token_file
    kube = Kube(cluster["server"], token=user.get("token"),
                ca=file_of("certificate-authority"), cert=file_of("client-certificate"),
                key=file_of("client-key"), token_file=token_file)
    if cluster.get("insecure-skip-tls-verify") and kube.https:
        kube.ctx.check_hostname = False
        kube.ctx.verify_mode = ssl.CERT_NONE
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)  # loaded into the SSL context already
    kube.namespace = ctx.get("namespace", "default")
    return kube


class Informer:
    """List + watch of one collection into a dict keyed by namespace/name; calls on_change()
    after every change (from the informer's own thread)."""

    def __init__(self, kube, path, params, on_change, stop):
        self.kube, self.path, self.params = kube, path, dict(params or {})
        self.on_change, self.stop = on_change, stop
        self.items = {}
        self.lock = threading.Lock()
        self.synced = threading.Event()
        threading.Thread(target=self._loop, daemon=True, name=f"informer{path}").start()

    @staticmethod
    def key(obj):
        m = obj.get("metadata", {})
        return f"{m.get('namespace', '')}/{m.get('name')}"

    def snapshot(self):
        with self.lock:
            return list(self.items.values())

    def get(self, ns, name):
        with self.lock:
            return self.items.get(f"{ns}/{name}")

    def _loop(self):
        while not self.stop.is_set():
            try:
                lst = self.kube.request("GET", self.path, params=self.params or None)
                with self.lock:
                    self.items = {self.key(o): o for o in lst.get("items") or []}
                self.synced.set()
                self.on_change(None, None)
                rv = (lst.get("metadata") or {}).get("resourceVersion", "")
                while not self.stop.is_set():
                    params = dict(self.params, resourceVersion=rv)
                    for typ, obj in self.kube.watch(self.path, params, self.stop):
                        if typ == "ERROR":
                            raise ApiError(obj.get("code", 410), json.dumps(obj))
                        rv = (obj.get("metadata") or {}).get("resourceVersion", rv)
                        if typ == "BOOKMARK":
                            continue
                        with self.lock:
                            if typ == "DELETED":
                                self.items.pop(self.key(obj), None)
                            else:
                                self.items[self.key(obj)] = obj
                        self.on_change(typ, obj)
            except Exception as e:  # noqa: BLE001 - relist after any watch failure
                if not self.stop.is_set():
                    log(f"watch {self.path}: {e}; relisting")
                    self.stop.wait(1)


# ------------------------------------------------------------------------------------------
# Network: a bridge and one netns + veth per pod
# ------------------------------------------------------------------------------------------

def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def netns_exists(name):
    return (Path("/run/netns") / name).exists()


class Network:
    def __init__(self, bridge, cidr, ledger):
        self.bridge = bridge
        self.net = ipaddress.ip_network(cidr)
        self.gateway = str(next(self.net.hosts()))
        self.ledger = ledger  # <root>/state/netns: what --cleanup removes
        self.lock = threading.Lock()

    def ensure_bridge(self):
        with self.lock:
            if run([IP, "link", "show", self.bridge], check=False).returncode != 0:
                run([IP, "link", "add", "name", self.bridge, "type", "bridge"], check=False)
            addrs = run([IP, "-o", "addr", "show", "dev", self.bridge]).stdout
            if f" {self.gateway}/" not in addrs:
                run([IP, "addr", "add", f"{self.gateway}/{self.net.prefixlen}", "dev", self.bridge])
            run([IP, "link", "set", self.bridge, "up"])

    def _allocate_ip(self, ns):
        """Round-robin from the last address handed out (like host-local IPAM), so an address
        is not reused at once while neighbours may still cache it."""
        IP_DIR.mkdir(parents=True, exist_ok=True)
        hosts = list(self.net.hosts()) if self.net.num_addresses <= 65536 else []
        try:
            last_file = IP_DIR / f"last-{self.net.network_address}"
            last = ipaddress.ip_address(last_file.read_text().strip())
            start = hosts.index(last) + 1 if last in self.net else 0
        except (OSError, ValueError):
            start = 0
        for addr in hosts[start:] + hosts[:start]:
            ip = str(addr)
            if ip == self.gateway:
                continue
            path = IP_DIR / ip
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    pid, owner = path.read_text().split()
                    if not pid_alive(int(pid)) and not netns_exists(owner):
                        path.unlink()  # stale lease of a crashed simulator; retry next round
                except (OSError, ValueError):
                    pass
                continue
            os.write(fd, f"{os.getpid()} {ns}\n".encode())
            os.close(fd)
            (IP_DIR / f"last-{self.net.network_address}").write_text(ip + "\n")
            return ip
        raise RuntimeError("pod CIDR exhausted")

    def setup(self, ns, veth):
        ip = self._allocate_ip(ns)
        self.ledger.mkdir(parents=True, exist_ok=True)
        (self.ledger / ns).write_text(json.dumps({"veth": veth, "ip": ip}))
        vpeer = "kq" + veth[2:]
        cmds = [
            [IP, "netns", "add", ns],
            # The pod's MAC follows from its IP, so ARP caches stay right when an IP is reused.
            [IP, "link", "add", veth, "type", "veth", "peer", "name", vpeer, "address",
             "0a:58:" + ":".join(f"{b:02x}" for b in ipaddress.ip_address(ip).packed)],
            [IP, "link", "set", vpeer, "netns", ns],
            [IP, "link", "set", veth, "master", self.bridge],
            [IP, "link", "set", veth, "up"],
            [IP, "-n", ns, "link", "set", vpeer, "name", "eth0"],
            [IP, "-n", ns, "addr", "add", f"{ip}/{self.net.prefixlen}", "dev", "eth0"],
            [IP, "-n", ns, "link", "set", "eth0", "up"],
            [IP, "-n", ns, "link", "set", "lo", "up"],
            [IP, "-n", ns, "route", "add", "default", "via", self.gateway],
        ]
        for c in cmds:
            run(c)
        return ip

    def teardown(self, ns):
        log(f"tearing down netns {ns}")
        entry = self.ledger / ns
        info = {}
        try:
            info = json.loads(entry.read_text())
        except (OSError, ValueError):
            pass
        kill_netns_processes(ns)
        if netns_exists(ns):
            run([IP, "netns", "del", ns], check=False)
        if info.get("veth"):
            if run([IP, "link", "show", info["veth"]], check=False).returncode == 0:
                run([IP, "link", "del", info["veth"]], check=False)
        shutil.rmtree(NETNS_ETC / ns, ignore_errors=True)
        if info.get("ip"):
            try:
                owner = (IP_DIR / info["ip"]).read_text().split()[1]
                if owner == ns:
                    (IP_DIR / info["ip"]).unlink()
            except (OSError, IndexError):
                pass
        entry.unlink(missing_ok=True)

    def maybe_remove_bridge(self):
        """Removes the bridge when no veth is attached any more (other simulators may share it)."""
        with self.lock:
            r = run([IP, "-o", "link", "show", "master", self.bridge], check=False)
            if r.returncode == 0 and not r.stdout.strip():
                run([IP, "link", "del", self.bridge], check=False)


def netns_pids(ns):
    if not netns_exists(ns):
        return []
    r = run([IP, "netns", "pids", ns], check=False)
    return [int(p) for p in r.stdout.split() if p.isdigit()]


def kill_netns_processes(ns, grace=0.0):
    """Every process in the pod's netns belongs to the pod (also those that left its session)."""
    pids = netns_pids(ns)
    if grace and pids:
        for p in pids:
            try:
                os.kill(p, signal.SIGTERM)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and netns_pids(ns):
            time.sleep(0.05)
    for _ in range(50):
        pids = netns_pids(ns)
        if not pids:
            return
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)


# ------------------------------------------------------------------------------------------
# One container
# ------------------------------------------------------------------------------------------

class Probe:
    def __init__(self, spec):
        self.spec = spec or None
        self.delay = (spec or {}).get("initialDelaySeconds", 0)
        self.period = max((spec or {}).get("periodSeconds", 10), 0.2)
        self.timeout = (spec or {}).get("timeoutSeconds", 1)
        self.failure_threshold = (spec or {}).get("failureThreshold", 3)
        self.success_threshold = (spec or {}).get("successThreshold", 1)
        self.reset(0)

    def reset(self, started):
        self.next = started + self.delay
        self.successes = self.failures = 0
        self.ok = False

    def due(self, now):
        return self.spec is not None and now >= self.next

    def record(self, now, ok):
        self.next = now + self.period
        if ok:
            self.successes += 1
            self.failures = 0
            if self.successes >= self.success_threshold:
                self.ok = True
        else:
            self.failures += 1
            self.successes = 0
            if self.failures >= self.failure_threshold:
                self.ok = False
        return self.failures >= self.failure_threshold


class Container:
    def __init__(self, spec, init=False):
        self.spec = spec
        self.name = spec["name"]
        self.init = init
        self.proc = None
        self.state = "waiting"
        self.reason = "ContainerCreating"
        self.message = ""
        self.exit_code = None
        self.started_at = self.finished_at = None
        self.last_state = None
        self.restarts = 0
        self.backoff = BACKOFF_MIN
        self.restart_at = 0.0
        self.readiness = Probe(spec.get("readinessProbe"))
        self.liveness = Probe(spec.get("livenessProbe"))
        self.startup = Probe(spec.get("startupProbe"))
        self.started = False
        self.ready = False

    def status(self):
        st = {"name": self.name, "image": self.spec.get("image", ""), "imageID": "",
              "ready": self.ready, "restartCount": self.restarts, "started": self.started}
        if self.proc:
            st["containerID"] = f"shoal-sim://{self.proc.pid}"
        if self.state == "running":
            st["state"] = {"running": {"startedAt": self.started_at}}
        elif self.state == "terminated":
            st["state"] = {"terminated": {"exitCode": self.exit_code, "reason": self.reason,
                                          "startedAt": self.started_at,
                                          "finishedAt": self.finished_at}}
        else:
            waiting = {"reason": self.reason}
            if self.message:
                waiting["message"] = self.message
            st["state"] = {"waiting": waiting}
        if self.last_state:
            st["lastState"] = self.last_state
        return st


# ------------------------------------------------------------------------------------------
# One pod
# ------------------------------------------------------------------------------------------

class PodWorker(threading.Thread):
    def __init__(self, sim, pod):
        super().__init__(daemon=True, name=f"pod-{pod['metadata']['name']}")
        self.sim = sim
        self.pod = pod
        self.uid = pod["metadata"]["uid"]
        self.ns_name = pod["metadata"].get("namespace", "default")
        self.name = pod["metadata"]["name"]
        short = self.uid.replace("-", "")[:8]
        self.netns = f"kpod-{short}"
        self.veth = f"kv{short}"
        self.dir = sim.root / "pods" / self.uid
        self.ip = None
        self.gone = False  # the API object is gone (forced deletion)
        self.wake = threading.Event()
        self.lock = threading.Lock()
        self.inits = [Container(c, init=True) for c in pod["spec"].get("initContainers") or []]
        self.containers = [Container(c) for c in pod["spec"].get("containers") or []]
        self.init_done = not self.inits
        self.start_time = now_rfc3339()
        self.last_reported = None
        self.volume_dirs = {}
        self.vol_versions = {}
        self.finished = threading.Event()
        self.crashed = False

    # --- inputs from the informers --------------------------------------------------------

    def update(self, pod):
        with self.lock:
            self.pod = pod
        self.wake.set()

    def deleted(self):
        self.gone = True
        self.wake.set()

    def current(self):
        with self.lock:
            return self.pod

    # --- main loop -----------------------------------------------------------------------

    def run(self):
        try:
            self._run()
        except Exception:  # noqa: BLE001 - a pod's failure must not take the simulator down
            log(f"pod {self.ns_name}/{self.name}: {traceback.format_exc()}")
            self.crashed = True
            try:
                self._terminate(grace_override=0)
            except Exception:  # noqa: BLE001
                log(f"pod {self.ns_name}/{self.name}: {traceback.format_exc()}")
            self.sim.stopping.wait(2)  # then the next sync starts a fresh worker
        finally:
            self.finished.set()
            self.sim.worker_done(self)

    def terminating(self):
        return (self.gone or bool(self.current()["metadata"].get("deletionTimestamp"))
                or self.sim.stopping.is_set())

    def _run(self):
        pod = self.current()
        specs = (pod["spec"].get("initContainers") or []) + pod["spec"]["containers"]
        images = [c.get("image", "") for c in specs]
        if not all(i.startswith(self.sim.image_prefix) for i in images):
            for c in self.inits + self.containers:
                c.reason = "ErrImagePull"
                c.message = f"image not runnable by the simulator (prefix {self.sim.image_prefix})"
            self.report()
            while not self.terminating():
                self.wake.wait(1)
                self.wake.clear()
            self._finish_deletion()
            return
        self.report()
        self.ip = self.sim.net.setup(self.netns, self.veth)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.sim.root / "logs").mkdir(parents=True, exist_ok=True)
        self.write_hosts()
        (NETNS_ETC / self.netns / "resolv.conf").write_text("# cluster DNS is /etc/hosts\n")
        while not self.terminating():
            err = self.prepare_volumes()
            if err is None:
                break
            for c in self.inits + self.containers:
                c.reason, c.message = "ContainerCreating", err
            self.report()
            self.wake.wait(1)
            self.wake.clear()
        self.report()
        last_volume_sync = time.monotonic()
        while not self.terminating():
            now = time.monotonic()
            if not self.init_done:
                self.step_init(now)
            else:
                for c in self.containers:
                    self.step_container(c, now)
            if now - last_volume_sync > 1.0:
                self.prepare_volumes(refresh=True)
                last_volume_sync = now
            self.report()
            self.wake.wait(0.2)
            self.wake.clear()
        self._terminate()

    def will_restart(self, c):
        if c.state != "terminated":
            return True
        return kp.will_restart(self.current()["spec"].get("restartPolicy"), c.exit_code)

    def step_init(self, now):
        for c in self.inits:
            if c.state == "terminated" and c.exit_code == 0:
                continue
            if c.state == "running":
                self.reap(c)
                if c.state == "terminated" and c.exit_code != 0:
                    if self.current()["spec"].get("restartPolicy") == "Never":
                        return
                    c.restart_at = now + c.backoff
                    c.backoff = min(c.backoff * 2, BACKOFF_MAX)
                return
            if c.state == "terminated" and self.current()["spec"].get("restartPolicy") == "Never":
                return  # failed init container: the pod failed
            if now >= c.restart_at:
                if c.state == "terminated":
                    c.restarts += 1
                self.start_container(c)
            return
        self.init_done = True

    def step_container(self, c, now):
        if c.state == "running":
            self.reap(c)
        if c.state == "running":
            self.run_probes(c, now)
            return
        if c.state == "terminated":
            if not self.will_restart(c):
                return
            # Like kubelet: waiting in CrashLoopBackOff, the exit in lastState.
            c.last_state = {"terminated": {"exitCode": c.exit_code, "reason": c.reason,
                                           "startedAt": c.started_at, "finishedAt": c.finished_at}}
            c.state, c.reason = "waiting", "CrashLoopBackOff"
            c.message = f"back-off {c.backoff:g}s restarting failed container"
            c.restart_at = now + c.backoff
            c.backoff = min(c.backoff * 2, BACKOFF_MAX)
            c.restarts += 1
        if c.state == "waiting" and c.restart_at and now < c.restart_at:
            return
        self.start_container(c)

    def reap(self, c):
        rc = c.proc.poll()
        if rc is None:
            return
        c.state = "terminated"
        c.exit_code = rc if rc >= 0 else 128 - rc
        c.reason = "Completed" if c.exit_code == 0 else "Error"
        c.finished_at = now_rfc3339()
        c.ready = False
        c.started = False
        c.restart_at = 0
        if time.monotonic() - c.t_start > 10:
            c.backoff = BACKOFF_MIN  # ran long enough: back-off resets as kubelet's does

    # --- starting a container ---------------------------------------------------------------

    def lookup(self, kind, name):
        inf = self.sim.configmaps if kind == "ConfigMap" else self.sim.secrets
        obj = inf.get(self.ns_name, name) if inf is not None else None
        if obj is None:
            plural = "configmaps" if kind == "ConfigMap" else "secrets"
            path = f"/api/v1/namespaces/{self.ns_name}/{plural}/{name}"
            obj = self.sim.cached_get(path)
        return obj

    def container_env(self, c):
        pod = dict(self.current())
        pod["status"] = dict(pod.get("status") or {}, podIP=self.ip, podIPs=[{"ip": self.ip}],
                             hostIP=self.sim.net.gateway, hostIPs=[{"ip": self.sim.net.gateway}])
        svc_env = {}
        if pod["spec"].get("enableServiceLinks", True):
            svc_env = kp.service_env(self.sim.services.snapshot(), self.ns_name,
                                     self.sim.backend_ip)
        base = {"PATH": ":".join([str(d) for d in self.sim.bin_dirs] + [kp.STANDARD_PATH]),
                "HOSTNAME": kp.pod_hostname(pod), "HOME": "/root"}
        base.update(self.sim.pod_api_env())
        env, err = kp.build_env(pod, c.spec, svc_env, self.lookup, base)
        return env, err

    def start_container(self, c):
        env, err = self.container_env(c)
        if err:
            c.state, c.reason, c.message = "waiting", "CreateContainerConfigError", err
            c.restart_at = time.monotonic() + 1
            return
        argv = kp.container_argv(c.spec, env, self.sim.entrypoints)
        if not argv:
            c.state, c.reason = "waiting", "RunContainerError"
            c.message = "no command and no --entrypoint for the image"
            c.restart_at = time.monotonic() + 2
            return
        pod = self.current()
        script = [f"{HOSTNAME} {shlex.quote(kp.pod_hostname(pod))} || exit 111"]
        # A container's own /run, /var/spool, ... (its image's filesystem, in a real runtime):
        # pods on this host must not share e.g. /run/shoal/auth.sock.
        private = self.private_dirs(c)
        for host_dir, own in private.items():
            q_own, q_dir = shlex.quote(str(own)), shlex.quote(host_dir)
            script.append(f"{MOUNT} --bind {q_own} {q_dir} || exit 112")
        mounts = list(c.spec.get("volumeMounts") or [])
        if SA_VOLUME in self.volume_dirs and not any(m["mountPath"] == SA_PATH for m in mounts):
            mounts.append({"name": SA_VOLUME, "mountPath": SA_PATH, "readOnly": True})
        for m in sorted(mounts, key=lambda m: m["mountPath"].count("/")):
            src = self.volume_dirs.get(m["name"])
            if src is None:
                c.state, c.reason = "waiting", "CreateContainerConfigError"
                c.message = f"volume {m['name']} not found"
                return
            sub = kp.expand(m.get("subPath") or m.get("subPathExpr") or "", env)
            if sub:
                src = src / sub
                if not src.exists():
                    src.mkdir(parents=True, exist_ok=True)
            hidden = [d for d in private if str(src.resolve()).startswith(d.rstrip("/") + "/")]
            if hidden:
                c.state, c.reason = "waiting", "CreateContainerConfigError"
                c.message = f"volume {m['name']} source {src} is under private dir {hidden[0]}"
                c.restart_at = time.monotonic() + 5
                return
            self.ensure_target(Path(m["mountPath"]), src.is_dir(), private)
            q_src, q_dst = shlex.quote(str(src)), shlex.quote(m["mountPath"])
            script.append(f"{MOUNT} --bind {q_src} {q_dst} || exit 112")
            if m.get("readOnly"):
                script.append(f"{MOUNT} -o remount,bind,ro {q_dst} || exit 112")
        workdir = c.spec.get("workingDir") or "/"
        script.append(f"cd {shlex.quote(workdir)} || exit 113")
        sc = dict(pod["spec"].get("securityContext") or {})
        sc.update(c.spec.get("securityContext") or {})
        prefix = ""
        if sc.get("runAsUser") not in (None, 0) or sc.get("runAsGroup") not in (None, 0):
            uid, gid = sc.get("runAsUser", 0), sc.get("runAsGroup", sc.get("runAsUser", 0))
            groups = [str(g) for g in sc.get("supplementalGroups") or []]
            if sc.get("fsGroup") is not None:
                groups.append(str(sc["fsGroup"]))
            gflag = f"--groups {','.join(groups)}" if groups else "--clear-groups"
            prefix = f"{SETPRIV} --reuid {int(uid)} --regid {int(gid)} {gflag} -- "
        script.append(f'exec {prefix}"$@"')
        logf = open(self.sim.root / "logs" / f"{self.ns_name}_{self.name}_{c.name}.log", "ab")
        try:
            c.proc = subprocess.Popen(
                [IP, "netns", "exec", self.netns, UNSHARE, "--uts", "sh", "-c", "\n".join(script),
                 "sh"] + argv,
                env=env, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                start_new_session=True, cwd="/")
        finally:
            logf.close()
        c.env = env
        c.t_start = time.monotonic()
        c.state, c.reason, c.message = "running", "", ""
        c.started_at = now_rfc3339()
        for p in (c.readiness, c.liveness, c.startup):
            p.reset(c.t_start)
        c.started = c.startup.spec is None
        c.ready = c.started and c.readiness.spec is None and not c.init
        log(f"pod {self.ns_name}/{self.name}: started {c.name} pid {c.proc.pid}: {argv}")
        self.sim.event(pod, "Started", f"Started container {c.name}")

    def private_dirs(self, c):
        """host dir -> this container's own (fresh on each start, like a new container)."""
        out = {}
        for d in self.sim.private_dirs:
            if not os.path.isdir(d):
                continue
            own = self.dir / "private" / c.name / d.strip("/").replace("/", "_")
            shutil.rmtree(own, ignore_errors=True)
            own.mkdir(parents=True)
            os.chmod(own, os.stat(d).st_mode & 0o7777)
            out[os.path.realpath(d)] = own
        return out

    def ensure_target(self, path, is_dir, private):
        real = Path(os.path.realpath(path))
        for host_dir, own in private.items():
            if str(real).startswith(host_dir.rstrip("/") + "/"):
                path = own / os.path.relpath(real, host_dir)  # created in the container's copy
                if is_dir:
                    path.mkdir(parents=True, exist_ok=True)
                else:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.touch()
                return
        if path.exists():
            return
        missing = []
        p = path
        while not p.exists():
            missing.append(p)
            p = p.parent
        try:
            if is_dir:
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
        except FileExistsError:
            pass  # another pod's container created it meanwhile
        if missing:
            self.sim.note_created(missing[-1])

    # --- probes --------------------------------------------------------------------------

    def run_probes(self, c, now):
        if c.startup.spec is not None and not c.started:
            if c.startup.due(now):
                fail = c.startup.record(now, self.probe(c, c.startup.spec))
                if c.startup.ok:
                    c.started = True
                    c.readiness.reset(now)
                    c.liveness.reset(now)
                elif fail:
                    self.restart_for(c, "startup probe failed")
            return
        if c.liveness.due(now):
            if c.liveness.record(now, self.probe(c, c.liveness.spec)):
                self.restart_for(c, "liveness probe failed")
                return
        if c.readiness.spec is None:
            c.ready = True
        elif c.readiness.due(now):
            c.readiness.record(now, self.probe(c, c.readiness.spec))
            c.ready = c.readiness.ok

    def restart_for(self, c, why):
        log(f"pod {self.ns_name}/{self.name}: {c.name}: {why}, restarting")
        self.sim.event(self.current(), "Unhealthy",
                       f"Container {c.name} {why}, will be restarted", "Warning")
        self.stop_container(c, self.grace())
        c.restart_at = 0

    def probe(self, c, spec):
        timeout = spec.get("timeoutSeconds", 1)
        try:
            if "httpGet" in spec:
                return self.http_get(c, spec["httpGet"], timeout)
            if "tcpSocket" in spec:
                port = kp.resolve_port(spec["tcpSocket"].get("port"), c.spec)
                host = spec["tcpSocket"].get("host") or self.ip
                with socket.create_connection((host, port), timeout=timeout):
                    return True
            if "exec" in spec:
                return self.exec_in(c, spec["exec"].get("command") or [], timeout) == 0
        except Exception:  # noqa: BLE001 - any error is a failed probe
            return False
        return False

    def http_get(self, c, spec, timeout):
        port = kp.resolve_port(spec.get("port"), c.spec)
        host = spec.get("host") or self.ip
        if (spec.get("scheme") or "HTTP").upper() == "HTTPS":
            conn = http.client.HTTPSConnection(host, port, timeout=timeout,
                                               context=ssl._create_unverified_context())
        else:
            conn = http.client.HTTPConnection(host, port, timeout=timeout)
        try:
            headers = {h["name"]: h["value"] for h in spec.get("httpHeaders") or []}
            conn.request("GET", spec.get("path") or "/", headers=headers)
            return 200 <= conn.getresponse().status < 400
        finally:
            conn.close()

    def exec_in(self, c, command, timeout):
        """Runs `command` in the container's namespaces (its mounts, hostname and network)."""
        env = getattr(c, "env", None) or self.container_env(c)[0] or {}
        if c.proc and c.proc.poll() is None:
            argv = [NSENTER, "-t", str(c.proc.pid), "-m", "-u", "-n", "--"] + list(command)
        else:
            argv = [IP, "netns", "exec", self.netns] + list(command)
        try:
            r = subprocess.run(argv, env=env, stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=timeout, start_new_session=True)
            return r.returncode
        except (subprocess.TimeoutExpired, OSError):
            return -1

    # --- termination ------------------------------------------------------------------

    def grace(self):
        pod = self.current()
        g = pod["metadata"].get("deletionGracePeriodSeconds")
        if g is None:
            g = pod["spec"].get("terminationGracePeriodSeconds", 30)
        return max(int(g), 0)

    def stop_container(self, c, grace):
        if not c.proc or c.proc.poll() is not None:
            if c.proc and c.state == "running":
                self.reap(c)
            return
        try:
            os.killpg(c.proc.pid, signal.SIGTERM)
        except OSError:
            pass
        try:
            c.proc.wait(timeout=max(grace, 0.1))
        except subprocess.TimeoutExpired:
            try:
                os.killpg(c.proc.pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                c.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        self.reap(c)

    def pre_stop(self, c, budget):
        hook = ((c.spec.get("lifecycle") or {}).get("preStop")) or {}
        if not hook or c.state != "running" or budget <= 0:
            return
        log(f"pod {self.ns_name}/{self.name}: preStop of {c.name} (budget {budget:.1f}s)")
        try:
            if "exec" in hook:
                self.exec_in(c, hook["exec"].get("command") or [], budget)
            elif "httpGet" in hook:
                self.http_get(c, hook["httpGet"], budget)
            elif "sleep" in hook:
                time.sleep(min(hook["sleep"].get("seconds", 0), budget))
        except Exception as e:  # noqa: BLE001 - a failing hook never blocks the deletion
            log(f"pod {self.ns_name}/{self.name}: preStop of {c.name} failed: {e}")

    def _terminate(self, grace_override=None):
        grace = self.grace() if grace_override is None else grace_override
        if self.gone or self.sim.stopping.is_set():
            grace = min(grace, 2) if not self.gone else 0
        deadline = time.monotonic() + grace
        running = [c for c in self.containers + self.inits if c.state == "running"]
        if running and not self.gone and not self.sim.stopping.is_set():
            names = ", ".join(c.name for c in running)
            self.sim.event(self.current(), "Killing", f"Stopping container {names}")
        # preStop hooks belong to pod deletion, not to the simulator going away.
        if grace > 0 and running and not self.sim.stopping.is_set():
            hooks = [threading.Thread(target=self.pre_stop, args=(c, grace), daemon=True)
                     for c in running]
            for t in hooks:
                t.start()
            for t in hooks:
                t.join(max(deadline - time.monotonic(), 0))
        for c in running:
            if c.proc and c.proc.poll() is None:
                try:
                    os.killpg(c.proc.pid, signal.SIGTERM)
                except OSError:
                    pass
        # Like kubelet: a hook that ate the whole grace period still leaves 2 s for SIGTERM.
        end = max(deadline, time.monotonic() + (2 if running and grace > 0 else 0))
        for c in running:
            try:
                c.proc.wait(timeout=max(end - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                pass
            if c.proc.poll() is None:
                try:
                    os.killpg(c.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                try:
                    c.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
            self.reap(c)
        kill_netns_processes(self.netns)
        for c in self.containers:
            c.ready = False
        if not self.gone and not self.sim.stopping.is_set():
            self.report(force=True)
        self._finish_deletion()

    def _finish_deletion(self):
        self.ip = None  # no more hosts-file writes for this pod
        self.sim.net.teardown(self.netns)
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.gone or self.sim.stopping.is_set():
            return
        pod = self.current()
        if not pod["metadata"].get("deletionTimestamp"):
            return
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "preconditions": {"uid": self.uid}}
        try:
            self.sim.kube.request("DELETE", f"/api/v1/namespaces/{self.ns_name}/pods/{self.name}",
                                  body)
            log(f"pod {self.ns_name}/{self.name}: deleted")
        except ApiError as e:
            if e.status not in (404, 409):
                log(f"pod {self.ns_name}/{self.name}: final delete: {e}")

    # --- volumes ------------------------------------------------------------------------

    def prepare_volumes(self, refresh=False):
        """Creates/refreshes every volume's directory; returns an error text or None."""
        pod = self.current()
        if (not refresh and self.sim.args.pod_api
                and pod["spec"].get("automountServiceAccountToken", True)):
            # The in-cluster credentials kubelet projects into every pod.
            d = self.dir / "serviceaccount"
            d.mkdir(parents=True, exist_ok=True)
            (d / "token").write_text(self.sim.args.pod_token)
            (d / "namespace").write_text(self.ns_name)
            (d / "ca.crt").write_text("")
            self.volume_dirs[SA_VOLUME] = d
        for v in pod["spec"].get("volumes") or []:
            name = v["name"]
            vdir = self.dir / "volumes" / name
            try:
                if "configMap" in v or "secret" in v or "projected" in v or "downwardAPI" in v:
                    err = self.project(v, vdir)
                    if err:
                        return err
                    self.volume_dirs[name] = vdir
                elif refresh:
                    continue
                elif "emptyDir" in v:
                    vdir.mkdir(parents=True, exist_ok=True)
                    os.chmod(vdir, 0o777)
                    self.volume_dirs[name] = vdir
                elif "persistentVolumeClaim" in v:
                    d, err = self.claim_dir(v["persistentVolumeClaim"]["claimName"])
                    if err:
                        return err
                    self.apply_fs_group(d)
                    self.volume_dirs[name] = d
                elif "hostPath" in v:
                    hp = v["hostPath"]
                    d = Path(hp["path"])
                    if hp.get("type") == "DirectoryOrCreate":
                        d.mkdir(parents=True, exist_ok=True)
                    elif hp.get("type") == "FileOrCreate" and not d.exists():
                        d.parent.mkdir(parents=True, exist_ok=True)
                        d.touch()
                    if not d.exists():
                        return f"hostPath {d} does not exist"
                    self.volume_dirs[name] = d
                else:
                    vdir.mkdir(parents=True, exist_ok=True)
                    self.volume_dirs[name] = vdir
            except ApiError as e:
                return str(e)
        return None

    def claim_dir(self, claim):
        """(host directory, None) of a PVC, or (None, error). Here: the simulator's own
        directory, the claim marked Bound by hand (the fake API server has no PV controller);
        OciPodWorker uses the PersistentVolume the real PV controller bound."""
        pvc = self.sim.pvcs.get(self.ns_name, claim) or self.sim.kube.get(
            f"/api/v1/namespaces/{self.ns_name}/persistentvolumeclaims/{claim}")
        if pvc is None:
            return None, f'persistentvolumeclaim "{claim}" not found'
        self.sim.bind_pvc(pvc)
        d = self.sim.pvc_dir(self.ns_name, claim)
        d.mkdir(parents=True, exist_ok=True)
        return d, None

    def sa_token(self, source):
        """(token, None) for a projected serviceAccountToken source, or (None, error); None,
        None: not supported here (the older tests' pods get --pod-token instead)."""
        return None, None

    def apply_fs_group(self, d):
        fs_group = (self.current()["spec"].get("securityContext") or {}).get("fsGroup")
        if fs_group is not None:
            os.chown(d, -1, int(fs_group))
            os.chmod(d, 0o2775)

    def project(self, v, vdir):
        """Writes the volume's files: key -> (bytes, mode); only rewrites on change."""
        files = {}
        if "projected" in v:
            sources = v["projected"].get("sources") or []
            default_mode = v["projected"].get("defaultMode", 0o644)
        else:
            sources = [v]
            one = v.get("configMap") or v.get("secret") or v.get("downwardAPI") or {}
            default_mode = one.get("defaultMode", 0o644)
        for src in sources:
            # A secret volume names its Secret in secretName; a projected source in name.
            secret_name = "name" if "projected" in v else "secretName"
            for kind, key, name_field in (("ConfigMap", "configMap", "name"),
                                          ("Secret", "secret", secret_name)):
                ref = src.get(key)
                if ref is None:
                    continue
                obj = self.lookup(kind, ref.get(name_field))
                if obj is None:
                    if ref.get("optional"):
                        continue
                    return f'{kind.lower()} "{ref.get(name_field)}" not found'
                data = kp.object_data(obj, kind)
                mode = ref.get("defaultMode", default_mode)
                if ref.get("items"):
                    for it in ref["items"]:
                        if it["key"] in data:
                            files[it["path"]] = (data[it["key"]], it.get("mode", mode))
                        elif not ref.get("optional"):
                            return (f'{kind.lower()} "{ref.get(name_field)}": '
                                    f'key "{it["key"]}" not found')
                else:
                    for k, val in data.items():
                        files[k] = (val, mode)
            sat = src.get("serviceAccountToken")
            if sat:
                token, err = self.sa_token(sat)
                if err:
                    return err
                if token is not None:
                    files[sat.get("path") or "token"] = (token.encode(), default_mode)
            dapi = src.get("downwardAPI")
            if dapi:
                for it in dapi.get("items") or []:
                    if "fieldRef" in it:
                        val = kp.field_ref(self.current(), it["fieldRef"].get("fieldPath", ""))
                        files[it["path"]] = (str(val or "").encode(), it.get("mode", default_mode))
        version = json.dumps({k: [b.hex(), m] for k, (b, m) in sorted(files.items())})
        if self.vol_versions.get(v["name"]) == version:
            return None
        vdir.mkdir(parents=True, exist_ok=True)
        os.chmod(vdir, 0o755)
        fs_group = (self.current()["spec"].get("securityContext") or {}).get("fsGroup")
        # Atomic per file (rename), so a reader never sees half a file; like kubelet's sync.
        for rel, (content, mode) in files.items():
            target = vdir / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.parent / f".{target.name}.tmp"
            tmp.write_bytes(content)
            if fs_group is not None:  # as kubelet does: the pod's fsGroup may read the files
                os.chown(tmp, -1, int(fs_group))
                mode |= 0o040
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        old = json.loads(self.vol_versions.get(v["name"], "{}"))
        for rel in old:
            if rel not in files:
                (vdir / rel).unlink(missing_ok=True)
        self.vol_versions[v["name"]] = version
        return None

    # --- status -------------------------------------------------------------------------

    def write_hosts(self):
        if self.ip is None:
            return
        d = NETNS_ETC / self.netns
        d.mkdir(parents=True, exist_ok=True)
        text = kp.hosts_file(self.current(), self.ip, self.sim.dns)
        path = d / "hosts"
        try:
            if path.exists() and path.read_text() == text:
                return
        except OSError:
            pass
        # Rewritten in place: running containers see this inode bind-mounted as /etc/hosts. Not
        # truncated first (a lookup then would find nothing): one write over the old bytes, a
        # shorter text padded with a comment, then cut to length.
        data = text.encode()
        try:
            old_len = path.stat().st_size
        except OSError:
            old_len = 0
        padded = data + b"\n#" + b" " * (old_len - len(data) - 2) if old_len > len(data) + 2 \
            else data + b"\n" * max(0, old_len - len(data))
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, padded, 0)
            os.ftruncate(fd, len(data))
        finally:
            os.close(fd)

    def build_status(self):
        pod = self.current()
        inits_ok = self.init_done
        states = [(c.state, c.exit_code, (c.state == "terminated" and self.will_restart(c)) or
                   (c.state == "waiting" and c.last_state is not None)) for c in self.containers]
        phase = kp.pod_phase(pod["spec"].get("restartPolicy"), inits_ok, states)
        never = pod["spec"].get("restartPolicy") == "Never"
        if not self.init_done and never and any(c.state == "terminated" and c.exit_code
                                                for c in self.inits):
            phase = "Failed"
        ready = inits_ok and all(c.ready for c in self.containers) and phase == "Running"
        if self.terminating():
            ready = False

        def cond(t, ok, reason=None):
            c = {"type": t, "status": "True" if ok else "False", "lastProbeTime": None,
                 "lastTransitionTime": now_rfc3339()}
            if reason and not ok:
                c["reason"] = reason
            return c

        gates_ok = True
        ours = [cond("PodScheduled", True),
                cond("Initialized", inits_ok, "ContainersNotInitialized"),
                cond("ContainersReady", ready, "ContainersNotReady"),
                cond("Ready", ready and gates_ok, "ContainersNotReady")]
        gw = self.sim.net.gateway
        status = {"phase": phase, "hostIP": gw, "hostIPs": [{"ip": gw}],
                  "startTime": self.start_time, "qosClass": "BestEffort",
                  "containerStatuses": [c.status() for c in self.containers]}
        if self.inits:
            status["initContainerStatuses"] = [c.status() for c in self.inits]
        if self.ip:
            status["podIP"] = self.ip
            status["podIPs"] = [{"ip": self.ip}]
        return status, ours

    def report(self, force=False):
        if self.gone:
            return
        status, ours = self.build_status()
        key = json.dumps([status, [(c["type"], c["status"]) for c in ours]], sort_keys=True)
        if key == self.last_reported and not force:
            return
        path = f"/api/v1/namespaces/{self.ns_name}/pods/{self.name}/status"
        for _ in range(10):
            try:
                cur = self.sim.kube.get(f"/api/v1/namespaces/{self.ns_name}/pods/{self.name}")
                if cur is None or cur["metadata"].get("uid") != self.uid:
                    return
                st = dict(status)
                st["conditions"] = kp.merge_conditions((cur.get("status") or {}).get("conditions"),
                                                       ours)
                # resourceVersion makes it conditional: a concurrent writer gives 409, retry.
                rv = cur["metadata"]["resourceVersion"]
                self.sim.kube.merge_patch(path, {"metadata": {"resourceVersion": rv}, "status": st})
                self.last_reported = key
                return
            except ApiError as e:
                if e.status == 409:
                    continue
                if e.status == 404:
                    return
                log(f"pod {self.ns_name}/{self.name}: status: {e}")
                return
            except OSError as e:
                log(f"pod {self.ns_name}/{self.name}: status: {e}")
                time.sleep(0.5)


# ------------------------------------------------------------------------------------------
# The simulator
# ------------------------------------------------------------------------------------------

class Simulator:
    def __init__(self, args):
        self.args = args
        self.ks = sys.modules[__name__]  # for the OCI mode's modules
        # Against a real API server (--kubeconfig): the node's own identity for its Node, Lease
        # and pods; a cluster-DNS identity for the cluster-wide reads a node may not make; a
        # storage identity for the local provisioner.
        self.api_mode = bool(args.kubeconfig)
        self.kube = load_kubeconfig(args.kubeconfig) if args.kubeconfig else \
            Kube(args.api, token=args.token)
        self.dns_kube = load_kubeconfig(args.dns_kubeconfig) if args.dns_kubeconfig else None
        self.storage_kube = (load_kubeconfig(args.storage_kubeconfig)
                             if args.storage_kubeconfig else None)
        self.nodes = args.node
        self.node_name = self.nodes[0]
        self.root = Path(args.root).resolve()
        self.bin_dirs = [Path(d).resolve() for d in args.bin_dir or []]
        self.image_prefix = args.image_prefix
        self.entrypoints = {}
        for e in args.entrypoint or []:
            image, _, cmd = e.partition("=")
            self.entrypoints[image] = shlex.split(cmd)
        self.net = Network(args.bridge, args.cidr, self.root / "state" / "netns")
        self.stopping = threading.Event()
        self.stop_watch = threading.Event()
        self.workers = {}
        self.workers_lock = threading.Lock()
        self.dns = []
        self.dirty = threading.Event()
        self.created_file = self.root / "state" / "created-paths"
        self.private_dirs = [d for d in (args.private_dirs or "").split(",") if d.strip()]
        self.node_ip = args.node_ip or self.net.gateway
        self.heartbeat_paused = threading.Event()  # SIGUSR1 sets it, SIGUSR2 clears it
        self.node_uids = {}
        self.last_full_status = {}
        self.cache = {}
        self.cache_lock = threading.Lock()
        self.configmaps = self.secrets = self.pvcs = self.endpointslices = None
        self.volume_refresh = args.volume_refresh or (5.0 if self.api_mode else 1.0)
        self.seccomp_root = args.seccomp_root
        self.runtime_name = args.runtime or ("podman" if self.api_mode else "process")
        self.worker_class = PodWorker
        self.runtime = None
        if self.runtime_name == "podman":
            import oci_runtime  # noqa: PLC0415 - only the OCI mode needs it
            oci_runtime.bind(self.ks)
            self.runtime = oci_runtime.Podman(self.node_name, self.root,
                                              ulimits=args.podman_ulimit)
            self.worker_class = oci_runtime.make_worker_class()

    def cached_get(self, path, ttl=2.0):
        """GET with a short cache: ConfigMaps and Secrets read one by one (a node may not list
        them; the Node authorizer lets it get those its pods reference)."""
        now = time.monotonic()
        with self.cache_lock:
            hit = self.cache.get(path)
            if hit and now - hit[0] < ttl:
                return hit[1]
        obj = self.kube.get(path)
        with self.cache_lock:
            self.cache[path] = (now, obj)
        return obj

    def master_service_env(self):
        """The `kubernetes` Service's variables every container gets, pointing at the API
        server's address pods can reach (there is no kube-proxy for its ClusterIP here)."""
        u = urllib.parse.urlsplit(self.args.pod_api or self.kube.url)
        host, port = u.hostname, str(u.port or 443)
        return {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port,
                "KUBERNETES_SERVICE_PORT_HTTPS": port, "KUBERNETES_PORT": f"tcp://{host}:{port}",
                "KUBERNETES_PORT_443_TCP": f"tcp://{host}:{port}",
                "KUBERNETES_PORT_443_TCP_PROTO": "tcp", "KUBERNETES_PORT_443_TCP_PORT": port,
                "KUBERNETES_PORT_443_TCP_ADDR": host}

    def pod_api_env(self):
        if not self.args.pod_api:
            return {}
        u = urllib.parse.urlsplit(self.args.pod_api)
        return {"KUBERNETES_SERVICE_HOST": u.hostname, "KUBERNETES_SERVICE_PORT": str(u.port or 80)}

    def note_created(self, path):
        self.created_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.created_file, "a") as f:
            f.write(f"{path}\n")

    def event(self, pod, reason, message, kind="Normal"):
        """Posts a core/v1 Event about a pod, as kubelet does (best effort)."""
        meta = pod["metadata"]
        ns = meta.get("namespace", "default")
        t = now_rfc3339()
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": ns},
              "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                 "namespace": ns, "uid": meta.get("uid")},
              "reason": reason, "message": message, "type": kind, "count": 1,
              "firstTimestamp": t, "lastTimestamp": t,
              "source": {"component": "kubelet", "host": pod.get("spec", {}).get("nodeName", "")}}
        try:
            self.kube.request("POST", f"/api/v1/namespaces/{ns}/events", ev, timeout=3)
        except (ApiError, OSError) as e:
            log(f"event {reason}: {e}")

    def pvc_dir(self, ns, claim):
        return self.root / "pvc" / ns / claim

    def bind_pvc(self, pvc):
        if (pvc.get("status") or {}).get("phase") == "Bound":
            return
        ns, name = pvc["metadata"].get("namespace", "default"), pvc["metadata"]["name"]
        spec = pvc.get("spec") or {}
        size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        try:
            modes = spec.get("accessModes") or ["ReadWriteOnce"]
            self.kube.merge_patch(f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{name}/status",
                                  {"status": {"phase": "Bound", "capacity": {"storage": size},
                                              "accessModes": modes}})
        except (ApiError, OSError) as e:
            log(f"pvc {ns}/{name}: bind: {e}")

    def backend_ip(self, svc):
        backends = kp.service_backends(svc, self.all_pods.snapshot())
        if not backends and self.endpointslices is not None \
                and not (svc.get("spec") or {}).get("selector"):
            addrs = kp.slice_addresses(svc, self.endpointslices.snapshot())
            return addrs[0] if addrs else None
        return backends[0]["status"]["podIP"] if backends else None

    # --- nodes -------------------------------------------------------------------------

    def node_object(self, name):
        mem_kib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 1024
        cap = {"cpu": str(self.args.node_cpus or os.cpu_count()),
               "memory": self.args.node_memory or f"{mem_kib}Ki",
               "pods": str(self.args.node_pods or 110),
               "ephemeral-storage": "100Gi"}
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine)
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                  "kubernetes.io/arch": arch}
        for item in self.args.node_label or []:
            k, _, v = item.partition("=")
            labels[k] = v
        version = self.kubelet_version()
        runtime = "shoal-sim://1.0"
        if self.runtime is not None:
            runtime = f"podman://{self.podman_version()}"
        info = {"kubeletVersion": version, "kubeProxyVersion": version,
                "operatingSystem": "linux", "architecture": arch,
                "containerRuntimeVersion": runtime, "osImage": "Debian GNU/Linux 12",
                "kernelVersion": os.uname().release, "machineID": "", "systemUUID": "",
                "bootID": ""}
        addresses = [{"type": "InternalIP", "address": self.node_ip}]
        if not self.api_mode:
            # A real API server dials the first of Hostname, InternalDNS, InternalIP a Node
            # has for logs (--kubelet-preferred-address-types); no DNS knows these names.
            addresses.append({"type": "Hostname", "address": name})
        port = self.args.serve_port or self.args.node_port
        return {"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {},
                "status": {"capacity": cap, "allocatable": cap, "addresses": addresses,
                           "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
                           "nodeInfo": info}}

    def kubelet_version(self):
        if not self.api_mode:
            return "v1.30.0-shoal-sim"
        if not getattr(self, "_version", None):
            try:
                v = self.kube.get("/version") or {}
                self._version = f"{v.get('gitVersion', 'v0.0.0')}-shoal-agent"
            except (ApiError, OSError):
                return "v0.0.0-shoal-agent"
        return self._version

    def podman_version(self):
        if not getattr(self, "_podman_version", None):
            r = run([self.runtime.podman, "version", "--format", "{{.Client.Version}}"],
                    check=False, timeout=30)
            self._podman_version = r.stdout.strip() or "unknown"
        return self._podman_version

    def node_conditions(self, existing):
        t = now_rfc3339()
        ours = [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status",
                 "lastHeartbeatTime": t, "lastTransitionTime": t}]
        for typ in ("MemoryPressure", "DiskPressure", "PIDPressure"):
            ours.append({"type": typ, "status": "False", "reason": f"KubeletHasNo{typ}",
                         "message": "", "lastHeartbeatTime": t, "lastTransitionTime": t})
        return kp.merge_conditions(existing, ours)

    def register_node(self, name):
        obj = self.node_object(name)
        try:
            made = self.kube.request("POST", "/api/v1/nodes", obj)
            self.node_uids[name] = made["metadata"].get("uid")
            log(f"registered node {name}")
        except ApiError as e:
            if e.status != 409:
                raise
        self.post_node_status(name, obj["status"])
        self.last_full_status[name] = time.monotonic()

    def post_node_status(self, name, status):
        for _ in range(10):
            cur = self.kube.get(f"/api/v1/nodes/{name}")
            if cur is None:
                return False
            self.node_uids[name] = cur["metadata"].get("uid")
            conds = (cur.get("status") or {}).get("conditions") or []
            ready = [c for c in conds if c.get("type") == "Ready"]
            if status is None and ready and ready[0].get("status") == "True":
                return True
            st = dict(status or {})
            st["conditions"] = self.node_conditions(conds)
            try:
                rv = cur["metadata"]["resourceVersion"]
                self.kube.merge_patch(f"/api/v1/nodes/{name}/status",
                                      {"metadata": {"resourceVersion": rv}, "status": st})
                return True
            except ApiError as e:
                if e.status != 409:
                    raise
        return False

    def renew_lease(self, name):
        """The node's Lease in kube-node-lease, owned by its Node (as kubelet's lease
        controller: the Node's deletion collects it)."""
        path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
        spec = {"holderIdentity": name, "leaseDurationSeconds": self.args.lease_duration,
                "renewTime": now_micro()}
        uid = self.node_uids.get(name)
        owners = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}] if uid else None
        body = {"spec": spec}
        if owners and self.lease_owner.get(name) != uid:
            body["metadata"] = {"ownerReferences": owners}
        try:
            self.kube.merge_patch(path, body)
            if owners:
                self.lease_owner[name] = uid
        except ApiError as e:
            if e.status != 404:
                raise
            meta = {"name": name, "namespace": "kube-node-lease"}
            if owners:
                meta["ownerReferences"] = owners
            self.kube.request("POST", path.rsplit("/", 1)[0],
                              {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                               "metadata": meta, "spec": spec})
            if owners:
                self.lease_owner[name] = uid

    def heartbeat_loop(self):
        self.lease_owner = {}
        while not self.stopping.is_set():
            if self.heartbeat_paused.is_set():
                self.stopping.wait(1)
                continue
            for n in self.nodes:
                try:
                    if self.kube.get(f"/api/v1/nodes/{n}") is None:
                        self.register_node(n)  # someone deleted the Node: register again
                    else:
                        # kubelet posts its full status every so often even when nothing
                        # changed (nodeStatusReportFrequency); in between the Lease is the
                        # heartbeat and the status is only patched when Ready is not True.
                        full = self.api_mode and time.monotonic() - self.last_full_status.get(
                            n, 0) > self.args.status_seconds
                        self.post_node_status(n, self.node_object(n)["status"] if full else None)
                        if full:
                            self.last_full_status[n] = time.monotonic()
                    self.renew_lease(n)
                except Exception as e:  # noqa: BLE001 - retry at the next beat
                    log(f"node {n}: heartbeat: {e}")
            self.stopping.wait(self.args.lease_renew)

    # --- pods ----------------------------------------------------------------------------

    def on_node_pods(self, typ, obj):
        self.dirty.set()

    def on_dns_input(self, typ, obj):
        self.dns_dirty.set()

    def on_pvc(self, typ, obj):
        if typ == "DELETED" and obj:
            ns, name = obj["metadata"].get("namespace", "default"), obj["metadata"]["name"]
            shutil.rmtree(self.pvc_dir(ns, name), ignore_errors=True)
            log(f"pvc {ns}/{name} deleted: removed its directory")
        elif typ in ("ADDED", "MODIFIED") and obj:
            self.bind_pvc(obj)

    def sync_pods(self):
        wanted = {}
        for inf in self.node_pods:
            for p in inf.snapshot():
                wanted[p["metadata"]["uid"]] = p
        with self.workers_lock:
            for uid, w in list(self.workers.items()):
                if uid in wanted:
                    w.update(wanted[uid])
                else:
                    w.deleted()
            for uid, p in wanted.items():
                if uid in self.workers:
                    continue
                phase = (p.get("status") or {}).get("phase")
                if phase in ("Succeeded", "Failed"):
                    if p["metadata"].get("deletionTimestamp"):
                        self._delete_finished(p)
                    continue  # finished before we (re)started: nothing to run
                w = self.worker_class(self, p)
                self.workers[uid] = w
                w.start()

    def _delete_finished(self, p):
        try:
            ns, name = p["metadata"].get("namespace", "default"), p["metadata"]["name"]
            self.kube.request("DELETE", f"/api/v1/namespaces/{ns}/pods/{name}",
                              {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                               "preconditions": {"uid": p["metadata"]["uid"]}})
        except (ApiError, OSError):
            pass

    def worker_done(self, w):
        with self.workers_lock:
            finished = w.crashed or w.gone or w.current()["metadata"].get("deletionTimestamp")
            if self.workers.get(w.uid) is w and finished:
                del self.workers[w.uid]
        self.dirty.set()

    def refresh_dns(self):
        services = self.services.snapshot()
        self.dns = kp.dns_records(services, self.all_pods.snapshot())
        if self.endpointslices is not None:
            self.dns += kp.slice_records(services, self.endpointslices.snapshot())
        # In place (same inode): host processes may have it bind-mounted over /etc/hosts.
        text = kp.cluster_hosts(self.dns)
        with open(self.root / "hosts", "a+") as f:
            f.seek(0)
            if f.read() != text:
                f.seek(0)
                f.truncate()
                f.write(text)
        with self.workers_lock:
            workers = list(self.workers.values())
        for w in workers:
            try:
                w.write_hosts()
            except OSError:
                pass

    def run(self):
        if os.geteuid() != 0:
            sys.exit("kubelet_sim: needs root (network namespaces, mounts)")
        self.root.mkdir(parents=True, exist_ok=True)
        self.net.ensure_bridge()
        if self.runtime is not None:
            (self.root / "state").mkdir(parents=True, exist_ok=True)
            (self.root / "state" / "runtime").write_text("podman\n")
            self.runtime.start(self.stop_watch)
        if self.args.serve_port:
            import node_server  # noqa: PLC0415
            node_server.serve(self, self.node_ip, self.args.serve_port, self.args.tls_cert_file,
                              self.args.tls_private_key_file, self.args.client_ca_file)
        for n in self.nodes:
            self.register_node(n)
        self.dns_dirty = threading.Event()
        stop = self.stop_watch
        if self.api_mode:
            # Cluster DNS and Service variables read every Service, pod and EndpointSlice:
            # with the cluster-DNS identity (CoreDNS's rights). Without one the node's own
            # identity sees the Services and its own pods only.
            dns = self.dns_kube or self.kube
            self.services = Informer(dns, "/api/v1/services", {}, self.on_dns_input, stop)
            if self.dns_kube:
                self.all_pods = Informer(dns, "/api/v1/pods", {}, self.on_dns_input, stop)
                self.endpointslices = Informer(dns, "/apis/discovery.k8s.io/v1/endpointslices",
                                               {}, self.on_dns_input, stop)
            else:
                self.all_pods = Informer(self.kube, "/api/v1/pods",
                                         {"fieldSelector": f"spec.nodeName={self.node_name}"},
                                         self.on_dns_input, stop)
            for inf in (self.services, self.all_pods):
                inf.synced.wait(15)
            if self.storage_kube:
                import local_provisioner  # noqa: PLC0415
                local_provisioner.LocalProvisioner(
                    self, self.storage_kube, self.node_name,
                    self.args.storage_root or self.root / "local-path",
                    self.args.storage_provisioner).start(stop)
        else:
            self.services = Informer(self.kube, "/api/v1/services", {}, self.on_dns_input, stop)
            self.all_pods = Informer(self.kube, "/api/v1/pods", {}, self.on_dns_input, stop)
            self.configmaps = Informer(self.kube, "/api/v1/configmaps", {}, lambda t, o: None,
                                       stop)
            self.secrets = Informer(self.kube, "/api/v1/secrets", {}, lambda t, o: None, stop)
            self.pvcs = Informer(self.kube, "/api/v1/persistentvolumeclaims", {}, self.on_pvc,
                                 stop)
            for inf in (self.services, self.all_pods, self.configmaps, self.secrets):
                inf.synced.wait(15)
        self.node_pods = [Informer(self.kube, "/api/v1/pods",
                                   {"fieldSelector": f"spec.nodeName={n}"}, self.on_node_pods, stop)
                          for n in self.nodes]
        threading.Thread(target=self.heartbeat_loop, daemon=True, name="heartbeat").start()
        ready_file = self.root / "state" / "ready"
        ready_file.parent.mkdir(parents=True, exist_ok=True)
        ready_file.write_text(f"{os.getpid()}\n")
        log(f"running nodes {', '.join(self.nodes)} (root {self.root})")
        while not self.stopping.is_set():
            if self.dirty.is_set():
                self.dirty.clear()
                self.sync_pods()
            if self.dns_dirty.is_set():
                self.dns_dirty.clear()
                self.refresh_dns()
            self.stopping.wait(0.1)
        self.shutdown()

    def shutdown(self):
        log("stopping: killing every pod")
        with self.workers_lock:
            workers = list(self.workers.values())
        for w in workers:
            w.wake.set()
        deadline = time.monotonic() + 15
        for w in workers:
            if w.is_alive():
                w.finished.wait(max(deadline - time.monotonic(), 0.1))
        self.stop_watch.set()
        if self.runtime is not None:
            self.runtime.close()
        cleanup(self.root, self.net.bridge, self.args.cidr, self.args.keep_bridge)
        (self.root / "state" / "ready").unlink(missing_ok=True)


def cleanup(root, bridge, cidr, keep_bridge=False):
    """Removes every netns, veth, hosts file and IP lease recorded under `root`, and the mount
    targets the simulator created when no other simulator is still running pods."""
    net = Network(bridge, cidr, Path(root) / "state" / "netns")
    runtime_file = Path(root) / "state" / "runtime"
    if runtime_file.exists():
        # OCI mode: every container this agent root started, whatever state it is in.
        podman = shutil.which("podman") or "/usr/bin/podman"
        r = run([podman, "ps", "-a", "-q", "--no-trunc", "--filter",
                 f"label=shoal.dev/agent-root={Path(root).resolve()}"], check=False, timeout=60)
        ids = r.stdout.split()
        if ids:
            run([podman, "rm", "-f", "-v", *ids], check=False, timeout=120)
        runtime_file.unlink(missing_ok=True)
    if net.ledger.exists():
        for entry in sorted(net.ledger.iterdir()):
            net.teardown(entry.name)
    shutil.rmtree(Path(root) / "pods", ignore_errors=True)
    others = []
    if IP_DIR.exists():
        for f in IP_DIR.iterdir():
            try:
                pid = int(f.read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
            if pid != os.getpid() and pid_alive(pid):
                others.append(f)
    created = Path(root) / "state" / "created-paths"
    # Paths left while another simulator ran are handed on to the last one to clean up.
    pending = IP_DIR.parent / "created-paths"
    if created.exists() and others:
        pending.parent.mkdir(parents=True, exist_ok=True)
        with open(pending, "a") as f:
            f.write(created.read_text())
        created.unlink(missing_ok=True)
    if not others and (created.exists() or pending.exists()):
        lines = set()
        for f in (created, pending):
            if f.exists():
                lines.update(f.read_text().split("\n"))
        pending.unlink(missing_ok=True)
        for line in sorted(lines, key=len, reverse=True):
            p = Path(line)
            if not line or not p.is_absolute():
                continue
            try:
                if p.is_dir() and not any(p.rglob("*[!/]")):
                    shutil.rmtree(p)
                elif p.is_file() and p.stat().st_size == 0:
                    p.unlink()
            except OSError:
                pass
        created.unlink(missing_ok=True)
    if not others:
        try:
            NETNS_ETC.rmdir()  # the pods' /etc/netns/<ns> are gone; only when empty
        except OSError:
            pass
    if not keep_bridge and run([IP, "link", "show", bridge], check=False).returncode == 0:
        net.maybe_remove_bridge()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--api", help="Kubernetes API server URL (http or https)")
    ap.add_argument("--token", help="bearer token for the API server")
    ap.add_argument("--kubeconfig", help="the node's kubeconfig (a real API server: CA-verified "
                    "TLS, client certificate or token); implies --runtime podman")
    ap.add_argument("--dns-kubeconfig", help="identity for the cluster-wide reads of cluster "
                    "DNS and Service emulation (CoreDNS's rights; tests/kube/agent-rbac.yaml)")
    ap.add_argument("--storage-kubeconfig", help="identity of the local storage provisioner "
                    "(runs it; local-path-provisioner's rights)")
    ap.add_argument("--storage-root", help="where provisioned volumes live (ROOT/local-path)")
    ap.add_argument("--storage-provisioner", default="shoal.dev/local-path",
                    help="the provisioner name StorageClasses name")
    ap.add_argument("--runtime", choices=["process", "podman"],
                    help="process: containers as host processes (default with --api); podman: "
                    "OCI containers (default with --kubeconfig)")
    ap.add_argument("--node-ip", help="the node's InternalIP and pods' hostIP (bridge gateway)")
    ap.add_argument("--node-label", action="append", metavar="KEY=VALUE",
                    help="extra Node label (NodeRestriction limits which)")
    ap.add_argument("--node-pods", type=int, help="pods capacity (110)")
    ap.add_argument("--node-port", type=int, default=10250, help="kubelet port in the Node")
    ap.add_argument("--lease-renew", type=float, default=10.0,
                    help="seconds between Lease renewals (kubelet: 10)")
    ap.add_argument("--lease-duration", type=int, default=40)
    ap.add_argument("--status-seconds", type=float, default=60.0,
                    help="full node status at least this often (real API mode)")
    ap.add_argument("--volume-refresh", type=float,
                    help="seconds between ConfigMap/Secret/token volume refreshes")
    ap.add_argument("--seccomp-root", default="/var/lib/kubelet/seccomp",
                    help="where Localhost seccomp profiles are")
    ap.add_argument("--serve-port", type=int, default=0,
                    help="serve the kubelet's /containerLogs on NODE_IP:PORT over TLS (kubectl "
                    "logs through the API server); the Node's kubelet port")
    ap.add_argument("--tls-cert-file", help="serving certificate for --serve-port")
    ap.add_argument("--tls-private-key-file")
    ap.add_argument("--client-ca-file", help="CA that clients' certificates must come from")
    ap.add_argument("--podman-ulimit", action="append", metavar="NAME=SOFT:HARD",
                    help="rlimits given to containers (default: the agent's hard limits)")
    ap.add_argument("--node", action="append", help="simulated node name (repeatable)")
    ap.add_argument("--root", required=True, help="state, logs, volumes and PVC data")
    ap.add_argument("--bin-dir", action="append",
                    help="prepended to PATH of containers (repeatable)")
    ap.add_argument("--image-prefix", default="shoal/")
    ap.add_argument("--entrypoint", action="append", metavar="IMAGE=CMD",
                    help="command for containers of IMAGE (without tag) that set no command")
    ap.add_argument("--bridge", default="shoalbr0")
    ap.add_argument("--cidr", default="10.244.0.0/16")
    ap.add_argument("--keep-bridge", action="store_true",
                    help="never remove the bridge (its owner does: e.g. the API server "
                    "advertises its gateway address to pods)")
    # /etc/slurm: an image's is empty (deploy/docker/Dockerfile); a container must not find the
    # host's slurm.conf (a Slurm installed on this host) before its own configuration.
    ap.add_argument("--private-dirs", default="/run,/var/spool,/var/log,/etc/slurm",
                    help="comma list of host dirs each container gets its own empty copy of")
    ap.add_argument("--pod-api", help="API URL given to pods as KUBERNETES_SERVICE_HOST/PORT, "
                    "with a service-account token mounted at " + SA_PATH)
    ap.add_argument("--pod-token", default="fake-token", help="that service-account token")
    ap.add_argument("--node-cpus", type=int)
    ap.add_argument("--node-memory")
    ap.add_argument("--cleanup", action="store_true",
                    help="remove leftovers of a crashed run and exit")
    args = ap.parse_args()
    if not args.cleanup and (not (args.api or args.kubeconfig) or not args.node):
        ap.error("--api (or --kubeconfig) and --node are required")
    # One simulator (or --cleanup) per root at a time: a cleanup must not tear down the pods of
    # a simulator that is still running.
    lock_path = Path(args.root).resolve() / "state" / "lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    lock = open(lock_path, "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(f"kubelet_sim: another simulator is using {args.root}")
    if args.cleanup:
        cleanup(Path(args.root).resolve(), args.bridge, args.cidr, args.keep_bridge)
        return
    sim = Simulator(args)

    def on_signal(signum, frame):
        sim.stopping.set()

    def on_pause(signum, frame):
        # SIGUSR1: stop heartbeating (Lease and status) without exiting, so the real
        # node-lifecycle controller marks the Node NotReady; SIGUSR2: heartbeat again.
        if signum == signal.SIGUSR1:
            sim.heartbeat_paused.set()
        else:
            sim.heartbeat_paused.clear()
        log(f"heartbeats {'paused' if sim.heartbeat_paused.is_set() else 'resumed'}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGUSR1, on_pause)
    signal.signal(signal.SIGUSR2, on_pause)
    try:
        sim.run()
    except Exception:
        log(traceback.format_exc())
        sim.stopping.set()
        sim.shutdown()
        sys.exit(1)


if __name__ == "__main__":
    main()
