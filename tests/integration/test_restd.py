"""shoalrestd (the slurmrestd v0.0.44 REST API) against a real cluster, driven with curl over its
unix socket (peer credentials) and TCP (tokens); every request and answer is validated against
the OpenAPI document."""

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import SBIN, pid_alive, wait_until
from openapi_check import SPEC_PATH
from restd_client import Rest

V = "/slurm/v0.0.44"
SCRIPT = "#!/bin/sh\nsleep 300\n"


def submit_body(cwd, name="rest", script=SCRIPT, **job):
    desc = {"name": name, "current_working_directory": str(cwd),
            "environment": ["PATH=/bin:/usr/bin"]}
    desc.update(job)
    return {"script": script, "job": desc}


def test_openapi_ping_and_errors(cluster):
    c = cluster(nodes=1)
    rest = Rest(c)
    # The document is served as stored in the repository.
    r = c.run(["curl", "-sS", "--unix-socket", rest.socket, "http://localhost/openapi/v3"])
    assert json.loads(r.stdout) == json.loads(SPEC_PATH.read_text())

    status, ping = rest.get(f"{V}/ping/")
    assert status == 200
    assert ping["pings"][0]["responding"] is True
    assert ping["meta"]["client"]["user"] == "root"
    status, diag = rest.get(f"{V}/diag/")
    assert status == 200, diag
    assert diag["statistics"]["jobs_submitted"] == 0
    # v0.0.43 is accepted as an alias.
    assert rest.get("/slurm/v0.0.43/ping/", validate=False)[0] == 200

    status, body = rest.get(f"{V}/no/such/path", validate=False)
    assert status == 404 and body["errors"]
    status, body = rest.call("PUT", f"{V}/ping/", validate=False)
    assert status == 405 and body["errors"]
    status, body = rest.post(f"{V}/job/submit", raw='{"job": {"name": ', validate=False)
    assert status == 400
    assert "parse" in body["errors"][0]["description"]
    status, body = rest.post(f"{V}/job/submit", raw='{"x": "' + "a" * (2 << 20) + '"}',
                             validate=False)
    assert status == 413
    assert body["errors"][0]["description"].startswith("Request body exceeds")
    status, body = rest.get(f"{V}/job/999999")
    assert status == 404
    assert body["errors"][0]["error_number"] == 2017
    # Still serving after all that.
    assert rest.get(f"{V}/ping/")[0] == 200
    assert pid_alive(c.pid("shoalrestd"))


def test_submit_list_update_cancel(cluster):
    c = cluster(nodes=2)
    rest = Rest(c)
    status, sub = rest.post(f"{V}/job/submit", submit_body(c.work, time_limit={"set": True,
                                                                               "number": 10}))
    assert status == 200, sub
    job_id = sub["job_id"]
    c.wait_job(job_id, "RUNNING")

    status, jobs = rest.get(f"{V}/jobs/")
    assert status == 200
    mine = [j for j in jobs["jobs"] if j["job_id"] == job_id]
    assert len(mine) == 1
    assert mine[0]["job_state"] == ["RUNNING"]
    assert mine[0]["name"] == "rest"
    assert mine[0]["user_name"] == "root"
    assert mine[0]["time_limit"] == {"set": True, "infinite": False, "number": 10}
    assert mine[0]["nodes"] in c.node_names

    status, one = rest.get(f"{V}/job/{job_id}", template=f"{V}/job/{{job_id}}")
    assert status == 200 and one["jobs"][0]["job_id"] == job_id
    status, res = rest.get(f"{V}/resources/{job_id}", template=f"{V}/resources/{{job_id}}")
    assert status == 200 and res["nodes"][0]["node"] == mine[0]["nodes"]
    status, st = rest.get(f"{V}/jobs/state/?job_id={job_id}", template=f"{V}/jobs/state/")
    assert status == 200 and [j["job_id"] for j in st["jobs"]] == [job_id]

    status, upd = rest.post(f"{V}/job/{job_id}", {"time_limit": {"set": True, "number": 20},
                                                  "comment": "fromrest"},
                            template=f"{V}/job/{{job_id}}")
    assert status == 200, upd
    show = c.show_job(job_id)
    assert show["TimeLimit"] == "00:20:00"
    assert show["Comment"] == "fromrest"

    status, body = rest.post(f"{V}/job/{job_id}", {"time_limit": "soon"},
                             template=f"{V}/job/{{job_id}}", validate=False)
    assert status == 400, body

    status, kill = rest.delete(f"{V}/job/{job_id}", template=f"{V}/job/{{job_id}}")
    assert status == 200, kill
    assert c.wait_job(job_id) == "CANCELLED"

    # DELETE jobs/ signals several at once.
    ids = [rest.post(f"{V}/job/submit", submit_body(c.work, name=f"many{i}"))[1]["job_id"]
           for i in range(3)]
    status, kill = rest.delete(f"{V}/jobs/", {"jobs": [str(i) for i in ids]})
    assert status == 200, kill
    assert kill["status"] == []
    for i in ids:
        assert c.wait_job(i) == "CANCELLED"
    status, kill = rest.delete(f"{V}/job/999999", template=f"{V}/job/{{job_id}}")
    assert status == 404 and kill["errors"]

    # job/allocate: an allocation without a script, running until cancelled.
    status, alloc = rest.post(f"{V}/job/allocate", {"job": {"name": "alloc", "tasks": 1,
                                                            "time_limit": {"set": True,
                                                                           "number": 5}}})
    assert status == 200, alloc
    assert c.wait_job(alloc["job_id"], "RUNNING")
    assert rest.delete(f"{V}/job/{alloc['job_id']}", template=f"{V}/job/{{job_id}}")[0] == 200
    assert c.wait_job(alloc["job_id"]) == "CANCELLED"


