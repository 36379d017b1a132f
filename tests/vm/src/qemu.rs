//! One boot of a kernel under qemu: build the initramfs, start the machine,
//! watch the serial console for the status line, enforce the timeout.

use std::{
    io::{BufRead as _, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    thread::{self, JoinHandle},
    time::{Duration, Instant, SystemTime},
};

use anyhow::{Context as _, Result, bail};

use crate::{
    Arch, Kernel, display::GlDisplay, initramfs, mesa, modules::ModuleIndex, userland::Userland,
};

/// Modules every guest loads: the two DRM devices and the shared directory.
const BASE_MODULES: &[&str] = &["virtio_pci", "virtio_gpu", "vgem", "9pnet_virtio", "9p"];

/// Lines of console shown when a run fails.
const TAIL_LINES: usize = 40;

/// How the kernel begins a report of its own failure, after the `[`
/// of its message's timestamp (a command's output may say the same
/// words). Under TCG a guest has crashed while kernel text was patched;
/// the report's first lines say where, and the last lines of the console
/// only hold its stack.
const KERNEL_REPORTS: [&str; 6] = [
    "BUG: ",
    "Oops: ",
    "general protection fault",
    "invalid opcode: ",
    "int3: ",
    "Kernel panic - not syncing",
];

/// Lines of a kernel's report shown before the console's last lines.
const REPORT_LINES: usize = 60;

/// A virtual machine to boot once, configured with the builder methods.
pub struct Vm {
    kernel: Kernel,
    modules: Vec<String>,
    binaries: Vec<(PathBuf, String)>,
    system_binaries: Vec<String>,
    files: Vec<(String, u32, Vec<u8>)>,
    devices: Vec<String>,
    shared: Option<PathBuf>,
    gpu_3d: bool,
    forwards: Vec<(u16, u16)>,
    timeout: Duration,
    cpus: u32,
    memory_mib: u32,
    numa_nodes: u32,
    /// The device behind the last NUMA node's bridge; none for virtio-gpu.
    remote_device: Option<String>,
    echo: bool,
    kernel_args: Vec<String>,
}

/// What a finished run reports.
#[derive(Debug)]
pub struct Outcome {
    /// The command's exit status inside the guest.
    pub status: i32,
    /// What the command printed (stdout and stderr, as the console shows it).
    pub output: String,
    /// The whole serial console, kernel messages included.
    pub console: String,
}

/// qemu's virtio-gpu device, which every VM has.
const VIRTIO_GPU: &str = "virtio-gpu-pci";

/// virtio-gpu with 3D (virgl), rendered by the host's OpenGL.
const VIRTIO_GPU_GL: &str = "virtio-gpu-gl-pci";

/// Where the guest finds the list of read-only shares to mount, as
/// `TAG PATH` lines.
const SHARES_PATH: &str = "/etc/kubenpu-vm/shares";

impl Vm {
    /// A VM booting `kernel` with the base modules, 2 vCPUs, 1 GiB of memory
    /// and a 180 s timeout.
    pub fn new(kernel: Kernel) -> Self {
        Self {
            kernel,
            modules: Vec::new(),
            binaries: Vec::new(),
            system_binaries: Vec::new(),
            files: Vec::new(),
            devices: Vec::new(),
            shared: None,
            gpu_3d: false,
            forwards: Vec::new(),
            timeout: Duration::from_secs(180),
            cpus: 2,
            memory_mib: 1024,
            numa_nodes: 1,
            remote_device: None,
            echo: false,
            kernel_args: Vec::new(),
        }
    }

    /// Loads another module (and what it depends on) before the command.
    pub fn module(mut self, name: &str) -> Self {
        self.modules.push(name.to_owned());
        self
    }

    /// Adds a qemu device (`-device SPEC`), e.g. `bochs-display` for a DRM
    /// device no KubeNPU vendor claims; load its driver with [`Vm::module`].
    pub fn device(mut self, spec: &str) -> Self {
        self.devices.push(spec.to_owned());
        self
    }

    /// Carries an executable of the guest's architecture, and the
    /// libraries it links, to `/usr/local/bin/<file name>` in the guest.
    pub fn binary(mut self, host: impl Into<PathBuf>) -> Self {
        let host = host.into();
        let name = host
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        self.binaries.push((host, format!("/usr/local/bin/{name}")));
        self
    }

    /// Carries a program of the guest architecture's Debian userland, and
    /// the libraries it links, to the same path in the guest: this host's
    /// own for an x86_64 guest (`scripts/setup` installs it), Debian 12's
    /// arm64 package for an arm64 one.
    pub fn system_binary(mut self, path: &str) -> Self {
        self.system_binaries.push(path.to_owned());
        self
    }

    /// The kernel it boots.
    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// Places a file in the guest.
    pub fn file(mut self, guest: &str, mode: u32, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((guest.to_owned(), mode, bytes.into()));
        self
    }

    /// Shares a host directory with the guest; the command runs in it, at
    /// `/shared`. Without one, a temporary directory is shared.
    pub fn shared_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.shared = Some(dir.into());
        self
    }

    /// Makes virtio-gpu 3D-capable (qemu's `virtio-gpu-gl-pci`, whose
    /// virgl commands the host's Mesa runs in qemu's SDL window, on a
    /// private Xvfb unless `DISPLAY` is set), and mounts the Mesa root,
    /// Debian 12's OpenGL clients, drivers and strace, read-only at
    /// `/mesa`; `in-mesa PROGRAM [ARG]...` runs one of its programs.
    /// x86_64 guests only.
    pub fn gpu_3d(mut self, on: bool) -> Self {
        self.gpu_3d = on;
        self
    }

    /// Gives the guest a network card (10.0.2.15, qemu's user network) and
    /// forwards TCP port `host` on the host's loopback to port `guest` in
    /// the guest, so a host process can reach a guest server.
    pub fn forward(mut self, host: u16, guest: u16) -> Self {
        self.forwards.push((host, guest));
        self
    }

    /// Fails the run if the guest has not reported a status by then.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets the number of virtual CPUs.
    pub fn cpus(mut self, cpus: u32) -> Self {
        self.cpus = cpus;
        self
    }

    /// Splits the vCPUs and the memory evenly into `nodes` NUMA nodes, and
    /// puts virtio-gpu (or the device `on_the_last_node` names) behind a
    /// PCI expander bridge on the last one, so the guest's sysfs gives the
    /// device that `numa_node` (x86_64 guests: the bridge is the `pc`
    /// machine's).
    pub fn numa_nodes(mut self, nodes: u32) -> Self {
        self.numa_nodes = nodes;
        self
    }

    /// With several NUMA nodes, puts qemu's `device` (such as
    /// `bochs-display`) behind the last node's bridge instead of
    /// virtio-gpu, which stays first on the main bus.
    pub fn on_the_last_node(mut self, device: &str) -> Self {
        self.remote_device = Some(device.into());
        self
    }

    /// Adds `arg` to the kernel's command line (such as an `lsm=` list).
    pub fn kernel_arg(mut self, arg: &str) -> Self {
        self.kernel_args.push(arg.into());
        self
    }

    /// Prints the command's output to stdout as it arrives.
    pub fn echo(mut self, echo: bool) -> Self {
        self.echo = echo;
        self
    }

    /// Boots the VM, runs `command` with `/bin/sh` as root and returns its
    /// exit status and output. A guest that fails to set up, powers off
    /// without a status or outlives the timeout is an error carrying the
    /// tail of the console.
    pub fn run(self, command: &str) -> Result<Outcome> {
        if self.numa_nodes > 1 {
            anyhow::ensure!(
                self.kernel.arch() == Arch::Amd64,
                "NUMA guests are x86_64 only (the expander bridge is the pc machine's)"
            );
            anyhow::ensure!(
                self.cpus.is_multiple_of(self.numa_nodes),
                "{} vCPUs do not split evenly into {} NUMA nodes",
                self.cpus,
                self.numa_nodes
            );
        }
        if self.gpu_3d {
            anyhow::ensure!(
                self.kernel.arch() == mesa::ARCH,
                "--gpu-3d is for x86_64 guests only: the Mesa root holds Debian's amd64 packages"
            );
            // Before the Mesa root's download, which takes a while.
            GlDisplay::check(self.kernel.arch().qemu())?;
        }
        let read_only = match self.gpu_3d {
            true => vec![(mesa::root()?, mesa::GUEST_PATH.to_owned())],
            false => Vec::new(),
        };
        let image = self.kernel.fetch()?;
        let index = ModuleIndex::load(&image.modules)?;
        let wanted: Vec<&str> = BASE_MODULES
            .iter()
            .copied()
            .chain(self.modules.iter().map(String::as_str))
            .chain((!self.forwards.is_empty()).then_some("virtio_net"))
            .collect();
        let modules = index.load_order(&wanted)?;
        let userland = Userland::of(self.kernel.arch())?;
        let mut binaries = self.binaries.clone();
        for path in &self.system_binaries {
            binaries.push((userland.path(path)?, path.clone()));
        }
        let mut files = self.files.clone();
        if !read_only.is_empty() {
            let list: String = read_only
                .iter()
                .enumerate()
                .map(|(i, (_, guest))| format!("{} {guest}\n", share_tag(i)))
                .collect();
            files.push((SHARES_PATH.into(), 0o644, list.into_bytes()));
        }
        if self.gpu_3d {
            files.push(("/usr/local/bin/in-mesa".into(), 0o755, mesa::IN_MESA.into()));
        }
        let nonce = nonce();
        let initramfs = initramfs::build(&initramfs::Contents {
            userland: &userland,
            modules: &modules,
            binaries: &binaries,
            files: &files,
            command,
            nonce: &nonce,
            // The guest's clock starts after its boot: what is left of the
            // timeout covers the boot and the dump.
            dump_after: self.timeout * 17 / 20,
        })?;

        let scratch = tempfile::tempdir()?;
        let initrd = scratch.path().join("initramfs.cpio");
        std::fs::write(&initrd, initramfs)?;
        let shared = match &self.shared {
            Some(dir) => dir.clone(),
            None => scratch.path().join("shared"),
        };
        std::fs::create_dir_all(&shared)
            .with_context(|| format!("creating {}", shared.display()))?;

        let display = self.gpu_3d.then(GlDisplay::open).transpose()?;
        let host = Host {
            shared: &shared,
            read_only: &read_only,
            display: display.as_ref().map(GlDisplay::name),
        };
        let boot = || self.boot(&image.vmlinuz, &initrd, &host, &nonce);
        let (mut finished, mut transcript) = boot()?;
        // Under TCG a guest kernel has, rarely, panicked in a timer interrupt
        // while booting. Nothing of ours ran yet, so it is booted once more.
        if transcript.panicked_before(&nonce) {
            eprintln!(
                "kubenpu-vm: the {} kernel panicked before the command started; booting it again",
                self.kernel
            );
            (finished, transcript) = boot()?;
        }
        // The cause first: the command and the console tail are long.
        finished
            .and_then(|()| transcript.outcome(&nonce))
            .map_err(|cause| {
                anyhow::anyhow!(
                    "{cause:#} (running {command:?} on the {} kernel {}); last console lines:\n{}",
                    self.kernel,
                    image.release,
                    transcript.tail(&nonce)
                )
            })
    }

    /// Boots the guest once: whether qemu finished in time, and what it
    /// printed.
    fn boot(
        &self,
        vmlinuz: &Path,
        initrd: &Path,
        host: &Host<'_>,
        nonce: &str,
    ) -> Result<(Result<()>, Transcript)> {
        let qemu = self.kernel.arch().qemu();
        let mut child = self
            .qemu(vmlinuz, initrd, host)
            .spawn()
            .map_err(|e| anyhow::anyhow!("cannot start {qemu} ({e}): run scripts/setup"))?;
        let console = watch_console(&mut child, nonce, self.echo);
        let finished = wait(&mut child, self.timeout);
        // On a timeout, stop the guest; either way reap it so its pipes close.
        let _ = child.kill();
        let _ = child.wait();
        Ok((finished, console.finish()))
    }

    fn qemu(&self, vmlinuz: &Path, initrd: &Path, host: &Host<'_>) -> Command {
        let arch = self.kernel.arch();
        let mut cmd = Command::new(arch.qemu());
        cmd.args(["-accel", &accelerator(arch)])
            .args(arch.machine())
            .args([
                "-smp",
                &self.cpus.to_string(),
                "-m",
                &self.memory_mib.to_string(),
            ])
            .args(["-nodefaults", "-no-user-config", "-no-reboot"])
            .args(["-display", self.display()])
            .args(["-serial", "stdio", "-monitor", "none"])
            .arg("-kernel")
            .arg(vmlinuz)
            .arg("-initrd")
            .arg(initrd)
            .arg("-append")
            .arg(
                [format!(
                    "console={} panic=-1 quiet loglevel=3",
                    arch.console()
                )]
                .into_iter()
                .chain(self.kernel_args.iter().cloned())
                .collect::<Vec<_>>()
                .join(" "),
            )
            .args(self.gpu_on_the_main_bus().into_iter().flatten())
            .args(self.devices.iter().flat_map(|d| ["-device", d.as_str()]))
            .arg("-fsdev")
            .arg(format!(
                "local,id=shared,path={},security_model=none",
                host.shared.display()
            ))
            .args(["-device", "virtio-9p-pci,fsdev=shared,mount_tag=shared"]);
        for (i, (dir, _)) in host.read_only.iter().enumerate() {
            let tag = share_tag(i);
            cmd.arg("-fsdev")
                .arg(format!(
                    "local,id={tag},path={},security_model=none,readonly=on",
                    dir.display()
                ))
                .args([
                    "-device",
                    &format!("virtio-9p-pci,fsdev={tag},mount_tag={tag}"),
                ]);
        }
        if let Some(display) = host.display {
            cmd.env("DISPLAY", display);
        }
        if !self.forwards.is_empty() {
            let forwards: String = self
                .forwards
                .iter()
                .map(|(host, guest)| format!(",hostfwd=tcp:127.0.0.1:{host}-:{guest}"))
                .collect();
            cmd.args(["-netdev", &format!("user,id=net0{forwards}")])
                .args(["-device", "virtio-net-pci,netdev=net0"]);
        }
        // Last: qemu would put a device without a bus behind an expander
        // bridge created before it, where only bridges may go.
        cmd.args(self.numa());
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }
}

