//! Attaches an empty program to `drm_ioctl` with the given hook and holds
//! it until stdin closes or SIGTERM: the floor against which the counting
//! program's cost is measured (`prog_stats` reads its run time).
//!
//! `hook_floor fentry|kprobe` (as root; `fentry` goes through the `drm`
//! module's BTF, as on Debian's kernels)

use std::{io::Read as _, path::Path};

use aya::{
    EbpfLoader,
    programs::{FEntry, KProbe},
};
use kubenpu::{
    probe::{Btf, VMLINUX_BTF, load_on_module},
    program::FLOOR_OBJECT,
};

fn main() -> anyhow::Result<()> {
    let hook = std::env::args().nth(1).unwrap_or_default();
    let mut ebpf = EbpfLoader::new().load(FLOOR_OBJECT)?;
    let _link = match hook.as_str() {
        "kprobe" => {
            let program: &mut KProbe = ebpf
                .program_mut("kubenpu_floor_kprobe")
                .unwrap()
                .try_into()?;
            program.load()?;
            let id = program.attach("drm_ioctl", 0)?;
            aya::programs::links::FdLink::try_from(program.take_link(id)?)?
        }
        "fentry" => {
            let vmlinux = Btf::from_file(Path::new(VMLINUX_BTF), None)?;
            let mut program: FEntry =
                load_on_module(&ebpf, FLOOR_OBJECT, "kubenpu_floor_fentry", &vmlinux, true)?;
            let id = program.attach()?;
            program.take_link(id)?.into()
        }
        other => anyhow::bail!("hook_floor: unknown hook {other:?}: choose fentry or kprobe"),
    };
    eprintln!("hook_floor: empty {hook} program attached; close stdin to detach");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    Ok(())
}
