# Cost of a program on drm_ioctl, per hook (busybox sh, in the kubenpu-vm
# guest; run by scripts/bench): a kprobe session where the kernel has them,
# kprobe.multi, kprobe and fentry, and BPF LSM's file_ioctl where BPF LSM
# is active, or those HOOKS lists. Rounds alternate
# every variant; each case:
# 1,000 warm-up calls, then N timed calls, with the programs' run time per
# call (entry and exit programs together) from kernel.bpf_stats_enabled
# (prog_stats) and the workload's wall time per call. Variants: no
# program; the empty pair (the floor: an entry and an exit program that
# return at once); kubenpu (the agent's counting and measuring programs);
# per-event (one ring-buffer event per counted call, on entry only, read by
# a waiting reader); table-hash and table-array (the filter's lookups alone,
# with the ioctl table as the agent's hashes or as an array; a session has
# the empty pair and kubenpu only: the others' entry programs would run
# again at every return). On the LSM hook, which the agent does not count
# on: the empty program, and count (the agent's filter and its entry's
# count, as an LSM program: calls only, it runs before the call; what it
# counted is checked against the counted calls issued). Cases: unrelated
# (an ioctl on /dev/null, no DRM device), filtered (a DRM
# device no vendor claims), untracked (a claimed device, an ioctl its
# vendor does not count), counted. One line a measurement:
#   cost ROUND HOOK VARIANT CASE RUN_NS WALL_NS
# and one per LSM counting run: lsm-counted ROUND lsm COUNTED ISSUED
. /drm.sh
. /agent.sh
. /measure.sh
echo 1 > /proc/sys/kernel/bpf_stats_enabled
BOCHS=$(drm_node bochs-drm card)
N=${N:-200000}
ROUNDS=${ROUNDS:-3}
CASES="unrelated:/dev/null:0x48 filtered:$BOCHS:0xb2 untracked:$VIRTIO_RENDER:0x43 counted:$VIRTIO_RENDER:0x48"

# measure ROUND HOOK VARIANT: every case under what is attached now.
measure() { measure_cases cost "$@"; }
# The agent fills DEVICES and IOCTLS, then is detached: the maps stay
# pinned for the per-event variant, nothing else is attached.
kubenpu-agent --cleanup > /dev/null 2>&1
start_agent
stop_agent
detach

# Only the hooks this kernel has: sessions from 6.10, kprobe.multi with
# fprobe (Debian's 6.1 has neither), the LSM hook where BPF LSM is active.
SESSION= MULTI= LSM=
grep -qw bpf_session_is_return /proc/kallsyms && SESSION=kprobe-session
grep -qw register_fprobe /proc/kallsyms && MULTI=kprobe-multi
grep -qw bpf /sys/kernel/security/lsm && LSM=lsm
HOOKS=${HOOKS:-$SESSION $MULTI kprobe fentry $LSM}
for round in $(seq "$ROUNDS"); do
  for case in $CASES; do
    echo "cost $round none none ${case%%:*} 0 $(wall_per_call "${case#*:}:$N")"
  done
  for hook in $HOOKS; do
    hold empty $hook
    measure "$round" $hook empty
    release
    if [ $hook = lsm ]; then
      hold count lsm
      measure "$round" lsm count
      release
      # Only the counted case's calls are kept: its warm-up and timed ones.
      echo "lsm-counted $round lsm $(awk '$1 == "counted:" && $2 == "0x48" {print $3}' /tmp/hold-out) $((N + 1000))"
      continue
    fi
    start_agent --hook $hook
    measure "$round" $hook kubenpu
    stop_agent
    detach
    [ $hook = kprobe-session ] && continue
    hold per-event $hook
    measure "$round" $hook per-event
    release
    # Every counted call became an event the reader got.
    echo "events $round $hook $(sed 's/events: //' /tmp/hold-out) $((N + 1000))"
    # The ioctl table's shape: the same lookups, as hashes and as an array.
    for table in table-hash table-array; do
      hold $table $hook
      measure "$round" $hook $table
      release
    done
  done
done
kubenpu-agent --cleanup > /dev/null 2>&1
