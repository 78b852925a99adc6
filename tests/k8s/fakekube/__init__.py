"""fakekube: an in-memory fake of the Kubernetes API server for Shoal's tests.

Start it from Python with ``FakeKube().start()`` (``.url``, ``.kubeconfig()``, ``.stop()``), or
as a process with ``python3 -m tests.k8s.fakekube --port 0 --port-file F`` (also
``python3 tests/k8s/fakekube/server.py``); it prints the port it listens on. Plain HTTP on
127.0.0.1; any bearer token is accepted (and recorded in ``FakeKube.tokens``).

Faithful (checked with kubectl and the official Python client in
tests/integration/test_fakekube.py):
- Resources as JSON per (group, resource, namespace, name): core v1 pods, services, configmaps,
  secrets, nodes, namespaces, persistentvolumeclaims, persistentvolumes, events,
  serviceaccounts, endpoints; apps/v1 deployments, statefulsets, daemonsets, replicasets,
  controllerrevisions; policy/v1 and v1beta1 poddisruptionbudgets; coordination.k8s.io/v1
  leases; rbac, autoscaling HPAs; apiextensions.k8s.io/v1 CRDs, whose custom resources are
  served as soon as the CRD is created (status Established/NamesAccepted, acceptedNames), with
  their structural schema applied (defaults, pruning, validation -> 422), status and scale
  subresources and additionalPrinterColumns. Deleting a CRD deletes its custom resources.
- One global resourceVersion counter. create (generateName, uid, creationTimestamp,
  generation, 409 AlreadyExists, namespace must exist and not be terminating), get, list
  (label selectors =, ==, !=, in, notin, exists, !exists; field selectors on any dotted path;
  limit/continue), update (409 Conflict on a stale resourceVersion; no-op updates keep the
  resourceVersion and emit no event; generation bumps when anything outside metadata/status
  changes), merge patch, JSON patch, strategic merge patch (see patch.py for the
  approximation; 415 for custom resources, like the real server), delete with
  propagationPolicy, gracePeriodSeconds, preconditions; deletecollection; dryRun=All.
- Status subresource (the main endpoint keeps status, /status changes only status) and scale
  subresource (autoscaling/v1 Scale; GET, PUT, PATCH; status.selector from labelSelectorPath).
- Watch (?watch=1 and /watch/ paths): chunked JSON lines, ADDED/MODIFIED/DELETED/BOOKMARK/ERROR,
  resume from a resourceVersion out of a bounded history (410 Expired ERROR event when too old),
  selector transitions reported as ADDED/DELETED, timeoutSeconds, allowWatchBookmarks.
- Finalizers and deletionTimestamp; pods bound to a node are only marked for deletion (the
  kubelet deletes them with gracePeriodSeconds=0), unscheduled or finished pods go at once;
  owner-reference garbage collection (background, foreground, orphan); namespace deletion
  deletes the namespace's contents first.
- Eviction API (policy/v1 and v1beta1 bodies) honouring PodDisruptionBudgets, whose status
  (currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed) is kept up to date; a
  refused eviction is 429 "Cannot evict pod as it would violate the pod's disruption budget.".
- Discovery (/api, /apis, group versions with verbs, shortNames, categories and subresources),
  /version, /healthz, /livez, /readyz, /openapi/v2 (an empty protobuf document: kubectl
  validates nothing client-side and uses its compiled-in strategic merge metadata), Table
  output for kubectl (pods, nodes, namespaces, CRD printer columns, Name/Age otherwise).
- A tiny scheduler (on by default): pending pods are bound to the Ready, schedulable node with
  the fewest pods that satisfies nodeSelector, required node affinity and taints/tolerations;
  PodScheduled condition; pods/binding endpoint.

Client notes: kubectl (clientcmd) sends no credentials to a plain-http server, so tokens are
only recorded from other clients (the Python client, the operator). Request bodies must be
JSON (or YAML): protobuf/CBOR bodies get 415, which newer kubectl sends for its `create
<generator>` subcommands (`kubectl create configmap ...`); use `kubectl apply -f`/`create -f`.
Tested with Debian's kubectl 1.20 and kubectl 1.32. /openapi/v2 has no paths, so kubectl
1.20 refuses `--dry-run=server` and `kubectl explain` finds nothing.

Not faithful: no authentication/authorization/RBAC/admission webhooks; no TLS; lists and
continue tokens always read the latest state (resourceVersion on list is ignored); no
controllers besides the ones above (Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs
create no pods; nodes never go NotReady by themselves; terminating pods stay until deleted with
gracePeriodSeconds=0); no server-side apply, no managedFields; no CEL validation, no version
conversion (objects are served as whatever version is asked for); pod spec immutability and
most built-in type validation are not enforced; field selectors are accepted on any field; an
eviction with several matching PDBs is a 500 like the real one but unhealthy-pod policies are
not modelled; protobuf encoding of resources is not supported (JSON only).
"""

from .server import FakeKube

__all__ = ["FakeKube"]
