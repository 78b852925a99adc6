"""The node agent's OCI mode (kubelet_sim.py --runtime podman): every container of a pod is a
real OCI container started with `podman run` (runc under conmon) from the pod's image in local
storage, joined to the pod's network namespace on the bridge (`--network ns:/run/netns/NAME`).

Why our own agent and not the real kubelet: Debian 12's containerd is 1.6.20, older than the
containerd releases Kubernetes 1.31+ lists as supported, and these sandbox hosts mount cgroup v1
only (the v2 tree is empty, no controllers), which kubelet 1.35+ refuses to run on by default.
Podman 4.3 (Debian 12) runs containers here with its cgroupfs manager on cgroup v1.

What a container gets, as kubelet and a CRI runtime would give it: the image's entrypoint/cmd
replaced by command/args; the environment (env, valueFrom, envFrom, the `kubernetes` Service's
KUBERNETES_SERVICE_HOST/PORT pointing at the API server's address on the bridge, and the
namespace's Service variables); workingDir; the securityContext (user and groups, fsGroup,
privileged, capabilities, read-only root, no-new-privileges, seccomp); bind-mounted volumes
(emptyDir, hostPath, configMap, secret, downwardAPI, projected with TokenRequest tokens, PVCs);
the pod's /etc/hosts (cluster DNS, see kubelet_sim.py) and /etc/resolv.conf; a termination-log
file. Limits: see oci_pod.resource_args (memory and CPU are enforced through podman's cgroup v1
cgroups; ephemeral storage and pod-level cgroups are not). Pod-level namespaces: network (and
hostname) are shared through the netns and --hostname; IPC and PID namespaces are each
container's own (shareProcessNamespace is not supported). Restartable init containers
(sidecars) run as ordinary init containers. The restart back-off is 1 s doubling to 10 s (kubelet:
10 s to 5 min) so tests do not wait minutes.
"""

import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import kubelet_pod as kp
import oci_pod as oci

PODMAN = shutil.which("podman") or "/usr/bin/podman"
SYSCTL = shutil.which("sysctl") or "/usr/sbin/sysctl"
RUN_TIMEOUT = 180  # a `podman run` on a loaded 2-core host can take many seconds
KS = None  # the kubelet_sim module (set by bind(); it may run as __main__)


def bind(kubelet_sim_module):
    global KS
    KS = kubelet_sim_module


def _log(msg):
    KS.log(msg)


def default_ulimits():
    """runc sets every rlimit it is given and may not raise one above the hard limit the host
    gives it (podman's defaults are above it here: "error setting rlimit type 7"): the agent's
    own hard limits, nproc capped at kernel.pid_max (runc refuses more here)."""
    import resource  # noqa: PLC0415
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    try:
        pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    except (OSError, ValueError):
        pid_max = 32768
    nofile = 1048576 if nofile == resource.RLIM_INFINITY else nofile
    nproc = pid_max if nproc == resource.RLIM_INFINITY else min(nproc, pid_max)
    return [f"nofile={nofile}:{nofile}", f"nproc={nproc}:{nproc}"]


