"""The slinky.slurm.net/v1beta1 CustomResourceDefinitions shoal-operator serves in its Slinky
compatibility mode (docs/kubernetes-slinky.md), written by deploy/crds/generate.py.

The kinds, field names, shapes, defaults, enums, subresources, short names and printer columns
follow SchedMD Slinky's v1beta1 API (read from its api/v1beta1 field list), so YAML written for
Slinky validates unchanged. The descriptions are ours. On top of Slinky's own admission rules,
CEL rules (x-kubernetes-validations) reject at admission the fields Shoal cannot honour that a
rule can express; the operator rejects the rest (a Ready=False/UnsupportedField condition and a
Warning Event). Status schemas hold Slinky's fields plus the few Shoal keeps for itself
(reconfigure bookkeeping, token expiry, ready counts).

Installed only when the shoal-operator chart's value slinkyCompat.enabled is true: a cluster
that runs Slinky's own operator owns this API group.
"""

import generate as g

GROUP = "slinky.slurm.net"
VERSION = "v1beta1"
# Where the standalone copies go (not deploy/crds/ itself: `kubectl apply -f deploy/crds/` must
# never install them by accident), and the chart template that installs them behind the value.
SUBDIR = "slinky-compat"
CHART_TEMPLATE = "slinky-compat-crds.yaml"
# Helm deletes templated objects on uninstall; deleting a CRD deletes every resource of it.
KEEP = {"helm.sh/resource-policy": "keep"}

# Slinky's Go durations for the ServiceMonitor (Prometheus' own syntax).
PROM_DURATION = (r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?"
                 r"(([0-9]+)s)?(([0-9]+)ms)?)$")
UNSUPPORTED = "is not supported by Shoal (docs/kubernetes-slinky.md)"


def integer(desc, fmt="int32", **kw):
    s = {"type": "integer", "description": desc, **kw}
    if fmt:
        s["format"] = fmt
    return s


def rule(expr, message):
    return {"rule": expr, "message": message}


def string_map(desc):
    return {"type": "object", "description": desc, "nullable": True,
            "additionalProperties": {"type": "string"}}


def metadata(desc="Labels and annotations added to the objects made from this."):
    return g.obj(desc, {"labels": string_map("Labels."),
                        "annotations": string_map("Annotations.")})


def selector(desc, with_optional=True):
    """A Secret (or ConfigMap) key selector, as core/v1 writes it."""
    props = {"key": g.string("The key to select."),
             "name": g.string("Name of the object, in the same namespace.", default="")}
    if with_optional:
        props["optional"] = g.boolean("Whether the object or its key may be missing.")
    return g.obj(desc, props, required=["key"], **{"x-kubernetes-map-type": "atomic"})


def local_ref(desc):
    return g.obj(desc, {"name": g.string("Name of the object, in the same namespace.",
                                         default="")},
                 **{"x-kubernetes-map-type": "atomic"})


def local_refs(desc):
    return {"type": "array", "description": desc, "nullable": True,
            "items": local_ref("A ConfigMap.")}


def container(desc):
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
            "description": desc + " A core/v1 Container; Shoal takes image, imagePullPolicy, "
                                  "resources, env and volumeMounts from it."}


def sidecar(desc):
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
            "description": desc + " Shoal runs no such sidecar: accepted and ignored."}


def pod_template():
    return g.obj("The pod template merged into the pods made from this.", {
        "metadata": metadata("Labels and annotations of the pods."),
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "description": "A core/v1 PodSpec. Shoal honours nodeSelector, tolerations, "
                                "affinity, priorityClassName, serviceAccountName, "
                                "imagePullSecrets, schedulerName, topologySpreadConstraints, "
                                "runtimeClassName, securityContext, resources and volumes."}})


def service():
    return g.obj("The Service in front of the pods.", {
        "metadata": metadata("Labels and annotations of the Service."),
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                 "description": "A core/v1 ServiceSpec (type, load balancer and traffic "
                                "settings); selector, ports and clusterIP are the operator's."},
        "port": integer("Service port.", fmt=None),
        "nodePort": integer("Node port (NodePort or LoadBalancer).", fmt=None)})


def external_config():
    return g.obj("Where the external daemon is.", {
        "host": g.string("Host name or address."),
        "port": integer("Port.", fmt=None)}, required=["host", "port"])


