# The placement scheduler's cost (busybox sh, in the kubenpu-vm guest with
# two NUMA nodes; run by scripts/bench on a kernel with sched_ext). Each
# wake-up goes through the scheduler; `wakeups` makes as many as it can.
# Variants:
#   fair:     no sched_ext scheduler, the kernel's fair class;
#   defaults: a sched_ext scheduler without callbacks (sched_ext's
#             idle-CPU choice and one global queue): any scheduler's floor;
#   kubenpu:  the agent's, `--placement sched-ext`.
# Cases:
#   idle:    one pair of threads, CPUs to spare: wake-ups find an idle CPU
#            (select_cpu);
#   crowded: four pairs per vCPU: wake-ups queue (enqueue, dispatch,
#            preemption).
# One line a measurement:
#   wakeup ROUND VARIANT CASE WAKEUPS WALL_NS_PER_WAKEUP
#   callback ROUND CASE PROGRAM RUNS RUN_NS_PER_RUN   (kubenpu: each of
#            its callbacks that ran, from prog_stats)
. /drm.sh
. /agent.sh
echo 1 > /proc/sys/kernel/bpf_stats_enabled
PASSES=${PASSES:-10000}
ROUNDS=${ROUNDS:-3}
CPUS=$(grep -c ^processor /proc/cpuinfo)
CASES="idle:1 crowded:$((CPUS * 4))"

[ -e /sys/kernel/sched_ext/state ] || fail "this kernel has no sched_ext"
state() { cat /sys/kernel/sched_ext/state; }

# measure ROUND VARIANT [--defaults]: every case under VARIANT.
measure() {
  round=$1 variant=$2 option=${3:-}
  for case in $CASES; do
    name=${case%%:*} pairs=${case#*:}
    prog_stats > /tmp/before
    out=$(wakeups "$pairs" "$PASSES" $option) || fail "wakeups $pairs $PASSES $option failed"
    echo "wakeup $round $variant $name $out"
    [ "$variant" = kubenpu ] || continue
    prog_stats > /tmp/after
    # The counting program does not run here: what ran is the scheduler.
    awk -v tag="callback $round $name" '
      FILENAME == "/tmp/before" { runs[$1] = $2; ns[$1] = $3; next }
      $1 !~ /^kubenpu_dump/ && $2 + 0 > runs[$1] + 0 { printf "%s %s %d %d\n", tag, $1, $2 - runs[$1], ($3 - ns[$1]) / ($2 - runs[$1]) }
    ' /tmp/before /tmp/after
  done
}

kubenpu-agent --cleanup > /dev/null 2>&1
for round in $(seq "$ROUNDS"); do
  [ "$(state)" = disabled ] || fail "sched_ext is $(state) before round $round"
  measure "$round" fair
  measure "$round" defaults --defaults
  for i in $(seq 50); do [ "$(state)" = disabled ] && break; sleep 0.1; done
  start_agent --placement sched-ext --no-allocation --listen 127.0.0.1:8080
  [ "$(state)" = enabled ] || fail "the agent's scheduler is not in force: $(state)"
  measure "$round" kubenpu
  # A scheduler the kernel stopped mid-run would leave the callbacks'
  # counts short: say so rather than report them.
  [ "$(state)" = enabled ] || fail "the agent's scheduler stopped during round $round: $(grep 'kernel stopped' "$AGENT_LOG")"
  stop_agent
  for i in $(seq 50); do [ "$(state)" = disabled ] && break; sleep 0.1; done
done
echo "placement: $ROUNDS rounds done"
