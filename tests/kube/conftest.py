"""Fixtures of the real-Kubernetes suite (scripts/kube-e2e.sh): a control plane built from
Kubernetes' own sources (tests/kube/controlplane.py), shared by the whole session since it
takes seconds to start and every test works in namespaces of its own."""

import os
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from controlplane import ControlPlane, k8s_bin_dir  # noqa: E402

REPO = HERE.parents[1]


def _require(what, ok, hint):
    """Skips when a prerequisite is missing, unless SHOAL_REQUIRE_KUBE is set (CI, and
    scripts/kube-e2e.sh), where a missing part fails the test instead."""
    if ok:
        return
    msg = f"{what} missing: {hint}"
    if os.environ.get("SHOAL_REQUIRE_KUBE"):
        pytest.fail(msg)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def control_plane():
    _require("the Kubernetes control plane", (k8s_bin_dir() / "kube-apiserver").exists(),
             "run scripts/build-k8s.sh")
    root = Path(tempfile.mkdtemp(prefix="shoal-kube-", dir="/tmp"))
    cp = ControlPlane(root)
    cp.start()
    yield cp
    cp.stop()
    if not os.environ.get("SHOAL_KEEP_DIRS"):
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def namespace(control_plane):
    """A fresh namespace for one test, deleted afterwards (by the real namespace controller)."""
    name = f"t-{uuid.uuid4().hex[:8]}"
    control_plane.kubectl("create", "namespace", name)
    yield name
    control_plane.kubectl("delete", "namespace", name, "--wait=false", check=False)