class Podman:
    """The container runtime of one node agent: podman commands, plus one `podman events`
    stream (and a periodic `podman ps` resync) that tells which containers died."""

    def __init__(self, node, root, ulimits=None, podman=PODMAN):
        self.node, self.root, self.podman = node, str(root), podman
        self.ulimits = list(ulimits) if ulimits else default_ulimits()
        self.lock = threading.Lock()
        self.exits = {}  # container id -> exit code seen by events/ps
        self.watchers = {}  # container id -> callable woken when it dies
        self.images = {}  # image -> (monotonic time, info or None)
        self.events_proc = None

    def cmd(self, *args, timeout=60, input=None, check=True, env=None):
        r = subprocess.run([self.podman, *args], capture_output=True, text=True, timeout=timeout,
                           input=input, env=env, stdin=None if input is not None else
                           subprocess.DEVNULL)
        if check and r.returncode != 0:
            raise RuntimeError(f"podman {args[0]}: rc={r.returncode}: {r.stderr.strip()[-800:]}")
        return r

    # --- images -------------------------------------------------------------------------

    def image(self, ref):
        """{id, user, name, stop_signal} of a local image, or None; cached for 5 s."""
        with self.lock:
            hit = self.images.get(ref)
            if hit and time.monotonic() - hit[0] < 5:
                return hit[1]
        r = self.cmd("image", "inspect", "--format", "json", ref, check=False, timeout=60)
        info = None
        if r.returncode == 0:
            try:
                d = json.loads(r.stdout)[0]
                cfg = d.get("Config") or {}
                tags = d.get("RepoTags") or []
                name = next((t for t in tags if t.endswith(ref) or ref.endswith(t)),
                            tags[0] if tags else ref)
                info = {"id": "sha256:" + d["Id"], "user": cfg.get("User") or "", "name": name,
                        "stop_signal": cfg.get("StopSignal") or ""}
            except (ValueError, KeyError, IndexError):
                info = None
        with self.lock:
            self.images[ref] = (time.monotonic(), info)
        return info

    # --- containers ---------------------------------------------------------------------

    def run(self, argv, env=None):
        """Runs `podman run -d ...` (argv from oci_pod.run_argv); returns the container id."""
        r = subprocess.run(argv, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                           stdin=subprocess.DEVNULL, env=env)
        if r.returncode != 0:
            raise RuntimeError(r.stderr.strip()[-1500:] or f"podman run: rc={r.returncode}")
        return r.stdout.strip().splitlines()[-1]

    def inspect(self, ref):
        r = self.cmd("container", "inspect", "--format", "json", ref, check=False, timeout=60)
        if r.returncode != 0:
            return None
        try:
            return json.loads(r.stdout)[0]
        except (ValueError, IndexError):
            return None

    def exists(self, name):
        return self.cmd("container", "exists", name, check=False).returncode == 0

    def stop(self, cid, grace):
        """podman stop -t GRACE: the image's stop signal, SIGKILL after GRACE seconds."""
        self.cmd("stop", "-t", str(max(int(grace), 0)), cid, check=False,
                 timeout=max(int(grace), 0) + 60)

    def remove(self, *refs):
        if refs:
            self.cmd("rm", "-f", "-v", *refs, check=False, timeout=120)

    def remove_labelled(self, label, value):
        ids = self.list_ids(f"{label}={value}")
        self.remove(*ids)
        return ids

    def list_ids(self, label_filter):
        r = self.cmd("ps", "-a", "-q", "--no-trunc", "--filter", f"label={label_filter}",
                     check=False, timeout=60)
        return r.stdout.split() if r.returncode == 0 else []

    def exec(self, cid, argv, timeout, user=None, input=None):
        """podman exec in a running container: (rc, stdout, stderr); rc -1 on timeout."""
        args = [self.podman, "exec"]
        if input is not None:
            args.append("--interactive")
        if user is not None:
            args += ["--user", str(user)]
        args += [cid, *argv]
        try:
            r = subprocess.run(args, capture_output=True, timeout=timeout, input=input,
                               stdin=None if input is not None else subprocess.DEVNULL)
            return r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired:
            return -1, b"", b"timed out"

    # --- deaths -------------------------------------------------------------------------

    def watch(self, cid, wake):
        with self.lock:
            self.watchers[cid] = wake

    def unwatch(self, cid):
        with self.lock:
            self.watchers.pop(cid, None)
            self.exits.pop(cid, None)

    def exited(self, cid):
        with self.lock:
            return cid in self.exits

    def _died(self, cid, code):
        with self.lock:
            if cid in self.exits:
                return
            self.exits[cid] = code
            wake = self.watchers.get(cid)
        if wake:
            wake()

    def start(self, stop):
        threading.Thread(target=self._events_loop, args=(stop,), daemon=True,
                         name="podman-events").start()
        threading.Thread(target=self._resync_loop, args=(stop,), daemon=True,
                         name="podman-resync").start()

    def _events_loop(self, stop):
        while not stop.is_set():
            try:
                self.events_proc = subprocess.Popen(
                    [self.podman, "events", "--format", "json", "--filter",
                     f"label={oci.LABEL_NODE}={self.node}"],
                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                    text=True)
                for line in self.events_proc.stdout:
                    if stop.is_set():
                        break
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        continue
                    if ev.get("Status") == "died":
                        self._died(ev.get("ID"), ev.get("ContainerExitCode"))
            except OSError as e:
                _log(f"podman events: {e}")
            finally:
                if self.events_proc and self.events_proc.poll() is None:
                    self.events_proc.kill()
                if self.events_proc:
                    self.events_proc.wait()
            stop.wait(1)

    def _resync_loop(self, stop):
        """Deaths the event stream missed (it restarts, or started late)."""
        while not stop.wait(5):
            r = self.cmd("ps", "-a", "--format", "json", "--filter",
                         f"label={oci.LABEL_NODE}={self.node}", check=False, timeout=60)
            if r.returncode != 0:
                continue
            try:
                items = json.loads(r.stdout or "[]")
            except ValueError:
                continue
            with self.lock:
                watched = set(self.watchers)
            for it in items:
                if it.get("Id") in watched and it.get("State") in ("exited", "stopped", "dead"):
                    self._died(it["Id"], it.get("ExitCode"))

    def close(self):
        p = self.events_proc
        if p and p.poll() is None:
            p.kill()


