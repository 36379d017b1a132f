# The NUMA check's cost (busybox sh, in the kubenpu-vm guest booted with two
# NUMA nodes of one vCPU each, virtio-gpu behind the second node's bridge and
# a second virtio-gpu on the main bus, which has no node; run by
# scripts/bench). The agent (`--hook auto`) counts virtio-gpu's WAIT (0x48)
# on both devices; the workload, pinned with taskset, calls
#   unplaced: the device without a node, from CPU 1: the check stops at
#             the device's node;
#   local:    the device on node 1, from CPU 1: the helper and the compare;
#   remote:   the same device from CPU 0 (node 0): and one atomic add more.
# Each: 1,000 warm-up calls, then N timed. One line a measurement, then
# what the agent counted as remote against what was called from CPU 0:
#   numa ROUND CASE RUN_NS WALL_NS
#   numa-remote COUNTED ISSUED
. /drm.sh
. /agent.sh
. /measure.sh
N=${N:-200000}
ROUNDS=${ROUNDS:-3}
echo 1 > /proc/sys/kernel/bpf_stats_enabled
# The two virtio-gpu render nodes, by their PCI device's NUMA node.
for entry in /sys/class/drm/renderD*; do
  [ "$(drm_driver "$entry")" = virtio_gpu ] || continue
  # The PCI device: the DRM device's parent, or the virtio device's.
  pci=$(readlink -f "$entry/device")
  [ -e "$pci/numa_node" ] || pci=${pci%/*}
  case $(cat "$pci/numa_node") in
    -1) UNPLACED=/dev/dri/$(basename "$entry") ;;
    1) PLACED=/dev/dri/$(basename "$entry") ;;
  esac
done
[ -n "$UNPLACED" ] && [ -n "$PLACED" ] || fail "want a virtio-gpu on no node and one on node 1"
CASES="unplaced:$UNPLACED:0 remote:$PLACED:0"
echo 0 > /sys/devices/system/cpu/cpu1/online

kubenpu-agent --cleanup > /dev/null 2>&1
start_agent
for round in $(seq "$ROUNDS"); do
  for case in $CASES; do
    name=${case%%:*} rest=${case#*:}
    node=${rest%:*} cpu=${rest##*:}
    taskset -c "$cpu" kubenpu-workload "$node:0x48:1000" > /dev/null
    before=$(stats)
    wall=$(wall_per_call "$node:0x48:$N" taskset -c "$cpu")
    echo "numa $round $name $(run_per_call "$before" "$(stats)") $wall"
  done
done
device=$(field device "$(kubenpu-workload "$PLACED:0x48:1")")
remote=$(kubenpuctl counts | awk -v dev="$device" '$2 == dev && $3 == "0x48" {s += $8} END {print s + 0}')
echo "numa-remote $remote $((ROUNDS * (N + 1000) + 1))"
stop_agent
kubenpu-agent --cleanup > /dev/null 2>&1
