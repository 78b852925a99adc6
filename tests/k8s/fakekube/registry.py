"""Resource types the fake API server knows: the built-in ones and those added by CRDs."""

import threading
from dataclasses import dataclass, field


@dataclass
class ResourceType:
    group: str  # "" for the core group
    versions: list  # served versions, preferred first
    plural: str
    kind: str
    namespaced: bool
    short_names: list = field(default_factory=list)
    singular: str = ""
    categories: list = field(default_factory=list)
    subresources: set = field(default_factory=set)  # "status", "scale", "eviction", "binding"
    # scale subresource paths (JSON paths like ".spec.replicas")
    spec_replicas_path: str = ".spec.replicas"
    status_replicas_path: str = ".status.replicas"
    label_selector_path: str = ""
    printer_columns: dict = field(default_factory=dict)  # version -> additionalPrinterColumns
    schemas: dict = field(default_factory=dict)  # version -> openAPIV3Schema (CRDs only)
    crd_name: str = ""  # set for custom resources

    @property
    def key(self):
        return (self.group, self.plural)

    def api_version(self, version=None):
        version = version or self.versions[0]
        return f"{self.group}/{version}" if self.group else version

    @property
    def list_kind(self):
        return self.kind + "List"

    def verbs(self):
        return ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _rt(group, versions, plural, kind, namespaced, short=(), subs=(), **kw):
    singular = kw.pop("singular", kind.lower())
    return ResourceType(group, list(versions), plural, kind, namespaced, list(short), singular,
                        subresources=set(subs), **kw)


def builtin_types():
    return [
        _rt("", ["v1"], "pods", "Pod", True, ["po"], ["status", "eviction", "binding"],
            categories=["all"]),
        _rt("", ["v1"], "services", "Service", True, ["svc"], ["status"], categories=["all"]),
        _rt("", ["v1"], "configmaps", "ConfigMap", True, ["cm"]),
        _rt("", ["v1"], "secrets", "Secret", True),
        _rt("", ["v1"], "nodes", "Node", False, ["no"], ["status"]),
        _rt("", ["v1"], "namespaces", "Namespace", False, ["ns"], ["status"]),
        _rt("", ["v1"], "persistentvolumeclaims", "PersistentVolumeClaim", True, ["pvc"],
            ["status"]),
        _rt("", ["v1"], "persistentvolumes", "PersistentVolume", False, ["pv"], ["status"]),
        _rt("", ["v1"], "events", "Event", True, ["ev"]),
        _rt("events.k8s.io", ["v1"], "events", "Event", True, ["ev"]),
        _rt("", ["v1"], "serviceaccounts", "ServiceAccount", True, ["sa"]),
        _rt("", ["v1"], "endpoints", "Endpoints", True, ["ep"], singular="endpoints"),
        _rt("apps", ["v1"], "deployments", "Deployment", True, ["deploy"], ["status", "scale"],
            categories=["all"], label_selector_path=".spec.selector"),
        _rt("apps", ["v1"], "statefulsets", "StatefulSet", True, ["sts"], ["status", "scale"],
            categories=["all"], label_selector_path=".spec.selector"),
        _rt("apps", ["v1"], "daemonsets", "DaemonSet", True, ["ds"], ["status"],
            categories=["all"]),
        _rt("apps", ["v1"], "replicasets", "ReplicaSet", True, ["rs"], ["status", "scale"],
            categories=["all"], label_selector_path=".spec.selector"),
        _rt("apps", ["v1"], "controllerrevisions", "ControllerRevision", True),
        _rt("policy", ["v1", "v1beta1"], "poddisruptionbudgets", "PodDisruptionBudget", True,
            ["pdb"], ["status"]),
        _rt("coordination.k8s.io", ["v1"], "leases", "Lease", True),
        _rt("apiextensions.k8s.io", ["v1"], "customresourcedefinitions",
            "CustomResourceDefinition", False, ["crd", "crds"], ["status"]),
        _rt("rbac.authorization.k8s.io", ["v1"], "roles", "Role", True),
        _rt("rbac.authorization.k8s.io", ["v1"], "rolebindings", "RoleBinding", True),
        _rt("rbac.authorization.k8s.io", ["v1"], "clusterroles", "ClusterRole", False),
        _rt("rbac.authorization.k8s.io", ["v1"], "clusterrolebindings", "ClusterRoleBinding",
            False),
        _rt("autoscaling", ["v2", "v1"], "horizontalpodautoscalers", "HorizontalPodAutoscaler",
            True, ["hpa"], ["status"], categories=["all"]),
    ]


# Preferred order of groups in discovery (like a real server: core first, then built-ins).
BUILTIN_GROUP_ORDER = ["", "apps", "events.k8s.io", "autoscaling", "policy", "coordination.k8s.io",
                       "rbac.authorization.k8s.io", "apiextensions.k8s.io"]


class Registry:
    """Maps (group, version, plural) to a ResourceType; CRDs add and remove entries."""

    def __init__(self):
        self._lock = threading.Lock()
        self._types = {t.key: t for t in builtin_types()}

    def get(self, group, version, plural):
        with self._lock:
            t = self._types.get((group, plural))
        if t is None or version not in t.versions:
            return None
        return t

    def by_key(self, key):
        with self._lock:
            return self._types.get(key)

    def all(self):
        with self._lock:
            return list(self._types.values())

    def add(self, rtype):
        with self._lock:
            self._types[rtype.key] = rtype

    def remove(self, key):
        with self._lock:
            self._types.pop(key, None)

    def groups(self):
        """Ordered {group: [versions]} of every group but the core one."""
        out = {}
        types = self.all()
        order = {g: i for i, g in enumerate(BUILTIN_GROUP_ORDER)}
        for t in sorted(types, key=lambda t: (order.get(t.group, 100), t.group)):
            if not t.group:
                continue
            versions = out.setdefault(t.group, [])
            for v in t.versions:
                if v not in versions:
                    versions.append(v)
        return out

    def find_kind(self, group, version, kind):
        for t in self.all():
            if t.group == group and t.kind == kind and version in t.versions:
                return t
        return None


def type_from_crd(crd):
    """Builds a ResourceType from a CustomResourceDefinition object (apiextensions v1)."""
    spec = crd.get("spec", {})
    names = spec.get("names", {})
    served = [v for v in spec.get("versions", []) if v.get("served", True)]
    # The storage version is preferred unless another one sorts higher; keep declared order but
    # put the storage version first, which is what kubectl uses as the preferred version.
    served.sort(key=lambda v: 0 if v.get("storage") else 1)
    rt = ResourceType(
        group=spec.get("group", ""),
        versions=[v["name"] for v in served],
        plural=names.get("plural", ""),
        kind=names.get("kind", ""),
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        short_names=list(names.get("shortNames", [])),
        singular=names.get("singular", names.get("kind", "").lower()),
        categories=list(names.get("categories", [])),
        crd_name=crd.get("metadata", {}).get("name", ""),
    )
    for v in served:
        subs = v.get("subresources") or {}
        if "status" in subs:
            rt.subresources.add("status")
        if "scale" in subs:
            rt.subresources.add("scale")
            sc = subs["scale"] or {}
            rt.spec_replicas_path = sc.get("specReplicasPath", ".spec.replicas")
            rt.status_replicas_path = sc.get("statusReplicasPath", ".status.replicas")
            rt.label_selector_path = sc.get("labelSelectorPath", "")
        rt.printer_columns[v["name"]] = v.get("additionalPrinterColumns", [])
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        if schema:
            rt.schemas[v["name"]] = schema
    return rt
