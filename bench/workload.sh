#!/usr/bin/env bash
# The CLI-only workload that bench/compare-slurm runs, unchanged, against Slurm and against Shoal.
#
# It uses only the Slurm commands found on PATH (sbatch, squeue, sinfo, scancel, scontrol, srun)
# and SLURM_CONF; nothing in it knows which implementation answers. Two figures need the
# controller process itself, and those come from the caller as hooks (the only other inputs):
#   BENCH_CTLD_PIDFILE  file holding the controller's pid (read for VmRSS, and for kill -9)
#   BENCH_CTLD_START    shell command that starts the controller again in the background and
#                       rewrites BENCH_CTLD_PIDFILE (used by the restart figure)
# Results go to BENCH_OUT as "key<TAB>value" lines; a value is a number or "n/a" (the command
# failed on this side, e.g. arrays or srun not implemented), never a crash.
#
# Sizes (environment, defaults are the quick mode):
#   N_SEQ=200 N_PAR=400 N_TPUT=500 N_ARRAY=500 N_LAT=7 N_SRUN=7 N_QUERY=5
#   N_QUEUE=5000 (queued jobs for squeue/sinfo/RSS/scancel)  N_RESTART=10000 (queued at restart;
#   when it equals N_QUEUE and both figures run, the restart reuses the queue's fill before scancel)
#   (bench/compare-slurm --quick uses these; --full uses the issue-3 sizes)
#   PAR=4 (parallel submitters)  BENCH_TIMEOUT=600 (seconds any one wait may take)
#   BENCH_SETTLE=6 (seconds to let a controller save state before kill -9)
#   BENCH_ONLY="fig1 fig2" to run a subset (names: seq par tput array latency srun queue restart
#   runnable rest); "runnable" queues N_QUEUE jobs behind one that holds every node (pending for
#   resources, not held); "rest" is not in the default set: it needs a REST daemon, described by the caller:
#   BENCH_REST_URL (http://host:port), BENCH_REST_PREFIX (/slurm/v0.0.NN), BENCH_REST_TOKEN and
#   BENCH_REST_USER (sent as X-SLURM-USER-TOKEN / X-SLURM-USER-NAME), BENCH_REST_SUBMIT_BODY
#   (the JSON of one held job for that API version). N_REST_QUEUE=10000 queued jobs for GET /jobs,
#   REST_CONN=16 connections, REST_SECS=10 seconds per figure (wrk).
set -u

N_SEQ=${N_SEQ:-200}
N_PAR=${N_PAR:-400}
N_TPUT=${N_TPUT:-500}
N_ARRAY=${N_ARRAY:-500}
N_LAT=${N_LAT:-7}
N_SRUN=${N_SRUN:-7}
N_QUERY=${N_QUERY:-5}
N_QUEUE=${N_QUEUE:-5000}
N_RESTART=${N_RESTART:-10000}
N_REST_QUEUE=${N_REST_QUEUE:-10000}
REST_CONN=${REST_CONN:-16}
REST_SECS=${REST_SECS:-10}
PAR=${PAR:-4}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-600}
BENCH_SETTLE=${BENCH_SETTLE:-6}
BENCH_ONLY=${BENCH_ONLY:-"seq par tput array latency srun queue restart runnable"}
: "${BENCH_OUT:?BENCH_OUT must name the result file}"
BENCH_LOG=${BENCH_LOG:-/dev/stderr}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/shoal-workload.XXXXXX")
mkfifo "$WORK/nap" && exec {NAP_FD}<>"$WORK/nap"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