/// What a boot uses of the host besides the kernel and the initramfs.
struct Host<'a> {
    /// The directory shared read-write at `/shared`.
    shared: &'a Path,
    /// Directories shared read-only: (host, guest path).
    read_only: &'a [(PathBuf, String)],
    /// The X display of a 3D virtio-gpu's window.
    display: Option<&'a str>,
}

/// The 9p tag of the `i`th read-only share.
fn share_tag(i: usize) -> String {
    format!("ro{i}")
}

impl Vm {
    /// The virtio-gpu device: 3D or not.
    fn gpu(&self) -> &'static str {
        if self.gpu_3d {
            VIRTIO_GPU_GL
        } else {
            VIRTIO_GPU
        }
    }

    /// qemu's display: a window with an OpenGL context for a 3D
    /// virtio-gpu, which renders in it, else none.
    fn display(&self) -> &'static str {
        if self.gpu_3d { "sdl,gl=on" } else { "none" }
    }

    /// virtio-gpu's option where it is the first device (`0000:00:02.0`):
    /// unless it is behind the last NUMA node's bridge.
    fn gpu_on_the_main_bus(&self) -> Option<[&'static str; 2]> {
        (self.numa_nodes <= 1 || self.remote_device.is_some()).then(|| ["-device", self.gpu()])
    }

    /// With more than one NUMA node, their options and the remote
    /// device's: on the last node, behind a PCI expander bridge (its ACPI
    /// proximity is the node).
    fn numa(&self) -> Vec<String> {
        let nodes = self.numa_nodes;
        if nodes <= 1 {
            return Vec::new();
        }
        let (cpus, memory) = (self.cpus / nodes, self.memory_mib / nodes);
        let mut args = Vec::new();
        for node in 0..nodes {
            let first = node * cpus;
            args.extend([
                "-object".into(),
                format!("memory-backend-ram,id=node{node},size={memory}M"),
                "-numa".into(),
                format!(
                    "node,nodeid={node},cpus={first}-{},memdev=node{node}",
                    first + cpus - 1
                ),
            ]);
        }
        let last = nodes - 1;
        args.extend([
            "-device".into(),
            format!("pxb,id=numa{last},bus_nr=64,numa_node={last},bus=pci.0"),
            "-device".into(),
            format!(
                "{},bus=numa{last}",
                self.remote_device.as_deref().unwrap_or(self.gpu())
            ),
        ]);
        args
    }
}

