//! The kernel program, compiled by the build script and embedded in the
//! agent so that a node needs nothing but the one binary.

/// The BPF ELF object built from `host-ebpf`, aligned so aya can parse it
/// in place.
pub static OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/kubenpu"));

#[cfg(test)]
mod tests {
    use super::OBJECT;
    use kubenpu_ebpf::PROGRAM_NAME;

    #[test]
    fn embedded_object_carries_the_drm_ioctl_program_under_gpl() {
        let object = aya_obj::Object::parse(OBJECT).expect("the embedded object parses as BPF ELF");
        assert!(
            object.programs.contains_key(PROGRAM_NAME),
            "no program named {PROGRAM_NAME}; found {:?}",
            object.programs.keys().collect::<Vec<_>>()
        );
        assert_eq!(object.license.to_str(), Ok("GPL"));
    }
}
