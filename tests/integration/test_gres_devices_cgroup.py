"""ConstrainDevices end to end: four fake GPUs (character devices with the numbers of /dev/null,
zero, full and random) listed in gres.conf; a --gpus=1 job may open its own device file only
(the others give EPERM through the devices cgroup, v1 and v2) and sees CUDA_VISIBLE_DEVICES=0
(ids local to the job, as Slurm does with ConstrainDevices)."""

import os
import re

SLURM_CONF = ["TaskPlugin=task/affinity,task/cgroup", "ProctrackType=proctrack/cgroup",
              "GresTypes=gpu", "NodeName=n1 Gres=gpu:4"]

PROBE = """#!/bin/bash
echo "CVD=$CUDA_VISIBLE_DEVICES JOB_GPUS=$SLURM_JOB_GPUS"
for i in 0 1 2 3; do
  if exec 3<{root}/gpu$i 2>/dev/null; then echo "gpu$i=open"; exec 3<&-
  else echo "gpu$i=denied"; fi
done
python3 -c "
import errno, os
for i in range(4):
    try:
        os.close(os.open('{root}/gpu%d' % i, os.O_RDONLY)); print('py%d=ok' % i)
    except OSError as e:
        print('py%d=%s' % (i, errno.errorcode[e.errno]))
"
"""


def fake_devices(root):
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    for i, minor in enumerate((3, 5, 7, 8)):
        os.mknod(root / f"gpu{i}", 0o666 | 0o020000, os.makedev(1, minor))
    return f"{root}/gpu[0-3]"


def run_probe(c, root):
    job = c.sbatch(["--gpus=1", "-w", "n1"], PROBE.format(root=root))
    assert c.wait_job(job, timeout=60) == "COMPLETED"
    out = (c.work / f"slurm-{job}.out").read_text()
    m = re.search(r"JOB_GPUS=(\d+)", out)
    assert m, out
    mine = int(m.group(1))
    assert "CVD=0 " in out, out  # local id with ConstrainDevices
    for i in range(4):
        if i == mine:
            assert f"gpu{i}=open" in out and f"py{i}=ok" in out, out
        else:
            assert f"gpu{i}=denied" in out and f"py{i}=EPERM" in out, out
    # A step inside the allocation is constrained the same way.
    r = c.run(["srun", "--gpus=1", "-n1", "python3", "-c",
               "import errno, os\n"
               "for i in range(4):\n"
               "    try:\n"
               f"        os.close(os.open('{root}/gpu%d' % i, os.O_RDONLY)); print(i, 'ok')\n"
               "    except OSError as e:\n"
               "        print(i, errno.errorcode[e.errno])\n"])
    results = dict(line.split() for line in r.stdout.strip().splitlines())
    assert sorted(results.values()) == ["EPERM", "EPERM", "EPERM", "ok"], r.stdout


def test_constrain_devices_v1(cluster, tmp_path):
    root = tmp_path / "dev"
    files = fake_devices(root)
    c = cluster(nodes=1, cpus=2, memory=2000, conf=SLURM_CONF,
                etc_files={"gres.conf": f"NodeName=n1 Name=gpu File={files}\n",
                           "cgroup.conf": "CgroupPlugin=cgroup/v1\nConstrainDevices=yes\n"})
    run_probe(c, root)


def test_constrain_devices_v2(cluster, tmp_path):
    mount = "/sys/fs/cgroup/unified"
    if not os.path.isfile(os.path.join(mount, "cgroup.procs")):
        mount = "/sys/fs/cgroup"
    root = tmp_path / "dev"
    files = fake_devices(root)
    c = cluster(nodes=1, cpus=2, memory=2000, conf=SLURM_CONF,
                etc_files={"gres.conf": f"NodeName=n1 Name=gpu File={files}\n",
                           "cgroup.conf": f"CgroupPlugin=cgroup/v2\nCgroupMountpoint={mount}\n"
                                          "ConstrainDevices=yes\n"})
    run_probe(c, root)
