"""Task binding beyond srun --cpu-bind: the batch script's --cpu-bind / --hint with Slurm's
verbose lines (taskset agrees), srun/sbatch --mem-bind applied with set_mempolicy(2)
(/proc/self/numa_maps shows the policy), an impossible NUMA node refused, and sbatch --gpu-bind
applied to the batch script and inherited by its steps (SLURM_GPU_BIND)."""

import os
import re

CONF = ["TaskPlugin=task/affinity"]


def line_re(what, kind, mask):
    return re.compile(rf"^{what}={kind} - n1, task  0  0 \[(\d+)\]: mask {mask} set$", re.M)


def test_batch_cpu_bind_and_hint(cluster):
    c = cluster(nodes=1, cpus=2, conf=CONF)
    job = c.sbatch(["--cpu-bind=verbose,map_cpu:1"], "#!/bin/bash\ntaskset -p $$\n")
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    out = (c.work / f"slurm-{job}.out").read_text()
    m = line_re("cpu-bind", "MASK", "0x2").search(out)
    assert m, out
    assert re.search(r"current affinity mask: 2$", out, re.M), out
    # --hint=compute_bound binds the script to its core (one CPU here); verbose shows it.
    job = c.sbatch(["--hint=compute_bound", "--cpu-bind=verbose"],
                   "#!/bin/bash\necho hint=$SLURM_HINT\ntaskset -p $$\n")
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    out = (c.work / f"slurm-{job}.out").read_text()
    m = re.search(r"^cpu-bind=MASK - n1, task  0  0 \[\d+\]: mask 0x(\d) set$", out, re.M)
    assert m, out
    assert re.search(rf"current affinity mask: {m.group(1)}$", out, re.M), out
    assert "hint=compute_bound" in out, out
    # srun tasks print the same line (task ids and pid of each task).
    r = c.run(["srun", "-n2", "--cpu-bind=verbose,map_cpu:1,0", "bash", "-c", "taskset -p $$"])
    for task, mask in ((0, "0x2"), (1, "0x1")):
        m = re.search(rf"^cpu-bind=MASK - n1, task  {task}  {task} \[(\d+)\]: mask {mask} set$",
                      r.stderr, re.M)
        assert m, r.stderr
        assert re.search(rf"^pid {m.group(1)}'s current affinity mask: {mask[2:]}$", r.stdout,
                         re.M), r.stdout
    r = c.run(["sbatch", "--hint=fast", "--wrap", "true"], check=False)
    assert r.returncode != 0
    assert 'sbatch: error: unrecognized --hint argument "fast", see --hint=help' in r.stderr


def test_mem_bind(cluster):
    c = cluster(nodes=1, cpus=2, conf=CONF)
    r = c.run(["srun", "--mem-bind=verbose,local", "grep", "-c", " local ", "/proc/self/numa_maps"])
    assert line_re("mem-bind", "LOCAL", "0x1").search(r.stderr), r.stderr
    assert int(r.stdout.strip()) > 0, r.stdout
    r = c.run(["srun", "--mem-bind=map_mem:0", "bash", "-c",
               "echo $SLURM_MEM_BIND_TYPE; grep -c ' bind:0 ' /proc/self/numa_maps"])
    kind, count = r.stdout.split()
    assert kind == "map_mem:" and int(count) > 0, r.stdout
    # A NUMA node this host does not have: the task does not run.
    r = c.run(["srun", "--mem-bind=map_mem:7", "echo", "ran"], check=False)
    assert r.returncode != 0 and "ran" not in r.stdout, (r.stdout, r.stderr)
    assert "--mem-bind" in r.stderr and "0x80" in r.stderr, r.stderr
    # salloc's binding options reach the steps of its allocation.
    r = c.run(["salloc", "--mem-bind=verbose,local", "--hint=compute_bound", "srun",
               "--cpu-bind=verbose", "true"])
    assert line_re("mem-bind", "LOCAL", "0x1").search(r.stderr), r.stderr
    assert re.search(r"^cpu-bind=MASK - n1, task  0  0 \[\d+\]: mask 0x\d set$", r.stderr,
                     re.M), r.stderr
    r = c.run(["srun", "--mem-bind=sideways", "true"], check=False)
    assert r.returncode != 0
    assert 'srun: error: unrecognized --mem-bind argument "sideways"' in r.stderr, r.stderr
    # sbatch: the script itself is bound, and says so.
    job = c.sbatch(["--mem-bind=verbose,map_mem:0"],
                   "#!/bin/bash\necho type=$SBATCH_MEM_BIND_TYPE\n"
                   "grep -c ' bind:0 ' /proc/self/numa_maps\n")
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    out = (c.work / f"slurm-{job}.out").read_text()
    assert line_re("mem-bind", "MAP", "0x1").search(out), out
    assert "type=map_mem:" in out, out
    assert re.search(r"^[1-9]\d*$", out, re.M), out


def test_sbatch_gpu_bind_inherited(cluster, tmp_path):
    root = tmp_path / "dev"
    root.mkdir()
    os.chmod(tmp_path, 0o755)
    for i, minor in enumerate((3, 5, 7, 8)):
        os.mknod(root / f"gpu{i}", 0o666 | 0o020000, os.makedev(1, minor))
    c = cluster(nodes=1, conf=CONF + ["GresTypes=gpu", "NodeName=n1 Gres=gpu:4"],
                etc_files={"gres.conf": f"NodeName=n1 Name=gpu File={root}/gpu[0-3]\n"})
    # As in Slurm, GPU binding does not narrow a single task (the batch script); its steps
    # inherit --gpu-bind through SLURM_GPU_BIND.
    job = c.sbatch(["-n2", "--gpus=4", "--gpu-bind=map_gpu:2,0"],
                   "#!/bin/bash\necho batch=$CUDA_VISIBLE_DEVICES bind=$SLURM_GPU_BIND\n"
                   "srun -n2 -l bash -c 'echo step=$CUDA_VISIBLE_DEVICES'\n")
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    out = (c.work / f"slurm-{job}.out").read_text()
    assert "batch=0,1,2,3 bind=map_gpu:2,0" in out, out
    assert re.search(r"^0: step=2$", out, re.M) and re.search(r"^1: step=0$", out, re.M), out
    r = c.run(["sbatch", "--gpu-bind=nearest", "--wrap", "true"], check=False)
    assert r.returncode != 0
    assert "sbatch: error: Invalid --gpu-bind argument: gpu:nearest" in r.stderr, r.stderr
