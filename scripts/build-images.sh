#!/usr/bin/env bash
# Builds Shoal's container images with podman: daemonless, no registry, every byte from Debian's
# archive. First a Debian 12 base image (mmdebstrap --variant=minbase, imported with
# `podman import`), then every target of deploy/docker/Dockerfile on it, tagged
# localhost/shoal/<target>:<tag>. Each image is checked before the script ends: every Shoal
# binary in it must resolve all its libraries (`ldd` says no "not found") and answer its
# version or help flag, the worker's mpirun and runc and the login's sshd -t and sssd too.
# Safe to run again: the base tarball and image are kept, podman's layer cache does the rest.
#
#   scripts/build-images.sh [--prebuilt] [--targets a,b,...] [--tag TAG] [--save DIR]
#                           [--save-format docker-archive|oci-archive] [--no-cache] [--no-check]
#
#   (no --prebuilt)  the full multi-stage build, as a user runs it: Shoal is compiled inside the
#                    builder stage (Release, tests and benchmarks off); 20+ minutes on 2 cores.
#   --prebuilt       take the binaries already built in $BUILD_DIR instead (what the tests use,
#                    so CI compiles Shoal once): `cmake --install $BUILD_DIR --prefix /usr --strip`
#                    into $BUILD_DIR/images/prebuilt/staging, passed as
#                    `--build-context builder=...`, which replaces the compile stage.
#   --targets        a comma-separated subset of: controller worker login restapi accounting
#                    operator (default: all of them)
#   --tag            the images' tag (default: the project version in CMakeLists.txt)
#   --save DIR       also `podman save` each image to DIR/shoal-<target>-<tag>.tar, to load into
#                    another runtime (`podman load`, `docker load`, `ctr images import`)
#   --save-format    docker-archive (default) or oci-archive
#   --no-cache       rebuild every layer (the base image is kept; remove it to remake it)
#   --no-check       skip the checks of the built images
#
# Environment:
#   BUILD_DIR        build tree (default: build); the base tarball and the prebuilt staging
#                    tree go to $BUILD_DIR/images/
#   PODMAN           podman binary (default: podman)
#   DEBIAN_MIRROR    default http://deb.debian.org/debian (and -updates)
#   DEBIAN_SECURITY_MIRROR  default http://deb.debian.org/debian-security
#
# The base image is named after the Dockerfile's `ARG DEBIAN_IMAGE` default (debian:12.15-slim
# becomes localhost/debian:12.15-slim) and passed as --build-arg, so no registry is ever asked.
# Podman here: root, storage driver overlay, cgroup manager cgroupfs, runtime runc. Builds and
# runs pass `--ulimit nofile=1024:1024 --ulimit nproc=1024:1024` (podman's default
# nproc=32768 in a process whose limits are lower makes runc fail) and `--network host`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
IMAGES_DIR=$BUILD_DIR/images
PODMAN=${PODMAN:-podman}
DOCKERFILE=deploy/docker/Dockerfile
IGNOREFILE=deploy/docker/Dockerfile.dockerignore
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
DEBIAN_SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
ALL_TARGETS=(controller worker login restapi accounting operator)
# What runc in this kind of host needs (see the header); also used by the checks.
LIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)

die() { echo "build-images.sh: $*" >&2; exit 1; }
note() { echo "build-images.sh: $*" >&2; }