class OciContainer:
    """One container of a pod, across its restarts (each restart is a new OCI container)."""

    def __init__(self, spec, init=False):
        # The state fields kubelet_sim.PodWorker's loops use, plus the OCI ones.
        Probe, BACKOFF_MIN = KS.Probe, KS.BACKOFF_MIN
        self.spec, self.name, self.init = spec, spec["name"], init
        self.proc = None
        self.state, self.reason, self.message = "waiting", "ContainerCreating", ""
        self.exit_code = None
        self.started_at = self.finished_at = None
        self.last_state = None
        self.restarts = 0
        self.backoff = BACKOFF_MIN
        self.restart_at = 0.0
        self.readiness = Probe(spec.get("readinessProbe"))
        self.liveness = Probe(spec.get("livenessProbe"))
        self.startup = Probe(spec.get("startupProbe"))
        self.started = self.ready = False
        self.cid = None
        self.attempt = -1
        self.image_id = ""
        self.image_name = spec.get("image", "")
        self.pull_failures = 0
        self.t_start = 0.0
        self.termination_file = None

    def record(self):
        return {"name": self.name, "image": self.image_name, "image_id": self.image_id,
                "cid": self.cid, "state": self.state, "reason": self.reason,
                "message": self.message, "exit_code": self.exit_code,
                "started_at": self.started_at, "finished_at": self.finished_at,
                "last_state": self.last_state, "restarts": self.restarts, "ready": self.ready,
                "started": self.started}

    def status(self):
        return oci.container_status(self.record())


