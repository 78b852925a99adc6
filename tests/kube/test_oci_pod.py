"""Unit tests of the node agent's pure OCI-mode logic (tests/k8s/oci_pod.py): pod spec ->
podman argv, kubelet's checks and messages, status, TokenRequests, the local provisioner's
volumes. No root, no podman, no API server."""

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "k8s"))
import kubelet_pod as kp  # noqa: E402
import oci_pod as oci  # noqa: E402


def pod(**spec):
    return {"metadata": {"name": "p", "namespace": "ns", "uid": "u-1", "generation": 1},
            "spec": dict({"containers": [{"name": "c", "image": "img:1"}]}, **spec)}


def argv_of(p, c, env=None, image_user=""):
    return oci.run_argv(p, c, image="img:1", name="n", labels={"a": "b"},
                        network="/run/netns/x", hostname="p", env=env or {},
                        env_file="/e", mounts=[("/s", "/d", True)], image_user=image_user,
                        log_path="/l", ulimits=["nofile=1024:1024"])


def test_quantities():
    assert oci.parse_quantity("500m") == 0.5
    assert oci.parse_quantity("1Gi") == 2 ** 30
    assert oci.parse_quantity("129e6") == 129e6
    assert oci.parse_quantity("128M") == 128e6
    assert oci.parse_quantity(2) == 2.0
    with pytest.raises(ValueError):
        oci.parse_quantity("1 Gi")


def test_command_and_args_map_onto_entrypoint_and_cmd():
    env = {"X": "1"}
    assert oci.command_and_args({"command": ["sh", "-c", "echo $(X)"]}, env) == (
        ["sh", "-c", "echo 1"], None)
    assert oci.command_and_args({"args": ["a", "$(X)", "$$(X)"]}, env) == (None, ["a", "1", "$(X)"])
    assert oci.command_and_args({}, env) == (None, None)
    a = argv_of(pod(), {"name": "c", "command": ["/bin/app"], "args": ["-v"]})
    i = a.index("img:1")
    assert a[i - 2:] == ["--entrypoint", '["/bin/app"]', "img:1", "-v"]
    a = argv_of(pod(), {"name": "c", "args": ["-v"]})
    assert "--entrypoint" not in a and a[-2:] == ["img:1", "-v"]


def test_env_file_and_multiline_values():
    text, rest = oci.env_file_text({"A": "x y", "B": "l1\nl2", "C": ""})
    assert text == "A=x y\nC=\n" and rest == ["B"]
    a = argv_of(pod(), {"name": "c"}, env={"A": "1", "B": "l1\nl2"})
    assert ["--env", "B=l1\nl2"] == a[a.index("--env"):a.index("--env") + 2]
    assert "A=1" not in " ".join(a)  # secrets stay out of the process list
    assert ["--unsetenv", "TERM"] == a[a.index("--unsetenv"):a.index("--unsetenv") + 2]


def test_security_context_flags():
    p = pod(securityContext={"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
                             "supplementalGroups": [4000], "runAsNonRoot": True,
                             "seccompProfile": {"type": "RuntimeDefault"}})
    c = {"name": "c", "securityContext": {"allowPrivilegeEscalation": False,
                                          "readOnlyRootFilesystem": True,
                                          "capabilities": {"drop": ["ALL"],
                                                           "add": ["NET_BIND_SERVICE"]}}}
    a = oci.security_args(p, c, "")
    assert a[:2] == ["--user", "1000:3000"]
    assert ["--group-add", "4000", "--group-add", "2000"] == a[2:6]
    assert a[a.index("--cap-drop") + 1] == "ALL"
    assert [a[i + 1] for i, x in enumerate(a) if x == "--cap-add"] == ["NET_BIND_SERVICE"]
    assert "--read-only" in a and "--read-only-tmpfs=false" in a
    assert "no-new-privileges" in a
    assert not any(x.startswith("seccomp=") for x in a)  # RuntimeDefault: podman's profile
    # No securityContext: containerd's default capabilities, seccomp Unconfined.
    a = oci.security_args(pod(), {"name": "c"}, "")
    assert [a[i + 1] for i, x in enumerate(a) if x == "--cap-add"] == list(oci.DEFAULT_CAPS)
    assert "seccomp=unconfined" in a and "--user" not in a
    a = oci.security_args(pod(), {"name": "c", "securityContext": {"privileged": True}}, "")
    assert "--privileged" in a and "--cap-drop" not in a
    # runAsGroup alone keeps the image's user.
    a = oci.security_args(pod(), {"name": "c", "securityContext": {"runAsGroup": 5}}, "app")
    assert a[:2] == ["--user", "app:5"]