/// TCG unless `KUBENPU_VM_ACCEL` asks for another accelerator: KVM is only
/// used where someone has seen it work, and never for another
/// architecture than the host's, which only TCG emulates.
///
/// An x86_64 guest's vCPUs run in one host thread (`thread=single`).
/// With a host thread per vCPU, guests oopsed on `int3` in code that
/// another CPU had just patched: in `__schedule` as the agent attached
/// its kprobes (ftrace patching), and in `update_rq_clock` as sched_ext
/// flipped its static keys. The kernel's text patching (`text_poke_bp`)
/// is safe on hardware; multi-threaded TCG ran a stale translation of
/// the patched bytes. In one thread the vCPUs take turns, and the suite
/// still keeps both host cores busy with two guests at a time.
fn accelerator(arch: Arch) -> String {
    std::env::var("KUBENPU_VM_ACCEL")
        .ok()
        .filter(|a| !a.is_empty() && Arch::host().is_ok_and(|host| host == arch))
        .unwrap_or_else(|| match arch {
            Arch::Amd64 => "tcg,thread=single".into(),
            _ => "tcg".into(),
        })
}

/// A marker no command output will contain by chance.
fn nonce() -> String {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    format!("kubenpu-vm-{:x}-{:x}", std::process::id(), now.as_nanos())
}