prebuilt=0
targets=()
tag=""
save_dir=""
save_format=docker-archive
no_cache=()
check=1
while (($#)); do
  case "$1" in
    --prebuilt) prebuilt=1 ;;
    --targets) [[ $# -ge 2 ]] || die "--targets needs a value"; IFS=, read -ra targets <<<"$2"; shift ;;
    --targets=*) IFS=, read -ra targets <<<"${1#*=}" ;;
    --tag) [[ $# -ge 2 ]] || die "--tag needs a value"; tag=$2; shift ;;
    --tag=*) tag=${1#*=} ;;
    --save) [[ $# -ge 2 ]] || die "--save needs a directory"; save_dir=$2; shift ;;
    --save=*) save_dir=${1#*=} ;;
    --save-format) [[ $# -ge 2 ]] || die "--save-format needs a value"; save_format=$2; shift ;;
    --save-format=*) save_format=${1#*=} ;;
    --no-cache) no_cache=(--no-cache) ;;
    --no-check) check=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
  shift
done
((${#targets[@]})) || targets=("${ALL_TARGETS[@]}")
for t in "${targets[@]}"; do
  [[ " ${ALL_TARGETS[*]} " == *" $t "* ]] || die "unknown target '$t' (one of: ${ALL_TARGETS[*]})"
done
case "$save_format" in docker-archive|oci-archive) ;; *) die "--save-format: docker-archive or oci-archive" ;; esac
if [[ -z $tag ]]; then
  tag=$(sed -n 's/^project(shoal VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
  [[ -n $tag ]] || die "no project version in CMakeLists.txt; pass --tag"
fi

# ---- tools (Debian packages), installed when missing
need=(podman buildah mmdebstrap uidmap fuse-overlayfs slirp4netns containernetworking-plugins)
((prebuilt)) && need+=(cmake)
missing=()
for pkg in "${need[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$pkg")
done
if ((${#missing[@]})); then
  note "installing ${missing[*]}"
  SUDO=()
  ((EUID == 0)) || SUDO=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  if ! "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
    "${SUDO[@]}" apt-get update
    "${SUDO[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
  fi
fi

start_all=$SECONDS
mkdir -p "$IMAGES_DIR"
# One run at a time per build tree: runs share the base tarball and the prebuilt staging tree
# (which a second run would replace under the first one's build).
exec 9>"$IMAGES_DIR/.lock"
if ! flock -n 9; then
  note "waiting for another build-images.sh run on $IMAGES_DIR"
  flock 9
fi

# ---- the Debian base image, from the Dockerfile's DEBIAN_IMAGE default
debian_default=$(sed -n 's/^ARG DEBIAN_IMAGE=//p' "$DOCKERFILE" | head -n1)
[[ $debian_default =~ ^(.*/)?debian:(12[.0-9]*)(-slim)?$ ]] \
  || die "ARG DEBIAN_IMAGE=$debian_default in $DOCKERFILE: expected debian:12[.N][-slim]"
debian_version=${BASH_REMATCH[2]}
base_image=localhost/debian:${debian_version}${BASH_REMATCH[3]}
base_tar=$IMAGES_DIR/debian-bookworm-minbase.tar
# Slim as Docker's debian:*-slim: no man pages, info, docs (but copyright) or translations; the
# dpkg exclusions stay in the image, so the Dockerfile's installs are slim too. merged-usr by
# symlinks (as Debian's own images), not by the usrmerge package and its perl. apt keeps no
# .debs and no package caches after an install (90shoal-image-clean; Docker's images do the same
# in docker-clean): without it every `apt-get install` layer carries ~75 MB of them.
mm_args=(--variant=minbase --format=tar
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  '--aptopt=Acquire::Languages "none"'
  '--dpkgopt=path-exclude=/usr/share/man/*'
  '--dpkgopt=path-exclude=/usr/share/info/*'
  '--dpkgopt=path-exclude=/usr/share/doc/*'
  '--dpkgopt=path-include=/usr/share/doc/*/copyright'
  '--dpkgopt=path-exclude=/usr/share/locale/*'
  '--dpkgopt=path-include=/usr/share/locale/locale.alias'
  '--dpkgopt=path-exclude=/usr/share/lintian/*'
  '--dpkgopt=path-exclude=/usr/share/linda/*'
  '--dpkgopt=path-exclude=/usr/share/groff/*'
  '--customize-hook=printf "%s\n" "DPkg::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" "APT::Update::Post-Invoke { \"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true\"; };" "Dir::Cache::pkgcache \"\";" "Dir::Cache::srcpkgcache \"\";" "Acquire::GzipIndexes \"true\";" >"$1/etc/apt/apt.conf.d/90shoal-image-clean"; rm -f "$1"/var/cache/apt/*.bin'
  bookworm)
mm_sources=("deb $DEBIAN_MIRROR bookworm main" "deb $DEBIAN_MIRROR bookworm-updates main"
  "deb $DEBIAN_SECURITY_MIRROR bookworm-security main")
# The recipe's digest labels the image and names the tarball's stamp: a changed recipe remakes both.
recipe=$(printf '%s\n' "${mm_args[@]}" "${mm_sources[@]}" | sha256sum | cut -c1-16)
if [[ $("$PODMAN" image inspect --format '{{index .Labels "dev.shoal.base-recipe"}}' \
        "$base_image" 2>/dev/null || true) == "$recipe" ]]; then
  note "base image $base_image exists"
else
  if [[ ! -s $base_tar || $(cat "$base_tar.recipe" 2>/dev/null || true) != "$recipe" ]]; then
    note "making $base_tar with mmdebstrap (minbase, bookworm)"
    t0=$SECONDS
    rm -f "$base_tar" "$base_tar.recipe"
    mmdebstrap "${mm_args[@]}" "$base_tar.partial" "${mm_sources[@]}"
    mv "$base_tar.partial" "$base_tar"
    echo "$recipe" >"$base_tar.recipe"
    note "base tarball made in $((SECONDS - t0)) s"
  fi
  real_version=$(tar -xOf "$base_tar" ./etc/debian_version)
  if [[ $real_version != "$debian_version" && $real_version != "$debian_version".* ]]; then
    note "warning: the archive gave Debian $real_version, the Dockerfile names $debian_default;" \
      "update ARG DEBIAN_IMAGE (the image is still tagged $base_image)"
  fi
  # Importing onto the name moves it: an older base stays, untagged, while images use it.
  "$PODMAN" import \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["bash"]' \
    --change "LABEL dev.shoal.base-recipe=$recipe" \
    --message "mmdebstrap --variant=minbase bookworm (Debian $real_version)" \
    "$base_tar" "$base_image" >/dev/null
  note "imported $base_image (Debian $real_version)"
fi

# ---- prebuilt: stage the build tree's binaries as the builder stage's /staging
build_context=()
if ((prebuilt)); then
  for f in bin/shoal sbin/shoalctld sbin/shoald sbin/shoal-stepd sbin/shoaldbd sbin/shoalrestd \
           sbin/shoalsackd sbin/shoal-operator; do
    [[ -x $BUILD_DIR/$f ]] || die "--prebuilt: $BUILD_DIR/$f is missing (run scripts/setup.sh first)"
  done
  staging_root=$IMAGES_DIR/prebuilt
  rm -rf "$staging_root"
  mkdir -p "$staging_root"
  DESTDIR=$staging_root/staging cmake --install "$BUILD_DIR" --prefix /usr --strip >/dev/null
  build_context=(--build-context "builder=$staging_root")
  note "staged $BUILD_DIR's binaries in $staging_root/staging"
fi

revision=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
declare -A build_seconds
for t in "${targets[@]}"; do
  image=localhost/shoal/$t:$tag
  note "building $image$( ((prebuilt)) && echo ' (prebuilt binaries)')"
  t0=$SECONDS
  "$PODMAN" build --network host "${LIMITS[@]}" --pull=never "${no_cache[@]}" \
    --file "$DOCKERFILE" --ignorefile "$IGNOREFILE" \
    --build-arg "DEBIAN_IMAGE=$base_image" "${build_context[@]}" \
    --label "org.opencontainers.image.title=shoal-$t" \
    --label "org.opencontainers.image.version=$tag" \
    --label "org.opencontainers.image.revision=$revision" \
    --target "$t" --tag "$image" "$ROOT"
  build_seconds[$t]=$((SECONDS - t0))
done

# ---- checks: libraries and a version/help call of everything each image runs
check_image() {
  local t=$1 image=localhost/shoal/$1:$tag cmds
  # Libraries: every Shoal binary, and the PMIx library shoal-stepd dlopens.
  cmds='rc=0 n=0
check() {
  if out=$(sh -c "$1" 2>&1); then echo "  ok: $1: $(echo "$out" | head -n1)"
  else echo "  FAILED: $1"; echo "$out" | sed "s/^/    /"; rc=1; fi
}
for f in /usr/sbin/shoal* /usr/bin/shoal /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so.2; do
  [ -e "$f" ] || continue
  case "$f" in */shoal-entrypoint) continue ;; esac
  out=$(ldd "$f" 2>&1) || true
  n=$((n + 1))
  if echo "$out" | grep -q "not found"; then echo "  FAILED: ldd $f:"; echo "$out" | grep "not found"; rc=1; fi
done
[ "$rc" != 0 ] || echo "  ok: ldd: $n binaries, no library missing"
'
  case $t in
    controller) cmds+='check "shoalctld -V"; check "shoal-operator --version"; check "sbatch --version"' ;;
    worker) cmds+='check "shoald --version"; check "sbatch --version"; check "mpirun --version"
check "runc --version"; check "sssd --version"; ssh-keygen -A >/dev/null; check "sshd -t"' ;;
    login) cmds+='check "shoalsackd --help"; check "sbatch --version"; check "sssd --version"
ssh-keygen -A >/dev/null; check "sshd -t"' ;;
    restapi) cmds+='check "shoalrestd -V"' ;;
    accounting) cmds+='check "shoaldbd -V"' ;;
    operator) cmds+='check "shoal-operator --version"' ;;
  esac
  cmds+='
