"""sbatch/salloc --container and oci.conf's create/start flow (RunTimeCreate, RunTimeStart,
RunTimeQuery, RunTimeKill, RunTimeDelete), with rootless runc, as the submitting user."""

import json
import os
import shutil
import time

import pytest

from test_container import make_bundle

ROOT = "--root=/tmp/shoal-it-runc-%U"
NAME = "%n.%u.%j.%s.%t"
RUN = f'RunTimeRun="runc {ROOT} run {NAME} -b %b"\n'
CREATE_START = (f'RunTimeQuery="runc {ROOT} state {NAME}"\n'
                f'RunTimeCreate="runc {ROOT} create {NAME} -b %b"\n'
                f'RunTimeStart="runc {ROOT} start {NAME}"\n'
                f'RunTimeKill="runc {ROOT} kill -a {NAME}"\n'
                f'RunTimeDelete="runc {ROOT} delete --force {NAME}"\n')


def runtime_root(user):
    path = f"/tmp/shoal-it-runc-{user.uid}"
    shutil.rmtree(path, ignore_errors=True)
    return path


def containers_left(root):
    """Container state directories runc still keeps (deleted ones are gone)."""
    return [d for d in os.listdir(root) if not d.startswith(".")] if os.path.isdir(root) else []


def wait_output(path, text, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and text in path.read_text():
            return path.read_text()
        time.sleep(0.2)
    return path.read_text() if path.exists() else ""


def test_sbatch_container_runs_the_script_inside(cluster, users, submit_dir):
    user = users["shoaltest1"]
    c = cluster(nodes=1, etc_files={"oci.conf": RUN})
    d = submit_dir(user)
    bundle = make_bundle(user, d)
    root = runtime_root(user)
    script = ("#!/bin/sh\necho inside; id -u; ls /etc/os-release 2>&1; echo arg=$1\n"
              "echo container=$SLURM_CONTAINER\nexit 3\n")
    job = c.sbatch([f"--container={bundle}", "-o", f"{d}/out.txt"], script=script + "\n",
                   user=user, cwd=d)
    info = c.show_job(job)
    assert info["Container"] == str(bundle)
    assert c.wait_job(job) == "FAILED"
    assert c.show_job(job)["ExitCode"] == "3:0"
    r = c.run(["squeue", "-h", "-t", "all", "-j", str(job), "-O", "Container:300"])
    assert r.stdout.strip() == str(bundle)
    lines = (d / "out.txt").read_text().splitlines()
    assert lines[0] == "inside"
    assert lines[1] == "0"  # root of its user namespace: it ran in the container
    assert "/etc/os-release: No such file or directory" in lines[2]
    assert f"container={bundle}" in lines
    assert os.stat(root).st_uid == user.uid  # the runtime ran as the user
    assert containers_left(root) == []
    shutil.rmtree(root, ignore_errors=True)


def test_sbatch_container_argument_and_env_exclusion(cluster, users, submit_dir):
    user = users["shoaltest1"]
    # RunTimeEnvExclude hides variables from the runtime command, EnvExclude from the task.
    conf = ('RunTimeRun="echo rt=$SHOAL_HIDE_RT$SHOAL_SHOW; runc ' + ROOT + " run " + NAME +
            ' -b %b"\nRunTimeEnvExclude="^SHOAL_HIDE_RT$"\nEnvExclude="^SHOAL_HIDE_TASK$"\n')
    c = cluster(nodes=1, etc_files={"oci.conf": conf})
    d = submit_dir(user)
    bundle = make_bundle(user, d)
    runtime_root(user)
    script = "#!/bin/sh\necho task=$SHOAL_HIDE_TASK/$SHOAL_HIDE_RT/$SHOAL_SHOW arg=$1\n"
    path = c.write_script(d, "job.sh", script, user)
    r = c.run(["env", "SHOAL_HIDE_RT=a", "SHOAL_HIDE_TASK=b", "SHOAL_SHOW=c", "sbatch",
               f"--container={bundle}", "-o", f"{d}/out.txt", str(path), "x y"], user=user,
              cwd=d)
    job = int(r.stdout.split()[-1])
    assert c.wait_job(job) == "COMPLETED"
    lines = (d / "out.txt").read_text().splitlines()
    assert lines == ["rt=c", "task=/a/c arg=x y"]


def test_salloc_container_steps_run_inside(cluster, users, submit_dir):
    user = users["shoaltest1"]
    c = cluster(nodes=1, etc_files={"oci.conf": RUN})
    d = submit_dir(user)
    bundle = make_bundle(user, d)
    runtime_root(user)
    r = c.run(["salloc", f"--container={bundle}", "sh", "-c",
               "echo outer=$SLURM_CONTAINER; srun /bin/sh -c 'echo in=$(id -u); "
               "ls /etc/os-release 2>&1'; scontrol show job $SLURM_JOB_ID"],
              user=user, cwd=d, check=False)
    assert r.returncode == 0, r.stderr
    assert f"outer={bundle}" in r.stdout
    assert "in=0" in r.stdout
    assert "/etc/os-release: No such file or directory" in r.stdout
    assert f"Container={bundle}" in r.stdout


def test_create_start_flow_srun_exit_code_and_cleanup(cluster, users, submit_dir):
    user = users["shoaltest1"]
    c = cluster(nodes=1, etc_files={"oci.conf": CREATE_START})
    d = submit_dir(user)
    bundle = make_bundle(user, d)
    root = runtime_root(user)
    started = time.time() - 1
    r = c.run(["srun", "-n", "2", f"--container={bundle}", "/bin/sh", "-c",
               "echo inside=$(id -u) host=$(hostname); exit 7"], user=user, cwd=d, check=False)
    assert r.returncode == 7, (r.stdout, r.stderr)
    assert r.stdout.splitlines().count("inside=0 host=n1") == 2
    assert containers_left(root) == []  # RunTimeDelete ran
    assert not [p for p in os.listdir("/tmp") if p.startswith("shoal-oci-")
                and os.stat(f"/tmp/{p}").st_mtime >= started]  # the task bundles are gone


def test_create_start_flow_batch_and_cancel(cluster, users, submit_dir):
    user = users["shoaltest1"]
    c = cluster(nodes=1, etc_files={"oci.conf": CREATE_START})
    d = submit_dir(user)
    bundle = make_bundle(user, d)
    root = runtime_root(user)
    job = c.sbatch([f"--container={bundle}", "-o", f"{d}/out.txt"],
                   script="#!/bin/sh\necho started $(id -u)\nexec sleep 300\n", user=user, cwd=d)
    c.wait_job(job, "RUNNING")
    assert "started 0" in wait_output(d / "out.txt", "started")
    assert len(containers_left(root)) == 1
    c.run(["scancel", str(job)], user=user)
    assert c.wait_job(job, timeout=30) == "CANCELLED"
    # RunTimeKill stopped the container, RunTimeDelete removed it.
    deadline = time.time() + 15
    while containers_left(root) and time.time() < deadline:
        time.sleep(0.2)
    assert containers_left(root) == []
    shutil.rmtree(root, ignore_errors=True)


def image_config(c, user, bundle):
    """The bundle's own config.json, as `runc spec --rootless` writes it for the user, with an
    image variable and hostname."""
    c.run(["runc", "spec", "--rootless", "-b", str(bundle)], user=user)
    config = json.loads((bundle / "config.json").read_text())
    config["process"]["env"].append("IMAGE_VAR=from-image")
    config["hostname"] = "imagehost"
    (bundle / "config.json").write_text(json.dumps(config))


@pytest.mark.parametrize("ignore", [False, True])
def test_bundle_config_json_is_honoured_unless_ignored(cluster, users, submit_dir, ignore):
    user = users["shoaltest1"]
    cmd = "echo var=$IMAGE_VAR host=$(hostname) job=$SLURM_JOB_ID"
    conf = RUN + ("IgnoreFileConfigJson=true\n" if ignore else "")
    c = cluster(nodes=1, etc_files={"oci.conf": conf})
    d = submit_dir(user)
    bundle = make_bundle(user, d)
    image_config(c, user, bundle)
    runtime_root(user)
    r = c.run(["srun", f"--container={bundle}", "/bin/sh", "-c", cmd], user=user, cwd=d,
              check=False)
    assert r.returncode == 0, r.stderr
    words = r.stdout.split()
    if ignore:
        assert words[:2] == ["var=", "host=n1"], r.stdout
    else:
        assert words[:2] == ["var=from-image", "host=imagehost"], r.stdout
    assert words[2].startswith("job=") and words[2] != "job=", r.stdout


def test_sbatch_container_without_oci_conf_fails_the_job(cluster, users, submit_dir):
    user = users["shoaltest1"]
    c = cluster(nodes=1)
    d = submit_dir(user)
    bundle = make_bundle(user, d)
    job = c.sbatch([f"--container={bundle}", "-o", f"{d}/out.txt"],
                   script="#!/bin/sh\necho ran\n", user=user, cwd=d)
    assert c.wait_job(job, timeout=30) == "FAILED"
    r = c.run(["scontrol", "show", "job", str(job)])
    assert "Reason=Container_support_is_not_configured" in r.stdout
    assert "ran" not in (d / "out.txt").read_text()
