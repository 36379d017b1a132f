# The write side when every CPU counts into one key (busybox sh, in the
# kubenpu-vm guest with several vCPUs; run by scripts/bench): the agent's
# programs (`--hook auto`), and THREADS workload threads, one pinned to
# each vCPU in turn, all issuing counted calls on one fd in one cgroup, so
# every call updates the same counter. Each round starts the agent anew,
# then: 1,000 warm-up calls per thread, CALLS per thread timed. One line a
# round:
#   contention ROUND THREADS RUN_NS WALL_NS COUNTED ISSUED
# RUN_NS: the programs' run time per call (entry and exit together, from
# kernel.bpf_stats_enabled); WALL_NS: the workload's wall time over all its
# calls, per call; COUNTED: what kubenpuctl counts of the device and nr.
. /drm.sh
. /agent.sh
. /measure.sh
ROUNDS=${ROUNDS:-3}
THREADS=${THREADS:-$(nproc)}
CALLS=${CALLS:-20000}
echo 1 > /proc/sys/kernel/bpf_stats_enabled
counted() {
  kubenpuctl counts | awk -v dev="$1" '$2 == dev && $3 == "0x48" {s += $4} END {print s + 0}'
}
kubenpu-agent --cleanup > /dev/null 2>&1
for round in $(seq "$ROUNDS"); do
  start_agent
  kubenpu-workload --threads "$THREADS" --spread "$VIRTIO_RENDER:0x48:1000" > /dev/null
  before=$(stats)
  out=$(kubenpu-workload --threads "$THREADS" --spread "$VIRTIO_RENDER:0x48:$CALLS")
  run=$(run_per_call "$before" "$(stats)")
  wall=$(($(field elapsed_ns "$out") / $(field calls "$out")))
  echo "contention $round $THREADS $run $wall $(counted "$(field device "$out")") $((round * THREADS * (CALLS + 1000)))"
  stop_agent
done
kubenpu-agent --cleanup > /dev/null 2>&1
