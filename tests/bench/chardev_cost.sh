# What counting on character devices outside DRM costs (busybox sh, in the
# kubenpu-vm guest; run by scripts/bench, on a kernel with the system DMA
# heap: 6.12 and later). The agent hooks dma_heap_ioctl and udmabuf_ioctl
# beside drm_ioctl; an ioctl of any other driver never reaches a program
# of it. Variants: no program; kubenpu (the agent's hook as `auto` picks
# it, linked to drm_ioctl and the claimed character devices' entries, the
# agent stopped so that only the programs run); classified (the same with
# /heap-classes.wasm in force, whose ALLOC counts only for a length of one
# page: each ALLOC's length is read from the caller's memory and looked
# up, and the zeroed one is then not counted). Cases:
#   unrelated:      an ioctl on /dev/null;
#   drm-filtered:   a DRM device no vendor claims (bochs);
#   heap-untracked: the DMA heap, a number its table does not list;
#   heap-counted:   the DMA heap's ALLOC with a zeroed argument (len 0:
#                   EINVAL), counted, timed and its size read.
# Each: 1,000 warm-up calls, then N timed calls, with the programs' run
# time per call (prog_stats) and the workload's wall time per call. One
# line a measurement:
#   chardev ROUND VARIANT CASE RUN_NS WALL_NS
. /drm.sh
. /agent.sh
. /measure.sh
echo 1 > /proc/sys/kernel/bpf_stats_enabled
HEAP=/dev/dma_heap/system
[ -c $HEAP ] || fail "no $HEAP in this kernel: run on bookworm-backports or sid"
BOCHS=$(drm_node bochs-drm card)
N=${N:-200000}
ROUNDS=${ROUNDS:-3}
CASES="unrelated:/dev/null:0x48 drm-filtered:$BOCHS:0xb2 heap-untracked:$HEAP:0x01 heap-counted:$HEAP:0x00"

kubenpu-agent --cleanup > /dev/null 2>&1
for round in $(seq "$ROUNDS"); do
  measure_cases chardev "$round" none
  # The agent links its hook to the entries, then stops: the links stay
  # pinned and counting.
  start_agent
  grep -q "linked to dma_heap_ioctl" "$AGENT_LOG" || fail "the heap's entry was not hooked"
  stop_agent
  measure_cases chardev "$round" kubenpu
  kubenpu-agent --cleanup > /dev/null 2>&1
  mkdir -p /plugins
  cp /heap-classes.wasm /plugins/
  start_agent --plugins-dir /plugins
  busybox wget -q -O - http://127.0.0.1:8080/metrics \
    | grep -q 'kubenpu_plugin_info{vendor="dma_heap",version="2.0.0-test"' \
    || fail "the classifying plugin is not in force"
  stop_agent
  measure_cases chardev "$round" classified
  rm /plugins/heap-classes.wasm
  kubenpu-agent --cleanup > /dev/null 2>&1
done
