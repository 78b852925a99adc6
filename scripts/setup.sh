#!/usr/bin/env bash
# Installs everything Shoal needs to build, test and benchmark (Debian 12 packages), then
# configures and builds it with CMake + Ninja, then builds the real Kubernetes tools the tests
# use (scripts/build-k8s.sh: kube-apiserver, etcd, kubectl, helm, ... from their pinned sources,
# into $BUILD_DIR/k8s; needs Go >= 1.26 in /usr/local/go and the Go module proxy, or a warm
# module cache). Safe to run again: apt is skipped when every package is already installed, the
# build is incremental, and build-k8s.sh only builds what is missing or stale.
#
#   scripts/setup.sh [--deps-only]      (--deps-only: the packages alone, nothing built)
#
# Environment:
#   BUILD_DIR          build directory (default: build, relative to the repository)
#   CMAKE_BUILD_TYPE   default RelWithDebInfo (for a new build directory)
#   SHOAL_WERROR       1 to build with -Werror, 0 without (default: 1 when CI is set, else
#                      whatever the build directory was configured with)
#   SHOAL_CMAKE_ARGS   more arguments for cmake, e.g. "-DSHOAL_SANITIZE=ON"
#   SHOAL_BUILD_K8S    0 to skip scripts/build-k8s.sh (a second build tree, e.g. a sanitizer
#                      build, whose tests use no Kubernetes tools)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

PACKAGES=(
  # toolchain
  build-essential g++ cmake ninja-build pkg-config clang-format
  # libraries
  libprotobuf-dev protobuf-compiler libasio-dev nettle-dev nlohmann-json3-dev libspdlog-dev
  libfmt-dev libsqlite3-dev libmariadb-dev
  # accounting: a real MariaDB server the tests start on loopback (never as a system service)
  mariadb-server mariadb-client
  # PMIx server for srun --mpi=pmix
  libpmix-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev python3 python3-pytest python3-pytest-timeout
  hyperfine
  # the reference: Slurm's commands and man pages (`man sbatch`), never linked
  slurm-client slurm-wlm-doc man-db
  # what the integration tests use: ps/pgrep, useradd, runuser/setpriv; real MPI (Open MPI with
  # mpi4py, MPICH) for the srun/mpirun tests
  procps passwd adduser util-linux openmpi-bin libopenmpi-dev python3-mpi4py mpich libmpich-dev
  # strace's fault injection widens a race on purpose (a delayed fdatasync of the controller)
  strace
  # a name-service module (users outside /etc/passwd, as with SSSD) for the statically linked
  # commands' test
  libnss-db
  # srun --container tests: a rootless OCI runtime (crun 1.8 refuses hybrid cgroups) and a static busybox for the bundle
  runc busybox-static
  # shoalrestd: HTTP server (libmicrohttpd) and JWT (libjwt); the REST and metrics tests validate
  # against the OpenAPI schema and parse OpenMetrics; wrk drives the REST benchmark
  libmicrohttpd-dev libjwt-dev python3-jsonschema python3-prometheus-client wrk curl
  # shoal-operator: libcurl talks to the Kubernetes API; the tests prove the fake API server with
  # Debian's kubectl and the Python client, and run pods in network namespaces (iproute2)
  libcurl4-openssl-dev python3-kubernetes iproute2
  # deploy tests: YAML (the charts are rendered by the real Helm and validated by a real API
  # server, both built by scripts/build-k8s.sh below)
  python3-yaml
  # the LoginSet end-to-end test runs the real sshd in a login pod (never as a system service)
  openssh-server
)
# Debian's kubectl (kubernetes-client) conflicts with another kubectl package (e.g. Google
# Cloud SDK's) over /usr/bin/kubectl: only ask when none is installed.
command -v kubectl >/dev/null || PACKAGES+=(kubernetes-client)

deps_only=0
for arg in "$@"; do
  case "$arg" in
    --deps-only) deps_only=1 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg'" >&2; exit 1 ;;
  esac
done

missing=()
for pkg in "${PACKAGES[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$pkg")
done

if ((${#missing[@]})); then
  echo "setup.sh: installing ${missing[*]}"
  SUDO=()
  if ((EUID != 0)); then
    command -v sudo >/dev/null || { echo "setup.sh: need root (or sudo) to install packages" >&2; exit 1; }
    SUDO=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt_install() { "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; }
  # Update the package lists once: when there are none, or when an install from stale lists fails.
  if ! compgen -G '/var/lib/apt/lists/*_Packages*' >/dev/null; then
    "${SUDO[@]}" apt-get update -q
    apt_install
  elif ! apt_install; then
    "${SUDO[@]}" apt-get update -q
    apt_install
  fi
fi

((deps_only)) && exit 0

BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
cmake_args=(-S "$ROOT" -B "$BUILD_DIR" -G Ninja)
# Pass only what was asked for, so a plain re-run keeps the cache (and the build) as it is.
if [[ -n ${CMAKE_BUILD_TYPE:-} ]]; then
  cmake_args+=(-DCMAKE_BUILD_TYPE="$CMAKE_BUILD_TYPE")
elif [[ ! -f $BUILD_DIR/CMakeCache.txt ]]; then
  cmake_args+=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
fi
werror=${SHOAL_WERROR:-}
[[ -z $werror && -n ${CI:-} ]] && werror=1
case "$werror" in
  1|ON|on|yes) cmake_args+=(-DSHOAL_WERROR=ON) ;;
  0|OFF|off|no) cmake_args+=(-DSHOAL_WERROR=OFF) ;;
esac
# shellcheck disable=SC2206  # word splitting of the extra arguments is intended
[[ -n ${SHOAL_CMAKE_ARGS:-} ]] && cmake_args+=(${SHOAL_CMAKE_ARGS})

cmake "${cmake_args[@]}" >/dev/null
ninja -C "$BUILD_DIR"

# The real Kubernetes control plane, kubectl, etcd and Helm (and prometheus-operator's CRDs)
# that tests/deploy and tests/kube use, into the same build tree; a no-op when they are fresh.
if [[ ${SHOAL_BUILD_K8S:-1} == 1 ]]; then
  BUILD_DIR=$BUILD_DIR "$ROOT/scripts/build-k8s.sh"
fi
