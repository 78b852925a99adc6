"""Shoal's container images, built for real with podman from deploy/docker/Dockerfile on a
Debian base made by mmdebstrap (scripts/build-images.sh --prebuilt: the binaries of the build
tree, so CI compiles Shoal once): every target exists, every Shoal binary in it resolves all its
libraries, the worker has what jobs need (Open MPI with PMIx, runc), the login image's sshd and
sssd work, the entrypoint starts sssd from a mounted sssd.conf, and a controller container and a
worker container on the host network run a job end to end.

Skipped when podman is not installed, unless SHOAL_REQUIRE_IMAGES is set (CI), where that fails.
SHOAL_IMAGES_NO_BUILD=1 uses the images already built (localhost/shoal/<target>:<tag>) instead
of running build-images.sh; SHOAL_IMAGE_TAG picks the tag (default: the project version).
"""

import os
import re
import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SHOAL_BUILD_DIR", REPO / "build"))
if not BUILD.is_absolute():
    BUILD = REPO / BUILD
TARGETS = ["controller", "worker", "login", "restapi", "accounting", "operator"]
# What each image must carry of Shoal (the commands are /usr/bin/shoal and its links).
BINARIES = {
    "controller": ["/usr/sbin/shoalctld", "/usr/sbin/shoal-operator", "/usr/bin/shoal"],
    "worker": ["/usr/sbin/shoald", "/usr/sbin/shoal-stepd", "/usr/bin/shoal"],
    "login": ["/usr/sbin/shoalsackd", "/usr/bin/shoal"],
    "restapi": ["/usr/sbin/shoalrestd"],
    "accounting": ["/usr/sbin/shoaldbd"],
    "operator": ["/usr/sbin/shoal-operator"],
}
COMMANDS = ["sbatch", "srun", "salloc", "squeue", "sinfo", "scancel", "scontrol", "sacct"]
# runc fails here with podman's default nproc ulimit (32768), above this host's hard limit.
LIMITS = ["--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
# The PMIx library shoal-stepd dlopens for srun --mpi=pmix (pkg-config's libdir of pmix).
PMIX_LIB = "/usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2"

pytestmark = pytest.mark.timeout(3600)  # a cold build makes the base image and runs apt


def _version():
    m = re.search(r"^project\(shoal VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text(),
                  re.M)
    return m.group(1)


TAG = os.environ.get("SHOAL_IMAGE_TAG") or _version()


def image(target):
    return f"localhost/shoal/{target}:{TAG}"


def podman(*args, timeout=120, check=True):
    r = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, f"podman {' '.join(args)}: rc={r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def sh(target, script, check=True, timeout=120):
    """Runs a shell script in a throwaway container of target, as root, past the entrypoint."""
    return podman("run", "--rm", "--network", "host", *LIMITS, "--user", "0",
                  "--entrypoint", "/bin/sh", image(target), "-c", script, check=check,
                  timeout=timeout)


@pytest.fixture(scope="module")
def images():
    if shutil.which("podman") is None:
        msg = "podman is not installed (apt-get install podman, or run scripts/build-images.sh)"
        if os.environ.get("SHOAL_REQUIRE_IMAGES"):
            pytest.fail(msg)
        pytest.skip(msg)
    if not os.environ.get("SHOAL_IMAGES_NO_BUILD"):
        env = dict(os.environ, BUILD_DIR=str(BUILD))
        r = subprocess.run([str(REPO / "scripts" / "build-images.sh"), "--prebuilt", "--no-check",
                            "--tag", TAG], capture_output=True, text=True, env=env, timeout=3300)
        assert r.returncode == 0, f"build-images.sh failed:\n{r.stdout[-4000:]}\n{r.stderr[-8000:]}"
    return {t: image(t) for t in TARGETS}


def test_every_target_exists(images):
    for target, ref in images.items():
        r = podman("image", "inspect", "--format",
                   "{{index .Labels \"org.opencontainers.image.version\"}} {{.Size}}", ref)
        version, size = r.stdout.split()
        assert version == TAG, (target, version)
        assert int(size) < 1_000_000_000, (target, size)
    # The daemons that must not run as root in Kubernetes (runAsNonRoot) say so numerically.
    users = {t: podman("image", "inspect", "--format", "{{.Config.User}}", ref).stdout.strip()
             for t, ref in images.items()}
    assert users["controller"] == users["restapi"] == users["accounting"] == "401:401", users
    assert users["operator"] == "65532:65532", users
    assert users["worker"] == users["login"] == "", users


@pytest.mark.parametrize("target", TARGETS)
def test_every_shoal_binary_resolves_its_libraries(images, target):
    wanted = BINARIES[target] + (
        [PMIX_LIB] + [f"/usr/bin/{c}" for c in COMMANDS] if target == "worker" else [])
    script = "for f in " + " ".join(wanted) + r"""; do
  if [ ! -e "$f" ]; then echo "MISSING $f"; continue; fi
  echo "== $f"; ldd "$f" 2>&1 || true
done
for f in /usr/sbin/shoal*; do [ "$f" = /usr/sbin/shoal-entrypoint ] || { echo "== $f"; ldd "$f" 2>&1 || true; }; done
"""
    out = sh(target, script).stdout
    assert "MISSING" not in out, out
    assert "not found" not in out, out
    for f in BINARIES[target]:
        assert f"== {f}" in out, (f, out)


def test_daemons_answer_their_version(images):
    version = _version()
    for target, cmd in [("controller", "shoalctld -V"), ("controller", "shoal-operator --version"),
                        ("worker", "shoald --version"), ("worker", "sbatch --version"),
                        ("login", "squeue --version"), ("restapi", "shoalrestd -V"),
                        ("accounting", "shoaldbd -V"), ("operator", "shoal-operator --version")]:
        out = sh(target, cmd + " 2>&1").stdout
        assert version in out, (target, cmd, out)
    assert "Usage" in sh("login", "shoalsackd --help 2>&1").stdout


def test_worker_has_what_jobs_need(images):
    out = sh("worker", "mpirun --version; ompi_info --parsable | grep ':pmix:ext3x:'; runc --version;"
                       " ip -V; ps --version; bash --version | head -n1; sssd --version").stdout
    assert re.search(r"mpirun \(Open MPI\) 4\.\d+\.\d+", out), out
    assert re.search(r"^runc version 1\.\d+", out, re.M), out
    assert "iproute2" in out and "procps-ng" in out and "GNU bash" in out, out
    assert re.search(r"^2\.\d+\.\d+$", out, re.M), out  # sssd
    # Open MPI's PMIx support: its external-PMIx component (Debian's libpmix2), and the library
    # shoal-stepd loads for --mpi=pmix.
    assert "mca:pmix:ext3x:version" in out, out
    assert sh("worker", f"test -e {PMIX_LIB}").returncode == 0
    assert "mpi4py 3." in sh("worker", "python3 -c 'import mpi4py; print(\"mpi4py\", mpi4py.__version__)'").stdout
    # sshd: host keys are made per container (none baked into the image), then the config passes.
    assert sh("worker", "ls /etc/ssh/ssh_host_*_key 2>/dev/null | wc -l").stdout.strip() == "0"
    sh("worker", "ssh-keygen -A >/dev/null && sshd -t")
    # nsswitch asks SSSD after the files.
    assert re.search(r"^passwd:\s+files sss", sh("worker", "cat /etc/nsswitch.conf").stdout, re.M)


def test_login_sshd_and_sssd(images):
    sh("login", "ssh-keygen -A >/dev/null && sshd -t")
    out = sh("login", "sssd --version; for c in shoalsackd sbatch squeue; do command -v $c; done"
                      ).stdout
    assert re.search(r"^2\.\d+\.\d+$", out, re.M), out
    assert "/usr/sbin/shoalsackd" in out and "/usr/bin/sbatch" in out, out
    assert re.search(r"^passwd:\s+files sss", sh("login", "cat /etc/nsswitch.conf").stdout, re.M)


# An LDAP domain whose server is not there: sssd starts all the same (offline) and answers from
# the files first, as nsswitch.conf says (files sss).
SSSD_CONF = """[sssd]
services = nss, pam
domains = example

[domain/example]
id_provider = ldap
auth_provider = ldap
ldap_uri = ldap://127.0.0.1:9
ldap_search_base = dc=example,dc=org
ldap_id_use_start_tls = false
"""


@pytest.mark.parametrize("target", ["worker", "login"])
def test_entrypoint_starts_sssd_from_a_mounted_conf(images, target, tmp_path):
    """A ConfigMap/Secret mount cannot promise a root-owned 0600 file: the entrypoint copies
    /etc/sssd-mounted/sssd.conf to /etc/sssd/sssd.conf (0600) and starts sssd before the
    container's command, under tini."""
    mounted = tmp_path / "sssd"
    mounted.mkdir()
    (mounted / "sssd.conf").write_text(SSSD_CONF)
    (mounted / "sssd.conf").chmod(0o644)
    r = podman("run", "--rm", "--network", "host", *LIMITS,
               "-v", f"{mounted}:/etc/sssd-mounted:ro", image(target),
               "/bin/sh", "-c",
               "stat -c '%a %U' /etc/sssd/sssd.conf; sleep 2; pgrep -x sssd >/dev/null && echo sssd running;"
               " cat /proc/1/comm; getent passwd root", timeout=60)
    lines = r.stdout.split("\n")
    assert lines[0] == "600 root", r.stdout + r.stderr
    assert "sssd running" in r.stdout, r.stdout + r.stderr
    assert "tini" in r.stdout, r.stdout  # PID 1 stays tini
    assert "root:x:0:0:" in r.stdout, r.stdout
    assert "copied /etc/sssd-mounted/sssd.conf" in r.stderr, r.stderr
    # A config sssd rejects (no domain) stops the container instead of running without users.
    (mounted / "sssd.conf").write_text("[sssd]\nservices = nss\n")
    r = podman("run", "--rm", "--network", "host", *LIMITS,
               "-v", f"{mounted}:/etc/sssd-mounted:ro", image(target), "echo", "command ran",
               check=False, timeout=60)
    assert r.returncode != 0 and "command ran" not in r.stdout, r.stdout + r.stderr
    assert "sssd failed to start" in r.stderr, r.stderr
    # Without a conf nothing is started, and the command still runs.
    r = podman("run", "--rm", "--network", "host", *LIMITS, image(target), "/bin/sh", "-c",
               "pgrep -x sssd || echo none")
    assert r.stdout.strip() == "none", r.stdout


def _free_ports(n):
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


def test_controller_and_worker_containers_run_a_job(images, tmp_path):
    """The controller image (as user shoal, uid 401) and a worker image (root, privileged as the
    operator runs it) on the host network, configured by one slurm.conf and key: the worker
    registers, and a batch job submitted from inside the worker runs there and completes."""
    ctld_port, slurmd_port, node_port = _free_ports(3)
    run = uuid.uuid4().hex[:8]
    etc, state = tmp_path / "etc", tmp_path / "state"
    etc.mkdir()
    state.mkdir()
    node = f"img{run}"
    (etc / "slurm.conf").write_text(f"""ClusterName=imgtest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=shoal
StateSaveLocation=/var/spool/shoal/state
SlurmdSpoolDir=/var/spool/shoal/%n
SlurmdTimeout=30
ReturnToService=2
NodeName={node} NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Port={node_port}
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
""")
    key = etc / "slurm.key"
    key.write_bytes(os.urandom(32))
    # The controller reads the key as uid 401 (its image's user); the worker as root.
    os.chmod(etc, 0o755)
    os.chown(key, 401, 401)
    key.chmod(0o600)
    os.chown(state, 401, 401)
    ctld, worker = f"shoal-img-ctld-{run}", f"shoal-img-worker-{run}"
    try:
        podman("run", "-d", "--name", ctld, "--network", "host", *LIMITS,
               "-v", f"{etc}:/etc/slurm:ro", "-v", f"{state}:/var/spool/shoal/state",
               image("controller"), "shoalctld", "-D", "-f", "/etc/slurm/slurm.conf")
        podman("run", "-d", "--name", worker, "--network", "host", "--privileged", *LIMITS,
               "-v", f"{etc}:/etc/slurm:ro", image("worker"),
               "shoald", "-D", "-N", node, "-f", "/etc/slurm/slurm.conf")
        deadline = time.monotonic() + 60
        while True:
            r = podman("exec", worker, "sinfo", "-h", "-N", "-o", "%N %T", check=False)
            if r.returncode == 0 and re.search(rf"^{node} idle$", r.stdout, re.M):
                break
            assert time.monotonic() < deadline, (
                f"node never idle: {r.stdout}{r.stderr}\n"
                + podman("logs", ctld, check=False).stderr[-3000:]
                + podman("logs", worker, check=False).stderr[-3000:])
            time.sleep(0.5)
        r = podman("exec", worker, "sbatch", "--parsable", "-o", "/tmp/job-%j.out", "--wrap",
                   "echo host=$(hostname) node=$SLURMD_NODENAME job=$SLURM_JOB_ID; id -un")
        job = r.stdout.strip()
        assert job.isdigit(), r.stdout + r.stderr
        deadline = time.monotonic() + 60
        while True:
            r = podman("exec", worker, "scontrol", "show", "job", job, check=False)
            m = re.search(r"JobState=(\S+)", r.stdout)
            if m and m.group(1) not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
                break
            assert time.monotonic() < deadline, r.stdout + r.stderr
            time.sleep(0.5)
        assert m.group(1) == "COMPLETED", r.stdout
        assert "ExitCode=0:0" in r.stdout, r.stdout
        out = podman("exec", worker, "cat", f"/tmp/job-{job}.out").stdout
        assert f"node={node} job={job}" in out and "root" in out, out
    finally:
        for name in (worker, ctld):
            podman("rm", "-f", "-t", "5", name, check=False)
