"""Fixtures for Shoal's integration tests: real daemons on loopback, started with `shoal start`.

`cluster(nodes=4, conf=[...])` starts a cluster in a fresh directory under /tmp and returns a
Cluster; every cluster a test starts is stopped afterwards, and the test fails if any process of
the cluster outlives `shoal stop`. `users` creates the unprivileged users shoaltest1 and
shoaltest2 once per session. Binaries come from $SHOAL_BUILD_DIR (default: build/).
"""

import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from mariadb import MariaDB

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SHOAL_BUILD_DIR", REPO / "build")).resolve()
BIN = BUILD / "bin"
SBIN = BUILD / "sbin"
SHOAL = BIN / "shoal"
EXAMPLES = REPO / "examples"

# Hermetic against the host: every Shoal command and daemon of the suite gets its configuration
# from its test's cluster directory, never from the host's Slurm (/etc/slurm, Slurm's commands in
# /usr/bin, its ports) nor from the caller's shell (a SLURM_CONF exported for a cluster kept by
# hand, the SLURM_* of an allocation the suite runs in). What a test starts inherits this
# environment, so the caller's Slurm variables go here, once; Cluster.env adds the cluster's.
SLURM_ENV_PREFIXES = ("SLURM_", "SBATCH_", "SQUEUE_", "SINFO_", "SCANCEL_", "SCONTROL_",
                      "SALLOC_", "SRUN_", "SLURMD_", "SACCT_")
for _k in [k for k in os.environ if k.startswith(SLURM_ENV_PREFIXES)]:
    del os.environ[_k]

TEST_USERS = ("shoaltest1", "shoaltest2")
# ASan, LSan and MSan report an ERROR; TSan reports a data race as a WARNING.
SANITIZER_REPORT = re.compile(
    r"(ERROR|WARNING): (Address|Leak|Thread|Memory)Sanitizer|: runtime error: ")
ACTIVE_STATES = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "REQUEUED",
                 "RESIZING", "SIGNALING", "STAGE_OUT"}
FINISHED_STATES = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                   "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY"}


# ------------------------------------------------------------------------------------------
# Processes
# ------------------------------------------------------------------------------------------

def http_status(port, path):
    """The HTTP status of GET http://127.0.0.1:port/path (None when nothing answers)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def shoal_metric(c, name, fresh=False):
    """The value of gauge `name` in cluster `c`'s /metrics/shoal (MetricsType must be set), an
    int when it is whole.
    The controller keeps that text for a second (kMetricsCacheMs): `fresh` waits it out, for a
    value as of now rather than as of up to a second ago."""
    if fresh:
        time.sleep(1.1)
    url = f"http://127.0.0.1:{c.controller_port()}/metrics/shoal"
    with urllib.request.urlopen(url, timeout=10) as r:
        text = r.read().decode()
    m = re.search(rf"^{re.escape(name)} (\S+)", text, re.M)
    assert m, f"no {name} in /metrics/shoal:\n{text[:500]}"
    value = float(m.group(1))
    return int(value) if value.is_integer() else value


def pid_alive(pid):
    """True while `pid` runs; a zombie counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def wait_until(predicate, timeout, what, interval=0.05):
    """Polls `predicate` until it returns something truthy; fails the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


HOST_SLURM_ETC = Path("/etc/slurm")


def with_own_etc_slurm(argv, etc=None):
    """The argv that runs `argv` in a mount namespace of its own whose /etc/slurm is the
    directory `etc`, or an empty one: a Shoal command or daemon that looks in /etc/slurm (Slurm's
    default place, where a host with Slurm installed has its slurm.conf) finds what the test put
    there, never the host's. The command keeps the pid of the process started (unshare and sh
    exec it). Where the host has no /etc/slurm there is nothing to hide and `argv` is run as is."""
    argv = [str(a) for a in argv]
    if not HOST_SLURM_ETC.is_dir():
        return argv
    mount = (f"mount --bind {shlex.quote(str(etc))} {HOST_SLURM_ETC}" if etc is not None
             else f"mount -t tmpfs -o mode=0755,size=1m shoal-test {HOST_SLURM_ETC}")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'{mount} || exit 126; exec "$@"', "sh", *argv]


def processes_mentioning(text):
    """Pids whose command line contains `text` (other than this process)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and pid_alive(int(entry)):
            found.append((int(entry), cmdline.strip()))
    return found


def session_members(sid):
    """Pids (alive, not zombies) whose session id is `sid`."""
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if fields[0] not in "ZX" and int(fields[3]) == sid:
            members.append(int(entry))
    return members


def parse_kv(text):
    """scontrol show's Key=Value layout as a dict (values up to the next blank)."""
    return dict(re.findall(r"([A-Za-z][\w/:]*)=(\S*)", text))


