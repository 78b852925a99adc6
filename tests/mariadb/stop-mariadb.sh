#!/usr/bin/env bash
# Stops a server started by start-mariadb.sh DIR: a clean shutdown, then SIGTERM, then SIGKILL,
# each bounded in time. Keeps DIR/data (a later start reuses it); remove DIR to discard it.
set -uo pipefail

dir=${1:?usage: stop-mariadb.sh DIR}
dir=$(cd "$dir" 2>/dev/null && pwd) || exit 0
sock="$dir/mysql.sock"
pidfile="$dir/mariadbd.pid"

pid=""
if [ -f "$pidfile" ]; then pid=$(cat "$pidfile" 2>/dev/null || true); fi

alive() { [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }

wait_gone() {
  local deadline=$((SECONDS + $1))
  while alive; do
    [ $SECONDS -ge $deadline ] && return 1
    sleep 0.2
  done
  return 0
}

admin=$(command -v mariadb-admin || command -v mysqladmin || true)
if [ -S "$sock" ] && [ -n "$admin" ]; then
  timeout 20 "$admin" --no-defaults --socket="$sock" -uroot --connect-timeout=2 shutdown \
    >/dev/null 2>&1 || true
fi
if alive && ! wait_gone 15; then
  kill -TERM "$pid" 2>/dev/null || true
  if ! wait_gone 10; then
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone 5 || true
  fi
fi
rm -f "$pidfile" "$sock"
exit 0
