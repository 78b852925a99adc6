"""Deployment artefacts: the shoal.dev CRDs, the Helm charts, the plain manifests and the
Dockerfile, checked with the real tools (fixtures in real_k8s.py): charts rendered, linted and
installed (dry-run) by the real Helm 3, every object validated by a real Kubernetes API server
(server-side dry-run, strict field validation, PodSecurity "restricted" enforced), both built
from their pinned sources by scripts/build-k8s.sh. shoal.dev custom resources are also checked
against the CRDs' own schemas (python3-jsonschema, unknown fields rejected) and pod templates
that need no privileges against podsecurity.py's reading of "restricted".
"""

import base64
import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from podsecurity import check_restricted, pod_spec_of
from real_k8s import control_plane, helm, kube  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
HERE = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("SHOAL_BUILD_DIR", ROOT / "build"))
if not BUILD.is_absolute():
    BUILD = ROOT / BUILD
KINDS = {"Controller": "controllers", "NodeSet": "nodesets", "LoginSet": "loginsets",
         "Accounting": "accountings", "RestApi": "restapis", "Token": "tokens"}


def _load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


manifests_gen = _load_module(DEPLOY / "manifests" / "generate.py", "manifests_generate")


# ---------------------------------------------------------------- fixtures and helpers

def render(helm, chart, *args, release="rel", namespace="hpc", check=True):
    """`helm template`'s objects (CompletedProcess when not CHECK)."""
    r = helm("template", release, str(chart), "--namespace", namespace, *args, check=False)
    if not check:
        return r
    assert r.returncode == 0, r.stderr
    return [d for d in yaml.safe_load_all(r.stdout) if d is not None]


def strict(schema):
    """A CRD's structural schema as a JSON schema that also rejects unknown fields (the API
    server would silently prune them: a typo in a chart must fail here instead)."""
    s = copy.deepcopy(schema)

    def walk(node):
        if not isinstance(node, dict):
            return
        if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
            node.setdefault("additionalProperties", False)
        for key in ("properties",):
            for child in (node.get(key) or {}).values():
                walk(child)
        if isinstance(node.get("items"), dict):
            walk(node["items"])
        if isinstance(node.get("additionalProperties"), dict):
            walk(node["additionalProperties"])
    walk(s)
    return s


@pytest.fixture(scope="session")
def crds():
    out = {}
    for kind, plural in KINDS.items():
        out[kind] = yaml.safe_load((DEPLOY / "crds" / f"shoal.dev_{plural}.yaml").read_text())
    return out


@pytest.fixture(scope="session")
def cr_validators(crds):
    return {kind: jsonschema.Draft7Validator(
        strict(c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]),
        format_checker=jsonschema.FormatChecker()) for kind, c in crds.items()}


def cr_errors(cr_validators, obj):
    assert obj["apiVersion"] == "shoal.dev/v1alpha1", obj["apiVersion"]
    v = cr_validators[obj["kind"]]
    return [f"{'.'.join(map(str, e.path))}: {e.message}" for e in v.iter_errors(obj)]


def validate_all(kube, cr_validators, objs, namespace="hpc"):
    """The real API server admits every object (OBJS without a namespace go into NAMESPACE,
    labelled PodSecurity restricted); shoal.dev ones also pass the strict CRD schemas, and pod
    templates podsecurity.py's "restricted"."""
    errors = kube.errors(objs, namespace)
    for obj in objs:
        where = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        if obj.get("apiVersion", "").startswith("shoal.dev/"):
            errors += [f"{where}: {e}" for e in cr_errors(cr_validators, obj)]
        spec = pod_spec_of(obj)
        if spec is not None:
            errors += [f"{where}: restricted: {e}" for e in check_restricted(spec)]
    assert not errors, "\n".join(errors)


def by_kind(objs, kind):
    return [o for o in objs if o["kind"] == kind]


# ---------------------------------------------------------------- CRDs

