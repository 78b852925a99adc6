"""Bad input gets Slurm's error and a non-zero exit; nothing bad reaches the controller."""

import os
import socket
import struct
import subprocess
import time

import wire
from conftest import SBIN, pid_alive

OK_SCRIPT = "#!/bin/bash\ntrue\n"


def submit_fails(c, args, script=OK_SCRIPT):
    path = c.write_script(c.work, "bad.sh", script)
    r = c.run(["sbatch", *args, str(path)], check=False)
    assert r.returncode != 0, f"sbatch {args} succeeded: {r.stdout}"
    assert "Submitted batch job" not in r.stdout
    return r.stderr


def queue(c):
    return c.run(["squeue", "-h", "-o", "%i %t %j"]).stdout


def test_sbatch_rejects_bad_options(cluster):
    c = cluster(nodes=1)
    err = submit_fails(c, ["--bogus"])
    assert "unrecognized option '--bogus'" in err
    assert 'Try "sbatch --help" for more information' in err
    assert "sbatch: error: Invalid --time specification" in submit_fails(c, ["-t", "abc"])
    assert "sbatch: error: Invalid --time specification" in submit_fails(c, ["--time=1:2:3:4"])
    assert "sbatch: error: Invalid --mem specification" in submit_fails(c, ["--mem=abc"])
    err = submit_fails(c, ["-p", "nope"])
    assert err.startswith("sbatch: error: Batch job submission failed: ")
    assert "invalid partition" in err.lower()
    assert queue(c) == ""


def test_sbatch_rejects_script_without_interpreter(cluster):
    c = cluster(nodes=1)
    err = submit_fails(c, [], "echo no interpreter line\n")
    assert "sbatch: error: This does not look like a batch script.  The first" in err
    assert "line must start with #! followed by the path to an interpreter." in err
    assert queue(c) == ""


def test_sbatch_rejects_impossible_requests(cluster):
    c = cluster(nodes=2, cpus=2)
    err = submit_fails(c, ["-N", "3"])
    assert "Batch job submission failed" in err
    err = submit_fails(c, ["-c", "64"])
    assert "Batch job submission failed" in err
    assert queue(c) == ""


def test_malformed_conf_stops_controller_with_file_and_line(tmp_path):
    conf = tmp_path / "slurm.conf"
    lines = [
        "ClusterName=bad",
        "SlurmctldHost=localhost(127.0.0.1)",
        "SlurmctldPort=1",
        f"StateSaveLocation={tmp_path}/state",
        "this line is not key value",
        "NodeName=n1 CPUs=1",
        "PartitionName=debug Nodes=ALL Default=YES",
    ]
    conf.write_text("\n".join(lines) + "\n")
    r = subprocess.run([str(SBIN / "shoalctld"), "-D", "-f", str(conf)], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert f"{conf}:5" in out or "slurm.conf:5" in out, out


def test_conf_with_bad_numbers_stops_controller(tmp_path):
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=bad\nSlurmctldHost=localhost\n"
                    f"StateSaveLocation={tmp_path}/state\n"
                    "NodeName=n1 CPUs=many\nPartitionName=debug Nodes=ALL\n")
    r = subprocess.run([str(SBIN / "shoalctld"), "-D", "-f", str(conf)], capture_output=True,
                       text=True, timeout=20)
    assert r.returncode != 0
    assert "slurm.conf:4" in r.stdout + r.stderr


def garbage_to_port(port, payload):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            s.settimeout(5)
            while s.recv(4096):
                pass
        except OSError:
            pass  # the controller may reset the connection: that is fine


def test_garbage_on_controller_port(cluster):
    c = cluster(nodes=1)
    job = c.sbatch(["--hold", "-J", "keep"], OK_SCRIPT)
    before = queue(c)
    assert before.split() == [str(job), "PD", "keep"]
    port = c.controller_port()
    payloads = [
        b"GET / HTTP/1.0\r\n\r\n",
        b"\xff\xff\xff\x7f" + os.urandom(64),           # a huge length, then too little
        b"\x10\x00\x00\x00" + os.urandom(16),           # a right length, random frame
        b"\x00\x00\x00\x00",                            # an empty frame
        b"\x05\x00\x00\x00\x08\x01\x22\x01\xff",        # a frame whose body is no Request
        os.urandom(4096),
    ]
    for payload in payloads:
        garbage_to_port(port, payload)
    # Half-open connections must not block others either.
    idle = socket.create_connection(("127.0.0.1", port), timeout=5)
    idle.sendall(b"\x40\x00\x00\x00")
    try:
        assert queue(c) == before
        pid = c.pid("shoalctld")
        assert pid_alive(pid)
        job2 = c.sbatch(["--hold"], OK_SCRIPT)
        assert job2 > job
    finally:
        idle.close()


def test_client_that_stops_reading_a_streamed_listing_blocks_nobody(cluster):
    """A client asks for a streamed listing of megabytes (whole records, scripts and
    environments) and does not read it: the controller writes what the socket takes and queues
    the rest, and goes on serving everyone else. Read later, every part arrives, in order."""
    c = cluster(nodes=1, conf=["MaxArraySize=5001"], accounting=False)
    array = c.sbatch(["--hold", "--array=1-5000", "-J", "many"], OK_SCRIPT)
    # Request{job_query = 2: JobQueryRequest{stream = 11}}: whole records, in parts.
    body = wire.field_bytes(2, wire.field_varint(11, 1))
    rc, error, cred = wire.ask_agent(str(c.dir / "run" / "auth.sock"), body)
    assert rc == 0 and cred, error
    frame = (wire.field_varint(1, 7) + wire.field_bytes(3, wire.encode_credential(cred)) +
             wire.field_bytes(4, body))
    slow = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window, set before connect
    slow.settimeout(30)
    slow.connect(("127.0.0.1", c.controller_port()))
    try:
        slow.sendall(struct.pack("<I", len(frame)) + frame)
        time.sleep(1)  # the controller has answered as far as the socket lets it
        t0 = time.time()
        job = c.sbatch(["--hold", "-J", "after"], OK_SCRIPT)
        assert c.run(["squeue", "-h", "-j", str(job), "-o", "%j"]).stdout.split() == ["after"]
        c.run(["scontrol", "ping"])
        assert time.time() - t0 < 10, "the controller was held up by a client that does not read"

        parts, jobs, more = 0, 0, True
        while more:
            (n,) = struct.unpack("<I", wire.recv_exact(slow, 4))
            response_frame = wire.parse(wire.recv_exact(slow, n))
            assert wire.first(response_frame, 1) == 7 and wire.first(response_frame, 2) == 1
            response = wire.parse(wire.first(response_frame, 4, b""))
            assert wire.first(response, 1, 0) == 0, response
            listing = wire.parse(wire.first(response, 11, b""))
            jobs += len(listing.get(1, []))
            more = wire.first(listing, 3, 0) == 1
            parts += 1
        assert jobs == 5000, jobs
        assert parts > 10, parts
    finally:
        slow.close()
    assert c.pid("shoalctld") and pid_alive(c.pid("shoalctld"))
    assert len(c.run(["squeue", "-h", "-r", "-o", "%i"]).stdout.split()) == 5001
    assert array < job
