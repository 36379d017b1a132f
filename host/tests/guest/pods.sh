# Helpers for pods on a private containerd in the guest (busybox sh),
# sourced after /agent.sh; the test drives them step by step.
CRI_DIR=/run/kubenpu-cri
CRI_SOCKET=$CRI_DIR/containerd.sock
WORKLOAD_IMAGE=localhost/kubenpu/workload:test

# start_containerd: containerd (through kubenpu-pods, which removes every
# pod when stopped) and the workload image. A host-network pod copies the
# node's hosts and resolv.conf, which a bare VM lacks.
start_containerd() {
  [ -e /etc/hosts ] || echo "127.0.0.1 localhost" > /etc/hosts
  [ -e /etc/resolv.conf ] || : > /etc/resolv.conf
  # OCI_HOOK, if set, is every container's createRuntime hook.
  kubenpu-pods containerd --dir "$CRI_DIR" ${OCI_HOOK:+--oci-hook "$OCI_HOOK"} > /tmp/containerd.log 2>&1 &
  PODS_PID=$!
  tries=0
  until [ -S "$CRI_SOCKET" ]; do
    tries=$((tries + 1))
    [ "$tries" -lt 600 ] || { cat /tmp/containerd.log; fail "containerd did not start"; }
    sleep 0.1
  done
  # The workload's 32-bit build too, where the test gave the guest one.
  workload32=
  [ ! -e /usr/local/bin/kubenpu-workload32 ] || workload32="--binary /usr/local/bin/kubenpu-workload32"
  kubenpu-pods image --dir "$CRI_DIR" --name "$WORKLOAD_IMAGE" \
    --binary /usr/local/bin/kubenpu-workload $workload32 || fail "cannot import the workload image"
}

# wait_file PATH [SECONDS]: until PATH exists and is not empty.
wait_file() {
  tries=0
  until [ -s "$1" ]; do
    [ ! -e /shared/abort ] || fail "the test gave up"
    tries=$((tries + 1))
    [ "$tries" -lt "$((${2:-120} * 10))" ] || fail "no $1 after ${2:-120} s"
    sleep 0.1
  done
}

# step NAME: tells the test NAME is reached and waits until it has checked.
step() {
  echo "$(date +%s) $1" > "/shared/$1"
  wait_file "/shared/$1.done" 300
}

# traced NAME CLIENT...: the --container argument of container NAME,
# which runs CLIENT, a program of the Mesa root at /mesa (kubenpu-vm
# --gpu-3d; the pod mounts /mesa, and /shared at /out), in that root and
# under strace: its record of the client's ioctls goes to
# /shared/NAME.trace, its output to /out/NAME.log, its status to
# /out/NAME.rc. The container first appends "NAME CGROUP-ID" to
# /out/cgroups (its cgroup namespace's root is its own cgroup), and
# sleeps after. The client's stdin never reads: kmscube stops at input.
traced() {
  name=$1
  shift
  echo "$name=echo $name \$(busybox stat -c %i /sys/fs/cgroup) >> /out/cgroups \
&& busybox mkfifo /mesa/tmp/$name.in && exec 3<> /mesa/tmp/$name.in \
&& busybox chroot /mesa strace -f -yy -X raw -e trace=ioctl -o /shared/$name.trace $* <&3 > /out/$name.log 2>&1; \
echo \$? > /out/$name.rc; exec sleep 1000000"
}
