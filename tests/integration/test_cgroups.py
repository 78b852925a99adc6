"""cgroups (proctrack/cgroup, task/cgroup, cgroup.conf): memory limits end jobs and steps
OUT_OF_MEMORY with Slurm's message, 1-CPU jobs get one CPU each (different ones), what a job
leaves behind (a double-forked setsid daemon) dies with it, and the cgroup v2 backend tracks and
kills on the host's cgroup2 mount. Every test checks that no cgroup of ours is left behind."""

import glob
import os
import re
import subprocess
import time

CG_CONF = "ConstrainCores=yes\nConstrainRAMSpace=yes\n"
SLURM_CONF = ["TaskPlugin=task/affinity,task/cgroup", "ProctrackType=proctrack/cgroup",
              "KillWait=2"]
HOG = "python3 -c \"b = b'x' * (500 << 20); print('survived')\""


def node_key(c, node):
    """The node's directory name under <root>/shoal: name + FNV-1a hash of its spool dir."""
    m = re.search(r"^SlurmdSpoolDir=(.*)$", c.conf_path.read_text(), re.M)
    spool = m.group(1).strip().replace("%n", node)
    h = 2166136261
    for b in spool.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return f"{node}_{h:08x}"


def leftover_cgroups(c, roots):
    """Anything of this cluster's nodes left under the cgroup roots."""
    left = []
    for root in roots:
        for node in c.node_names:
            path = os.path.join(root, "shoal", node_key(c, node))
            if os.path.exists(path):
                left.append(path)
    return left


V1_ROOTS = [f"/sys/fs/cgroup/{ctl}" for ctl in ("freezer", "cpuset", "memory", "devices",
                                                 "cpuacct", "pids")]


def wait_for(pred, timeout=20, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def daemon_pids(marker):
    r = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def sacct_state(c, job_step):
    r = c.run(["sacct", "-n", "-P", "-j", job_step.split(".")[0], "-o", "JobID,State"],
              check=False)
    for line in r.stdout.splitlines():
        parts = line.split("|")
        if len(parts) >= 2 and parts[0] == job_step:
            return parts[1]
    return None


def test_oom_cpuset_and_leftovers_v1(cluster):
    c = cluster(nodes=1, cpus=2, memory=2000, conf=SLURM_CONF,
                etc_files={"cgroup.conf": CG_CONF})

    # A batch job over its --mem ends OUT_OF_MEMORY, with Slurm's message in its output.
    oom = c.sbatch(["--mem=100M"], f"#!/bin/bash\n{HOG}\necho after\n")
    # Two 1-CPU jobs side by side on the 2-CPU node: one CPU each, not the same one.
    cpu_script = "#!/bin/bash\ngrep Cpus_allowed_list /proc/self/status\nnproc\nsleep 4\n"
    one = c.sbatch(["-n1", "-c1", "--mem=50M"], cpu_script)
    two = c.sbatch(["-n1", "-c1", "--mem=50M"], cpu_script)
    # A job whose double-forked, setsid'ed daemon outlives its script.
    marker = 900000 + os.getpid() % 10000
    daemon = c.sbatch(["--mem=50M"], f"#!/bin/bash\n(setsid sleep {marker} &)\necho started\n")

    assert c.wait_job(oom, timeout=60) == "OUT_OF_MEMORY"
    job = c.show_job(oom)
    assert job["ExitCode"] == "0:125", job
    out = (c.work / f"slurm-{oom}.out").read_text()
    assert not re.search(r"^survived$", out, re.M), out
    assert (f"slurmstepd: error: Detected 1 oom_kill event in StepId={oom}.batch. "
            "Some of the step tasks have been OOM Killed.") in out, out

    cpus = []
    for j in (one, two):
        assert c.wait_job(j, timeout=60) == "COMPLETED"
        text = (c.work / f"slurm-{j}.out").read_text()
        m = re.search(r"Cpus_allowed_list:\s*(\S+)", text)
        assert m, text
        assert text.split()[-1] == "1", f"nproc in job {j}: {text!r}"
        assert re.fullmatch(r"\d+", m.group(1)), f"job {j} may use CPUs {m.group(1)}"
        cpus.append(m.group(1))
    assert cpus[0] != cpus[1], f"both 1-CPU jobs got CPU {cpus[0]}"

    assert c.wait_job(daemon, timeout=60) == "COMPLETED"
    wait_for(lambda: not daemon_pids(marker), timeout=10, what="the job's daemon to die")

    # sacct agrees on the OOM state.
    wait_for(lambda: sacct_state(c, str(oom)) == "OUT_OF_MEMORY", timeout=30,
             what="sacct to show OUT_OF_MEMORY")
    wait_for(lambda: not leftover_cgroups(c, V1_ROOTS), timeout=15,
             what=f"the cgroups to be removed: {leftover_cgroups(c, V1_ROOTS)}")


def test_srun_step_oom(cluster):
    c = cluster(nodes=1, cpus=2, memory=2000, conf=SLURM_CONF,
                etc_files={"cgroup.conf": CG_CONF})
    r = c.run(["srun", "--mem=100M", "-n1", "bash", "-c", HOG], check=False, timeout=60)
    assert r.returncode != 0
    assert not re.search(r"^survived$", r.stdout, re.M), r.stdout
    assert "oom_kill event in StepId=" in r.stderr, r.stderr
    m = re.search(r"StepId=(\d+)\.0", r.stderr)
    assert m, r.stderr
    wait_for(lambda: not leftover_cgroups(c, V1_ROOTS), timeout=15,
             what="the cgroups to be removed")


def test_cgroup_v2_tracks_and_kills(cluster):
    root = "/sys/fs/cgroup/unified"
    if not os.path.isfile(os.path.join(root, "cgroup.procs")):
        root = "/sys/fs/cgroup"
    c = cluster(nodes=1, cpus=2, memory=2000, conf=SLURM_CONF,
                etc_files={"cgroup.conf": f"CgroupPlugin=cgroup/v2\nCgroupMountpoint={root}\n"
                                          "ConstrainDevices=yes\n"})
    marker = 910000 + os.getpid() % 10000
    job = c.sbatch([], f"#!/bin/bash\n(setsid sleep {marker} &)\nsleep 30\n")
    c.wait_job(job, "RUNNING", timeout=30)
    step_dirs = []

    def tracked():
        step_dirs[:] = glob.glob(f"{root}/shoal/n1_*/job_{job}/step_batch")
        if len(step_dirs) != 1:
            return False
        pids = open(os.path.join(step_dirs[0], "cgroup.procs")).read().split()
        return bool(daemon_pids(marker)) and all(
            str(p) in pids for p in daemon_pids(marker))

    wait_for(tracked, timeout=15, what="the job and its daemon in the v2 step cgroup")
    c.run(["scancel", str(job)])
    assert c.wait_job(job, timeout=30) == "CANCELLED"
    wait_for(lambda: not daemon_pids(marker), timeout=10, what="the daemon to die")
    job_dir = os.path.dirname(step_dirs[0])
    wait_for(lambda: not os.path.exists(job_dir), timeout=15, what=f"{job_dir} to go")
    wait_for(lambda: not leftover_cgroups(c, [root]), timeout=15, what="the node cgroup to go")