# ------------------------------------------------------------------------------------------
# Users
# ------------------------------------------------------------------------------------------

class User:
    def __init__(self, name):
        pw = pwd.getpwnam(name)
        self.name = name
        self.uid = pw.pw_uid
        self.gid = pw.pw_gid
        self.home = Path(pw.pw_dir)

    def __repr__(self):
        return f"User({self.name}, uid={self.uid})"


@pytest.fixture(scope="session")
def users():
    """The unprivileged test users, created once (useradd -m); a dict name -> User."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create the test users")
    out = {}
    for name in TEST_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], check=True,
                           capture_output=True)
        user = User(name)
        user.home.mkdir(parents=True, exist_ok=True)
        os.chown(user.home, user.uid, user.gid)
        os.chmod(user.home, 0o755)
        out[name] = user
    return out


# ------------------------------------------------------------------------------------------
# The cluster
# ------------------------------------------------------------------------------------------

class Cluster:
    """One `shoal start` cluster in its own directory."""

    def __init__(self, nodes, conf, cpus, memory, timeout, dbd_conf=(), accounting=True):
        self.nodes = nodes
        self.node_names = [f"n{i}" for i in range(1, nodes + 1)]
        self.dir = Path(tempfile.mkdtemp(prefix="shoal-it-", dir="/tmp"))
        os.chmod(self.dir, 0o755)  # users reach slurm.conf and the auth socket through it
        self.conf_path = self.dir / "etc" / "slurm.conf"
        self.key_path = self.dir / "etc" / "slurm.key"
        self.log_dir = self.dir / "log"
        self.work = self.dir / "work"  # root's submit directory
        self._conf = list(conf)
        self._dbd_conf = list(dbd_conf)
        self._accounting = accounting
        self.dbd_conf_path = self.dir / "etc" / "slurmdbd.conf"
        self._cpus = cpus
        self._memory = memory
        self._timeout = timeout
        self._children = []  # daemons restarted by the test: ours to reap
        self._scripts = 0
        self.env = self._make_env()

    def _make_env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith(SLURM_ENV_PREFIXES)}
        env["SLURM_CONF"] = str(self.conf_path)
        env["PATH"] = f"{BIN}:{env.get('PATH', '/usr/bin:/bin')}"
        return env

    # --- life cycle ------------------------------------------------------------------------

    def start(self):
        cmd = [str(SHOAL), "start", "--nodes", str(self.nodes), "--dir", str(self.dir),
               "--timeout", str(self._timeout)]
        if self._cpus:
            cmd += ["--cpus", str(self._cpus)]
        if self._memory:
            cmd += ["--memory", str(self._memory)]
        for line in self._conf:
            cmd += ["--conf", line]
        for line in self._dbd_conf:
            cmd += ["--dbd-conf", line]
        if not self._accounting:
            cmd += ["--no-accounting"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=self._timeout + 30)
        if r.returncode != 0:
            pytest.fail(f"shoal start failed (rc={r.returncode}):\n{r.stdout}\n{r.stderr}\n"
                        f"{self.logs_tail()}")
        self.work.mkdir(exist_ok=True)
        os.chmod(self.work, 0o755)
        return self

    def stop(self):
        r = subprocess.run([str(SHOAL), "stop", "--dir", str(self.dir)], capture_output=True,
                           text=True, timeout=60)
        for child in self._children:
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        self._children.clear()
        return r

    def leftover_processes(self):
        return processes_mentioning(str(self.dir))

    def sanitizer_reports(self):
        """Lines of ASan/UBSan/LSan/TSan reports in the daemons' logs (sanitizer builds)."""
        found = []
        if self.log_dir.is_dir():
            for path in sorted(self.log_dir.iterdir()):
                for line in path.read_text(errors="replace").splitlines():
                    if SANITIZER_REPORT.search(line):
                        found.append(f"{path.name}: {line}")
        return found

    def logs_tail(self, lines=40):
        out = []
        if self.log_dir.is_dir():
            for path in sorted(self.log_dir.iterdir()):
                text = path.read_text(errors="replace").splitlines()
                out.append(f"--- {path} (last {lines} lines)")
                out.extend(text[-lines:])
        return "\n".join(out)

    # --- commands --------------------------------------------------------------------------

    def run(self, cmd, user=None, check=True, input=None, cwd=None, timeout=60, env=None):
        """Runs a command (a list, or a string for bash -c) with the cluster's environment, as
        root or as `user` (a User), in `cwd` (default: the user's home, or root's work dir).
        With check=True a non-zero exit fails the test, showing the output."""
        if isinstance(cmd, str):
            cmd = ["bash", "-c", cmd]
        run_env = dict(self.env)
        if env:
            run_env.update(env)
        kwargs = {}
        if user is not None:
            run_env.update(HOME=str(user.home), USER=user.name, LOGNAME=user.name)
            kwargs = dict(user=user.uid, group=user.gid, extra_groups=[])
            cwd = cwd or user.home
        cwd = cwd or self.work
        r = subprocess.run([str(c) for c in cmd], capture_output=True, text=True,
                           encoding="utf-8", errors="backslashreplace", input=input, cwd=cwd,
                           env=run_env, timeout=timeout, **kwargs)
        if check and r.returncode != 0:
            who = user.name if user else "root"
            pytest.fail(f"command failed as {who} (rc={r.returncode}): {cmd}\n"
                        f"stdout: {r.stdout}\nstderr: {r.stderr}")
        return r

    def write_script(self, directory, name, text, user=None):
        path = Path(directory) / name
        path.write_text(text)
        if user is not None:
            os.chown(path, user.uid, user.gid)
        return path

    def sbatch(self, args=(), script=None, user=None, cwd=None):
        """Submits and returns the job id. `script` is the script's text: it is written to a
        file in the submit directory, which is passed last."""
        args = [str(a) for a in args]
        if script is not None:
            self._scripts += 1
            directory = Path(cwd or (user.home if user else self.work))
            path = self.write_script(directory, f"job-{self._scripts}.sh", script, user)
            args.append(str(path))
        r = self.run(["sbatch", *args], user=user, cwd=cwd)
        m = re.search(r"Submitted batch job (\d+)", r.stdout)
        if not m:
            pytest.fail(f"sbatch {list(args)} printed no job id:\n{r.stdout}\n{r.stderr}")
        return int(m.group(1))

    def show_job(self, job_id):
        """scontrol show job as a dict, or None when the controller does not know the job."""
        r = self.run(["scontrol", "show", "job", str(job_id)], check=False)
        if r.returncode != 0 or "JobId=" not in r.stdout:
            return None
        return parse_kv(r.stdout)

    def job_state(self, job_id):
        job = self.show_job(job_id)
        if job is None:
            return None
        return job.get("JobState")

    def wait_job(self, job_id, states=FINISHED_STATES, timeout=60):
        """Waits until the job's state is one of `states` (a name or a set); returns it."""
        if isinstance(states, str):
            states = {states}
        last = {}

        def reached():
            last["state"] = self.job_state(job_id)
            return last["state"] in states

        deadline = time.monotonic() + timeout
        while not reached():
            if time.monotonic() >= deadline:
                r = self.run(["scontrol", "show", "job", str(job_id)], check=False)
                pytest.fail(f"job {job_id} is {last['state']}, not {sorted(states)}, after "
                            f"{timeout}s:\n{r.stdout}{r.stderr}")
            time.sleep(0.1)
        return last["state"]

    def node_state(self, name):
        """sinfo's compact state of one node, e.g. 'idle', 'alloc', 'down*'."""
        r = self.run(["sinfo", "-h", "-n", name, "-o", "%t"], check=False)
        return r.stdout.strip() if r.returncode == 0 else None

    def controller_port(self):
        m = re.search(r"^SlurmctldPort=(\d+)", self.conf_path.read_text(), re.M)
        return int(m.group(1))

    # --- daemons, for fault tests ------------------------------------------------------------

    def pid(self, name):
        path = self.dir / "run" / f"{name}.pid"
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            return None

    def _kill(self, name, sig):
        pid = self.pid(name)
        assert pid and pid_alive(pid), f"{name} is not running"
        os.kill(pid, sig)
        wait_until(lambda: not pid_alive(pid), 15, f"{name} (pid {pid}) to exit")
        for child in list(self._children):
            if child.pid == pid:
                child.wait()
                self._children.remove(child)

    def _spawn(self, name, argv):
        log = open(self.log_dir / f"{name}.out", "ab")
        child = subprocess.Popen([str(a) for a in argv], stdin=subprocess.DEVNULL, stdout=log,
                                 stderr=subprocess.STDOUT, start_new_session=True,
                                 env=self.env)
        log.close()
        self._children.append(child)
        (self.dir / "run" / f"{name}.pid").write_text(f"{child.pid}\n")
        return child

    def kill_controller(self, sig=signal.SIGKILL):
        self._kill("shoalctld", sig)

    def start_controller(self, timeout=30):
        self._spawn("shoalctld", [SBIN / "shoalctld", "-D", "-f", self.conf_path])
        wait_until(lambda: self.run(["squeue", "-h"], check=False).returncode == 0, timeout,
                   "the controller to answer")

    def kill_dbd(self, sig=signal.SIGKILL):
        self._kill("shoaldbd", sig)

    def start_dbd(self, timeout=30):
        self._spawn("shoaldbd", [SBIN / "shoaldbd", "-D", "-f", self.dbd_conf_path])
        wait_until(lambda: self.run(["sacctmgr", "-n", "show", "cluster"],
                                    check=False).returncode == 0, timeout,
                   "the accounting daemon to answer")

    def kill_node(self, name, sig=signal.SIGKILL):
        self._kill(name, sig)

    def start_node(self, name, timeout=30, wait_responding=True):
        self._spawn(name, [SBIN / "shoald", "-D", "-f", self.conf_path, "-N", name])
        if wait_responding:
            def responding():
                state = self.node_state(name)
                return state and not state.endswith("*") and not state.startswith("down")
            wait_until(responding, timeout, f"node {name} to respond")

    def stepd_pid(self, node, job_id):
        path = self.dir / "spool" / node / f"job{job_id}" / "stepd.pid"
        try:
            return int(path.read_text().strip())
        except (OSError, ValueError):
            return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    setattr(item, "rep_" + report.when, report)