/// The reader threads collecting qemu's serial console and its own
/// diagnostics until it exits.
struct Console {
    serial: JoinHandle<Vec<String>>,
    diagnostics: JoinHandle<Vec<String>>,
}

fn watch_console(child: &mut Child, nonce: &str, echo: bool) -> Console {
    let stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let begin = format!("{nonce} begin");
    let status = format!("{nonce} ");
    let serial = thread::spawn(move || {
        let mut in_command = false;
        let mut lines = Vec::new();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let line = line.trim_end_matches('\r').to_owned();
            if line == begin {
                in_command = true;
            } else if line.starts_with(&status) {
                in_command = false;
            } else if echo && in_command {
                println!("{line}");
            }
            lines.push(line);
        }
        lines
    });
    let diagnostics = thread::spawn(move || {
        BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
            .map(|l| format!("qemu: {l}"))
            .collect()
    });
    Console {
        serial,
        diagnostics,
    }
}

impl Console {
    /// Everything qemu printed; call once it has exited.
    fn finish(self) -> Transcript {
        let mut lines = self.serial.join().unwrap_or_default();
        lines.extend(self.diagnostics.join().unwrap_or_default());
        Transcript { lines }
    }
}

/// The console of a finished run.
struct Transcript {
    lines: Vec<String>,
}

