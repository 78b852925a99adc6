"""shoal-operator operations (issue 9), end to end against the fake API server and the kubelet
simulator: an HA controller (two pods sharing the state volume, the active one chosen by a Lease
that `shoal-operator leader-exec` holds) fails over without losing a job;
a Controller config change is applied with no controller restart; a crashed controller comes back
with its state; deleting a NodeSet whose partition old jobs still name breaks nothing; a Token
becomes a Secret holding a JWT the controller accepts."""

import base64
import json
import os
import secrets
import shutil
import signal
import tempfile
from pathlib import Path

import pytest

from k8s_env import NS, K8s, ready, wait

CTL_SEL = "app.kubernetes.io/name=shoal-controller"
LEASE = "shoal-ctld"
# The fake API server speaks plain HTTP, so the controller pods' launchers reach it through a
# kubeconfig (KUBECONFIG, which leader-exec honours before the in-cluster service account).
POD_KUBECONFIG = {}


def controller_cr(extra=""):
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "Controller",
            "metadata": {"name": "shoal", "namespace": NS},
            "spec": {"clusterName": "k8s", "ha": {"enabled": True, "replicas": 2},
                     "slurmKeyRef": {"name": "shoal-slurm-key", "key": "slurm.key"},
                     "jwtKeyRef": {"name": "shoal-jwt-key", "key": "jwt.key"},
                     "template": {"spec": {"extraEnv": [
                         {"name": "KUBECONFIG", "value": POD_KUBECONFIG["path"]}]}},
                     "extraConf": "KillWait=5\n" + extra}}


def nodeset_cr(name, replicas):
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": "NodeSet",
            "metadata": {"name": name, "namespace": NS},
            "spec": {"controllerRef": {"name": "shoal"}, "replicas": replicas,
                     "image": "shoal/worker:1",
                     "partition": {"enabled": True, "config": "MaxTime=UNLIMITED"}}}


@pytest.fixture(scope="module")
def env(request):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    k = K8s(k8s_nodes=("k1", "k2"), bridge="kops0", cidr="10.249.0.0/16").start()
    try:
        k.secret("shoal-slurm-key", {"slurm.key": secrets.token_bytes(32)})
        k.secret("shoal-jwt-key", {"jwt.key": secrets.token_hex(32)})
        pod_kc = k.root / "pod-kubeconfig"
        pod_kc.write_text(k.kube.kubeconfig(namespace=NS).replace(
            k.kube.url, f"http://{k.host_ip}:{k.kube.port}"))
        os.chmod(pod_kc, 0o644)  # the controller runs as user shoal
        POD_KUBECONFIG["path"] = str(pod_kc)
        k.start_operator()
        k.apply(controller_cr())
        k.apply(nodeset_cr("cpu", 2))
        k.work = Path(tempfile.mkdtemp(prefix="shoal-k8s-work-", dir="/tmp"))
        os.chmod(k.work, 0o777)
        # Commands go to the active controller of the pair.
        k.ctl_pod = lambda: active(k) or "shoal-0"
        yield k
    finally:
        k.stop(keep=request.session.testsfailed > 0)
        shutil.rmtree(getattr(k, "work", "/nonexistent"), ignore_errors=True)


def controllers(env):
    return {p["metadata"]["name"]: p for p in env.pods(CTL_SEL)
            if not p["metadata"].get("deletionTimestamp")}


def active(env):
    """The ready (serving) controller pod's name, or None."""
    ready_ones = [n for n, p in controllers(env).items() if ready(p)]
    return ready_ones[0] if len(ready_ones) == 1 else None


def lease_holder(env):
    r = env.kubectl("get", "lease", LEASE, "-n", NS, "-o", "json", check=False)
    return json.loads(r.stdout)["spec"].get("holderIdentity") if r.returncode == 0 else None


def shoalctld_pids(env, pod):
    """The shoalctld processes the pod's launcher (its container's main process) runs."""
    pid = env.container_pid(pod)
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [int(k) for k in kids if Path(f"/proc/{k}/comm").read_text().strip() == "shoalctld"]
    except OSError:
        return []


