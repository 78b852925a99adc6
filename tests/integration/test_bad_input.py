"""Bad input gets Slurm's error and a non-zero exit; nothing bad reaches the controller."""

import os
import socket
import subprocess

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