def auth_refs(with_jwks=True):
    refs = {
        "slurmKeyRef": selector("Secret key holding the cluster authentication key "
                                "(auth/slurm)."),
        "jwtHs256KeyRef": selector("Deprecated name of jwtKeyRef."),
        "jwtKeyRef": selector("Secret key holding the HS256 JWT key (auth/jwt)."),
    }
    if with_jwks:
        refs["jwksKeyRef"] = selector("ConfigMap key holding a JWKS: " + UNSUPPORTED +
                                      "; Shoal verifies HS256 tokens signed with jwtKeyRef.")
    return refs


def status(props, required=None):
    s = g.obj("Observed state.", {**props, "conditions": g.conditions()})
    if required:
        s["required"] = required
    return s


def count(desc):
    return integer(desc)


# ---------------------------------------------------------------- the kinds

def controller_spec():
    return g.obj("Desired state of a Slurm controller, run by Shoal as shoalctld.", {
        "clusterName": g.string("ClusterName (default <namespace>-<name>; Shoal names take no "
                                "'_')."),
        **auth_refs(),
        "accountingRef": local_ref("The Accounting storing this cluster's records."),
        "external": g.boolean("A slurmctld outside Kubernetes: " + UNSUPPORTED + ".", False),
        "externalConfig": external_config(),
        "ha": g.obj("Active/passive controllers on a shared state volume.", {
            "enabled": g.boolean("Run backup controllers.", False),
            "backups": integer("Backup controllers (Shoal: at most 2).", minimum=1,
                                 default=1)}, required=["enabled"]),
        "slurmctld": container("The controller container."),
        "inplaceReconfigure": g.boolean("Shoal always reconfigures in place.", False),
        "reconfigure": sidecar("Slinky's reconfigure sidecar."),
        "logfile": sidecar("Slinky's log sidecar (Shoal logs to the container's output)."),
        "template": pod_template(),
        "extraConf": g.string("Text appended to slurm.conf."),
        "configFileRefs": local_refs("ConfigMaps of extra files for the configuration "
                                     "directory."),
        "prologScriptRefs": local_refs("ConfigMaps of Prolog scripts."),
        "epilogScriptRefs": local_refs("ConfigMaps of Epilog scripts."),
        "prologSlurmctldScriptRefs": local_refs("ConfigMaps of PrologSlurmctld scripts."),
        "epilogSlurmctldScriptRefs": local_refs("ConfigMaps of EpilogSlurmctld scripts."),
        "persistence": persistence(),
        "service": service(),
        "metrics": metrics()},
        **{"x-kubernetes-validations": [
            rule("!self.external",
                 "spec.external: a slurmctld outside Kubernetes " + UNSUPPORTED +
                 ": Shoal runs its own controller, remove external and externalConfig"),
            rule("!has(self.jwksKeyRef)",
                 "spec.jwksKeyRef: JWKS " + UNSUPPORTED + ": use jwtKeyRef (HS256)"),
            rule("!self.external ? has(self.slurmKeyRef) : true",
                 "slurmKeyRef must be set when external is false"),
            rule("!self.external ? has(self.jwtKeyRef) || has(self.jwtHs256KeyRef) : true",
                 "jwtKeyRef or jwtHs256KeyRef must be set when external is false"),
            rule("self.external ? has(self.externalConfig) : true",
                 "externalConfig must be set when external is true"),
            rule("has(self.ha) && self.ha.enabled ? has(self.persistence) && "
                 "self.persistence.enabled && has(self.persistence.existingClaim) && "
                 "self.persistence.existingClaim.size() > 0 : true",
                 "high availability needs persistence.existingClaim, a ReadWriteMany claim "
                 "the controllers share"),
            rule("!has(self.ha) || !self.ha.enabled || !has(self.ha.backups) || "
                 "self.ha.backups <= 2",
                 "spec.ha.backups: Shoal runs at most 2 backup controllers")]})


