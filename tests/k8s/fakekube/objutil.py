"""Constants and small helpers on Kubernetes objects (JSON dicts)."""

import copy
import datetime
import math
import re

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Kinds whose status a create request cannot set (their strategies reset it).
STATUS_RESET_ON_CREATE = {("", "pods"), ("", "services"), ("", "persistentvolumeclaims"),
                          ("apps", "deployments"), ("apps", "statefulsets"),
                          ("apps", "daemonsets"), ("apps", "replicasets"),
                          ("policy", "poddisruptionbudgets")}
PDB_KEY = ("policy", "poddisruptionbudgets")
POD_KEY = ("", "pods")
NODE_KEY = ("", "nodes")
NS_KEY = ("", "namespaces")
CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")


def now_rfc3339(offset=0.0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def get_path(obj, path):
    """Reads a simple JSON path like `.spec.replicas`."""
    cur = obj
    for part in [p for p in path.split(".") if p]:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def set_path(obj, path, value):
    parts = [p for p in path.split(".") if p]
    cur = obj
    for part in parts[:-1]:
        if not isinstance(cur.get(part), dict):
            cur[part] = {}
        cur = cur[part]
    cur[parts[-1]] = value


def spec_part(obj):
    return {k: v for k, v in obj.items()
            if k not in ("metadata", "status", "apiVersion", "kind")}


def comparable(obj):
    o = copy.deepcopy(obj)
    md = o.get("metadata", {})
    md.pop("resourceVersion", None)
    md.pop("managedFields", None)
    o.pop("apiVersion", None)
    return o


def pod_ready(pod):
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def node_ready(node):
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def int_or_percent(value, total, round_up):
    if isinstance(value, str) and value.endswith("%"):
        pct = int(value[:-1])
        v = pct * total / 100.0
        return int(math.ceil(v)) if round_up else int(math.floor(v))
    return int(value)
