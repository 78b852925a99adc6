"""shoal-operator end to end (issue 9's acceptance), against the fake API server and the kubelet
simulator: real shoalctld, shoald and shoalrestd run as pods made by the operator from custom
resources applied with kubectl; jobs run; scale-in, rolling updates and kubectl drain never kill
a job."""

import os
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import REPO
from k8s_env import NS, K8s, condition_types, ready, wait

sys.path.insert(0, str(REPO / "tests" / "deploy"))
import podsecurity  # noqa: E402

EXAMPLE = REPO.parent / "shared" / "examples" / "hello-env.sbatch"
if not EXAMPLE.exists():
    EXAMPLE = REPO / "examples" / "hello-env.sbatch"

WORKER_SEL = "app.kubernetes.io/instance=cpu,shoal.dev/nodeset=cpu"


def controller_cr():
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "Controller",
            "metadata": {"name": "shoal", "namespace": NS},
            "spec": {"clusterName": "k8s",
                     "slurmKeyRef": {"name": "shoal-slurm-key", "key": "slurm.key"},
                     "jwtKeyRef": {"name": "shoal-jwt-key", "key": "jwt.key"},
                     "extraConf": "SlurmdTimeout=30\nKillWait=5\n"}}


def nodeset_cr(replicas=3, image="shoal/worker:1"):
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": "cpu", "namespace": NS},
            "spec": {"controllerRef": {"name": "shoal"}, "replicas": replicas, "image": image,
                     "partition": {"enabled": True, "config": "Default=YES MaxTime=UNLIMITED"},
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxUnavailable": 1}}}}


def restapi_cr():
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "RestApi",
            "metadata": {"name": "shoal-rest", "namespace": NS},
            "spec": {"controllerRef": {"name": "shoal"}, "replicas": 1}}


@pytest.fixture(scope="module")
def env(request):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    k = K8s().start()
    failed = []
    request.node.failed_flag = failed
    try:
        k.secret("shoal-slurm-key", {"slurm.key": secrets.token_bytes(32)})
        k.secret("shoal-jwt-key", {"jwt.key": secrets.token_hex(32)})
        k.start_operator()
        k.apply(controller_cr())
        k.apply(restapi_cr())
        k.apply(nodeset_cr())
        k.work = Path(tempfile.mkdtemp(prefix="shoal-k8s-work-", dir="/tmp"))
        os.chmod(k.work, 0o777)
        yield k
    finally:
        keep = request.session.testsfailed > 0
        k.stop(keep=keep)
        shutil.rmtree(getattr(k, "work", "/nonexistent"), ignore_errors=True)


def ctl(env, *argv):
    return env.ctl(*argv)


def node_states(env):
    r = ctl(env, "sinfo", "-h", "-N", "-o", "%N %t")
    if r.returncode != 0:
        return {}
    return dict(line.split() for line in r.stdout.strip().split("\n") if line.strip())


def worker_names(env):
    return sorted(p["metadata"]["name"] for p in env.pods(WORKER_SEL)
                  if not p["metadata"].get("deletionTimestamp"))


def submit(env, *args, script=None):
    return env.submit(*args, script=script)


def job_state(env, job):
    return env.job_state(job)


def wait_job(env, job, states=("COMPLETED",), timeout=120):
    return env.wait_job(job, states, timeout)


def test_three_workers_register_and_run_hello_env(env):
    wait(lambda: env.pod("shoal-0") and ready(env.pod("shoal-0")), 90, "the controller pod")
    wait(lambda: sorted(s for s in node_states(env).values()) == ["idle"] * 3, 120,
         "three idle Shoal nodes")
    assert sorted(node_states(env)) == worker_names(env) == ["cpu-0", "cpu-1", "cpu-2"]
    # Pod conditions mirror the Shoal node state.
    for name in worker_names(env):
        wait(lambda: "ShoalNodeStateIdle" in condition_types(env.pod(name)), 60,
             f"{name} to show ShoalNodeStateIdle")
    job = submit(env, script=EXAMPLE)
    wait_job(env, job)
    out = (env.work / f"hello-env-{job}.out").read_text()
    assert "Number of Nodes Allocated = 3" in out, out
    assert "Node List                 = cpu-[0-2]" in out, out
    # While a job holds a node its pod says Allocated, and Idle again after.
    # (The operator polls node states every 10 s: Shoal has no watch.)
    job = submit(env, "-w", "cpu-1", "--exclusive", "--wrap", "sleep 25")
    try:
        wait(lambda: "ShoalNodeStateAllocated" in condition_types(env.pod("cpu-1")), 22,
             "cpu-1 to show ShoalNodeStateAllocated")
    except AssertionError:
        raise AssertionError(f"job {job_state(env, job)}, nodes {node_states(env)}, pod "
                             f"{env.pod('cpu-1')['status'].get('conditions')}") from None
    wait_job(env, job)
    wait(lambda: "ShoalNodeStateIdle" in condition_types(env.pod("cpu-1")), 30,
         "cpu-1 to show ShoalNodeStateIdle again")
    # The RestApi pod serves the REST API against the same controller.
    wait(lambda: env.pods("app.kubernetes.io/name=shoal-restapi") and
         ready(env.pods("app.kubernetes.io/name=shoal-restapi")[0]), 60, "the restapi pod")
    # The pods the operator makes that need no privileges meet PodSecurity "restricted".
    for name in ("shoal-controller", "shoal-restapi"):
        for pod in env.pods(f"app.kubernetes.io/name={name}"):
            assert podsecurity.check_restricted(pod["spec"]) == [], (name, pod["spec"])


