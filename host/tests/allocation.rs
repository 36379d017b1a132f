//! The allocation join's parts that need no VM: the built-in vendors'
//! allocators resolving device plugin IDs and DRA claims on sysfs trees
//! shaped like real machines', and the reader meeting a PodResources
//! socket that is missing or does not speak gRPC.

mod support;

use std::time::Duration;

use kubenpu::{
    allocation::{
        listing::{Claimed, Container, PluginDevices},
        numa::{self, CpuSource, Fit, Topology},
        reader::{self, Report},
        resolve::{Grant, Resolved, Source},
    },
    attribution::Owner,
    device_table::DeviceTable,
    discovery::discover,
    plugins::PluginHost,
};
use support::sysfs::Sysfs;

fn container(name: &str, plugin_devices: &[(&str, &str)], claimed: Vec<Claimed>) -> Container {
    Container {
        owner: Owner {
            namespace: "ml".into(),
            pod: name.into(),
            container: "main".into(),
        },
        pod_uid: format!("uid-{name}"),
        seen_at: std::time::Instant::now(),
        plugin_devices: plugin_devices
            .iter()
            .map(|(resource, id)| PluginDevices {
                resource: (*resource).into(),
                ids: vec![(*id).into()],
                numa_node: None,
            })
            .collect(),
        claimed,
        cpu_ids: vec![],
    }
}

fn claim(driver: &str, device: &str, nodes: Option<Vec<&str>>) -> Vec<Claimed> {
    vec![Claimed {
        driver: driver.into(),
        device: device.into(),
        nodes: nodes.map(|n| n.iter().map(|d| d.parse().unwrap()).collect()),
    }]
}

#[test]
fn the_built_in_allocators_resolve_intel_and_amd_ids_and_never_guess() {
    let sysfs = Sysfs::new();
    sysfs.intel_gpu_and_npu();
    let amd = sysfs.pci(
        "pci0000:00/0000:00:01.0/0000:03:00.0",
        "1002:744c",
        Some("amdgpu"),
        0,
    );
    sysfs.node(&amd, "drm", "card1", 226, 1);
    sysfs.node(&amd, "drm", "renderD129", 226, 129);
    let empty = tempfile::tempdir().unwrap();
    let vendors = PluginHost::new(empty.path()).unwrap().scan().unwrap();
    let table = DeviceTable::build(discover(&sysfs.roots(), &[]).devices, vendors);
    assert_eq!(table.problems, Vec::<String>::new());

    let containers = [
        container("shared-gpu", &[("gpu.intel.com/i915", "card0-1")], vec![]),
        container("npu", &[("npu.intel.com/accel", "accel0-0")], vec![]),
        container("monitoring", &[("gpu.intel.com/monitoring", "all")], vec![]),
        container("rocm", &[("amd.com/gpu", "0000:03:00.0")], vec![]),
        container("amd-claim", &[], claim("gpu.amd.com", "gpu-1-129", None)),
        container(
            "intel-claim",
            &[],
            claim("gpu.intel.com", "0000-00-02-0-0x5917", None),
        ),
        container(
            "cdi-claim",
            &[],
            claim("gpu.example.com", "gpu0", Some(vec!["226:129"])),
        ),
        container("opaque", &[("squat.ai/gpu", "3f786850e387550f")], vec![]),
        container("gone-card", &[("gpu.intel.com/i915", "card7-0")], vec![]),
        container("nothing", &[], vec![]),
    ];
    let resolved = Resolved::new(&containers, &table);
    let grants = |pod: &str| -> (Vec<(String, String, Source)>, bool) {
        let granted = &resolved.containers[&(format!("uid-{pod}"), "main".to_owned())];
        let grants = granted
            .grants
            .iter()
            .map(
                |Grant {
                     device,
                     resource,
                     source,
                     ..
                 }| (device.to_string(), resource.clone(), *source),
            )
            .collect();
        (grants, granted.complete)
    };
    let one = |device: &str, resource: &str, source| {
        (vec![(device.into(), resource.into(), source)], true)
    };
    let plugin = Source::DevicePlugin;
    assert_eq!(
        grants("shared-gpu"),
        one("0000:00:02.0", "gpu.intel.com/i915", plugin)
    );
    assert_eq!(
        grants("npu"),
        one("0000:00:0b.0", "npu.intel.com/accel", plugin)
    );
    // Every Intel GPU (one here), not the NPU nor the AMD GPU.
    assert_eq!(
        grants("monitoring"),
        one("0000:00:02.0", "gpu.intel.com/monitoring", plugin)
    );
    assert_eq!(grants("rocm"), one("0000:03:00.0", "amd.com/gpu", plugin));
    assert_eq!(
        grants("amd-claim"),
        one("0000:03:00.0", "gpu.amd.com", Source::Dra)
    );
    assert_eq!(
        grants("intel-claim"),
        one("0000:00:02.0", "gpu.intel.com", Source::Dra)
    );
    assert_eq!(
        grants("cdi-claim"),
        one("0000:03:00.0", "gpu.example.com", Source::Dra)
    );
    // Unknown resources and IDs naming no device are counted, never
    // guessed: those containers' allocations are incomplete.
    assert_eq!(grants("opaque"), (vec![], false));
    assert_eq!(grants("gone-card"), (vec![], false));
    assert_eq!(grants("nothing"), (vec![], true));
    assert_eq!(
        resolved.unmapped,
        [
            ("gpu.intel.com/i915".to_owned(), 1),
            ("squat.ai/gpu".to_owned(), 1)
        ]
        .into()
    );
}

