"""Job names, comments and environments are bytes, as in Slurm: a Latin-1 name or an environment
value that is not UTF-8 is accepted, reaches the job unchanged, and reads back byte for byte in
squeue, scontrol and sacct. The JSON outputs, which must be UTF-8, show U+FFFD in its place."""

import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import dbd_conf_for, wait_until

# Python passes str arguments and environment values to the OS through the file-system encoding
# with surrogateescape, so "\udce9" becomes the single byte 0xE9 on the command line.
LATIN1_NAME = "caf\udce9"          # b"caf\xe9": "café" in Latin-1
LATIN1_COMMENT = "\udce9t\udce9"   # b"\xe9t\xe9"
RAW_VALUE = "x\udcffy"             # b"x\xffy"
SHOWN_NAME = "caf\\xe9"            # how the cluster fixture decodes 0xE9 (backslashreplace)
REPLACEMENT = "\ufffd"


@pytest.mark.parametrize("backend", ["sqlite", "mariadb"])
def test_non_utf8_name_comment_and_environment(cluster, request, backend):
    server = request.getfixturevalue("mariadb") if backend == "mariadb" else None
    c = cluster(nodes=1, dbd_conf=dbd_conf_for(backend, server, f"shoal_it_bytes_{os.getpid()}"))
    out = c.work / "bytes.out"
    script = ("#!/bin/bash\n"
              "printf '%s|%s|%s\\n' \"$SLURM_JOB_NAME\" \"$RAW\" \"$SBATCH_ONLY_HERE\"\n")
    path = c.write_script(c.work, "bytes.sh", script)
    r = c.run(["sbatch", f"--job-name={LATIN1_NAME}", f"--comment={LATIN1_COMMENT}", "-o", out,
               path], env={"RAW": RAW_VALUE, "SBATCH_ONLY_HERE": "plain"})
    assert "Submitted batch job" in r.stdout, r.stderr
    job = int(r.stdout.split()[-1])
    c.wait_job(job)
    assert c.job_state(job) == "COMPLETED"
    # The job saw its name and its environment byte for byte.
    wait_until(lambda: out.exists() and out.stat().st_size > 0, 10, "the job's output")
    assert out.read_bytes() == b"caf\xe9|x\xffy|plain\n"

    # A held job stays in the queue for squeue and scontrol.
    held = c.sbatch(["--hold", f"--job-name={LATIN1_NAME}", f"--comment={LATIN1_COMMENT}",
                     "--wrap", "true"])
    assert c.run(["squeue", "-h", "-j", str(held), "-o", "%j|%k"]).stdout == \
        f"{SHOWN_NAME}|\\xe9t\\xe9\n"
    shown = c.run(["scontrol", "show", "job", str(held)]).stdout
    assert f"JobName={SHOWN_NAME}" in shown
    assert "Comment=\\xe9t\\xe9" in shown

    # JSON must be UTF-8: the byte that is not becomes U+FFFD, and the document still parses.
    # (squeue --json lists every job and ignores filters, as Slurm's does.)
    doc = json.loads(c.run(["squeue", "--json"]).stdout)
    assert {j["job_id"]: j["name"] for j in doc["jobs"]}[held] == f"caf{REPLACEMENT}"
    doc = json.loads(c.run(["scontrol", "show", "job", str(held), "--json"]).stdout)
    assert [j["name"] for j in doc["jobs"]] == [f"caf{REPLACEMENT}"]

    # Accounting keeps the bytes too.
    def sacct_name():
        r = c.run(["sacct", "-n", "-X", "-P", "-j", str(job), "-o", "JobName,State"],
                  check=False)
        return r.stdout.strip()
    wait_until(lambda: sacct_name().endswith("|COMPLETED"), 30, "sacct to list the job")
    assert sacct_name() == f"{SHOWN_NAME}|COMPLETED"
    assert c.run(["sacct", "-n", "-X", "-P", "-j", str(job), "-o", "Comment"]).stdout == \
        "\\xe9t\\xe9\n"
    doc = json.loads(c.run(["sacct", "--json", "-j", str(job)]).stdout)
    assert [j["name"] for j in doc["jobs"]] == [f"caf{REPLACEMENT}"]

    c.run(["scancel", str(held)])
    c.wait_job(held)
    assert c.job_state(held) == "CANCELLED"


def test_refused_records_are_logged_once_and_kept(cluster, mariadb):
    """A batch the database refuses (a column put back to schema 1's utf8mb4) is logged as an
    error once, not on every retry, and stored once the column takes bytes again."""
    client = shutil.which("mariadb") or shutil.which("mysql")
    db_name = f"shoal_it_refused_{os.getpid()}"
    c = cluster(nodes=1, dbd_conf=dbd_conf_for("mariadb", mariadb, db_name))

    def sql(statement):
        subprocess.run([client, f"--socket={mariadb.socket}", "-ushoal", "-pshoal", db_name,
                        "-e", statement], check=True, capture_output=True, timeout=30)

    def refusals():
        text = (c.log_dir / "shoalctld.log").read_text(errors="replace")
        return text.count("shoaldbd refused accounting records (retrying)")

    first = c.sbatch(["--wrap", "true"])
    c.wait_job(first)
    wait_until(lambda: c.run(["sacct", "-n", "-X", "-j", str(first), "-o", "JobID"],
                             check=False).stdout.strip() == str(first), 30, "the schema")
    sql("ALTER TABLE jobs MODIFY job_name MEDIUMTEXT CHARACTER SET utf8mb4 "
        "COLLATE utf8mb4_bin NOT NULL")
    job = c.sbatch([f"--job-name={LATIN1_NAME}", "--wrap", "true"])
    c.wait_job(job)
    wait_until(lambda: refusals() >= 1, 30, "the controller to log the refusal")
    time.sleep(5)  # several retry ticks later: still one line
    assert refusals() == 1

    sql("ALTER TABLE jobs MODIFY job_name MEDIUMBLOB NOT NULL")
    wait_until(lambda: c.run(["sacct", "-n", "-X", "-P", "-j", str(job), "-o", "JobName"],
                             check=False).stdout.strip() == SHOWN_NAME, 30, "the kept record")
