#!/usr/bin/env python3
"""scripts/kube-e2e.sh --up DIR / --down DIR: a real control plane, three node agents running
pods as containers, and a Shoal cluster installed with `helm install`, left running so anyone
can try it by hand (KUBECONFIG=DIR/kubeconfig)."""

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from controlplane import ControlPlane  # noqa: E402
from nodes import NodeAgents  # noqa: E402
from shoal_cluster import ShoalInstall  # noqa: E402


def up(d: Path, nodes):
    """nodes.py up (control plane in D, agents in D/nodes), then the two `helm install`s."""
    t0 = time.monotonic()
    subprocess.run([sys.executable, str(HERE / "nodes.py"), "up", str(d), "--nodes",
                    str(len(nodes))], check=True)
    cp = ControlPlane(d)  # a handle on what nodes.py started: paths and tools, no processes
    agents = NodeAgents(cp, d / "nodes", nodes)
    inst = ShoalInstall(cp, agents, d / "shoal").install(nodesets=len(nodes))
    print(f"kube-e2e: up in {time.monotonic() - t0:.0f} s; export KUBECONFIG={cp.kubeconfig}\n"
          f"  the login pod: {inst.ns}/{inst.login_pod()}\n"
          f"  stop: scripts/kube-e2e.sh --down {d}")


def down(d: Path):
    subprocess.run([sys.executable, str(HERE / "nodes.py"), "down", str(d)], check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("action", choices=["up", "down"])
    ap.add_argument("dir")
    ap.add_argument("--nodes", type=int, default=3)
    a = ap.parse_args()
    d = Path(a.dir).resolve()
    if a.action == "up":
        up(d, [f"kn-{i + 1}" for i in range(a.nodes)])
    else:
        down(d)


if __name__ == "__main__":
    main()
