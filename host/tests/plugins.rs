//! The plugin host against real components: the built-in vendors, and
//! broken or hostile plugin files that must each be rejected with one clear
//! line while every other plugin keeps working.

mod support;

use std::{fs, path::Path, process::Command, time::Instant};

use kubenpu::plugins::{BUILTIN, PluginHost, SIZE_LIMIT, Sandbox, Source};
use serde_json::Value;
use support::{builtin_wasm as builtin, numbered_plugin as numbered, test_plugin};

const BUILTIN_NAMES: [&str; 21] = [
    "amdgpu",
    "amdxdna",
    "dma_heap",
    "ethosu",
    "etnaviv",
    "habanalabs",
    "i915",
    "ivpu",
    "msm",
    "neuron",
    "nvidia",
    "panfrost",
    "panthor",
    "qaic",
    "rocket",
    "tenstorrent",
    "udmabuf",
    "v3d",
    "vgem",
    "virtio_gpu",
    "xe",
];

fn kubenpuctl(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_kubenpuctl"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn kubenpuctl_plugins_json_lists_the_built_in_vendors_with_their_tables() {
    let empty = tempfile::tempdir().unwrap();
    let out = kubenpuctl(&[
        "plugins",
        "--json",
        "--plugins-dir",
        empty.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plugins: Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = plugins
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BUILTIN_NAMES);
    for plugin in plugins.as_array().unwrap() {
        assert_eq!(plugin["source"], "built-in");
        let char_devices = plugin["char_devices"].as_array().unwrap();
        if !char_devices.is_empty() {
            // A plugin of character devices alone: each counts allocations.
            for device in char_devices {
                let has = device["commands"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c["kind"] == "alloc");
                assert!(has, "{device} has no alloc command");
            }
            continue;
        }
        assert!(
            !plugin["drivers"].as_array().unwrap().is_empty(),
            "{plugin}"
        );
        for kind in ["submit", "alloc"] {
            let has = plugin["ioctls"]
                .as_array()
                .unwrap()
                .iter()
                .any(|i| i["kind"] == kind);
            assert!(has, "{} has no {kind} ioctl", plugin["name"]);
        }
    }
    let dma_heap = &plugins[2]["char_devices"][0];
    assert_eq!(
        dma_heap,
        &serde_json::json!({
            "driver": "dma_heap",
            "nodes": "class dma_heap",
            "entry": "dma_heap_ioctl",
            "key": "number",
            "commands": [{
                "cmd": 0xc018_4800_u32,
                "name": "DMA_HEAP_IOCTL_ALLOC",
                "kind": "alloc",
                "size": "len@0:8 before",
                "only_when": null,
            }],
        })
    );
    let plugin = |name: &str| {
        plugins
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == name)
            .unwrap()
    };
    assert_eq!(
        plugin("i915")["ioctls"][0],
        serde_json::json!({"nr": 105, "name": "DRM_IOCTL_I915_GEM_EXECBUFFER2", "kind": "submit"})
    );
    assert_eq!(plugin("ivpu")["drivers"], serde_json::json!(["intel_vpu"]));
}

/// Writes each bad plugin into `dir` under a telling name.
/// The agent starts without compiling: every built-in's precompiled code
/// is there and loads, and describes the same vendor as its component.
#[test]
fn every_built_in_loads_from_its_precompiled_code() {
    let sandbox = Sandbox::new().unwrap();
    for builtin in BUILTIN {
        assert!(
            builtin.precompiled_loads(&sandbox),
            "the built-in {} has no precompiled code, or wasmtime refuses it",
            builtin.name
        );
        let loaded = builtin.load(&sandbox).unwrap();
        let compiled =
            kubenpu::plugins::Plugin::load(&sandbox, builtin.wasm, Source::Builtin).unwrap();
        assert_eq!(loaded.description, compiled.description, "{}", builtin.name);
    }
}

fn write_hostile_plugins(dir: &Path) {
    let wat = |text: &str| wat::parse_str(text).unwrap();
    let vgem = builtin("vgem");
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("not-wasm.wasm", b"#!/bin/sh\necho hello\n".to_vec()),
        (
            "core-module.wasm",
            wat("(module (func (export \"describe\")))"),
        ),
        (
            "other-world.wasm",
            wat(r#"(component
                (core module $m (func (export "hello") (result i32) i32.const 42))
                (core instance $i (instantiate $m))
                (func (export "hello") (result u32) (canon lift (core func $i "hello"))))"#),
        ),
        ("missing-exports.wasm", wat("(component)")),
        (
            "wants-environment.wasm",
            wat(r#"(component
                (import "wasi:cli/environment@0.2.0" (instance
                    (export "get-arguments" (func (result (list string)))))))"#),
        ),
        ("spin.wasm", fs::read(test_plugin("spin")).unwrap()),
        ("bomb.wasm", fs::read(test_plugin("bomb")).unwrap()),
        (
            "conflicting-kinds.wasm",
            fs::read(test_plugin("conflicting-kinds")).unwrap(),
        ),
        (
            "no-drivers.wasm",
            fs::read(test_plugin("no-drivers")).unwrap(),
        ),
        ("thief.wasm", fs::read(test_plugin("thief")).unwrap()),
        ("huge.wasm", [vgem, &vec![0; SIZE_LIMIT as usize]].concat()),
        ("truncated.wasm", vgem[..vgem.len() / 2].to_vec()),
    ];
    for (name, bytes) in files {
        fs::write(dir.join(name), bytes).unwrap();
    }
}

