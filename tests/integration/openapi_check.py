"""Validates REST requests and responses against the slurmrestd v0.0.44 OpenAPI document
(src/restd/openapi-v0.0.44.json, the copy shoalrestd embeds).

OpenAPI 3.0 schemas are turned into JSON Schema: `nullable: true` admits null, and Slurm's
"required" entries that name nested paths ("cpus/count") are dropped since JSON Schema would read
them as literal property names. With strict=True (the default) every object schema that lists
properties also gets additionalProperties: false, so a misspelt or invented field fails too.

    api = OpenApi()
    api.check_response("GET", "/slurm/v0.0.44/jobs/", 200, body)   # raises AssertionError
    api.check_request("POST", "/slurm/v0.0.44/job/submit", body)
    api.validate(body, "v0.0.44_openapi_resp")
"""

import copy
import json
import re
from pathlib import Path

import jsonschema

SPEC_PATH = Path(__file__).resolve().parents[2] / "src" / "restd" / "openapi-v0.0.44.json"


def _convert(node, strict):
    if isinstance(node, list):
        return [_convert(n, strict) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _convert(v, strict) for k, v in node.items()
           if k not in ("nullable", "example", "deprecated", "format", "discriminator")}
    if isinstance(out.get("required"), list):
        out["required"] = [r for r in out["required"] if "/" not in r]
        if not out["required"]:
            del out["required"]
    if node.get("nullable"):
        t = out.get("type")
        if isinstance(t, str):
            out["type"] = [t, "null"]
        elif "$ref" in out:
            out = {"anyOf": [{"$ref": out.pop("$ref")}, {"type": "null"}], **out}
        if "enum" in out:
            out["enum"] = list(out["enum"]) + [None]
    if strict and out.get("type") == "object" and "properties" in out \
            and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


class OpenApi:
    def __init__(self, path=SPEC_PATH, strict=True):
        self.doc = json.loads(Path(path).read_text())
        schemas = self.doc["components"]["schemas"]
        self.root = {"components": {"schemas": {n: _convert(s, strict)
                                                for n, s in schemas.items()}}}

    # --- lookups -------------------------------------------------------------------------------

    def _operation(self, method, path):
        """The operation of `path` (a template like /slurm/v0.0.44/job/{job_id}, or a concrete
        path, matched against the templates)."""
        paths = self.doc["paths"]
        candidates = [path, path.rstrip("/") + "/", path.rstrip("/")]
        for p in candidates:
            if p in paths and method.lower() in paths[p]:
                return paths[p][method.lower()]
        for template, ops in paths.items():
            rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template.rstrip("/"))) + "/?$"
            if re.match(rx, path) and method.lower() in ops:
                return ops[method.lower()]
        raise AssertionError(f"{method} {path} is not in the OpenAPI document")

    @staticmethod
    def _ref_name(schema):
        ref = schema.get("$ref", "")
        return ref.rsplit("/", 1)[-1] if ref else None

    def response_schema(self, method, path, status):
        responses = self._operation(method, path)["responses"]
        r = responses.get(str(status)) or responses.get("default")
        assert r is not None, f"{method} {path}: no response {status} in the document"
        return self._ref_name(r["content"]["application/json"]["schema"])

    def request_schema(self, method, path):
        body = self._operation(method, path).get("requestBody")
        assert body is not None, f"{method} {path} takes no request body"
        return self._ref_name(body["content"]["application/json"]["schema"])

    # --- validation ----------------------------------------------------------------------------

    def validate(self, instance, schema_name):
        schema = dict(self.root)
        schema["$ref"] = f"#/components/schemas/{schema_name}"
        validator = jsonschema.Draft7Validator(schema)
        errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
        if errors:
            lines = [f"  at /{'/'.join(str(p) for p in e.absolute_path)}: {e.message[:300]}"
                     for e in errors[:20]]
            raise AssertionError(f"does not validate against {schema_name} "
                                 f"({len(errors)} errors):\n" + "\n".join(lines))

    def check_response(self, method, path, status, body):
        self.validate(body, self.response_schema(method, path, status))
        # Every slurmrestd answer carries these.
        for key in ("meta", "errors", "warnings"):
            assert key in body, f"{method} {path}: answer has no '{key}'"

    def check_request(self, method, path, body):
        self.validate(body, self.request_schema(method, path))

    def copy_schema(self, name):
        return copy.deepcopy(self.root["components"]["schemas"][name])