impl Transcript {
    /// The last lines of the console; where init dumped the tasks of a
    /// guest that hung, everything from the dump on; where the kernel
    /// reported its own failure (an oops, a panic), that report first,
    /// then the last lines. A kernel that never started init is said so
    /// in one line before them.
    fn tail(&self, nonce: &str) -> String {
        let last = self.lines.len().saturating_sub(TAIL_LINES);
        let shown = match (self.marked(nonce, "hung:"), self.kernel_report()) {
            (Some(dump), _) => self.lines[dump..].join("\n"),
            (None, Some(report)) if report + REPORT_LINES < last => format!(
                "{}\n[...]\n{}",
                self.lines[report..report + REPORT_LINES].join("\n"),
                self.lines[last..].join("\n")
            ),
            (None, Some(report)) => self.lines[report..].join("\n"),
            (None, None) => self.lines[last..].join("\n"),
        };
        if self.marked(nonce, "init").is_none() {
            format!("(the kernel never started init)\n{shown}")
        } else {
            shown
        }
    }

    /// The first line of the kernel's report of its own failure.
    fn kernel_report(&self) -> Option<usize> {
        self.lines.iter().position(|l| {
            l.starts_with('[') && KERNEL_REPORTS.iter().any(|report| l.contains(report))
        })
    }

