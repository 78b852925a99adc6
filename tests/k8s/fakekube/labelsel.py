"""Label and field selectors, parsed the way the Kubernetes API server parses query strings."""

import re


class SelectorError(ValueError):
    pass


_SET_RE = re.compile(r"^\s*(!?)\s*([A-Za-z0-9._/-]+)\s*(?:(in|notin)\s*\(([^)]*)\))?\s*$")


def _split_terms(text):
    """Splits on commas that are not inside parentheses."""
    terms, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        terms.append(cur)
    return [t.strip() for t in terms if t.strip()]


def parse_label_selector(text):
    """Returns a list of (key, op, values); op in =, !=, in, notin, exists, !exists."""
    reqs = []
    if not text:
        return reqs
    for term in _split_terms(text):
        m = re.match(r"^([A-Za-z0-9._/-]+)\s*(==|=|!=)\s*([A-Za-z0-9._-]*)$", term)
        if m:
            op = "!=" if m.group(2) == "!=" else "="
            reqs.append((m.group(1), op, [m.group(3)]))
            continue
        m = re.match(r"^([A-Za-z0-9._/-]+)\s+(in|notin)\s*\(([^)]*)\)$", term)
        if m:
            values = [v.strip() for v in m.group(3).split(",") if v.strip()]
            reqs.append((m.group(1), m.group(2), values))
            continue
        m = re.match(r"^(!?)\s*([A-Za-z0-9._/-]+)$", term)
        if m:
            reqs.append((m.group(2), "!exists" if m.group(1) else "exists", []))
            continue
        raise SelectorError(f"unable to parse requirement: {term!r}")
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, values in reqs:
        present = key in labels
        val = labels.get(key)
        if op == "=" and not (present and val == values[0]):
            return False
        if op == "!=" and present and val == values[0]:
            return False
        if op == "in" and not (present and val in values):
            return False
        if op == "notin" and present and val in values:
            return False
        if op == "exists" and not present:
            return False
        if op == "!exists" and present:
            return False
    return True


def label_selector_object_matches(sel, labels):
    """Matches a metav1.LabelSelector object ({matchLabels, matchExpressions}).

    An empty selector matches everything, as for PodDisruptionBudgets in policy/v1."""
    if sel is None:
        return False
    labels = labels or {}
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in sel.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def selector_object_to_string(sel):
    """Formats a metav1.LabelSelector object as a selector string (for Scale.status.selector)."""
    if not sel:
        return ""
    parts = [f"{k}={v}" for k, v in sorted((sel.get("matchLabels") or {}).items())]
    for expr in sel.get("matchExpressions") or []:
        op, key = expr.get("operator"), expr.get("key")
        vals = ",".join(sorted(expr.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({vals})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({vals})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
    return ",".join(parts)


def parse_field_selector(text):
    """Returns a list of (path, op, value) with op in =, !=."""
    reqs = []
    if not text:
        return reqs
    for term in text.split(","):
        term = term.strip()
        if not term:
            continue
        m = re.match(r"^([A-Za-z0-9._-]+)\s*(==|=|!=)\s*(.*)$", term)
        if not m:
            raise SelectorError(f"invalid selector: {term!r}; can't understand {term!r}")
        reqs.append((m.group(1), "!=" if m.group(2) == "!=" else "=", m.group(3)))
    return reqs


def field_value(obj, path):
    cur = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def fields_match(reqs, obj):
    for path, op, value in reqs:
        actual = field_value(obj, path)
        if op == "=" and actual != value:
            return False
        if op == "!=" and actual == value:
            return False
    return True
