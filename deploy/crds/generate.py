#!/usr/bin/env python3
"""Writes the shoal.dev CustomResourceDefinitions (deploy/crds/shoal.dev_<plural>.yaml) and the
identical copies the shoal-operator chart installs (deploy/helm/shoal-operator/crds/); and, from
slinky_crds.py, the slinky.slurm.net ones of the Slinky compatibility mode
(deploy/crds/slinky-compat/, and the chart template that installs them only when asked).

The schemas are built here from a few shared parts (key references, the pod template, the
service, conditions) so that the six kinds stay consistent; the field names are the ones the
operator's planner parses (src/operator/model/). Run it after changing a schema:
    python3 deploy/crds/generate.py          (tests/deploy/test_charts.py checks it was run)
"""

import sys
from pathlib import Path

import yaml

GROUP = "shoal.dev"
VERSION = "v1alpha1"
ROOT = Path(__file__).resolve().parents[2]
OUT_DIRS = [ROOT / "deploy" / "crds", ROOT / "deploy" / "helm" / "shoal-operator" / "crds"]

# Go time.Duration syntax ("30s", "15m", "1h30m"), as the operator parses it.
DURATION = r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"
QUANTITY = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"


def string(desc, **kw):
    return {"type": "string", "description": desc, **kw}


def integer(desc, **kw):
    return {"type": "integer", "format": kw.pop("format", "int32"), "description": desc, **kw}


def boolean(desc, default=None):
    s = {"type": "boolean", "description": desc}
    if default is not None:
        s["default"] = default
    return s


def obj(desc, props, required=None, **kw):
    s = {"type": "object", "description": desc, "properties": props, **kw}
    if required:
        s["required"] = required
    return s


def key_ref(desc, default_key):
    key = string("Key inside the Secret.", minLength=1, default=default_key)
    return obj(desc, {"name": string("Name of the Secret, in the same namespace.", minLength=1),
                      "key": key}, required=["name"])


def name_ref(desc):
    return obj(desc, {"name": string("Name of the object, in the same namespace.", minLength=1)},
               required=["name"])


def name_refs(desc):
    return {"type": "array", "description": desc, "items": name_ref("A ConfigMap.")}


def controller_ref():
    return obj("The Controller this object belongs to. It may live in another namespace "
               "(tenant namespaces sharing one controller).",
               {"name": string("Controller name.", minLength=1),
                "namespace": string("Controller namespace; defaults to this object's.")},
               required=["name"])


def template():
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
            "description": "A partial PodTemplateSpec merged into the pods the operator makes: "
                           "metadata.labels/annotations, spec.nodeSelector, tolerations, "
                           "affinity, securityContext, containers' resources and env, volumes."}


def service(default_port):
    return obj("The Service in front of the pods.",
               {"type": string("Service type.", enum=["ClusterIP", "NodePort", "LoadBalancer"],
                               default="ClusterIP"),
                "port": integer("Service port.", minimum=1, maximum=65535, default=default_port)})


def image_fields():
    return {"image": string("Container image."),
            "imagePullPolicy": string("Image pull policy.",
                                      enum=["Always", "IfNotPresent", "Never"])}


def replicas(desc="Desired number of pods.", default=1):
    return integer(desc, minimum=0, default=default)


