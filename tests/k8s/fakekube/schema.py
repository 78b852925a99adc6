"""Structural-schema handling for custom resources: defaulting, pruning and validation.

Covers what CRD authors commonly use: type, properties, additionalProperties, items, required,
enum, minimum/maximum (+exclusive), minLength/maxLength, minItems/maxItems, pattern, format
int32/int64, nullable, default, x-kubernetes-int-or-string, x-kubernetes-preserve-unknown-fields,
x-kubernetes-embedded-resource. Not covered: CEL rules (x-kubernetes-validations), allOf/anyOf/
oneOf/not (ignored), format checks other than integer sizes.
"""

import copy
import re

_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
}


def _type_ok(t, v):
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    py = _TYPES.get(t)
    return py is None or isinstance(v, py)


def apply_defaults(schema, value):
    """Fills `default`s of missing object properties, recursively (like the API server)."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for name, sub in props.items():
            if name not in value and isinstance(sub, dict) and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = apply_defaults(sub, value[name])
        addl = schema.get("additionalProperties")
        if isinstance(addl, dict):
            for k in list(value):
                if k not in props:
                    value[k] = apply_defaults(addl, value[k])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        value = [apply_defaults(schema["items"], v) for v in value]
    return value


def prune(schema, value, top=False):
    """Drops fields the schema does not specify unless x-kubernetes-preserve-unknown-fields."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            props = schema.get("properties") or {}
            for k, sub in props.items():
                if k in value:
                    value[k] = prune(sub, value[k])
            return value
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        embedded = schema.get("x-kubernetes-embedded-resource")
        keep_meta = top or embedded
        out = {}
        for k, v in value.items():
            if keep_meta and k in ("apiVersion", "kind", "metadata"):
                out[k] = v
            elif props is not None and k in props:
                out[k] = prune(props[k], v)
            elif isinstance(addl, dict):
                out[k] = prune(addl, v)
            elif addl is True:
                out[k] = v
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [prune(schema["items"], v) for v in value]
    return value


def validate(schema, value, path="", errors=None):
    """Returns a list of (field path, message) like the causes of a 422 Invalid Status."""
    if errors is None:
        errors = []
    if not isinstance(schema, dict):
        return errors
    if value is None:
        if not schema.get("nullable"):
            if schema.get("type"):
                errors.append((path, f'Invalid value: "null": {path} in body must be of type '
                                     f'{schema["type"]}: "null"'))
        return errors
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or (isinstance(value, int)
                                           and not isinstance(value, bool))):
            errors.append((path, f"Invalid value: {value!r}: {path} in body must be of type "
                                 "integer,string"))
        return errors
    t = schema.get("type")
    if t and not _type_ok(t, value):
        errors.append((path, f'Invalid value: "{_tname(value)}": {path} in body must be of type '
                             f"{t}: \"{_tname(value)}\""))
        return errors
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(f'"{e}"' for e in schema["enum"])
        errors.append((path, f"Unsupported value: {_q(value)}: supported values: {allowed}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema:
            lim = schema["minimum"]
            bad = value <= lim if schema.get("exclusiveMinimum") else value < lim
            if bad:
                errors.append((path, f"Invalid value: {value}: {path} in body should be "
                                     f"greater than or equal to {lim}"))
        if "maximum" in schema:
            lim = schema["maximum"]
            bad = value >= lim if schema.get("exclusiveMaximum") else value > lim
            if bad:
                errors.append((path, f"Invalid value: {value}: {path} in body should be "
                                     f"less than or equal to {lim}"))
        if schema.get("format") == "int32" and isinstance(value, int) and \
                not -2**31 <= value < 2**31:
            errors.append((path, f"Invalid value: {value}: {path} in body must be of type int32"))
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append((path, f"Invalid value: {_q(value)}: {path} in body should be at "
                                 f"least {schema['minLength']} chars long"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append((path, f"Too long: may not be longer than {schema['maxLength']}"))
        if "pattern" in schema:
            try:
                if re.search(schema["pattern"], value) is None:
                    errors.append((path, f"Invalid value: {_q(value)}: {path} in body should "
                                         f"match '{schema['pattern']}'"))
            except re.error:
                pass
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append((path, f"Invalid value: {len(value)}: {path} in body should have at "
                                 f"least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append((path, f"Too many: {len(value)}: must have at most "
                                 f"{schema['maxItems']} items"))
        items = schema.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(value):
                validate(items, v, f"{path}[{i}]", errors)
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        for req in schema.get("required") or []:
            if req not in value:
                errors.append((_join(path, req), "Required value"))
        for k, v in value.items():
            if k in props:
                validate(props[k], v, _join(path, k), errors)
            elif isinstance(schema.get("additionalProperties"), dict):
                validate(schema["additionalProperties"], v, _join(path, k), errors)
    return errors


def _join(path, k):
    return f"{path}.{k}" if path else k


def _q(v):
    return f'"{v}"' if isinstance(v, str) else str(v)


def _tname(v):
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


def process_custom_resource(schema, obj):
    """Defaults, prunes and validates a whole custom resource; returns (obj, errors)."""
    obj = copy.deepcopy(obj)
    obj = apply_defaults(schema, obj)
    obj = prune(schema, obj, top=True)
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    sub = copy.deepcopy(schema)
    props = dict(sub.get("properties") or {})
    for k in ("apiVersion", "kind", "metadata"):
        props.pop(k, None)
    sub["properties"] = props
    errors = validate(sub, body)
    return obj, errors
