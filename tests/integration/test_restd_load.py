"""500 concurrent REST clients for about a minute against shoalrestd's unix socket: no request
stalls, every answer is right, and shoalrestd's open descriptors return to their baseline."""

import asyncio
import json
import os
import time

from conftest import wait_until

V = "/slurm/v0.0.44"
CLIENTS = 500
SECONDS = float(os.environ.get("SHOAL_RESTD_LOAD_SECONDS", "60"))
STALL_S = 15.0  # no single request may take longer than this
HELD_JOBS = 20


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


async def request(reader, writer, path):
    writer.write(f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    length = None
    for line in lines[1:]:
        if line.lower().startswith("content-length:"):
            length = int(line.split(":", 1)[1])
    assert length is not None, f"no Content-Length in {lines}"
    body = await reader.readexactly(length)
    return status, json.loads(body)


def check(path, status, body, job_ids, node_names):
    """Why the answer is wrong, or None."""
    if status != 200:
        return f"{path}: HTTP {status}: {body.get('errors')}"
    if body.get("errors"):
        return f"{path}: errors {body['errors']}"
    if path.endswith("/ping/"):
        ok = body["pings"] and body["pings"][0]["responding"] is True
    elif path.endswith("/jobs/"):
        ok = sorted(j["job_id"] for j in body["jobs"]) == job_ids
    elif path.endswith("/nodes/"):
        ok = sorted(n["name"] for n in body["nodes"]) == node_names
    else:
        ok = [j["job_id"] for j in body["jobs"]] == [int(path.rsplit("/", 1)[1])]
    return None if ok else f"{path}: wrong answer {json.dumps(body)[:300]}"


async def client(n, sock, deadline, job_ids, node_names, stats):
    paths = [f"{V}/ping/", f"{V}/jobs/", f"{V}/nodes/", f"{V}/job/{job_ids[n % len(job_ids)]}"]
    keep_alive = n % 2 == 0  # half reuse one connection, half connect per request
    conn = None
    i = n
    try:
        while time.monotonic() < deadline:
            path = paths[i % len(paths)]
            i += 1
            t0 = time.monotonic()
            try:
                if conn is None:
                    conn = await asyncio.wait_for(asyncio.open_unix_connection(sock), STALL_S)
                status, body = await asyncio.wait_for(request(*conn, path), STALL_S)
            except asyncio.TimeoutError:
                stats["stalls"].append(f"{path} took over {STALL_S}s")
                return
            elapsed = time.monotonic() - t0
            stats["max_latency"] = max(stats["max_latency"], elapsed)
            stats["requests"] += 1
            wrong = check(path, status, body, job_ids, node_names)
            if wrong:
                stats["wrong"].append(wrong)
            if not keep_alive:
                conn[1].close()
                await conn[1].wait_closed()
                conn = None
    except Exception as e:  # a reset or a malformed answer is a failure to report, not a crash
        stats["wrong"].append(f"client {n}: {type(e).__name__}: {e}")
    finally:
        if conn is not None:
            conn[1].close()
            try:
                await conn[1].wait_closed()
            except Exception:
                pass


async def load(sock, seconds, job_ids, node_names):
    stats = {"requests": 0, "max_latency": 0.0, "stalls": [], "wrong": []}
    deadline = time.monotonic() + seconds
    await asyncio.gather(*(client(n, sock, deadline, job_ids, node_names, stats)
                           for n in range(CLIENTS)))
    return stats


def test_500_concurrent_clients(cluster):
    c = cluster(nodes=2)
    job_ids = sorted(c.sbatch(["--hold", "-J", f"held{i}", "--wrap", "true"])
                     for i in range(HELD_JOBS))
    sock = str(c.dir / "run" / "restd.sock")
    pid = c.pid("shoalrestd")
    assert pid

    # Warm up every worker thread (each opens its controller connection once), then take the
    # baseline.
    warm = asyncio.run(load(sock, 1.0, job_ids, c.node_names))
    assert not warm["wrong"] and not warm["stalls"], warm
    time.sleep(0.5)
    baseline = fd_count(pid)

    stats = asyncio.run(load(sock, SECONDS, job_ids, c.node_names))
    print(f"\n{stats['requests']} requests in {SECONDS:.0f}s "
          f"({stats['requests'] / SECONDS:.0f}/s), max latency {stats['max_latency']:.3f}s")
    assert not stats["stalls"], stats["stalls"][:10]
    assert not stats["wrong"], f"{len(stats['wrong'])} wrong answers: {stats['wrong'][:10]}"
    assert stats["requests"] > CLIENTS * 10

    # Every client has closed its connection: shoalrestd is back to its baseline.
    wait_until(lambda: fd_count(pid) <= baseline, 15,
               f"shoalrestd's descriptors ({fd_count(pid)}) to return to {baseline}")
    # And it still answers.
    r = c.run(["curl", "-sS", "--unix-socket", sock, f"http://localhost{V}/ping/"])
    assert json.loads(r.stdout)["pings"][0]["responding"] is True
