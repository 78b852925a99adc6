"""The umbrella command: shoal start/stop/keygen/version and its errors."""

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import BIN, SHOAL, processes_mentioning


def shoal(*args, env=None, timeout=60):
    return subprocess.run([str(SHOAL), *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout)


@pytest.fixture
def cluster_dir():
    d = Path(tempfile.mkdtemp(prefix="shoal-cmd-", dir="/tmp"))
    yield d
    shoal("stop", "--dir", d)
    assert processes_mentioning(str(d)) == []
    subprocess.run(["rm", "-rf", str(d)])


def test_help_and_version():
    r = shoal("--help")
    assert r.returncode == 0
    assert "shoal start" in r.stdout and "shoal stop" in r.stdout
    r = shoal("version")
    assert r.returncode == 0
    assert re.fullmatch(r"shoal \d+\.\d+\.\d+\S*\n", r.stdout)


@pytest.mark.parametrize("args,message", [
    (["frobnicate"], "unknown command 'frobnicate'"),
    (["start", "--nodes", "abc"], "invalid --nodes 'abc'"),
    (["start", "--nodes", "0"], "invalid --nodes '0'"),
    (["start", "--nodes"], "option '--nodes' requires an argument"),
    (["start", "--bogus"], "unrecognized option '--bogus'"),
    (["start", "--conf", "NotKeyValue"], "expected Key=Value, got"),
    (["start", "--"], "no command after --"),
    (["stop", "--bogus"], "unrecognized option '--bogus'"),
    (["keygen"], "usage: shoal keygen PATH"),
])
def test_bad_usage(args, message):
    r = shoal(*args)
    assert r.returncode == 1
    assert r.stderr.startswith("shoal: error: ")
    assert message in r.stderr


def test_no_arguments_prints_usage():
    r = shoal()
    assert r.returncode == 1
    assert "Usage: shoal" in r.stderr


def test_keygen(tmp_path):
    key = tmp_path / "k"
    assert shoal("keygen", key).returncode == 0
    assert key.stat().st_mode & 0o777 == 0o600
    assert len(key.read_bytes()) == 32
    first = key.read_bytes()
    r = shoal("keygen", key)
    assert r.returncode == 1 and r.stderr.startswith("shoal: error: ")
    assert key.read_bytes() == first, "keygen must never overwrite a key"


def test_start_stop(cluster_dir):
    d = cluster_dir
    r = shoal("start", "--nodes", 2, "--dir", d, "--cpus", 3, "--memory", 1500,
              "--conf", "MinJobAge=100", "--conf", "NodeName=n2 NodeAddr=127.0.0.1 CPUs=5")
    assert r.returncode == 0, r.stderr
    assert f"export SLURM_CONF={d}/etc/slurm.conf PATH={BIN}:$PATH" in r.stdout

    conf = (d / "etc" / "slurm.conf").read_text()
    assert "MinJobAge=100" in conf and "MinJobAge=300" not in conf
    assert re.search(r"^NodeName=n1 NodeAddr=127.0.0.1 CPUs=3 RealMemory=1500 Port=\d+$", conf,
                     re.M)
    assert re.search(r"^SlurmctldPort=\d+$", conf, re.M)
    assert "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" in conf
    # A NodeName= line for a generated node changes its keys and keeps the rest (the port).
    n2 = re.findall(r"^NodeName=n2.*$", conf, re.M)
    assert len(n2) == 1
    assert re.fullmatch(r"NodeName=n2 NodeAddr=127.0.0.1 CPUs=5 RealMemory=1500 Port=\d+", n2[0])
    key = d / "etc" / "slurm.key"
    assert key.stat().st_mode & 0o777 == 0o600
    pids = {p.stem: int(p.read_text()) for p in (d / "run").glob("*.pid")}
    assert set(pids) == {"shoaldbd", "shoalctld", "shoalrestd", "n1", "n2"}
    assert re.search(r"REST API \(shoalrestd\): http://127\.0\.0\.1:\d+, unix:" + re.escape(str(d)),
                     r.stdout), r.stdout

    r = shoal("start", "--nodes", 1, "--dir", d)
    assert r.returncode == 1 and "already running" in r.stderr

    r = shoal("stop", "--dir", d)
    assert r.returncode == 0, r.stderr
    for pid in pids.values():
        assert not Path(f"/proc/{pid}/cmdline").exists() or \
            Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z"
    assert list((d / "run").glob("*.pid")) == []
    # Stopping again is harmless.
    assert shoal("stop", "--dir", d).returncode == 0


def test_start_runs_command_and_stops(cluster_dir):
    d = cluster_dir
    env = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    r = shoal("start", "--nodes", 2, "--dir", d, "--",
              "bash", "-c", 'echo "conf=$SLURM_CONF"; command -v sbatch; sinfo -h -o %D; exit 7',
              env=env)
    assert r.returncode == 7, r.stderr
    lines = r.stdout.splitlines()
    assert f"conf={d}/etc/slurm.conf" in lines
    assert f"{BIN}/sbatch" in lines
    assert "2" in lines
    assert processes_mentioning(str(d)) == []


def test_start_fails_clearly_on_bad_conf(cluster_dir):
    r = shoal("start", "--nodes", 1, "--dir", cluster_dir, "--conf", "NodeName=n1 CPUs=lots")
    assert r.returncode == 1
    assert "slurm.conf:" in r.stderr
    assert processes_mentioning(str(cluster_dir)) == []


def test_default_dir_from_environment(cluster_dir):
    env = dict(os.environ, SHOAL_DIR=str(cluster_dir))
    r = shoal("start", "--nodes", 1, env=env)
    assert r.returncode == 0, r.stderr
    assert (cluster_dir / "etc" / "slurm.conf").exists()
    assert shoal("stop", env=env).returncode == 0
    assert processes_mentioning(str(cluster_dir)) == []
