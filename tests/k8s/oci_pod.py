"""Pure helpers of the node agent's OCI mode (kubelet_sim.py --runtime podman): a pod's container
-> the `podman run` argv (command/args onto entrypoint/cmd, env, mounts, securityContext,
resources), the checks kubelet makes before creating a container (image present, runAsNonRoot),
container and pod status as kubelet reports them, ServiceAccount TokenRequests for projected
volumes, and the local storage provisioner's PersistentVolumes. No I/O here (oci_runtime.py and
local_provisioner.py do that), so everything is tested alone (tests/kube/test_oci_pod.py).
"""

import datetime
import json
import re

import kubelet_pod as kp

# containerd's default capability set (what a Kubernetes container gets without a
# securityContext); podman's own default lacks MKNOD, NET_RAW and AUDIT_WRITE.
DEFAULT_CAPS = ("CHOWN", "DAC_OVERRIDE", "FSETID", "FOWNER", "MKNOD", "NET_RAW", "SETGID",
                "SETUID", "SETFCAP", "SETPCAP", "NET_BIND_SERVICE", "SYS_CHROOT", "KILL",
                "AUDIT_WRITE")
LABEL_NODE = "shoal.dev/node"
LABEL_ROOT = "shoal.dev/agent-root"
LABEL_POD_UID = "io.kubernetes.pod.uid"
LABEL_POD_NAME = "io.kubernetes.pod.name"
LABEL_POD_NS = "io.kubernetes.pod.namespace"
LABEL_CONTAINER = "io.kubernetes.container.name"
CONTAINER_ID_PREFIX = "podman://"
TERMINATION_MESSAGE_MAX = 4096


# --- quantities -------------------------------------------------------------------------------

_SUFFIX = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60,
           "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "P": 1e15, "E": 1e18}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")


def parse_quantity(q):
    """A Kubernetes resource.Quantity ("500m", "1Gi", "129e6", 2) as a float."""
    if isinstance(q, (int, float)):
        return float(q)
    m = _QUANTITY.match(str(q).strip())
    if not m:
        raise ValueError(f"bad quantity {q!r}")
    value = float(m.group(1) + (m.group(2) or ""))
    return value * _SUFFIX[m.group(3) or ""]


# --- images -----------------------------------------------------------------------------------

def pull_policy(container):
    """imagePullPolicy as the API server defaults it (Always for :latest or no tag)."""
    policy = container.get("imagePullPolicy")
    if policy:
        return policy
    image = container.get("image", "")
    if "@" in image:
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def image_missing(image, policy, previous_failures):
    """(waiting reason, message, event reason, event message, event type) for an image that is
    not in local storage. No registry is reachable from these hosts, so a pull always fails;
    kubelet's reasons and messages (pkg/kubelet/images/image_manager.go)."""
    if policy == "Never":
        msg = f'Container image "{image}" is not present with pull policy of Never'
        return "ErrImageNeverPull", msg, "ErrImageNeverPull", msg, "Warning"
    err = (f"image {image} is not in the node's local image storage and no registry is "
           "reachable from this node agent")
    if previous_failures:
        msg = f'Back-off pulling image "{image}": ErrImagePull: {err}'
        return "ImagePullBackOff", msg, "BackOff", f'Back-off pulling image "{image}"', "Normal"
    return "ErrImagePull", err, "Failed", f'Failed to pull image "{image}": {err}', "Warning"


def image_present_event(image):
    return "Pulled", f'Container image "{image}" already present on machine'


def parse_image_user(user):
    """The image's USER ("1000", "app", "1000:1000", "") -> (uid or None, username, gid or None)."""
    user = (user or "").strip()
    name, _, group = user.partition(":")
    uid = int(name) if name.isdigit() else (0 if name == "" else None)
    gid = int(group) if group.isdigit() else None
    return uid, ("" if uid is not None else name), gid


# --- security ---------------------------------------------------------------------------------

_POD_SC_FIELDS = ("runAsUser", "runAsGroup", "runAsNonRoot", "seccompProfile", "seLinuxOptions",
                  "appArmorProfile", "windowsOptions")


def effective_security_context(pod, container):
    """The container's securityContext with the pod's defaults under it (as
    securitycontext.DetermineEffectiveSecurityContext)."""
    psc = (pod.get("spec") or {}).get("securityContext") or {}
    out = {k: psc[k] for k in _POD_SC_FIELDS if k in psc}
    out.update(container.get("securityContext") or {})
    return out


def format_pod(pod):
    meta = pod.get("metadata") or {}
    return f"{meta.get('name')}_{meta.get('namespace', 'default')}({meta.get('uid')})"


