"""HTTP front end of the fake API server: routing, discovery, JSON/Table encoding, watch streams.

Run: python3 -m tests.k8s.fakekube --port 0 --port-file F
 (or: python3 tests/k8s/fakekube/server.py --port 0 --port-file F)
"""

import argparse
import copy
import json
import os
import select
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

if __package__ in (None, ""):  # run as a script: make the package importable
    # (replacing this file's own directory, whose module names must not shadow the stdlib)
    sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    __package__ = "fakekube"  # noqa: A001

from . import errors  # noqa: E402
from .labelsel import SelectorError, parse_field_selector, parse_label_selector  # noqa: E402
from .store import Store  # noqa: E402
from .tables import table  # noqa: E402

SERVER_VERSION = {"major": "1", "minor": "20", "gitVersion": "v1.20.2-fakekube",
                  "gitCommit": "0000000000000000000000000000000000000000",
                  "gitTreeState": "clean", "buildDate": "2021-01-13T13:20:00Z",
                  "goVersion": "go1.15.5", "compiler": "gc", "platform": "linux/amd64"}


def _pb_bytes(field, payload):
    """Protobuf length-delimited field (wire type 2)."""
    out = bytearray([(field << 3) | 2])
    n = len(payload)
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            break
    return bytes(out) + payload


# kubectl fetches /openapi/v2 as protobuf (gnostic openapi_v2.Document) for client-side
# validation and apply; a document with no definitions makes it skip schema validation and fall
# back to its compiled-in types for strategic merge patches.
OPENAPI_V2_PB = _pb_bytes(1, b"2.0") + _pb_bytes(
    2, _pb_bytes(1, b"Kubernetes") + _pb_bytes(2, SERVER_VERSION["gitVersion"].encode()))
OPENAPI_V2_JSON = {"swagger": "2.0", "info": {"title": "Kubernetes",
                                              "version": SERVER_VERSION["gitVersion"]},
                   "paths": {}, "definitions": {}}


class FakeKube:
    """An in-memory Kubernetes API server on 127.0.0.1 (plain HTTP, any bearer token)."""

    def __init__(self, port=0, host="127.0.0.1", scheduler=True, history_size=5000,
                 bookmark_interval=5.0):
        self.store = Store(history_size=history_size, scheduler=scheduler)
        self.bookmark_interval = bookmark_interval
        self.tokens = []  # bearer tokens seen, in order (deduplicated)
        self.requests = []  # (method, path) of every request, for tests
        self._httpd = ThreadingHTTPServer((host, port), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = None
        self.host, self.port = self._httpd.server_address[:2]
        self.url = f"http://{self.host}:{self.port}"

    def start(self):
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fakekube",
                                        daemon=True)
        self._thread.start()
        return self

    def serve_forever(self):
        self._httpd.serve_forever()

    def stop(self):
        self.store.close_watchers()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def kubeconfig(self, token="fake-token", namespace="default"):
        """A kubeconfig (as YAML-compatible JSON text) pointing at this server."""
        return json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "fake",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "fake", "user": {"token": token}}],
            "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake",
                                                      "namespace": namespace}}],
        }, indent=1)

    # Convenience accessors for tests (no HTTP involved).
    def get(self, group, version, plural, namespace, name):
        rt = self.store.registry.get(group, version, plural)
        if rt is None:
            return None
        try:
            return copy.deepcopy(self.store.get(rt, namespace, name))
        except errors.ApiError:
            return None

    def finish_pod_deletions(self, node=None):
        self.store.finish_pod_deletions(node)


# ---------------------------------------------------------------------------------- discovery

