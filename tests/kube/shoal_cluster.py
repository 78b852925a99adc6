"""A Shoal cluster installed on a real control plane the way a platform engineer installs it:
`helm install` of the shoal-operator chart (with its CRDs), then of the shoal chart, from the
images scripts/build-images.sh built (localhost/shoal/<component>:<tag>).

    inst = ShoalInstall(cp, agents, root).install(nodesets=3, login=True, restapi=True)
    inst.login_exec(["sbatch", ...])          # a command in the login pod, as a user would
    inst.upgrade(tag="...")                   # helm upgrade
    inst.uninstall()
"""

import json
import secrets
import subprocess
import time
from pathlib import Path

from controlplane import wait  # noqa: F401 - tests import it from here too

REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "deploy" / "helm"
OPERATOR_NS = "shoal-system"
CLUSTER_NS = "slurm"
RELEASE = "slurm"
OPERATOR_RELEASE = "shoal-operator"


def project_version():
    for line in (REPO / "CMakeLists.txt").read_text().splitlines():
        if line.startswith("project(shoal VERSION"):
            return line.split()[2]
    raise RuntimeError("no project version in CMakeLists.txt")


def pod_ready(pod):
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


class ShoalInstall:
    def __init__(self, cp, agents, root, tag=None, namespace=CLUSTER_NS, release=RELEASE):
        self.cp = cp
        self.agents = agents
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.tag = tag or project_version()
        self.ns = namespace
        self.release = release
        # The keys are set, not left to the chart's random default, so `helm upgrade` keeps
        # them (the chart's values.yaml says why).
        self.slurm_key = secrets.token_hex(32)
        self.jwt_key = secrets.token_hex(32)
        self.home = self.root / "home"  # the shared /home (an NFS export at a real site)
        self.home.mkdir(exist_ok=True)
        self.home.chmod(0o755)
        self.timings = {}

    # --- tools --------------------------------------------------------------------------

    def helm(self, *args, timeout=600, check=True):
        r = subprocess.run([str(self.cp.bin / "helm"), "--kubeconfig", str(self.cp.kubeconfig),
                            *args], capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)}: {r.stdout}{r.stderr}")
        return r

    def kubectl(self, *args, **kw):
        return self.cp.kubectl(*args, **kw)

    def pods(self, selector="", namespace=None):
        args = ["-n", namespace or self.ns, "get", "pods", "-o", "json"]
        if selector:
            args += ["-l", selector]
        return json.loads(self.kubectl(*args).stdout)["items"]

    def pod_names(self, component, namespace=None):
        return sorted(p["metadata"]["name"] for p in
                      self.pods(f"app.kubernetes.io/name=shoal-{component}", namespace))

    # --- install ------------------------------------------------------------------------

    def operator_values(self):
        return ["--set", "image.repository=localhost/shoal/operator",
                "--set", f"image.tag={self.tag}", "--set", "image.pullPolicy=Never"]

    def cluster_values(self, nodesets, login, restapi, extra=()):
        home_vol = [{"name": "home", "hostPath": {"path": str(self.home),
                                                   "type": "Directory"}}]
        home_mount = [{"name": "home", "mountPath": "/home"}]
        values = {
            "image": {"registry": "localhost", "tag": self.tag, "pullPolicy": "Never"},
            "auth": {"slurmKey": self.slurm_key, "jwtKey": self.jwt_key},
            "controller": {"persistence": {"enabled": True, "storageClassName": "shoal-local",
                                           "size": "1Gi"}},
            "nodesets": [{"name": "workers", "replicas": nodesets,
                          "partition": {"enabled": True,
                                        "config": "Default=YES MaxTime=UNLIMITED State=UP"},
                          "updateStrategy": {"type": "RollingUpdate",
                                             "rollingUpdate": {"maxUnavailable": 1}},
                          "template": {"spec": {"extraVolumes": home_vol,
                                                "extraVolumeMounts": home_mount}}}],
            "loginset": {"enabled": login, "replicas": 1,
                         "template": {"spec": {"extraVolumes": home_vol,
                                               "extraVolumeMounts": home_mount}}},
            "restapi": {"enabled": restapi},
        }
        path = self.root / "values.yaml"
        path.write_text(json.dumps(values, indent=1))  # JSON is YAML
        return ["-f", str(path), *extra]

    def install(self, nodesets=3, login=True, restapi=True, timeout=600):
        t0 = time.monotonic()
        self.helm("install", OPERATOR_RELEASE, str(CHARTS / "shoal-operator"), "-n", OPERATOR_NS,
                  "--create-namespace", *self.operator_values(), "--wait", "--timeout", "5m")
        self.timings["operator"] = time.monotonic() - t0
        self.kubectl("create", "namespace", self.ns)
        self.helm("install", self.release, str(CHARTS / "shoal"), "-n", self.ns,
                  *self.cluster_values(nodesets, login, restapi))
        self.wait_cluster(nodesets, login, restapi, timeout)
        self.timings["cluster"] = time.monotonic() - t0
        return self

    def wait_cluster(self, nodesets, login, restapi, timeout=600):
        want = {"controller": 1, "worker": nodesets}
        if login:
            want["login"] = 1
        if restapi:
            want["restapi"] = 1

        def all_ready():
            for comp, n in want.items():
                pods = self.pods(f"app.kubernetes.io/name=shoal-{comp}")
                if sum(1 for p in pods if pod_ready(p)) < n:
                    return False
            return True
        try:
            wait(all_ready, timeout, f"pods {want} Ready", interval=2)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.describe()}") from None

    def describe(self):
        """What an engineer looks at when an install hangs: pods, events, operator log."""
        out = [self.kubectl("get", "pods", "-A", "-o", "wide", check=False).stdout,
               self.kubectl("-n", self.ns, "get", "events", "--sort-by=.lastTimestamp",
                            check=False).stdout[-4000:]]
        ops = self.pods("", OPERATOR_NS)
        if ops:
            out.append(self.kubectl("-n", OPERATOR_NS, "logs", ops[0]["metadata"]["name"],
                                    "--tail=60", check=False).stdout)
        return "\n".join(out)

    # --- using it -----------------------------------------------------------------------

    def login_pod(self):
        return self.pod_names("login")[0]

    def exec(self, pod, argv, container=None, user=None, input=None, timeout=120):
        p = json.loads(self.kubectl("-n", self.ns, "get", "pod", pod, "-o", "json").stdout)
        c = container or p["spec"]["containers"][0]["name"]
        return self.agents.exec(self.ns, pod, c, argv, user=user, input=input, timeout=timeout)

    def login_exec(self, argv, user=None, input=None, timeout=120):
        return self.exec(self.login_pod(), argv, user=user, input=input, timeout=timeout)

    def upgrade(self, extra=(), timeout=600):
        self.helm("upgrade", self.release, str(CHARTS / "shoal"), "-n", self.ns,
                  "--reuse-values", *extra, timeout=timeout)

    def uninstall(self):
        self.helm("uninstall", self.release, "-n", self.ns, "--wait", "--timeout", "5m",
                  check=False)
        self.helm("uninstall", OPERATOR_RELEASE, "-n", OPERATOR_NS, "--wait", "--timeout", "5m",
                  check=False)
