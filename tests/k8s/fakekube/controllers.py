"""The controllers a test cluster needs, run synchronously after every write (a mixin of Store):
namespace and CRD cleanup, the garbage collector (background, foreground, orphan), a tiny
scheduler, PodDisruptionBudget status, and the eviction and binding subresources."""

import collections
import copy

from . import errors
from .labelsel import label_selector_object_matches
from .objutil import (CRD_KEY, NODE_KEY, NS_KEY, PDB_KEY, POD_KEY, int_or_percent, node_ready,
                      now_rfc3339, pod_ready)


class Controllers:
    # ------------------------------------------------------------------ eviction / binding

    def evict(self, ns, name, eviction):
        pods = self.registry.by_key(POD_KEY)
        with self.lock:
            pod = self.objects[POD_KEY].get((ns, name))
            if pod is None:
                raise errors.not_found(pods, name)
            options = copy.deepcopy(eviction.get("deleteOptions") or {})
            phase = (pod.get("status") or {}).get("phase")
            if pod["metadata"].get("deletionTimestamp") or phase in ("Succeeded", "Failed",
                                                                     "Pending"):
                self._delete(pods, pod, options)
                self._reconcile()
                return
            pdbs = [p for p in self.objects[PDB_KEY].values()
                    if p["metadata"]["namespace"] == ns and
                    label_selector_object_matches((p.get("spec") or {}).get("selector"),
                                                  pod["metadata"].get("labels"))]
            if len(pdbs) > 1:
                raise errors.ApiError(500, "InternalError", "This pod has more than one "
                                      "PodDisruptionBudget, which the eviction subresource does "
                                      "not support.")
            if pdbs:
                pdb = pdbs[0]
                status = self._pdb_status(pdb)
                # unhealthyPodEvictionPolicy IfHealthyBudget (the default): a ready pod needs a
                # disruption to spare, an unready one only a budget that is currently met.
                policy = (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy",
                                                     "IfHealthyBudget")
                if pod_ready(pod):
                    refuse = status["disruptionsAllowed"] <= 0
                else:
                    refuse = policy != "AlwaysAllow" and \
                        status["currentHealthy"] < status["desiredHealthy"]
                if refuse:
                    raise errors.ApiError(
                        429, "TooManyRequests",
                        "Cannot evict pod as it would violate the pod's disruption budget.",
                        {"causes": [{"reason": "DisruptionBudget",
                                     "message": f"The disruption budget "
                                                f"{pdb['metadata']['name']} needs "
                                                f"{status['desiredHealthy']} healthy pods and "
                                                f"has {status['currentHealthy']} currently"}]})
            self._delete(pods, pod, options)
            self._reconcile()

    def bind(self, ns, name, binding):
        pods = self.registry.by_key(POD_KEY)
        with self.lock:
            pod = self.objects[POD_KEY].get((ns, name))
            if pod is None:
                raise errors.not_found(pods, name)
            node = (binding.get("target") or {}).get("name")
            if not node:
                raise errors.invalid(pods, name, [("target.name", "Required value")])
            if (pod.get("spec") or {}).get("nodeName"):
                raise errors.conflict(pods, name, f"pod {name} is already assigned to node "
                                      f'"{pod["spec"]["nodeName"]}"')
            self._bind(pod, node)
            self._reconcile()

    def _bind(self, pod, node):
        new = copy.deepcopy(pod)
        new["spec"]["nodeName"] = node
        self._set_condition(new, "PodScheduled", "True", None, None)
        self._put(self.registry.by_key(POD_KEY), new, pod)

    @staticmethod
    def _set_condition(obj, ctype, status, reason, message):
        conds = obj.setdefault("status", {}).setdefault("conditions", [])
        for c in conds:
            if c.get("type") == ctype:
                if c.get("status") != status:
                    c["lastTransitionTime"] = now_rfc3339()
                c["status"] = status
                break
        else:
            c = {"type": ctype, "status": status, "lastProbeTime": None,
                 "lastTransitionTime": now_rfc3339()}
            conds.append(c)
        for k, v in (("reason", reason), ("message", message)):
            if v:
                c[k] = v
            else:
                c.pop(k, None)

    # ------------------------------------------------------------------ controllers

    def _reconcile(self):
        """Runs the built-in controllers until nothing changes (they write through _put)."""
        if self._in_reconcile:
            return
        self._in_reconcile = True
        try:
            for _ in range(50):
                self._dirty = False
                self._namespace_cleanup()
                self._crd_cleanup()
                self._garbage_collect()
                if self.scheduler_enabled:
                    self._schedule()
                self._update_pdbs()
                if not self._dirty:
                    break
        finally:
            self._in_reconcile = False

    def _namespace_cleanup(self):
        for ns in list(self.objects[NS_KEY].values()):
            if not ns["metadata"].get("deletionTimestamp"):
                continue
            name = ns["metadata"]["name"]
            remaining = 0
            for key, objs in list(self.objects.items()):
                rt = self.registry.by_key(key)
                if rt is None or not rt.namespaced:
                    continue
                for (ons, _), obj in list(objs.items()):
                    if ons != name:
                        continue
                    remaining += 1
                    if not obj["metadata"].get("deletionTimestamp"):
                        self._delete(rt, obj, {})
            if remaining == 0:
                self._remove(self.registry.by_key(NS_KEY), ns)

    def _crd_cleanup(self):
        for crd in list(self.objects[CRD_KEY].values()):
            if not crd["metadata"].get("deletionTimestamp"):
                continue
            key = self._crd_key(crd)
            rt = self.registry.by_key(key)
            objs = list(self.objects.get(key, {}).values())
            for obj in objs:
                if rt is not None and not obj["metadata"].get("deletionTimestamp"):
                    self._delete(rt, obj, {})
            if not self.objects.get(key):
                self._drop_finalizer(self.registry.by_key(CRD_KEY), crd,
                                     "customresourcecleanup.apiextensions.k8s.io")

    def _drop_finalizer(self, rt, obj, finalizer):
        new = copy.deepcopy(obj)
        fins = [f for f in new["metadata"].get("finalizers") or [] if f != finalizer]
        new["metadata"]["finalizers"] = fins
        if not fins:
            new["metadata"].pop("finalizers")
        if new == obj:
            return
        if not fins and new["metadata"].get("deletionTimestamp") and \
                not self._awaits_kubelet(rt, new):
            self._remove(rt, new)
        else:
            self._put(rt, new, obj)

    def _garbage_collect(self):
        live = {}
        for key, objs in self.objects.items():
            for obj in objs.values():
                live[obj["metadata"]["uid"]] = (key, obj)
        dependents = collections.defaultdict(list)
        for key, objs in list(self.objects.items()):
            rt = self.registry.by_key(key)
            if rt is None:
                continue
            for obj in list(objs.values()):
                refs = obj["metadata"].get("ownerReferences") or []
                if not refs:
                    continue
                for r in refs:
                    dependents[r.get("uid")].append((rt, obj))
                owners = [live.get(r.get("uid")) for r in refs]
                alive = [o for o in owners if o is not None]
                # Owners in a foreground deletion take their dependents with them.
                foreground = any("foregroundDeletion" in (o[1]["metadata"].get("finalizers")
                                                          or []) for o in alive)
                if (not alive or foreground) and not obj["metadata"].get("deletionTimestamp"):
                    self._delete(rt, obj, {"propagationPolicy": "Background"})
        for uid, (key, owner) in list(live.items()):
            fins = owner["metadata"].get("finalizers") or []
            rt = self.registry.by_key(key)
            if rt is None:
                continue
            if "orphan" in fins:
                for drt, dep in dependents.get(uid, []):
                    cur = self.objects[drt.key].get((dep["metadata"].get("namespace", ""),
                                                     dep["metadata"]["name"]))
                    if cur is None:
                        continue
                    new = copy.deepcopy(cur)
                    new["metadata"]["ownerReferences"] = [
                        r for r in cur["metadata"].get("ownerReferences", [])
                        if r.get("uid") != uid]
                    if not new["metadata"]["ownerReferences"]:
                        new["metadata"].pop("ownerReferences")
                    self._put(drt, new, cur)
                self._drop_finalizer(rt, owner, "orphan")
            elif "foregroundDeletion" in fins:
                still = [d for d in dependents.get(uid, [])
                         if (d[1]["metadata"].get("namespace", ""), d[1]["metadata"]["name"])
                         in self.objects[d[0].key]]
                if not still:
                    self._drop_finalizer(rt, owner, "foregroundDeletion")

    def _schedule(self):
        nodes = sorted(self.objects[NODE_KEY].values(), key=lambda n: n["metadata"]["name"])
        load = collections.Counter()
        pending = []
        for pod in self.objects[POD_KEY].values():
            spec = pod.get("spec") or {}
            phase = (pod.get("status") or {}).get("phase")
            if spec.get("nodeName"):
                if phase not in ("Succeeded", "Failed"):
                    load[spec["nodeName"]] += 1
            elif not pod["metadata"].get("deletionTimestamp") and \
                    spec.get("schedulerName", "default-scheduler") == "default-scheduler":
                pending.append(pod)
        pending.sort(key=lambda p: int(p["metadata"]["resourceVersion"]))
        for pod in pending:
            fits = [n for n in nodes if self._fits(pod, n)]
            if fits:
                best = min(fits, key=lambda n: (load[n["metadata"]["name"]],
                                                n["metadata"]["name"]))
                load[best["metadata"]["name"]] += 1
                self._bind(pod, best["metadata"]["name"])
            else:
                msg = f"0/{len(nodes)} nodes are available."
                new = copy.deepcopy(pod)
                self._set_condition(new, "PodScheduled", "False", "Unschedulable", msg)
                old_conds = (pod.get("status") or {}).get("conditions") or []
                if not any(c.get("type") == "PodScheduled" and c.get("status") == "False" and
                           c.get("message") == msg for c in old_conds):
                    self._put(self.registry.by_key(POD_KEY), new, pod)

    @staticmethod
    def _fits(pod, node):
        spec = pod.get("spec") or {}
        nspec = node.get("spec") or {}
        labels = node["metadata"].get("labels") or {}
        if not node_ready(node) or nspec.get("unschedulable") or \
                node["metadata"].get("deletionTimestamp"):
            return False
        for k, v in (spec.get("nodeSelector") or {}).items():
            if labels.get(k) != v:
                return False
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                    .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        terms = required.get("nodeSelectorTerms") or []
        if terms and not any(label_selector_object_matches(
                {"matchExpressions": t.get("matchExpressions") or []}, labels) for t in terms):
            return False
        tolerations = spec.get("tolerations") or []
        for taint in nspec.get("taints") or []:
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if not any(Controllers._tolerates(t, taint) for t in tolerations):
                return False
        return True

    @staticmethod
    def _tolerates(tol, taint):
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            return False
        if not tol.get("key"):
            return tol.get("operator") == "Exists"
        if tol["key"] != taint.get("key"):
            return False
        if tol.get("operator") == "Exists":
            return True
        return tol.get("value", "") == taint.get("value", "")

    def _pdb_status(self, pdb):
        ns = pdb["metadata"]["namespace"]
        spec = pdb.get("spec") or {}
        sel = spec.get("selector")
        pods = [p for p in self.objects[POD_KEY].values()
                if p["metadata"]["namespace"] == ns and
                label_selector_object_matches(sel, p["metadata"].get("labels"))]
        expected = len(pods)
        healthy = sum(1 for p in pods
                      if pod_ready(p) and not p["metadata"].get("deletionTimestamp"))
        if spec.get("minAvailable") is not None:
            desired = int_or_percent(spec["minAvailable"], expected, True)
        elif spec.get("maxUnavailable") is not None:
            desired = max(0, expected - int_or_percent(spec["maxUnavailable"], expected, True))
        else:
            desired = expected
        allowed = max(0, healthy - desired)
        return {"observedGeneration": pdb["metadata"].get("generation", 1),
                "disruptionsAllowed": allowed, "currentHealthy": healthy,
                "desiredHealthy": desired, "expectedPods": expected}

    def _update_pdbs(self):
        rt = self.registry.by_key(PDB_KEY)
        for pdb in list(self.objects[PDB_KEY].values()):
            st = self._pdb_status(pdb)
            old = pdb.get("status") or {}
            if all(old.get(k) == v for k, v in st.items()):
                continue
            allowed = st["disruptionsAllowed"] > 0
            prev = {c.get("type"): c for c in old.get("conditions") or []}
            cond = {"type": "DisruptionAllowed", "status": "True" if allowed else "False",
                    "reason": "SufficientPods" if allowed else "InsufficientPods",
                    "message": "", "observedGeneration": st["observedGeneration"],
                    "lastTransitionTime": now_rfc3339()}
            p = prev.get("DisruptionAllowed")
            if p and p.get("status") == cond["status"]:
                cond["lastTransitionTime"] = p.get("lastTransitionTime")
            new = copy.deepcopy(pdb)
            new["status"] = dict(st, conditions=[cond])
            self._put(rt, new, pdb)
