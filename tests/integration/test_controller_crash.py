"""kill -9 of the controller loses nothing it acknowledged: after a restart every submitted job is
there with its state, running jobs stay running, and jobs that ended while it was down are
recorded with their exit codes."""

import re
import signal
import time
from pathlib import Path

import pytest

from conftest import wait_until

N_JOBS = 1000


def submit_many(c, count, args):
    """Submits `count` copies of a held job with one bash loop (fast) and returns their ids."""
    script = c.write_script(c.work, "held.sh", "#!/bin/bash\ntrue\n")
    loop = f'for i in $(seq {count}); do sbatch {" ".join(args)} {script} || exit 1; done'
    r = c.run(loop, timeout=600)
    ids = [int(line.split()[-1]) for line in r.stdout.splitlines()
           if line.startswith("Submitted batch job")]
    assert len(ids) == count, r.stdout[-500:] + r.stderr[-500:]
    return ids


def states(c):
    r = c.run(["squeue", "-h", "-t", "all", "-o", "%i %T"])
    return {int(i): s for i, s in (line.split() for line in r.stdout.splitlines())}


def test_controller_kill9_with_1000_jobs(cluster):
    c = cluster(nodes=4)
    held = submit_many(c, N_JOBS - 4, ["--hold", "-J", "held"])
    # Two jobs that end while the controller is down, two that outlive its restart.
    short = [c.sbatch(["-J", "short"], "#!/bin/bash\nsleep 2\nexit 3\n") for _ in range(2)]
    long = [c.sbatch(["-J", "long"], "#!/bin/bash\nsleep 15\nexit 4\n") for _ in range(2)]
    running = short + long
    for job in running:
        c.wait_job(job, "RUNNING", timeout=30)
    before = states(c)
    assert set(before) == set(running + held)
    assert all(before[j] == "PENDING" for j in held)
    nodes_before = {j: c.show_job(j)["NodeList"] for j in running}

    c.kill_controller()
    time.sleep(4)  # the short jobs end while the controller is down
    c.start_controller()

    after = states(c)
    assert set(after) == set(before), f"lost: {sorted(set(before) - set(after))[:10]}"
    assert all(after[j] == "PENDING" for j in held)
    # The held jobs were loaded straight into their packed form, not parsed all at once first
    # (the peak of memory a large queue's restart touched).
    loaded = re.findall(r"state loaded in \d+ ms: (\d+) jobs \((\d+) packed,",
                        (c.log_dir / "shoalctld.log").read_text())
    assert loaded and loaded[-1] == (str(len(before)), str(len(held))), loaded
    for job in long:
        info = c.show_job(job)
        assert info["JobState"] == "RUNNING", info
        assert info["NodeList"] == nodes_before[job]
    for job in short:
        assert c.wait_job(job, timeout=60) == "FAILED"
        assert c.show_job(job)["ExitCode"] == "3:0"
    for job in long:
        assert c.wait_job(job, timeout=60) == "FAILED"
        assert c.show_job(job)["ExitCode"] == "4:0"

    # Ids are never reused, and the queue still works.
    new = c.sbatch([], "#!/bin/bash\ntrue\n")
    assert new > max(before)
    assert c.wait_job(new, timeout=30) == "COMPLETED"
    c.run(["scancel", "-u", "root", "-t", "PENDING"])
    wait_until(lambda: all(s != "PENDING" for s in states(c).values()), 60,
               "the held jobs to be cancelled")


def test_controller_restart_twice_keeps_ids(cluster):
    c = cluster(nodes=1)
    first = c.sbatch(["--hold"], "#!/bin/bash\ntrue\n")
    c.kill_controller()
    c.start_controller()
    c.kill_controller()
    c.start_controller()
    second = c.sbatch(["--hold"], "#!/bin/bash\ntrue\n")
    assert second > first
    assert c.job_state(first) == "PENDING"


def state_dir(c):
    for line in c.conf_path.read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip().lower() == "statesavelocation":
            return Path(value.strip())
    raise AssertionError("no StateSaveLocation in slurm.conf")


def stored_bytes(state):
    """Bytes of state in the snapshot and the journal; a running controller keeps the journal
    zero-filled ahead of its next record, which holds nothing."""
    return sum(len(f.read_bytes().rstrip(b"\0")) for f in state.glob("*")
               if f.name in ("journal.log", "snapshot.pb"))


