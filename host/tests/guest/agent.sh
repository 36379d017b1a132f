# Helpers for the datapath tests' guest commands (busybox sh), sourced by
# them after /drm.sh. Every failure exits non-zero with the agent's log.
set -e
AGENT_LOG=/tmp/agent.log
: > "$AGENT_LOG"

fail() {
  echo "FAIL: $*"
  echo "--- agent log"
  cat "$AGENT_LOG"
  exit 1
}

# wait_log PATTERN [COUNT [SECONDS]]: until the agent's log has COUNT
# lines matching, for at most SECONDS (default 90).
wait_log() {
  tries=0
  while [ "$(grep -c "$1" "$AGENT_LOG")" -lt "${2:-1}" ]; do
    kill -0 "$AGENT_PID" 2>/dev/null || fail "the agent exited while waiting for '$1'"
    tries=$((tries + 1))
    [ "$tries" -lt "$((${3:-90} * 10))" ] || fail "no '$1' in the agent's log after ${3:-90} s"
    sleep 0.1
  done
}

# start_agent ARGS...: starts the agent and waits until it is ready.
start_agent() {
  ready=$(grep -c "ready:" "$AGENT_LOG" || true)
  # AGENT_WRAPPER, if set, runs the agent (e.g. with fewer capabilities).
  $AGENT_WRAPPER kubenpu-agent "$@" >> "$AGENT_LOG" 2>&1 &
  AGENT_PID=$!
  wait_log "ready:" $((ready + 1))
}

# stop_agent: SIGTERM, and the agent must exit 0.
stop_agent() {
  kill -TERM "$AGENT_PID"
  wait "$AGENT_PID" || fail "the agent exited with $? on SIGTERM"
}

# wait_metrics MESSAGE PATTERN...: until the agent's /metrics, saved at
# /shared/metrics, matches every PATTERN (grep), for at most 30 s; else
# fails with MESSAGE.
wait_metrics() {
  message=$1
  shift
  tries=0
  while :; do
    if busybox wget -q -O /shared/metrics http://127.0.0.1:8080/metrics; then
      missing=
      for pattern in "$@"; do grep -q "$pattern" /shared/metrics || missing=1; done
      [ -n "$missing" ] || return 0
    fi
    tries=$((tries + 1))
    [ "$tries" -lt 300 ] || fail "$message"
    sleep 0.1
  done
}

# in_cgroup NAME COMMAND...: runs COMMAND in the child cgroup NAME.
in_cgroup() {
  mkdir -p "/sys/fs/cgroup/$1"
  echo "$1 $(stat -c %i "/sys/fs/cgroup/$1")" >> /shared/cgroups
  cgroup=$1
  shift
  sh -c 'echo $$ > "/sys/fs/cgroup/$0/cgroup.procs" && exec "$@"' "$cgroup" "$@"
}

# issue CGROUP PLAN...: runs the workload in CGROUP ("-" for the root
# cgroup) and appends what it issued to /shared/issued.
issue() {
  cgroup=$1
  shift
  if [ "$cgroup" = - ]; then
    echo "- 1" >> /shared/cgroups
    kubenpu-workload "$@" | sed "s/^/- /" >> /shared/issued
  else
    in_cgroup "$cgroup" kubenpu-workload "$@" | sed "s/^/$cgroup /" >> /shared/issued
  fi
}

# field NAME JSON: field NAME (a number or a string) of a workload's line.
field() {
  echo "$2" | sed "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/"
}

# snapshot NAME: the counters, devices and vendor tables as the test reads them.
snapshot() {
  kubenpuctl counts --json > "/shared/$1.counts.json"
  kubenpuctl devices --json > /shared/devices.json
  kubenpuctl plugins --json --plugins-dir "${PLUGINS_DIR:-/nonexistent}" > "/shared/$1.plugins.json"
}

VIRTIO_CARD=$(drm_node virtio_gpu card)
VIRTIO_RENDER=$(drm_node virtio_gpu renderD)
VGEM_CARD=$(drm_node vgem card)
VGEM_RENDER=$(drm_node vgem renderD)
