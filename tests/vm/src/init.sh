#!/bin/busybox sh
# The guest's init, written by kubenpu-vm: sets up the kernel interfaces the
# tests need, loads the modules, runs the command, reports its exit status on
# the console and powers off. @NONCE@ makes the status line unforgeable by
# the command's own output.
/bin/busybox --install -s /bin
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
fail() { echo "@NONCE@ setup-failed: $*"; poweroff -f; }
mkdir -p /proc /sys /dev /tmp /run /root /shared
echo "@NONCE@ init"
mount -t proc proc /proc || fail "mount proc"
# A guest still running shortly before the host stops it, in its set-up
# or in the command: each process's threads, and kernel threads in
# uninterruptible sleep, with their state and kernel stack, so that a
# hang says where it waits.
(
  sleep @DUMP_AFTER@
  echo "@NONCE@ hung: still running after @DUMP_AFTER@ s; its tasks:"
  for task in /proc/[0-9]*/task/[0-9]*; do
    state=$(grep '^State:' "$task/status" 2>/dev/null) || continue
    readlink "${task%/task/*}/exe" > /dev/null || [ "${state#*D (}" != "$state" ] || continue
    echo "$task $(cat "$task/comm") $state wchan=$(cat "$task/wchan")"
    sed 's/^/    /' "$task/stack"
  done
) &
DUMP=$!
mount -t sysfs sysfs /sys || fail "mount sysfs"
mount -t devtmpfs devtmpfs /dev || fail "mount devtmpfs"
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "mount cgroup2"
mount -t bpf bpf /sys/fs/bpf || fail "mount bpffs"
echo "@NONCE@ setup: cgroup controllers"
# Under TCG, a CPU inside code that another CPU patches as it turns a static
# key on or off has crashed on the patch's int3 (6.12: the page and slab
# allocators' cpuset and memory cgroup keys, flipped as runc made and removed
# a pod's cgroups). A cgroup kept for the whole boot with every controller
# turns those keys on here, while nothing else runs, and keeps them on as the
# tests' cgroups come and go.
for controller in $(cat /sys/fs/cgroup/cgroup.controllers); do
  echo "+$controller" > /sys/fs/cgroup/cgroup.subtree_control || fail "enable $controller"
done
mkdir /sys/fs/cgroup/kubenpu-vm || fail "a cgroup with every controller"
# A node has securityfs mounted (systemd does it): it says which LSMs run.
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
while read -r module; do
  echo "@NONCE@ setup: insmod $module"
  insmod "/lib/modules/$module" || fail "insmod $module"
done < /lib/modules/load-order
ip link set lo up
# qemu's user network, when the VM has a card.
if [ -e /sys/class/net/eth0 ]; then
  ip addr add 10.0.2.15/24 dev eth0 && ip link set eth0 up && ip route add default via 10.0.2.2 || fail "network"
fi
echo "@NONCE@ setup: the shared directory"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 shared /shared || fail "mount the shared directory"
# Read-only shares, "TAG PATH" a line (the Mesa root at /mesa). One that is
# a root directory gets the guest's /dev, /proc, /sys and /shared, and a
# /tmp and /run of its own, for programs run in it by chroot.
if [ -e /etc/kubenpu-vm/shares ]; then
  while read -r tag path; do
    echo "@NONCE@ setup: the share $path"
    mkdir -p "$path"
    mount -t 9p -o ro,trans=virtio,version=9p2000.L,msize=262144,cache=loose "$tag" "$path" || fail "mount $path"
    [ -d "$path/usr" ] || continue
    for dir in dev proc sys shared; do
      mount --bind "/$dir" "$path/$dir" || fail "bind /$dir into $path"
    done
    mount -t tmpfs tmpfs "$path/tmp" && mount -t tmpfs tmpfs "$path/run" || fail "a /tmp and /run in $path"
  done < /etc/kubenpu-vm/shares
fi
cd /shared
echo "@NONCE@ begin"
/bin/sh /etc/kubenpu-vm/command.sh
status=$?
kill $DUMP 2>/dev/null
echo "@NONCE@ exit $status"
cd /
sync
umount /shared
poweroff -f
