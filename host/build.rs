//! Builds the kernel program (`host-ebpf`) for the BPF target with the pinned
//! nightly toolchain and bpf-linker, so that a plain `cargo build` on stable
//! produces an agent with its program embedded.

use std::{env, path::Path, process::Command};

use anyhow::{Context as _, anyhow};

/// The one place the pinned toolchain and linker versions are written down;
/// `scripts/setup` installs from the same file.
const TOOLCHAIN_ENV: &str = include_str!("../scripts/toolchain.env");

fn pinned(key: &str) -> anyhow::Result<&'static str> {
    TOOLCHAIN_ENV
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .map(str::trim)
        .ok_or_else(|| anyhow!("scripts/toolchain.env has no {key}="))
}

fn main() -> anyhow::Result<()> {
    println!("cargo:rerun-if-changed=../scripts/toolchain.env");
    let toolchain = pinned("EBPF_TOOLCHAIN")?;
    let linker = pinned("BPF_LINKER_VERSION")?;
    let found = Command::new("bpf-linker").arg("--version").output();
    if !found.is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains(linker)) {
        return Err(anyhow!(
            "bpf-linker {linker} is not on PATH: run scripts/setup (it builds bpf-linker against {toolchain}'s LLVM)"
        ));
    }
    let manifest_dir = env::var("CARGO_MANIFEST_DIR")?;
    let ebpf_dir = Path::new(&manifest_dir).join("../host-ebpf");
    let ebpf_dir = ebpf_dir.to_str().context("non-UTF-8 path to host-ebpf")?;
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "kubenpu-ebpf",
            root_dir: ebpf_dir,
            ..Default::default()
        }],
        aya_build::Toolchain::Custom(toolchain),
    )
    .with_context(|| {
        format!("building the eBPF program with {toolchain} (run scripts/setup if it is missing)")
    })
}