def test_nodes_partitions_reservations(cluster):
    c = cluster(nodes=2)
    rest = Rest(c)
    status, nodes = rest.get(f"{V}/nodes/")
    assert status == 200
    assert sorted(n["name"] for n in nodes["nodes"]) == ["n1", "n2"]
    assert all(n["state"] == ["IDLE"] for n in nodes["nodes"])

    status, body = rest.post(f"{V}/node/n1", {"state": ["DRAIN"], "reason": "rest maint"},
                             template=f"{V}/node/{{node_name}}")
    assert status == 200, body
    assert c.node_state("n1") == "drain"
    status, n1 = rest.get(f"{V}/node/n1", template=f"{V}/node/{{node_name}}")
    assert n1["nodes"][0]["state"] == ["IDLE", "DRAIN"]
    assert n1["nodes"][0]["reason"] == "rest maint"
    # A drain without a reason is refused, as by scontrol.
    status, body = rest.post(f"{V}/node/n2", {"state": ["DRAIN"]},
                             template=f"{V}/node/{{node_name}}")
    assert status == 400 and "reason" in body["errors"][0]["description"]
    status, body = rest.post(f"{V}/nodes/", {"name": ["n1"], "state": ["RESUME"]})
    assert status == 200, body
    assert c.node_state("n1") == "idle"
    status, body = rest.get(f"{V}/node/n9", template=f"{V}/node/{{node_name}}")
    assert status == 404

    status, parts = rest.get(f"{V}/partitions/")
    assert status == 200
    assert len(parts["partitions"]) >= 1
    name = parts["partitions"][0]["name"]
    status, one = rest.get(f"{V}/partition/{name}", template=f"{V}/partition/{{partition_name}}")
    assert status == 200 and one["partitions"][0]["nodes"]["total"] == 2
    assert rest.get(f"{V}/partition/nope", template=f"{V}/partition/{{partition_name}}")[0] == 404

    start = int(time.time()) + 3600
    status, body = rest.post(f"{V}/reservation", {
        "name": "restres", "start_time": {"set": True, "number": start},
        "duration": {"set": True, "number": 60}, "node_list": ["n2"], "users": ["root"]})
    assert status == 200, body
    status, resv = rest.get(f"{V}/reservations/")
    assert status == 200
    assert [r["name"] for r in resv["reservations"]] == ["restres"]
    assert resv["reservations"][0]["node_list"] == "n2"
    status, one = rest.get(f"{V}/reservation/restres",
                           template=f"{V}/reservation/{{reservation_name}}")
    assert status == 200 and one["reservations"][0]["users"] == "root"
    status, body = rest.delete(f"{V}/reservation/restres",
                               template=f"{V}/reservation/{{reservation_name}}")
    assert status == 200, body
    assert rest.get(f"{V}/reservations/")[1]["reservations"] == []
    assert rest.get(f"{V}/reservation/restres",
                    template=f"{V}/reservation/{{reservation_name}}")[0] == 404

    assert rest.get(f"{V}/licenses/")[0] == 200
    assert rest.get(f"{V}/shares")[0] == 200


def test_normal_user_rights(cluster, users):
    c = cluster(nodes=2)
    rest = Rest(c)
    alice = users["shoaltest1"]
    status, root_job = rest.post(f"{V}/job/submit", submit_body(c.work))
    assert status == 200
    status, sub = rest.post(f"{V}/job/submit", submit_body(alice.home, name="alice"),
                            user=alice)
    assert status == 200, sub
    assert c.show_job(sub["job_id"])["UserId"].startswith("shoaltest1(")

    status, body = rest.get(f"{V}/ping/", user=alice)
    assert status == 200 and body["meta"]["client"]["user"] == "shoaltest1"
    # Not an admin: no draining, no cancelling root's job.
    status, body = rest.post(f"{V}/node/n1", {"state": ["DRAIN"], "reason": "x"}, user=alice,
                             template=f"{V}/node/{{node_name}}")
    assert status == 403, body
    assert "permission denied" in body["errors"][0]["description"].lower()
    assert c.node_state("n1") != "drain"
    status, body = rest.delete(f"{V}/job/{root_job['job_id']}", user=alice,
                               template=f"{V}/job/{{job_id}}")
    assert status == 403, body
    assert c.job_state(root_job["job_id"]) in ("PENDING", "RUNNING")
    # Her own job she may cancel.
    status, body = rest.delete(f"{V}/job/{sub['job_id']}", user=alice,
                               template=f"{V}/job/{{job_id}}")
    assert status == 200, body
    assert c.wait_job(sub["job_id"]) == "CANCELLED"


