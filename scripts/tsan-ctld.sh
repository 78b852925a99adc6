#!/usr/bin/env bash
# The controller under ThreadSanitizer: builds shoalctld and the unit tests of its threaded
# parts (the journal's writer thread, the RPC layer) with -fsanitize=thread in $TSAN_BUILD_DIR,
# runs those unit tests, then runs controller-heavy integration tests against a cluster whose
# shoalctld is the TSan build (every other binary comes from $BUILD_DIR, which must be built).
# A data race is a test failure: the integration fixtures fail a test whose daemon log holds a
# sanitizer report, and the unit tests exit non-zero (halt_on_error=1).
#
#   scripts/tsan-ctld.sh [--build-only] [-- PYTEST_ARGS...]
#
# --build-only: configure and build $TSAN_BUILD_DIR, run nothing (CI builds it beside stage 1).
#
# Environment: BUILD_DIR (default build), TSAN_BUILD_DIR (default build-tsan), SHOAL_TSAN_TESTS
# (integration test files, relative to tests/integration).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
pytest_args=()
build_only=0
if [[ ${1:-} == --build-only ]]; then build_only=1; shift; fi
if [[ ${1:-} == -- ]]; then shift; pytest_args=("$@"); fi
BUILD_DIR=${BUILD_DIR:-build}
TSAN_BUILD_DIR=${TSAN_BUILD_DIR:-build-tsan}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
[[ $TSAN_BUILD_DIR == /* ]] || TSAN_BUILD_DIR=$ROOT/$TSAN_BUILD_DIR
tests=${SHOAL_TSAN_TESTS:-"test_controller_crash.py test_controller_ha.py test_basic_commands.py test_arrays_dependencies.py test_steps.py"}

for b in bin/shoal sbin/shoald sbin/shoal-stepd; do
  ((build_only)) && break
  [[ -x $BUILD_DIR/$b ]] || { echo "tsan-ctld.sh: $BUILD_DIR/$b is missing: build $BUILD_DIR first" >&2; exit 1; }
done

echo "=== TSan: configure and build shoalctld, journal_test, rpc_test ($TSAN_BUILD_DIR)"
# Without -Werror: stage 1 of CI holds the warnings bar; at -O1 GCC 12 reports false
# maybe-uninitialized warnings on std::optional that -O2 does not.
# -O1: TSan's documented setting; it compiles faster than -O2 and keeps reports readable.
cmake -S "$ROOT" -B "$TSAN_BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DSHOAL_TSAN=ON -DSHOAL_BUILD_BENCH=OFF -DSHOAL_WERROR=OFF >/dev/null || exit 1
ninja -C "$TSAN_BUILD_DIR" shoalctld journal_test rpc_test || exit 1
((build_only)) && exit 0

export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
echo "=== TSan: unit tests"
unit_rc=0
ctest --test-dir "$TSAN_BUILD_DIR" --output-on-failure -R '^(journal_test|rpc_test)$' \
  --timeout "${SHOAL_CTEST_TIMEOUT:-600}" || unit_rc=1

# A build directory whose sbin holds the TSan controller beside the ordinary daemons:
# `shoal start` takes its daemons from $SHOAL_SBINDIR, the fixtures from $SHOAL_BUILD_DIR/sbin.
mix=$TSAN_BUILD_DIR/mixed
rm -rf "$mix" && mkdir -p "$mix/sbin" || exit 1
ln -s "$BUILD_DIR/bin" "$mix/bin"
for f in "$BUILD_DIR"/sbin/*; do ln -s "$f" "$mix/sbin/"; done
rm -f "$mix/sbin/shoalctld" && cp "$TSAN_BUILD_DIR/sbin/shoalctld" "$mix/sbin/shoalctld"

echo "=== TSan: integration tests against the TSan controller: $tests"
files=()
for t in $tests; do files+=("$ROOT/tests/integration/$t"); done
# In the daemon, a report is logged and the process goes on (the fixture fails the test).
integration_rc=0
TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1 SHOAL_SBINDIR=$mix/sbin \
  SHOAL_BUILD_DIR=$mix /usr/bin/python3 -m pytest "${files[@]}" \
  -c "$ROOT/tests/integration/pytest.ini" -ra "${pytest_args[@]}" || integration_rc=1

if ((unit_rc != 0 || integration_rc != 0)); then
  echo "TSan: FAILED (unit rc=$unit_rc, integration rc=$integration_rc)"
  exit 1
fi
echo "TSan: OK"