# ---- helpers -------------------------------------------------------------------------------
now() { echo "${EPOCHREALTIME/,/.}"; }            # seconds, microsecond resolution
# Sets variable $1 to now() without a subshell: `t0=$(now)` forks one, and the fork's return
# and the next one's start fell inside every interval measured that way (2.7 ms measured
# around `true` on this machine; the same for both systems, but a third of a 4-ms command).
stamp() { printf -v "$1" '%s' "${EPOCHREALTIME/,/.}"; }
# A sleep without a process (bash's read timing out on a FIFO it holds open both ways). The
# latency poll slept with `sleep 0.002`: a fork and exec per poll, 4.2 ms a nap instead of 2.2,
# whose CPU competed on 2 cores with the system being measured.
nap() { read -rt "$1" -u "$NAP_FD" _ || :; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
put() { printf '%s\t%s\n' "$1" "$2" >> "$BENCH_OUT"; }
log() { printf '[%s] %s\n' "$(date +%T)" "$*" >> "$BENCH_LOG"; }
want() { [[ " $BENCH_ONLY " == *" $1 "* ]]; }
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a";
  else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.6f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
rate() { awk -v n="$1" -v s="$2" 'BEGIN { if (s > 0) printf "%.1f", n / s; else print "n/a" }'; }
ms() { awk -v s="$1" 'BEGIN { printf "%.2f", s * 1000 }'; }

# Jobs of ours not yet finished (pending, running, completing). Prints -1 when squeue fails.
active_jobs() {
  local out
  out=$(squeue -h -t PD,R,CG -o %i 2>/dev/null) || { echo -1; return; }
  [[ -z $out ]] && echo 0 || wc -l <<< "$out"
}
pending_jobs() {
  local out
  out=$(squeue -h -t PD -o %i 2>/dev/null) || { echo -1; return; }
  [[ -z $out ]] && echo 0 || wc -l <<< "$out"
}

# Waits until no job is active; prints the time it returned, or fails after BENCH_TIMEOUT.
# Polls every $1 seconds (default 0.05).
wait_empty() {
  local interval=${1:-0.05} deadline n
  deadline=$(awk -v t="$(now)" -v d="$BENCH_TIMEOUT" 'BEGIN { printf "%.0f", t + d }')
  while :; do
    n=$(active_jobs)
    if [[ $n == 0 ]]; then now; return 0; fi
    if (( ${EPOCHSECONDS} > deadline )); then log "timeout waiting for the queue to drain ($n left)"; return 1; fi
    sleep "$interval"
  done
}

cancel_all() {
  scancel -u "$(id -un)" >/dev/null 2>&1
  wait_empty 0.2 >/dev/null || log "queue did not drain after scancel"
}

# Submits $2 jobs with sbatch args "${@:3}" from $1 parallel loops; counts failures in $WORK/fail.
# Prints nothing; returns non-zero when any sbatch failed.
submit_many() {
  local par=$1 total=$2; shift 2
  local per=$(( (total + par - 1) / par )) p pids=()
  rm -f "$WORK"/fail.*
  for ((p = 0; p < par; p++)); do
    local mine=$per
    (( p == par - 1 )) && mine=$(( total - per * (par - 1) ))
    (
      f=0
      for ((i = 0; i < mine; i++)); do sbatch "$@" >/dev/null 2>>"$WORK/sbatch.err" || ((f++)); done
      echo "$f" > "$WORK/fail.$p"
    ) &
    pids+=($!)
  done
  wait "${pids[@]}"  # its own loops only: a controller restarted from here is a child too
  local fails
  fails=$(cat "$WORK"/fail.* 2>/dev/null | awk '{ s += $1 } END { print s + 0 }')
  if (( fails > 0 )); then
    log "$fails of $total sbatch calls failed: $(sort "$WORK/sbatch.err" | uniq -c | sort -rn | head -3 | tr '\n' ' ')"
    return 1
  fi
  return 0
}

# Runs "$@" N times and prints the median wall time in seconds; fails if any run failed.
time_median() {
  local n=$1; shift
  local i t0 t1 vals=""
  for ((i = 0; i < n; i++)); do
    stamp t0
    "$@" >/dev/null 2>"$WORK/cmd.err" || { log "'$*' failed: $(head -c 300 "$WORK/cmd.err")"; return 1; }
    stamp t1
    vals+="$(elapsed "$t0" "$t1")"$'\n'
  done
  printf '%s' "$vals" | median
}

ctld_pid() { cat "${BENCH_CTLD_PIDFILE:-/nonexistent}" 2>/dev/null; }
ctld_rss_kb() {
  local pid; pid=$(ctld_pid)
  [[ -n $pid ]] && awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null
}

# Stops the controller with SIGTERM (both save their state) and starts it again, then waits until
# it answers: the memory figures measure the growth of a fresh heap, not one with the holes the
# earlier figures' jobs left (a fill that reuses them shows little or no growth).
fresh_controller() {
  local pid i
  pid=$(ctld_pid)
  [[ -n $pid && -n ${BENCH_CTLD_START:-} ]] || { log "fresh controller: no pid or start hook"; return 1; }
  kill -TERM "$pid" 2>/dev/null || return 1
  for ((i = 0; i < 600; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  kill -0 "$pid" 2>/dev/null && { log "fresh controller: pid $pid did not stop"; return 1; }
  (eval "$BENCH_CTLD_START")  # in a subshell: the daemon is nobody's job to wait for
  for ((i = 0; i < 600; i++)); do
    squeue -h >/dev/null 2>&1 && { sleep 2; return 0; }  # answers; let start-up settle
    sleep 0.05
  done
  log "fresh controller: no answer after restart"
  return 1
}

# Waits until the controller holds at most $1 job records. Ended jobs are purged MinJobAge after
# they end (Slurm checks every minute or so): a fill measured while the records of earlier
# figures are being freed reuses their memory and shows too little per job (629 bytes per
# runnable job in one run, against 1,973-2,190 when the fill starts clean). Gives up after 150 s.
wait_purged() {
  local keep=$1 i n=?
  for ((i = 0; i < 750; i++)); do
    n=$(squeue -h -t all -o %i 2>/dev/null | wc -l)
    (( n <= keep )) && return 0
    sleep 0.2
  done
  log "wait_purged: still $n job records"
}

# Fills the queue with N_QUEUE jobs (sbatch args "$@") in two halves and measures the memory of
# the second half: the first half fills whatever holes the heap still has (from start-up or the
# earlier figures), so the second shows what a queued job costs. Sets FILL_RATE (jobs/s, or
# n/a), QUEUED (pending jobs after the fill) and PER_JOB (bytes, or n/a).
fill_queue() {
  local half=$(( N_QUEUE / 2 )) t0 ok=1 rss_mid cnt_mid rss_end
  stamp t0
  submit_many "$PAR" "$half" "$@" || ok=0
  sleep 3  # Shoal packs queued jobs in batches: held ones at once, runnable ones after a second
  rss_mid=$(ctld_rss_kb); cnt_mid=$(pending_jobs)
  submit_many "$PAR" $(( N_QUEUE - half )) "$@" || ok=0
  stamp t_end
  if (( ok )); then FILL_RATE=$(rate "$N_QUEUE" "$(elapsed "$t0" "$t_end")"); else FILL_RATE=n/a; fi
  sleep 3
  rss_end=$(ctld_rss_kb); QUEUED=$(pending_jobs)
  if [[ -n $rss_mid && -n $rss_end ]] && (( QUEUED > cnt_mid )); then
    PER_JOB=$(awk -v a="$rss_mid" -v b="$rss_end" -v n=$(( QUEUED - cnt_mid )) \
      'BEGIN { printf "%.0f", (b - a) * 1024 / n }')
  else PER_JOB=n/a; fi
  log "filled: $cnt_mid jobs at ${rss_mid:-?} KiB, $QUEUED at ${rss_end:-?} KiB"
}

HOLD=(--hold --wrap true -o /dev/null -J bench)
RUN=(--wrap true -o /dev/null -J bench)

log "workload start: $(command -v sbatch), SLURM_CONF=${SLURM_CONF:-}"
cancel_all

# ---- controller RSS when idle ----------------------------------------------------------------
rss=$(ctld_rss_kb); put rss_idle_kb "${rss:-n/a}"

# ---- sequential sbatch rate (held jobs: measures the submit path alone) -----------------------
if want seq; then
  stamp t0
  if submit_many 1 "$N_SEQ" "${HOLD[@]}"; then stamp t_end; put sbatch_seq_rate "$(rate "$N_SEQ" "$(elapsed "$t0" "$t_end")")"
  else put sbatch_seq_rate n/a; fi
  log "sequential sbatch done"
  cancel_all
fi

# ---- parallel sbatch rate --------------------------------------------------------------------
if want par; then
  stamp t0
  if submit_many "$PAR" "$N_PAR" "${HOLD[@]}"; then stamp t_end; put sbatch_par_rate "$(rate "$N_PAR" "$(elapsed "$t0" "$t_end")")"
  else put sbatch_par_rate n/a; fi
  log "parallel sbatch done"
  cancel_all
fi

# ---- end-to-end throughput of trivial jobs ---------------------------------------------------
if want tput; then
  stamp t0
  if submit_many "$PAR" "$N_TPUT" "${RUN[@]}"; then
    stamp t_sub
    if t1=$(wait_empty 0.1); then
      put tput_jobs_rate "$(rate "$N_TPUT" "$(elapsed "$t0" "$t1")")"
      put tput_submit_rate "$(rate "$N_TPUT" "$(elapsed "$t0" "$t_sub")")"
    else put tput_jobs_rate n/a; put tput_submit_rate n/a; fi
  else put tput_jobs_rate n/a; put tput_submit_rate n/a; fi
  log "throughput done"
  cancel_all
fi

# ---- throughput of an N-task array -----------------------------------------------------------
# Submitted held so the task count can be checked (an implementation that ignored --array would
# otherwise look absurdly fast), then released; the count check is not timed.
if want array; then
  result=n/a
  stamp t0
  if id=$(sbatch --parsable --array="0-$((N_ARRAY - 1))" "${HOLD[@]}" 2>"$WORK/cmd.err"); then
    id=${id%%;*}
    stamp t_a
    cnt=$(squeue -h -r -t PD -o %i 2>/dev/null | wc -l)
    stamp t_b
    if [[ $cnt -ne $N_ARRAY ]]; then
      log "array: expected $N_ARRAY pending tasks, squeue -r shows $cnt"
    elif scontrol release "$id" >/dev/null 2>&1; then
      if t1=$(wait_empty 0.1); then
        total=$(awk -v a="$(elapsed "$t0" "$t_a")" -v b="$(elapsed "$t_b" "$t1")" 'BEGIN { print a + b }')
        result=$(rate "$N_ARRAY" "$total")
      fi
    else log "array: scontrol release $id failed"; fi
  else log "array: sbatch --array failed: $(head -c 300 "$WORK/cmd.err")"; fi
  put tput_array_rate "$result"
  cancel_all
fi

# ---- submit-to-done latency of one trivial job (median) --------------------------------------
if want latency; then
  vals=""
  ok=1
  for ((k = 0; k < N_LAT; k++)); do
    stamp t0
    id=$(sbatch --parsable "${RUN[@]}" 2>/dev/null) || { ok=0; break; }
    id=${id%%;*}
    done_at=""
    while :; do
      s=$(scontrol -o show job "$id" 2>/dev/null)
      case $s in
        *JobState=COMPLETED*|*JobState=FAILED*|*JobState=CANCELLED*|*JobState=TIMEOUT*|*JobState=NODE_FAIL*|"")
          stamp done_at; break ;;
      esac
      (( EPOCHSECONDS - ${t0%.*} > BENCH_TIMEOUT )) && break
      nap 0.002
    done
    [[ -z $done_at ]] && { ok=0; break; }
    vals+="$(elapsed "$t0" "$done_at")"$'\n'
  done
  if (( ok )); then put latency_ms "$(ms "$(printf '%s' "$vals" | median)")"; else put latency_ms n/a; fi
  log "latency done"
fi

# ---- srun ------------------------------------------------------------------------------------
if want srun; then
  if v=$(time_median "$N_SRUN" srun -N1 true); then put srun_n1_ms "$(ms "$v")"; else put srun_n1_ms n/a; fi
  if v=$(time_median "$N_SRUN" srun -N4 -n4 true); then put srun_n4_ms "$(ms "$v")"; else put srun_n4_ms n/a; fi
  # 64 tasks on 4 nodes: compare-slurm's nodes have CPUS (default 2) CPUs each, fewer than the
  # 16 tasks per node, and without -O (--overcommit, which Slurm and Shoal both take) Slurm 22.05
  # queues such a job forever ("Requested partition configuration not available now", see
  # docs/notes/slurm-steps-observed.md). With -O the job is sized as one task per node and the
  # 64 tasks share its CPUs: what is measured is starting and reaping 64 processes on 4 nodes.
  if v=$(time_median "$N_SRUN" srun -N4 -n64 -O true); then put srun_n64_ms "$(ms "$v")"; else put srun_n64_ms n/a; fi
  log "srun done"
  cancel_all
fi

# With N_RESTART = N_QUEUE the restart figure reuses the queue figure's fill (the scaling curves'
# 100,000 jobs take half an hour to submit on a 2-core machine); scancel then cancels what came back.
restart_reuses_queue() { want queue && want restart && (( N_RESTART == N_QUEUE )); }

# kill -9 of the controller with the jobs now queued, then the time until squeue answers and
# until it lists them all (a controller that saves state lazily may come back short).
restart_figure() {
  local cnt pid t0 t_serve t_full got out last_got="" t_same=""
  cnt=$(pending_jobs)
  put restart_queued "$cnt"
  log "queued $cnt held jobs for the restart"
  sleep "$BENCH_SETTLE"   # let a controller that saves state lazily write it (Shoal acks durably)
  pid=$(ctld_pid)
  if [[ -n $pid && -n ${BENCH_CTLD_START:-} ]] && kill -9 "$pid" 2>/dev/null; then
    while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
    stamp t0
    eval "$BENCH_CTLD_START"
    t_serve="" t_full="" got=0
    while (( EPOCHSECONDS - ${t0%.*} <= BENCH_TIMEOUT )); do
      if out=$(squeue -h -t PD -o %i 2>/dev/null); then
        [[ -z $t_serve ]] && stamp t_serve
        [[ -z $out ]] && got=0 || got=$(wc -l <<< "$out")
        if (( got >= cnt )); then stamp t_full; break; fi
        # Answers, but not everything is back yet: keep polling a while (a lazily saved state
        # may have lost jobs; stop after 5 s of a stable short count).
        if [[ ${last_got:-x} == "$got" ]]; then
          (( EPOCHSECONDS - ${t_same:-$EPOCHSECONDS} > 5 )) && break
        else last_got=$got; t_same=$EPOCHSECONDS; fi
      fi
      sleep 0.01
    done
    if [[ -n $t_serve ]]; then put restart_serve_s "$(elapsed "$t0" "$t_serve")"; else put restart_serve_s n/a; fi
    if [[ -n $t_full ]]; then put restart_full_s "$(elapsed "$t0" "$t_full")"; else put restart_full_s n/a; fi
    put restart_recovered "$got"
  else
    log "restart: no controller pid or no start hook"
    put restart_serve_s n/a; put restart_full_s n/a; put restart_recovered n/a
  fi
  log "restart done"
}

# ---- queries, memory and scancel with N_QUEUE queued jobs ------------------------------------
if want queue; then
  wait_purged 0
  fresh_controller
  fill_queue "${HOLD[@]}"
  put fill_rate "$FILL_RATE"
  put queued_jobs "$QUEUED"
  put rss_per_job_bytes "$PER_JOB"
  put rss_queued_kb "$(ctld_rss_kb)"
  if v=$(time_median "$N_QUERY" squeue); then put squeue_ms "$(ms "$v")"; else put squeue_ms n/a; fi
  if v=$(time_median "$N_QUERY" squeue -u "$(id -un)" -t PD); then put squeue_pd_ms "$(ms "$v")"; else put squeue_pd_ms n/a; fi
  if v=$(time_median "$N_QUERY" sinfo); then put sinfo_ms "$(ms "$v")"; else put sinfo_ms n/a; fi
  # One more sbatch into the loaded queue (what a user feels on a busy controller).
  if v=$(time_median 5 sbatch "${HOLD[@]}"); then put sbatch_loaded_ms "$(ms "$v")"; else put sbatch_loaded_ms n/a; fi
  log "queries done"
  if restart_reuses_queue; then
    restart_figure
    put scancel_jobs "$(pending_jobs)"
  fi
  stamp t0
  if scancel -u "$(id -un)" >/dev/null 2>"$WORK/cmd.err"; then
    stamp t_ret
    if t1=$(wait_empty 0.1); then
      put scancel_s "$(elapsed "$t0" "$t1")"
      put scancel_return_s "$(elapsed "$t0" "$t_ret")"
    else put scancel_s n/a; put scancel_return_s n/a; fi
  else
    log "scancel failed: $(head -c 300 "$WORK/cmd.err")"
    put scancel_s n/a; put scancel_return_s n/a
  fi
  log "scancel done"
  cancel_all
fi

# ---- the same queue of runnable jobs: pending behind a job that holds every node ------------
# Held jobs wait for a release; these wait for resources, so every scheduling pass may weigh
# them (what a busy site's queue is). One job holds every node; N_QUEUE trivial jobs queue.
if want runnable; then
  nodes=$(sinfo -h -o %D 2>/dev/null | head -1)
  if blocker=$(sbatch --parsable --exclusive -N "${nodes:-1}" --wrap "sleep 100000" \
                 -o /dev/null -J blocker 2>>"$WORK/sbatch.err") &&
     for ((i = 0; i < 600; i++)); do
       [[ $(squeue -h -j "${blocker%%;*}" -o %T 2>/dev/null) == RUNNING ]] && break; sleep 0.1
     done && [[ $(squeue -h -j "${blocker%%;*}" -o %T 2>/dev/null) == RUNNING ]]; then
    wait_purged 1  # the blocker
    fresh_controller
    fill_queue "${RUN[@]}"
    put run_fill_rate "$FILL_RATE"
    put run_queued_jobs "$QUEUED"
    put run_rss_per_job_bytes "$PER_JOB"
    log "queued $QUEUED runnable jobs behind job $blocker"
    if v=$(time_median "$N_QUERY" squeue); then put run_squeue_ms "$(ms "$v")"; else put run_squeue_ms n/a; fi
    if v=$(time_median "$N_QUERY" sbatch "${RUN[@]}"); then put run_sbatch_ms "$(ms "$v")"; else put run_sbatch_ms n/a; fi
    stamp t0
    for ((i = 0; i < N_SEQ; i++)); do sbatch "${RUN[@]}" >/dev/null 2>>"$WORK/sbatch.err" || break; done
    if (( i == N_SEQ )); then stamp t_end; put run_sbatch_seq_rate "$(rate "$N_SEQ" "$(elapsed "$t0" "$t_end")")"
    else put run_sbatch_seq_rate n/a; fi
    log "runnable queue done"
  else
    log "runnable: the blocker job did not start: $(tail -c 300 "$WORK/sbatch.err" 2>/dev/null)"
    put run_fill_rate n/a; put run_queued_jobs n/a; put run_rss_per_job_bytes n/a
    put run_squeue_ms n/a; put run_sbatch_ms n/a; put run_sbatch_seq_rate n/a
  fi
  cancel_all
fi

# ---- REST: GET /jobs with N_REST_QUEUE queued jobs, then job submission ---------------------
# wrk drives the daemon; a run counts only when every answer was 2xx (wrk reports the others).
wrk_rps() {  # wrk_rps NAME [wrk args...]: prints requests/s, or fails
  local name=$1; shift
  wrk -t2 -c"$REST_CONN" -d"${REST_SECS}s" --timeout 30s \
    -H "X-SLURM-USER-NAME: ${BENCH_REST_USER:-}" -H "X-SLURM-USER-TOKEN: ${BENCH_REST_TOKEN:-}" \
    "$@" > "$WORK/wrk.$name" 2>&1 || { log "wrk $name failed: $(tail -3 "$WORK/wrk.$name")"; return 1; }
  log "wrk $name: $(grep -E 'Requests/sec|Non-2xx|Socket errors|requests in' "$WORK/wrk.$name" | tr '\n' ' ')"
  if grep -qE 'Non-2xx|Socket errors' "$WORK/wrk.$name"; then return 1; fi
  awk '/^Requests\/sec:/ { print $2 }' "$WORK/wrk.$name"
}
if want rest; then
  if [[ -z ${BENCH_REST_URL:-} ]] || ! command -v wrk >/dev/null; then
    log "rest: no REST daemon described (BENCH_REST_URL) or no wrk"
    put rest_jobs_rps n/a; put rest_submit_rps n/a
  else
    submit_many "$PAR" "$N_REST_QUEUE" "${HOLD[@]}" || log "rest: some submissions failed"
    cnt=$(pending_jobs)
    put rest_queued "$cnt"
    log "rest: queued $cnt held jobs"
    if v=$(time_median 3 curl -sf -o /dev/null -H "X-SLURM-USER-NAME: $BENCH_REST_USER" \
        -H "X-SLURM-USER-TOKEN: $BENCH_REST_TOKEN" "$BENCH_REST_URL$BENCH_REST_PREFIX/jobs/"); then
      put rest_jobs_ms "$(ms "$v")"
    else put rest_jobs_ms n/a; fi
    if v=$(wrk_rps jobs "$BENCH_REST_URL$BENCH_REST_PREFIX/jobs/"); then put rest_jobs_rps "$v"
    else put rest_jobs_rps n/a; fi
    cat > "$WORK/submit.lua" <<'LUA'
wrk.method = "POST"
wrk.body = os.getenv("BENCH_REST_SUBMIT_BODY")
wrk.headers["Content-Type"] = "application/json"
LUA
    if v=$(wrk_rps submit -s "$WORK/submit.lua" "$BENCH_REST_URL$BENCH_REST_PREFIX/job/submit"); then
      put rest_submit_rps "$v"
    else put rest_submit_rps n/a; fi
    # A submission still in flight when wrk stopped may land after a first scancel.
    scancel -u "$BENCH_REST_USER" >/dev/null 2>&1
    sleep 1
    scancel -u "$BENCH_REST_USER" >/dev/null 2>&1
    cancel_all
  fi
fi

# ---- controller restart with N_RESTART queued jobs -------------------------------------------
if want restart && ! restart_reuses_queue; then
  submit_many "$PAR" "$N_RESTART" "${HOLD[@]}" || log "some submissions failed"
  restart_figure
  # The last figure: the cluster is stopped next, queue and all. Cancelling first measured
  # nothing and, with 100,000 queued, held Slurm's side for hours (slurmctld 22.05 cancelled
  # about 10 jobs a second once its queue had come back from the restart).
fi
log "workload end"
