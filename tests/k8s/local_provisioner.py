"""The node agent's local storage provisioner (kubelet_sim.py --storage-kubeconfig), shaped like
rancher's local-path-provisioner: for each pending PersistentVolumeClaim of a StorageClass whose
provisioner is ours (shoal.dev/local-path), handed to us by the real PV controller (annotation
volume.kubernetes.io/storage-provisioner) and, for WaitForFirstConsumer classes, placed on this
node by the scheduler (volume.kubernetes.io/selected-node), it makes a directory on the host and
a hostPath PersistentVolume with node affinity to this node, pre-bound to the claim; the PV
controller in kube-controller-manager then binds the two. A Released volume of ours with reclaim
policy Delete has its directory removed and is deleted. It runs under its own identity (see
tests/kube/agent-rbac.yaml), not the node's: a node may not create PersistentVolumes.
"""

import shutil
import threading
import time
from pathlib import Path

import oci_pod as oci


class LocalProvisioner:
    def __init__(self, sim, kube, node, root, name="shoal.dev/local-path"):
        self.sim, self.kube, self.node = sim, kube, node
        self.root = Path(root).resolve()
        self.name = name
        self.dirty = threading.Event()
        self.done = {}  # volume name -> monotonic time of our create (no retry storm)

    def start(self, stop):
        KS = self.sim.ks
        self.root.mkdir(parents=True, exist_ok=True)
        mark = lambda typ, obj: self.dirty.set()  # noqa: E731
        self.claims = KS.Informer(self.kube, "/api/v1/persistentvolumeclaims", {}, mark, stop)
        self.volumes = KS.Informer(self.kube, "/api/v1/persistentvolumes", {}, mark, stop)
        self.classes = KS.Informer(self.kube, "/apis/storage.k8s.io/v1/storageclasses", {},
                                   mark, stop)
        threading.Thread(target=self._loop, args=(stop,), daemon=True,
                         name="local-provisioner").start()

    def _loop(self, stop):
        while not stop.is_set():
            self.dirty.wait(5)
            self.dirty.clear()
            if stop.is_set():
                return
            try:
                self.sync()
            except Exception as e:  # noqa: BLE001 - next round
                self.sim.ks.log(f"local provisioner: {e}")

    def sync(self):
        KS = self.sim.ks
        classes = {c["metadata"]["name"]: c for c in self.classes.snapshot()}
        existing = {v["metadata"]["name"] for v in self.volumes.snapshot()}
        for pvc in self.claims.snapshot():
            sc = classes.get((pvc.get("spec") or {}).get("storageClassName") or "")
            if not oci.claim_to_provision(pvc, sc, self.name, self.node):
                continue
            vname = oci.volume_name(pvc)
            if vname in existing or time.monotonic() - self.done.get(vname, -1e9) < 30:
                continue
            meta = pvc["metadata"]
            ns = meta.get("namespace", "default")
            path = self.root / f"{vname}_{ns}_{meta['name']}"
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777)  # as local-path-provisioner's helper does
            pv = oci.volume_for_claim(pvc, sc, self.name, self.node, path)
            try:
                self.kube.request("POST", "/api/v1/persistentvolumes", pv)
                self.done[vname] = time.monotonic()
                KS.log(f"local provisioner: {vname} for {ns}/{meta['name']} at {path}")
                self.event(pvc, "ProvisioningSucceeded",
                           f"Successfully provisioned volume {vname}")
            except KS.ApiError as e:
                if e.status == 409:
                    self.done[vname] = time.monotonic()  # another node's provisioner won
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    KS.log(f"local provisioner: create {vname}: {e}")
                    self.event(pvc, "ProvisioningFailed", str(e)[:500], "Warning")
        for pv in self.volumes.snapshot():
            if not oci.volume_to_delete(pv, self.name, self.node):
                continue
            path = oci.volume_path(pv)
            if path and Path(path).resolve().is_relative_to(self.root):
                shutil.rmtree(path, ignore_errors=True)
            try:
                self.kube.request("DELETE", f"/api/v1/persistentvolumes/{pv['metadata']['name']}")
                KS.log(f"local provisioner: deleted {pv['metadata']['name']} ({path})")
            except KS.ApiError as e:
                if e.status != 404:
                    KS.log(f"local provisioner: delete {pv['metadata']['name']}: {e}")

    def event(self, pvc, reason, message, kind="Normal"):
        KS = self.sim.ks
        meta = pvc["metadata"]
        ns = meta.get("namespace", "default")
        t = KS.now_rfc3339()
        ev = {"apiVersion": "v1", "kind": "Event",
              "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": ns},
              "involvedObject": {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                                 "name": meta["name"], "namespace": ns, "uid": meta.get("uid")},
              "reason": reason, "message": message, "type": kind, "count": 1,
              "firstTimestamp": t, "lastTimestamp": t,
              "source": {"component": f"{self.name}_{self.node}"}}
        try:
            self.kube.request("POST", f"/api/v1/namespaces/{ns}/events", ev, timeout=3)
        except (KS.ApiError, OSError):
            pass