def conditions():
    cond = obj("A condition (metav1.Condition).", {
        "type": string("Condition type, e.g. Ready.", minLength=1, maxLength=316),
        "status": string("True, False or Unknown.", enum=["True", "False", "Unknown"]),
        "observedGeneration": integer("Generation the condition was computed for.",
                                      format="int64", minimum=0),
        "lastTransitionTime": string("When the status last changed.", format="date-time"),
        "reason": string("Machine-readable reason, CamelCase.", maxLength=1024),
        "message": string("Human-readable details.", maxLength=32768)},
        required=["type", "status"])
    return {"type": "array", "description": "Current conditions.", "items": cond,
            "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]}


def observed_generation():
    return integer("The .metadata.generation the status reflects.", format="int64", minimum=0)


def count(desc):
    return integer(desc, minimum=0)


AGE = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def ready_column():
    return {"name": "Ready", "type": "string",
            "jsonPath": '.status.conditions[?(@.type=="Ready")].status'}


def controller_spec():
    return obj("Desired state of a Shoal controller (shoalctld).", {
        "clusterName": string("ClusterName in slurm.conf.", pattern="^[a-z0-9][a-z0-9_-]*$",
                              maxLength=63),
        **image_fields(),
        "port": integer("SlurmctldPort.", minimum=1, maximum=65535, default=6817),
        "slurmKeyRef": key_ref("Secret holding the cluster authentication key.", "slurm.key"),
        "jwtKeyRef": key_ref("Secret holding the HS256 JWT key (AuthAltTypes=auth/jwt).", "jwt.key"),
        "accountingRef": name_ref("The Accounting whose shoaldbd stores this cluster's records."),
        "extraConf": string("Text appended to the generated slurm.conf."),
        "configFileRefs": name_refs("ConfigMaps with extra files for the configuration directory "
                                    "(gres.conf, cgroup.conf, topology.conf...)."),
        "prologScriptRefs": name_refs("ConfigMaps whose keys are Prolog scripts."),
        "epilogScriptRefs": name_refs("ConfigMaps whose keys are Epilog scripts."),
        "persistence": obj("The StateSaveLocation volume.", {
            "enabled": boolean("Keep state on a PersistentVolumeClaim.", True),
            "existingClaim": string("Use this claim instead of creating one (ReadWriteMany "
                                    "when ha.enabled)."),
            "storageClassName": string("StorageClass of the created claim."),
            "size": string("Size of the created claim.", pattern=QUANTITY, default="4Gi")}),
        "metrics": obj("The OpenMetrics endpoint (/metrics on the controller port).", {
            "enabled": boolean("Set MetricsType=metrics/openmetrics.", False),
            "serviceMonitor": obj("A Prometheus Operator ServiceMonitor.", {
                "enabled": boolean("Create a ServiceMonitor.", False)})}),
        "ha": obj("Active/passive controllers sharing the state volume, with a Lease.", {
            "enabled": boolean("Run backup controllers.", False),
            "replicas": integer("Controllers in total (primary and backups).", minimum=2,
                                maximum=10, default=2)}),
        "topology": obj("Network topology (topology.conf next to slurm.conf) from Kubernetes "
                        "Node annotations: each worker goes under the switch or block its "
                        "Kubernetes node names.", {
            "plugin": string("TopologyPlugin.", enum=["topology/tree", "topology/block"]),
            "static": string("Extra topology.conf lines: upper switches "
                             "(SwitchName=spine Switches=leaf[1-2]) or BlockSizes=."),
            "nodeAnnotation": string("Node annotation with 'switch:<name>,block:<name>' "
                                     "(Slinky's topo-switch:/topo-block: too); "
                                     "topology.slinky.slurm.net/line is read when it is absent.",
                                     default="topology.shoal.dev/line", minLength=1),
            "nodeLabel": string("Node label whose value names the switch or block of a Node "
                                "without the annotation (e.g. topology.kubernetes.io/zone).")},
            required=["plugin"]),
        "template": template(),
        "service": service(6817)},
        required=["clusterName"])


def controller_status():
    return obj("Observed state of the controller.", {
        "observedGeneration": observed_generation(),
        "conditions": conditions(),
        "configHash": string("Hash of the configuration last applied."),
        "configChangedAt": integer("When the configuration last changed (unix seconds).",
                                   format="int64"),
        "reconfigureStage": integer("0: reconfigure pending; 1: done once, again after the "
                                    "kubelet's ConfigMap sync; 2: done.", minimum=0, maximum=2),
        "leader": string("Pod running the active controller."),
        "topology": obj("The generated topology.conf.", {
            "plugin": string("TopologyPlugin."),
            "nodes": count("Workers placed under a switch or in a block."),
            "problems": {"type": "array", "description": "Annotations, labels or static lines "
                         "left out, and why.", "items": {"type": "string"}}})})


def nodeset_spec():
    return obj("Desired state of a set of homogeneous workers (shoald).", {
        "controllerRef": controller_ref(),
        "replicas": replicas("Desired workers (StatefulSet mode); 0 is allowed."),
        "scalingMode": string("StatefulSet: `replicas` pods with ordinals; DaemonSet: one pod "
                              "per matching Kubernetes node.",
                              enum=["StatefulSet", "DaemonSet"], default="StatefulSet"),
        **image_fields(),
        "template": template(),
        "partition": obj("The partition named after the NodeSet.", {
            "enabled": boolean("Create the partition.", True),
            "config": string("Extra partition parameters (e.g. \"MaxTime=1-0 Default=YES\").")}),
        "features": {"type": "array", "description": "Features of the nodes.",
                     "items": {"type": "string", "pattern": "^[^,\\s]+$"}},
        "gres": string("Gres of the nodes (e.g. \"gpu:2\")."),
        "weight": integer("Node Weight.", format="int64", minimum=0, maximum=4294967294),
        "updateStrategy": obj("How pods are replaced when the template changes.", {
            "type": string("Update strategy.",
                           enum=["RollingUpdate", "OnDelete", "ScheduledUpdate"],
                           default="RollingUpdate"),
            "rollingUpdate": obj("RollingUpdate parameters.", {
                "maxUnavailable": {
                    "description": "Workers drained and replaced at a time: a number or a "
                                   "percentage of replicas.",
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "minimum": 0, "pattern": "^(100|[1-9]?[0-9])%$", "default": "25%"}}),
            "scheduledUpdate": obj("ScheduledUpdate: a MAINT reservation window.", {
                "startTime": string("Start of the window (RFC 3339).", format="date-time"),
                "duration": string("Length of the window.", pattern=DURATION,
                                   default="30m")})}),
        "volumeClaimTemplates": {
            "type": "array", "description": "PersistentVolumeClaims made per worker pod.",
            "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        "persistentVolumeClaimRetentionPolicy": obj("What happens to the claims.", {
            "whenDeleted": string("When the NodeSet is deleted.", enum=["Retain", "Delete"],
                                  default="Retain"),
            "whenScaled": string("When a worker is scaled away.", enum=["Retain", "Delete"],
                                 default="Retain")}),
        "workloadDisruptionProtection": boolean(
            "A PodDisruptionBudget protects workers running jobs.", True),
        "minReadySeconds": integer("Seconds a pod must be ready to count as available.",
                                   minimum=0, default=0),
        "registrationTimeoutSeconds": integer(
            "A ready pod whose node has not registered by then is recreated.", minimum=1,
            default=300),
        "propagateNodeConditions": {
            "type": "array", "description": "Kubernetes Node condition types that drain the "
                                            "workers on a Node while True.",
            "items": {"type": "string", "minLength": 1}},
        "pruneNodeRecords": string("Remove Shoal nodes whose pod or Kubernetes node is gone.",
                                   enum=["Never", "NodeNotFound"], default="Never")},
        required=["controllerRef"])