def _resource_list(kube, group, version):
    res = []
    for rt in sorted(kube.store.registry.all(), key=lambda t: t.plural):
        if rt.group != group or version not in rt.versions:
            continue
        entry = {"name": rt.plural, "singularName": rt.singular, "namespaced": rt.namespaced,
                 "kind": rt.kind, "verbs": rt.verbs()}
        if rt.short_names:
            entry["shortNames"] = rt.short_names
        if rt.categories:
            entry["categories"] = rt.categories
        res.append(entry)
        ns = rt.namespaced
        if "status" in rt.subresources:
            res.append({"name": f"{rt.plural}/status", "singularName": "", "namespaced": ns,
                        "kind": rt.kind, "verbs": ["get", "patch", "update"]})
        if "scale" in rt.subresources:
            res.append({"name": f"{rt.plural}/scale", "singularName": "", "namespaced": ns,
                        "group": "autoscaling", "version": "v1", "kind": "Scale",
                        "verbs": ["get", "patch", "update"]})
        if "eviction" in rt.subresources:
            res.append({"name": f"{rt.plural}/eviction", "singularName": "", "namespaced": ns,
                        "group": "policy", "version": "v1", "kind": "Eviction",
                        "verbs": ["create"]})
        if "binding" in rt.subresources:
            res.append({"name": f"{rt.plural}/binding", "singularName": "", "namespaced": ns,
                        "kind": "Binding", "verbs": ["create"]})
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": res}


def _api_group(group, versions):
    vs = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": vs, "preferredVersion": vs[0]}


# ---------------------------------------------------------------------------------- handler

