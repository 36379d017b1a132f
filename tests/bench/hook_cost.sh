# Cost of the hook on drm_ioctl, per hook, next to an empty program (busybox
# sh, in the kubenpu-vm guest; run by scripts/bench-hooks). Three rounds;
# each case: 1,000 warm-up calls, then 200,000 timed calls, with
# kernel.bpf_stats_enabled run time per program run from prog_stats, and
# wall time per call from the workload.
. /drm.sh
. /agent.sh
echo 1 > /proc/sys/kernel/bpf_stats_enabled
BOCHS=$(drm_node bochs-drm card)
N=200000
per_call() { kubenpu-workload "$1" | sed 's/.*"calls":\([0-9]*\),"elapsed_ns":\([0-9]*\).*/\2 \1/' | { read t n; echo $((t / n)); }; }
stats() { prog_stats | awk '{print $2, $3}'; }
measure() { # label plan-prefix
  kubenpu-workload $2:1000 >/dev/null
  read c0 t0 <<EOS
$(stats)
EOS
  wall=$(per_call $2:$N)
  read c1 t1 <<EOS
$(stats)
EOS
  echo "$1: $(( (t1 - t0) / (c1 - c0) )) ns per run ($((c1 - c0)) runs), wall $wall ns per call"
}
CASES="filtered:$BOCHS:0xb2 untracked:$VIRTIO_RENDER:0x43 counted:$VIRTIO_RENDER:0x48"
for round in 1 2 3; do
echo "round $round"
echo "no program: filtered $(per_call $BOCHS:0xb2:$N) ns, untracked $(per_call $VIRTIO_RENDER:0x43:$N) ns, counted $(per_call $VIRTIO_RENDER:0x48:$N) ns per call"
for hook in kprobe fentry; do
  rm -f /tmp/floor-in; mkfifo /tmp/floor-in
  hook_floor $hook < /tmp/floor-in 2>/dev/null &
  FLOOR=$!
  exec 3>/tmp/floor-in
  for i in $(seq 100); do [ -n "$(prog_stats)" ] && break; sleep 0.1; done
  for case in $CASES; do measure "$hook empty ${case%%:*}" "${case#*:}"; done
  exec 3>&-
  wait $FLOOR || true
  for i in $(seq 50); do [ -z "$(prog_stats)" ] && break; sleep 0.1; done
  kubenpu-agent --cleanup >/dev/null 2>&1
  start_agent --hook $hook
  for case in $CASES; do measure "$hook kubenpu ${case%%:*}" "${case#*:}"; done
  stop_agent
  kubenpu-agent --cleanup >/dev/null 2>&1
  for i in $(seq 50); do [ -z "$(prog_stats)" ] && break; sleep 0.1; done
done
done
