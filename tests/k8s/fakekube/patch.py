"""Patch formats: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and an approximation of
Kubernetes' strategic merge patch.

Strategic merge patch approximation: a merge patch, except that the lists below are merged
element by element using their merge key (like the real patchMergeKey tags of the built-in
types), `$patch: delete|replace` directives inside such elements and maps are honoured,
`$setElementOrder/<list>` and `$retainKeys` directives are accepted and ignored,
`$deleteFromPrimitiveList/<list>` removes values, and `finalizers` is merged as a set. Any list
not named here is replaced as a whole, which is what the real types do for atomic lists.
"""

import copy


class PatchError(ValueError):
    pass


def merge_patch(target, patch):
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    out = dict(target)
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


# list field name -> merge key (None: a list of primitives merged as a set)
STRATEGIC_LIST_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "env": "name",
    "imagePullSecrets": "name",
    "conditions": "type",
    "addresses": "type",
    "taints": "key",
    "ownerReferences": "uid",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "finalizers": None,
}


def _port_key(items):
    for it in items:
        if isinstance(it, dict):
            if "containerPort" in it:
                return "containerPort"
            if "port" in it:
                return "port"
    return None


def _strategic_list(name, target, patch):
    if name == "ports":
        key = _port_key(patch) or _port_key(target)
    elif name in STRATEGIC_LIST_KEYS:
        key = STRATEGIC_LIST_KEYS[name]
    else:
        return copy.deepcopy([p for p in patch if not (isinstance(p, dict) and "$patch" in p)])
    target = list(target) if isinstance(target, list) else []
    if key is None:
        out = list(target)
        for v in patch:
            if v not in out:
                out.append(v)
        return out
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [copy.deepcopy(p) for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    out = [copy.deepcopy(t) for t in target]
    for p in patch:
        if not isinstance(p, dict):
            out.append(copy.deepcopy(p))
            continue
        idx = next((i for i, t in enumerate(out)
                    if isinstance(t, dict) and t.get(key) == p.get(key)), None)
        if p.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(strategic_merge_patch({}, p))
        else:
            out[idx] = strategic_merge_patch(out[idx], p)
    return out


def strategic_merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if not isinstance(target, dict):
        target = {}
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    out = dict(target)
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys") or k.startswith("$setElementOrder/"):
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            name = k.split("/", 1)[1]
            if isinstance(out.get(name), list):
                out[name] = [x for x in out[name] if x not in (v or [])]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, list):
            out[k] = _strategic_list(k, out.get(k), v)
        elif isinstance(v, dict):
            merged = strategic_merge_patch(out.get(k), v)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        else:
            out[k] = copy.deepcopy(v)
    return out


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    cur = doc
    for p in parts:
        if isinstance(cur, list):
            try:
                cur = cur[int(p)]
            except (ValueError, IndexError) as e:
                raise PatchError(f"path not found: {p}") from e
        elif isinstance(cur, dict):
            if p not in cur:
                raise PatchError(f"path not found: {p}")
            cur = cur[p]
        else:
            raise PatchError(f"path not found: {p}")
    return cur


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        if last == "-":
            parent.append(value)
        else:
            try:
                i = int(last)
            except ValueError as e:
                raise PatchError(f"invalid index {last!r}") from e
            if i < 0 or i > len(parent):
                raise PatchError(f"index out of range: {i}")
            parent.insert(i, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError("add to a non-container")
    return doc


def _remove(doc, parts):
    if not parts:
        raise PatchError("cannot remove the root")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        try:
            return parent.pop(int(last))
        except (ValueError, IndexError) as e:
            raise PatchError(f"unable to remove nonexistent key: {last}") from e
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    raise PatchError(f"unable to remove nonexistent key: {last}: missing value")


def json_patch(doc, ops):
    """RFC 6902."""
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("invalid operation")
        kind = op["op"]
        parts = _pointer(op.get("path", ""))
        if kind == "add":
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, parts)
        elif kind == "replace":
            if parts:
                _remove(doc, parts)
            doc = _add(doc, parts, copy.deepcopy(op.get("value")))
        elif kind == "move":
            value = _remove(doc, _pointer(op.get("from", "")))
            doc = _add(doc, parts, value)
        elif kind == "copy":
            value = copy.deepcopy(_walk(doc, _pointer(op.get("from", ""))))
            doc = _add(doc, parts, value)
        elif kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise PatchError(f"testing value {op.get('path')} failed")
        else:
            raise PatchError(f"unexpected kind of operation {kind!r}")
    return doc
