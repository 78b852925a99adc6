"""The object store: every object as JSON, a global resourceVersion counter like etcd's, a bounded
event history for watch resumption, and the verbs (create, update, patch, delete, scale). The
built-in controllers live in controllers.py.

Stored objects are never mutated in place: every write stores a fresh dict, so snapshots handed
to watchers can be shared between threads without copying.
"""

import base64
import collections
import copy
import json
import queue
import random
import re
import threading
import uuid

from . import errors
from .controllers import Controllers
from .labelsel import fields_match, labels_match, selector_object_to_string
from .objutil import (CRD_KEY, DEFAULT_NAMESPACES, DNS1035_LABEL, DNS1123_LABEL,
                      DNS1123_SUBDOMAIN, GENERATE_CHARS, NS_KEY, POD_KEY, STATUS_RESET_ON_CREATE,
                      comparable, get_path, now_rfc3339, set_path, spec_part)
from .patch import PatchError, json_patch, merge_patch, strategic_merge_patch
from .registry import Registry, type_from_crd
from .schema import process_custom_resource


class Watcher:
    def __init__(self, key, namespace, label_reqs, field_reqs):
        self.key = key
        self.namespace = namespace
        self.label_reqs = label_reqs
        self.field_reqs = field_reqs
        self.queue = queue.Queue()
        self.closed = False

    def matches(self, obj):
        if obj is None:
            return False
        md = obj.get("metadata", {})
        if self.namespace is not None and md.get("namespace", "") != self.namespace:
            return False
        return labels_match(self.label_reqs, md.get("labels")) and \
            fields_match(self.field_reqs, obj)

    def event(self, etype, old, new):
        """Translates a store event into what this watcher sees (selector transitions)."""
        if etype == "ADDED":
            return ("ADDED", new) if self.matches(new) else None
        if etype == "DELETED":
            return ("DELETED", new) if self.matches(new) else None
        om, nm = self.matches(old), self.matches(new)
        if om and nm:
            return ("MODIFIED", new)
        if nm:
            return ("ADDED", new)
        if om:
            return ("DELETED", new)
        return None

    def offer(self, etype, old, new):
        ev = self.event(etype, old, new)
        if ev is not None:
            self.queue.put(ev)

    def close(self):
        self.closed = True
        self.queue.put(None)