def make_worker_class():
    """OciPodWorker, a subclass of kubelet_sim.PodWorker (after bind())."""
    PodWorker, now_rfc3339, ApiError = KS.PodWorker, KS.now_rfc3339, KS.ApiError

    class OciPodWorker(PodWorker):
        def __init__(self, sim, pod):
            super().__init__(sim, pod)
            self.inits = [OciContainer(c, init=True) for c in pod["spec"].get("initContainers") or []]
            self.containers = [OciContainer(c) for c in pod["spec"].get("containers") or []]
            self.runtime = sim.runtime
            self.host_network = bool(pod["spec"].get("hostNetwork"))
            self.sandbox_ready = False
            self.tokens = {}
            self.last_differ_send = 0.0

        # --- sandbox ---------------------------------------------------------------------

        def _run(self):
            self.report()
            if self.host_network:
                self.ip = self.sim.node_ip
            else:
                self.ip = self.sim.net.setup(self.netns, self.veth)
                self.apply_sysctls()
                self.write_hosts()
                (kp_netns_etc() / self.netns / "resolv.conf").write_text(self.resolv_conf())
            self.dir.mkdir(parents=True, exist_ok=True)
            self.sandbox_ready = True
            self.report()
            while not self.terminating():
                err = self.prepare_volumes()
                if err is None:
                    break
                for c in self.inits + self.containers:
                    if c.state == "waiting":
                        c.reason, c.message = "ContainerCreating", err
                self.report()
                self.wake.wait(2)
                self.wake.clear()
            for c in self.inits + self.containers:
                if c.state == "waiting" and c.reason == "ContainerCreating":
                    c.message = ""
            self.report()
            last_volume_sync = time.monotonic()
            while not self.terminating():
                now = time.monotonic()
                if not self.init_done:
                    self.step_init(now)
                else:
                    for c in self.containers:
                        self.step_container(c, now)
                if now - last_volume_sync > self.sim.volume_refresh:
                    self.prepare_volumes(refresh=True)
                    last_volume_sync = now
                self.report()
                self.wake.wait(0.5)
                self.wake.clear()
            self._terminate()

        def resolv_conf(self):
            ns = self.ns_name
            return ("# cluster DNS is /etc/hosts (shoal node agent)\n"
                    f"search {ns}.svc.{kp.CLUSTER_DOMAIN} svc.{kp.CLUSTER_DOMAIN} "
                    f"{kp.CLUSTER_DOMAIN}\noptions ndots:5\n")

        def apply_sysctls(self):
            """The sandbox's sysctls in the pod's network namespace: containerd 2's defaults
            (enable_unprivileged_ports, enable_unprivileged_icmp: any user may bind ports
            below 1024 and ping, as under Docker and CRI-O too), then the pod's own (net.*;
            others are not namespaced per pod here and are left alone)."""
            sc = self.current()["spec"].get("securityContext") or {}
            wanted = {"net.ipv4.ip_unprivileged_port_start": "0",
                      "net.ipv4.ping_group_range": "0 2147483647"}
            for s in sc.get("sysctls") or []:
                if not s.get("name", "").startswith("net."):
                    _log(f"pod {self.ns_name}/{self.name}: sysctl {s.get('name')} not applied")
                    continue
                wanted[s["name"]] = str(s.get("value", ""))
            r = subprocess.run(["ip", "netns", "exec", self.netns, SYSCTL, "-w",
                                *[f"{k}={v}" for k, v in wanted.items()]],
                               capture_output=True, text=True, timeout=10)
            if r.returncode != 0:
                _log(f"pod {self.ns_name}/{self.name}: sysctls: {r.stderr.strip()}")

        def write_hosts(self):
            if self.host_network:
                return
            super().write_hosts()

        # --- volumes ---------------------------------------------------------------------

        def prepare_volumes(self, refresh=False):
            err = super().prepare_volumes(refresh)
            if err is None and not refresh:
                fs_group = (self.current()["spec"].get("securityContext") or {}).get("fsGroup")
                for v in self.current()["spec"].get("volumes") or []:
                    d = self.volume_dirs.get(v["name"])
                    if "emptyDir" in v and d is not None and fs_group is not None:
                        os.chown(d, -1, int(fs_group))
                        os.chmod(d, 0o2777)
            return err

        def claim_dir(self, claim):
            """The host directory of a bound PVC: its PersistentVolume's hostPath/local path
            (read with the node's identity: the Node authorizer allows the PVCs and PVs of
            pods bound to this node)."""
            kube = self.sim.kube
            pvc = kube.get(f"/api/v1/namespaces/{self.ns_name}/persistentvolumeclaims/{claim}")
            if pvc is None:
                return None, f'persistentvolumeclaim "{claim}" not found'
            vol = (pvc.get("spec") or {}).get("volumeName")
            if (pvc.get("status") or {}).get("phase") != "Bound" or not vol:
                return None, f'persistentvolumeclaim "{claim}" is not bound yet'
            pv = kube.get(f"/api/v1/persistentvolumes/{vol}")
            path = oci.volume_path(pv) if pv else None
            if not path:
                return None, f'persistentvolume "{vol}" has no hostPath/local path'
            d = Path(path)
            if ((pv["spec"].get("hostPath") or {}).get("type") == "DirectoryOrCreate"
                    and not d.exists()):
                d.mkdir(parents=True, exist_ok=True)
            if not d.is_dir():
                return None, f'persistentvolume "{vol}": {path} is not a directory'
            return d, None

        def sa_token(self, src):
            """A projected serviceAccountToken: a TokenRequest for the pod's ServiceAccount,
            bound to the pod, refreshed after 80 % of its life (kubelet's token manager)."""
            key = json.dumps(src, sort_keys=True)
            now = time.time()
            cached = self.tokens.get(key)
            if cached and not oci.token_needs_refresh(cached["iat"], cached["exp"], now):
                return cached["token"], None
            pod = self.current()
            sa = pod["spec"].get("serviceAccountName") or "default"
            try:
                r = self.sim.kube.request(
                    "POST", f"/api/v1/namespaces/{self.ns_name}/serviceaccounts/{sa}/token",
                    oci.token_request(pod, src))
            except (ApiError, OSError) as e:
                if cached:
                    return cached["token"], None
                return None, f"failed to fetch token: {e}"
            st = r.get("status") or {}
            try:
                exp = oci.parse_time(st["expirationTimestamp"])
            except (KeyError, ValueError):
                exp = now + int(src.get("expirationSeconds") or 3600)
            self.tokens[key] = {"token": st.get("token", ""), "iat": now, "exp": exp}
            return st.get("token", ""), None

        # --- containers ------------------------------------------------------------------

        def container_env(self, c):
            pod = dict(self.current())
            pod["status"] = dict(pod.get("status") or {}, podIP=self.ip,
                                 podIPs=[{"ip": self.ip}], hostIP=self.sim.node_ip,
                                 hostIPs=[{"ip": self.sim.node_ip}])
            svc_env = {}
            if pod["spec"].get("enableServiceLinks", True):
                svc_env = kp.service_env(self.sim.services.snapshot(), self.ns_name,
                                         self.sim.backend_ip)
            svc_env = {k: v for k, v in svc_env.items() if not k.startswith("KUBERNETES_")}
            base = self.sim.master_service_env()
            try:
                return kp.build_env(pod, c.spec, svc_env, self.lookup, base)
            except (ApiError, OSError) as e:
                # e.g. 403 while the Node authorizer's graph has not seen the pod yet
                return None, str(e)

        def container_mounts(self, c, env):
            """[(source, destination, read_only)] or an error text."""
            spec = self.current()["spec"]
            vol_types = {v["name"]: v for v in spec.get("volumes") or []}
            mounts = []
            targets = {m["mountPath"].rstrip("/") for m in c.spec.get("volumeMounts") or []}
            if not self.host_network:
                etc = kp_netns_etc() / self.netns
                for f in ("hosts", "resolv.conf"):
                    if f"/etc/{f}" not in targets:
                        mounts.append((str(etc / f), f"/etc/{f}", False))
            for m in sorted(c.spec.get("volumeMounts") or [],
                            key=lambda m: m["mountPath"].rstrip("/").count("/")):
                src = self.volume_dirs.get(m["name"])
                if src is None:
                    return None, f'volume "{m["name"]}" not found'
                sub = kp.expand(m.get("subPathExpr") or "", env) if m.get("subPathExpr") \
                    else m.get("subPath") or ""
                if sub:
                    if sub.startswith("/") or ".." in Path(sub).parts:
                        return None, f"subPath {sub!r} must be a relative path within the volume"
                    src = Path(src) / sub
                    if not src.exists():
                        src.mkdir(parents=True, exist_ok=True)
                v = vol_types.get(m["name"], {})
                ro = bool(m.get("readOnly")) or any(
                    k in v for k in ("configMap", "secret", "projected", "downwardAPI"))
                mounts.append((str(src), m["mountPath"], ro))
            tpath = c.spec.get("terminationMessagePath") or "/dev/termination-log"
            if tpath.rstrip("/") not in targets:
                tdir = self.dir / "termination"
                tdir.mkdir(parents=True, exist_ok=True)
                c.termination_file = tdir / f"{c.name}-{c.attempt + 1}"
                c.termination_file.write_bytes(b"")
                os.chmod(c.termination_file, 0o666)
                mounts.append((str(c.termination_file), tpath, False))
            return mounts, None

        def _waiting(self, c, reason, message, delay):
            c.state, c.reason, c.message = "waiting", reason, message
            c.restart_at = time.monotonic() + delay

        def start_container(self, c):
            pod = self.current()
            image = c.spec.get("image", "")
            policy = oci.pull_policy(c.spec)
            img = self.runtime.image(image)
            if img is None:
                reason, msg, ev_reason, ev_msg, ev_type = oci.image_missing(
                    image, policy, c.pull_failures)
                if c.pull_failures == 0 and policy != "Never":
                    self.sim.event(pod, "Pulling", f'Pulling image "{image}"')
                self.sim.event(pod, ev_reason, ev_msg, ev_type)
                c.pull_failures += 1
                self._waiting(c, reason, msg, min(2.0 ** c.pull_failures, 10.0))
                return
            c.pull_failures = 0
            c.image_id, c.image_name = img["id"], img["name"]
            env, err = self.container_env(c)
            if err is None:
                err = oci.verify_run_as_non_root(pod, c.spec, img["user"])
            if err:
                if c.reason != "CreateContainerConfigError" or c.message != err:
                    self.sim.event(pod, "Failed", f"Error: {err}", "Warning")
                self._waiting(c, "CreateContainerConfigError", err, 2)
                return
            mounts, err = self.container_mounts(c, env)
            if err:
                self._waiting(c, "CreateContainerConfigError", err, 2)
                return
            ev, msg = oci.image_present_event(image)
            self.sim.event(pod, ev, msg)
            c.attempt += 1
            name = oci.container_name(pod, c.spec, c.attempt)
            meta = pod["metadata"]
            logdir = self.sim.root / "logs" / "pods" / f"{self.ns_name}_{self.name}_{self.uid}" / c.name
            logdir.mkdir(parents=True, exist_ok=True)
            envdir = self.dir / "env"
            envdir.mkdir(parents=True, exist_ok=True)
            os.chmod(envdir, 0o700)
            env_file = envdir / f"{c.name}.env"
            env_file.write_text(oci.env_file_text(env)[0])
            os.chmod(env_file, 0o600)
            try:
                argv = oci.run_argv(
                    pod, c.spec, image=image, name=name,
                    labels=oci.container_labels(pod, c.spec, self.sim.node_name, self.sim.root),
                    network="host" if self.host_network else f"/run/netns/{self.netns}",
                    hostname=kp.pod_hostname(pod), env=env, env_file=env_file, mounts=mounts,
                    image_user=img["user"], log_path=logdir / f"{c.attempt}.log",
                    ulimits=self.runtime.ulimits, podman=self.runtime.podman,
                    seccomp_root=self.sim.seccomp_root)
            except ValueError as e:
                self._waiting(c, "CreateContainerConfigError", str(e), 5)
                return
            if self.runtime.exists(name):
                self.runtime.remove(name)  # left by a crashed agent
            del meta
            try:
                cid = self.runtime.run(argv)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                info = self.runtime.inspect(name)
                msg = str(e)
                if info is None:
                    # Never created (bad mount, bad option): kubelet's CreateContainerError.
                    self.sim.event(pod, "Failed", f"Error: {msg}", "Warning")
                    self._waiting(c, "CreateContainerError", msg, min(c.backoff, 10))
                    c.backoff = min(c.backoff * 2, 10)
                    return
                # Created but its process did not start (no such executable, ...): a
                # terminated StartError (exit 128), then the usual back-off.
                c.cid = info["Id"]
                c.state, c.reason, c.message = "terminated", "StartError", msg
                c.exit_code = 128
                c.started_at = c.finished_at = now_rfc3339()
                c.t_start = time.monotonic()
                self.sim.event(pod, "Failed", f"Error: {msg}", "Warning")
                return
            c.cid = cid
            self.runtime.watch(cid, self.wake.set)
            info = self.runtime.inspect(cid) or {}
            state = info.get("State") or {}
            c.t_start = time.monotonic()
            c.state, c.reason, c.message = "running", "", ""
            c.started_at = oci.rfc3339(state.get("StartedAt")) or now_rfc3339()
            c.exit_code = None
            for p in (c.readiness, c.liveness, c.startup):
                p.reset(c.t_start)
            c.started = c.startup.spec is None
            c.ready = c.started and c.readiness.spec is None and not c.init
            self.sim.event(pod, "Created", f"Created container: {c.name}")
            self.sim.event(pod, "Started", f"Started container {c.name}")
            _log(f"pod {self.ns_name}/{self.name}: started {c.name} as {cid[:12]} "
                 f"(pid {state.get('Pid')})")
            self.remove_old_attempts(c)
            if state.get("Status") in ("exited", "stopped"):
                self.runtime._died(cid, state.get("ExitCode"))

        def remove_old_attempts(self, c):
            """Keeps the previous container (for `kubectl logs --previous`), as kubelet does."""
            if c.attempt >= 2:
                pod = self.current()
                old = oci.container_name(pod, c.spec, c.attempt - 2)
                threading.Thread(target=self.runtime.remove, args=(old,), daemon=True).start()

        def reap(self, c):
            if c.state != "running" or not c.cid or not self.runtime.exited(c.cid):
                return
            info = self.runtime.inspect(c.cid) or {}
            state = info.get("State") or {}
            with self.runtime.lock:
                code = self.runtime.exits.get(c.cid)
            code = state.get("ExitCode", code)
            c.state = "terminated"
            c.exit_code = int(code if code is not None else 137)
            c.reason = oci.terminated_reason(c.exit_code, state.get("OOMKilled"))
            c.finished_at = oci.rfc3339(state.get("FinishedAt")) or now_rfc3339()
            c.message = self.termination_message(c)
            c.ready = c.started = False
            c.restart_at = 0
            self.runtime.unwatch(c.cid)
            if time.monotonic() - c.t_start > 10:
                c.backoff = KS.BACKOFF_MIN

        def termination_message(self, c):
            msg = b""
            if c.termination_file is not None:
                try:
                    msg = c.termination_file.read_bytes()[:oci.TERMINATION_MESSAGE_MAX]
                except OSError:
                    pass
            if (not msg and c.exit_code and
                    c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError"):
                log = (self.sim.root / "logs" / "pods" / f"{self.ns_name}_{self.name}_{self.uid}"
                       / c.name / f"{c.attempt}.log")
                try:
                    lines = log.read_bytes().splitlines()[-80:]
                    # CRI log lines: TIME STREAM TAG MESSAGE
                    msg = b"\n".join(ln.split(b" ", 3)[-1] for ln in lines)[-2048:]
                except OSError:
                    pass
            return msg.decode(errors="replace")

        def stop_container(self, c, grace):
            """Kills one container (a failed liveness/startup probe): preStop, then the stop
            signal and SIGKILL after the grace period, as kubelet's killContainer."""
            if c.state != "running" or not c.cid:
                return
            t0 = time.monotonic()
            self.pre_stop(c, grace)
            self.runtime.stop(c.cid, max(grace - (time.monotonic() - t0), 2 if grace else 0))
            self.runtime._died(c.cid, None)
            self.reap(c)

        def exec_in(self, c, command, timeout):
            if c.state != "running" or not c.cid:
                return -1
            rc, _, _ = self.runtime.exec(c.cid, list(command), timeout)
            return rc

        def _terminate(self, grace_override=None):
            grace = self.grace() if grace_override is None else grace_override
            stopping = self.sim.stopping.is_set()
            if self.gone or stopping:
                grace = min(grace, 2) if not self.gone else 0
            deadline = time.monotonic() + grace
            running = [c for c in self.containers + self.inits if c.state == "running"]
            pod = self.current()
            if running and not self.gone and not stopping:
                for c in running:
                    self.sim.event(pod, "Killing", f"Stopping container {c.name}")
            if grace > 0 and running and not stopping:
                hooks = [threading.Thread(target=self.pre_stop, args=(c, grace), daemon=True)
                         for c in running]
                for t in hooks:
                    t.start()
                for t in hooks:
                    t.join(max(deadline - time.monotonic(), 0))
            # Like kubelet: a hook that ate the whole grace period still leaves 2 s.
            left = max(deadline - time.monotonic(), 2 if running and grace > 0 else 0)
            stops = [threading.Thread(target=self.runtime.stop, args=(c.cid, int(left + 0.999)),
                                      daemon=True) for c in running if c.cid]
            for t in stops:
                t.start()
            for t in stops:
                t.join(left + 90)
            for c in running:
                self.runtime._died(c.cid, None)
                self.reap(c)
            for c in self.containers + self.inits:
                c.ready = False
            if not self.gone and not stopping:
                self.report(force=True)
            self._finish_deletion()

        def _finish_deletion(self):
            removed = self.runtime.remove_labelled(oci.LABEL_POD_UID, self.uid)
            for cid in removed:
                self.runtime.unwatch(cid)
            super()._finish_deletion()

        # --- status ----------------------------------------------------------------------

        def will_restart(self, c):
            if self.terminating():
                return False
            return super().will_restart(c)

        def build_status(self):
            pod = self.current()
            term = self.terminating()
            states = [(c.state, c.exit_code,
                       not term and ((c.state == "terminated" and self.will_restart(c)) or
                                     (c.state == "waiting" and c.last_state is not None)))
                      for c in self.containers]
            phase = kp.pod_phase(pod["spec"].get("restartPolicy"), self.init_done, states)
            never = pod["spec"].get("restartPolicy") == "Never"
            if not self.init_done and never and any(c.state == "terminated" and c.exit_code
                                                    for c in self.inits):
                phase = "Failed"
            if term and all(c.state in ("terminated", "waiting") for c in self.containers) \
                    and any(c.state == "terminated" for c in self.containers):
                codes = [c.exit_code for c in self.containers if c.state == "terminated"]
                phase = "Succeeded" if all(x == 0 for x in codes) and \
                    len(codes) == len(self.containers) else "Failed"
            pending_init = [c.name for c in self.inits
                            if not (c.state == "terminated" and c.exit_code == 0)]
            unready = [c.name for c in self.containers if not c.ready]
            conds = oci.pod_conditions(pod, sandbox_ready=self.sandbox_ready and not term,
                                       init_done=self.init_done,
                                       init_names_pending=[] if self.init_done else pending_init,
                                       unready=unready, phase=phase, terminating=term,
                                       now=now_rfc3339())
            host = self.sim.node_ip
            status = {"phase": phase, "hostIP": host, "hostIPs": [{"ip": host}],
                      "startTime": self.start_time,
                      "containerStatuses": [c.status() for c in self.containers]}
            gen = pod["metadata"].get("generation")
            if gen is not None:
                status["observedGeneration"] = gen
            if self.inits:
                status["initContainerStatuses"] = [c.status() for c in self.inits]
            if self.ip:
                status["podIP"] = self.ip
                status["podIPs"] = [{"ip": self.ip}]
            return status, conds

        def report(self, force=False):
            if self.gone:
                return
            status, ours = self.build_status()
            key = json.dumps([status, [(c["type"], c["status"]) for c in ours]], sort_keys=True)
            cur = self.current()
            existing = (cur.get("status") or {}).get("conditions")
            differ = (key == self.last_reported and oci.conditions_differ(existing, ours)
                      and time.monotonic() - self.last_differ_send > 2)
            if key == self.last_reported and not force and not differ:
                return
            if differ:
                self.last_differ_send = time.monotonic()
            conds = oci.keep_transition_times(existing, ours)
            path = f"/api/v1/namespaces/{self.ns_name}/pods/{self.name}/status"
            try:
                self.sim.kube.request("PATCH", path, oci.status_patch(status, conds),
                                      ctype="application/strategic-merge-patch+json")
                self.last_reported = key
            except ApiError as e:
                if e.status == 404:
                    return
                _log(f"pod {self.ns_name}/{self.name}: status: {e}")
            except OSError as e:
                _log(f"pod {self.ns_name}/{self.name}: status: {e}")

    return OciPodWorker


def kp_netns_etc():
    return KS.NETNS_ETC