def _check_binaries():
    missing = [str(p) for p in (SHOAL, SBIN / "shoalctld", SBIN / "shoald", SBIN / "shoal-stepd")
               if not os.access(p, os.X_OK)]
    if missing:
        pytest.fail("not built: " + ", ".join(missing) + " (run scripts/setup.sh)")


@pytest.fixture
def cluster(request):
    """Factory: cluster(nodes=4, conf=["SlurmdTimeout=5"], cpus=None, memory=None,
    etc_files={"topology.conf": "..."})."""
    if os.geteuid() != 0:
        pytest.skip("integration tests run as root (jobs run as other users)")
    _check_binaries()
    created = []

    def make(nodes=4, conf=(), cpus=None, memory=None, timeout=30, etc_files=None, dbd_conf=(),
             accounting=True):
        c = Cluster(nodes, conf, cpus, memory, timeout, dbd_conf, accounting)
        created.append(c)
        # Files next to slurm.conf (topology.conf, ...): there before the daemons read them.
        for name, text in (etc_files or {}).items():
            (c.dir / "etc").mkdir(exist_ok=True)
            path = c.dir / "etc" / name
            if isinstance(text, bytes):  # a key: private, as the daemons insist
                path.write_bytes(text)
                os.chmod(path, 0o600)
            else:
                path.write_text(text)
        return c.start()

    yield make

    failed = getattr(request.node, "rep_call", None) is not None and request.node.rep_call.failed
    leaks = []
    reports = []
    for c in created:
        if failed:
            print(f"\n=== logs of the cluster in {c.dir}\n{c.logs_tail()}")
        c.stop()
        reports += c.sanitizer_reports()
        left = c.leftover_processes()
        if left:
            leaks.append((c.dir, left))
            for pid, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if os.environ.get("SHOAL_KEEP_DIRS"):
            print(f"kept {c.dir}")
        else:
            shutil.rmtree(c.dir, ignore_errors=True)
    assert not leaks, f"processes outlived `shoal stop`: {leaks}"
    assert not reports, "sanitizer reports in the daemons' logs:\n" + "\n".join(reports[:20])


