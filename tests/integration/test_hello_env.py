"""The README's example: examples/hello-env.sbatch on a 4-node cluster."""

import os
import re
import shutil

import pytest

from conftest import EXAMPLES
from hostlist import expand


@pytest.mark.parametrize("as_user", [False, True], ids=["root", "user"])
def test_hello_env(cluster, users, submit_dir, as_user):
    c = cluster(nodes=4)
    user = users["shoaltest1"] if as_user else None
    workdir = submit_dir(user) if user else c.work
    script = workdir / "hello-env.sbatch"
    shutil.copy(EXAMPLES / "hello-env.sbatch", script)
    if user:
        os.chown(script, user.uid, user.gid)

    job = c.sbatch([script.name], user=user, cwd=workdir)
    assert c.wait_job(job, timeout=60) == "COMPLETED"

    out = workdir / f"hello-env-{job}.out"
    err = workdir / f"hello-env-{job}.err"
    assert out.exists(), f"no {out.name} in {sorted(p.name for p in workdir.iterdir())}"
    if user:
        assert out.stat().st_uid == user.uid, "the output file is not owned by the job's user"
    assert err.exists() and err.read_text() == "", err.read_text() if err.exists() else ""
    lines = dict(re.findall(r"^(.*?)\s+= (.*)$", out.read_text(), re.M))

    nodelist = lines["Node List"]
    hosts = expand(nodelist)
    assert len(hosts) == 3 and len(set(hosts)) == 3, nodelist
    assert set(hosts) <= {"n1", "n2", "n3", "n4"}, nodelist
    assert "[" in nodelist, f"node list not in hostlist form: {nodelist}"
    assert lines["Number of Nodes Allocated"] == "3"
    assert lines["Number of Tasks Allocated"] == "3"
    assert lines["Node"] == hosts[0], "the batch script runs on the first node"
    assert lines["Job Id"] == str(job)
    assert lines["Job Name"] == "hello-env"
    assert lines["Partition"] == "debug"
    assert lines["Submit Directory"] == str(workdir)
    assert lines["Working Directory"] == str(workdir)

    info = c.show_job(job)
    assert info["JobState"] == "COMPLETED"
    assert info["ExitCode"] == "0:0"
    assert info["NumNodes"] == "3"