    /// The first line init marked with `what`.
    fn marked(&self, nonce: &str, what: &str) -> Option<usize> {
        self.lines.iter().position(|l| {
            l.strip_prefix(nonce)
                .is_some_and(|rest| rest.trim_start().starts_with(what))
        })
    }

    /// Whether the kernel panicked before init started the command.
    fn panicked_before(&self, nonce: &str) -> bool {
        self.marked(nonce, "begin").is_none()
            && self
                .lines
                .iter()
                .any(|l| l.contains("Kernel panic - not syncing"))
    }

    /// The command's output and status, from the lines init marked.
    fn outcome(&self, nonce: &str) -> Result<Outcome> {
        let marked = |what: &str| self.marked(nonce, what);
        let text = |i: usize| self.lines[i][nonce.len()..].trim();
        if let Some(i) = marked("setup-failed") {
            bail!("the guest's init failed: {}", text(i));
        }
        let begin = marked("begin").context("the guest never started the command")?;
        let end = marked("exit ")
            .context("the guest powered off without reporting the command's exit status")?;
        let status = text(end)
            .strip_prefix("exit ")
            .and_then(|s| s.parse().ok())
            .context("unreadable exit status line")?;
        let output = self.lines[begin + 1..end]
            .iter()
            .map(|l| format!("{l}\n"))
            .collect();
        Ok(Outcome {
            status,
            output,
            console: self.lines.join("\n"),
        })
    }
}

