"""The control plane the real-Kubernetes suite runs on is the real thing, configured as a
production cluster is: built at the pinned release, TLS with client certificates, RBAC and the
Node authorizer enforced, admission (PodSecurity, NodeRestriction) on, the controller-manager's
controllers and the scheduler running."""

import json
import re
import subprocess

from controlplane import k8s_bin_dir, wait

KUBE_VERSION = "v1.37.2"



def test_versions_are_the_pinned_release(control_plane):
    out = json.loads(control_plane.kubectl("version", "-o", "json").stdout)
    assert out["clientVersion"]["gitVersion"] == KUBE_VERSION
    assert out["serverVersion"]["gitVersion"] == KUBE_VERSION
    assert out["serverVersion"]["minor"] == "37"
    helm = subprocess.run([str(k8s_bin_dir() / "helm"), "version", "--short"],
                          capture_output=True, text=True, check=True).stdout
    assert re.match(r"v3\.\d+\.\d+", helm), helm
    etcd = subprocess.run([str(k8s_bin_dir() / "etcd"), "--version"], capture_output=True,
                          text=True, check=True).stdout
    assert re.search(r"etcd Version: 3\.[67]\.\d+", etcd), etcd
    # The control plane started well under a minute.
    assert control_plane.start_seconds < 60


def test_anonymous_and_unknown_clients_are_refused(control_plane):
    status, _ = control_plane._get(control_plane.url + "/api/v1/namespaces")
    assert status in (401, 403)


def test_rbac_and_the_node_authorizer_are_enforced(control_plane):
    node_conf = control_plane.node_kubeconfig("authz-probe")
    # A node may not read Secrets at large, nor list every namespace's ConfigMaps...
    r = control_plane.kubectl("get", "secrets", "-A", kubeconfig=node_conf, check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr.lower(), r.stdout + r.stderr
    # ...and NodeRestriction stops it from creating another node's Node object.
    other = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "someone-else"}}
    r = control_plane.kubectl("create", "-f", "-", input=json.dumps(other),
                              kubeconfig=node_conf, check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr.lower(), r.stdout + r.stderr
    # It may register itself.
    own = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "authz-probe"}}
    control_plane.kubectl("create", "-f", "-", input=json.dumps(own), kubeconfig=node_conf)
    control_plane.kubectl("delete", "node", "authz-probe")


def test_pod_security_admission_rejects_a_privileged_pod(control_plane, namespace):
    control_plane.kubectl("label", "namespace", namespace,
                          "pod-security.kubernetes.io/enforce=restricted")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "priv"},
           "spec": {"containers": [{"name": "c", "image": "localhost/none:0",
                                    "securityContext": {"privileged": True}}]}}
    r = control_plane.kubectl("-n", namespace, "create", "-f", "-", input=json.dumps(pod),
                              check=False)
    assert r.returncode != 0 and "violates PodSecurity" in r.stderr, r.stdout + r.stderr


def test_controllers_and_scheduler_run(control_plane, namespace):
    # The ServiceAccount and root-CA controllers fill a new namespace.
    wait(lambda: control_plane.kubectl("-n", namespace, "get", "serviceaccount", "default",
                                       check=False).returncode == 0, 30, "the default SA")
    wait(lambda: control_plane.kubectl("-n", namespace, "get", "configmap", "kube-root-ca.crt",
                                       check=False).returncode == 0, 30, "kube-root-ca.crt")
    # The Deployment and ReplicaSet controllers make a pod; with no node to run it, the real
    # scheduler marks it unschedulable.
    control_plane.kubectl("-n", namespace, "create", "deployment", "d",
                          "--image=localhost/none:0")

    def unschedulable():
        pods = json.loads(control_plane.kubectl("-n", namespace, "get", "pods", "-o",
                                                "json").stdout)["items"]
        for p in pods:
            for c in p.get("status", {}).get("conditions", []):
                if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable":
                    return True
        return False
    wait(unschedulable, 60, "the scheduler to report the pod unschedulable")
    # The garbage collector removes the ReplicaSet and pods with the Deployment.
    control_plane.kubectl("-n", namespace, "delete", "deployment", "d")
    wait(lambda: json.loads(control_plane.kubectl("-n", namespace, "get", "pods,replicasets",
                                                  "-o", "json").stdout)["items"] == [],
         60, "garbage collection")
