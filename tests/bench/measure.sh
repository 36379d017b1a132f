# Measuring helpers for the benchmarks' guest scripts (busybox sh), sourced
# by them after /agent.sh, with kernel.bpf_stats_enabled on.

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