@pytest.fixture
def submit_dir(request, users):
    """factory: submit_dir(user) -> a fresh directory owned by `user` in its home."""
    made = []

    def make(user):
        d = Path(tempfile.mkdtemp(prefix=f"{request.node.name[:40]}-", dir=user.home))
        os.chown(d, user.uid, user.gid)
        os.chmod(d, 0o755)
        made.append(d)
        return d

    yield make
    for d in made:
        shutil.rmtree(d, ignore_errors=True)


# --- a MariaDB server for the accounting tests --------------------------------------------

MARIADB_BIN = shutil.which("mariadbd") or (
    "/usr/sbin/mariadbd" if os.access("/usr/sbin/mariadbd", os.X_OK) else None)


@pytest.fixture(scope="module")
def mariadb(tmp_path_factory):
    """One MariaDB server for the module, on a unix socket and a loopback port."""
    if MARIADB_BIN is None:
        if os.environ.get("SHOAL_REQUIRE_MARIADB") == "1":
            pytest.fail("SHOAL_REQUIRE_MARIADB=1 but mariadbd is not installed")
        pytest.skip("mariadbd is not installed (scripts/setup.sh installs mariadb-server)")
    server = MariaDB(tmp_path_factory.mktemp("mariadb"))
    server.start()
    yield server
    server.stop()


def dbd_conf_for(backend, mariadb, name):
    """shoaldbd configuration lines for the backend: SQLite (the default) or `mariadb`'s server
    with database `name`."""
    if backend == "sqlite":
        return []
    return [f"StorageType=accounting_storage/mysql StorageHost={mariadb.socket} "
            f"StorageUser=shoal StoragePass=shoal StorageLoc={name}"]
