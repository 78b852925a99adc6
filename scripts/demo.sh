#!/usr/bin/env bash
# A first look at Shoal: builds it, starts a 4-node cluster on loopback in a temporary
# directory, submits examples/hello-env.sbatch, shows squeue, waits for the job, prints its
# output and sinfo, and stops the cluster.
#
#   scripts/demo.sh
#
# Environment: BUILD_DIR (see setup.sh), SHOAL_DEMO_KEEP=1 keeps the cluster directory.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/scripts/setup.sh"

BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
BIN=$BUILD_DIR/bin
DIR=$(mktemp -d /tmp/shoal-demo.XXXXXX)
chmod 755 "$DIR"

show() { printf '\n$ %s\n' "$*"; "$@"; }

finish() {
  local rc=$?
  "$BIN/shoal" stop --dir "$DIR" || true
  if ((rc == 0)) && [[ -z ${SHOAL_DEMO_KEEP:-} ]]; then
    rm -rf "$DIR"
  else
    echo "demo: the cluster directory (logs in log/) is kept: $DIR" >&2
  fi
}
trap finish EXIT

show "$BIN/shoal" start --nodes 4 --dir "$DIR"
export SLURM_CONF=$DIR/etc/slurm.conf
export PATH=$BIN:$PATH

mkdir -p "$DIR/work"
cp "$ROOT/examples/hello-env.sbatch" "$DIR/work/"
cd "$DIR/work"
out=$(sbatch hello-env.sbatch)
printf '\n$ sbatch hello-env.sbatch\n%s\n' "$out"
job=${out##* }
[[ $job =~ ^[0-9]+$ ]] || { echo "demo: unexpected sbatch output: $out" >&2; exit 1; }
show squeue

# Wait (at most a minute) until the job has left the running states.
state=
for ((i = 0; i < 600; i++)); do
  state=$(scontrol show job "$job" | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true)
  case "$state" in
    PENDING|RUNNING|CONFIGURING|COMPLETING|SUSPENDED|"") sleep 0.1 ;;
    *) break ;;
  esac
done
echo
echo "job $job: $state"
show cat "hello-env-$job.out"
show sinfo
echo
[[ $state == COMPLETED ]]
