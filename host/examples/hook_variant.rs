//! Attaches a comparison program to `drm_ioctl` and holds it until stdin
//! closes: the yardsticks the counting program's cost is measured against
//! (`prog_stats` reads their run time).
//!
//! - `empty`: a pair of programs that return at once, on the entry and
//!   the exit of the call: the floor of a hook.
//! - `per-event`: the design KubeNPU's counting replaced: one ring-buffer
//!   event per counted call, submitted with a wakeup and read here, as a
//!   per-event agent would, one by one. It filters with the agent's pinned
//!   DEVICES and IOCTLS maps, so run the agent once first to fill them.
//! - `table-hash` and `table-array`: the ioctl table looked up as the
//!   counting program does (two hashes, the agent's pinned maps) and as an
//!   array of 256 numbers per vendor (filled here from the same maps),
//!   returning after the lookups: what the table's shape costs.
//! - `count` (on `lsm` only): a BPF LSM program on `file_ioctl` as the
//!   counting hook, the agent's filter and its entry's count (calls only:
//!   an LSM hook runs before the call). On exit it prints what it counted
//!   per ioctl number (`counted: NR CALLS REMOTE`), for exactness against
//!   what was issued.
//!
//! `hook_variant VARIANT fentry|kprobe|kprobe-multi|kprobe-session|lsm
//! [PIN_DIR]` (as root; fentry goes through the `drm` module's BTF, as on
//! Debian's kernels; kprobe-multi runs the kprobe program through an
//! fprobe; kprobe-session runs the empty variant's kprobe program as a
//! session, which, returning 0, runs again at every return: the session's
//! empty pair; lsm runs the empty or count variant's BPF LSM program on
//! every ioctl (`file_ioctl`), the floor of the policy's check; PIN_DIR is the
//! agent's `--pin-path`, /sys/fs/bpf/kubenpu by default). On exit it
//! prints the events it read.

use std::{
    borrow::Cow,
    collections::BTreeMap,
    io::Read as _,
    os::fd::{AsFd as _, AsRawFd as _, OwnedFd},
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use aya::{
    Ebpf, EbpfLoader,
    maps::{Array, HashMap, MapData, RingBuf},
    programs::{FEntry, FExit, KProbe, links::FdLink},
};
use kubenpu::{
    probe::{
        Btf, Side, VMLINUX_BTF, link_kprobe_multi, link_kprobe_session, link_lsm,
        load_kprobe_multi, load_kprobe_session, load_lsm, load_on_module,
    },
    program::{FLOOR_OBJECT, LSM_COUNT_OBJECT, PER_EVENT_OBJECT, TABLE_OBJECT},
};
use kubenpu_ebpf::{CountKey, DRM_COMMAND_MASK, DeviceEntry, IoctlEntry, IoctlKey, global, map};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [variant, hook, rest @ ..] = &args[..] else {
        anyhow::bail!(
            "usage: hook_variant empty|per-event|table-hash|table-array|count fentry|kprobe|kprobe-multi|kprobe-session|lsm [PIN_DIR]"
        );
    };
    let pin_dir = PathBuf::from(rest.first().map_or("/sys/fs/bpf/kubenpu", String::as_str));
    let vmlinux = Btf::from_file(Path::new(VMLINUX_BTF), None)?;
    let (object, prefix) = match variant.as_str() {
        "empty" => (FLOOR_OBJECT, "kubenpu_floor"),
        "per-event" => (PER_EVENT_OBJECT, "kubenpu_per_event"),
        "table-hash" => (TABLE_OBJECT, "kubenpu_table_hash"),
        "table-array" => (TABLE_OBJECT, "kubenpu_table_array"),
        "count" => (LSM_COUNT_OBJECT, "kubenpu_count"),
        other => anyhow::bail!(
            "hook_variant: unknown variant {other:?}: choose empty, per-event, table-hash, table-array or count"
        ),
    };
    let mut loader = EbpfLoader::new();
    let (f_inode, i_rdev);
    if variant != "empty" {
        f_inode = vmlinux
            .member_offset("file", "f_inode")
            .map_err(anyhow::Error::msg)?;
        i_rdev = vmlinux
            .member_offset("inode", "i_rdev")
            .map_err(anyhow::Error::msg)?;
        loader
            .override_global(global::F_INODE_OFFSET, &f_inode, true)
            .override_global(global::I_RDEV_OFFSET, &i_rdev, true)
            .default_map_pin_directory(pin_dir.join("maps"));
    }
    let mut ebpf = loader.load(object)?;
    if variant == "table-array" {
        fill_array_table(&mut ebpf)?;
    }
    let _attached = attach(&mut ebpf, object, prefix, hook, &vmlinux)?;
    eprintln!("hook_variant: {variant} {hook} program attached; close stdin to detach");

    let done = Arc::new(AtomicBool::new(false));
    let reader = match ebpf.take_map("EVENTS") {
        Some(map) => {
            let ring = RingBuf::try_from(map)?;
            let done = done.clone();
            Some(std::thread::spawn(move || read_events(ring, &done)))
        }
        None => None,
    };
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    done.store(true, Ordering::Relaxed);
    let events = reader.map_or(0, |r| r.join().expect("the reader thread"));
    println!("events: {events}");
    if let Some(map) = ebpf.map("LSM_COUNTS") {
        let counts: HashMap<&MapData, CountKey, [u64; 2]> = HashMap::try_from(map)?;
        let mut by_nr: BTreeMap<u32, [u64; 2]> = BTreeMap::new();
        for entry in counts.iter() {
            let (key, [calls, remote]) = entry?;
            let sum = by_nr.entry(key.nr).or_default();
            sum[0] += calls;
            sum[1] += remote;
        }
        for (nr, [calls, remote]) in by_nr {
            println!("counted: {nr:#x} {calls} {remote}");
        }
    }
    Ok(())
}