def test_run_as_non_root_as_kubelet_checks_it():
    p = pod(securityContext={"runAsNonRoot": True})
    c = {"name": "c"}
    assert "image will run as root" in oci.verify_run_as_non_root(p, c, "")
    assert "image will run as root" in oci.verify_run_as_non_root(p, c, "0:0")
    assert "non-numeric user (app)" in oci.verify_run_as_non_root(p, c, "app")
    assert oci.verify_run_as_non_root(p, c, "1000") is None
    assert oci.verify_run_as_non_root(p, {"name": "c", "securityContext": {"runAsUser": 7}},
                                      "") is None
    msg = oci.verify_run_as_non_root(p, {"name": "c", "securityContext": {"runAsUser": 0}}, "")
    assert msg == ("container's runAsUser breaks non-root policy "
                   '(pod: "p_ns(u-1)", container: c)')
    assert oci.verify_run_as_non_root(pod(), c, "") is None


def test_resources_and_missing_images():
    a = oci.resource_args({"resources": {"limits": {"memory": "64Mi", "cpu": "500m"},
                                         "requests": {"cpu": "250m"}}})
    assert a == ["--memory", str(64 * 2 ** 20), "--memory-swap", str(64 * 2 ** 20),
                 "--cpus", "0.500", "--cpu-shares", "256"]
    assert oci.pull_policy({"image": "x"}) == "Always"
    assert oci.pull_policy({"image": "x:1"}) == "IfNotPresent"
    assert oci.pull_policy({"image": "reg:5000/x"}) == "Always"
    r = oci.image_missing("x:1", "Never", 0)
    assert r[:2] == ("ErrImageNeverPull", 'Container image "x:1" is not present with pull policy '
                     "of Never")
    assert oci.image_missing("x:1", "IfNotPresent", 0)[0] == "ErrImagePull"
    assert oci.image_missing("x:1", "IfNotPresent", 1)[0] == "ImagePullBackOff"


def test_status_and_conditions():
    rec = {"name": "c", "image": "img:1", "image_id": "sha256:ab", "cid": "abc",
           "state": "terminated", "reason": "Error", "exit_code": 137, "started_at": "t0",
           "finished_at": "t1", "restarts": 2}
    st = oci.container_status(rec)
    assert st["containerID"] == "podman://abc"
    assert st["state"]["terminated"]["exitCode"] == 137 and st["restartCount"] == 2
    conds = oci.pod_conditions(pod(), sandbox_ready=True, init_done=True, init_names_pending=[],
                               unready=["c"], phase="Running", terminating=False, now="t")
    assert [c["type"] for c in conds] == ["PodReadyToStartContainers", "Initialized", "Ready",
                                          "ContainersReady", "PodScheduled"]
    ready = {c["type"]: c for c in conds}["Ready"]
    assert ready["status"] == "False" and ready["message"] == "containers with unready status: [c]"
    kept = oci.keep_transition_times([{"type": "Ready", "status": "False",
                                       "lastTransitionTime": "t-old"}], conds)
    assert {c["type"]: c for c in kept}["Ready"]["lastTransitionTime"] == "t-old"
    patch = oci.status_patch({"phase": "Running", "containerStatuses": [st]}, conds)
    assert patch["status"]["containerStatuses"] == [st]  # an atomic list: sent whole
    assert all("reason" in c and "message" in c for c in patch["status"]["conditions"])
    assert oci.conditions_differ([{"type": "Ready", "status": "True"}], conds)


def test_token_request_and_refresh():
    body = oci.token_request(pod(), {"expirationSeconds": 3607, "path": "token"})
    assert body["spec"]["boundObjectRef"] == {"apiVersion": "v1", "kind": "Pod", "name": "p",
                                              "uid": "u-1"}
    assert body["spec"]["expirationSeconds"] == 3607 and "audiences" not in body["spec"]
    assert oci.token_request(pod(), {"audience": "vault"})["spec"]["audiences"] == ["vault"]
    assert not oci.token_needs_refresh(0, 3600, 2000)
    assert oci.token_needs_refresh(0, 3600, 2900)
    assert oci.token_needs_refresh(0, 10 ** 9, 24 * 3600 + 1)


