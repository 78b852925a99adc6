"""Advance reservations end to end: scontrol create/update/delete/show reservation, sinfo -T, node
states MAINT/RESERVED, jobs with and without --reservation on a real cluster, durability across
kill -9 of the controller, and bad input.

Texts are Slurm's: "Reservation created: <name>", "Reservation updated.", "Error creating the
reservation: <error>", "Error updating the reservation: <error>", "delete_reservation <arg>:
<error>", "No reservations in the system", "Reservation <name> not found", client-side parse
errors as "scontrol: error: <message>".
"""

import re
import signal
import time

import wire
from conftest import parse_kv, wait_until

SLEEP_SCRIPT = "#!/bin/bash\nsleep 30\n"
QUICK_SCRIPT = "#!/bin/bash\ntrue\n"
INVALID_RESERVATION = 26  # ErrorCode::kInvalidReservation


def scontrol(c, *args, user=None, check=True):
    return c.run(["scontrol", *args], user=user, check=check)


def create(c, *spec, user=None, check=True):
    return scontrol(c, "create", "reservation", *spec, user=user, check=check)


def show_res(c, name):
    r = scontrol(c, "show", "reservation", name)
    assert f"ReservationName={name} " in r.stdout, r.stdout
    return parse_kv(r.stdout)


def job_field(c, job, key):
    info = c.show_job(job)
    assert info is not None, f"job {job} unknown"
    return info.get(key)


def squeue_reason(c, job):
    return c.run(["squeue", "-h", "-j", str(job), "-o", "%r"]).stdout.strip()