def persistence():
    quantity = {"anyOf": [{"type": "integer"}, {"type": "string"}],
                "x-kubernetes-int-or-string": True,
                "pattern": r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|"
                           r"([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"}
    typed_ref = {"apiGroup": g.string("API group."), "kind": g.string("Kind."),
                 "name": g.string("Name.")}
    return g.obj("The StateSaveLocation volume: a claim the operator makes, or an existing one.", {
        "enabled": g.boolean("Keep the state on a PersistentVolumeClaim.", True),
        "existingClaim": g.string("Use this claim (ReadWriteMany with ha)."),
        "accessModes": {"type": "array", "description": "Access modes of the claim made.",
                        "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"},
        "dataSource": g.obj("Populate the claim from this.", typed_ref,
                            required=["kind", "name"], **{"x-kubernetes-map-type": "atomic"}),
        "dataSourceRef": g.obj("Populate the claim from this.",
                               {**typed_ref, "namespace": g.string("Namespace.")},
                               required=["kind", "name"]),
        "resources": g.obj("Size of the claim (requests.storage).", {
            "limits": {"type": "object", "description": "Limits.",
                       "additionalProperties": dict(quantity)},
            "requests": {"type": "object", "description": "Requests.",
                         "additionalProperties": dict(quantity)}}),
        "selector": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                     "x-kubernetes-map-type": "atomic",
                     "description": "Label selector of the volumes to bind."},
        "storageClassName": g.string("StorageClass of the claim made."),
        "volumeAttributesClassName": g.string("VolumeAttributesClass of the claim made."),
        "volumeMode": g.string("Filesystem or Block."),
        "volumeName": g.string("Bind to this PersistentVolume.")},
        required=["enabled"])


def metrics():
    endpoint = g.obj("A path to scrape.", {
        "path": g.string("HTTP path."),
        "interval": g.string("Scrape interval.", pattern=PROM_DURATION),
        "scrapeTimeout": g.string("Scrape timeout.", pattern=PROM_DURATION)},
        required=["path"])
    return g.obj("OpenMetrics from the controller.", {
        "enabled": g.boolean("Serve metrics (MetricsType=metrics/openmetrics).", False),
        "serviceMonitor": g.obj("A Prometheus Operator ServiceMonitor.", {
            "enabled": g.boolean("Create the ServiceMonitor.", False),
            "labels": string_map("Labels of the ServiceMonitor."),
            "annotations": string_map("Annotations of the ServiceMonitor."),
            "interval": g.string("Scrape interval.", pattern=PROM_DURATION),
            "scrapeTimeout": g.string("Scrape timeout.", pattern=PROM_DURATION),
            "endpoints": {"type": "array", "description": "Paths to scrape.", "nullable": True,
                          "items": endpoint}}, nullable=True)})


def controller_status():
    return status({
        "observedGeneration": g.observed_generation(),
        "configHash": g.string("Shoal: hash of the configuration last applied."),
        "configChangedAt": integer("Shoal: when the configuration last changed (unix s).",
                                     fmt="int64"),
        "reconfigureStage": integer("Shoal: reconfigure progress (0-2).", minimum=0,
                                      maximum=2),
        "leader": g.string("Shoal: the pod running the active controller.")})