#[test]
fn each_broken_plugin_is_rejected_with_one_line_and_the_rest_keep_working() {
    let dir = tempfile::tempdir().unwrap();
    write_hostile_plugins(dir.path());
    fs::copy(test_plugin("acme"), dir.path().join("acme.wasm")).unwrap();

    let mut host = PluginHost::new(dir.path()).unwrap();
    let started = Instant::now();
    let vendors = host.scan().unwrap();
    eprintln!(
        "scanning {} files took {:?}",
        fs::read_dir(dir.path()).unwrap().count(),
        started.elapsed()
    );

    let names: Vec<&str> = vendors.plugins.iter().map(|p| p.name()).collect();
    let mut expected = BUILTIN_NAMES.to_vec();
    expected.push("acme");
    assert_eq!(names, expected);

    let reason = |file: &str| {
        let rejection = vendors
            .rejected
            .iter()
            .find(|r| r.source.ends_with(file))
            .unwrap_or_else(|| panic!("{file} was not rejected: {:?}", vendors.rejected));
        let line = rejection.to_string();
        assert!(!line.contains('\n'), "not one line: {line:?}");
        assert!(
            line.starts_with(&format!("plugin {}", dir.path().join(file).display())),
            "{line}"
        );
        line
    };
    let expectations = [
        ("not-wasm.wasm", "not a WebAssembly file"),
        (
            "core-module.wasm",
            "a core WebAssembly module, not a component",
        ),
        (
            "other-world.wasm",
            "does not implement the kubenpu:vendor world",
        ),
        (
            "missing-exports.wasm",
            "does not implement the kubenpu:vendor world",
        ),
        ("wants-environment.wasm", "wasi:cli/environment@0.2.0"),
        ("spin.wasm", "describe failed: used up its CPU budget"),
        ("bomb.wasm", "describe failed"),
        (
            "conflicting-kinds.wasm",
            "nr 0x41 is both submit (DRM_IOCTL_CONFLICTING_RUN) and wait (DRM_IOCTL_CONFLICTING_WAIT)",
        ),
        ("no-drivers.wasm", "the driver list is empty"),
        (
            "thief.wasm",
            "claims driver \"i915\", which vendor i915 already claims",
        ),
        (
            "huge.wasm",
            &format!("larger than the {SIZE_LIMIT}-byte limit"),
        ),
        ("truncated.wasm", "not a valid component"),
    ];
    for (file, expected) in expectations {
        let line = reason(file);
        assert!(
            line.contains(expected),
            "{file}: {line:?} lacks {expected:?}"
        );
        eprintln!("{line}");
    }
    assert!(reason("wants-environment.wasm").contains("imports what the sandbox does not provide"));
    assert!(reason("bomb.wasm").ends_with("tried to grow its memory past the 16 MiB limit"));
    assert_eq!(vendors.rejected.len(), expectations.len());
}

#[test]
fn vendors_beyond_the_kernel_table_are_rejected_one_line_each() {
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..70).map(|i| format!("vendor-{i:09}")).collect();
    for name in &names {
        fs::write(dir.path().join(format!("{name}.wasm")), numbered(name)).unwrap();
    }
    let vendors = PluginHost::new(dir.path()).unwrap().scan().unwrap();
    let max = kubenpu_ebpf::MAX_VENDORS as usize;
    // One table per vendor, and one per character device: nvidia has two
    // (nvidia and nvidia-uvm) and no DRM one.
    let tables: usize = vendors.plugins.iter().map(|p| p.slots().len()).sum();
    assert_eq!(tables, max);
    let builtin_tables = BUILTIN_NAMES.len() + 1;
    let fit = max - builtin_tables;
    // The built-ins come first, then files in name order, until it is full.
    let in_force = BUILTIN_NAMES.len();
    let admitted: Vec<&str> = vendors.plugins[in_force..]
        .iter()
        .map(|p| p.name())
        .collect();
    assert_eq!(admitted, names[..fit]);
    assert_eq!(vendors.rejected.len(), names.len() - fit);
    for (rejection, name) in vendors.rejected.iter().zip(&names[fit..]) {
        assert_eq!(
            rejection.to_string(),
            format!(
                "plugin {} rejected: the kernel's ioctl table holds {max} vendor tables (one per vendor and per character device), all in force: remove a plugin first",
                dir.path().join(format!("{name}.wasm")).display()
            )
        );
    }
}