def _make_handler(kube):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in separate writes: without TCP_NODELAY a keep-alive client
        # waits ~40 ms (delayed ACK) on every request after its first.
        disable_nagle_algorithm = True
        server_version = "fakekube"

        def log_message(self, fmt, *args):  # quiet; tests read kube.requests instead
            pass

        # ---- plumbing
        def _read_body(self):
            return self._body

        def _read_body_raw(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                data = b""
                while True:
                    size = int(self.rfile.readline().strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        break
                    data += self.rfile.read(size)
                    self.rfile.readline()
                return data
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _send(self, code, body, content_type="application/json"):
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            self.wfile.write(data)

        def _error(self, e):
            self._send(e.code, e.status())

        def _json_body(self):
            raw = self._read_body()
            ct = self.headers.get("Content-Type", "")
            if "protobuf" in ct or "cbor" in ct:
                # client-go falls back to JSON on 415 for these encodings
                raise errors.unsupported_media("the body of the request was in an unknown "
                                               "format - accepted media types include: "
                                               "application/json, application/yaml")
            if not raw:
                raise errors.bad_request("the request body is empty")
            try:
                return json.loads(raw)
            except ValueError:
                ct = self.headers.get("Content-Type", "")
                if "yaml" in ct:
                    try:
                        import yaml  # python3-yaml; optional
                        return yaml.safe_load(raw)
                    except Exception as e:  # noqa: BLE001
                        raise errors.bad_request(f"invalid YAML: {e}") from e
                raise errors.bad_request("the body of the request could not be decoded as JSON")

        def _record(self):
            auth = self.headers.get("Authorization", "")
            if auth.lower().startswith("bearer "):
                tok = auth[7:].strip()
                if not kube.tokens or kube.tokens[-1] != tok:
                    kube.tokens.append(tok)
            kube.requests.append((self.command, self.path))

        def _dispatch(self):
            self._record()
            # Read the body up front: an error answered early must not leave it in the stream
            # of a keep-alive connection.
            self._body = self._read_body_raw()
            url = urllib.parse.urlsplit(self.path)
            q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query,
                                                            keep_blank_values=True).items()}
            try:
                self._route(url.path.rstrip("/") or "/", q)
            except errors.ApiError as e:
                self._error(e)
            except (BrokenPipeError, ConnectionResetError):
                pass

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _dispatch

        # ---- routing
        def _route(self, path, q):
            m = self.command
            if path in ("/healthz", "/livez", "/readyz") or path.startswith(
                    ("/healthz/", "/livez/", "/readyz/")):
                return self._send(200, b"ok", "text/plain; charset=utf-8")
            if path == "/version":
                return self._send(200, SERVER_VERSION)
            if path == "/openapi/v2":
                if "protobuf" in self.headers.get("Accept", ""):
                    return self._send(200, OPENAPI_V2_PB,
                                      "application/octet-stream")
                return self._send(200, OPENAPI_V2_JSON)
            if path == "/api":
                return self._send(200, {"kind": "APIVersions", "versions": ["v1"],
                                        "serverAddressByClientCIDRs": [
                                            {"clientCIDR": "0.0.0.0/0",
                                             "serverAddress": f"{kube.host}:{kube.port}"}]})
            if path == "/apis":
                groups = kube.store.registry.groups()
                return self._send(200, {"kind": "APIGroupList", "apiVersion": "v1",
                                        "groups": [_api_group(g, vs)
                                                   for g, vs in groups.items()]})
            parts = path.strip("/").split("/")
            if parts[0] == "api" and len(parts) >= 2:
                group, version, rest = "", parts[1], parts[2:]
            elif parts[0] == "apis" and len(parts) >= 2:
                groups = kube.store.registry.groups()
                if parts[1] not in groups:
                    raise errors.ApiError(404, "NotFound", "the server could not find the "
                                          "requested resource", {})
                if len(parts) == 2:
                    return self._send(200, dict(_api_group(parts[1], groups[parts[1]]),
                                                kind="APIGroup", apiVersion="v1"))
                group, version, rest = parts[1], parts[2], parts[3:]
            else:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested "
                                      "resource", {})
            if not rest:
                if m != "GET":
                    raise errors.method_not_allowed()
                lst = _resource_list(kube, group, version)
                if not lst["resources"] and not (group == "" and version == "v1"):
                    raise errors.ApiError(404, "NotFound", "the server could not find the "
                                          "requested resource", {})
                return self._send(200, lst)
            watch = False
            if rest[0] == "watch":
                watch, rest = True, rest[1:]
            ns = None
            if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status",
                                                                              "finalize"):
                ns, rest = rest[1], rest[2:]
            if not rest:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested "
                                      "resource", {})
            rt = kube.store.registry.get(group, version, rest[0])
            if rt is None:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested "
                                      "resource", {})
            name = rest[1] if len(rest) > 1 else None
            sub = rest[2] if len(rest) > 2 else None
            if len(rest) > 3 or (sub and sub not in rt.subresources):
                raise errors.ApiError(404, "NotFound", "the server could not find the requested "
                                      "resource", {})
            if rt.namespaced and ns is None and name is not None:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested "
                                      "resource", {})
            if not rt.namespaced and ns is not None:
                raise errors.ApiError(404, "NotFound", "the server could not find the requested "
                                      "resource", {})
            watch = watch or q.get("watch") in ("1", "true", "True")
            self._resource(rt, version, ns, name, sub, watch, q)

        def _resource(self, rt, version, ns, name, sub, watch, q):
            m = self.command
            store = kube.store
            dry = q.get("dryRun") == "All"
            if watch:
                if m != "GET":
                    raise errors.method_not_allowed()
                field = q.get("fieldSelector", "")
                if name:
                    field = ",".join(x for x in (field, f"metadata.name={name}") if x)
                return self._watch(rt, version, ns, q, field)
            if name is None:
                if m == "GET":
                    return self._list(rt, version, ns, q)
                if m == "POST":
                    if rt.namespaced and ns is None:
                        raise errors.method_not_allowed()
                    body = self._json_body()
                    self._check_type(rt, version, body)
                    obj = store.create(rt, ns or "", body, dry_run=dry)
                    return self._send(201, self._out(rt, version, obj))
                if m == "DELETE":
                    return self._delete_collection(rt, version, ns, q)
                raise errors.method_not_allowed()
            if sub == "scale":
                if m == "GET":
                    return self._send(200, store.get_scale(rt, ns, name))
                if m == "PUT":
                    return self._send(200, store.update_scale(rt, ns, name, self._json_body()))
                if m == "PATCH":
                    return self._send(200, store.update_scale(
                        rt, ns, name, content_type=self.headers.get("Content-Type", ""),
                        patch_body=self._json_body()))
                raise errors.method_not_allowed()
            if sub == "eviction":
                if m != "POST":
                    raise errors.method_not_allowed()
                body = self._json_body()
                store.evict(ns, name, body)
                return self._send(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                        "status": "Success", "code": 201})
            if sub == "binding":
                if m != "POST":
                    raise errors.method_not_allowed()
                store.bind(ns, name, self._json_body())
                return self._send(201, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                        "status": "Success", "code": 201})
            if m == "GET":
                obj = store.get(rt, ns, name)
                if self._wants_table():
                    return self._send(200, table(rt, version, [obj], obj["metadata"][
                        "resourceVersion"], q.get("includeObject", "Metadata")))
                return self._send(200, self._out(rt, version, obj))
            if m == "PUT":
                body = self._json_body()
                self._check_type(rt, version, body)
                obj = store.update(rt, ns, name, body, subresource=sub, dry_run=dry)
                return self._send(200, self._out(rt, version, obj))
            if m == "PATCH":
                ct = self.headers.get("Content-Type", "")
                if "apply-patch" in ct:
                    raise errors.unsupported_media("server-side apply is not supported by the "
                                                   "fake API server")
                obj = store.patch(rt, ns, name, ct, self._json_body(), subresource=sub,
                                  dry_run=dry)
                return self._send(200, self._out(rt, version, obj))
            if m == "DELETE":
                if sub:
                    raise errors.method_not_allowed()
                opts = self._delete_options(q)
                obj, gone = store.delete(rt, ns, name, opts, dry_run=dry)
                if gone and rt.key != ("", "pods"):
                    # Like the real registries (only pods return the deleted object).
                    md = obj["metadata"]
                    return self._send(200, {"kind": "Status", "apiVersion": "v1",
                                            "metadata": {}, "status": "Success",
                                            "details": {"name": md["name"], "group": rt.group,
                                                        "kind": rt.plural, "uid": md["uid"]}})
                return self._send(200, self._out(rt, version, obj))
            raise errors.method_not_allowed()

        def _delete_options(self, q):
            raw = self._read_body()
            opts = {}
            if raw:
                try:
                    opts = json.loads(raw) or {}
                except ValueError as e:
                    raise errors.bad_request("invalid DeleteOptions") from e
            if "gracePeriodSeconds" in q:
                opts["gracePeriodSeconds"] = int(q["gracePeriodSeconds"])
            if "propagationPolicy" in q:
                opts["propagationPolicy"] = q["propagationPolicy"]
            if "orphanDependents" in q:
                opts["orphanDependents"] = q["orphanDependents"] == "true"
            return opts

        def _delete_collection(self, rt, version, ns, q):
            labels, fields = self._selectors(q)
            opts = self._delete_options(q)
            items, _, _, _ = kube.store.list(rt, ns, labels, fields)
            out = []
            for obj in items:
                md = obj["metadata"]
                try:
                    o, _ = kube.store.delete(rt, md.get("namespace", ""), md["name"], opts)
                    out.append(self._out(rt, version, o))
                except errors.ApiError:
                    pass
            return self._send(200, {"kind": rt.list_kind, "apiVersion": rt.api_version(version),
                                    "metadata": {"resourceVersion": str(kube.store.rv)},
                                    "items": out})

        def _check_type(self, rt, version, body):
            if not isinstance(body, dict):
                raise errors.bad_request("the body of the request is not an object")
            kind, av = body.get("kind"), body.get("apiVersion")
            if kind and kind != rt.kind:
                raise errors.bad_request(f"the API version in the data ({av}) does not match "
                                         f"the expected API version ({rt.api_version(version)})"
                                         if av and av != rt.api_version(version) else
                                         f"kind {kind} does not match the resource "
                                         f"{rt.plural}")
            body["apiVersion"] = rt.api_version(version)

        def _out(self, rt, version, obj):
            obj = dict(obj)
            if obj.get("kind") == rt.kind:
                obj["apiVersion"] = rt.api_version(version)
            return obj

        def _wants_table(self):
            return "as=Table" in self.headers.get("Accept", "")

        def _selectors(self, q):
            try:
                return (parse_label_selector(q.get("labelSelector", "")),
                        parse_field_selector(q.get("fieldSelector", "")))
            except SelectorError as e:
                raise errors.bad_request(str(e)) from e

        def _list(self, rt, version, ns, q):
            labels, fields = self._selectors(q)
            limit = int(q.get("limit") or 0)
            items, rv, cont, remaining = kube.store.list(rt, ns, labels, fields, limit,
                                                         q.get("continue"))
            if self._wants_table():
                return self._send(200, table(rt, version, items, rv,
                                             q.get("includeObject", "Metadata"), cont))
            meta = {"resourceVersion": str(rv)}
            if cont:
                meta["continue"] = cont
                meta["remainingItemCount"] = remaining
            return self._send(200, {"kind": rt.list_kind, "apiVersion": rt.api_version(version),
                                    "metadata": meta,
                                    "items": [self._out(rt, version, o) for o in items]})

        # ---- watch
        def _chunk(self, data):
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

        def _peer_closed(self):
            """True once the client has closed its end (an idle watch would never notice)."""
            try:
                readable, _, _ = select.select([self.connection], [], [], 0)
                if not readable:
                    return False
                return self.connection.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                return True

        def _watch(self, rt, version, ns, q, field):
            try:
                labels = parse_label_selector(q.get("labelSelector", ""))
                fields = parse_field_selector(field)
            except SelectorError as e:
                raise errors.bad_request(str(e)) from e
            rv_param = q.get("resourceVersion", "")
            since = None
            if rv_param not in ("", "0"):
                try:
                    since = int(rv_param)
                except ValueError as e:
                    raise errors.bad_request(f"invalid resource version: {rv_param}") from e
            timeout = float(q.get("timeoutSeconds") or 1800)
            bookmarks = q.get("allowWatchBookmarks") in ("1", "true", "True")
            as_table = self._wants_table()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Cache-Control", "no-cache, private")
            self.end_headers()
            try:
                w = kube.store.watch(rt, ns, labels, fields, since)
            except errors.ApiError as e:
                # Like the real server: a 200 stream carrying one ERROR event, then the end.
                self._chunk(json.dumps({"type": "ERROR", "object": e.status()}).encode() + b"\n")
                self.wfile.write(b"0\r\n\r\n")
                return
            deadline = time.monotonic() + timeout
            last_bookmark = time.monotonic()
            try:
                while True:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    wait = min(left, 0.5)
                    try:
                        ev = w.queue.get(timeout=wait)
                    except Exception:  # queue.Empty
                        ev = False
                    if ev is None:
                        break
                    if ev is False:
                        if self._peer_closed():
                            break
                        if bookmarks and time.monotonic() - last_bookmark >= \
                                kube.bookmark_interval:
                            last_bookmark = time.monotonic()
                            bm = {"kind": rt.kind, "apiVersion": rt.api_version(version),
                                  "metadata": {"resourceVersion": str(kube.store.rv)}}
                            self._chunk(json.dumps({"type": "BOOKMARK", "object": bm}).encode()
                                        + b"\n")
                        continue
                    etype, obj = ev
                    out = self._out(rt, version, obj)
                    if as_table:
                        out = table(rt, version, [out], obj["metadata"]["resourceVersion"],
                                    q.get("includeObject", "Metadata"))
                    self._chunk(json.dumps({"type": etype, "object": out}).encode() + b"\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError, OSError):
                self.close_connection = True
            finally:
                kube.store.unwatch(w)

    return Handler


def main(argv=None):
    ap = argparse.ArgumentParser(description="fake Kubernetes API server for tests")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port-file", help="write the chosen port here once listening")
    ap.add_argument("--no-scheduler", action="store_true", help="do not bind pods to nodes")
    ap.add_argument("--bookmark-interval", type=float, default=5.0)
    args = ap.parse_args(argv)
    kube = FakeKube(port=args.port, host=args.host, scheduler=not args.no_scheduler,
                    bookmark_interval=args.bookmark_interval)
    print(kube.port, flush=True)
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{kube.port}\n")
        os.replace(tmp, args.port_file)
    try:
        kube.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