def verify_run_as_non_root(pod, container, image_user):
    """kubelet's verifyRunAsNonRoot: an error message, or None when the container may start."""
    sc = effective_security_context(pod, container)
    if not sc.get("runAsNonRoot"):
        return None
    where = f'(pod: "{format_pod(pod)}", container: {container["name"]})'
    if sc.get("runAsUser") is not None:
        if int(sc["runAsUser"]) == 0:
            return f"container's runAsUser breaks non-root policy {where}"
        return None
    uid, username, _ = parse_image_user(image_user)
    if uid is None and username:
        return ("container has runAsNonRoot and image has non-numeric user "
                f"({username}), cannot verify user is non-root {where}")
    if uid == 0:
        return f"container has runAsNonRoot and image will run as root {where}"
    return None


def capabilities(sc):
    """The container's capability set (None: everything, for privileged)."""
    if sc.get("privileged"):
        return None
    caps = sc.get("capabilities") or {}
    norm = [c.upper().removeprefix("CAP_") for c in caps.get("drop") or []]
    add = [c.upper().removeprefix("CAP_") for c in caps.get("add") or []]
    have = [] if "ALL" in norm else [c for c in DEFAULT_CAPS if c not in norm]
    if "ALL" in add:
        return None
    for c in add:
        if c not in have:
            have.append(c)
    return have


def security_args(pod, container, image_user, seccomp_root="/var/lib/kubelet/seccomp"):
    """podman flags for the securityContext: user and groups, privileged, capabilities,
    read-only root, no-new-privileges, seccomp."""
    spec = pod.get("spec") or {}
    psc = spec.get("securityContext") or {}
    sc = effective_security_context(pod, container)
    args = []
    uid, gid = sc.get("runAsUser"), sc.get("runAsGroup")
    if uid is not None or gid is not None:
        if uid is None:
            img_uid, img_name, _ = parse_image_user(image_user)
            uid = img_name or img_uid or 0
        args += ["--user", f"{uid}:{gid}" if gid is not None else str(uid)]
    groups = [int(g) for g in psc.get("supplementalGroups") or []]
    if psc.get("fsGroup") is not None and int(psc["fsGroup"]) not in groups:
        groups.append(int(psc["fsGroup"]))
    for g in groups:
        args += ["--group-add", str(g)]
    privileged = bool(sc.get("privileged"))
    if privileged:
        args.append("--privileged")
    else:
        caps = capabilities(sc)
        args += ["--cap-drop", "ALL"]
        for c in caps if caps is not None else ["ALL"]:
            args += ["--cap-add", c]
    if sc.get("readOnlyRootFilesystem"):
        # No tmpfs on /tmp, /run, /var/tmp: a Kubernetes container gets none either.
        args += ["--read-only", "--read-only-tmpfs=false"]
    caps = capabilities(sc) or []
    if (sc.get("allowPrivilegeEscalation") is False and not privileged
            and "SYS_ADMIN" not in caps):
        args += ["--security-opt", "no-new-privileges"]
    prof = sc.get("seccompProfile") or {}
    kind = prof.get("type")
    if privileged or kind in (None, "Unconfined"):
        # Kubernetes' default is Unconfined unless kubelet runs with --seccomp-default.
        args += ["--security-opt", "seccomp=unconfined"]
    elif kind == "Localhost":
        args += ["--security-opt",
                 f"seccomp={seccomp_root.rstrip('/')}/{prof.get('localhostProfile', '')}"]
    # RuntimeDefault: podman's default profile (/usr/share/containers/seccomp.json).
    return args


# --- resources --------------------------------------------------------------------------------

def resource_args(container):
    """podman flags for requests/limits. Podman runs containers under cgroup v1 here (cgroupfs
    manager; the v2 tree has no controllers): the memory limit (OOM kill at the limit), CPU
    quota (limits.cpu -> CFS quota) and CPU weight (requests.cpu -> cpu.shares, as kubelet
    computes them) are enforced. Not enforced: ephemeral-storage, hugepages, extended
    resources, and the pod-level cgroup (each container has its own, no pod sum). Podman 4.3
    with conmon 2.1.6 does not see OOM kills on cgroup v1 here (State.OOMKilled stays false),
    so a container killed at its memory limit ends "Error" with exit code 137, not
    "OOMKilled"."""
    res = container.get("resources") or {}
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    args = []
    if "memory" in limits:
        mem = int(parse_quantity(limits["memory"]))
        args += ["--memory", str(mem), "--memory-swap", str(mem)]
    if "cpu" in limits:
        args += ["--cpus", f"{parse_quantity(limits['cpu']):.3f}"]
    cpu_req = requests.get("cpu", limits.get("cpu"))
    if cpu_req is not None:
        shares = max(2, int(parse_quantity(cpu_req) * 1024))
        args += ["--cpu-shares", str(shares)]
    return args