def test_crds_generated_and_chart_copies_identical():
    r = subprocess.run([sys.executable, str(DEPLOY / "crds" / "generate.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    top = sorted(p.name for p in (DEPLOY / "crds").glob("*.yaml"))
    chart = sorted(p.name for p in (DEPLOY / "helm" / "shoal-operator" / "crds").glob("*"))
    assert top == chart == sorted(f"shoal.dev_{p}.yaml" for p in KINDS.values())
    for name in top:
        assert (DEPLOY / "crds" / name).read_bytes() == \
            (DEPLOY / "helm" / "shoal-operator" / "crds" / name).read_bytes(), name


def _walk_schema(node, path, visit):
    visit(node, path)
    for k, child in (node.get("properties") or {}).items():
        _walk_schema(child, f"{path}.{k}", visit)
    if isinstance(node.get("items"), dict):
        _walk_schema(node["items"], f"{path}[]", visit)


def test_crds_structural_with_subresources_and_columns(crds):
    short = {"Controller": ["shctl"], "NodeSet": ["nss"], "LoginSet": ["lss"],
             "Accounting": ["acct"]}
    for kind, c in crds.items():
        spec = c["spec"]
        assert c["apiVersion"] == "apiextensions.k8s.io/v1"
        assert c["metadata"]["name"] == f"{KINDS[kind]}.shoal.dev"
        assert spec["group"] == "shoal.dev" and spec["scope"] == "Namespaced"
        assert spec["names"]["kind"] == kind and spec["names"]["plural"] == KINDS[kind]
        assert spec["names"].get("shortNames", []) == short.get(kind, [])
        (ver,) = spec["versions"]
        assert ver["name"] == "v1alpha1" and ver["served"] and ver["storage"]
        assert "status" in ver["subresources"]
        if kind in ("NodeSet", "LoginSet"):
            assert ver["subresources"]["scale"] == {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector"}
        else:
            assert "scale" not in ver["subresources"]
        root = ver["schema"]["openAPIV3Schema"]
        assert {"spec", "status"} <= set(root["properties"])
        assert "observedGeneration" in root["properties"]["status"]["properties"]

        preserved = []

        def visit(node, path):
            if node.get("x-kubernetes-preserve-unknown-fields"):
                preserved.append(path)
            if node.get("x-kubernetes-int-or-string"):
                assert "type" not in node, path
                assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            else:
                # Structural: every node has a type; no type/default inside value validations.
                assert node.get("type") in ("object", "array", "string", "integer",
                                            "boolean", "number"), path
                assert "anyOf" not in node and "oneOf" not in node, path
            if "default" in node:
                jsonschema.Draft7Validator(
                    {k: v for k, v in node.items() if k != "default"}).validate(node["default"])
        _walk_schema(root, kind, visit)
        allowed = {f"{kind}.spec.template", f"{kind}.spec.volumeClaimTemplates[]"}
        assert set(preserved) <= allowed, preserved
    cols = [c["name"] for c in
            crds["NodeSet"]["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert [c.upper() for c in cols] == ["REPLICAS", "READY", "IDLE", "ALLOC", "DOWN", "DRAIN",
                                         "AGE"]


def test_examples_validate(kube, cr_validators):
    objs = [o for p in sorted((DEPLOY / "examples").glob("*.yaml"))
            for o in yaml.safe_load_all(p.read_text())]
    validate_all(kube, cr_validators, objs)
    assert {o["kind"] for o in objs} == set(KINDS) | {"HorizontalPodAutoscaler"}
    (hpa,) = by_kind(objs, "HorizontalPodAutoscaler")
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "shoal.dev/v1alpha1",
                                             "kind": "NodeSet", "name": "cpu"}
    (ns,) = list(yaml.safe_load_all((DEPLOY / "examples" / "nodeset.yaml").read_text()))
    assert ns["spec"]["replicas"] == 3


def _cr(kind, spec):
    return {"apiVersion": "shoal.dev/v1alpha1", "kind": kind, "metadata": {"name": "x"},
            "spec": spec}


NS = {"controllerRef": {"name": "c"}}


@pytest.mark.parametrize("kind,spec,field", [
    ("NodeSet", {**NS, "replicas": -1}, "replicas"),
    ("NodeSet", {**NS, "scalingMode": "Deployment"}, "scalingMode"),
    ("NodeSet", {**NS, "updateStrategy": {"rollingUpdate": {"maxUnavailable": "abc"}}},
     "maxUnavailable"),
    ("NodeSet", {**NS, "updateStrategy": {"rollingUpdate": {"maxUnavailable": -2}}},
     "maxUnavailable"),
    ("NodeSet", {**NS, "updateStrategy": {"type": "Recreate"}}, "type"),
    ("NodeSet", {**NS, "updateStrategy": {"scheduledUpdate": {"duration": "2 hours"}}},
     "duration"),
    ("NodeSet", {**NS, "features": ["a,b"]}, "features"),
    ("NodeSet", {**NS, "pruneNodeRecords": "Always"}, "pruneNodeRecords"),
    ("NodeSet", {"replicas": 1}, "controllerRef"),
    ("NodeSet", {**NS, "replica": 2}, "replica"),
    ("Controller", {"port": 6817}, "clusterName"),
    ("Controller", {"clusterName": "c", "port": 70000}, "port"),
    ("Controller", {"clusterName": "c", "persistence": {"size": "lots"}}, "size"),
    ("Controller", {"clusterName": "c", "ha": {"enabled": True, "replicas": 1}}, "replicas"),
    ("Controller", {"clusterName": "c", "slurmKeyRef": {"key": "k"}}, "name"),
    ("Accounting", {"storageConfig": {"host": "db", "username": "u"}}, "passwordKeyRef"),
    ("Token", {"jwtKeyRef": {"name": "j"}, "username": "u", "lifetime": "15 minutes"},
     "lifetime"),
    ("Token", {"jwtKeyRef": {"name": "j"}}, "username"),
    ("LoginSet", {**NS, "service": {"type": "Headless"}}, "type"),
    ("RestApi", {**NS, "replicas": "two"}, "replicas"),
])
def test_crd_schemas_reject_invalid(cr_validators, kube, kind, spec, field):
    errs = cr_errors(cr_validators, _cr(kind, spec))
    assert errs and any(field in e for e in errs), errs
    # The API server refuses it too (its structural schema, strict field validation, CEL).
    errs = kube.errors([_cr(kind, spec)], "crd-schemas")
    assert errs and any(field in e for e in errs), errs


@pytest.mark.parametrize("value", [0, 2, "25%", "100%"])
def test_max_unavailable_int_or_percent(cr_validators, kube, value):
    spec = {**NS, "replicas": 0, "updateStrategy": {
        "type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": value}}}
    assert cr_errors(cr_validators, _cr("NodeSet", spec)) == []
    assert kube.errors([_cr("NodeSet", spec)], "crd-schemas") == []


# ---------------------------------------------------------------- the operator chart

OPERATOR_CHART = DEPLOY / "helm" / "shoal-operator"
SHOAL_CHART = DEPLOY / "helm" / "shoal"
# Operator values that switch everything on.
OPERATOR_ALL = ["--set", "replicas=2,metrics.serviceMonitor.enabled=true,watchNamespace=hpc",
                "--set", "image.tag=1.0.0,serviceAccount.name=op"]


@pytest.mark.parametrize("chart,args", [
    (OPERATOR_CHART, []), (OPERATOR_CHART, OPERATOR_ALL), (SHOAL_CHART, []),
    (SHOAL_CHART, ["-f", str(HERE / "values-full.yaml")]),
], ids=["operator", "operator-all", "shoal", "shoal-full"])
def test_charts_lint_strict(helm, chart, args):
    r = helm("lint", "--strict", str(chart), *args, check=False)
    assert r.returncode == 0 and "1 chart(s) linted, 0 chart(s) failed" in r.stdout, \
        r.stdout + r.stderr
    assert "[WARNING]" not in r.stdout and "[ERROR]" not in r.stdout, r.stdout


def test_operator_chart_ships_the_crds(helm):
    """`helm show crds` gives exactly deploy/crds' CRDs (Helm installs them before the chart's
    templates and never upgrades or deletes them)."""
    shown = [d for d in yaml.safe_load_all(helm("show", "crds", str(OPERATOR_CHART)).stdout) if d]
    assert sorted(shown, key=lambda c: c["metadata"]["name"]) == \
        [yaml.safe_load((DEPLOY / "crds" / f"shoal.dev_{p}.yaml").read_text())
         for p in sorted(KINDS.values())]


@pytest.mark.parametrize("chart,args", [
    (OPERATOR_CHART, []), (OPERATOR_CHART, OPERATOR_ALL), (SHOAL_CHART, []),
    (SHOAL_CHART, ["-f", str(HERE / "values-full.yaml")]),
], ids=["operator", "operator-all", "shoal", "shoal-full"])
def test_charts_install_dry_run_server(helm, kube, chart, args):
    """`helm install --dry-run=server` against the real API server, as a user installs: Helm
    checks the chart's kubeVersion against the server's and renders with the live cluster's
    Capabilities; the objects it would create are then admitted by the server (dry-run)."""
    ns = kube.namespace(f"dry-{chart.name}")
    r = helm("install", "rel", str(chart), "--namespace", ns, "--dry-run=server", *args,
             kubeconfig=kube.cp.kubeconfig)
    assert "STATUS: pending-install" in r.stdout, r.stdout
    manifest = r.stdout.split("MANIFEST:", 1)[1].split("\nNOTES:", 1)[0]
    objs = [d for d in yaml.safe_load_all(manifest) if d]
    assert objs
    assert kube.errors(objs, ns) == []
    if args:  # validated against prometheus-operator's own ServiceMonitor CRD
        assert by_kind(objs, "ServiceMonitor")


def test_operator_chart_default(helm, kube, cr_validators):
    objs = render(helm, OPERATOR_CHART, "--include-crds", namespace="shoal-system")
    validate_all(kube, cr_validators, objs, "shoal-system")
    assert len(by_kind(objs, "CustomResourceDefinition")) == 6
    assert by_kind(objs, "ServiceMonitor") == []
    (dep,) = by_kind(objs, "Deployment")
    (c,) = dep["spec"]["template"]["spec"]["containers"]
    assert c["command"] == ["/usr/sbin/shoal-operator"] and "--leader-elect" in c["args"]
    (sa,) = by_kind(objs, "ServiceAccount")
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"]
    (svc,) = by_kind(objs, "Service")
    assert svc["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    (binding,) = by_kind(objs, "ClusterRoleBinding")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"],
                                    "namespace": "shoal-system"}]
    role = next(r for r in by_kind(objs, "ClusterRole")
                if r["metadata"]["name"] == binding["roleRef"]["name"])
    grants = {}
    for rule in role["rules"]:
        for g in rule["apiGroups"]:
            for res in rule["resources"]:
                grants.setdefault((g, res), set()).update(rule["verbs"])
    crud = {"get", "list", "watch", "create", "update", "patch", "delete"}
    expect = {("", r): crud for r in ("pods", "services", "configmaps", "secrets",
                                      "persistentvolumeclaims")}
    expect.update({("", "pods/status"): {"get", "update", "patch"},
                   ("", "pods/eviction"): {"create"},
                   ("", "nodes"): {"get", "list", "watch", "patch"},
                   ("", "events"): {"create", "patch"},
                   ("events.k8s.io", "events"): {"create", "patch"},
                   ("coordination.k8s.io", "leases"): crud,
                   ("policy", "poddisruptionbudgets"): crud,
                   # An HA Controller's pods get a service account and a Role for their Lease.
                   ("", "serviceaccounts"): {"get", "create", "update"},
                   ("rbac.authorization.k8s.io", "roles"): {"get", "create", "update"},
                   ("rbac.authorization.k8s.io", "rolebindings"): {"get", "create", "update"}})
    for plural in KINDS.values():
        expect[("shoal.dev", plural)] = crud
        expect[("shoal.dev", plural + "/status")] = {"get", "update", "patch"}
        expect[("shoal.dev", plural + "/finalizers")] = {"update"}
    for plural in ("nodesets", "loginsets"):
        expect[("shoal.dev", plural + "/scale")] = {"get", "update", "patch"}
    assert grants == expect


def test_operator_chart_all_features(helm, kube, cr_validators):
    objs = render(helm, OPERATOR_CHART, "--include-crds", *OPERATOR_ALL, namespace="ops")
    validate_all(kube, cr_validators, objs, "ops")
    (sm,) = by_kind(objs, "ServiceMonitor")
    assert sm["spec"]["endpoints"][0]["port"] == "metrics"
    (dep,) = by_kind(objs, "Deployment")
    assert dep["spec"]["replicas"] == 2
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--namespace=hpc" in args and "--health-port=8081" in args, args
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"].endswith(":1.0.0")
    assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "op"


# ---------------------------------------------------------------- Slinky compatibility

SLINKY_CRDS = DEPLOY / "crds" / "slinky-compat"
# Slinky's v1beta1 field names (api/v1beta1 of SlinkyProject/slurm-operator), spec and status,
# one level deep: Slinky users' YAML must find every one of them in the compat CRDs.
SLINKY_FIELDS = {
    "Controller": ({"clusterName", "slurmKeyRef", "jwtHs256KeyRef", "jwtKeyRef", "jwksKeyRef",
                    "accountingRef", "external", "externalConfig", "ha", "slurmctld",
                    "inplaceReconfigure", "reconfigure", "logfile", "template", "extraConf",
                    "configFileRefs", "prologScriptRefs", "epilogScriptRefs",
                    "prologSlurmctldScriptRefs", "epilogSlurmctldScriptRefs", "persistence",
                    "service", "metrics"}, {"conditions"}),
    "NodeSet": ({"controllerRef", "replicas", "scalingMode", "slurmd", "ssh", "logfile",
                 "template", "extraConf", "partition", "volumeClaimTemplates", "updateStrategy",
                 "revisionHistoryLimit", "persistentVolumeClaimRetentionPolicy",
                 "minReadySeconds", "ordinalPadding", "pinToNode",
                 "workloadDisruptionProtection", "pruneSlurmNodeRecords", "oversubscribeNode"},
                {"replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                 "unavailableReplicas", "desired", "slurmIdle", "slurmAllocated", "slurmDown",
                 "slurmDrain", "observedGeneration", "nodeSetHash", "collisionCount",
                 "conditions", "ordinalToNode", "selector"}),
    "LoginSet": ({"controllerRef", "replicas", "login", "initconf", "template",
                  "rootSshAuthorizedKeys", "extraSshdConfig", "sssdConfRef", "strategy",
                  "service"}, {"replicas", "conditions", "selector"}),
    "Accounting": ({"slurmKeyRef", "jwtHs256KeyRef", "jwtKeyRef", "jwksKeyRef", "external",
                    "externalConfig", "slurmdbd", "template", "storageConfig", "extraConf",
                    "service"}, {"conditions"}),
    "RestApi": ({"controllerRef", "replicas", "slurmrestd", "template", "service"},
                {"conditions"}),
    "Token": ({"jwtHs256KeyRef", "jwtKeyRef", "username", "lifetime", "refresh", "secretRef"},
              {"issuedAt", "conditions"}),
}
SLINKY_SHORT = {"Controller": ["slurmctld"], "NodeSet": ["nodesets", "nss", "slurmd"],
                "LoginSet": ["loginsets", "lss", "sackd"], "Accounting": ["slurmdbd"],
                "RestApi": ["slurmrestd"], "Token": ["tokens", "jwt"]}


@pytest.fixture(scope="session")
def slinky_crds():
    return {kind: yaml.safe_load((SLINKY_CRDS / f"slinky.slurm.net_{plural}.yaml").read_text())
            for kind, plural in KINDS.items()}


@pytest.fixture(scope="session")
def slinky_validators(slinky_crds):
    return {kind: jsonschema.Draft7Validator(
        strict(c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]),
        format_checker=jsonschema.FormatChecker()) for kind, c in slinky_crds.items()}