def nodeset_spec():
    return g.obj("Desired state of a set of Slurm workers, run by Shoal as shoald.", {
        "controllerRef": local_ref("The Controller, in the same namespace."),
        "replicas": integer("Workers (StatefulSet mode); 0 is allowed.", default=1),
        "scalingMode": g.string("StatefulSet: `replicas` pods; DaemonSet: one per matching "
                                "Kubernetes node.", enum=["DaemonSet", "StatefulSet"],
                                default="StatefulSet"),
        "slurmd": container("The worker container."),
        "ssh": g.obj("sshd in worker pods: " + UNSUPPORTED + " (use a LoginSet).", {
            "enabled": g.boolean("Run sshd in the workers.", False),
            "extraSshdConfig": g.string("Lines appended to sshd_config."),
            "sssdConfRef": selector("Secret key holding sssd.conf.")},
            required=["enabled", "sssdConfRef"]),
        "logfile": sidecar("Slinky's log sidecar."),
        "template": pod_template(),
        "extraConf": g.string("Node parameters (--conf): Shoal takes Features, Gres and "
                              "Weight."),
        "partition": g.obj("A partition named after the NodeSet.", {
            "enabled": g.boolean("Make the partition.", False),
            "config": g.string("Extra partition parameters.", pattern="^[^\\n]+$")},
            required=["enabled"]),
        "volumeClaimTemplates": {"description": "PersistentVolumeClaims made per worker pod.",
                                 "x-kubernetes-preserve-unknown-fields": True,
                                 "nullable": True},
        "updateStrategy": g.obj("How workers are replaced when their template changes.", {
            "type": g.string("Update strategy.",
                             enum=["RollingUpdate", "OnDelete", "ScheduledUpdate"],
                             default="RollingUpdate"),
            "rollingUpdate": g.obj("RollingUpdate parameters.", {
                "maxUnavailable": {
                    "description": "Workers replaced at a time: a number or a percentage.",
                    "x-kubernetes-int-or-string": True,
                    "anyOf": [{"type": "integer"}, {"type": "string"}], "default": "25%"}}),
            "scheduledUpdate": g.obj("ScheduledUpdate: a MAINT reservation window.", {
                "startTime": g.string("Start of the window (RFC 3339).", format="date-time"),
                "duration": g.string("Length of the window.", default="30m"),
                "flags": {"type": "array", "nullable": True, "items": {"type": "string"},
                          "description": "Extra reservation flags: " + UNSUPPORTED + "."}},
                **{"x-kubernetes-validations": [
                    rule("!has(self.flags) || size(self.flags) == 0",
                         "spec.updateStrategy.scheduledUpdate.flags: extra reservation flags "
                         + UNSUPPORTED)]})},
            **{"x-kubernetes-validations": [
                rule("self.type != 'ScheduledUpdate' || (has(self.scheduledUpdate) && "
                     "has(self.scheduledUpdate.startTime))",
                     "scheduledUpdate.startTime and scheduledUpdate.duration are required "
                     "when type is ScheduledUpdate")]}),
        "revisionHistoryLimit": integer("Revisions kept (Shoal keeps none).", default=0),
        "persistentVolumeClaimRetentionPolicy": g.obj("What happens to the claims.", {
            "whenDeleted": g.string("When the NodeSet is deleted.", enum=["Retain", "Delete"],
                                    default="Retain"),
            "whenScaled": g.string("When a worker is scaled away.", enum=["Retain", "Delete"],
                                   default="Retain")}),
        "minReadySeconds": integer("Seconds ready before a worker counts as available."),
        "ordinalPadding": integer("Zero padding of pod ordinals: " + UNSUPPORTED + ".",
                                    fmt=None, default=0),
        "pinToNode": g.boolean("Pin workers to their first node: " + UNSUPPORTED + ".", False),
        "workloadDisruptionProtection": g.boolean("A PodDisruptionBudget protects busy workers.",
                                                  True),
        "pruneSlurmNodeRecords": g.string("Remove Slurm nodes whose Kubernetes node is gone.",
                                          enum=["Never", "NodeNotFound"], default="Never"),
        "oversubscribeNode": g.boolean("Allow several workers on one Kubernetes node.", False)},
        required=["controllerRef"],
        **{"x-kubernetes-validations": [
            rule("!has(self.pinToNode) || !self.pinToNode",
                 "spec.pinToNode " + UNSUPPORTED + ": pin with template.spec.affinity"),
            rule("!has(self.ordinalPadding) || self.ordinalPadding == 0",
                 "spec.ordinalPadding " + UNSUPPORTED + ": worker pods are <nodeset>-<n>"),
            rule("!has(self.ssh) || !self.ssh.enabled",
                 "spec.ssh.enabled: sshd in worker pods " + UNSUPPORTED + ": use a LoginSet")]})


def nodeset_status():
    return status({
        "replicas": count("Worker pods that exist."),
        "updatedReplicas": count("Worker pods at the current revision."),
        "readyReplicas": count("Ready worker pods."),
        "availableReplicas": count("Worker pods ready for minReadySeconds."),
        "unavailableReplicas": count("Workers still missing to be all available."),
        "desired": count("Workers wanted."),
        "slurmIdle": count("Workers whose node is IDLE."),
        "slurmAllocated": count("Workers whose node is ALLOCATED or MIXED."),
        "slurmDown": count("Workers whose node is DOWN."),
        "slurmDrain": count("Workers whose node is drained or draining."),
        "observedGeneration": g.observed_generation(),
        "nodeSetHash": g.string("Revision hash of the pod template."),
        "collisionCount": count("Unused by Shoal."),
        "ordinalToNode": string_map("Unused by Shoal."),
        "selector": g.string("Label selector of the pods (scale subresource).")},
        required=["nodeSetHash", "selector"])


