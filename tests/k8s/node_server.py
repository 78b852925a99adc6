"""The part of the kubelet's HTTPS API (port 10250) the node agent serves in OCI mode, so that
`kubectl logs` works through the real API server: GET /containerLogs/{ns}/{pod}/{container}
(follow, previous, tailLines, timestamps, limitBytes) and /healthz. TLS with a serving
certificate from the cluster CA; clients must present a certificate from the same CA (the API
server's kubelet-client certificate). Not served: exec, attach, port-forward, stats, metrics
(kubectl exec has tests/kube/nodes.py exec_in_pod instead).
"""

import http.server
import ssl
import threading
import time
import urllib.parse

import oci_pod as oci


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "shoal-node-agent"

    def log_message(self, fmt, *args):  # quiet
        pass

    def _send(self, code, body, ctype="text/plain"):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        u = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(u.query)
        parts = [p for p in u.path.split("/") if p]
        if parts == ["healthz"]:
            return self._send(200, "ok")
        if len(parts) == 4 and parts[0] == "containerLogs":
            return self.container_logs(*parts[1:], q)
        return self._send(404, "404 page not found\n")

    def container_logs(self, ns, pod, container, q):
        sim = self.server.sim
        flag = lambda k: (q.get(k) or ["false"])[0] in ("true", "1")  # noqa: E731
        worker = None
        with sim.workers_lock:
            for w in sim.workers.values():
                if w.ns_name == ns and w.name == pod:
                    worker = w
        if worker is None:
            return self._send(404, f'pod "{pod}" not found on this node\n')
        c = next((c for c in worker.inits + worker.containers if c.name == container), None)
        if c is None or getattr(c, "attempt", -1) < 0:
            return self._send(400, f'container "{container}" in pod "{pod}" is waiting to start\n')
        attempt = c.attempt - 1 if flag("previous") else c.attempt
        if attempt < 0:
            return self._send(400, f'previous terminated container "{container}" in pod '
                              f'"{pod}" not found\n')
        path = (sim.root / "logs" / "pods" / f"{ns}_{pod}_{worker.uid}" / container /
                f"{attempt}.log")
        tail = int(q["tailLines"][0]) if q.get("tailLines") else None
        limit = int(q["limitBytes"][0]) if q.get("limitBytes") else None
        ts = flag("timestamps")
        try:
            data = path.read_bytes()
        except OSError:
            data = b""
        body = oci.cri_log_text(data, timestamps=ts, tail_lines=tail)
        if limit is not None:
            body = body[:limit]
        if not flag("follow"):
            return self._send(200, body)
        # follow: chunked, until the container stops or the client goes (bounded: 1 h).
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(b):
            if b:
                self.wfile.write(f"{len(b):x}\r\n".encode() + b + b"\r\n")
                self.wfile.flush()

        try:
            chunk(body)
            pos = len(data)
            # Only complete lines are shown; a partial last line waits for its end.
            pending = b""
            deadline = time.monotonic() + 3600
            while time.monotonic() < deadline and not sim.stopping.is_set():
                try:
                    with open(path, "rb") as f:
                        f.seek(pos)
                        new = f.read()
                except OSError:
                    new = b""
                if new:
                    pos += len(new)
                    pending += new
                    cut = pending.rfind(b"\n") + 1
                    if cut:
                        chunk(oci.cri_log_text(pending[:cut], timestamps=ts))
                        pending = pending[cut:]
                elif c.attempt != attempt or c.state != "running":
                    break
                time.sleep(0.25)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass


def serve(sim, host, port, cert, key, client_ca):
    """Starts the server in a thread; returns it."""
    srv = http.server.ThreadingHTTPServer((host, port), Handler)
    srv.daemon_threads = True
    srv.sim = sim
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    if client_ca:
        ctx.load_verify_locations(str(client_ca))
        ctx.verify_mode = ssl.CERT_REQUIRED
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True, name="node-server").start()
    return srv