def test_tcp_needs_a_valid_token(cluster):
    c = cluster(nodes=1)
    rest = Rest(c)
    assert rest.address and rest.address.startswith("127.0.0.1:")
    status, body = rest.get(f"{V}/ping/", tcp=True)
    assert status == 401
    assert body["errors"][0]["error_number"] == 1007
    forged = ("eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJleHAiOjQxMDI0NDQ4MDAsImlhdCI6MCwic3Vu"
              "Ijoicm9vdCJ9.c2lnbmF0dXJl")
    status, body = rest.get(f"{V}/ping/", tcp=True, headers=[f"X-SLURM-USER-TOKEN: {forged}",
                                                              "X-SLURM-USER-NAME: root"])
    assert status == 401, body
    status, body = rest.get(f"{V}/nodes/", tcp=True,
                            headers=[f"Authorization: Bearer {forged}"])
    assert status == 401, body
    assert pid_alive(c.pid("shoalrestd"))


def test_rate_and_body_limits(cluster):
    c = cluster(nodes=1)
    sock = c.dir / "run" / "limited.sock"
    addr_file = c.dir / "run" / "limited.addr"
    proc = subprocess.Popen([str(SBIN / "shoalrestd"), "-f", str(c.conf_path), "--rate", "0.5",
                             "--burst", "3", "--max-body", "1K", "--address-file",
                             str(addr_file), f"unix:{sock}"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_until(addr_file.exists, 10, "the limited shoalrestd to listen")
        rest = Rest(c, socket=sock)
        answers = [rest.get(f"{V}/ping/") for _ in range(6)]  # validated: a 429 has "pings"
        codes = [status for status, _ in answers]
        assert codes[:3] == [200, 200, 200]
        assert 429 in codes[3:]
        limited = answers[codes.index(429)][1]
        assert "rate limit" in limited["errors"][0]["description"]
        time.sleep(2.2)
        assert rest.get(f"{V}/ping/")[0] == 200  # refilled (one token per 2 s)
        status, body = rest.post(f"{V}/job/submit", raw="{" + " " * 2048 + "}", validate=False)
        assert status == 413
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=10)
    assert proc.returncode == 0
    assert not sock.exists()


def test_tcp_with_scontrol_tokens(cluster, users, tmp_path):
    """Over TCP a token acts with exactly its user's rights."""
    key_path = tmp_path / "jwt_hs256.key"
    key_path.write_bytes(os.urandom(32))
    os.chmod(key_path, 0o600)
    alt = ["AuthAltTypes=auth/jwt", f"AuthAltParameters=jwt_key={key_path}"]
    c = cluster(nodes=1, conf=alt, dbd_conf=alt)
    rest = Rest(c)

    def token(*args):
        out = c.run(["scontrol", "token", *args]).stdout.strip()
        assert out.startswith("SLURM_JWT="), out
        return out[len("SLURM_JWT="):]

    alice = users["shoaltest1"]
    t_alice, t_root = token("username=shoaltest1"), token()
    status, body = rest.get(f"{V}/ping/", tcp=True, headers=[f"X-SLURM-USER-TOKEN: {t_alice}"])
    assert status == 200, body
    assert body["meta"]["client"]["user"] == "shoaltest1"
    status, sub = rest.post(f"{V}/job/submit", submit_body(alice.home, name="tok"), tcp=True,
                            headers=[f"X-SLURM-USER-TOKEN: {t_alice}",
                                     "X-SLURM-USER-NAME: shoaltest1"])
    assert status == 200, sub
    assert c.show_job(sub["job_id"])["UserId"].startswith("shoaltest1(")
    status, body = rest.post(f"{V}/node/n1", {"state": ["DRAIN"], "reason": "x"}, tcp=True,
                             headers=[f"Authorization: Bearer {t_alice}"],
                             template=f"{V}/node/{{node_name}}")
    assert status == 403, body
    # Her token does not let her act as root.
    status, body = rest.get(f"{V}/ping/", tcp=True, headers=[f"X-SLURM-USER-TOKEN: {t_alice}",
                                                              "X-SLURM-USER-NAME: root"])
    assert status in (401, 403), body
    status, body = rest.post(f"{V}/node/n1", {"state": ["DRAIN"], "reason": "x"}, tcp=True,
                             headers=[f"X-SLURM-USER-TOKEN: {t_root}"],
                             template=f"{V}/node/{{node_name}}")
    assert status == 200, body
    assert c.node_state("n1") == "drng"  # her job still runs there
