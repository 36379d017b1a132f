//! Energy per pod, in the VM on the newest kernel, with real pods on a
//! real containerd sharing the virtio-gpu and a real allocation join.
//!
//! Nothing in qemu has a hwmon for a DRM device, and no qemu DRM driver
//! prints engine time in fdinfo, so two things are given to the agent
//! through the paths its design allows, and said here:
//! - **the sensor:** a tmpfs over `/sys/class/hwmon` holds one hwmon,
//!   `kubenpu_test`, whose `device` link is the virtio-gpu's PCI function
//!   and whose `energy1_input` the test sets; the `virtio-energy` test
//!   plugin (replacing the built-in virtio_gpu) names it;
//! - **the engine time:** `--proc-root` is a fixture of the two using
//!   pods' real pids, each with an fd on the card and an fdinfo with
//!   `drm-engine-render`, swapped whole at each step.
//!
//! Each step gives pod `a` three seconds of engine time for each of pod
//! `b`'s and the device 100 J; a third pod, `idle`, holds the device and
//! never uses it. The test waits for a scan between steps, so a step is
//! not read half-written; the shares asserted hold even if one were.

mod support;

use std::collections::BTreeMap;

use kubenpu_vm::Kernel;

/// The guest script: pods, kubelet, the fixture and its steps.
const SCRIPT: &str = r#". /drm.sh && . /agent.sh && . /pods.sh
echo energy > /proc/sys/kernel/hostname
FUNCTION=$(readlink -f /sys/class/drm/$(basename "$VIRTIO_CARD")/device)
basename "$FUNCTION" > /shared/address

# The sensor: a hwmon bound to the virtio-gpu, its counter in the
# fixture's current step.
mount -t tmpfs hwmon /sys/class/hwmon
mkdir /sys/class/hwmon/hwmon0
echo kubenpu_test > /sys/class/hwmon/hwmon0/name
ln -s "$FUNCTION" /sys/class/hwmon/hwmon0/device
ln -s /fixture/proc/energy1_input /sys/class/hwmon/hwmon0/energy1_input

