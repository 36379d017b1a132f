//! kubenpu-pods: a private containerd and pods on it, driven from a shell
//! script (the VM tests and the demo use it inside the guest).
//!
//! ```text
//! kubenpu-pods containerd --dir D [--oci-hook 'PROGRAM ARGS'] runs containerd until SIGTERM, then removes every pod
//! kubenpu-pods image --dir D --name N --binary B [--entrypoint ...]
//! kubenpu-pods pod --dir D --pod NS/NAME/UID --container NAME=COMMAND... [--device P] [--mount H:C] [--privileged]
//! kubenpu-pods stop --dir D SANDBOX          stops a pod and keeps it, as a finished pod's
//! kubenpu-pods remove --dir D SANDBOX
//! kubenpu-pods podresources --socket S --state F --calls L   kubelet's PodResources API until SIGTERM
//! kubenpu-pods not-grpc --socket S           something else on kubelet's socket until SIGTERM
//! kubenpu-pods scheduler --name N [--partial]  someone else's sched_ext scheduler until SIGTERM
//! ```

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context;
use clap::{Parser, Subcommand};
use kubenpu_pods::{ContainerSpec, Containerd, Kubelet, PodSpec, image::Image};

#[derive(Parser)]
#[command(about = "A private containerd and pods on it, created through CRI as kubelet does")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run containerd with everything under --dir until SIGTERM or SIGINT;
    /// then remove every pod and stop it.
    Containerd {
        #[arg(long)]
        dir: PathBuf,
        /// An OCI createRuntime hook for every container: the program,
        /// then its arguments, split at spaces.
        #[arg(long)]
        oci_hook: Option<String>,
    },
    /// Build an image of busybox plus binaries (with their libraries) and
    /// import it; also imports the pod sandbox image.
    Image {
        #[arg(long)]
        dir: PathBuf,
        /// Full reference, e.g. localhost/kubenpu/workload:demo.
        #[arg(long)]
        name: String,
        /// An executable to place at /bin/<its name>.
        #[arg(long = "binary")]
        binaries: Vec<PathBuf>,
    },
    /// Create a pod and start its containers; prints the sandbox id.
    Pod {
        #[arg(long)]
        dir: PathBuf,
        /// NAMESPACE/NAME/UID.
        #[arg(long, value_parser = parse_pod)]
        pod: PodSpec,
        /// The image every container runs.
        #[arg(long)]
        image: String,
        /// NAME=COMMAND, run by /bin/sh -c in the container.
        #[arg(long = "container", required = true)]
        containers: Vec<String>,
        /// A device node passed to every container.
        #[arg(long = "device")]
        devices: Vec<String>,
        /// HOST:CONTAINER, a directory mounted into every container.
        #[arg(long = "mount")]
        mounts: Vec<String>,
        /// Run every container privileged: it gets every device node of
        /// the host, as a `privileged: true` security context gives.
        #[arg(long)]
        privileged: bool,
    },
    /// Serve kubelet's PodResources API on --socket, answering from the
    /// JSON file --state (read on every call), until SIGTERM or SIGINT.
    Podresources {
        #[arg(long)]
        socket: PathBuf,
        #[arg(long)]
        state: PathBuf,
        /// Each call is appended here, one line each.
        #[arg(long)]
        calls: PathBuf,
    },
    /// Stop a pod and keep it: the runtime lists it as not ready, as a
    /// finished pod kubelet has not removed yet.
    Stop {
        #[arg(long)]
        dir: PathBuf,
        /// The sandbox id `pod` printed.
        sandbox: String,
    },
    /// Answer every connection on --socket with an HTTP error instead of
    /// gRPC, until SIGTERM or SIGINT: what a client sees where something
    /// else took kubelet's socket path.
    NotGrpc {
        #[arg(long)]
        socket: PathBuf,
    },
    /// Load a sched_ext scheduler of sched_ext's defaults only (one
    /// global queue), named --name, until SIGTERM or SIGINT: a scheduler
    /// someone else loaded, which the agent must never replace. With
    /// --partial, it schedules only tasks of policy SCHED_EXT
    /// (`SCX_OPS_SWITCH_PARTIAL`).
    Scheduler {
        #[arg(long)]
        name: String,
        #[arg(long)]
        partial: bool,
    },
    /// Stop and remove a pod.
    Remove {
        #[arg(long)]
        dir: PathBuf,
        /// The sandbox id `pod` printed.
        sandbox: String,
    },
}

