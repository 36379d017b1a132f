# The agent's footprint and its loss at the highest rate one vCPU reaches
# (busybox sh, in the kubenpu-vm guest with one vCPU; run by scripts/bench).
# Lines:
#   ready ROUND MS             start to "ready:" (all built-in plugins loaded)
#   rss ROUND KIB              resident memory, idle, 5 s after ready
#   cpu-idle ROUND MS_PER_S    CPU time per second over 10 s idle
#   cpu-busy ROUND MS_PER_S    CPU time per second while the workload runs
#   rate ROUND ISSUED NS COUNTED LOST
# While the workload runs, /metrics is scraped every second, as Prometheus
# would: reading the counters must cost no call.
. /drm.sh
. /agent.sh
ROUNDS=${ROUNDS:-3}
CALLS=${CALLS:-1000000}
HZ=100
uptime_ms() { awk '{printf "%d\n", $1 * 1000}' /proc/uptime; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
counted() { # the root cgroup's calls of (device, nr) as kubenpuctl counts them
  kubenpuctl counts | awk -v dev="$1" -v nr="$2" '$2 == dev && $3 == nr {s += $4} END {print s + 0}'
}
lost() { kubenpuctl counts | awk '/^lost/ {s += $3} END {print s + 0}'; }

for round in $(seq "$ROUNDS"); do
  kubenpu-agent --cleanup > /dev/null 2>&1
  t0=$(uptime_ms)
  start_agent
  echo "ready $round $(($(uptime_ms) - t0))"
  sleep 5
  echo "rss $round $(awk '/^VmRSS/ {print $2}' "/proc/$AGENT_PID/status")"
  c0=$(cpu_ticks "$AGENT_PID")
  sleep 10
  echo "cpu-idle $round $((($(cpu_ticks "$AGENT_PID") - c0) * 1000 / HZ / 10))"
  c0=$(cpu_ticks "$AGENT_PID")
  t0=$(uptime_ms)
  (while :; do busybox wget -q -O /dev/null http://127.0.0.1:8080/metrics; sleep 1; done) &
  scraper=$!
  out=$(kubenpu-workload "$VIRTIO_RENDER:0x48:$CALLS")
  busy_ms=$(($(uptime_ms) - t0))
  kill $scraper
  echo "cpu-busy $round $((($(cpu_ticks "$AGENT_PID") - c0) * 1000 * 1000 / HZ / busy_ms))"
  echo "rate $round $CALLS $(field elapsed_ns "$out") $(counted "$(field device "$out")" 0x48) $(lost)"
  stop_agent
done
kubenpu-agent --cleanup > /dev/null 2>&1