def nodeset_status():
    return obj("Observed state of the NodeSet.", {
        "replicas": count("Pods that exist."),
        "readyReplicas": count("Ready pods."),
        "availableReplicas": count("Pods ready for minReadySeconds."),
        "updatedReplicas": count("Pods at the current revision."),
        "selector": string("Label selector of the pods (scale subresource)."),
        "nodeIdle": count("Shoal nodes IDLE."),
        "nodeAllocated": count("Shoal nodes ALLOCATED."),
        "nodeMixed": count("Shoal nodes MIXED."),
        "nodeDown": count("Shoal nodes DOWN."),
        "nodeDrain": count("Shoal nodes with the DRAIN flag."),
        "nodeSetHash": string("Revision hash of the pod template."),
        "observedGeneration": observed_generation(),
        "conditions": conditions()})


def loginset_spec():
    return obj("Desired state of login pods (sshd, SSSD and the commands).", {
        "controllerRef": controller_ref(),
        "replicas": replicas(),
        **image_fields(),
        "template": template(),
        "sssdConfRef": key_ref("Secret holding sssd.conf.", "sssd.conf"),
        "extraSshdConfig": string("Lines appended to sshd_config."),
        "rootSshAuthorizedKeys": string("authorized_keys for root."),
        "service": service(22)},
        required=["controllerRef"])


