//! `kubenpu-vm`: fetch the test kernels, or boot one and run a command in it.
//!
//! ```text
//! kubenpu-vm fetch [--all | [--mesa] KERNEL...]
//! kubenpu-vm kernels
//! kubenpu-vm run --kernel sid [--bin PATH]... [--system-bin PATH]... [--share DIR] [--gpu-3d] -- COMMAND...
//! ```

use std::{collections::BTreeSet, path::PathBuf, process::ExitCode, time::Duration};

use anyhow::Result;
use clap::{Parser, Subcommand};
use kubenpu_vm::{Arch, Kernel, Userland, Vm, cache_dir};

#[derive(Parser)]
#[command(
    version,
    about = "Boot Debian kernels with real DRM devices under qemu and run commands in them"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Download and unpack kernels into the cache, and the userland of
    /// each emulated architecture among them (nothing is installed).
    Fetch {
        /// Every kernel the tests use, and the Mesa root.
        #[arg(long, conflicts_with = "kernels")]
        all: bool,
        /// The Mesa root that `run --gpu-3d` mounts at /mesa too.
        #[arg(long)]
        mesa: bool,
        /// Kernels by name: bookworm, bookworm-backports, sid,
        /// bookworm-arm64, sid-arm64.
        kernels: Vec<Kernel>,
    },
    /// List the kernels, their releases and whether they are cached.
    Kernels,
    /// Boot a kernel and run a shell command as root; exits with its status.
    Run {
        /// Which kernel to boot.
        #[arg(long, default_value = "sid")]
        kernel: Kernel,
        /// An executable of the guest's architecture to carry into its
        /// /usr/local/bin.
        #[arg(long = "bin")]
        binaries: Vec<PathBuf>,
        /// A program of the guest architecture's Debian userland to carry
        /// to the same absolute path, e.g. /usr/bin/containerd.
        #[arg(long = "system-bin")]
        system_binaries: Vec<String>,
        /// A file to carry into the guest, as HOST:GUEST.
        #[arg(long = "file", value_parser = parse_file)]
        files: Vec<(PathBuf, String)>,
        /// Host directory shared with the guest at /shared (the command's
        /// working directory).
        #[arg(long)]
        share: Option<PathBuf>,
        /// A 3D-capable virtio-gpu (virgl, rendered by the host's Mesa in
        /// qemu's SDL window on a private Xvfb unless DISPLAY is set), and
        /// Debian's Mesa clients (glmark2-es2-drm, kmscube), drivers and
        /// strace read-only at /mesa: `in-mesa PROGRAM [ARG]...` runs one
        /// (x86_64 guests).
        #[arg(long)]
        gpu_3d: bool,
        /// Another qemu device (`-device SPEC`), e.g. bochs-display.
        #[arg(long = "device")]
        devices: Vec<String>,
        /// Another kernel module to load (with its dependencies).
        #[arg(long = "module")]
        modules: Vec<String>,
        /// Virtual CPUs.
        #[arg(long, default_value_t = 2)]
        cpus: u32,
        /// NUMA nodes, the vCPUs split evenly among them; virtio-gpu sits
        /// behind a PCI expander bridge on the last (x86_64 guests).
        #[arg(long, default_value_t = 1)]
        numa_nodes: u32,
        /// Forward the host's loopback port to a guest port, as HOST:GUEST
        /// (gives the guest a network card).
        #[arg(long = "forward", value_parser = parse_forward)]
        forwards: Vec<(u16, u16)>,
        /// Seconds before an unfinished guest is stopped and the run fails.
        #[arg(long, default_value_t = 180)]
        timeout: u64,
        /// The command, run by /bin/sh in the guest.
        #[arg(required = true, last = true)]
        command: Vec<String>,
    },
}

fn parse_file(spec: &str) -> Result<(PathBuf, String), String> {
    match spec.split_once(':') {
        Some((host, guest)) if guest.starts_with('/') => Ok((host.into(), guest.into())),
        _ => Err(format!(
            "{spec:?} is not HOST:GUEST with an absolute GUEST path"
        )),
    }
}

fn parse_forward(spec: &str) -> Result<(u16, u16), String> {
    spec.split_once(':')
        .and_then(|(host, guest)| Some((host.parse().ok()?, guest.parse().ok()?)))
        .ok_or_else(|| format!("{spec:?} is not HOST:GUEST with two port numbers"))
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kubenpu-vm: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Cmd::Fetch { all, mesa, kernels } => {
            if all || mesa {
                println!("mesa: {}", kubenpu_vm::mesa_root()?.display());
            }
            let kernels = if all || (kernels.is_empty() && !mesa) {
                Kernel::ALL.to_vec()
            } else {
                kernels
            };
            for &kernel in &kernels {
                let image = kernel.fetch()?;
                println!("{kernel}: {} ({})", image.release, image.vmlinuz.display());
            }
            let host = Arch::host()?;
            let emulated: BTreeSet<Arch> = kernels
                .iter()
                .map(|k| k.arch())
                .filter(|&arch| arch != host)
                .collect();
            for arch in emulated {
                let userland = Userland::of(arch)?;
                println!("{} userland: {}", arch.debian(), userland.root().display());
            }
        }
        Cmd::Kernels => {
            println!("cache: {}", cache_dir()?.display());
            for kernel in Kernel::ALL {
                match kernel.cached()? {
                    Some(image) => println!("{kernel}: {}", image.release),
                    None => println!("{kernel}: not fetched"),
                }
            }
        }
        Cmd::Run {
            kernel,
            binaries,
            system_binaries,
            files,
            share,
            gpu_3d,
            devices,
            modules,
            cpus,
            numa_nodes,
            forwards,
            timeout,
            command,
        } => {
            let mut vm = Vm::new(kernel)
                .timeout(Duration::from_secs(timeout))
                .cpus(cpus)
                .numa_nodes(numa_nodes)
                .gpu_3d(gpu_3d)
                .echo(true);
            for device in devices {
                vm = vm.device(&device);
            }
            for (host, guest) in forwards {
                vm = vm.forward(host, guest);
            }
            for module in modules {
                vm = vm.module(&module);
            }
            for binary in binaries {
                vm = vm.binary(binary);
            }
            for path in system_binaries {
                vm = vm.system_binary(&path);
            }
            for (host, guest) in files {
                let bytes = std::fs::read(&host)
                    .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", host.display()))?;
                vm = vm.file(&guest, 0o755, bytes);
            }
            if let Some(dir) = share {
                vm = vm.shared_dir(dir);
            }
            let outcome = vm.run(&command.join(" "))?;
            return Ok(ExitCode::from(
                u8::try_from(outcome.status).unwrap_or(u8::MAX),
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}
