"""`cmake --install` puts every command in PREFIX/bin under its Slurm name and the daemons in
PREFIX/sbin, and the installed binaries work from there."""

import subprocess

from conftest import BUILD


def test_install_layout(tmp_path):
    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(tmp_path)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for cmd in ["sbatch", "squeue", "sinfo", "scancel", "scontrol", "shoal"]:
        path = tmp_path / "bin" / cmd
        assert path.exists(), cmd
        v = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=30)
        assert v.returncode == 0 and "shoal" in v.stdout, (cmd, v.stdout, v.stderr)
    for daemon in ["shoalctld", "shoald", "shoal-stepd"]:
        assert (tmp_path / "sbin" / daemon).exists(), daemon
