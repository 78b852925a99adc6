"""GPUs on a node: gres.conf with File= of fake device files, AutoDetect=nvidia through a fake
nvidia-smi, the GPU environment of jobs and steps, --gpu-bind per task, and DCGM exporter's
GPU -> job mapping files (SlurmdParameters=gpu_job_map_dir=)."""

import os
import shutil
import time
from pathlib import Path

# The issue names ../shared/examples (next to the repository); the repository carries the same
# file in examples/, which serves where shared/ is not there (CI).
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = next((p for p in (REPO.parent / "shared" / "examples" / "gpu-check.sbatch",
                            REPO / "examples" / "gpu-check.sbatch") if p.is_file()))

FAKE_SMI = """#!/bin/bash
case "$*" in
  *--query-gpu*)
    for i in 0 1 2 3; do echo "$i, NVIDIA Fake GPU, GPU-0000000$i, 00000000:0$i:00.0"; done ;;
  -q*)
    for i in 0 1 2 3; do echo "GPU 00000000:0$i:00.0"; echo "    Minor Number : $i"; done ;;
  -L)
    for i in ${CUDA_VISIBLE_DEVICES//,/ }; do echo "GPU $i: NVIDIA Fake GPU (UUID: GPU-0000000$i)"; done ;;
esac
"""

HOLD = """#!/bin/bash
echo "CVD=$CUDA_VISIBLE_DEVICES JOB_GPUS=$SLURM_JOB_GPUS"
sleep 8
"""


def fake_devices(root):
    root.mkdir(parents=True, exist_ok=True)
    for i, minor in enumerate((3, 5, 7, 8)):  # /dev/null, zero, full, random
        os.mknod(root / f"gpu{i}", 0o666 | 0o020000, os.makedev(1, minor))
    return f"{root}/gpu[0-3]"


def env_of(text, key):
    for word in text.split():
        if word.startswith(key + "="):
            return word.split("=", 1)[1]
    return None


def check_two_jobs(c, mapdir):
    a = c.sbatch(["--gpus=1", "-w", "n1"], HOLD)
    b = c.sbatch(["--gpus=1", "-w", "n1"], HOLD)
    c.wait_job(a, "RUNNING", timeout=30)
    c.wait_job(b, "RUNNING", timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        files = {p.name: p.read_text().split() for p in mapdir.iterdir()} if mapdir.is_dir() else {}
        if sorted(sum(files.values(), [])) == sorted([str(a), str(b)]):
            break
        time.sleep(0.5)
    assert sorted(sum(files.values(), [])) == sorted([str(a), str(b)]), files
    assert len(files) == 2  # each job on its own GPU
    assert c.wait_job(a, timeout=60) == "COMPLETED"
    assert c.wait_job(b, timeout=60) == "COMPLETED"
    out_a = (c.work / f"slurm-{a}.out").read_text()
    out_b = (c.work / f"slurm-{b}.out").read_text()
    ga, gb = env_of(out_a, "JOB_GPUS"), env_of(out_b, "JOB_GPUS")
    assert ga and gb and ga != gb, (out_a, out_b)
    assert env_of(out_a, "CVD") == ga  # no ConstrainDevices: global ids
    assert {ga, gb} == {k for k, v in files.items() if v}
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(mapdir.iterdir()):
        time.sleep(0.5)
    assert not list(mapdir.iterdir()), "mapping files left after the jobs ended"


def test_gres_conf_files_env_map_and_gpu_bind(cluster, tmp_path):
    mapdir = tmp_path / "map"
    files = fake_devices(tmp_path / "dev")
    c = cluster(nodes=1, conf=["GresTypes=gpu", "NodeName=n1 Gres=gpu:4",
                               f"SlurmdParameters=gpu_job_map_dir={mapdir}"],
                etc_files={"gres.conf": f"NodeName=n1 Name=gpu File={files}\n"})
    check_two_jobs(c, mapdir)
    # srun -n2 with --gpu-bind: one GPU per task.
    r = c.run(["srun", "-n2", "--gpus=2", "--gpu-bind=single:1", "-l", "bash", "-c",
               "echo $CUDA_VISIBLE_DEVICES"])
    per_task = sorted(line.split(":", 1)[1].strip() for line in r.stdout.splitlines())
    assert len(per_task) == 2 and per_task[0] != per_task[1] and "," not in per_task[0], r.stdout
    r = c.run(["srun", "-n2", "--gpus=4", "--gpu-bind=map_gpu:3,1", "-l", "bash", "-c",
               "echo $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS"])
    lines = dict(line.split(": ", 1) for line in r.stdout.strip().splitlines())
    assert lines["0"].split() == ["3", "0,1,2,3"], r.stdout
    assert lines["1"].split() == ["1", "0,1,2,3"], r.stdout


def test_autodetect_nvidia_smi_and_example(cluster, tmp_path, monkeypatch):
    fakebin = tmp_path / "bin"
    fakebin.mkdir()
    smi = fakebin / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    os.chmod(tmp_path, 0o755)
    monkeypatch.setenv("PATH", f"{fakebin}:{os.environ['PATH']}")
    mapdir = tmp_path / "map"
    c = cluster(nodes=1, conf=["GresTypes=gpu", "NodeName=n1 Gres=gpu:4",
                               f"SlurmdParameters=gpu_job_map_dir={mapdir}"],
                etc_files={"gres.conf": "AutoDetect=nvidia\n"})
    log = "".join(p.read_text(errors="replace") for p in c.log_dir.iterdir())
    assert "AutoDetect=nvidia" in log
    check_two_jobs(c, mapdir)
    shutil.copy(EXAMPLE, c.work / "gpu-check.sbatch")
    r = c.run(["sbatch", "--parsable", "gpu-check.sbatch"], cwd=c.work)
    job = int(r.stdout.strip().split(";")[0])
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    out = (c.work / f"gpu-check-{job}.out").read_text()
    assert "SLURM_JOB_GPUS=" in out and "unset" not in out, out
    assert "NVIDIA Fake GPU" in out, out
