# Exactness of an LSM counting entry (busybox sh, in the kubenpu-vm guest
# with 2 vCPUs; run by scripts/bench): the benchmarks' LSM counting
# program on file_ioctl (hook_variant count lsm) counts what more busy
# threads than CPUs issue, and what a thread issues while SIGALRMs
# interrupt its waits. Cases, each ROUNDS times:
#   threads: 8 threads share one fd and issue 2,500 counted calls each;
#   restarts: 20 syncobj waits of 20 ms, a SIGALRM (SA_RESTART) every
#             3 ms: the kernel restarts each wait several times, unseen
#             by the workload, and each restart is a new ioctl syscall,
#             which file_ioctl sees again (virtio-gpu has syncobjs from
#             6.12 on: not measured on older kernels).
# One line a run: lsm-threads ROUND CASE COUNTED ISSUED SIGNALS
. /drm.sh
. /agent.sh
. /measure.sh
ROUNDS=${ROUNDS:-3}

grep -qw bpf /sys/kernel/security/lsm || fail "BPF LSM is not active: $(cat /sys/kernel/security/lsm)"
# The agent fills DEVICES and IOCTLS, then is detached.
kubenpu-agent --cleanup > /dev/null 2>&1
start_agent
stop_agent
detach
# counted CASE NR PLAN...: runs the workload under the LSM counting
# program; what it counted of ioctl number NR.
counted() {
  case=$1 nr=$2
  shift 2
  hold count lsm
  issued=$(kubenpu-workload "$@" | sed 's/.*"calls":\([0-9]*\).*"signals":\([0-9]*\).*/\1 \2/')
  release
  # Only the restarts may find no syncobjs (6.1's virtio-gpu).
  if [ -z "$issued" ]; then
    [ "$case" = restarts ] || fail "the workload failed in the $case case"
    return 0
  fi
  counted=$(awk -v nr="$nr" '$1 == "counted:" && $2 == nr {print $3}' /tmp/hold-out)
  echo "lsm-threads $round $case ${counted:-0} $issued"
}
for round in $(seq "$ROUNDS"); do
  counted threads 0x48 --threads 8 "$VIRTIO_RENDER:0x48:2500"
  # DRM_IOCTL_SYNCOBJ_WAIT
  counted restarts 0xc3 --signals 3 "syncobj-wait:$VIRTIO_RENDER:20:20" 2> /dev/null
done
kubenpu-agent --cleanup > /dev/null 2>&1