def test_local_provisioner_claims_and_volumes():
    sc = {"metadata": {"name": "shoal-local"}, "provisioner": "shoal.dev/local-path",
          "volumeBindingMode": "WaitForFirstConsumer", "reclaimPolicy": "Delete"}
    pvc = {"metadata": {"name": "data", "namespace": "ns", "uid": "c-1", "annotations": {
        oci.ANN_STORAGE_PROVISIONER: "shoal.dev/local-path"}},
        "spec": {"storageClassName": "shoal-local", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": "Pending"}}
    assert not oci.claim_to_provision(pvc, sc, "shoal.dev/local-path", "kn-1")  # no node yet
    pvc["metadata"]["annotations"][oci.ANN_SELECTED_NODE] = "kn-1"
    assert oci.claim_to_provision(pvc, sc, "shoal.dev/local-path", "kn-1")
    assert not oci.claim_to_provision(pvc, sc, "shoal.dev/local-path", "kn-2")
    pv = oci.volume_for_claim(pvc, sc, "shoal.dev/local-path", "kn-1", "/data/pvc-c-1")
    assert pv["metadata"]["name"] == "pvc-c-1"
    assert pv["spec"]["claimRef"]["uid"] == "c-1"
    assert pv["spec"]["hostPath"]["path"] == "/data/pvc-c-1"
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == ["kn-1"]
    pv["status"] = {"phase": "Released"}
    assert oci.volume_to_delete(pv, "shoal.dev/local-path", "kn-1")
    assert not oci.volume_to_delete(pv, "shoal.dev/local-path", "kn-2")
    json.dumps(pv)


def test_slice_records_for_selectorless_services():
    svc = {"metadata": {"name": "kubernetes", "namespace": "default"},
           "spec": {"clusterIP": "10.96.0.1", "ports": [{"port": 443}]}}
    sl = {"metadata": {"name": "kubernetes", "namespace": "default",
                       "labels": {"kubernetes.io/service-name": "kubernetes"}},
          "endpoints": [{"addresses": ["10.248.0.1"], "conditions": {"ready": True}}]}
    assert kp.slice_records([svc], [sl]) == [
        ("kubernetes.default.svc.cluster.local", "10.248.0.1", "default")]
    assert kp.slice_addresses(svc, [sl]) == ["10.248.0.1"]


def test_cri_log_text():
    data = (b"2026-01-01T00:00:00.1Z stdout F hello\n"
            b"2026-01-01T00:00:00.2Z stderr P par\n"
            b"2026-01-01T00:00:00.25Z stdout F between\n"
            b"2026-01-01T00:00:00.3Z stderr F tial\n"
            b"2026-01-01T00:00:00.4Z stdout F \n")
    assert oci.cri_log_text(data) == b"hello\nbetween\npartial\n\n"
    assert oci.cri_log_text(data, tail_lines=1) == b"\n"
    assert oci.cri_log_text(data, timestamps=True).split(b"\n")[2] == \
        b"2026-01-01T00:00:00.2Z partial"


def test_load_kubeconfig_files_inline_data_and_token(tmp_path):
    """The agent's kubeconfig reader: CA-verified TLS with a client certificate given as files
    or inline base64 data, or a bearer token."""
    import base64
    import kubelet_sim
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from pki import Pki
    pki = Pki(tmp_path / "pki").create_ca()
    crt, key = pki.issue("node-a", "system:node:a", orgs=["system:nodes"])
    b64 = lambda p: base64.b64encode(Path(p).read_bytes()).decode()  # noqa: E731
    inline = {"apiVersion": "v1", "kind": "Config", "current-context": "a",
              "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443",
                                                     "certificate-authority-data": b64(pki.ca)}}],
              "users": [{"name": "u", "user": {"client-certificate-data": b64(crt),
                                               "client-key-data": b64(key)}}],
              "contexts": [{"name": "a", "context": {"cluster": "c", "user": "u",
                                                     "namespace": "ns"}}]}
    (tmp_path / "inline").write_text(json.dumps(inline))
    kube = kubelet_sim.load_kubeconfig(tmp_path / "inline")
    assert (kube.host, kube.port, kube.namespace) == ("10.0.0.1", 6443, "ns")
    assert kube.ctx.verify_mode.name == "CERT_REQUIRED" and kube.reuse
    files = dict(inline)
    files["clusters"] = [{"name": "c", "cluster": {"server": "https://h:1",
                                                   "certificate-authority": str(pki.ca)}}]
    files["users"] = [{"name": "u", "user": {"token": "t0k"}}]
    (tmp_path / "files").write_text(json.dumps(files))
    kube = kubelet_sim.load_kubeconfig(tmp_path / "files")
    assert kube._headers()["Authorization"] == "Bearer t0k"
