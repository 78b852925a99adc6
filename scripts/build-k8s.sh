#!/usr/bin/env bash
# Builds the real Kubernetes control plane, etcd and Helm from their own sources, at the versions
# pinned in tools/k8s/*/go.mod (go.sum beside each), into $BUILD_DIR/k8s/bin:
#   kube-apiserver kube-controller-manager kube-scheduler kubectl   (k8s.io/kubernetes)
#   etcd etcdctl                                                     (go.etcd.io/etcd)
#   helm                                                             (helm.sh/helm/v3)
# and prometheus-operator's monitoring.coreos.com CRDs (ServiceMonitor, ...) into
# $BUILD_DIR/k8s/crds, generated from its pinned API types (tools/k8s/prometheus-operator) by
# controller-gen, the way its own build generates them: the deploy tests install ServiceMonitor
# on the real API server to validate the charts' ServiceMonitors.
# For tests and tools only: nothing here is linked into Shoal. Version strings are set at link
# time the way each project's own release build sets them, so `kubectl version`, the API
# server's /version and Helm's kubeVersion checks see the real release.
#
#   scripts/build-k8s.sh            build what is missing or older than its go.mod/go.sum
#   scripts/build-k8s.sh --force    rebuild everything
#   scripts/build-k8s.sh --print-versions
#
# Needs Go >= 1.26 (the machine's /usr/local/go; Debian's golang-go is too old and must not
# shadow it) and the Go module proxy. A warm module and build cache (~/go, ~/.cache/go-build)
# makes a rebuild take seconds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-build}
[[ $build == /* ]] || build=$root/$build
out=$build/k8s/bin
tools=$root/tools/k8s

# Prefer the machine's current Go over Debian's golang-go.
for d in /usr/local/go/bin "$HOME/go/bin"; do
  [[ -x $d/go ]] && PATH=$d:$PATH
done
export PATH GOFLAGS="${GOFLAGS:--buildvcs=false}" CGO_ENABLED=${CGO_ENABLED:-0}

modver() { # modver DIR MODULE -> the version go.mod pins
  (cd "$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$2")
}

force=0
case "${1:-}" in
  --force) force=1 ;;
  --print-versions)
    echo "kubernetes $(modver "$tools/kubernetes" k8s.io/kubernetes)"
    echo "etcd $(modver "$tools/etcd" go.etcd.io/etcd/server/v3)"
    echo "helm $(modver "$tools/helm" helm.sh/helm/v3)"
    echo "prometheus-operator $(modver "$tools/prometheus-operator" \
      github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring)"
    exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--force|--print-versions]" >&2; exit 2 ;;
esac

go_minor=$(go env GOVERSION | sed -E 's/^go1\.([0-9]+).*/\1/')
if ((go_minor < 26)); then
  echo "build-k8s: $(go env GOVERSION) is too old (Kubernetes 1.37 needs Go 1.26)" >&2
  exit 1
fi
mkdir -p "$out"

# fresh DIR BINARY...: true when every binary is newer than DIR's go.mod and go.sum
fresh() {
  local dir=$1; shift
  ((force)) && return 1
  for b in "$@"; do
    [[ -x $out/$b && $out/$b -nt $dir/go.mod && $out/$b -nt $dir/go.sum ]] || return 1
  done
}

build_date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(stat -c %Y "$tools/kubernetes/go.sum")}" +%Y-%m-%dT%H:%M:%SZ)

# --- Kubernetes: the components' version package, as hack/lib/version.sh sets it
kdir=$tools/kubernetes
kver=$(modver "$kdir" k8s.io/kubernetes)
kbins=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
if ! fresh "$kdir" "${kbins[@]}"; then
  IFS=. read -r kmaj kmin _ <<<"${kver#v}"
  kflags=()
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    kflags+=(-X "$pkg.gitVersion=$kver" -X "$pkg.gitMajor=$kmaj" -X "$pkg.gitMinor=$kmin"
      -X "$pkg.gitTreeState=clean" -X "$pkg.buildDate=$build_date")
  done
  echo "build-k8s: Kubernetes $kver (${kbins[*]})"
  t0=$SECONDS
  (cd "$kdir" && go build -trimpath -ldflags "-s -w ${kflags[*]}" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
  echo "build-k8s: Kubernetes built in $((SECONDS - t0)) s"
fi

# --- etcd: server and etcdctl (the version constant is in the source; the commit is not known
# from a module download, so it is named after the module version)
edir=$tools/etcd
ever=$(modver "$edir" go.etcd.io/etcd/server/v3)
if ! fresh "$edir" etcd etcdctl; then
  echo "build-k8s: etcd $ever"
  t0=$SECONDS
  (cd "$edir" &&
    go build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ever" \
      -o "$out/etcd" go.etcd.io/etcd/server/v3 &&
    go build -trimpath -ldflags "-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=$ever" \
      -o "$out/etcdctl" go.etcd.io/etcd/etcdctl/v3)
  echo "build-k8s: etcd built in $((SECONDS - t0)) s"
fi

# --- Helm 3: version and the Kubernetes version its chartutil and lint rules assume, as its
# Makefile sets them (client-go v0.X.Y is Kubernetes 1.X)
hdir=$tools/helm
hver=$(modver "$hdir" helm.sh/helm/v3)
if ! fresh "$hdir" helm; then
  cgo=$(modver "$hdir" k8s.io/client-go)
  IFS=. read -r cmaj cmin _ <<<"${cgo#v}"
  hmaj=$((cmaj + 1))
  hflags="-s -w -X helm.sh/helm/v3/internal/version.version=$hver"
  hflags+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    hflags+=" -X $pkg.k8sVersionMajor=$hmaj -X $pkg.k8sVersionMinor=$cmin"
  done
  echo "build-k8s: Helm $hver"
  t0=$SECONDS
  (cd "$hdir" && go build -trimpath -ldflags "$hflags" -o "$out/helm" helm.sh/helm/v3/cmd/helm)
  echo "build-k8s: Helm built in $((SECONDS - t0)) s"
fi

# --- prometheus-operator's CRDs: controller-gen (sigs.k8s.io/controller-tools, the module's
# tool) over the pinned github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
pdir=$tools/prometheus-operator
pmod=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring
pver=$(modver "$pdir" $pmod)
crds=$build/k8s/crds
if ! fresh "$pdir" controller-gen ||
  [[ ! $crds/monitoring.coreos.com_servicemonitors.yaml -nt $out/controller-gen ]]; then
  echo "build-k8s: prometheus-operator $pver CRDs"
  t0=$SECONDS
  (cd "$pdir" && go build -trimpath -ldflags "-s -w" -o "$out/controller-gen" \
    sigs.k8s.io/controller-tools/cmd/controller-gen)
  rm -rf "$crds.new"
  (cd "$pdir" && "$out/controller-gen" crd:crdVersions=v1 paths="$pmod/v1" \
    output:crd:dir="$crds.new")
  rm -rf "$crds" && mv "$crds.new" "$crds"
  echo "build-k8s: prometheus-operator CRDs generated in $((SECONDS - t0)) s"
fi

echo "build-k8s: $out: Kubernetes $kver, etcd $ever, Helm $hver;" \
  "$crds: prometheus-operator $pver"
