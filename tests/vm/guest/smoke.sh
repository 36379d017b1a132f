#!/bin/sh
# What the kernel hook needs from a guest, checked from inside it. Prints one
# line per finding ("ok: ..." or "FAIL: ...") and exits 1 if anything failed.
# Runs under busybox sh in the kubenpu-vm guest.
failed=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=1; }

echo "kernel: $(uname -r)"
echo "machine: $(uname -m)"

# The hooked function.
if awk '$3 == "drm_ioctl" { found = 1 } END { exit !found }' /proc/kallsyms; then
  ok "drm_ioctl is in /proc/kallsyms"
else
  fail "drm_ioctl is not in /proc/kallsyms"
fi

# BTF: the kernel's, and the drm module's where DRM is a module.
[ -f /sys/kernel/btf/vmlinux ] && ok "kernel BTF at /sys/kernel/btf/vmlinux" \
  || fail "no kernel BTF at /sys/kernel/btf/vmlinux"
if grep -q '^drm ' /proc/modules; then
  [ -f /sys/kernel/btf/drm ] && ok "drm is a module with BTF at /sys/kernel/btf/drm" \
    || fail "drm is a module without BTF at /sys/kernel/btf/drm"
else
  ok "drm is built into the kernel"
fi

. /drm.sh

# Every card and render node: its /dev/dri node has the major:minor sysfs reports.
for entry in /sys/class/drm/*; do
  node=$(basename "$entry")
  case "$node" in card[0-9]* | renderD[0-9]*) ;; *) continue ;; esac
  case "$node" in *-*) continue ;; esac # connectors such as card0-Virtual-1
  driver=$(drm_driver "$entry")
  sysfs=$(cat "$entry/dev")
  if [ -c "/dev/dri/$node" ]; then
    dev=$(stat -c '%t %T' "/dev/dri/$node" | { read -r major minor; printf '%d:%d' "0x$major" "0x$minor"; })
    [ "$dev" = "$sysfs" ] && ok "$driver /dev/dri/$node is $dev as sysfs says" \
      || fail "$driver /dev/dri/$node is $dev but sysfs says $sysfs"
  else
    fail "$driver: no character device /dev/dri/$node"
  fi
  echo "$driver" >> /tmp/drivers
done
for driver in virtio_gpu vgem; do
  grep -qx "$driver" /tmp/drivers 2>/dev/null && ok "found $driver nodes" \
    || fail "no $driver node under /dev/dri"
done

# cgroup2: a process moved into a child cgroup sees it.
mkdir -p /sys/fs/cgroup/kubenpu-smoke
seen=$(sh -c 'echo $$ > /sys/fs/cgroup/kubenpu-smoke/cgroup.procs && cat /proc/self/cgroup')
[ "$seen" = "0::/kubenpu-smoke" ] && ok "a process in cgroup /kubenpu-smoke sees $seen" \
  || fail "a process moved into /kubenpu-smoke sees '$seen'"

exit $failed