def test_admin_drain_is_mirrored_to_the_pod_and_never_resumed(env):
    wait(lambda: node_states(env).get("cpu-1") == "idle", 60, "cpu-1 idle")
    r = ctl(env, "scontrol", "update", "NodeName=cpu-1", "State=DRAIN", "Reason=bad dimm")
    assert r.returncode == 0, r.stderr

    def mirrored():
        pod = env.pod("cpu-1")
        ann = pod["metadata"].get("annotations", {})
        return (ann.get("nodeset.shoal.dev/node-drain") == "bad dimm" and
                "ShoalNodeStateDrain" in condition_types(pod))
    wait(mirrored, 30, "the admin drain on cpu-1's pod (annotation and condition)")
    msg = [c for c in env.pod("cpu-1")["status"]["conditions"]
           if c["type"] == "ShoalNodeStateDrain"][0]["message"]
    assert msg == "bad dimm"
    time.sleep(12)  # more than one reconcile: the operator must leave it alone
    assert node_states(env)["cpu-1"].startswith("drain"), node_states(env)
    ctl(env, "scontrol", "update", "NodeName=cpu-1", "State=RESUME")
    wait(lambda: "nodeset.shoal.dev/node-drain" not in
         env.pod("cpu-1")["metadata"].get("annotations", {}), 30, "the annotation to go")


def test_scale_in_drains_busy_worker_and_never_kills_its_job(env):
    long_job = submit(env, "-w", "cpu-2", "--wrap", "sleep 25; echo done")
    wait_job(env, long_job, states=("RUNNING",), timeout=30)
    env.kubectl("scale", "nodeset/cpu", "--replicas=1")
    # The idle workers go first; the busy one stays and its job keeps running.
    wait(lambda: worker_names(env) == ["cpu-2"], 60, "the idle workers to go")
    assert job_state(env, long_job) == "RUNNING"
    # Now scale to zero: the busy worker is drained, kept while its job runs, then deleted.
    env.kubectl("scale", "nodeset/cpu", "--replicas=0")
    r = wait(lambda: (lambda o: o if "shoal-operator:" in o else None)(
        ctl(env, "scontrol", "show", "node", "cpu-2").stdout), 30, "cpu-2 to be drained")
    assert "DRAIN" in r, r
    assert env.pod("cpu-2") is not None and job_state(env, long_job) == "RUNNING"
    wait_job(env, long_job, timeout=60)
    wait(lambda: worker_names(env) == [], 60, "cpu-2 to be deleted after its job")
    assert (env.work / f"slurm-{long_job}.out").read_text() == "done\n"


def test_rolling_update_replaces_every_worker_without_killing_jobs(env):
    env.kubectl("scale", "nodeset/cpu", "--replicas=3")
    wait(lambda: sorted(s for s in node_states(env).values() if s == "idle") == ["idle"] * 3,
         120, "three idle nodes again")
    old = {p["metadata"]["name"]: p["metadata"]["uid"] for p in env.pods(WORKER_SEL)}
    job = submit(env, "-w", "cpu-0", "--wrap", "sleep 15; echo survived")
    wait_job(env, job, states=("RUNNING",), timeout=30)
    env.apply(nodeset_cr(replicas=3, image="shoal/worker:2"))

    def all_replaced():
        pods = env.pods(WORKER_SEL)
        return (len(pods) == 3 and all(p["metadata"]["uid"] != old.get(p["metadata"]["name"])
                                       and p["spec"]["containers"][0]["image"] == "shoal/worker:2"
                                       and ready(p) for p in pods))
    wait(all_replaced, 180, "every worker replaced by the new image")
    assert job_state(env, job) == "COMPLETED"
    assert (env.work / f"slurm-{job}.out").read_text() == "survived\n"


def test_kubectl_drain_drains_shoal_nodes_and_pdb_protects_busy_worker(env):
    wait(lambda: list(node_states(env).values()).count("idle") == 3, 120, "three idle nodes")
    busy = env.pod("cpu-0")
    k8s_node = busy["spec"]["nodeName"]
    # Long enough to still run after the refused drain and the drained-node checks, which took
    # over 20 s on a loaded CI machine.
    job = submit(env, "-w", "cpu-0", "--wrap", "sleep 45; echo ok")
    wait_job(env, job, states=("RUNNING",), timeout=30)
    wait(lambda: env.pod("cpu-0")["metadata"].get("labels", {}).get(
        "nodeset.shoal.dev/pod-protect") == "true", 30, "cpu-0 to carry the protect label")
    # The eviction of the busy worker is refused by the PodDisruptionBudget.
    r = env.kubectl("drain", k8s_node, "--ignore-daemonsets", "--delete-emptydir-data",
                    "--timeout=8s", check=False)
    assert r.returncode != 0
    assert "disruption budget" in (r.stdout + r.stderr), r.stdout + r.stderr
    # The cordon drained the Shoal nodes on that k8s node with a reason naming it.
    on_node = [p["metadata"]["name"] for p in env.pods(WORKER_SEL)
               if p["spec"].get("nodeName") == k8s_node]
    for name in on_node:
        wait(lambda: k8s_node in ctl(env, "scontrol", "show", "node", name).stdout, 30,
             f"{name} drained naming {k8s_node}")
    assert job_state(env, job) == "RUNNING"
    env.kubectl("uncordon", k8s_node)
    wait_job(env, job, timeout=90)
    for name in on_node:
        if env.pod(name) is None:
            continue
        wait(lambda: not node_states(env).get(name, "drain").startswith("dr"), 60,
             f"{name} resumed after uncordon")