#[test]
fn two_vendors_whose_names_hash_to_one_slot_cannot_both_be_in_force() {
    // Distinct names, one FNV-1a hash: one kernel table slot.
    let (first, second) = ("collide-azunwxyz", "collide-a2wbaxyz");
    assert_eq!(
        kubenpu_ebpf::vendor_slot(first),
        kubenpu_ebpf::vendor_slot(second)
    );
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("1.wasm"), numbered(first)).unwrap();
    fs::write(dir.path().join("2.wasm"), numbered(second)).unwrap();
    let vendors = PluginHost::new(dir.path()).unwrap().scan().unwrap();
    assert!(vendors.plugins.iter().any(|p| p.name() == first));
    assert!(vendors.plugins.iter().all(|p| p.name() != second));
    assert_eq!(vendors.plugins.len(), BUILTIN_NAMES.len() + 1);
    let lines: Vec<String> = vendors.rejected.iter().map(|r| r.to_string()).collect();
    assert_eq!(
        lines,
        [format!(
            "plugin {} rejected: its table \"collide-a2wbaxyz\" hashes to the kernel table slot of vendor collide-azunwxyz: rename one of them",
            dir.path().join("2.wasm").display()
        )]
    );
}

#[test]
fn a_file_replaces_the_built_in_of_its_name_and_a_second_copy_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("10-vgem.wasm"), builtin("vgem")).unwrap();
    fs::write(dir.path().join("20-vgem-again.wasm"), builtin("vgem")).unwrap();
    let vendors = PluginHost::new(dir.path()).unwrap().scan().unwrap();
    let vgem = vendors.plugins.iter().find(|p| p.name() == "vgem").unwrap();
    assert_eq!(
        vgem.source,
        Source::File {
            path: dir.path().join("10-vgem.wasm"),
            sha256: kubenpu::plugins::sha256_hex(builtin("vgem")),
        }
    );
    assert_eq!(vendors.plugins.len(), BUILTIN_NAMES.len());
    assert_eq!(vendors.rejected.len(), 1);
    assert!(
        vendors.rejected[0]
            .to_string()
            .contains("vendor vgem is already provided by")
    );
}