def loginset_status():
    return obj("Observed state of the LoginSet.", {
        "replicas": count("Pods that exist."),
        "readyReplicas": count("Ready pods."),
        "selector": string("Label selector of the pods (scale subresource)."),
        "observedGeneration": observed_generation(),
        "conditions": conditions()})


def accounting_spec():
    return obj("Desired state of the accounting daemon (shoaldbd).", {
        **image_fields(),
        "slurmKeyRef": key_ref("Secret holding the cluster authentication key.", "slurm.key"),
        "jwtKeyRef": key_ref("Secret holding the HS256 JWT key.", "jwt.key"),
        "storageConfig": obj("The external MariaDB/MySQL database.", {
            "host": string("Database host (StorageHost).", minLength=1),
            "port": integer("StoragePort.", minimum=1, maximum=65535, default=3306),
            "database": string("StorageLoc.", minLength=1, default="slurm_acct_db"),
            "username": string("StorageUser.", minLength=1),
            "passwordKeyRef": key_ref("Secret holding StoragePass.", "password")},
            required=["host", "username", "passwordKeyRef"]),
        "extraConf": string("Text appended to the generated slurmdbd.conf."),
        "template": template(),
        "service": service(6819)},
        required=["storageConfig"])


def simple_status(with_replicas):
    props = {}
    if with_replicas:
        props = {"replicas": count("Pods that exist."), "readyReplicas": count("Ready pods.")}
    props.update({"observedGeneration": observed_generation(), "conditions": conditions()})
    return obj("Observed state.", props)


def restapi_spec():
    return obj("Desired state of the REST API (shoalrestd).", {
        "controllerRef": controller_ref(),
        "replicas": replicas(),
        **image_fields(),
        "template": template(),
        "service": service(6820)},
        required=["controllerRef"])


def token_spec():
    return obj("A JWT for a user, kept in a Secret and refreshed before it expires.", {
        "jwtKeyRef": key_ref("Secret holding the HS256 JWT key that signs the token.", "jwt.key"),
        "username": string("The token's user (claim sun).", minLength=1, maxLength=32,
                           pattern="^[a-z_][a-z0-9_.-]*[$]?$"),
        "lifetime": string("Token lifetime.", pattern=DURATION, default="15m"),
        "refresh": boolean("Reissue the token before it expires; false makes the Secret "
                           "immutable.", True),
        "secretRef": key_ref("Secret the token is written to (default: the Token's name).",
                             default_key="auth-token")},
        required=["jwtKeyRef", "username"])


def token_status():
    return obj("Observed state of the Token.", {
        "issuedAt": string("When the current token was issued.", format="date-time"),
        "expiresAt": string("When it expires.", format="date-time"),
        "observedGeneration": observed_generation(),
        "conditions": conditions()})


SCALE = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
         "labelSelectorPath": ".status.selector"}

