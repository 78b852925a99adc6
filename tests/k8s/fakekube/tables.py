"""`meta.k8s.io/v1` Table responses, which kubectl asks for when it prints objects."""

import datetime
import re


def human_age(ts):
    if not ts:
        return "<unknown>"
    try:
        t = datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc)
    except ValueError:
        return "<invalid>"
    s = int((datetime.datetime.now(datetime.timezone.utc) - t).total_seconds())
    if s < 0:
        s = 0
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 10:
        return f"{m}m{s % 60}s" if s % 60 else f"{m}m"
    if m < 180:
        return f"{m}m"
    h = m // 60
    if h < 8:
        return f"{h}h{m % 60}m" if m % 60 else f"{h}h"
    if h < 48:
        return f"{h}h"
    return f"{h // 24}d"


def jsonpath(obj, path):
    """Evaluates the small JSONPath subset CRD printer columns use: `.a.b`, `[n]`,
    `[?(@.k=="v")]`."""
    cur = [obj]
    tokens = re.findall(r'\.([A-Za-z0-9_\-]+)|\[(\d+)\]'
                        r'|\[\?\(@\.([A-Za-z0-9_]+)==["\']([^"\']*)["\']\)\]', path)
    for field, index, fkey, fval in tokens:
        nxt = []
        for c in cur:
            if field:
                if isinstance(c, dict) and field in c:
                    nxt.append(c[field])
            elif index:
                if isinstance(c, list) and int(index) < len(c):
                    nxt.append(c[int(index)])
            elif isinstance(c, list):
                nxt.extend(x for x in c if isinstance(x, dict) and str(x.get(fkey)) == fval)
        cur = nxt
    if not cur:
        return None
    return cur[0]


def _col(name, typ="string", fmt="", priority=0, desc=""):
    return {"name": name, "type": typ, "format": fmt, "description": desc or name,
            "priority": priority}


def _pod_row(pod):
    st = pod.get("status") or {}
    containers = (pod.get("spec") or {}).get("containers") or []
    statuses = st.get("containerStatuses") or []
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(c.get("restartCount", 0) for c in statuses)
    phase = st.get("reason") or st.get("phase", "Pending")
    if pod["metadata"].get("deletionTimestamp"):
        phase = "Terminating"
    return [f"{ready}/{len(containers)}", phase, restarts,
            human_age(pod["metadata"].get("creationTimestamp")), st.get("podIP") or "<none>",
            (pod.get("spec") or {}).get("nodeName") or "<none>"]


def _node_row(node):
    ready = "Unknown"
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            ready = "Ready" if c.get("status") == "True" else "NotReady"
    if (node.get("spec") or {}).get("unschedulable"):
        ready += ",SchedulingDisabled"
    labels = node["metadata"].get("labels") or {}
    roles = sorted(k.split("/", 1)[1] for k in labels
                   if k.startswith("node-role.kubernetes.io/")) or ["<none>"]
    version = ((node.get("status") or {}).get("nodeInfo") or {}).get("kubeletVersion", "")
    return [ready, ",".join(roles), human_age(node["metadata"].get("creationTimestamp")), version]


def columns_and_cells(rt, version):
    """Returns (column definitions, function obj -> cells after the name)."""
    age = lambda o: human_age(o["metadata"].get("creationTimestamp"))  # noqa: E731
    if rt.key == ("", "pods"):
        return ([_col("Ready"), _col("Status"), _col("Restarts", "integer"), _col("Age"),
                 _col("IP", priority=1), _col("Node", priority=1)], _pod_row)
    if rt.key == ("", "nodes"):
        return ([_col("Status"), _col("Roles"), _col("Age"), _col("Version")], _node_row)
    if rt.key == ("", "namespaces"):
        return ([_col("Status"), _col("Age")],
                lambda o: [(o.get("status") or {}).get("phase", ""), age(o)])
    if rt.crd_name:
        cols = rt.printer_columns.get(version) or []
        if not cols:
            return [_col("Age", "date")], lambda o: [age(o)]
        defs = [_col(c["name"], c.get("type", "string"), c.get("format", ""),
                     c.get("priority", 0), c.get("description", "")) for c in cols]

        def cells(o):
            out = []
            for c in cols:
                v = jsonpath(o, c.get("jsonPath", ""))
                if c.get("type") == "date" and isinstance(v, str):
                    v = human_age(v)
                out.append(v)
            return out
        return defs, cells
    return [_col("Age")], lambda o: [age(o)]


def table(rt, version, objs, rv, include_object="Metadata", cont=None):
    cols, cells = columns_and_cells(rt, version)
    rows = []
    for o in objs:
        if include_object == "Object":
            embedded = o
        elif include_object == "None":
            embedded = None
        else:
            embedded = {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": o["metadata"]}
        row = {"cells": [o["metadata"]["name"]] + cells(o)}
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    meta = {"resourceVersion": str(rv)}
    if cont:
        meta["continue"] = cont
    return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": meta,
            "columnDefinitions": [_col("Name", desc="Name must be unique within a namespace.")]
            + cols, "rows": rows}
