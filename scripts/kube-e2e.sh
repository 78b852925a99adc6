#!/usr/bin/env bash
# Shoal on a real Kubernetes: builds what it needs (Shoal, the control plane, etcd and Helm
# from their pinned sources, the container images from the binaries just built), then
#
#   scripts/kube-e2e.sh [PYTEST_ARGS...]   runs the real-Kubernetes suite (tests/kube) and ends
#                                          with one line: kube-e2e: P passed, F failed, S skipped
#   scripts/kube-e2e.sh --up DIR           brings up the control plane, the node agents and a
#                                          `helm install`ed Shoal cluster and leaves them
#                                          running; DIR/kubeconfig is the admin's
#   scripts/kube-e2e.sh --down DIR         stops everything --up DIR started
#
# Options before the others: --no-build (use what is already built).
# Environment: BUILD_DIR (default build), SHOAL_KEEP_DIRS=1 keeps the test directories.
# Needs root (network namespaces, podman), Debian 12, and the Go module proxy for a cold build.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export BUILD_DIR=${BUILD_DIR:-build}

build=1
mode=test
dir=
while (($#)); do
  case "$1" in
    --no-build) build=0 ;;
    --up|--down) mode=${1#--}; dir=${2:?"$1 needs a directory"}; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
  esac
  shift
done

if [[ $mode == down ]]; then
  exec /usr/bin/python3 tests/kube/up.py down "$dir"
fi

if ((build)); then
  t0=$SECONDS
  scripts/setup.sh || { echo "kube-e2e: the Shoal build failed" >&2; exit 1; }
  scripts/build-k8s.sh || { echo "kube-e2e: the Kubernetes build failed" >&2; exit 1; }
  scripts/build-images.sh --prebuilt || { echo "kube-e2e: the image build failed" >&2; exit 1; }
  echo "kube-e2e: built in $((SECONDS - t0)) s"
fi

if [[ $mode == up ]]; then
  exec /usr/bin/python3 tests/kube/up.py up "$dir"
fi

logs=$ROOT/$BUILD_DIR/test-logs
[[ $BUILD_DIR == /* ]] && logs=$BUILD_DIR/test-logs
mkdir -p "$logs"
# A missing part (binaries, images, podman) fails the tests here instead of skipping them.
export SHOAL_REQUIRE_KUBE=1 SHOAL_REQUIRE_IMAGES=1
/usr/bin/python3 -m pytest tests/kube -c tests/kube/pytest.ini -ra --durations=15 "$@" 2>&1 |
  tee "$logs/kube-e2e.log"
rc=${PIPESTATUS[0]}

summary=$(grep -E '^=+ .*(passed|failed|error|skipped|no tests ran).* =+$' "$logs/kube-e2e.log" |
  tail -n 1)
count() { grep -oE "[0-9]+ $1" <<<"$summary" | grep -oE '^[0-9]+' || echo 0; }
passed=$(count passed)
failed=$(($(count failed) + $(count error)))
skipped=$(count skipped)
echo "kube-e2e: $passed passed, $failed failed, $skipped skipped"
if ((rc != 0 && failed == 0)); then
  echo "kube-e2e: pytest exited $rc" >&2
fi
((rc == 0 && passed > 0))
