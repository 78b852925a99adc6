"""A small curl-driven client for shoalrestd in a test cluster (`shoal start` runs it on a
loopback port and on D/run/restd.sock), validating every request and answer against the
v0.0.44 OpenAPI document."""

import json
from pathlib import Path

from openapi_check import OpenApi

API = OpenApi()


class Rest:
    def __init__(self, cluster, socket=None, address=None):
        self.c = cluster
        self.socket = Path(socket or cluster.dir / "run" / "restd.sock")
        addr_file = cluster.dir / "run" / "shoalrestd.addr"
        self.address = address
        if self.address is None and addr_file.exists():
            tcp = [a for a in addr_file.read_text().split() if not a.startswith("unix:")]
            self.address = tcp[0] if tcp else None

    def call(self, method, path, body=None, user=None, raw=None, tcp=False, headers=(),
             template=None, validate=True):
        """Sends one request with curl; returns (HTTP status, parsed JSON answer or None).
        `body` is JSON-encoded (and validated against the request schema); `raw` is sent as
        is. The answer is validated against the document's schema for `template` (default:
        `path`) whatever its status."""
        cmd = ["curl", "-sS", "-X", method, "-w", "\n%{http_code}", "--max-time", "30"]
        for h in headers:
            cmd += ["-H", h]
        data = None
        if body is not None:
            if validate:
                API.check_request(method, template or path, body)
            data = json.dumps(body)
        elif raw is not None:
            data = raw
        if data is not None:
            cmd += ["-H", "Content-Type: application/json", "--data-binary", "@-"]
        if tcp:
            url = f"http://{self.address}{path}"
        else:
            cmd += ["--unix-socket", str(self.socket)]
            url = f"http://localhost{path}"
        r = self.c.run(cmd + [url], user=user, input=data, check=False, timeout=60)
        assert r.returncode == 0, f"curl failed: {r.stderr}"
        text, _, code = r.stdout.rpartition("\n")
        status = int(code)
        answer = json.loads(text) if text.strip() else None
        if validate and answer is not None and path.startswith(("/slurm/", "/slurmdb/")):
            API.check_response(method, template or path.split("?")[0], status, answer)
        if status != 200 and answer is not None and path.startswith(("/slurm/", "/slurmdb/")):
            # An error is never reported as 200 and always says what went wrong.
            assert answer["errors"], f"{method} {path} -> {status} without errors: {answer}"
        return status, answer

    def get(self, path, **kw):
        return self.call("GET", path, **kw)

    def post(self, path, body=None, **kw):
        return self.call("POST", path, body=body, **kw)

    def delete(self, path, body=None, **kw):
        return self.call("DELETE", path, body=body, **kw)