def loginset_spec():
    int_or_string = {"x-kubernetes-int-or-string": True,
                     "anyOf": [{"type": "integer"}, {"type": "string"}]}
    return g.obj("Desired state of login pods (sshd and the commands).", {
        "controllerRef": local_ref("The Controller, in the same namespace."),
        "replicas": integer("Login pods.", default=1),
        "login": container("The login container."),
        "initconf": sidecar("Slinky's configuration init container."),
        "template": pod_template(),
        "rootSshAuthorizedKeys": g.string("root's authorized_keys."),
        "extraSshdConfig": g.string("Lines appended to sshd_config."),
        "sssdConfRef": selector("Secret key holding sssd.conf."),
        "strategy": g.obj("How login pods are replaced (Shoal: one at a time).", {
            "type": g.string("RollingUpdate (Recreate " + UNSUPPORTED + ")."),
            "rollingUpdate": g.obj("RollingUpdate parameters (Shoal replaces one pod at a "
                                   "time).", {
                "maxSurge": {"description": "Ignored.", **int_or_string},
                "maxUnavailable": {"description": "Ignored.", **int_or_string}})}),
        "service": service()},
        required=["controllerRef", "sssdConfRef"],
        **{"x-kubernetes-validations": [
            rule("!has(self.strategy) || !has(self.strategy.type) || "
                 "self.strategy.type == 'RollingUpdate'",
                 "spec.strategy.type: only RollingUpdate is supported by Shoal")]})


def loginset_status():
    return status({"replicas": count("Login pods that exist."),
                   "readyReplicas": count("Shoal: ready login pods."),
                   "observedGeneration": g.observed_generation(),
                   "selector": g.string("Label selector of the pods (scale subresource).")},
                  required=["selector"])


def accounting_spec():
    return g.obj("Desired state of the accounting daemon, run by Shoal as shoaldbd.", {
        **auth_refs(),
        "external": g.boolean("A slurmdbd outside Kubernetes: " + UNSUPPORTED + ".", False),
        "externalConfig": external_config(),
        "slurmdbd": container("The accounting container."),
        "template": pod_template(),
        "storageConfig": g.obj("The MariaDB/MySQL database.", {
            "host": g.string("StorageHost."),
            "port": integer("StoragePort.", fmt=None, default=3306),
            "database": g.string("StorageLoc.", default="slurm_acct_db"),
            "username": g.string("StorageUser (required by Shoal)."),
            "passwordKeyRef": selector("Secret key holding StoragePass.")},
            required=["host", "passwordKeyRef"]),
        "extraConf": g.string("Text appended to slurmdbd.conf."),
        "service": service()},
        **{"x-kubernetes-validations": [
            rule("!self.external",
                 "spec.external: a slurmdbd outside Kubernetes " + UNSUPPORTED +
                 ": point the Controller's extraConf (AccountingStorageHost) at it instead"),
            rule("!has(self.jwksKeyRef)",
                 "spec.jwksKeyRef: JWKS " + UNSUPPORTED + ": use jwtKeyRef (HS256)"),
            rule("!self.external ? has(self.slurmKeyRef) : true",
                 "slurmKeyRef must be set when external is false"),
            rule("!self.external ? has(self.jwtKeyRef) || has(self.jwtHs256KeyRef) : true",
                 "jwtKeyRef or jwtHs256KeyRef must be set when external is false"),
            rule("self.external ? has(self.externalConfig) : true",
                 "externalConfig must be set when external is true")]})


def restapi_spec():
    return g.obj("Desired state of the REST API, run by Shoal as shoalrestd.", {
        "controllerRef": local_ref("The Controller, in the same namespace."),
        "replicas": integer("REST API pods.", default=1),
        "slurmrestd": container("The REST API container."),
        "template": pod_template(),
        "service": service()},
        required=["controllerRef"])


def token_spec():
    return g.obj("A JWT for a user, kept in a Secret.", {
        "jwtHs256KeyRef": selector("Deprecated name of jwtKeyRef."),
        "jwtKeyRef": selector("Secret key holding the HS256 key that signs the token."),
        "username": g.string("The token's user."),
        "lifetime": g.string("Token lifetime (a Go duration; Shoal: at least 1m)."),
        "refresh": g.boolean("Reissue the token before it expires; false makes the Secret "
                             "immutable.", True),
        "secretRef": selector("Secret key the token is written to (default: the Token's "
                              "name, key auth-token).")},
        required=["username"],
        **{"x-kubernetes-validations": [
            rule("has(self.jwtKeyRef) || has(self.jwtHs256KeyRef)",
                 "jwtKeyRef or jwtHs256KeyRef must be set")]})