# --- command ----------------------------------------------------------------------------------

def command_and_args(container, env):
    """(entrypoint or None, cmd or None) as Kubernetes defines them against the image: command
    replaces ENTRYPOINT (and drops the image's CMD), args replace CMD; $(VAR) expanded."""
    command = container.get("command")
    args = container.get("args")
    entry = [kp.expand(a, env) for a in command] if command else None
    cmd = [kp.expand(a, env) for a in args] if args else None
    return entry, cmd


def env_file_text(env):
    """(text of a podman --env-file, names left for -e NAME=VALUE): one line a variable; values
    with a newline cannot be written there."""
    lines, rest = [], []
    for k, v in env.items():
        if "\n" in v or "\r" in v or "\0" in v:
            rest.append(k)
        else:
            lines.append(f"{k}={v}")
    return "".join(line + "\n" for line in lines), rest


def container_name(pod, container, attempt):
    meta = pod["metadata"]
    return (f"k8s_{container['name']}_{meta['name']}_{meta.get('namespace', 'default')}_"
            f"{meta['uid']}_{attempt}")


def container_labels(pod, container, node, root):
    meta = pod["metadata"]
    return {LABEL_POD_UID: meta["uid"], LABEL_POD_NAME: meta["name"],
            LABEL_POD_NS: meta.get("namespace", "default"), LABEL_CONTAINER: container["name"],
            LABEL_NODE: node, LABEL_ROOT: str(root)}


def run_argv(pod, container, *, image, name, labels, network, hostname, env, env_file,
             mounts, image_user, log_path, ulimits=(), podman="podman", seccomp_root=None,
             extra=()):
    """The `podman run -d` argv of one container. `network` is a netns path or "host";
    `mounts` [(source, destination, read_only)], bind mounts in order; `env` the container's
    environment (written to `env_file` by the caller, see env_file_text; what that file cannot
    hold is passed here on the command line)."""
    argv = [podman, "run", "-d", "--name", name, "--pull", "never", "--systemd", "false",
            "--log-driver", "k8s-file", "--log-opt", f"path={log_path}"]
    for k, v in sorted(labels.items()):
        argv += ["--label", f"{k}={v}"]
    if network == "host":
        argv += ["--network", "host", "--uts", "host"]
    else:
        argv += ["--network", f"ns:{network}", "--hostname", hostname]
    for u in ulimits:
        argv += ["--ulimit", u]
    argv += ["--env-file", str(env_file)]
    # podman's own defaults (containers.conf) that a CRI runtime does not add.
    for k in ("TERM", "container"):
        if k not in env and not (k == "TERM" and container.get("tty")):
            argv += ["--unsetenv", k]
    for k in env_file_text(env)[1]:
        argv += ["--env", f"{k}={env[k]}"]
    if container.get("workingDir"):
        argv += ["--workdir", container["workingDir"]]
    for src, dst, ro in mounts:
        if "," in str(src) or "," in str(dst):
            raise ValueError(f"mount path with a comma: {src} -> {dst}")
        opt = f"type=bind,source={src},destination={dst}"
        argv += ["--mount", opt + (",ro=true" if ro else "")]
    argv += security_args(pod, container, image_user,
                          **({"seccomp_root": seccomp_root} if seccomp_root else {}))
    argv += resource_args(container)
    if container.get("stdin"):
        argv.append("--interactive")
    if container.get("tty"):
        argv.append("--tty")
    stop_signal = (container.get("lifecycle") or {}).get("stopSignal")
    if stop_signal:
        argv += ["--stop-signal", stop_signal]
    argv += list(extra)
    entry, cmd = command_and_args(container, env)
    if entry is not None:
        argv += ["--entrypoint", json.dumps(entry)]
    argv.append(image)
    if cmd is not None:
        argv += cmd
    return argv


# --- status -----------------------------------------------------------------------------------

def rfc3339(podman_time):
    """podman's "2026-12-01T20:48:07.731186503Z" / "2026-12-01 20:48:07.73 +0000 UTC" ->
    RFC 3339 in seconds, as the API stores times."""
    if not podman_time:
        return None
    t = str(podman_time).strip()
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})", t)
    if not m:
        return None
    if t.startswith("0001-"):
        return None
    return f"{m.group(1)}T{m.group(2)}Z"