/// What keeps a comparison program attached until the example exits.
#[allow(dead_code, reason = "held, never read: dropping it detaches")]
enum Attached {
    /// A link aya made.
    Link(FdLink),
    /// A kprobe.multi, kprobe session or LSM link, with its program.
    Multi(OwnedFd, OwnedFd),
}

/// Attaches the variant's programs on `hook`: the entry program, and the
/// exit program where the variant has one (the empty pair does; the
/// per-event variant counts on entry only).
fn attach(
    ebpf: &mut Ebpf,
    object: &[u8],
    prefix: &str,
    hook: &str,
    vmlinux: &Btf,
) -> anyhow::Result<Vec<Attached>> {
    if prefix == "kubenpu_count" && hook != "lsm" {
        anyhow::bail!("hook_variant: the count variant runs on the LSM hook only");
    }
    let (entry, exit) = match hook {
        "kprobe" | "kprobe-multi" => ("kprobe", "kretprobe"),
        "fentry" => ("fentry", "fexit"),
        "kprobe-session" if prefix == "kubenpu_floor" => {
            let name = format!("{prefix}_kprobe");
            let program = load_kprobe_session(ebpf, object, &name, vmlinux, true)?;
            let link = link_kprobe_session(program.as_fd())?;
            return Ok(vec![Attached::Multi(program, link)]);
        }
        "kprobe-session" => anyhow::bail!(
            "hook_variant: only the empty variant runs as a session (the others' entry programs would run again at every return)"
        ),
        "lsm" if matches!(prefix, "kubenpu_floor" | "kubenpu_count") => {
            let name = format!("{prefix}_lsm");
            let program = load_lsm(ebpf, object, (&name, "file_ioctl"), vmlinux, true)?;
            let link = link_lsm(program.as_fd(), "file_ioctl")?;
            return Ok(vec![Attached::Multi(program, link)]);
        }
        "lsm" => {
            anyhow::bail!("hook_variant: only the empty and count variants run on the LSM hook")
        }
        other => anyhow::bail!(
            "hook_variant: unknown hook {other:?}: choose fentry, kprobe, kprobe-multi, kprobe-session or lsm"
        ),
    };
    let mut attached = Vec::new();
    for (side, suffix) in [(Side::Exit, exit), (Side::Entry, entry)] {
        let name = format!("{prefix}_{suffix}");
        if ebpf.program(&name).is_none() {
            continue;
        }
        attached.push(attach_one(ebpf, object, &name, hook, side, vmlinux)?);
    }
    Ok(attached)
}

