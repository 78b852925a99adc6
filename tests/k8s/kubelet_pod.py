"""Pure helpers of the kubelet simulator: pod spec -> environment, hosts files, probes' targets,
phase and conditions. No I/O here (the simulator in kubelet_sim.py does that), so these are
tested alone.
"""

import base64
import re

CLUSTER_DOMAIN = "cluster.local"
OWN_CONDITIONS = ("PodScheduled", "Initialized", "ContainersReady", "Ready")
STANDARD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_LABEL_REF = re.compile(r"^metadata\.(labels|annotations)\['([^']+)'\]$")
_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def expand(text, env):
    """Kubernetes' $(VAR) expansion: defined vars are replaced, $$ escapes, others stay."""
    if not isinstance(text, str):
        return text

    def sub(m):
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _VAR_REF.sub(sub, text)


def pod_hostname(pod):
    spec = pod.get("spec", {})
    return (spec.get("hostname") or pod["metadata"]["name"])[:63]


def pod_fqdn(pod):
    """hostname.subdomain.ns.svc.cluster.local when the pod has a subdomain, else None."""
    spec = pod.get("spec", {})
    if not spec.get("subdomain"):
        return None
    ns = pod["metadata"].get("namespace", "default")
    return f"{pod_hostname(pod)}.{spec['subdomain']}.{ns}.svc.{CLUSTER_DOMAIN}"


def field_ref(pod, path):
    """Value of a downward-API fieldRef path, or None when unsupported/absent."""
    meta, spec, status = pod.get("metadata", {}), pod.get("spec", {}), pod.get("status", {})
    m = _LABEL_REF.match(path)
    if m:
        return (meta.get(m.group(1)) or {}).get(m.group(2), "")
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace", "default"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName", "default"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
        "status.podIPs": ",".join(i.get("ip", "") for i in status.get("podIPs", [])),
        "status.hostIPs": ",".join(i.get("ip", "") for i in status.get("hostIPs", [])),
    }
    if path == "metadata.labels":
        return "\n".join(f'{k}="{v}"' for k, v in sorted((meta.get("labels") or {}).items()))
    if path == "metadata.annotations":
        return "\n".join(f'{k}="{v}"' for k, v in sorted((meta.get("annotations") or {}).items()))
    return simple.get(path)


def object_data(obj, kind):
    """key -> bytes of a ConfigMap (data + binaryData) or Secret (data base64, stringData)."""
    out = {}
    if obj is None:
        return out
    if kind == "Secret":
        for k, v in (obj.get("data") or {}).items():
            out[k] = base64.b64decode(v or "")
        for k, v in (obj.get("stringData") or {}).items():
            out[k] = v.encode()
    else:
        for k, v in (obj.get("data") or {}).items():
            out[k] = (v or "").encode()
        for k, v in (obj.get("binaryData") or {}).items():
            out[k] = base64.b64decode(v or "")
    return out


def service_env(services, ns, backend_ip):
    """<NAME>_SERVICE_HOST/_PORT (+ named ports) of the namespace's non-headless services.
    `backend_ip(svc)` gives the address a client should use (kube-proxy collapsed to one pod)."""
    env = {}
    for svc in sorted(services, key=lambda s: s["metadata"]["name"]):
        if svc["metadata"].get("namespace", "default") != ns:
            continue
        spec = svc.get("spec", {})
        if spec.get("clusterIP") == "None" or spec.get("type") == "ExternalName":
            continue
        ports = spec.get("ports") or []
        if not ports:
            continue
        host = backend_ip(svc) or spec.get("clusterIP") or ""
        if not host:
            continue
        base = svc["metadata"]["name"].upper().replace("-", "_")
        env[f"{base}_SERVICE_HOST"] = host
        env[f"{base}_SERVICE_PORT"] = str(ports[0].get("port"))
        for p in ports:
            if p.get("name"):
                env[f"{base}_SERVICE_PORT_{p['name'].upper().replace('-', '_')}"] = str(p["port"])
        proto = (ports[0].get("protocol") or "TCP").lower()
        env[f"{base}_PORT"] = f"{proto}://{host}:{ports[0].get('port')}"
    return env


