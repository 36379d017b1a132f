# The policy's check's cost per ioctl (busybox sh, in the kubenpu-vm guest;
# run by scripts/bench). The check is a BPF LSM program on file_ioctl, so
# it runs for every ioctl on the node, not only accelerators'. Variants:
# no program; empty (an LSM program on file_ioctl that returns at once:
# the floor); policy (the agent's checks, --policy audit, with the
# counting hook detached so that only the checks run). Cases:
#   unrelated: an ioctl on /dev/null, no accelerator: the check reads the
#              file's device and finds its major in no claimed node's;
#   drm:       virtio-gpu's WAIT on its render node, a claimed device,
#              from a process outside pods: the check finds the device,
#              then no rule for the caller's cgroup.
# Each: 1,000 warm-up calls, then N timed calls, with the programs' run
# time per call (prog_stats) and the workload's wall time per call. One
# line a measurement:
#   policy ROUND VARIANT CASE RUN_NS WALL_NS
. /drm.sh
. /agent.sh
. /measure.sh
echo 1 > /proc/sys/kernel/bpf_stats_enabled
N=${N:-200000}
ROUNDS=${ROUNDS:-3}
CASES="unrelated:/dev/null:0x48 drm:$VIRTIO_RENDER:0x48"

# measure ROUND VARIANT: every case under what is attached now.
measure() { measure_cases policy "$@"; }

grep -qw bpf /sys/kernel/security/lsm || fail "BPF LSM is not active: $(cat /sys/kernel/security/lsm)"
kubenpu-agent --cleanup > /dev/null 2>&1
for round in $(seq "$ROUNDS"); do
  measure "$round" none
  hold empty lsm
  measure "$round" empty
  release
  # The agent attaches its checks and fills DEVICES, then stops; its
  # checks stay pinned, its counting hook goes.
  start_agent --policy audit
  grep -q "policy audit: BPF LSM checks" "$AGENT_LOG" || fail "the checks did not attach"
  stop_agent
  detach
  measure "$round" policy
  kubenpu-agent --cleanup > /dev/null 2>&1
done