/// Waits for qemu to exit, or fails once the timeout has passed.
fn wait(child: &mut Child, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            if !status.success() {
                bail!("qemu exited with {status}");
            }
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!(
                "the guest did not finish within {} s (timed out)",
                timeout.as_secs()
            );
        }
        thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use super::{Host, Transcript, Vm};
    use crate::Kernel;

    /// qemu's arguments for `vm`, sharing a Mesa root, and its `DISPLAY`.
    fn qemu_args(vm: &Vm) -> (String, Option<String>) {
        let read_only = [(PathBuf::from("mesa-root"), "/mesa".to_owned())];
        let host = Host {
            shared: Path::new("shared"),
            read_only: &read_only,
            display: vm.gpu_3d.then_some(":9"),
        };
        let cmd = vm.qemu(Path::new("vmlinuz"), Path::new("initrd"), &host);
        let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
        let display = cmd
            .get_envs()
            .find(|(key, _)| *key == "DISPLAY")
            .and_then(|(_, value)| value)
            .map(|v| v.to_string_lossy().into_owned());
        (args.join(" "), display)
    }

    #[test]
    fn a_3d_gpu_takes_virtio_gpus_place_with_an_opengl_window() {
        let (args, display) = qemu_args(&Vm::new(Kernel::Sid).gpu_3d(true));
        assert!(args.contains("-display sdl,gl=on"), "{args}");
        assert!(args.contains("-device virtio-gpu-gl-pci "), "{args}");
        assert!(!args.contains("virtio-gpu-pci"), "{args}");
        assert!(
            args.contains("path=mesa-root,security_model=none,readonly=on"),
            "{args}"
        );
        assert_eq!(display.as_deref(), Some(":9"));
        let (args, display) = qemu_args(&Vm::new(Kernel::Sid));
        assert!(args.contains("-display none "), "{args}");
        assert!(args.contains("-device virtio-gpu-pci "), "{args}");
        assert_eq!(display, None);
    }

    #[test]
    fn a_3d_gpu_goes_behind_the_last_nodes_bridge_unless_another_device_does() {
        let vm = Vm::new(Kernel::Sid).gpu_3d(true).cpus(2).numa_nodes(2);
        let (args, _) = qemu_args(&vm);
        assert!(
            args.ends_with("-device virtio-gpu-gl-pci,bus=numa1"),
            "{args}"
        );
        assert_eq!(args.matches("virtio-gpu-gl-pci").count(), 1, "{args}");
        let (args, _) = qemu_args(&vm.on_the_last_node("bochs-display"));
        assert!(args.contains("-device virtio-gpu-gl-pci "), "{args}");
        assert!(args.ends_with("-device bochs-display,bus=numa1"), "{args}");
    }

    fn transcript(lines: &[&str]) -> Transcript {
        Transcript {
            lines: lines.iter().map(|l| (*l).to_owned()).collect(),
        }
    }

    /// A console whose command began, then `header` and `count` lines of
    /// `stack`.
    fn begun_then(header: &'static str, stack: &'static str, count: usize) -> Vec<&'static str> {
        let mut lines = vec!["N0NCE init", "N0NCE begin", header];
        lines.extend(std::iter::repeat_n(stack, count));
        lines
    }

    #[test]
    fn only_a_panic_before_the_command_counts_as_a_boot_failure() {
        let panic = "[    2.643937] Kernel panic - not syncing: Fatal exception in interrupt";
        assert!(transcript(&["booting", panic]).panicked_before("N0NCE"));
        assert!(!transcript(&["N0NCE begin", panic]).panicked_before("N0NCE"));
        assert!(!transcript(&["booting", "N0NCE setup-failed: no 9p"]).panicked_before("N0NCE"));
    }

    #[test]
    fn a_hung_command_shows_the_whole_task_dump_else_the_last_lines() {
        let lines = begun_then(
            "N0NCE hung: still running after 153 s; its tasks:",
            "    [<0>] do_wait+0x5d/0x140",
            60,
        );
        let hung = transcript(&lines).tail("N0NCE");
        assert!(hung.starts_with("N0NCE hung:"), "{hung}");
        assert_eq!(hung.lines().count(), 61);
        let mut begun = vec!["N0NCE init"];
        begun.extend(["N0NCE begin"; 60]);
        let quiet = transcript(&begun).tail("N0NCE");
        assert_eq!(quiet.lines().count(), super::TAIL_LINES);
    }

    #[test]
    fn a_kernel_report_is_shown_from_its_first_line_then_the_last_lines() {
        let mut lines = begun_then(
            "[   11.1] Oops: invalid opcode: 0000 [#1] SMP",
            "[   11.2]  __schedule+0x2a7/0x1070",
            200,
        );
        lines.push("[   11.3] Kernel panic - not syncing: Fatal exception in interrupt");
        // The command's own output is not the kernel's.
        lines.insert(2, "BUG: the workload printed this");
        let shown = transcript(&lines).tail("N0NCE");
        assert!(
            shown.starts_with("[   11.1] Oops: invalid opcode"),
            "{shown}"
        );
        assert!(shown.ends_with("Fatal exception in interrupt"), "{shown}");
        assert_eq!(
            shown.lines().count(),
            super::REPORT_LINES + 1 + super::TAIL_LINES
        );
        let short = transcript(&lines[..11]).tail("N0NCE");
        assert!(short.starts_with("[   11.1] Oops:"), "{short}");
        assert_eq!(short.lines().count(), 8);
    }

    #[test]
    fn a_guest_hung_in_its_set_up_shows_the_step_and_one_that_never_ran_init_says_so() {
        let setup = transcript(&["N0NCE init", "N0NCE setup: insmod vgem.ko"]).tail("N0NCE");
        assert!(setup.ends_with("N0NCE setup: insmod vgem.ko"), "{setup}");
        let silent = transcript(&[]).tail("N0NCE");
        assert_eq!(silent.trim(), "(the kernel never started init)");
    }
}