#[test]
fn kubenpuctl_plugins_check_prints_the_table_or_the_reason() {
    let good = kubenpuctl(&["plugins", "check", test_plugin("acme").to_str().unwrap()]);
    assert!(good.status.success());
    let table = String::from_utf8(good.stdout).unwrap();
    assert!(table.starts_with("acme 1.0.0 ("), "{table}");
    assert!(
        table.contains("0x40  submit  DRM_IOCTL_ACME_SUBMIT"),
        "{table}"
    );

    let bad = kubenpuctl(&[
        "plugins",
        "check",
        test_plugin("no-drivers").to_str().unwrap(),
    ]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8(bad.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("rejected: invalid table: the driver list is empty"),
        "{stderr}"
    );

    // Built against the frozen WIT 0.1.0: loads, its allocs without sizes.
    let table = checked_table("legacy-0-1", "legacy 0.1.0 (");
    assert!(
        table.contains("0x41  alloc  DRM_IOCTL_LEGACY_BO_CREATE  -"),
        "{table}"
    );
    // Built against the frozen WIT 0.2.0: loads with its sizes, and the
    // kernel's engine and region names.
    let table = checked_table("legacy-0-2", "legacy2 0.2.0 (");
    assert!(
        table.contains("0x41  alloc  DRM_IOCTL_LEGACY2_BO_CREATE  size@8:8 after"),
        "{table}"
    );
    assert!(!table.contains("engines:"), "{table}");
    // Built against the frozen WIT 0.3.0: loads with its usage names, and
    // no allocators.
    let table = checked_table("legacy-0-3", "legacy3 0.3.0 (");
    assert!(table.contains("  engines: gfx=render"), "{table}");
    assert!(!table.contains("device plugins:"), "{table}");
    // Built against the frozen WIT 0.4.0: loads with its allocators, and
    // no character devices.
    let table = checked_table("legacy-0-4", "legacy4 0.4.0 (");
    assert!(
        table.contains("  device plugins: legacy4.example/gpu=card-node"),
        "{table}"
    );
    assert!(!table.contains("character device"), "{table}");
    // Built against the frozen WIT 0.5.0: loads with its allocators, and
    // no energy source.
    let table = checked_table("legacy-0-5", "legacy5 0.5.0 (");
    assert!(
        table.contains("  device plugins: legacy5.example/gpu=card-node"),
        "{table}"
    );
    assert!(!table.contains("energy:"), "{table}");

    let missing = kubenpuctl(&["plugins", "check", "/nonexistent/plugin.wasm"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read it"));
}

/// Every built-in, written out as the file an operator would install,
/// passes the agent's own check: what `plugins check` accepts is what a
/// node loads.
#[test]
fn kubenpuctl_plugins_check_accepts_every_built_in() {
    let dir = tempfile::tempdir().unwrap();
    for name in BUILTIN_NAMES {
        let path = dir.path().join(format!("{name}.wasm"));
        fs::write(&path, builtin(name)).unwrap();
        let check = kubenpuctl(&["plugins", "check", path.to_str().unwrap()]);
        let table = String::from_utf8(check.stdout).unwrap();
        assert!(
            check.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&check.stderr)
        );
        assert!(table.starts_with(&format!("{name} ")), "{table}");
        // The character devices' tables arrive through the component, as
        // WIT 0.5.0 carries them.
        match name {
            "dma_heap" => assert!(
                table.contains(
                    "  character device dma_heap: class dma_heap, entry dma_heap_ioctl, keyed on the number\n    CMD         KIND   COMMAND               SIZE\n    0xc0184800  alloc  DMA_HEAP_IOCTL_ALLOC  len@0:8 before\n"
                ),
                "{table}"
            ),
            "udmabuf" => assert!(
                table.contains("character device udmabuf: misc device udmabuf, entry udmabuf_ioctl, keyed on the whole")
                    && table.contains("0x40187542  alloc  UDMABUF_CREATE       size@16:8 before"),
                "{table}"
            ),
            // Allocations, pins and lock waits: no command submits.
            "tenstorrent" => assert!(
                table.contains("  character device tenstorrent: class tenstorrent, entry tt_cdev_ioctl, keyed on the whole")
                    && table.contains("  wait   TENSTORRENT_IOCTL_LOCK_CTL"),
                "{table}"
            ),
            _ => assert!(table.contains("  submit  "), "{table}"),
        }
        // The allocators of the built-ins that have them arrive through
        // the component, as WIT 0.4.0 carries them.
        let allocators = match name {
            "i915" => Some(
                "  device plugins: gpu.intel.com/i915=card-node, gpu.intel.com/i915_monitoring=every-device, gpu.intel.com/monitoring=every-device\n  DRA drivers: gpu.intel.com=dashed-pci-address\n",
            ),
            "ivpu" => Some("  device plugins: npu.intel.com/accel=accel-node\n"),
            "amdgpu" => Some(
                "  device plugins: amd.com/gpu=pci-address\n  DRA drivers: gpu.amd.com=card-render\n",
            ),
            _ => None,
        };
        match allocators {
            Some(lines) => assert!(table.contains(lines), "{table}"),
            None if name != "xe" => assert!(!table.contains("device plugins:"), "{table}"),
            None => {}
        }
        // Where the devices report their energy arrives through the
        // component, as WIT 0.6.0 carries it; the other vendors' drivers
        // have no hwmon.
        let energy = match name {
            "i915" => Some("hwmon i915: counter energy1_input; idle 20 W until measured"),
            "xe" => Some(
                "hwmon xe: counter energy1_input (card), then counter energy2_input (pkg), then counter energy1_input; idle 20 W until measured",
            ),
            "amdgpu" => Some(
                "hwmon amdgpu: counter gpu_metrics 1.3 at byte 24 in 2^-16 J, may wrap at 32 bits, then counter gpu_metrics 1.4 at byte 24 in 2^-16 J, may wrap at 32 bits, then counter gpu_metrics 1.5 at byte 88 in 2^-16 J, then power power1_average, then power power1_input; idle 15 W until measured",
            ),
            "habanalabs" => {
                Some("any hwmon of the device: power power1_input; idle 80 W until measured")
            }
            "tenstorrent" => {
                Some("hwmon wormhole|blackhole: power power1_input; idle 20 W until measured")
            }
            _ => None,
        };
        match energy {
            Some(line) => assert!(table.contains(&format!("  energy: {line}\n")), "{table}"),
            None => assert!(!table.contains("energy:"), "{table}"),
        }
    }
}

/// What `kubenpuctl plugins check` prints for test plugin `name`, which
/// it must accept, printing `header` first.
fn checked_table(name: &str, header: &str) -> String {
    let check = kubenpuctl(&["plugins", "check", test_plugin(name).to_str().unwrap()]);
    let table = String::from_utf8(check.stdout).unwrap();
    assert!(check.status.success(), "{table}");
    assert!(table.starts_with(header), "{table}");
    table
}
