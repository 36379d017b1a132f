# Measuring helpers for the benchmarks' guest scripts (busybox sh), sourced
# by them after /agent.sh, with kernel.bpf_stats_enabled on: what a call
# costs, and comparison programs held attached while it is measured.

# stats: calls (the most runs of any program attached: each runs once per
# call) and the run time of all of them, entry and exit together; not the
# agent's map iterators, which run on its scrapes and sweeps.
stats() { prog_stats | grep -v '^kubenpu_dump' | awk '{if ($2 > c) c = $2; t += $3} END {print c + 0, t + 0}'; }

# run_per_call BEFORE AFTER: the programs' run time per call between two
# `stats` lines; 0 where no program ran.
run_per_call() {
  set -- $1 $2
  if [ "$3" -gt "$1" ]; then echo $((($4 - $2) / ($3 - $1))); else echo 0; fi
}

# wall_per_call PLAN [WRAPPER...]: the workload's own time per call over
# PLAN, run under WRAPPER (such as `taskset -c 1`).
wall_per_call() {
  plan=$1
  shift
  "$@" kubenpu-workload "$plan" | sed 's/.*"calls":\([0-9]*\),"elapsed_ns":\([0-9]*\).*/\2 \1/' \
    | { read -r t n; echo $((t / n)); }
}

# measure_cases TAG...: every case of $CASES (NAME:PLAN, PLAN without its
# count) under what is attached now: 1,000 warm-up calls, then N timed;
# one line a case: TAG... NAME RUN_NS WALL_NS.
measure_cases() {
  for case in $CASES; do
    plan=${case#*:}
    kubenpu-workload "$plan:1000" > /dev/null
    before=$(stats)
    wall=$(wall_per_call "$plan:$N")
    run=$(run_per_call "$before" "$(stats)")
    echo "$* ${case%%:*} $run $wall"
  done
}

# hold VARIANT HOOK: attaches a comparison program until release.
hold() {
  # The last variant's log goes first: the new one truncates it only once
  # it runs, and its 'attached' would be taken for this one's.
  rm -f /tmp/hold-in /tmp/hold-err
  mkfifo /tmp/hold-in
  hook_variant "$1" "$2" < /tmp/hold-in > /tmp/hold-out 2> /tmp/hold-err &
  HOLD=$!
  exec 3> /tmp/hold-in
  # Attached, not just loaded: the entry side links last.
  for i in $(seq 600); do grep -q attached /tmp/hold-err && return; sleep 0.1; done
  cat /tmp/hold-err
  fail "hook_variant $1 $2 did not attach"
}
release() {
  exec 3>&-
  wait "$HOLD" || fail "hook_variant failed: $(cat /tmp/hold-err)"
  for i in $(seq 50); do [ -z "$(prog_stats)" ] && return; sleep 0.1; done
}
# detach: drops the agent's pinned counting links and programs (on
# drm_ioctl and on the character devices' entries); its maps and the
# policy's checks stay.
detach() {
  rm -f /sys/fs/bpf/kubenpu/link /sys/fs/bpf/kubenpu/program /sys/fs/bpf/kubenpu/exit-link \
    /sys/fs/bpf/kubenpu/exit-program
  # The links on the claimed character devices' entries.
  rm -rf /sys/fs/bpf/kubenpu/entries
  for i in $(seq 50); do [ -z "$(prog_stats | grep -v '^kubenpu_policy')" ] && break; sleep 0.1; done
}
