"""Authorization: users act only on their own jobs; the key and other users' identities are out
of reach; root (the SlurmUser) may do everything."""

import grp
import json
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import wire
from conftest import User

HERE = Path(__file__).resolve().parent
SLEEPER = "#!/bin/bash\nsleep 300\n"
DENIED = "Access/permission denied"
ACCESS_DENIED = 2  # src/common/errors.h
AUTH_FAILURE = 11


def test_users_cannot_touch_other_users_jobs(cluster, users, submit_dir):
    c = cluster(nodes=2)
    alice, bob = users["shoaltest1"], users["shoaltest2"]
    running = c.sbatch([], SLEEPER, user=alice, cwd=submit_dir(alice))
    pending = c.sbatch(["--hold"], SLEEPER, user=alice, cwd=submit_dir(alice))
    c.wait_job(running, "RUNNING", timeout=30)
    assert c.show_job(running)["UserId"] == f"{alice.name}({alice.uid})"

    for args in (["scancel", str(running)],
                 ["scancel", "--signal=USR1", "--batch", str(running)],
                 ["scontrol", "hold", str(running)],
                 ["scontrol", "release", str(pending)],
                 ["scontrol", "update", f"JobId={running}", "TimeLimit=1"],
                 ["scontrol", "requeue", str(running)]):
        r = c.run(args, user=bob, check=False)
        assert r.returncode != 0, f"{args} as {bob.name} succeeded"
        assert DENIED in r.stderr, f"{args}: {r.stderr}"

    # Users may not change nodes either.
    r = c.run(["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=x"], user=bob,
              check=False)
    assert r.returncode != 0 and DENIED in r.stderr, r.stderr

    assert c.job_state(running) == "RUNNING"
    assert c.job_state(pending) == "PENDING"
    assert c.show_job(running)["TimeLimit"] != "00:01:00"

    # The owner may, and so may root.
    c.run(["scontrol", "update", f"JobId={pending}", "TimeLimit=5"], user=alice)
    c.run(["scancel", str(pending)], user=alice)
    assert c.wait_job(pending, timeout=30) == "CANCELLED"
    c.run(["scancel", str(running)])
    assert c.wait_job(running, timeout=30) == "CANCELLED"


def test_scancel_as_user_only_sees_own_jobs(cluster, users, submit_dir):
    c = cluster(nodes=1)
    alice, bob = users["shoaltest1"], users["shoaltest2"]
    a = c.sbatch(["--hold"], SLEEPER, user=alice, cwd=submit_dir(alice))
    b = c.sbatch(["--hold"], SLEEPER, user=bob, cwd=submit_dir(bob))
    c.run(["scancel", "-u", bob.name], user=bob)
    assert c.wait_job(b, timeout=30) == "CANCELLED"
    assert c.job_state(a) == "PENDING"


def test_key_is_private(cluster, users):
    c = cluster(nodes=1)
    st = c.key_path.stat()
    assert st.st_mode & 0o777 == 0o600
    assert st.st_uid == 0
    r = c.run(["cat", str(c.key_path)], user=users["shoaltest1"], check=False)
    assert r.returncode != 0
    assert "Permission denied" in r.stderr


def agent_client(c, user, *args):
    r = c.run(["/usr/bin/python3", HERE / "agent_client.py", c.dir / "run" / "auth.sock", *args], user=user)
    return json.loads(r.stdout)


def test_agent_signs_only_for_the_caller(cluster, users, submit_dir):
    c = cluster(nodes=1)
    alice, bob = users["shoaltest1"], users["shoaltest2"]
    out = agent_client(c, bob)
    assert out["agent_rc"] == 0, out
    assert out["cred_uid"] == bob.uid and out["cred_gid"] == bob.gid, out

    out = agent_client(c, None)
    assert out["cred_uid"] == 0, out

    # A credential is bound to its uid: changing it breaks the signature, and bob's own
    # credential does not let him cancel alice's job.
    job = c.sbatch(["--hold"], SLEEPER, user=alice, cwd=submit_dir(alice))
    out = agent_client(c, bob, c.controller_port(), job, alice.uid)
    assert out["honest_rc"] == ACCESS_DENIED and DENIED in out["honest_error"], out
    assert out["forged_rc"] == AUTH_FAILURE, out
    assert c.job_state(job) == "PENDING"


def test_requests_without_valid_credential_are_refused(cluster):
    c = cluster(nodes=1)
    job = c.sbatch(["--hold"], SLEEPER)
    body = wire.cancel_request(job)
    no_cred = wire.call(("127.0.0.1", c.controller_port()), body)
    assert wire.first(no_cred, 1, 0) == AUTH_FAILURE
    fake = wire.encode_credential({"uid": 0, "gid": 0, "expires": 2**40, "body_sha256": b"x" * 32,
                                   "nonce": b"n" * 16, "hmac": b"h" * 32})
    forged = wire.call(("127.0.0.1", c.controller_port()), body, fake)
    assert wire.first(forged, 1, 0) == AUTH_FAILURE
    assert c.job_state(job) == "PENDING"