def container_status(rec):
    """A v1.ContainerStatus from an agent record: name, image, image_id, cid, state
    (waiting|running|terminated), reason, message, exit_code, started_at, finished_at,
    last_state, restarts, ready, started."""
    st = {"name": rec["name"], "image": rec.get("image", ""), "imageID": rec.get("image_id") or "",
          "ready": bool(rec.get("ready")), "restartCount": int(rec.get("restarts", 0)),
          "started": bool(rec.get("started"))}
    if rec.get("cid"):
        st["containerID"] = CONTAINER_ID_PREFIX + rec["cid"]
    state = rec.get("state")
    if state == "running":
        st["state"] = {"running": {"startedAt": rec.get("started_at")}}
    elif state == "terminated":
        term = {"exitCode": int(rec.get("exit_code") or 0), "reason": rec.get("reason") or "Error",
                "startedAt": rec.get("started_at"), "finishedAt": rec.get("finished_at")}
        if rec.get("message"):
            term["message"] = rec["message"]
        if rec.get("cid"):
            term["containerID"] = CONTAINER_ID_PREFIX + rec["cid"]
        st["state"] = {"terminated": term}
    else:
        waiting = {"reason": rec.get("reason") or "ContainerCreating"}
        if rec.get("message"):
            waiting["message"] = rec["message"]
        st["state"] = {"waiting": waiting}
    if rec.get("last_state"):
        st["lastState"] = rec["last_state"]
    return st


def terminated_reason(exit_code, oom_killed):
    if oom_killed:
        return "OOMKilled"
    return "Completed" if exit_code == 0 else "Error"


def pod_conditions(pod, *, sandbox_ready, init_done, init_names_pending, unready, phase,
                   terminating, now):
    """kubelet's pod conditions (PodReadyToStartContainers, Initialized, Ready,
    ContainersReady, PodScheduled) in the order it writes them."""

    def cond(t, ok, reason=None, message=None):
        c = {"type": t, "status": "True" if ok else "False", "lastProbeTime": None,
             "lastTransitionTime": now}
        gen = (pod.get("metadata") or {}).get("generation")
        if gen is not None:
            c["observedGeneration"] = gen
        if reason and (not ok or reason == "PodCompleted"):
            c["reason"] = reason
        if message and not ok:
            c["message"] = message
        return c

    completed = phase == "Succeeded"
    ready = init_done and not unready and phase == "Running" and not terminating
    unready_msg = f"containers with unready status: [{' '.join(unready)}]" if unready else None
    init_msg = (f"containers with incomplete status: [{' '.join(init_names_pending)}]"
                if init_names_pending else None)
    if completed:
        return [cond("PodReadyToStartContainers", False),
                cond("Initialized", True, "PodCompleted"),
                cond("Ready", False, "PodCompleted"),
                cond("ContainersReady", False, "PodCompleted"),
                cond("PodScheduled", True)]
    return [cond("PodReadyToStartContainers", sandbox_ready),
            cond("Initialized", init_done, "ContainersNotInitialized", init_msg),
            cond("Ready", ready, "ContainersNotReady", unready_msg),
            cond("ContainersReady", ready, "ContainersNotReady", unready_msg),
            cond("PodScheduled", True)]


def keep_transition_times(existing, ours):
    """Our conditions with lastTransitionTime kept from `existing` when the status did not
    change (only our types are sent: a strategic merge patch keeps the others')."""
    by_type = {c.get("type"): c for c in existing or []}
    out = []
    for c in ours:
        old = by_type.get(c["type"])
        if old and old.get("status") == c["status"] and old.get("lastTransitionTime"):
            c = dict(c, lastTransitionTime=old["lastTransitionTime"])
        out.append(c)
    return out


def conditions_differ(existing, ours):
    """True when the API's copy of one of our condition types differs in status."""
    by_type = {c.get("type"): c.get("status") for c in existing or []}
    return any(by_type.get(c["type"]) != c["status"] for c in ours)


def status_patch(status, conditions):
    """A strategic merge patch of pods/status: our conditions merged by type (other writers'
    kept); the container status lists are atomic (+listType=atomic), so replaced whole."""
    st = dict(status)
    # Fields a condition no longer has are sent as null: a strategic merge keeps the old
    # element's other fields otherwise (a stale reason on a True condition).
    st["conditions"] = [dict({"reason": None, "message": None}, **c) for c in conditions]
    return {"status": st}


# --- ServiceAccount tokens --------------------------------------------------------------------

def token_request(pod, source):
    """The TokenRequest body for a projected serviceAccountToken source, bound to the pod (as
    kubelet's token manager asks; NodeRestriction requires the pod binding)."""
    meta = pod["metadata"]
    spec = {"expirationSeconds": int(source.get("expirationSeconds") or 3600),
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                               "uid": meta["uid"]}}
    if source.get("audience"):
        spec["audiences"] = [source["audience"]]
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}


