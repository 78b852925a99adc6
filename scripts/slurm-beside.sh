#!/usr/bin/env bash
# Debian's Slurm set up on this host the way a site (or bench/compare-slurm's apt-get) leaves it:
# the packages installed, /etc/slurm/slurm.conf, munged on /run/munge, slurmctld and one slurmd on
# Slurm's default ports (6817, 6818). Shoal's tests must pass beside it, running or stopped: they
# take their configuration from their own cluster directory, never from /etc/slurm (.ci/run starts
# it before the integration suite).
#
#   scripts/slurm-beside.sh start    install if missing, write the config, start, wait for the node
#   scripts/slurm-beside.sh stop     stop slurmd, slurmctld and munged (packages and config stay)
#   scripts/slurm-beside.sh status   what runs and listens
#
# Needs root. A /etc/slurm/slurm.conf that this script did not write is used as it is, never
# replaced. Processes are tracked by proctrack/pgid without a task plugin: Slurm's cgroup plugins
# want systemd to delegate them a cgroup, which a CI container does not have.
set -uo pipefail

CONF=/etc/slurm/slurm.conf
MARK="# Written by Shoal's scripts/slurm-beside.sh"
PKGS=(slurm-wlm munge)  # slurm-wlm: slurmctld, slurmd and slurm-client
CTLD_PID=/run/slurmctld.pid
SLURMD_PID=/run/slurmd.pid
MUNGE_PID=/run/munge/munged.pid
LOGS=/var/log/slurm

say() { printf 'slurm-beside: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

alive() { [[ -f $1 ]] && kill -0 "$(cat "$1" 2>/dev/null)" 2>/dev/null; }

# Slurm's own command, with the host's configuration (not a Shoal cluster's from the caller).
slurm_cmd() { env -u SLURM_CONF "/usr/bin/$1" "${@:2}"; }

wait_for() {  # wait_for SECONDS WHAT COMMAND...
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || { say "timed out waiting for $what"; return 1; }
    sleep 0.2
  done
}

install_packages() {
  local missing=() p status
  for p in "${PKGS[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
    [[ $status == ii* ]] || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  local apt=(apt-get install -y -q --no-install-recommends "${missing[@]}")
  "${apt[@]}" >/dev/null || { apt-get update -q >/dev/null && "${apt[@]}" >/dev/null; } ||
    die "apt-get install ${missing[*]} failed"
}

write_conf() {
  if [[ -f $CONF ]] && ! grep -qxF "$MARK" "$CONF"; then
    say "using the existing $CONF (not written by this script)"
    return 0
  fi
  local host node
  host=$(hostname -s)
  # slurmd -C: this machine's CPUs, sockets, cores, threads and memory, as slurmd will find them.
  node=$(slurmd -C 2>/dev/null | grep -m1 '^NodeName=') || die "slurmd -C printed no node line"
  node=$(sed -E 's/ *UpTime=.*//' <<< "$node")
  mkdir -p /etc/slurm
  cat > "$CONF.tmp" <<EOF
$MARK
ClusterName=beside
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=6817
SlurmdPort=6818
SlurmUser=slurm
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$CTLD_PID
SlurmdPidFile=$SLURMD_PID
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  mv "$CONF.tmp" "$CONF"
  chmod 644 "$CONF"
}

start_munged() {
  if alive "$MUNGE_PID"; then return 0; fi
  if [[ ! -s /etc/munge/munge.key ]]; then
    install -d -o munge -g munge -m 0700 /etc/munge
    runuser -u munge -- mungekey --create --keyfile=/etc/munge/munge.key ||
      die "could not create /etc/munge/munge.key"
  fi
  install -d -o munge -g munge -m 0755 /run/munge
  install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
  runuser -u munge -- /usr/sbin/munged || die "munged did not start (see /var/log/munge/munged.log)"
  wait_for 10 "munged" sh -c 'munge -n | unmunge' || die "munge round trip failed"
}

start() {
  ((EUID == 0)) || die "needs root"
  install_packages
  write_conf
  start_munged
  install -d -o slurm -g slurm -m 0755 /var/lib/slurm /var/lib/slurm/slurmctld "$LOGS"
  install -d -m 0755 /var/spool/slurmd
  alive "$CTLD_PID" || /usr/sbin/slurmctld -f "$CONF" ||
    die "slurmctld did not start: $(tail -n 5 "$LOGS/slurmctld.log" 2>/dev/null)"
  alive "$SLURMD_PID" || /usr/sbin/slurmd -f "$CONF" ||
    die "slurmd did not start: $(tail -n 5 "$LOGS/slurmd.log" 2>/dev/null)"
  idle() { slurm_cmd sinfo -h -N -o '%t' | grep -qx idle; }
  wait_for 60 "Slurm's node to be idle" idle ||
    die "Slurm's node is not idle: $(slurm_cmd sinfo -N 2>&1 | tail -n 3)" \
      "$(tail -n 5 "$LOGS/slurmctld.log" 2>/dev/null)"
  say "up: $(/usr/sbin/slurmctld -V), $CONF, slurmctld on 6817, slurmd on 6818" \
    "($(slurm_cmd sinfo -h -N -o '%N %t'))"
}

stop_pidfile() {  # stop_pidfile NAME PIDFILE
  local pid
  alive "$2" || return 0
  pid=$(cat "$2")
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    say "$1 (pid $pid) ignored SIGTERM for 10 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null
  fi
}

stop() {
  ((EUID == 0)) || die "needs root"
  stop_pidfile slurmd "$SLURMD_PID"
  stop_pidfile slurmctld "$CTLD_PID"
  stop_pidfile munged "$MUNGE_PID"
  say "stopped (packages and $CONF stay)"
}

status() {
  local d
  for d in "munged:$MUNGE_PID" "slurmctld:$CTLD_PID" "slurmd:$SLURMD_PID"; do
    if alive "${d#*:}"; then echo "${d%%:*}: running (pid $(cat "${d#*:}"))"
    else echo "${d%%:*}: stopped"; fi
  done
  [[ -f $CONF ]] && echo "$CONF: present" || echo "$CONF: absent"
  ss -ltnp 2>/dev/null | grep -E ':681[78] ' || true
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