fn parse_pod(spec: &str) -> Result<PodSpec, String> {
    match spec.split('/').collect::<Vec<_>>()[..] {
        [namespace, name, uid] if !namespace.is_empty() && !name.is_empty() && !uid.is_empty() => {
            Ok(PodSpec {
                namespace: namespace.into(),
                name: name.into(),
                uid: uid.into(),
                privileged: false,
            })
        }
        _ => Err(format!("{spec:?} is not NAMESPACE/NAME/UID")),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kubenpu-pods: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Containerd { dir, oci_hook } => {
            let hook: Vec<String> = oci_hook
                .iter()
                .flat_map(|hook| hook.split_whitespace().map(str::to_owned))
                .collect();
            let containerd = Containerd::start_with_hook(&dir, &hook)?;
            eprintln!(
                "kubenpu-pods: containerd ready at {}",
                containerd.socket().display()
            );
            let mut terminate =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                _ = terminate.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            // Dropping it removes every pod, then stops containerd.
            drop(containerd);
        }
        Command::Scheduler { name, partial } => {
            let _link = kubenpu::placement::scheduler::load_defaults(&name, partial)?;
            eprintln!("kubenpu-pods: scheduler {name} loaded");
            let mut terminate =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                _ = terminate.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Command::Image {
            dir,
            name,
            binaries,
        } => {
            let containerd = Containerd::attach(&dir)?;
            Image::pause().import(&containerd, &dir)?;
            let mut image = Image::busybox(&name, &["/bin/sh"]);
            for binary in &binaries {
                image = image.with_binary(binary)?;
            }
            image.import(&containerd, &dir)?;
        }
        Command::Pod {
            dir,
            mut pod,
            image,
            containers,
            devices,
            mounts,
            privileged,
        } => {
            pod.privileged = privileged;
            let mounts: Vec<(String, String)> = mounts
                .iter()
                .map(|m| {
                    m.split_once(':')
                        .map(|(h, c)| (h.to_owned(), c.to_owned()))
                        .with_context(|| format!("--mount {m:?} is not HOST:CONTAINER"))
                })
                .collect::<anyhow::Result<_>>()?;
            let mut kubelet = Kubelet::connect(&Containerd::attach(&dir)?.socket()).await?;
            let sandbox = kubelet.run_pod(&pod).await?;
            for container in &containers {
                let (name, command) = container
                    .split_once('=')
                    .with_context(|| format!("--container {container:?} is not NAME=COMMAND"))?;
                let spec = ContainerSpec {
                    name: name.to_owned(),
                    image: image.clone(),
                    command: vec!["/bin/sh".into(), "-c".into(), command.to_owned()],
                    devices: devices.clone(),
                    mounts: mounts.clone(),
                };
                kubelet.run_container(&sandbox, &pod, &spec).await?;
            }
            println!("{sandbox}");
        }
        Command::Podresources {
            socket,
            state,
            calls,
        } => {
            kubenpu_pods::podresources::serve(&socket, state, calls, terminated()?).await?;
        }
        Command::NotGrpc { socket } => {
            kubenpu_pods::podresources::serve_not_grpc(&socket, terminated()?).await?;
        }
        Command::Stop { dir, sandbox } => {
            let mut kubelet = Kubelet::connect(&Containerd::attach(&dir)?.socket()).await?;
            kubelet.stop_pod(&sandbox).await?;
        }
        Command::Remove { dir, sandbox } => {
            let mut kubelet = Kubelet::connect(&Containerd::attach(&dir)?.socket()).await?;
            kubelet.remove_pod(&sandbox).await?;
        }
    }
    Ok(())
}

/// Completes on SIGTERM or SIGINT.
fn terminated() -> anyhow::Result<impl Future<Output = ()>> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    })
}