def parse_time(t):
    return datetime.datetime.strptime(t, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def token_needs_refresh(issued_at, expires_at, now):
    """kubelet's rule: refresh after 80 % of the token's life or 24 h, whichever is first."""
    ttl = expires_at - issued_at
    return now >= expires_at - 0.2 * ttl or now >= issued_at + 24 * 3600


# --- local storage provisioner -----------------------------------------------------------------

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"


def claim_to_provision(pvc, storage_class, provisioner, node):
    """True when this node's provisioner should make a volume for the claim now: pending, of a
    StorageClass of ours, not yet bound to a volume, and (WaitForFirstConsumer) the scheduler
    picked this node for its first pod."""
    if not storage_class or storage_class.get("provisioner") != provisioner:
        return False
    if (pvc.get("status") or {}).get("phase", "Pending") != "Pending":
        return False
    if (pvc.get("spec") or {}).get("volumeName") or pvc["metadata"].get("deletionTimestamp"):
        return False
    ann = pvc["metadata"].get("annotations") or {}
    wanted = ann.get(ANN_STORAGE_PROVISIONER) or ann.get(ANN_BETA_STORAGE_PROVISIONER)
    if wanted != provisioner:
        return False  # the PV controller has not handed it to an external provisioner yet
    if storage_class.get("volumeBindingMode") == "WaitForFirstConsumer":
        return ann.get(ANN_SELECTED_NODE) == node
    return True


def volume_name(pvc):
    return f"pvc-{pvc['metadata']['uid']}"


def volume_for_claim(pvc, storage_class, provisioner, node, path):
    """The PersistentVolume for a claim: hostPath at `path` on this node (node affinity), claim
    reference pre-bound, reclaim policy from the class (local-path-provisioner's shape)."""
    spec = pvc.get("spec") or {}
    size = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
    meta = pvc["metadata"]
    return {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": volume_name(pvc),
                     "annotations": {ANN_PROVISIONED_BY: provisioner,
                                     "shoal.dev/local-path-node": node}},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": spec.get("accessModes") or ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "storageClassName": storage_class["metadata"]["name"],
            "volumeMode": spec.get("volumeMode") or "Filesystem",
            "hostPath": {"path": str(path), "type": "DirectoryOrCreate"},
            "claimRef": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                         "namespace": meta.get("namespace", "default"), "name": meta["name"],
                         "uid": meta["uid"]},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}},
        },
    }


def volume_to_delete(pv, provisioner, node):
    """True for a volume of ours on this node whose claim is gone (Released, policy Delete)."""
    ann = pv["metadata"].get("annotations") or {}
    if ann.get(ANN_PROVISIONED_BY) != provisioner or ann.get("shoal.dev/local-path-node") != node:
        return False
    spec = pv.get("spec") or {}
    return ((pv.get("status") or {}).get("phase") in ("Released", "Failed")
            and spec.get("persistentVolumeReclaimPolicy", "Delete") == "Delete")


def volume_path(pv):
    spec = pv.get("spec") or {}
    return (spec.get("hostPath") or {}).get("path") or (spec.get("local") or {}).get("path")


# --- container logs ---------------------------------------------------------------------------

def cri_log_text(data, timestamps=False, tail_lines=None, streams=("stdout", "stderr")):
    """What `kubectl logs` shows of a CRI-format log (podman's k8s-file driver, as kubelet
    reads containerd's): lines "TIME STREAM P|F MESSAGE", partial (P) lines of a stream joined
    to the rest of that stream's line."""
    out, partial = [], {}
    for raw in data.splitlines():
        parts = raw.split(b" ", 3)
        if len(parts) < 3:
            continue
        ts, stream, tag = parts[0], parts[1].decode(errors="replace"), parts[2]
        msg = parts[3] if len(parts) > 3 else b""
        if stream not in streams:
            continue
        first_ts, pieces = partial.get(stream, (ts, []))
        pieces.append(msg)
        if tag == b"P":
            partial[stream] = (first_ts, pieces)
            continue
        partial.pop(stream, None)
        line = b"".join(pieces) + b"\n"
        out.append((first_ts + b" " + line) if timestamps else line)
    for first_ts, pieces in partial.values():
        line = b"".join(pieces)
        out.append((first_ts + b" " + line) if timestamps else line)
    if tail_lines is not None:
        out = out[-tail_lines:] if tail_lines > 0 else []
    return b"".join(out)