KINDS = [
    # kind, plural, shortNames, spec, status, scale, printer columns
    ("Controller", "controllers", ["shctl"], controller_spec(), controller_status(), False, [
        {"name": "Cluster", "type": "string", "jsonPath": ".spec.clusterName"},
        {"name": "Leader", "type": "string", "jsonPath": ".status.leader"},
        ready_column(), AGE]),
    ("NodeSet", "nodesets", ["nss"], nodeset_spec(), nodeset_status(), True, [
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
        {"name": "Idle", "type": "integer", "jsonPath": ".status.nodeIdle"},
        {"name": "Alloc", "type": "integer", "jsonPath": ".status.nodeAllocated"},
        {"name": "Down", "type": "integer", "jsonPath": ".status.nodeDown"},
        {"name": "Drain", "type": "integer", "jsonPath": ".status.nodeDrain"},
        AGE]),
    ("LoginSet", "loginsets", ["lss"], loginset_spec(), loginset_status(), True, [
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
        AGE]),
    ("Accounting", "accountings", ["acct"], accounting_spec(), simple_status(False), False, [
        {"name": "Host", "type": "string", "jsonPath": ".spec.storageConfig.host"},
        ready_column(), AGE]),
    ("RestApi", "restapis", [], restapi_spec(), simple_status(True), False, [
        {"name": "Replicas", "type": "integer", "jsonPath": ".status.replicas"},
        {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
        AGE]),
    ("Token", "tokens", [], token_spec(), token_status(), False, [
        {"name": "User", "type": "string", "jsonPath": ".spec.username"},
        {"name": "Lifetime", "type": "string", "jsonPath": ".spec.lifetime"},
        {"name": "Issued", "type": "date", "jsonPath": ".status.issuedAt"},
        AGE]),
]


def crd(kind, plural, short, spec, status, scale, columns):
    names = {"kind": kind, "listKind": kind + "List", "plural": plural,
             "singular": kind.lower(), "categories": ["shoal"]}
    if short:
        names["shortNames"] = short
    subresources = {"status": {}}
    if scale:
        subresources["scale"] = dict(SCALE)
    schema = obj(f"{kind} is a shoal.dev resource managed by shoal-operator.", {
        "apiVersion": string("API version of the object."),
        "kind": string("Kind of the object."),
        "metadata": {"type": "object"},
        "spec": spec,
        "status": status}, required=["spec"])
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}",
                     "labels": {"app.kubernetes.io/part-of": "shoal"}},
        "spec": {
            "group": GROUP, "names": names, "scope": "Namespaced",
            "versions": [{"name": VERSION, "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": schema},
                          "subresources": subresources,
                          "additionalPrinterColumns": columns}]}}


class _Dumper(yaml.SafeDumper):
    pass


# Multi-line strings never occur; keep key order as written above (readable CRDs).
def render(doc):
    head = "# Generated by deploy/crds/generate.py: edit that, not this file.\n"
    return head + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def main():
    # Each file starts a YAML document: `helm show crds` concatenates the chart's crds/ files
    # as they are, and without the separator `helm show crds ... | kubectl apply -f -` (the way
    # to upgrade CRDs, which Helm never does) would see one document, the last CRD's.
    files = {f"{GROUP}_{k[1]}.yaml": "---\n" + render(crd(*k)) for k in KINDS}
    outputs = {d / name: text for d in OUT_DIRS for name, text in files.items()}
    # Slinky's slinky.slurm.net/v1beta1 (docs/kubernetes-slinky.md): standalone copies in
    # their own folder, and the operator chart's template that installs them behind a value.
    import slinky_crds  # noqa: E402 (imports this file as `generate`)
    slinky_files, slinky_template = slinky_crds.files()
    for name, text in slinky_files.items():
        outputs[OUT_DIRS[0] / slinky_crds.SUBDIR / name] = text
    outputs[OUT_DIRS[1].parent / "templates" / slinky_crds.CHART_TEMPLATE] = slinky_template
    check = "--check" in sys.argv
    stale = []
    for path, text in outputs.items():
        if check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    if stale:
        print("stale (run deploy/crds/generate.py):", *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