def build_env(pod, container, services_env, lookup, extra=None):
    """The container's environment as an ordered dict. `lookup(kind, name)` returns the
    ConfigMap/Secret object or None. Returns (env, error) where error names a missing
    non-optional reference (the container must not start then, like kubelet's
    CreateContainerConfigError)."""
    env = dict(extra or {})
    env.update(services_env)
    for src in container.get("envFrom") or []:
        prefix = src.get("prefix", "")
        for kind, key in (("ConfigMap", "configMapRef"), ("Secret", "secretRef")):
            ref = src.get(key)
            if not ref:
                continue
            obj = lookup(kind, ref.get("name"))
            if obj is None:
                if not ref.get("optional"):
                    return None, f"{kind.lower()} \"{ref.get('name')}\" not found"
                continue
            for k, v in object_data(obj, kind).items():
                if _ENV_NAME.match(prefix + k):
                    env[prefix + k] = v.decode(errors="replace")
    for item in container.get("env") or []:
        name = item["name"]
        if "value" in item or "valueFrom" not in item:
            env[name] = expand(item.get("value", ""), env)
            continue
        vf = item["valueFrom"]
        if "fieldRef" in vf:
            value = field_ref(pod, vf["fieldRef"].get("fieldPath", ""))
            env[name] = "" if value is None else str(value)
        elif "resourceFieldRef" in vf:
            res = vf["resourceFieldRef"].get("resource", "")
            kind, _, what = res.partition(".")
            value = ((container.get("resources") or {}).get(kind) or {}).get(what)
            env[name] = str(value) if value is not None else "0"
        else:
            for kind, key in (("ConfigMap", "configMapKeyRef"), ("Secret", "secretKeyRef")):
                ref = vf.get(key)
                if not ref:
                    continue
                data = object_data(lookup(kind, ref.get("name")), kind)
                if ref.get("key") in data:
                    env[name] = data[ref["key"]].decode(errors="replace")
                elif not ref.get("optional"):
                    what = f"{kind.lower()} \"{ref.get('name')}\" key \"{ref.get('key')}\""
                    return None, f"{what} not found"
    return env, None


def container_argv(container, env, entrypoints):
    """command + args with $(VAR) expanded; the image's entrypoint when no command is set."""
    command = list(container.get("command") or [])
    args = list(container.get("args") or [])
    if not command:
        image = container.get("image", "")
        name = image.rsplit("@", 1)[0]
        if ":" in name.rsplit("/", 1)[-1]:
            name = name.rsplit(":", 1)[0]
        command = list(entrypoints.get(name) or entrypoints.get(image) or [])
    argv = [expand(a, env) for a in command + args]
    return argv


def dns_names(fqdn, viewer_ns):
    """The names a pod in `viewer_ns` resolves to `fqdn` (X.svc.cluster.local) through the
    search path <ns>.svc.cluster.local svc.cluster.local cluster.local."""
    suffix = f".svc.{CLUSTER_DOMAIN}"
    names = [fqdn]
    if fqdn.endswith(suffix):
        short = fqdn[: -len(suffix)]  # name.ns or host.sub.ns
        names += [short + ".svc", short]
        if short.endswith("." + viewer_ns):
            names.append(short[: -len(viewer_ns) - 1])
    return names


