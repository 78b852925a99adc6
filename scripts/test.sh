#!/usr/bin/env bash
# Builds Shoal (scripts/setup.sh) and runs every test: the unit tests (ctest) and the
# integration suite (pytest against real daemons started with `shoal start`). Exits non-zero
# when anything fails, and ends with ctest's and pytest's summary lines.
#
#   scripts/test.sh [--unit-only | --integration-only] [-- PYTEST_ARGS...]
#
# Environment: BUILD_DIR, CMAKE_BUILD_TYPE, SHOAL_WERROR, SHOAL_CMAKE_ARGS (see setup.sh).
# The integration tests need root: they create the users shoaltest1 and shoaltest2.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
run_unit=1
run_integration=1
pytest_args=()
while (($#)); do
  case "$1" in
    --unit-only) run_integration=0 ;;
    --integration-only) run_unit=0 ;;
    --) shift; pytest_args=("$@"); break ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown option '$1'" >&2; exit 1 ;;
  esac
  shift
done

"$ROOT/scripts/setup.sh" || { echo "test.sh: setup/build failed" >&2; exit 1; }

BUILD_DIR=${BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$ROOT/$BUILD_DIR
logs=$BUILD_DIR/test-logs
mkdir -p "$logs"
unit_rc=0
integration_rc=0

if ((run_unit)); then
  echo "=== unit tests (ctest, $BUILD_DIR)"
  # A per-test limit: a test that hangs (or leaks a process holding its output) fails by name
  # instead of stalling the whole run.
  ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$(nproc)" \
    --timeout "${SHOAL_CTEST_TIMEOUT:-600}" 2>&1 | tee "$logs/ctest.log"
  unit_rc=${PIPESTATUS[0]}
  if grep -q 'No tests were found' "$logs/ctest.log"; then unit_rc=1; fi
fi

if ((run_integration)); then
  echo "=== integration tests (pytest)"
  # Debian's pytest: /usr/bin/python3, not a python3 that may come first on PATH.
  # tests/deploy: CRDs, Helm charts, manifests and Dockerfile (no daemons); -c keeps the
  # integration suite's pytest.ini (timeouts, markers) for both directories.
  SHOAL_BUILD_DIR=$BUILD_DIR /usr/bin/python3 -m pytest "$ROOT/tests/integration" \
    "$ROOT/tests/deploy" -c "$ROOT/tests/integration/pytest.ini" \
    -ra --durations=25 "${pytest_args[@]}" 2>&1 | tee "$logs/pytest.log"
  integration_rc=${PIPESTATUS[0]}
fi

echo "=== summary"
if ((run_unit)); then
  grep -E 'tests passed|No tests were found' "$logs/ctest.log" | tail -n 1 | sed 's/^/ctest:  /'
fi
if ((run_integration)); then
  grep -E '^=+ .*(passed|failed|error|no tests ran).* =+$' "$logs/pytest.log" | tail -n 1 |
    sed 's/^/pytest: /'
fi
if ((unit_rc != 0 || integration_rc != 0)); then
  echo "FAILED (ctest rc=$unit_rc, pytest rc=$integration_rc)"
  exit 1
fi
echo "OK"