def test_one_script_stored_once_and_restored_after_kill9(cluster):
    """Jobs with the same script and environment store them once in the journal and the
    snapshot (job records name them), and every job gets them back after kill -9."""
    c = cluster(nodes=1)
    padding = "# " + "x" * 20000 + "\n"  # 20 KB per copy, were it stored with every job
    out = c.work / "restored-%j.out"
    script = c.write_script(c.work, "big.sh",
                            "#!/bin/bash\n" + padding + "echo restored $SLURM_JOB_ID\n")
    count = 40
    # One fixed environment (a shell's own variables, such as $_, may differ between calls).
    sbatch = f'env -i PATH="$PATH" SLURM_CONF={c.conf_path} sbatch'
    r = c.run(f"for i in $(seq {count}); do {sbatch} --hold -o {out} {script} || exit 1; done")
    ids = [int(line.split()[-1]) for line in r.stdout.splitlines()]
    assert len(ids) == count
    state = state_dir(c)
    stored = stored_bytes(state)
    assert stored < 2 * len(padding), f"{stored} bytes of state for {count} jobs"

    c.kill_controller()
    c.start_controller()
    # Twice: the state written by a restarted controller also holds the script once.
    c.kill_controller()
    c.start_controller()
    stored = stored_bytes(state)
    assert stored < 2 * len(padding), f"{stored} bytes of state after two restarts"
    for job in (ids[0], ids[-1]):
        c.run(["scontrol", "release", str(job)])
        assert c.wait_job(job, timeout=30) == "COMPLETED"
        assert (c.work / f"restored-{job}.out").read_text() == f"restored {job}\n"
    c.run(["scancel", "-u", "root", "-t", "PENDING"])


def test_controller_heap_on_huge_pages(cluster):
    """shoalctld re-executes itself once with glibc's malloc on transparent huge pages (a large
    queue loads about twice as fast), and gives the environment back as it was to what it runs;
    SHOAL_MALLOC_HUGETLB=0 keeps the default heap."""
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not thp.exists() or "[never]" in thp.read_text():
        pytest.skip("transparent huge pages are disabled in this kernel")
    c = cluster(nodes=1)

    def exec_environment():
        # /proc/PID/environ is the environment of the last exec: the re-exec's.
        raw = Path(f"/proc/{c.pid('shoalctld')}/environ").read_bytes()
        return [v.decode() for v in raw.split(b"\0") if v]

    assert "GLIBC_TUNABLES=glibc.malloc.hugetlb=1" in exec_environment()
    # Re-executed by its own name: ps and pgrep still see "shoalctld".
    assert Path(f"/proc/{c.pid('shoalctld')}/comm").read_text().strip() == "shoalctld"
    assert c.run(["squeue", "-h"]).returncode == 0
    c.kill_controller()
    c.env["SHOAL_MALLOC_HUGETLB"] = "0"
    try:
        c.start_controller()
    finally:
        del c.env["SHOAL_MALLOC_HUGETLB"]
    assert not any(v.startswith("GLIBC_TUNABLES=") for v in exec_environment())
    assert c.run(["squeue", "-h"]).returncode == 0


def test_clean_stop_folds_a_long_journal_into_a_snapshot(cluster):
    """SIGTERM saves the live jobs as a snapshot when the journal has grown long (as slurmctld
    saves its state on the way down): the next start reads them, not every record since, such as
    thousands of jobs that ended and were purged. Nothing live is lost and ids go on."""
    c = cluster(nodes=1, conf=["MinJobAge=2", "MaxArraySize=5001"])
    keep = c.sbatch(["--hold", "-J", "keep"], "#!/bin/bash\necho kept\n")
    array = c.sbatch(["--hold", "--array=0-4999", "-J", "churn"], "#!/bin/bash\ntrue\n")
    c.run(["scancel", str(array)])
    wait_until(lambda: set(states(c)) == {keep}, 60, "the cancelled tasks to be purged")
    state = state_dir(c)
    before = stored_bytes(state)
    assert before > 1 << 20, f"{before} bytes of journal: expected more than 1 MB to fold"

    c.kill_controller(signal.SIGTERM)
    after = stored_bytes(state)
    assert after < 64 << 10, f"{after} bytes of state after a clean stop (from {before})"
    c.start_controller()
    assert states(c) == {keep: "PENDING"}
    assert c.show_job(keep)["JobName"] == "keep"
    new = c.sbatch(["--hold"], "#!/bin/bash\ntrue\n")
    assert new > array + 4999
    c.run(["scontrol", "release", str(keep)])
    assert c.wait_job(keep, timeout=30) == "COMPLETED"
    c.run(["scancel", str(new)])
