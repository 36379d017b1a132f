# /metrics latency while the agent is busy (busybox sh, in the kubenpu-vm
# guest; run by scripts/bench): 1,000 cgroups are created, counted in
# (3 calls each) and removed one after another, and a vendor plugin is
# added a second in, while a scraper reads /metrics every 100 ms.
# One line a scrape:
#   scrape ROUND MICROSECONDS
. /drm.sh
. /agent.sh
ROUNDS=${ROUNDS:-3}
CGROUPS=${CGROUPS:-1000}
mkdir -p /plugins
churn() {
  i=0
  while [ $i -lt "$1" ]; do
    d=/sys/fs/cgroup/churn$i
    mkdir $d
    sh -c 'echo $$ > "$0/cgroup.procs" && exec kubenpu-workload "$1:0x41:3" > /dev/null' $d "$VGEM_CARD"
    rmdir $d
    i=$((i + 1))
  done
}
for round in $(seq "$ROUNDS"); do
  kubenpu-agent --cleanup > /dev/null 2>&1
  start_agent --plugins-dir /plugins
  churn "$CGROUPS" &
  CHURN=$!
  (sleep 1 && cp /vgem.wasm /plugins/.vgem.partial && mv /plugins/.vgem.partial /plugins/vgem.wasm) &
  RELOAD=$!
  scrape_latency 127.0.0.1:8080 "$round" "$CHURN" 100
  # Not a bare `wait`: the agent is a background job too.
  wait "$CHURN" "$RELOAD"
  rm -f /plugins/vgem.wasm
  stop_agent
done
kubenpu-agent --cleanup > /dev/null 2>&1