fn attach_one(
    ebpf: &mut Ebpf,
    object: &[u8],
    name: &str,
    hook: &str,
    side: Side,
    vmlinux: &Btf,
) -> anyhow::Result<Attached> {
    Ok(match (hook, side) {
        ("kprobe", _) => {
            let program: &mut KProbe = ebpf
                .program_mut(name)
                .ok_or_else(|| anyhow::anyhow!("no program {name}"))?
                .try_into()?;
            program.load()?;
            let id = program.attach("drm_ioctl", 0)?;
            Attached::Link(FdLink::try_from(program.take_link(id)?)?)
        }
        ("kprobe-multi", _) => {
            let program = load_kprobe_multi(ebpf, object, name, true)?;
            let link = link_kprobe_multi(program.as_fd(), side)?;
            Attached::Multi(program, link)
        }
        (_, Side::Entry) => {
            // SAFETY: loaded as an fentry program.
            let adopt = |info| unsafe { FEntry::from_program_info(info, Cow::Owned(name.into())) };
            let mut program = load_on_module(ebpf, object, (name, side), vmlinux, true, adopt)?;
            let id = program.attach()?;
            Attached::Link(program.take_link(id)?.into())
        }
        (_, Side::Exit) => {
            // SAFETY: loaded as an fexit program.
            let adopt = |info| unsafe { FExit::from_program_info(info, Cow::Owned(name.into())) };
            let mut program = load_on_module(ebpf, object, (name, side), vmlinux, true, adopt)?;
            let id = program.attach()?;
            Attached::Link(program.take_link(id)?.into())
        }
    })
}

/// ARRAY_DEVICES and ARRAY_IOCTLS from the agent's DEVICES and IOCTLS:
/// each vendor slot of a DRM device gets an index, its 256 numbers a row
/// of the array. Character devices outside DRM, keyed on more than the
/// number, are left out: the variant runs on `drm_ioctl` alone.
fn fill_array_table(ebpf: &mut Ebpf) -> anyhow::Result<()> {
    let devices: HashMap<&MapData, u32, DeviceEntry> = HashMap::try_from(
        ebpf.map(map::DEVICES)
            .ok_or_else(|| anyhow::anyhow!("no DEVICES"))?,
    )?;
    let slots: Vec<(u32, u32)> = devices
        .iter()
        .filter(|entry| {
            entry
                .as_ref()
                .map_or(true, |(_, device)| device.cmd_mask == DRM_COMMAND_MASK)
        })
        .map(|entry| entry.map(|(dev, device)| (dev, device.vendor_slot)))
        .collect::<Result<_, _>>()?;
    let ioctls: HashMap<&MapData, IoctlKey, IoctlEntry> = HashMap::try_from(
        ebpf.map(map::IOCTLS)
            .ok_or_else(|| anyhow::anyhow!("no IOCTLS"))?,
    )?;
    let entries: Vec<(IoctlKey, IoctlEntry)> = ioctls.iter().collect::<Result<_, _>>()?;
    let mut index: BTreeMap<u32, u32> = BTreeMap::new();
    for (_, slot) in &slots {
        let next = index.len() as u32;
        index.entry(*slot).or_insert(next);
    }
    let mut array: Array<&mut MapData, IoctlEntry> = Array::try_from(
        ebpf.map_mut("ARRAY_IOCTLS")
            .ok_or_else(|| anyhow::anyhow!("no ARRAY_IOCTLS"))?,
    )?;
    for (key, entry) in entries {
        if let Some(&i) = index.get(&key.vendor_slot) {
            array.set(i * 256 + key.nr, entry, 0)?;
        }
    }
    let mut array_devices: HashMap<&mut MapData, u32, u32> = HashMap::try_from(
        ebpf.map_mut("ARRAY_DEVICES")
            .ok_or_else(|| anyhow::anyhow!("no ARRAY_DEVICES"))?,
    )?;
    for (dev, slot) in slots {
        array_devices.insert(dev, index[&slot], 0)?;
    }
    Ok(())
}

/// Waits for the kernel's wakeups and counts every event, until `done`.
fn read_events(mut ring: RingBuf<aya::maps::MapData>, done: &AtomicBool) -> u64 {
    let mut poll = libc::pollfd {
        fd: ring.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let mut events = 0;
    while !done.load(Ordering::Relaxed) {
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut poll, 1, 100) };
        while let Some(event) = ring.next() {
            if event.len() == std::mem::size_of::<kubenpu_ebpf::CountKey>() {
                events += 1;
            }
        }
    }
    events
}
