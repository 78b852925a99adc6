"""srun --container=<OCI bundle>: each task runs inside the bundle through oci.conf's RunTimeRun
(rootless runc), as the submitting user."""

import os
import shutil
import subprocess

RUN = 'RunTimeRun="runc --root=/tmp/shoal-it-runc-%U run %n.%u.%j.%s.%t -b %b"\n'


def make_bundle(user, where):
    bundle = where / "bundle"
    (bundle / "rootfs" / "bin").mkdir(parents=True)
    shutil.copy("/bin/busybox", bundle / "rootfs" / "bin" / "busybox")
    for tool in ("sh", "cat", "echo", "id", "ls", "hostname", "sleep"):
        os.symlink("busybox", bundle / "rootfs" / "bin" / tool)
    subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(bundle)], check=True)
    return bundle


def test_srun_container_runs_tasks_inside_as_user(cluster, users, submit_dir):
    user = users["shoaltest1"]
    c = cluster(nodes=1, etc_files={"oci.conf": "# rootless runc\n" + RUN})
    bundle = make_bundle(user, submit_dir(user))
    runtime_root = f"/tmp/shoal-it-runc-{user.uid}"
    shutil.rmtree(runtime_root, ignore_errors=True)
    cmd = ("echo inside; id -u; ls /etc/os-release 2>&1; echo host=$(hostname); "
           "echo arg=$0")
    r = c.run(["srun", "-n", "2", f"--container={bundle}", "/bin/sh", "-c", cmd, "x y"],
              user=user, check=False)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines.count("inside") == 2, r.stdout
    assert lines.count("0") == 2  # root of its user namespace
    assert sum("/etc/os-release: No such file or directory" in l for l in lines) == 2
    assert lines.count("host=n1") == 2
    assert lines.count("arg=x y") == 2
    # On the host, the runtime ran as the user: its state directory is the user's.
    assert os.stat(runtime_root).st_uid == user.uid
    shutil.rmtree(runtime_root, ignore_errors=True)


def test_srun_container_without_oci_conf_fails(cluster, users, submit_dir):
    user = users["shoaltest1"]
    c = cluster(nodes=1)
    bundle = make_bundle(user, submit_dir(user))
    r = c.run(["srun", f"--container={bundle}", "/bin/true"], user=user, check=False)
    assert r.returncode != 0
    assert "Container support is not configured" in r.stderr