def pod_ready(pod):
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    for c in pod.get("status", {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def selects(selector, pod):
    if not selector:
        return False
    labels = pod.get("metadata", {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def service_backends(svc, pods):
    """Pods (IP set) backing a Service, ready ones only unless publishNotReadyAddresses."""
    ns = svc["metadata"].get("namespace", "default")
    spec = svc.get("spec", {})
    every = bool(spec.get("publishNotReadyAddresses"))
    out = []
    for p in pods:
        if p["metadata"].get("namespace", "default") != ns or not p.get("status", {}).get("podIP"):
            continue
        if not selects(spec.get("selector"), p):
            continue
        if p["metadata"].get("deletionTimestamp") and not every:
            continue
        if every or pod_ready(p):
            out.append(p)
    return sorted(out, key=lambda p: p["metadata"]["name"])


def dns_records(services, pods):
    """Cluster DNS as [(fqdn, ip, namespace-of-record)], kube-proxy collapsed: a ClusterIP
    service names one ready backend; a headless one names all, plus each backing pod's
    hostname.subdomain record."""
    records = []
    def order(svc):
        return svc["metadata"].get("namespace", ""), svc["metadata"]["name"]

    for svc in sorted(services, key=order):
        ns = svc["metadata"].get("namespace", "default")
        name = svc["metadata"]["name"]
        spec = svc.get("spec", {})
        fqdn = f"{name}.{ns}.svc.{CLUSTER_DOMAIN}"
        backends = service_backends(svc, pods)
        if spec.get("clusterIP") == "None":
            for p in backends:
                records.append((fqdn, p["status"]["podIP"], ns))
            for p in backends:
                if p.get("spec", {}).get("subdomain") == name:
                    host = f"{pod_hostname(p)}.{name}.{ns}.svc.{CLUSTER_DOMAIN}"
                    records.append((host, p["status"]["podIP"], ns))
        elif backends:
            records.append((fqdn, backends[0]["status"]["podIP"], ns))
    return records


def hosts_file(pod, pod_ip, records):
    """/etc/hosts of a pod: localhost, the pod's own names, hostAliases, then cluster DNS."""
    ns = pod["metadata"].get("namespace", "default")
    lines = ["# Kubernetes-managed hosts file (shoal kubelet simulator).",
             "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    fqdn = pod_fqdn(pod)
    own = [fqdn, pod_hostname(pod)] if fqdn else [pod_hostname(pod)]
    lines.append(f"{pod_ip}\t{' '.join(own)}")
    for alias in pod.get("spec", {}).get("hostAliases") or []:
        lines.append(f"{alias.get('ip')}\t{' '.join(alias.get('hostnames') or [])}")
    lines.append("# cluster DNS")
    for rec_fqdn, ip, _ in records:
        lines.append(f"{ip}\t{' '.join(dns_names(rec_fqdn, ns))}")
    return "\n".join(lines) + "\n"


def merge_conditions(existing, ours):
    """Our condition types replace theirs; other writers' types are kept (in order);
    lastTransitionTime is kept when the status did not change."""
    by_type = {c.get("type"): c for c in existing or []}
    out = [c for c in existing or [] if c.get("type") not in {o["type"] for o in ours}]
    for c in ours:
        old = by_type.get(c["type"])
        if old and old.get("status") == c["status"] and old.get("lastTransitionTime"):
            c = dict(c, lastTransitionTime=old["lastTransitionTime"])
        out.append(c)
    return out


def pod_phase(restart_policy, init_done, states):
    """Phase from container states: list of (state, exit_code, will_restart)."""
    if not init_done:
        return "Pending"
    if any(s == "running" or will for s, _, will in states):
        return "Running"
    if states and all(s == "terminated" for s, _, _ in states):
        return "Succeeded" if all(code == 0 for _, code, _ in states) else "Failed"
    return "Pending"


def will_restart(restart_policy, exit_code):
    policy = restart_policy or "Always"
    return policy == "Always" or (policy == "OnFailure" and exit_code != 0)


def resolve_port(port, container):
    """A probe's port: a number or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    return None


def cluster_hosts(records, viewer_ns="default"):
    """A hosts file of cluster DNS as seen from `viewer_ns`, for processes on the host."""
    lines = ["# cluster DNS of the shoal kubelet simulator (for host processes)"]
    for fqdn, ip, _ in records:
        lines.append(f"{ip}\t{' '.join(dns_names(fqdn, viewer_ns))}")
    return "\n".join(lines) + "\n"


def _slices_of(svc, slices):
    ns = svc["metadata"].get("namespace", "default")
    name = svc["metadata"]["name"]
    return [s for s in slices
            if s["metadata"].get("namespace", "default") == ns
            and (s["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name]


def slice_addresses(svc, slices):
    """Ready endpoint addresses of a Service from its EndpointSlices (for Services without a
    selector, e.g. `kubernetes`, whose endpoints are not pods)."""
    out = []
    for s in _slices_of(svc, slices):
        for ep in s.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready") is False:
                continue
            for a in ep.get("addresses") or []:
                if a not in out:
                    out.append(a)
    return out


def slice_records(services, slices):
    """Cluster DNS records of selectorless Services from their EndpointSlices (as dns_records
    does from pods for the others): one address for a ClusterIP Service, all for headless."""
    records = []
    for svc in sorted(services, key=lambda s: (s["metadata"].get("namespace", ""),
                                               s["metadata"]["name"])):
        spec = svc.get("spec") or {}
        if spec.get("selector") or spec.get("type") == "ExternalName":
            continue
        ns = svc["metadata"].get("namespace", "default")
        fqdn = f"{svc['metadata']['name']}.{ns}.svc.{CLUSTER_DOMAIN}"
        addrs = slice_addresses(svc, slices)
        if spec.get("clusterIP") == "None":
            records += [(fqdn, a, ns) for a in addrs]
        elif addrs:
            records.append((fqdn, addrs[0], ns))
    return records