# snapshot STEP A_SECONDS B_SECONDS MICROJOULES: the fixture's /proc at
# STEP, made current in one rename.
snapshot() {
  dir=/fixture/s$1
  mkdir -p $dir
  cp /proc/stat $dir/stat
  echo "$4" > $dir/energy1_input
  for pair in "$PID_A:11:$2" "$PID_B:12:$3"; do
    pid=${pair%%:*} rest=${pair#*:}
    [ -n "$pid" ] || continue
    mkdir -p $dir/$pid/fd $dir/$pid/fdinfo
    ln -sf "$VIRTIO_CARD" $dir/$pid/fd/3
    printf 'pos:\t0\nflags:\t02100002\nmnt_id:\t20\nino:\t5\ndrm-driver:\tvirtio_gpu\ndrm-client-id:\t%s\ndrm-engine-render:\t%s000000000 ns\n' \
      "${rest%%:*}" "${rest#*:}" > $dir/$pid/fdinfo/3
  done
  ln -s s$1 /fixture/proc.new
  mv -T /fixture/proc.new /fixture/proc
}
PID_A= PID_B=
mkdir -p /fixture
snapshot 0 0 0 1000000

mkdir -p /plugins /etc/cdi /var/lib/kubelet/pod-resources
cp /virtio-energy.wasm /plugins/virtio_gpu.wasm
cat > /etc/cdi/energy.json <<CDI
{"cdiVersion": "0.6.0", "kind": "kubenpu.test/gpu", "devices": [
  {"name": "virtio", "containerEdits": {"deviceNodes": [{"path": "$VIRTIO_CARD"}]}}]}
CDI
claim() { echo '{"namespace": "ml", "name": "'$1'", "devices": [{"driver": "gpu.kubenpu.test", "pool": "test", "device": "virtio", "cdi": ["kubenpu.test/gpu=virtio"]}]}'; }
cat > /tmp/kubelet.json <<STATE
{"pods": [
  {"namespace": "ml", "name": "a", "containers": [{"name": "main", "claims": [$(claim a)]}]},
  {"namespace": "ml", "name": "b", "containers": [{"name": "main", "claims": [$(claim b)]}]},
  {"namespace": "ml", "name": "idle", "containers": [{"name": "main", "claims": [$(claim idle)]}]}
]}
STATE
kubenpu-pods podresources --socket /var/lib/kubelet/pod-resources/kubelet.sock --state /tmp/kubelet.json \
  --calls /tmp/kubelet.calls > /tmp/kubelet.log 2>&1 &
start_containerd
start_agent --cri-socket "$CRI_SOCKET" --plugins-dir /plugins --allocation-interval 1s \
  --fdinfo --fdinfo-interval 2s --proc-root /fixture/proc --energy

run_pod() {
  kubenpu-pods pod --dir "$CRI_DIR" --pod "ml/$1/$2" --image "$WORKLOAD_IMAGE" \
    --device "$VIRTIO_CARD" --mount /shared:/out --container "main=$3" > /dev/null \
    || { tail -20 "$CRI_DIR/containerd.log"; fail "cannot run pod $1"; }
}
# Each using pod calls once, so the agent counts its cgroup, and says
# which cgroup it is.
for pod in a b; do
  run_pod $pod 00000000-0000-4000-8000-00000000000$pod \
    "echo \$(busybox stat -c %i /sys/fs/cgroup) > /out/$pod.cgroup && kubenpu-workload $VIRTIO_CARD:0x48:1 > /out/$pod.json && exec sleep 1000000"
done
run_pod idle 00000000-0000-4000-8000-0000000000cc "exec sleep 1000000"
wait_file /shared/a.json
wait_file /shared/b.json
pid_of() {
  dir=$(find /sys/fs/cgroup -type d -inum "$(cat /shared/$1.cgroup)" | head -1)
  [ -n "$dir" ] || fail "no cgroup of pod $1"
  head -1 "$dir/cgroup.procs"
}
PID_A=$(pid_of a)
PID_B=$(pid_of b)
snapshot 1 0 0 1000000

# The join knows the three holders, the sensor was read, and the fixture's
# engine time was seen: the device is divided by engine time.
wait_metrics "the agent never joined the holders or read the device" \
  'kubenpu_allocation_idle{.*pod="idle"' \
  'kubenpu_device_energy_joules_total{.*source="energy"} 0.0$' \
  'kubenpu_device_idle_watts{.*method="plugin",rule="engine_time"} 10.0$'

# after_a_scan: until the reader has taken another scan.
files_read() { busybox wget -q -O - http://127.0.0.1:8080/metrics | sed -n 's/^kubenpu_fdinfo_files_read_total //p'; }
after_a_scan() {
  before=$(files_read) tries=0
  while [ "$(files_read)" = "$before" ]; do
    tries=$((tries + 1)); [ "$tries" -lt 300 ] || fail "no scan in 30 s"
    sleep 0.1
  done
}
after_a_scan
for k in 1 2 3 4; do
  snapshot $((k + 1)) $((3 * k)) $k $((1000000 + k * 100000000))
  after_a_scan
done
# Nobody's engine time moves, the device draws 50 J: its idle power.
snapshot 6 12 4 451000000
after_a_scan
after_a_scan
busybox wget -q -O /shared/metrics http://127.0.0.1:8080/metrics
kubenpuctl energy --json > /shared/energy.json
kubenpuctl energy > /shared/energy.txt
stop_agent
kill -TERM $PODS_PID
cp $AGENT_LOG /shared/agent.log
"#;

/// `kubenpu_energy_joules_total` per (pod, kind) on the device.
fn shares(metrics: &str, device: &str) -> BTreeMap<(String, String), f64> {
    let label = |line: &str, name: &str| -> String {
        let start = line.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        line[start..].split('"').next().unwrap().to_owned()
    };
    metrics
        .lines()
        .filter(|l| l.starts_with("kubenpu_energy_joules_total{"))
        .filter(|l| label(l, "device") == device)
        .map(|l| {
            let value: f64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            ((label(l, "pod"), label(l, "kind")), value)
        })
        .collect()
}

#[test]
fn pods_sharing_a_device_are_charged_its_joules_by_engine_time_and_holding() {
    let dir = tempfile::tempdir().unwrap();
    let vm = support::guest::with_containerd(support::guest::vm(Kernel::Sid, dir.path())).file(
        "/virtio-energy.wasm",
        0o644,
        std::fs::read(support::test_plugin("virtio-energy")).unwrap(),
    );
    let outcome = vm.run(SCRIPT).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(outcome.status, 0, "{}", outcome.output);
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    let (metrics, table) = (read("metrics"), read("energy.txt"));
    let device = read("address").trim().to_owned();

    // The device's energy is the counter's growth since the agent's first
    // reading: four steps of 100 J, then 50 J.
    let device_line = format!(
        r#"kubenpu_device_energy_joules_total{{device="{device}",vendor="virtio_gpu",source="energy"}} 450"#
    );
    assert!(
        metrics
            .lines()
            .any(|l| l == device_line || l == format!("{device_line}.0")),
        "no {device_line} in\n{metrics}"
    );
    let shares = shares(&metrics, &device);
    let share = |pod: &str, kind: &str| {
        shares
            .get(&(pod.to_owned(), kind.to_owned()))
            .copied()
            .unwrap_or(0.0)
    };
    // Nothing lost, nothing counted twice.
    let charged: f64 = shares.values().sum();
    assert!(
        (charged - 450.0).abs() < 1e-6,
        "{charged} J charged\n{shares:?}"
    );
    // Active energy at the engine time's split, 3:1, each interval's to
    // the microjoule (the shares are whole microjoules).
    let (a, b) = (share("a", "active"), share("b", "active"));
    assert!(a > 0.0, "{shares:?}");
    assert!((a - 3.0 * b).abs() < 2e-5, "a {a} J, b {b} J: not 3:1");
    // The idle holder pays its share of the idle power, as the users do,
    // and nothing else.
    let idle = share("idle", "idle");
    assert!(idle > 0.0, "{shares:?}");
    for pod in ["a", "b"] {
        assert!((share(pod, "idle") - idle).abs() < 1e-5, "{shares:?}");
    }
    assert_eq!(share("idle", "active"), 0.0, "{shares:?}");
    assert!(
        !shares.keys().any(|(pod, _)| pod.is_empty()),
        "the device has holders, yet energy went to nobody: {shares:?}"
    );
    // The last interval, which nobody used, measured the idle power: its
    // 50 J over one reader's interval (2 s, give or take a loaded
    // machine's delays), not a step's 100 J.
    let idle_line = format!(
        r#"kubenpu_device_idle_watts{{device="{device}",vendor="virtio_gpu",method="measured",rule="engine_time"}} "#
    );
    let watts: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix(&idle_line)?.parse().ok())
        .unwrap_or_else(|| panic!("no measured idle power in\n{metrics}"));
    assert!(
        (5.0..=33.4).contains(&watts),
        "{watts} W: not 50 J over 1.5 to 10 s"
    );
    assert!(
        table.starts_with(&format!(
            "{device} (virtio_gpu): 450.0 J from its energy counter; active energy by engine time (fdinfo); idle "
        )) && table.contains("W (measured)"),
        "{table}"
    );
    for pod in ["a", "b", "idle"] {
        assert!(
            table
                .lines()
                .any(|l| l.starts_with(&format!("ml         {pod} "))),
            "{table}"
        );
    }
    eprintln!("{table}");
}
