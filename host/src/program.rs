//! The kernel program, compiled by the build script and embedded in the
//! agent so that a node needs nothing but the one binary.

/// The BPF ELF object built from `host-ebpf`, aligned so aya can parse it
/// in place.
pub static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/kubenpu"));

/// The placement scheduler (sched_ext), loaded only with `--placement
/// sched-ext`.
pub static SCHEDULER_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/kubenpu-scheduler"));

/// Empty programs on the same hooks, for benchmarks: the floor the
/// counting program's cost is compared with.
pub static FLOOR_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/kubenpu-floor"));

/// For benchmarks: one ring-buffer event per counted call (the design the
/// per-CPU counters replaced), filtering with the agent's own maps.
pub static PER_EVENT_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/kubenpu-per-event"));

/// For benchmarks: the ioctl table looked up as a hash (the counting
/// program's filter) and as an array, and nothing else.
pub static TABLE_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/kubenpu-table"));

/// For benchmarks: a BPF LSM program on `file_ioctl` as the counting hook
/// (calls only: an LSM hook runs before the call), filtering with the
/// agent's own maps.
pub static LSM_COUNT_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/kubenpu-lsm-count"));

#[cfg(test)]
mod tests {
    use super::OBJECT;
    use kubenpu_ebpf::program;

    #[test]
    fn embedded_object_carries_both_hooks_programs_under_gpl() {
        let object = aya_obj::Object::parse(OBJECT).expect("the embedded object parses as BPF ELF");
        for name in [program::FENTRY, program::KPROBE] {
            assert!(
                object.programs.contains_key(name),
                "no program named {name}; found {:?}",
                object.programs.keys().collect::<Vec<_>>()
            );
        }
        assert_eq!(object.license.to_str(), Ok("GPL"));
    }
}