def launcher_log(env, pod):
    f = env.root / "sim" / "logs" / f"{NS}_{pod}_shoalctld.log"
    return f.read_text(errors="replace") if f.exists() else ""


def ctl(env, *argv, extra_env=None):
    return env.ctl(*argv, env=extra_env)


def node_states(env):
    r = ctl(env, "sinfo", "-h", "-N", "-o", "%N %P %t")
    if r.returncode != 0:
        return {}
    return {(f[0], f[1].rstrip("*")): f[2] for f in
            (line.split() for line in r.stdout.strip().split("\n") if line.strip())}


def submit(env, *args):
    return env.submit(*args)


def job_state(env, job):
    return env.job_state(job)


def wait_job(env, job, states=("COMPLETED",), timeout=90):
    return env.wait_job(job, states, timeout)


def test_ha_controllers_one_active_and_workers_register(env):
    wait(lambda: len(controllers(env)) == 2, 60, "two controller pods")
    wait(lambda: active(env), 90, "one active controller")
    # The other one is a standby: running, not ready, answering "standby".
    standby = [n for n in controllers(env) if n != active(env)][0]
    wait(lambda: controllers(env)[standby]["status"].get("phase") == "Running", 30,
         "the standby to run")
    assert not ready(controllers(env)[standby])
    # The Lease names the active pod; the standby's launcher runs no shoalctld (its port
    # refuses connections) while it waits for the Lease.
    assert lease_holder(env) == active(env)
    assert len(shoalctld_pids(env, active(env))) == 1
    assert shoalctld_pids(env, standby) == []
    sa = env.call("GET", f"/api/v1/namespaces/{NS}/pods/{standby}")["spec"]["serviceAccountName"]
    role = env.call("GET", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{NS}/roles/{sa}")
    assert [r["verbs"] for r in role["rules"]] == [["create"], ["get", "update"]]
    wait(lambda: sorted(s for (n, p), s in node_states(env).items() if p == "cpu") ==
         ["idle", "idle"], 120, "two idle workers in partition cpu")


def test_config_change_applies_without_controller_restart(env):
    uids = {n: p["metadata"]["uid"] for n, p in controllers(env).items()}
    restarts = {n: p["status"]["containerStatuses"][0].get("restartCount", 0)
                for n, p in controllers(env).items()}
    env.apply(controller_cr("PartitionName=extra Nodes=ALL MaxTime=10\n"))
    wait(lambda: ctl(env, "sinfo", "-h", "-p", "extra", "-o", "%P %l").stdout.strip()
         == "extra 10:00", 90, "partition extra to appear after the config change")
    # The operator records that it reconfigured (and so does not again on every resync).
    wait(lambda: env.cr("controllers", "shoal")["status"].get("reconfigureStage", 0) >= 1, 30,
         "the Controller status to record the reconfigure")
    now = controllers(env)
    assert {n: p["metadata"]["uid"] for n, p in now.items()} == uids
    assert {n: p["status"]["containerStatuses"][0].get("restartCount", 0)
            for n, p in now.items()} == restarts


def test_failover_loses_no_job(env):
    first = active(env)
    other = [n for n in controllers(env) if n != first][0]
    running = submit(env, "-p", "cpu", "--wrap", "sleep 15; echo survived")
    held = submit(env, "-p", "cpu", "-H", "--wrap", "echo held ran")
    wait_job(env, running, states=("RUNNING",), timeout=30)
    # kill -9 of the active shoalctld: its launcher hands the Lease back and the standby's
    # launcher starts shoalctld, which reads the shared state.
    [pid] = shoalctld_pids(env, first)
    os.kill(pid, signal.SIGKILL)
    wait(lambda: lease_holder(env) == other, 30, "the Lease to move to the standby")
    wait(lambda: active(env) == other, 60, "the former standby to become ready")
    wait(lambda: job_state(env, held) == "PENDING", 60, "a controller to serve the jobs again")
    assert job_state(env, running) in ("RUNNING", "COMPLETED")
    ctl(env, "scontrol", "release", held)
    wait_job(env, held)
    wait_job(env, running)
    assert (env.work / f"slurm-{running}.out").read_text() == "survived\n"
    # Both controller pods are back: one active, one standby.
    wait(lambda: len(controllers(env)) == 2 and active(env), 60, "two controllers again")
    assert lease_holder(env) == active(env) == other


def test_deleting_the_active_pod_hands_the_lease_over(env):
    first = active(env)
    releases = launcher_log(env, first).count("released lease")
    job = submit(env, "-p", "cpu", "--wrap", "sleep 5; echo after delete")
    env.kubectl("delete", "pod", first, "-n", NS, "--wait=false")
    # SIGTERM: the launcher stops shoalctld, then releases the Lease (no wait for it to expire).
    wait(lambda: lease_holder(env) not in (None, "", first), 40, "another holder of the Lease")
    assert launcher_log(env, first).count("released lease") > releases
    wait_job(env, job)
    assert (env.work / f"slurm-{job}.out").read_text() == "after delete\n"
    wait(lambda: len(controllers(env)) == 2 and active(env), 90, "the pod recreated")


def test_deleting_a_nodeset_that_jobs_name_breaks_nothing(env):
    env.apply(nodeset_cr("gpu", 1))
    wait(lambda: node_states(env).get(("gpu-0", "gpu")) == "idle", 120, "gpu-0 idle")
    job = submit(env, "-p", "gpu", "--wrap", "echo on gpu")
    wait_job(env, job)
    pending = submit(env, "-p", "gpu", "-H", "--wrap", "echo never")
    env.kubectl("delete", "nodeset", "gpu", "--wait=false")
    wait(lambda: not [k for k in node_states(env) if k[1] == "gpu"], 120,
         "partition gpu and its node to go")
    # The controller serves on, the old job records are still there, the cpu workers work.
    assert job_state(env, job) == "COMPLETED"
    assert job_state(env, pending) is not None
    again = submit(env, "-p", "cpu", "--wrap", "echo still fine")
    wait_job(env, again)
    assert active(env)


def test_nodeset_in_a_tenant_namespace_joins_the_shared_controller(env):
    env.call("POST", "/api/v1/namespaces", {"metadata": {"name": "team-a"}})
    ns = nodeset_cr("teama", 1)
    ns["metadata"]["namespace"] = "team-a"
    ns["spec"]["controllerRef"] = {"name": "shoal", "namespace": NS}
    env.apply(ns)
    wait(lambda: node_states(env).get(("teama-0", "teama")) == "idle", 120,
         "the tenant's worker idle in its partition")
    pod = env.call("GET", "/api/v1/namespaces/team-a/pods/teama-0")
    assert pod["metadata"]["namespace"] == "team-a"
    job = submit(env, "-p", "teama", "--wrap", "echo tenant ran on $SLURMD_NODENAME")
    wait_job(env, job)
    assert (env.work / f"slurm-{job}.out").read_text() == "tenant ran on teama-0\n"


def test_token_secret_holds_a_jwt_the_controller_accepts(env):
    env.apply({"apiVersion": "shoal.dev/v1alpha1", "kind": "Token",
               "metadata": {"name": "alice-token", "namespace": NS},
               "spec": {"jwtKeyRef": {"name": "shoal-jwt-key", "key": "jwt.key"},
                        "username": "root", "lifetime": "15m",
                        "secretRef": {"name": "alice-jwt", "key": "auth-token"}}})
    secret = wait(lambda: env.call("GET", f"/api/v1/namespaces/{NS}/secrets/alice-jwt",
                                   ok404=True), 60, "the token's Secret")
    token = base64.b64decode(secret["data"]["auth-token"]).decode()
    assert token.count(".") == 2
    r = ctl(env, "squeue", "-h", extra_env={"SLURM_JWT": token})
    assert r.returncode == 0, r.stderr
    r = ctl(env, "squeue", "-h", extra_env={"SLURM_JWT": token[:-3] + "AAA"})
    assert r.returncode != 0
    tok = env.cr("tokens", "alice-token")
    assert tok["status"].get("issuedAt") and tok["status"].get("expiresAt")
    # (Its refresh before expiry is unit-tested in operator_plans_test.)