def token_status():
    return status({"issuedAt": g.string("When the current token was issued.",
                                        format="date-time"),
                   "expiresAt": g.string("Shoal: when it expires.", format="date-time"),
                   "observedGeneration": g.observed_generation()})


def simple_status(with_replicas):
    props = {"observedGeneration": g.observed_generation()}
    if with_replicas:
        props.update({"replicas": count("Shoal: pods that exist."),
                      "readyReplicas": count("Shoal: ready pods.")})
    return status(props)


SCALE = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
         "labelSelectorPath": ".status.selector"}
AGE = {"name": "AGE", "type": "date", "jsonPath": ".metadata.creationTimestamp"}


def col(name, kind, path, desc, priority=0):
    c = {"name": name, "type": kind, "jsonPath": path, "description": desc}
    if priority:
        c["priority"] = priority
    return c


KINDS = [
    # kind, plural, shortNames, spec, status, scale, printer columns
    ("Controller", "controllers", ["slurmctld"], controller_spec, controller_status, False,
     [AGE]),
    ("NodeSet", "nodesets", ["nodesets", "nss", "slurmd"], nodeset_spec, nodeset_status, True, [
        col("DESIRED", "integer", ".status.desired", "Workers wanted."),
        col("REPLICAS", "integer", ".status.replicas", "Worker pods."),
        col("UPDATED", "integer", ".status.updatedReplicas", "Worker pods at the revision."),
        col("READY", "integer", ".status.readyReplicas", "Ready worker pods."),
        col("IDLE", "integer", ".status.slurmIdle", "IDLE nodes.", 1),
        col("ALLOCATED", "integer", ".status.slurmAllocated", "ALLOCATED or MIXED nodes.", 1),
        col("DOWN", "integer", ".status.slurmDown", "DOWN nodes.", 1),
        col("DRAIN", "integer", ".status.slurmDrain", "Drained nodes.", 1),
        AGE]),
    ("LoginSet", "loginsets", ["loginsets", "lss", "sackd"], loginset_spec, loginset_status,
     True, [col("REPLICAS", "integer", ".status.replicas", "Login pods."), AGE]),
    ("Accounting", "accountings", ["slurmdbd"], accounting_spec,
     lambda: simple_status(False), False, [AGE]),
    ("RestApi", "restapis", ["slurmrestd"], restapi_spec, lambda: simple_status(True), False,
     [AGE]),
    ("Token", "tokens", ["tokens", "jwt"], token_spec, token_status, False, [
        col("USER", "string", ".spec.username", "The token's user."),
        col("IAT", "date", ".status.issuedAt", "When the token was issued."),
        AGE]),
]


def crd(kind, plural, short, spec, stat, scale, columns):
    names = {"kind": kind, "listKind": kind + "List", "plural": plural,
             "singular": kind.lower(), "shortNames": short, "categories": ["shoal"]}
    subresources = {"status": {}}
    if scale:
        subresources["scale"] = dict(SCALE)
    schema = g.obj(f"{kind} of SchedMD Slinky's API, served by shoal-operator.", {
        "apiVersion": g.string("API version of the object."),
        "kind": g.string("Kind of the object."),
        "metadata": {"type": "object"},
        "spec": spec(),
        "status": stat()})
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}",
                     "labels": {"app.kubernetes.io/part-of": "shoal",
                                "shoal.dev/slinky-compat": "true"},
                     "annotations": dict(KEEP)},
        "spec": {
            "group": GROUP, "names": names, "scope": "Namespaced",
            "versions": [{"name": VERSION, "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": schema},
                          "subresources": subresources,
                          "additionalPrinterColumns": columns}]}}


def files():
    """{file name: text} of the standalone CRDs, and the chart template's text."""
    out = {f"{GROUP}_{k[1]}.yaml": g.render(crd(*k)) for k in KINDS}
    head = ("{{- /* Generated by deploy/crds/generate.py: edit that, not this file.\n"
            "The slinky.slurm.net CRDs of the Slinky compatibility mode, only with\n"
            "slinkyCompat.enabled (docs/kubernetes-slinky.md). Templates, not crds/, so that\n"
            "the value decides; kept on uninstall (deleting a CRD deletes its resources). */}}\n"
            "{{- if .Values.slinkyCompat.enabled }}\n")
    body = "".join("---\n" + out[name].split("\n", 1)[1] for name in sorted(out))
    return out, head + body + "{{- end }}\n"