exit $rc'
  if ! "$PODMAN" run --rm --network host "${LIMITS[@]}" --user 0 --entrypoint /bin/sh \
       "$image" -c "$cmds"; then
    die "check of $image failed (see above)"
  fi
}
if ((check)); then
  for t in "${targets[@]}"; do
    note "checking localhost/shoal/$t:$tag"
    check_image "$t"
  done
fi

if [[ -n $save_dir ]]; then
  mkdir -p "$save_dir"
  for t in "${targets[@]}"; do
    out=$save_dir/shoal-$t-$tag.tar
    rm -f "$out"
    "$PODMAN" save --format "$save_format" -o "$out" "localhost/shoal/$t:$tag"
    note "saved $out"
  done
fi

echo
printf '%-36s %10s %8s\n' IMAGE SIZE BUILD
for t in "${targets[@]}"; do
  image=localhost/shoal/$t:$tag
  bytes=$("$PODMAN" image inspect --format '{{.Size}}' "$image")
  printf '%-36s %7d MB %7ds\n' "$image" $(((bytes + 500000) / 1000000)) "${build_seconds[$t]}"
done
bytes=$("$PODMAN" image inspect --format '{{.Size}}' "$base_image")
printf '%-36s %7d MB\n' "$base_image" $(((bytes + 500000) / 1000000))
echo "total $((SECONDS - start_all)) s$( ((prebuilt)) && echo ', prebuilt binaries' || echo ', compiled in the builder stage')"
