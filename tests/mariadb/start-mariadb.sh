#!/usr/bin/env bash
# Starts a throwaway MariaDB server for tests, owned by the current user, in DIR:
#   start-mariadb.sh DIR [PORT]
# Creates DIR/data on first use, listens on DIR/mysql.sock and 127.0.0.1:PORT (a free port when
# not given; SHOAL_MARIADB_BIND=ADDR listens on ADDR instead, e.g. a test bridge for pods),
# creates user shoal/shoal with all privileges, and prints "socket=<path> port=<port>".
# Bounded in time (no systemd); stop it with stop-mariadb.sh DIR.
set -euo pipefail

dir=${1:?usage: start-mariadb.sh DIR [PORT]}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
port=${2:-}
bind=${SHOAL_MARIADB_BIND:-127.0.0.1}
timeout_s=${SHOAL_MARIADB_TIMEOUT:-30}

find_bin() {
  local name
  for name in "$@"; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
    for d in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin /usr/libexec; do
      if [ -x "$d/$name" ]; then echo "$d/$name"; return 0; fi
    done
  done
  return 1
}

mariadbd=$(find_bin mariadbd mysqld) || { echo "start-mariadb: mariadbd not found" >&2; exit 2; }
install_db=$(find_bin mariadb-install-db mysql_install_db) ||
  { echo "start-mariadb: mariadb-install-db not found" >&2; exit 2; }
client=$(find_bin mariadb mysql) || { echo "start-mariadb: mariadb client not found" >&2; exit 2; }
admin=$(find_bin mariadb-admin mysqladmin) ||
  { echo "start-mariadb: mariadb-admin not found" >&2; exit 2; }

sock="$dir/mysql.sock"
pidfile="$dir/mariadbd.pid"
log="$dir/mariadbd.err"

# Socket paths are limited to ~107 bytes.
if [ ${#sock} -gt 100 ]; then
  echo "start-mariadb: socket path too long: $sock" >&2
  exit 2
fi

# Already running from this directory: report it.
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null && [ -f "$dir/port" ]; then
  echo "socket=$sock port=$(cat "$dir/port")"
  exit 0
fi

user_args=()
if [ "$(id -u)" = 0 ]; then user_args=(--user=root); fi

if [ ! -d "$dir/data/mysql" ]; then
  rm -rf "$dir/data"
  if ! timeout 120 "$install_db" --no-defaults --datadir="$dir/data" \
      --auth-root-authentication-method=normal --skip-test-db "${user_args[@]}" \
      >"$dir/install.log" 2>&1; then
    echo "start-mariadb: mariadb-install-db failed (see $dir/install.log):" >&2
    tail -n 20 "$dir/install.log" >&2
    exit 1
  fi
fi

if [ -z "$port" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fi
echo "$port" >"$dir/port"
rm -f "$sock"

# setsid: the server must not die with the caller's terminal or process group.
setsid "$mariadbd" --no-defaults "${user_args[@]}" --datadir="$dir/data" --socket="$sock" \
  --port="$port" --bind-address="$bind" --pid-file="$pidfile" --log-error="$log" \
  --skip-log-bin --innodb-buffer-pool-size=32M --innodb-log-file-size=16M \
  --skip-name-resolve --max-connections=200 </dev/null >/dev/null 2>&1 &
server_pid=$!

deadline=$((SECONDS + timeout_s))
until "$admin" --no-defaults --socket="$sock" -uroot --connect-timeout=2 ping >/dev/null 2>&1; do
  if ! kill -0 "$server_pid" 2>/dev/null; then
    echo "start-mariadb: mariadbd exited during startup (see $log):" >&2
    tail -n 20 "$log" >&2 || true
    exit 1
  fi
  if [ $SECONDS -ge $deadline ]; then
    echo "start-mariadb: mariadbd did not answer within ${timeout_s}s (see $log)" >&2
    kill "$server_pid" 2>/dev/null || true
    exit 1
  fi
  sleep 0.2
done

"$client" --no-defaults --socket="$sock" -uroot <<'SQL'
CREATE USER IF NOT EXISTS 'shoal'@'localhost' IDENTIFIED BY 'shoal';
CREATE USER IF NOT EXISTS 'shoal'@'127.0.0.1' IDENTIFIED BY 'shoal';
GRANT ALL PRIVILEGES ON *.* TO 'shoal'@'localhost';
GRANT ALL PRIVILEGES ON *.* TO 'shoal'@'127.0.0.1';
FLUSH PRIVILEGES;
SQL

echo "socket=$sock port=$port"