class Store(Controllers):
    def __init__(self, history_size=5000, scheduler=True):
        self.registry = Registry()
        self.lock = threading.RLock()
        self.rv = 0
        self.objects = collections.defaultdict(dict)  # (group, plural) -> {(ns, name): obj}
        self.history = collections.deque(maxlen=history_size)
        self.watchers = []
        self.scheduler_enabled = scheduler
        self._in_reconcile = False
        self._dirty = False
        with self.lock:
            for ns in DEFAULT_NAMESPACES:
                self.create(self.registry.by_key(NS_KEY), "",
                            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})

    # ------------------------------------------------------------------ low level writes

    def _next_rv(self):
        self.rv += 1
        return self.rv

    def _emit(self, etype, key, old, new):
        self.history.append((self.rv, etype, key, old, new))
        for w in list(self.watchers):
            if w.key == key and not w.closed:
                w.offer(etype, old, new)
        self._dirty = True

    def _put(self, rt, obj, old=None, etype=None):
        """Stores obj (a fresh dict) with a new resourceVersion and emits an event."""
        md = obj["metadata"]
        md["resourceVersion"] = str(self._next_rv())
        self.objects[rt.key][(md.get("namespace", ""), md["name"])] = obj
        self._emit(etype or ("ADDED" if old is None else "MODIFIED"), rt.key, old, obj)
        return obj

    def _remove(self, rt, obj):
        md = obj["metadata"]
        self.objects[rt.key].pop((md.get("namespace", ""), md["name"]), None)
        final = copy.deepcopy(obj)
        final["metadata"]["resourceVersion"] = str(self._next_rv())
        self._emit("DELETED", rt.key, obj, final)
        if rt.key == CRD_KEY:
            self._crd_removed(obj)
        return final

    # ------------------------------------------------------------------ reads

    def get(self, rt, ns, name):
        with self.lock:
            obj = self.objects[rt.key].get((ns if rt.namespaced else "", name))
            if obj is None:
                raise errors.not_found(rt, name)
            return obj

    def list(self, rt, ns=None, label_reqs=(), field_reqs=(), limit=0, cont=None):
        """Returns (items, resourceVersion, continue token, remaining count)."""
        with self.lock:
            rv = self.rv
            items = []
            for (ons, _), obj in self.objects[rt.key].items():
                if ns is not None and rt.namespaced and ons != ns:
                    continue
                md = obj["metadata"]
                if labels_match(label_reqs, md.get("labels")) and fields_match(field_reqs, obj):
                    items.append(obj)
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        if cont:
            try:
                token = json.loads(base64.urlsafe_b64decode(cont.encode()).decode())
                start = tuple(token["start"])
            except (ValueError, KeyError, TypeError) as e:
                raise errors.bad_request("continue key is not valid") from e
            items = [o for o in items
                     if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > start]
        token, remaining = "", None
        if limit and len(items) > limit:
            last = items[limit - 1]["metadata"]
            token = base64.urlsafe_b64encode(json.dumps(
                {"rv": rv, "start": [last.get("namespace", ""), last["name"]]}).encode()).decode()
            remaining = len(items) - limit
            items = items[:limit]
        return items, rv, token, remaining

    def watch(self, rt, ns, label_reqs, field_reqs, since_rv):
        """Registers a watcher; replays history after since_rv (None: synthetic ADDED events)."""
        w = Watcher(rt.key, ns if rt.namespaced else None, label_reqs, field_reqs)
        with self.lock:
            if since_rv is None:
                for obj in sorted(self.objects[rt.key].values(),
                                  key=lambda o: int(o["metadata"]["resourceVersion"])):
                    if w.matches(obj):
                        w.queue.put(("ADDED", obj))
            else:
                oldest = self.history[0][0] if self.history else self.rv + 1
                if since_rv < oldest - 1 and since_rv < self.rv:
                    raise errors.gone(f"too old resource version: {since_rv} ({oldest - 1})")
                for rv, etype, key, old, new in self.history:
                    if rv > since_rv and key == rt.key:
                        w.offer(etype, old, new)
            self.watchers.append(w)
        return w

    def unwatch(self, w):
        with self.lock:
            if w in self.watchers:
                self.watchers.remove(w)

    def close_watchers(self):
        with self.lock:
            for w in self.watchers:
                w.close()
            self.watchers = []

    def all_objects(self):
        with self.lock:
            return {k: list(v.values()) for k, v in self.objects.items()}

    # ------------------------------------------------------------------ create

    def _validate_name(self, rt, name):
        if rt.key == ("", "services"):
            ok, what = DNS1035_LABEL.match(name) and len(name) <= 63, "RFC 1035 label"
        elif rt.key == NS_KEY:
            ok, what = DNS1123_LABEL.match(name) and len(name) <= 63, "RFC 1123 label"
        elif rt.key in (("", "configmaps"), ("", "secrets")):
            ok, what = re.match(r"^[-._a-zA-Z0-9]+$", name) and len(name) <= 253, "valid name"
        else:
            ok, what = DNS1123_SUBDOMAIN.match(name) and len(name) <= 253, "RFC 1123 subdomain"
        if not ok:
            raise errors.invalid(rt, name, [("metadata.name", f'Invalid value: "{name}": a '
                                             f"lowercase {what} must consist of lower case "
                                             "alphanumeric characters, '-' or '.'")])

    def _check_namespace(self, rt, ns, name):
        if not rt.namespaced:
            return
        if not ns:
            raise errors.bad_request("the server could not find the requested resource")
        nsobj = self.objects[NS_KEY].get(("", ns))
        if nsobj is None:
            raise errors.ApiError(404, "NotFound", f'namespaces "{ns}" not found',
                                  {"name": ns, "kind": "namespaces"})
        if nsobj["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(rt, name, f'{rt.plural} "{name}" is forbidden: unable to '
                                   f"create new content in namespace {ns} because it is being "
                                   "terminated")

    def create(self, rt, ns, body, dry_run=False):
        with self.lock:
            obj = copy.deepcopy(body)
            md = obj.setdefault("metadata", {})
            if not isinstance(md, dict):
                raise errors.bad_request("metadata must be an object")
            ns = ns if rt.namespaced else ""
            if rt.namespaced:
                if md.get("namespace") and md["namespace"] != ns:
                    raise errors.bad_request("the namespace of the provided object does not "
                                             "match the namespace sent on the request")
                md["namespace"] = ns
            else:
                md.pop("namespace", None)
            name = md.get("name")
            if not name:
                prefix = md.get("generateName")
                if not prefix:
                    raise errors.invalid(rt, "", [("metadata.name",
                                                   "Required value: name or generateName is "
                                                   "required")])
                for _ in range(100):
                    name = prefix + "".join(random.choice(GENERATE_CHARS) for _ in range(5))
                    if (ns, name) not in self.objects[rt.key]:
                        break
                md["name"] = name
            self._validate_name(rt, name)
            self._check_namespace(rt, ns, name)
            if (ns, name) in self.objects[rt.key]:
                raise errors.already_exists(rt, name)
            obj["apiVersion"] = obj.get("apiVersion") or rt.api_version()
            obj["kind"] = rt.kind
            md["uid"] = str(uuid.uuid4())
            md["creationTimestamp"] = now_rfc3339()
            md["generation"] = 1
            for k in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "selfLink"):
                md.pop(k, None)
            if rt.key in STATUS_RESET_ON_CREATE or (rt.crd_name and "status" in rt.subresources):
                obj.pop("status", None)
            obj = self._defaults(rt, obj)
            obj = self._admit(rt, obj, name)
            if dry_run:
                return obj
            self._put(rt, obj)
            if rt.key == CRD_KEY:
                self._crd_established(obj)
            self._reconcile()
            return self.objects[rt.key].get((ns, name), obj)

    def _defaults(self, rt, obj):
        spec = obj.setdefault("spec", {}) if rt.key in (POD_KEY, ("", "services")) else None
        if rt.key == POD_KEY:
            spec.setdefault("restartPolicy", "Always")
            spec.setdefault("terminationGracePeriodSeconds", 30)
            spec.setdefault("dnsPolicy", "ClusterFirst")
            spec.setdefault("schedulerName", "default-scheduler")
            spec.setdefault("enableServiceLinks", True)
            for c in spec.get("containers") or []:
                c.setdefault("imagePullPolicy", "IfNotPresent")
                c.setdefault("terminationMessagePath", "/dev/termination-log")
                c.setdefault("terminationMessagePolicy", "File")
            st = obj.setdefault("status", {})
            st.setdefault("phase", "Pending")
            st.setdefault("qosClass", "BestEffort")
        elif rt.key == ("", "services"):
            spec.setdefault("type", "ClusterIP")
            spec.setdefault("sessionAffinity", "None")
            if "clusterIP" not in spec:
                n = len(self.objects[rt.key]) + 10
                spec["clusterIP"] = f"10.96.{n // 250}.{n % 250 + 1}"
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
            for p in spec.get("ports") or []:
                p.setdefault("protocol", "TCP")
                p.setdefault("targetPort", p.get("port"))
        elif rt.key == NS_KEY:
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
            labels = obj["metadata"].setdefault("labels", {})
            labels["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        elif rt.key in (("apps", "deployments"), ("apps", "statefulsets"),
                        ("apps", "replicasets")):
            obj.setdefault("spec", {}).setdefault("replicas", 1)
        elif rt.key == CRD_KEY:
            names = obj.setdefault("spec", {}).setdefault("names", {})
            if names.get("kind"):
                names.setdefault("singular", names["kind"].lower())
                names.setdefault("listKind", names["kind"] + "List")
        return obj

    def _admit(self, rt, obj, name):
        """Validation and CR schema processing; returns the (possibly pruned) object."""
        if rt.key == CRD_KEY:
            spec = obj.get("spec", {})
            names = spec.get("names", {})
            causes = []
            for f in ("group",):
                if not spec.get(f):
                    causes.append((f"spec.{f}", "Required value"))
            if not names.get("plural"):
                causes.append(("spec.names.plural", "Required value"))
            if not names.get("kind"):
                causes.append(("spec.names.kind", "Required value"))
            if not spec.get("versions"):
                causes.append(("spec.versions", "Invalid value: null: must have exactly one "
                                                "version marked as storage version"))
            if not causes and name != f"{names['plural']}.{spec['group']}":
                causes.append(("metadata.name", f'Invalid value: "{name}": must be spec.names.'
                                                f"plural+\".\"+spec.group"))
            if causes:
                raise errors.invalid(rt, name, causes)
        if rt.crd_name:
            version = obj.get("apiVersion", "").split("/")[-1]
            schema = rt.schemas.get(version)
            if schema:
                obj, causes = process_custom_resource(schema, obj)
                if causes:
                    raise errors.invalid(rt, name, causes)
        return obj

    # ------------------------------------------------------------------ update / patch

    def update(self, rt, ns, name, body, subresource=None, dry_run=False):
        with self.lock:
            ns = ns if rt.namespaced else ""
            old = self.objects[rt.key].get((ns, name))
            if old is None:
                raise errors.not_found(rt, name)
            if not isinstance(body, dict):
                raise errors.bad_request("the body of the request is not an object")
            md = body.get("metadata") or {}
            if md.get("name") and md["name"] != name:
                raise errors.bad_request("the name of the object does not match the name on "
                                         "the URL")
            if rt.namespaced and md.get("namespace") and md["namespace"] != ns:
                raise errors.bad_request("the namespace of the provided object does not match "
                                         "the namespace sent on the request")
            rv = md.get("resourceVersion")
            if rv and rv != old["metadata"]["resourceVersion"]:
                raise errors.conflict(rt, name)
            if subresource == "status":
                new = copy.deepcopy(old)
                if "status" in body:
                    new["status"] = copy.deepcopy(body["status"])
                else:
                    new.pop("status", None)
            else:
                new = copy.deepcopy(body)
                nmd = new.setdefault("metadata", {})
                for k in ("uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds", "generation", "namespace", "name"):
                    if k in old["metadata"]:
                        nmd[k] = old["metadata"][k]
                    else:
                        nmd.pop(k, None)
                if "status" in rt.subresources:
                    if "status" in old:
                        new["status"] = copy.deepcopy(old["status"])
                    else:
                        new.pop("status", None)
                new["kind"] = rt.kind
                new["apiVersion"] = new.get("apiVersion") or old.get("apiVersion")
                if rt.key == NS_KEY:
                    new["spec"] = old.get("spec", {})
                    new["status"] = old.get("status", {})
            if subresource is None and rt.key != NS_KEY:
                # Defaulting applies to every write, as in the real decoder.
                if rt.key == ("", "services") and "clusterIP" not in (new.get("spec") or {}):
                    new.setdefault("spec", {})["clusterIP"] = old.get("spec", {}).get("clusterIP")
                status = new.get("status")
                new = self._defaults(rt, new)
                if status is None:
                    new.pop("status", None)
                else:
                    new["status"] = status
            if rt.key == POD_KEY and subresource is None:
                self._check_pod_update(rt, name, old, new)
            if spec_part(new) != spec_part(old):
                new["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
            new = self._admit(rt, new, name)
            return self._commit_update(rt, old, new, dry_run)

    @staticmethod
    def _check_pod_update(rt, name, old, new):
        """A pod's spec is immutable but for images, activeDeadlineSeconds and tolerations."""
        def mutable_masked(spec):
            spec = copy.deepcopy(spec or {})
            for key in ("containers", "initContainers"):
                for c in spec.get(key) or []:
                    c.pop("image", None)
            for key in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
                spec.pop(key, None)
            return spec
        if mutable_masked(old.get("spec")) != mutable_masked(new.get("spec")):
            raise errors.invalid(rt, name, [("spec", "Forbidden: pod updates may not change "
                                             "fields other than `spec.containers[*].image`, "
                                             "`spec.initContainers[*].image`, "
                                             "`spec.activeDeadlineSeconds`, `spec.tolerations` "
                                             "(only additions to existing tolerations) or "
                                             "`spec.terminationGracePeriodSeconds`")])

    def _commit_update(self, rt, old, new, dry_run=False):
        """Stores new unless nothing changed; finishes deletion when the last finalizer goes."""
        md = new["metadata"]
        if not md.get("finalizers"):
            md.pop("finalizers", None)
        if comparable(new) == comparable(old):
            return old
        if dry_run:
            return new
        if md.get("deletionTimestamp") and not md.get("finalizers") and \
                not self._awaits_kubelet(rt, new):
            final = self._remove(rt, new)
            self._reconcile()
            return final
        self._put(rt, new, old)
        if rt.key == CRD_KEY:
            self._crd_established(new)
        self._reconcile()
        return self.objects[rt.key].get((md.get("namespace", ""), md["name"]), new)

    def _awaits_kubelet(self, rt, obj):
        """A pod on a node is deleted for good by the kubelet (DELETE gracePeriodSeconds=0)."""
        if rt.key != POD_KEY:
            return False
        return bool(obj["metadata"].get("deletionGracePeriodSeconds"))

    def patch(self, rt, ns, name, content_type, patch_body, subresource=None, dry_run=False):
        with self.lock:
            ns = ns if rt.namespaced else ""
            old = self.objects[rt.key].get((ns, name))
            if old is None:
                raise errors.not_found(rt, name)
            try:
                patched = self._apply_patch(rt, old, content_type, patch_body)
            except PatchError as e:
                raise errors.ApiError(422, "Invalid", str(e)) from e
            if not isinstance(patched, dict):
                raise errors.bad_request("the patched object is not an object")
            return self.update(rt, ns, name, patched, subresource=subresource, dry_run=dry_run)

    def _apply_patch(self, rt, old, content_type, patch_body):
        ct = content_type.split(";")[0].strip().lower()
        if ct == "application/merge-patch+json":
            return merge_patch(old, patch_body)
        if ct == "application/json-patch+json":
            return json_patch(old, patch_body)
        if ct == "application/strategic-merge-patch+json":
            if rt.crd_name:
                raise errors.unsupported_media(
                    "the body of the request was in an unknown format - accepted media types "
                    "include: application/json-patch+json, application/merge-patch+json, "
                    "application/apply-patch+yaml")
            return strategic_merge_patch(old, patch_body)
        raise errors.unsupported_media(
            "the body of the request was in an unknown format - accepted media types include: "
            "application/json-patch+json, application/merge-patch+json, "
            "application/strategic-merge-patch+json")

    # ------------------------------------------------------------------ scale

    def get_scale(self, rt, ns, name):
        obj = self.get(rt, ns, name)
        return self._scale_of(rt, obj)

    def _scale_of(self, rt, obj):
        md = obj["metadata"]
        replicas = get_path(obj, rt.spec_replicas_path) or 0
        status = {"replicas": get_path(obj, rt.status_replicas_path) or 0}
        if rt.label_selector_path:
            sel = get_path(obj, rt.label_selector_path)
            if isinstance(sel, dict):
                sel = selector_object_to_string(sel)
            if sel:
                status["selector"] = sel
        smd = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion",
                                  "creationTimestamp") if k in md}
        return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": smd,
                "spec": {"replicas": replicas}, "status": status}

    def update_scale(self, rt, ns, name, scale_body=None, content_type=None, patch_body=None):
        with self.lock:
            obj = self.get(rt, ns, name)
            current = self._scale_of(rt, obj)
            if patch_body is not None:
                try:
                    scale_body = self._apply_patch(self.registry.by_key(("apps", "deployments")),
                                                   current, content_type, patch_body)
                except PatchError as e:
                    raise errors.ApiError(422, "Invalid", str(e)) from e
            rv = (scale_body.get("metadata") or {}).get("resourceVersion")
            if rv and rv != obj["metadata"]["resourceVersion"]:
                raise errors.conflict(rt, name)
            replicas = (scale_body.get("spec") or {}).get("replicas", 0)
            if not isinstance(replicas, int) or replicas < 0:
                raise errors.invalid(rt, name, [("spec.replicas", f"Invalid value: {replicas}: "
                                                 "must be greater than or equal to 0")])
            new = copy.deepcopy(obj)
            set_path(new, rt.spec_replicas_path, replicas)
            if spec_part(new) != spec_part(obj):
                new["metadata"]["generation"] = obj["metadata"].get("generation", 1) + 1
            new = self._admit(rt, new, name)
            stored = self._commit_update(rt, obj, new)
            return self._scale_of(rt, stored)

    # ------------------------------------------------------------------ delete

    def delete(self, rt, ns, name, options=None, dry_run=False):
        """Returns (object, gone): gone is False while finalizers or a kubelet hold it."""
        options = options or {}
        with self.lock:
            ns = ns if rt.namespaced else ""
            obj = self.objects[rt.key].get((ns, name))
            if obj is None:
                raise errors.not_found(rt, name)
            pre = options.get("preconditions") or {}
            if pre.get("uid") and pre["uid"] != obj["metadata"]["uid"]:
                raise errors.conflict(rt, name, f"Precondition failed: UID in precondition: "
                                      f"{pre['uid']}, UID in object meta: "
                                      f"{obj['metadata']['uid']}")
            if pre.get("resourceVersion") and \
                    pre["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise errors.conflict(rt, name, "Precondition failed: ResourceVersion in "
                                      f"precondition: {pre['resourceVersion']}, ResourceVersion "
                                      f"in object meta: {obj['metadata']['resourceVersion']}")
            if dry_run:
                return obj, False
            result = self._delete(rt, obj, options)
            self._reconcile()
            return result

    def _delete(self, rt, obj, options):
        md = obj["metadata"]
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is True:
            policy = "Orphan"
        new = copy.deepcopy(obj)
        nmd = new["metadata"]
        finalizers = list(nmd.get("finalizers") or [])
        if policy == "Foreground" and "foregroundDeletion" not in finalizers and \
                not md.get("deletionTimestamp"):
            finalizers.append("foregroundDeletion")
        if policy == "Orphan" and "orphan" not in finalizers and not md.get("deletionTimestamp"):
            finalizers.append("orphan")
        if rt.key == NS_KEY:
            if not md.get("deletionTimestamp"):
                nmd["deletionTimestamp"] = now_rfc3339()
                nmd["deletionGracePeriodSeconds"] = 0
                new["status"] = {"phase": "Terminating"}
                self._put(rt, new, obj)
                return new, False
            return obj, False
        if rt.key == POD_KEY:
            grace = options.get("gracePeriodSeconds")
            if grace is None:
                grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
            phase = (obj.get("status") or {}).get("phase")
            if not (obj.get("spec") or {}).get("nodeName") or phase in ("Succeeded", "Failed"):
                grace = 0
            current = md.get("deletionGracePeriodSeconds")
            if grace > 0 and (current is None or grace < current):
                nmd["deletionTimestamp"] = now_rfc3339(grace)
                nmd["deletionGracePeriodSeconds"] = grace
                if finalizers:
                    nmd["finalizers"] = finalizers
                self._put(rt, new, obj)
                return new, False
            if grace > 0:
                return obj, False  # already terminating with a shorter grace period
            nmd.pop("deletionGracePeriodSeconds", None)
        if finalizers:
            if not md.get("deletionTimestamp"):
                nmd["deletionTimestamp"] = now_rfc3339()
                nmd["deletionGracePeriodSeconds"] = 0
            nmd["finalizers"] = finalizers
            if rt.key == POD_KEY and md.get("deletionTimestamp"):
                nmd["deletionGracePeriodSeconds"] = 0
            if comparable(new) != comparable(obj):
                self._put(rt, new, obj)
                return new, False
            return obj, False
        if rt.key == CRD_KEY and self._crd_has_instances(obj):
            nmd["deletionTimestamp"] = now_rfc3339()
            nmd["finalizers"] = ["customresourcecleanup.apiextensions.k8s.io"]
            self._put(rt, new, obj)
            return new, False
        return self._remove(rt, obj), True

    # ------------------------------------------------------------------ CRDs

    def _crd_established(self, crd):
        """Registers the CRD's resource and sets its status like the apiextensions server."""
        rt = type_from_crd(crd)
        if not rt.plural or not rt.versions:
            return
        if not crd["metadata"].get("deletionTimestamp"):
            self.registry.add(rt)
        names = copy.deepcopy(crd["spec"]["names"])
        storage = [v["name"] for v in crd["spec"].get("versions", []) if v.get("storage")]
        status = {
            "acceptedNames": names,
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": now_rfc3339()},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted",
                 "lastTransitionTime": now_rfc3339()},
            ],
            "storedVersions": sorted(set((crd.get("status") or {}).get("storedVersions", []))
                                     | set(storage)),
        }
        old_status = crd.get("status") or {}
        if old_status.get("acceptedNames") == status["acceptedNames"] and \
                old_status.get("storedVersions") == status["storedVersions"] and \
                [c["type"] for c in old_status.get("conditions", [])] == \
                ["NamesAccepted", "Established"]:
            return
        new = copy.deepcopy(crd)
        new["status"] = status
        self._put(self.registry.by_key(CRD_KEY), new, crd)

    def _crd_key(self, crd):
        spec = crd.get("spec", {})
        return (spec.get("group", ""), spec.get("names", {}).get("plural", ""))

    def _crd_has_instances(self, crd):
        return bool(self.objects.get(self._crd_key(crd)))

    def _crd_removed(self, crd):
        key = self._crd_key(crd)
        rt = self.registry.by_key(key)
        if rt is not None and rt.crd_name:
            self.registry.remove(key)
            self.objects.pop(key, None)

    def finish_pod_deletions(self, node=None):
        """Test helper doing what a kubelet does: removes pods that are terminating."""
        pods = self.registry.by_key(POD_KEY)
        with self.lock:
            for pod in list(self.objects[POD_KEY].values()):
                if pod["metadata"].get("deletionTimestamp") and \
                        (node is None or (pod.get("spec") or {}).get("nodeName") == node):
                    self._delete(pods, pod, {"gracePeriodSeconds": 0})
            self._reconcile()