def test_jobs_and_steps_run_with_the_users_groups(cluster, users, submit_dir):
    """A batch script and an srun step run with exactly the groups initgroups(3) gives the user
    (the primary group and the supplementary ones), which shoald resolves and hands to the step
    on its command line (--user/--groups) instead of each step loading the name service."""
    user = users["shoaltest1"]
    group = "shoaltestgrp"
    subprocess.run(["groupadd", "-f", group], check=True)
    subprocess.run(["usermod", "-aG", group, user.name], check=True)
    extra_gid = grp.getgrnam(group).gr_gid
    expected = sorted(int(g) for g in subprocess.run(
        ["id", "-G", user.name], check=True, capture_output=True, text=True).stdout.split())
    assert extra_gid in expected

    c = cluster(nodes=1)
    work = submit_dir(user)
    job = c.sbatch(["-o", "groups.out"],
                   "#!/bin/bash\nid -G\nsrun id -G\nsleep 300\n", user=user, cwd=work)
    c.wait_job(job, "RUNNING", timeout=30)
    out = Path(work) / "groups.out"
    deadline = time.time() + 30
    while not (out.exists() and len(out.read_text().splitlines()) >= 2) and time.time() < deadline:
        time.sleep(0.2)
    lines = out.read_text().splitlines()
    assert len(lines) >= 2, lines
    assert sorted(int(g) for g in lines[0].split()) == expected, "batch script"
    assert sorted(int(g) for g in lines[1].split()) == expected, "srun step"

    # The batch step got the identity from shoald: its command line carries it.
    stepds = subprocess.run(["pgrep", "-a", "-f", f"shoal-stepd .*--job {job} "],
                            capture_output=True, text=True).stdout
    assert f"--user {user.name} --home {user.home} " in stepds, stepds
    handed = stepds.split("--groups ", 1)[1].split()[0]
    assert sorted(int(g) for g in handed.split(",")) == expected
    c.run(["scancel", str(job)])
    assert c.wait_job(job, timeout=30) == "CANCELLED"


def test_users_known_only_to_a_name_service_module(cluster):
    """Sites keep their users in LDAP or AD (SSSD), not /etc/passwd. The commands and
    shoal-stepd are linked statically (CMakeLists: SHOAL_STATIC_COMMANDS), so glibc loads such a
    module at run time. libnss-db stands in for SSSD: a user and group that exist only in its
    database must submit, list their jobs by name, run a batch script and an srun step as
    themselves."""
    name, uid, group = "shoalnssdb", 1990, "shoalnssgrp"
    home = Path(tempfile.mkdtemp(prefix="shoal-nssdb-", dir="/tmp"))
    os.chown(home, uid, uid)
    home.chmod(0o755)
    db_dir = Path("/var/lib/misc")
    entries = {"passwd": f"{name}:x:{uid}:{uid}::{home}:/bin/bash",
               "group": f"{group}:x:{uid}:"}
    nsswitch = Path("/etc/nsswitch.conf")
    saved = nsswitch.read_text()
    made = []
    try:
        for db, line in entries.items():
            key = line.split(":")[0]
            num = line.split(":")[2]
            # makedb's input, as /var/lib/misc/Makefile writes it: by name, by number, by order.
            src = f".{key} {line}\n={num} {line}\n00 {line}\n"
            subprocess.run(["makedb", "-o", str(db_dir / f"{db}.db"), "-"], input=src, text=True,
                           check=True)
            made.append(db_dir / f"{db}.db")
        nsswitch.write_text(re.sub(r"^(passwd|group):(.*)$", r"\1:\2 db", saved, flags=re.M))
        # Not in /etc/passwd, found through the module (Python's lookups are glibc's too).
        assert name not in Path("/etc/passwd").read_text()
        assert pwd.getpwuid(uid).pw_name == name

        c = cluster(nodes=1)
        user = User(name)
        job = c.sbatch(["-o", "who.out"], "#!/bin/bash\nid -un; id -gn\nsrun id -un\n",
                       user=user, cwd=home)
        listed = c.run(["squeue", "-h", "-u", name, "-o", "%i %u"], user=user).stdout.split()
        assert listed in ([str(job), name], []), listed  # [] once it has ended
        assert c.wait_job(job, timeout=30) == "COMPLETED"
        assert (home / "who.out").read_text().split() == [name, group, name]
        shown = c.show_job(job)
        assert shown["UserId"] == f"{name}({uid})" and shown["GroupId"] == f"{group}({uid})"
    finally:
        nsswitch.write_text(saved)
        for path in made:
            path.unlink()
        shutil.rmtree(home, ignore_errors=True)
