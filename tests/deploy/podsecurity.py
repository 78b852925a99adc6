"""The Kubernetes Pod Security Standards "restricted" profile (which includes "baseline"), as
documented at kubernetes.io/docs/concepts/security/pod-security-standards, for a pod spec.

check_restricted(pod_spec) returns the violations as strings (empty: compliant). Usable on
rendered chart objects and on pods the operator creates (through the fake API server).
"""

# Volume types "restricted" allows.
ALLOWED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral",
                   "persistentVolumeClaim", "projected", "secret"}
# Sysctls "baseline" allows.
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range",
                "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_syncookies",
                "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {None, "", "container_t", "container_init_t", "container_kvm_t",
                 "container_engine_t"}
VOLUME_SOURCE_KEYS = {"name"}


def _containers(spec):
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(field) or []:
            yield f"{field}[{c.get('name', '?')}]", c


def check_restricted(spec):
    errs = []
    psc = spec.get("securityContext") or {}
    # baseline: host namespaces, host paths and ports, privileged, /proc, sysctls, AppArmor,
    # SELinux, Windows host processes.
    for f in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(f):
            errs.append(f"{f}: true")
    if (psc.get("windowsOptions") or {}).get("hostProcess"):
        errs.append("securityContext.windowsOptions.hostProcess: true")
    for v in spec.get("volumes") or []:
        kinds = set(v) - VOLUME_SOURCE_KEYS
        if "hostPath" in kinds:
            errs.append(f"volume {v.get('name')}: hostPath")
        for k in kinds - ALLOWED_VOLUMES - {"hostPath"}:
            errs.append(f"volume {v.get('name')}: type {k} not allowed")
    for s in psc.get("sysctls") or []:
        if s.get("name") not in SAFE_SYSCTLS:
            errs.append(f"sysctl {s.get('name')} not allowed")

    def selinux(where, sc):
        se = sc.get("seLinuxOptions") or {}
        if se.get("type") not in SELINUX_TYPES or se.get("user") or se.get("role"):
            errs.append(f"{where}: seLinuxOptions {se} not allowed")

    def apparmor(where, sc):
        ap = (sc.get("appArmorProfile") or {}).get("type")
        if ap not in (None, "RuntimeDefault", "Localhost"):
            errs.append(f"{where}: appArmorProfile {ap} not allowed")

    def seccomp_type(sc):
        return (sc.get("seccompProfile") or {}).get("type")

    selinux("securityContext", psc)
    apparmor("securityContext", psc)
    if seccomp_type(psc) not in (None, "RuntimeDefault", "Localhost"):
        errs.append(f"securityContext.seccompProfile {seccomp_type(psc)} not allowed")
    if psc.get("runAsUser") == 0:
        errs.append("securityContext.runAsUser: 0")

    for where, c in _containers(spec):
        sc = c.get("securityContext") or {}
        if sc.get("privileged"):
            errs.append(f"{where}: privileged")
        if (sc.get("windowsOptions") or {}).get("hostProcess"):
            errs.append(f"{where}: hostProcess")
        for p in c.get("ports") or []:
            if p.get("hostPort"):
                errs.append(f"{where}: hostPort {p['hostPort']}")
        if sc.get("procMount") not in (None, "Default"):
            errs.append(f"{where}: procMount {sc['procMount']}")
        selinux(where, sc)
        apparmor(where, sc)
        # restricted
        if sc.get("allowPrivilegeEscalation") is not False:
            errs.append(f"{where}: allowPrivilegeEscalation must be false")
        caps = sc.get("capabilities") or {}
        if "ALL" not in (caps.get("drop") or []):
            errs.append(f"{where}: capabilities must drop ALL")
        for cap in caps.get("add") or []:
            if cap != "NET_BIND_SERVICE":
                errs.append(f"{where}: capability {cap} may not be added")
        non_root = sc.get("runAsNonRoot", psc.get("runAsNonRoot"))
        if non_root is not True:
            errs.append(f"{where}: runAsNonRoot must be true (pod or container)")
        if sc.get("runAsUser") == 0:
            errs.append(f"{where}: runAsUser: 0")
        st = seccomp_type(sc) or seccomp_type(psc)
        if st not in ("RuntimeDefault", "Localhost"):
            errs.append(f"{where}: seccompProfile must be RuntimeDefault or Localhost")
    return errs


# Where each workload kind keeps its pod spec.
POD_SPEC_PATHS = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def pod_spec_of(obj):
    path = POD_SPEC_PATHS.get(obj.get("kind"))
    if path is None:
        return None
    cur = obj
    for p in path:
        cur = (cur or {}).get(p)
    return cur or {}
