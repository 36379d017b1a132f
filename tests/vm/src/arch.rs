//! The guest architectures: what differs between an x86_64 guest, which
//! runs this host's own userland, and an arm64 one, which runs Debian's
//! arm64 userland on an emulated `virt` board.

use anyhow::{Result, bail};

use crate::elf;

/// A CPU architecture the VM emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    /// x86_64, Debian's `amd64`.
    Amd64,
    /// aarch64, Debian's `arm64`.
    Arm64,
}

impl Arch {
    /// Debian's name of the architecture (`linux-image-<arch>`, apt's
    /// `APT::Architecture`).
    pub fn debian(self) -> &'static str {
        match self {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }

    /// The Rust target triple of static binaries for this architecture.
    pub fn musl_target(self) -> &'static str {
        match self {
            Arch::Amd64 => "x86_64-unknown-linux-musl",
            Arch::Arm64 => "aarch64-unknown-linux-musl",
        }
    }

    /// The architecture of this host, which the VM tooling requires to be
    /// x86_64: the other one is emulated, and its userland fetched.
    pub fn host() -> Result<Self> {
        match std::env::consts::ARCH {
            "x86_64" => Ok(Arch::Amd64),
            other => bail!("kubenpu-vm runs on x86_64 hosts only, not {other}"),
        }
    }

    /// The qemu system emulator.
    pub(crate) fn qemu(self) -> &'static str {
        match self {
            Arch::Amd64 => "qemu-system-x86_64",
            Arch::Arm64 => "qemu-system-aarch64",
        }
    }

    /// The machine and CPU options. On arm64, the `virt` board with the
    /// newest interrupt controller (GICv2 stops at 8 vCPUs) and every CPU
    /// feature TCG offers, pointer authentication by qemu's own cheap
    /// algorithm (its architected one makes TCG several times slower).
    pub(crate) fn machine(self) -> &'static [&'static str] {
        match self {
            Arch::Amd64 => &["-cpu", "max"],
            Arch::Arm64 => &[
                "-machine",
                "virt,gic-version=max",
                "-cpu",
                "max,pauth-impdef=on",
            ],
        }
    }

    /// The serial console's device name in the guest.
    pub(crate) fn console(self) -> &'static str {
        match self {
            Arch::Amd64 => "ttyS0",
            Arch::Arm64 => "ttyAMA0",
        }
    }

    /// The `strip` that reads this architecture's executables (scripts/setup
    /// installs binutils-aarch64-linux-gnu).
    pub(crate) fn strip(self) -> &'static str {
        match self {
            Arch::Amd64 => "strip",
            Arch::Arm64 => "aarch64-linux-gnu-strip",
        }
    }

    /// ELF's machine number for its executables.
    pub fn elf_machine(self) -> u16 {
        match self {
            Arch::Amd64 => elf::EM_X86_64,
            Arch::Arm64 => elf::EM_AARCH64,
        }
    }

    /// qemu's user-mode emulator, which runs its programs on another host.
    pub(crate) fn user_emulator(self) -> &'static str {
        match self {
            Arch::Amd64 => "qemu-x86_64-static",
            Arch::Arm64 => "qemu-aarch64-static",
        }
    }
}