/// A holder's exclusive CPUs (kubelet's `cpu_ids`) against the NUMA node
/// sysfs gives its device: all on the other node.
#[test]
fn a_holders_cpus_are_placed_against_its_devices_numa_node() {
    let sysfs = Sysfs::new();
    let amd = sysfs.pci(
        "pci0000:00/0000:00:01.0/0000:03:00.0",
        "1002:744c",
        Some("amdgpu"),
        1,
    );
    sysfs.node(&amd, "drm", "card0", 226, 0);
    sysfs.write("sys/devices/system/node/node0/cpulist", "0-1\n");
    sysfs.write("sys/devices/system/node/node1/cpulist", "2-3\n");
    let empty = tempfile::tempdir().unwrap();
    let vendors = PluginHost::new(empty.path()).unwrap().scan().unwrap();
    let table = DeviceTable::build(discover(&sysfs.roots(), &[]).devices, vendors);
    let rocm = Container {
        cpu_ids: vec![0, 1],
        ..container("rocm", &[("amd.com/gpu", "0000:03:00.0")], vec![])
    };
    let resolved = Resolved::new(&[rocm], &table);
    let granted = &resolved.containers[&("uid-rocm".to_owned(), "main".to_owned())];
    let grant = granted.grants.first().unwrap();
    assert_eq!(grant.numa_node, Some(1));
    let (cpus, source) = numa::cpus_of(&granted.cpu_ids, None).unwrap();
    assert_eq!(
        Topology::read(&sysfs.roots().sysfs).fit(&cpus, source, 1),
        Some(Fit {
            local: 0,
            total: 2,
            cpus: CpuSource::Exclusive
        })
    );
}

/// Where sysfs gives a device no node (firmware without proximity
/// information), the node its device plugin listed it on places it; where
/// sysfs names one, the kernel's word stands.
#[test]
fn a_device_sysfs_places_nowhere_takes_the_node_its_plugin_lists() {
    let sysfs = Sysfs::new();
    for (slot, card, node) in [("03", 0, -1), ("04", 1, 1)] {
        let gpu = sysfs.pci(
            &format!("pci0000:00/0000:00:01.0/0000:{slot}:00.0"),
            "1002:744c",
            Some("amdgpu"),
            node,
        );
        sysfs.node(&gpu, "drm", &format!("card{card}"), 226, card);
    }
    let empty = tempfile::tempdir().unwrap();
    let vendors = PluginHost::new(empty.path()).unwrap().scan().unwrap();
    let table = DeviceTable::build(discover(&sysfs.roots(), &[]).devices, vendors);
    let listed_on_node_0 = |address: &str| Container {
        plugin_devices: vec![PluginDevices {
            resource: "amd.com/gpu".into(),
            ids: vec![address.into()],
            numa_node: Some(0),
        }],
        ..container(address, &[], vec![])
    };
    let resolved = Resolved::new(
        &[
            listed_on_node_0("0000:03:00.0"),
            listed_on_node_0("0000:04:00.0"),
        ],
        &table,
    );
    let node = |address: &str| {
        let granted = &resolved.containers[&(format!("uid-{address}"), "main".to_owned())];
        assert!(granted.complete, "{granted:?}");
        granted.grants.first().unwrap().numa_node
    };
    assert_eq!(node("0000:03:00.0"), Some(0));
    assert_eq!(node("0000:04:00.0"), Some(1));
}

/// The reader's settings for `socket`, listing once an hour.
fn settings(socket: std::path::PathBuf) -> reader::Settings {
    reader::Settings {
        socket,
        interval: Duration::from_secs(3600),
        timeout: Duration::from_secs(2),
        cri_socket: None,
        cdi_dirs: vec![],
        dev_root: "/dev".into(),
    }
}

async fn first_report(socket: std::path::PathBuf) -> (&'static str, String) {
    let (_wants, mut reports) = reader::spawn(settings(socket));
    match tokio::time::timeout(Duration::from_secs(20), reports.recv()).await {
        Ok(Some(Report::Failed { reason, message })) => (reason, message),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_socket_or_one_that_is_not_grpc_is_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("kubelet.sock");
    let (reason, message) = first_report(missing.clone()).await;
    assert_eq!(reason, "absent");
    assert_eq!(
        message,
        format!(
            "no PodResources socket at {} (is kubelet running with this --root-dir?)",
            missing.display()
        )
    );

    // Something else listens there: it answers every connection with
    // garbage and hangs up.
    let socket = dir.path().join("not-grpc.sock");
    let listener = tokio::net::UnixListener::bind(&socket).unwrap();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            use tokio::io::AsyncWriteExt as _;
            let _ = stream
                .write_all(b"HTTP/1.0 400 Bad Request\r\n\r\nnot grpc")
                .await;
        }
    });
    let (reason, message) = first_report(socket.clone()).await;
    assert_eq!(reason, "unavailable");
    assert!(
        message.starts_with(&format!(
            "PodResources at {} did not answer: ",
            socket.display()
        )),
        "{message}"
    );
    assert_eq!(message.lines().count(), 1, "{message}");
}