def stays_pending(c, job, seconds=3.0):
    """The job is still PENDING after `seconds` (several scheduling passes)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        state = c.job_state(job)
        if state != "PENDING":
            return False
        time.sleep(0.2)
    return True


def controller_alive(c):
    r = scontrol(c, "ping", check=False)
    return r.returncode == 0 and "is UP" in r.stdout


# ------------------------------------------------------------------------------------------
# scontrol and sinfo
# ------------------------------------------------------------------------------------------

def test_create_show_update_delete(cluster, users):
    c = cluster(nodes=3)
    r = scontrol(c, "show", "reservation")
    assert r.stdout == "No reservations in the system\n"

    r = create(c, "ReservationName=maint1", "StartTime=now+1hour", "Duration=60", "Nodes=n1",
               "Users=root", "Flags=MAINT")
    assert r.stdout == "Reservation created: maint1\n"
    # Unnamed: Slurm numbers every reservation it creates, named or not.
    r = create(c, "StartTime=now+2hours", "Duration=30", "NodeCnt=1", "Users=root")
    assert r.stdout == "Reservation created: root_2\n"

    m = show_res(c, "maint1")
    assert m["Nodes"] == "n1"
    assert m["NodeCnt"] == "1"
    assert m["Duration"] == "01:00:00"
    assert m["Flags"] == "MAINT,SPEC_NODES"
    assert m["Users"] == "root"
    assert m["Accounts"] == "(null)"
    assert m["PartitionName"] == "(null)"
    assert m["State"] == "INACTIVE"
    assert m["MaxStartDelay"] == "(null)"

    everything = scontrol(c, "show", "res").stdout
    names = re.findall(r"^ReservationName=(\S+)", everything, re.M)
    assert names == ["maint1", "root_2"]  # creation order
    assert everything.endswith("MaxStartDelay=(null)\n\n")
    one = scontrol(c, "-o", "show", "reservation").stdout.splitlines()
    assert len(one) == 2 and one[0].startswith("ReservationName=maint1 ")

    table = c.run(["sinfo", "-T"]).stdout.splitlines()
    assert re.match(r"RESV_NAME\s+STATE\s+START_TIME\s+END_TIME\s+DURATION\s+NODELIST$",
                    table[0]), table
    assert re.match(r"maint1\s+INACTIVE\s+\S+\s+\S+\s+01:00:00\s+n1$", table[1]), table
    assert table[2].startswith("root_2 ")
    bare = c.run(["sinfo", "-T", "-h"]).stdout.splitlines()
    assert bare == table[1:]

    r = scontrol(c, "update", "ReservationName=maint1", "Duration=90", "Users+=shoaltest1")
    assert r.stdout == "Reservation updated.\n"
    m = show_res(c, "maint1")
    assert m["Duration"] == "01:30:00"
    assert m["Users"] == "root,shoaltest1"

    r = scontrol(c, "update", "ReservationName=nope", "Duration=5", check=False)
    assert r.returncode == 1
    assert r.stderr == "Error updating the reservation: Requested reservation is invalid\n"

    r = scontrol(c, "show", "reservation", "nope", check=False)
    assert r.returncode == 1
    assert r.stdout == "Reservation nope not found\n"

    assert scontrol(c, "delete", "ReservationName=maint1").stdout == ""
    assert scontrol(c, "delete", "reservation", "root_2").stdout == ""
    assert scontrol(c, "show", "reservation").stdout == "No reservations in the system\n"
    r = scontrol(c, "delete", "ReservationName=maint1", check=False)
    assert r.returncode == 1
    assert r.stderr == ("delete_reservation ReservationName=maint1: "
                        "Requested reservation is invalid\n")
    assert c.run(["sinfo", "-T", "-h"]).stdout == ""


def test_only_admins_change_reservations(cluster, users):
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    create(c, "ReservationName=adm", "StartTime=now+1hour", "Duration=10", "Nodes=n1",
           "Users=root")
    r = create(c, "StartTime=now+1hour", "Duration=10", "Nodes=n2", "Users=shoaltest1",
               user=alice, check=False)
    assert r.returncode == 1
    assert r.stderr == "Error creating the reservation: Access/permission denied\n"
    r = scontrol(c, "update", "ReservationName=adm", "Duration=20", user=alice, check=False)
    assert r.returncode == 1
    assert r.stderr == "Error updating the reservation: Access/permission denied\n"
    r = scontrol(c, "delete", "ReservationName=adm", user=alice, check=False)
    assert r.returncode == 1
    assert r.stderr == "delete_reservation ReservationName=adm: Access/permission denied\n"
    # Anyone may look.
    assert show_res(c, "adm")["Duration"] == "00:10:00"
    r = scontrol(c, "show", "reservation", user=alice)
    assert "ReservationName=adm " in r.stdout
    assert "adm " in c.run(["sinfo", "-T"], user=alice).stdout


def test_bad_input_gives_slurm_errors_and_controller_stays_up(cluster):
    c = cluster(nodes=2)
    base = ["StartTime=now", "Duration=10", "Nodes=n1", "Users=root"]
    cases = [
        (base + ["Flags=bogus"],
         "scontrol: error: Error parsing flags bogus.  No reservation created.\n"),
        (["StartTime=xyz", "Duration=10", "Nodes=n1", "Users=root"],
         "scontrol: error: Invalid start time StartTime=xyz.  No reservation created.\n"),
        (["StartTime=now", "Duration=abc", "Nodes=n1", "Users=root"],
         "scontrol: error: Invalid duration Duration=abc.  No reservation created.\n"),
        (base + ["Foo=bar"], "scontrol: error: Unknown parameter Foo=bar.  No reservation created.\n"),
        (["StartTime=now", "Duration=10", "Nodes=n1"],
         "scontrol: error: Either Users/Groups and/or Accounts must be specified.  "
         "No reservation created.\n"),
        (["Duration=10", "Nodes=n1", "Users=root"],
         "scontrol: error: A start time must be given.  No reservation created.\n"),
        # Found bad by the controller.
        (["StartTime=now", "Duration=10", "Nodes=zz9", "Users=root"],
         "Error creating the reservation: Invalid node name specified\n"),
        (["StartTime=2020-01-01T00:00:00", "Duration=10", "Nodes=n1", "Users=root"],
         "Error creating the reservation: Invalid time specified\n"),
        (["StartTime=now", "Duration=10", "Nodes=n1", "Users=nosuchuser_x"],
         "Error creating the reservation: Invalid user id\n"),
    ]
    for spec, expected in cases:
        r = create(c, *spec, check=False)
        assert r.returncode == 1, (spec, r.stdout)
        assert r.stderr == expected, spec
        assert r.stdout == ""
    r = scontrol(c, "update", "ReservationName=x", "Flags=bogus", check=False)
    assert r.returncode == 1
    assert r.stderr == "scontrol: error: Error parsing flags bogus.  No reservation update.\n"
    r = scontrol(c, "create", "foo", check=False)
    assert r.returncode == 1
    assert r.stderr == "scontrol: error: Invalid creation entity: foo\n"
    r = scontrol(c, "delete", "reservation", check=False)
    assert r.returncode == 1

    # A client that skips scontrol's checks: the controller parses the words again.
    body = wire.field_bytes(11, wire.field_varint(1, 0) + wire.field_bytes(2, "Flags=bogus") +
                            wire.field_bytes(2, "StartTime=now") +
                            wire.field_bytes(2, "Duration=10") + wire.field_bytes(2, "Nodes=n1") +
                            wire.field_bytes(2, "Users=root"))
    rc, error, cred = wire.ask_agent(str(c.dir / "run" / "auth.sock"), body)
    assert rc == 0 and cred, error
    resp = wire.call(("127.0.0.1", c.controller_port()), body, wire.encode_credential(cred))
    assert wire.first(resp, 1, 0) == INVALID_RESERVATION
    assert b"Error parsing flags bogus" in wire.first(resp, 2, b"")

    assert controller_alive(c)
    assert scontrol(c, "show", "reservation").stdout == "No reservations in the system\n"


# ------------------------------------------------------------------------------------------
# Node states and scheduling (the scheduler asks Controller::ReservationBlocksNode)
# ------------------------------------------------------------------------------------------

def test_maint_reservation_keeps_jobs_off_its_node(cluster, users):
    c = cluster(nodes=2)
    alice = users["shoaltest1"]
    create(c, "ReservationName=fix", "StartTime=now", "Duration=60", "Nodes=n1", "Users=root",
           "Flags=MAINT,IGNORE_JOBS")
    assert show_res(c, "fix")["State"] == "ACTIVE"
    assert c.node_state("n1") == "maint"
    assert c.node_state("n2") == "idle"
    node = parse_kv(scontrol(c, "show", "node", "n1").stdout)
    assert node["State"] == "IDLE+MAINTENANCE+RESERVED"

    # One node's worth of work runs, on the other node.
    job = c.sbatch(["-N1"], SLEEP_SCRIPT, user=alice)
    c.wait_job(job, "RUNNING", timeout=30)
    assert job_field(c, job, "NodeList") == "n2"
    c.run(["scancel", str(job)])

    # Work that needs both nodes waits for the maintenance, with Slurm's reason.
    both = c.sbatch(["-N2"], QUICK_SCRIPT, user=alice)
    assert stays_pending(c, both)
    assert squeue_reason(c, both) == "ReqNodeNotAvail, Reserved for maintenance"

    scontrol(c, "delete", "ReservationName=fix")
    assert c.node_state("n1") in ("idle", "mix", "alloc", "comp")
    c.wait_job(both, "COMPLETED", timeout=60)


def test_job_in_reservation_uses_only_its_nodes(cluster, users):
    c = cluster(nodes=3)
    alice, bob = users["shoaltest1"], users["shoaltest2"]
    create(c, "ReservationName=team", "StartTime=now", "Duration=30", "Nodes=n3",
           "Users=shoaltest1")
    assert c.node_state("n3") == "resv"
    assert parse_kv(scontrol(c, "show", "node", "n3").stdout)["State"] == "IDLE+RESERVED"

    job = c.sbatch(["--reservation=team"], SLEEP_SCRIPT, user=alice)
    c.wait_job(job, "RUNNING", timeout=30)
    assert job_field(c, job, "NodeList") == "n3"
    assert job_field(c, job, "Reservation") == "team"

    # A job in the reservation never leaves it: one more node than it holds waits.
    wide = c.sbatch(["--reservation=team", "-N2"], QUICK_SCRIPT, user=alice)
    assert stays_pending(c, wide)
    c.run(["scancel", str(wide)])

    # Outsiders may not name it, and an unknown name is refused.
    bad = c.write_script(bob.home, "resv-bad.sh", QUICK_SCRIPT, bob)
    r = c.run(["sbatch", "--reservation=team", str(bad)], user=bob, check=False)
    assert r.returncode == 1
    assert r.stderr == ("sbatch: error: Batch job submission failed: "
                        "Access denied to requested reservation\n")
    r = c.run(["sbatch", "--reservation=nope", str(bad)], user=bob, check=False)
    assert r.returncode == 1
    assert r.stderr == ("sbatch: error: Batch job submission failed: "
                        "Requested reservation is invalid\n")

    # Nor may they use its nodes without it: a job wanting all three nodes waits...
    all3 = c.sbatch(["-N3"], QUICK_SCRIPT, user=bob)
    assert stays_pending(c, all3)
    c.run(["scancel", str(job)])
    c.wait_job(job, "CANCELLED", timeout=30)
    assert stays_pending(c, all3, 2.0)
    # ... until the reservation is gone.
    scontrol(c, "delete", "ReservationName=team")
    c.wait_job(all3, "COMPLETED", timeout=60)


def test_short_job_may_use_node_before_reservation_starts(cluster, users):
    c = cluster(nodes=1)
    alice = users["shoaltest1"]
    create(c, "ReservationName=later", "StartTime=now+10minutes", "Duration=60", "Nodes=n1",
           "Users=root")
    assert show_res(c, "later")["State"] == "INACTIVE"
    assert c.node_state("n1") == "idle"  # not reserved until it starts
    # Ends (time limit 2 minutes) before the reservation starts: runs now.
    short = c.sbatch(["-t", "2"], QUICK_SCRIPT, user=alice)
    c.wait_job(short, "COMPLETED", timeout=30)
    assert job_field(c, short, "NodeList") == "n1"
    # Would still be running when it starts: waits.
    long = c.sbatch(["-t", "30"], QUICK_SCRIPT, user=alice)
    assert stays_pending(c, long)
    unlimited = c.sbatch([], QUICK_SCRIPT, user=alice)
    assert stays_pending(c, unlimited, 1.0)
    scontrol(c, "delete", "ReservationName=later")
    c.wait_job(long, "COMPLETED", timeout=60)
    c.wait_job(unlimited, "COMPLETED", timeout=60)


# ------------------------------------------------------------------------------------------
# Durability
# ------------------------------------------------------------------------------------------

def test_reservations_survive_controller_kill9(cluster, users):
    c = cluster(nodes=2)
    create(c, "ReservationName=keep", "StartTime=now+1hour", "Duration=45", "Nodes=n1",
           "Users=root,shoaltest1", "Flags=MAINT,IGNORE_JOBS")
    r = create(c, "StartTime=now+3hours", "Duration=10", "Nodes=n2", "Users=root")
    assert r.stdout == "Reservation created: root_2\n"
    create(c, "ReservationName=gone", "StartTime=now+5hours", "Duration=10", "Nodes=n2",
           "Users=root")
    scontrol(c, "update", "ReservationName=keep", "Duration=50")
    scontrol(c, "delete", "ReservationName=gone")
    before = scontrol(c, "show", "reservation").stdout

    # Twice: the first restart replays the journal (and compacts it into a snapshot), the second
    # reads the snapshot.
    for _ in range(2):
        c.kill_controller(signal.SIGKILL)
        c.start_controller()
        assert scontrol(c, "show", "reservation").stdout == before
    keep = show_res(c, "keep")
    assert keep["Duration"] == "00:50:00"
    assert keep["Flags"] == "MAINT,IGNORE_JOBS,SPEC_NODES"
    assert keep["Users"] == "root,shoaltest1"
    # The name counter survived too: root_2 and "gone" (3) were taken.
    r = create(c, "StartTime=now+7hours", "Duration=10", "Nodes=n2", "Users=root")
    assert r.stdout == "Reservation created: root_4\n"
    c.kill_controller(signal.SIGKILL)
    c.start_controller()
    assert "ReservationName=root_4 " in scontrol(c, "show", "reservation").stdout


def test_ended_reservation_is_purged(cluster):
    c = cluster(nodes=1)
    create(c, "ReservationName=brief", "StartTime=now", "Duration=1", "Nodes=n1", "Users=root")
    assert show_res(c, "brief")["State"] == "ACTIVE"
    # Duration=1 is one minute; the once-a-second maintenance removes it when it ends.
    wait_until(lambda: scontrol(c, "show", "reservation").stdout ==
               "No reservations in the system\n", 90, "the reservation to be purged")
    c.kill_controller(signal.SIGKILL)
    c.start_controller()
    assert scontrol(c, "show", "reservation").stdout == "No reservations in the system\n"