def slinky_errors(validators, obj):
    assert obj["apiVersion"] == "slinky.slurm.net/v1beta1", obj["apiVersion"]
    return [f"{'.'.join(map(str, e.path))}: {e.message}"
            for e in validators[obj["kind"]].iter_errors(obj)]


def test_slinky_crds_have_slinkys_shape(slinky_crds):
    assert sorted(p.name for p in SLINKY_CRDS.glob("*.yaml")) == \
        sorted(f"slinky.slurm.net_{p}.yaml" for p in KINDS.values())
    for kind, c in slinky_crds.items():
        spec = c["spec"]
        assert c["metadata"]["name"] == f"{KINDS[kind]}.slinky.slurm.net"
        assert c["metadata"]["annotations"] == {"helm.sh/resource-policy": "keep"}
        assert spec["group"] == "slinky.slurm.net" and spec["scope"] == "Namespaced"
        assert spec["names"]["kind"] == kind and spec["names"]["plural"] == KINDS[kind]
        assert spec["names"]["shortNames"] == SLINKY_SHORT[kind]
        (ver,) = spec["versions"]
        assert ver["name"] == "v1beta1" and ver["served"] and ver["storage"]
        if kind in ("NodeSet", "LoginSet"):
            assert ver["subresources"]["scale"] == {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.selector"}
        else:
            assert ver["subresources"] == {"status": {}}
        root = ver["schema"]["openAPIV3Schema"]
        spec_fields, status_fields = SLINKY_FIELDS[kind]
        assert set(root["properties"]["spec"]["properties"]) == spec_fields, kind
        assert status_fields <= set(root["properties"]["status"]["properties"]), kind

        def visit(node, path):
            if node.get("x-kubernetes-int-or-string"):
                assert node["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            elif not node.get("x-kubernetes-preserve-unknown-fields"):
                assert node.get("type") in ("object", "array", "string", "integer",
                                            "boolean"), path
            for r in node.get("x-kubernetes-validations", []):
                assert r["rule"] and r["message"], path
        _walk_schema(root, kind, visit)
    cols = [c["name"] for c in
            slinky_crds["NodeSet"]["spec"]["versions"][0]["additionalPrinterColumns"]]
    assert cols == ["DESIRED", "REPLICAS", "UPDATED", "READY", "IDLE", "ALLOCATED", "DOWN",
                    "DRAIN", "AGE"]
    # What Shoal cannot honour and a rule can say is refused at admission, naming the field.
    rules = {k: " ".join(r["message"] for r in
                         c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
                         ["spec"].get("x-kubernetes-validations", []))
             for k, c in slinky_crds.items()}
    for kind, field in [("Controller", "spec.external"), ("Controller", "spec.jwksKeyRef"),
                        ("Controller", "spec.ha.backups"), ("NodeSet", "spec.pinToNode"),
                        ("NodeSet", "spec.ordinalPadding"), ("NodeSet", "spec.ssh.enabled"),
                        ("LoginSet", "spec.strategy.type"), ("Accounting", "spec.external"),
                        ("Accounting", "spec.jwksKeyRef")]:
        assert field in rules[kind], (kind, field)


def test_slinky_examples_validate(slinky_validators, kube):
    objs = [o for o in yaml.safe_load_all((DEPLOY / "examples" / "slinky" / "slurm.yaml")
                                          .read_text()) if o]
    assert sorted(o["kind"] for o in objs) == sorted(KINDS)
    errors = [f"{o['kind']}: {e}" for o in objs for e in slinky_errors(slinky_validators, o)]
    errors += kube.errors(objs, "slinky")
    assert not errors, "\n".join(errors)


@pytest.mark.parametrize("kind,spec,field", [
    ("NodeSet", {"controllerRef": {"name": "c"}, "scalingMode": "Deployment"}, "scalingMode"),
    ("NodeSet", {"replicas": 1}, "controllerRef"),
    ("NodeSet", {"controllerRef": {"name": "c"}, "replica": 2}, "replica"),
    ("LoginSet", {"controllerRef": {"name": "c"}}, "sssdConfRef"),
    ("Token", {"jwtKeyRef": {"name": "j", "key": "k"}}, "username"),
    ("Controller", {"slurmKeyRef": {"name": "k"}}, "key"),
])
def test_slinky_crd_schemas_reject_invalid(slinky_validators, kind, spec, field):
    obj = {"apiVersion": "slinky.slurm.net/v1beta1", "kind": kind, "metadata": {"name": "x"},
           "spec": spec}
    errs = slinky_errors(slinky_validators, obj)
    assert errs and any(field in e for e in errs), errs


def test_operator_chart_slinky_compat(helm, kube, cr_validators, slinky_crds):
    off = render(helm, OPERATOR_CHART, "--include-crds", namespace="shoal-system")
    assert not [c for c in by_kind(off, "CustomResourceDefinition")
                if c["spec"]["group"] == "slinky.slurm.net"]
    assert not [r for role in by_kind(off, "ClusterRole") for r in role["rules"]
                if "slinky.slurm.net" in r["apiGroups"]]
    (dep,) = by_kind(off, "Deployment")
    assert not [a for a in dep["spec"]["template"]["spec"]["containers"][0]["args"]
                if "slinky" in a]
    objs = render(helm, OPERATOR_CHART, "--include-crds", "--set",
                  "slinkyCompat.enabled=true,slinkyCompat.imageRegistry=registry.example.com,"
                  "slinkyCompat.imageTag=1.2.3", namespace="shoal-system")
    validate_all(kube, cr_validators, objs, "shoal-system")
    crds = {c["metadata"]["name"]: c for c in by_kind(objs, "CustomResourceDefinition")}
    assert len(crds) == 12
    for kind, c in slinky_crds.items():
        assert crds[f"{KINDS[kind]}.slinky.slurm.net"] == c
    (dep,) = by_kind(objs, "Deployment")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--slinky-api" in args
    assert "--slinky-image-registry=registry.example.com" in args
    assert "--slinky-image-tag=1.2.3" in args
    # The operator's role, and the aggregated edit and view roles, by name suffix.
    roles = {r["metadata"]["name"].rsplit("shoal-operator", 1)[1]: r
             for r in by_kind(objs, "ClusterRole")}
    grants = {}
    for rule in roles[""]["rules"]:
        for g in rule["apiGroups"]:
            for res in rule["resources"]:
                grants.setdefault((g, res), set()).update(rule["verbs"])
    crud = {"get", "list", "watch", "create", "update", "patch", "delete"}
    for plural in KINDS.values():
        assert grants[("slinky.slurm.net", plural)] == crud
        assert grants[("slinky.slurm.net", plural + "/status")] == {"get", "update", "patch"}
    for plural in ("nodesets", "loginsets"):
        assert grants[("slinky.slurm.net", plural + "/scale")] == {"get", "update", "patch"}
    for name in ("-edit", "-view"):
        assert any("slinky.slurm.net" in r["apiGroups"] for r in roles[name]["rules"]), name
    # Without the registry and tag, only the flag.
    objs = render(helm, OPERATOR_CHART, "--set", "slinkyCompat.enabled=true",
                  namespace="shoal-system")
    (dep,) = by_kind(objs, "Deployment")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert [a for a in args if "slinky" in a] == ["--slinky-api"]


def test_manifest_up_to_date(helm, kube, cr_validators):
    text = (DEPLOY / "manifests" / "shoal-operator.yaml").read_text()
    assert text == manifests_gen.render(helm.exe, helm.env), "run deploy/manifests/generate.py"
    objs = [d for d in yaml.safe_load_all(text) if d]
    validate_all(kube, cr_validators, objs, manifests_gen.NAMESPACE)
    # The file as a user applies it (its header says how).
    r = kube.kubectl("apply", "--server-side", "--dry-run=server", "--validate=strict",
                     "-f", str(DEPLOY / "manifests" / "shoal-operator.yaml"))
    assert r.returncode == 0 and not r.stderr.strip(), r.stdout + r.stderr
    assert len(r.stdout.splitlines()) == len(objs), r.stdout
    assert objs[0]["kind"] == "Namespace"
    scrape = yaml.safe_load((DEPLOY / "manifests" / "prometheus-scrape.yaml").read_text())
    assert {j["job_name"] for j in scrape["scrape_configs"]} >= {"shoal-controller",
                                                                 "shoal-operator"}


# ---------------------------------------------------------------- the cluster chart

def test_shoal_chart_default(helm, kube, cr_validators):
    objs = render(helm, SHOAL_CHART)
    validate_all(kube, cr_validators, objs)
    assert sorted(o["kind"] for o in objs) == ["Controller", "NodeSet", "Secret", "Secret"]
    (ctl,) = by_kind(objs, "Controller")
    secrets = {s["metadata"]["name"]: s for s in by_kind(objs, "Secret")}
    key = base64.b64decode(secrets[ctl["spec"]["slurmKeyRef"]["name"]]["data"]["slurm.key"])
    jwt = base64.b64decode(secrets[ctl["spec"]["jwtKeyRef"]["name"]]["data"]["jwt.key"])
    assert re.fullmatch(rb"[A-Za-z0-9]{64}", key) and re.fullmatch(rb"[A-Za-z0-9]{64}", jwt)
    assert key != jwt
    (ns,) = by_kind(objs, "NodeSet")
    assert ns["spec"]["controllerRef"] == {"name": ctl["metadata"]["name"], "namespace": "hpc"}
    assert "annotations" not in (ctl["spec"]["template"].get("metadata") or {})


def test_shoal_chart_all_features(helm, kube, cr_validators):
    objs = render(helm, SHOAL_CHART, "-f", str(HERE / "values-full.yaml"),
                  "--api-versions", "monitoring.coreos.com/v1")
    validate_all(kube, cr_validators, objs)
    kinds = sorted(o["kind"] for o in objs)
    assert kinds == sorted(["Accounting", "ConfigMap", "ConfigMap", "ConfigMap", "Controller",
                            "LoginSet", "NodeSet", "NodeSet", "RestApi", "Secret", "Secret",
                            "Secret", "Secret", "ServiceMonitor", "Token"]), kinds
    (ctl,) = by_kind(objs, "Controller")
    spec = ctl["spec"]
    assert spec["clusterName"] == "prod" and spec["ha"] == {"enabled": True, "replicas": 2}
    assert spec["metrics"] == {"enabled": True, "serviceMonitor": {"enabled": True}}
    assert spec["image"] == "registry.example.com/shoal/controller:1.2.3"
    assert spec["accountingRef"] == {"name": "rel"}
    assert spec["topology"] == {"plugin": "topology/tree",
                                "static": "SwitchName=spine Switches=leaf[1-2]\n",
                                "nodeLabel": "topology.kubernetes.io/zone"}
    cms = {c["metadata"]["name"]: c for c in by_kind(objs, "ConfigMap")}
    assert cms[spec["configFileRefs"][0]["name"]]["data"]["gres.conf"].startswith("Name=gpu")
    assert "prolog.sh" in cms[spec["prologScriptRefs"][0]["name"]]["data"]
    assert "epilog.sh" in cms[spec["epilogScriptRefs"][0]["name"]]["data"]
    secrets = {s["metadata"]["name"]: s for s in by_kind(objs, "Secret")}
    assert base64.b64decode(secrets["rel-slurm-key"]["data"]["slurm.key"]) == \
        b"0123456789abcdef0123456789abcdef"
    nodesets = {n["metadata"]["name"]: n["spec"] for n in by_kind(objs, "NodeSet")}
    assert nodesets["cpu"]["replicas"] == 4 and nodesets["gpu"]["replicas"] == 0
    assert nodesets["gpu"]["scalingMode"] == "DaemonSet"
    assert nodesets["cpu"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] == "25%"
    (acct,) = by_kind(objs, "Accounting")
    pw = acct["spec"]["storageConfig"]["passwordKeyRef"]
    assert base64.b64decode(secrets[pw["name"]]["data"][pw["key"]]) == b"s3cret"
    (login,) = by_kind(objs, "LoginSet")
    sssd = login["spec"]["sssdConfRef"]
    assert "domains" in secrets[sssd["name"]]["stringData"][sssd["key"]]
    (tok,) = by_kind(objs, "Token")
    assert tok["spec"]["username"] == "slurm" and tok["spec"]["lifetime"] == "1h"
    (sm,) = by_kind(objs, "ServiceMonitor")
    assert sm["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": "shoal-controller", "app.kubernetes.io/instance": "rel"}


def test_shoal_chart_scrape_annotations_without_service_monitor(helm, kube, cr_validators):
    objs = render(helm, SHOAL_CHART, "--set", "metrics.enabled=true")
    validate_all(kube, cr_validators, objs)
    assert by_kind(objs, "ServiceMonitor") == []
    (ctl,) = by_kind(objs, "Controller")
    ann = ctl["spec"]["template"]["metadata"]["annotations"]
    assert ann == {"prometheus.io/scrape": "true", "prometheus.io/port": "6817",
                   "prometheus.io/path": "/metrics"}


def test_shoal_chart_required_values(helm):
    r = render(helm, SHOAL_CHART, "--set", "accounting.enabled=true", check=False)
    assert r.returncode != 0 and "accounting.storageConfig" in r.stderr


# ---------------------------------------------------------------- validators catch errors

def test_validators_reject_bad_objects(kube):
    """The API server's validation, as used above, refuses what it should and names why."""
    def deployment(name, **spec):
        pod = {"containers": [{"name": "c", "image": "busybox", "securityContext": {
            "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}}]}
        pod.update(spec.pop("pod", {}))
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                         "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod},
                         **spec}}

    assert kube.errors([deployment("good")], "validators") == []
    bad_container = deployment("unknown-field")
    bad_container["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Never"
    cases = [
        (deployment("bad-replicas", replicas="two"), "replicas"),
        (bad_container, "imagePullPolicyy: field not declared in schema"),
        (deployment("privileged", pod={"hostNetwork": True}), "PodSecurity"),
        ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
          "spec": {"ports": [{"port": "http"}]}}, "port"),
        ({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}},
         "no matches for kind"),
        (_cr("NodeSet", {**NS, "replica": 2}), "replica"),
        (_cr("Controller", {"clusterName": "c", "port": 70000}), "port"),
    ]
    for obj, why in cases:
        errs = kube.errors([obj], "validators")
        name = obj["metadata"]["name"]
        assert any(e.startswith(f"{obj['kind']}/{name}: ") and why in e for e in errs), \
            (name, why, errs)
    # The privileged Deployment's pod is refused outright (enforced), not only warned about.
    errs = kube.errors([deployment("privileged", pod={"hostNetwork": True})], "validators")
    assert any(e.startswith("Pod/privileged-pod:") and "forbidden" in e for e in errs), errs
    # In one call with good objects, the bad one is still named.
    errs = kube.errors([deployment("good"), cases[0][0], deployment("good2")], "validators")
    assert len(errs) == 1 and errs[0].startswith("Deployment/bad-replicas:"), errs


def test_podsecurity_checker_rejects_bad_pod():
    good = {"securityContext": {"runAsNonRoot": True,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "volumes": [{"name": "cfg", "configMap": {"name": "x"}}],
            "containers": [{"name": "c", "securityContext": {
                "allowPrivilegeEscalation": False,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}]}
    assert check_restricted(good) == []
    bad = {"hostNetwork": True, "hostPID": True, "hostIPC": True,
           "securityContext": {"seccompProfile": {"type": "Unconfined"}},
           "volumes": [{"name": "h", "hostPath": {"path": "/"}},
                       {"name": "n", "nfs": {"server": "s", "path": "/"}}],
           "containers": [{"name": "c", "ports": [{"containerPort": 80, "hostPort": 80}],
                           "securityContext": {"privileged": True, "runAsUser": 0,
                                               "capabilities": {"add": ["SYS_ADMIN"]}}}]}
    errs = "\n".join(check_restricted(bad))
    for needle in ["hostNetwork", "hostPID", "hostIPC", "hostPath", "type nfs", "hostPort",
                   "privileged", "allowPrivilegeEscalation", "drop ALL", "SYS_ADMIN",
                   "runAsNonRoot", "runAsUser: 0", "seccompProfile"]:
        assert needle in errs, (needle, errs)
    # Each rule on its own: a compliant pod with one change fails.
    for mutate in [lambda p: p["containers"][0]["securityContext"].pop("capabilities"),
                   lambda p: p["securityContext"].pop("runAsNonRoot"),
                   lambda p: p["securityContext"].pop("seccompProfile"),
                   lambda p: p["containers"][0]["securityContext"].update(
                       allowPrivilegeEscalation=True)]:
        p = copy.deepcopy(good)
        mutate(p)
        assert check_restricted(p), p


# ---------------------------------------------------------------- the Dockerfile

def _stages(text):
    """{stage: [(instruction, args)]} with continuation lines joined."""
    text = re.sub(r"\\\n", " ", text)
    stages, cur, args = {}, None, {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        instr, _, rest = line.partition(" ")
        instr = instr.upper()
        if instr == "ARG" and cur is None:
            k, _, v = rest.partition("=")
            args[k] = v
            continue
        if instr == "FROM":
            m = re.fullmatch(r"(\S+)(?:\s+AS\s+(\S+))?", rest, re.I)
            cur = m.group(2)
            stages[cur] = [("FROM", m.group(1))]
            continue
        stages[cur].append((instr, rest))
    return stages, args


def test_dockerfile_static(tmp_path):
    text = (DEPLOY / "docker" / "Dockerfile").read_text()
    stages, args = _stages(text)
    assert set(stages) == {"builder", "base", "controller", "worker", "restapi",
                           "accounting", "login", "operator"}
    # Pinned base image: an explicit tag, never latest.
    base = args["DEBIAN_IMAGE"]
    assert re.fullmatch(r"debian:12(\.\d+)?(-slim)?(@sha256:[0-9a-f]{64})?", base), base
    for name, instrs in stages.items():
        image = instrs[0][1]
        assert image in ("${DEBIAN_IMAGE}", "base"), (name, image)
        for instr, rest in instrs:
            assert "latest" not in rest, (name, rest)
            if instr == "RUN" and "apt-get install" in rest:
                assert "--no-install-recommends" in rest and "rm -rf /var/lib/apt/lists" in rest

    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(tmp_path)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr

    def effective(stage):
        chain, cur = [], stage
        while cur in stages:
            chain.insert(0, stages[cur])
            cur = stages[cur][0][1]
        return [i for instrs in chain for i in instrs]

    for name in ("controller", "worker", "restapi", "accounting", "login", "operator"):
        instrs = effective(name)
        copied = set()
        for instr, rest in instrs:
            if instr == "COPY" and "--from=builder" in rest:
                src, dst = rest.split()[1:3]
                assert src.startswith("/staging/usr/"), src
                assert (tmp_path / src[len("/staging/usr/"):]).exists(), (name, src)
                copied.add(dst.rstrip("/"))
        apt = " ".join(rest for instr, rest in instrs if instr == "RUN")
        (cmd,) = [json.loads(rest) for instr, rest in stages[name] if instr == "CMD"]
        exe = cmd[0]
        if Path(exe).name.startswith("shoal"):
            assert exe in copied or str(Path(exe).parent) in copied, (name, exe)
            assert (tmp_path / Path(exe).relative_to("/usr")).exists(), (name, exe)
        else:
            assert exe == "/usr/sbin/sshd" and "openssh-server" in apt, (name, exe)
        users = [rest for instr, rest in stages[name] if instr == "USER"]
        if name in ("worker", "login"):
            assert users == [], name  # root: jobs as their users, sshd
            assert "sssd" in apt and "libnss-sss" in apt and "files sss" in apt, name
        else:
            # Numeric and non-root, so the kubelet can enforce runAsNonRoot.
            assert len(users) == 1 and re.fullmatch(r"[1-9]\d*:[1-9]\d*", users[0]), name
    operator = [r for i, r in stages["operator"] if i == "CMD"][0]
    assert "shoal-operator" in operator


def test_operator_chart_flags_are_the_operators(helm):
    """Every flag the chart passes is one shoal-operator documents (its --help), so the chart
    cannot drift from the binary."""
    binary = BUILD / "sbin" / "shoal-operator"
    assert binary.exists(), f"{binary} not built"
    usage = subprocess.run([str(binary), "--help"], capture_output=True, text=True,
                           timeout=10).stdout
    objs = render(helm, OPERATOR_CHART, "--set", "watchNamespace=hpc,logLevel=debug",
                  "--set", "slinkyCompat.enabled=true,slinkyCompat.imageRegistry=r,"
                  "slinkyCompat.imageTag=t", namespace="shoal-system")
    (dep,) = by_kind(objs, "Deployment")
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args, "the chart passes no flags"
    for arg in args:
        flag = arg.split("=", 1)[0]
        assert flag in usage.split(), f"{flag} (from the chart) is not a shoal-operator flag"
