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
