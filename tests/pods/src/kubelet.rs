//! Creating pods through CRI as kubelet does: the same cgroup parent
//! (`/kubepods/besteffort/pod<uid>` under the cgroupfs driver), the same
//! `io.kubernetes.*` labels on sandboxes and containers, host networking.

use std::{collections::HashMap, path::Path, time::Duration};

use anyhow::Context;
use k8s_cri::v1::{
    ContainerConfig, ContainerMetadata, CreateContainerRequest, Device, ImageSpec,
    LinuxContainerConfig, LinuxContainerSecurityContext, LinuxPodSandboxConfig,
    LinuxSandboxSecurityContext, ListPodSandboxRequest, Mount, NamespaceMode, NamespaceOption,
    PodSandboxConfig, PodSandboxMetadata, RemovePodSandboxRequest, RunPodSandboxRequest,
    StartContainerRequest, StopPodSandboxRequest, runtime_service_client::RuntimeServiceClient,
};
use tonic::transport::Channel;

/// A pod's identity.
#[derive(Debug, Clone)]
pub struct PodSpec {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its UID.
    pub uid: String,
    /// Whether its containers run privileged, as `privileged: true` in
    /// their security context makes them: the runtime then gives them
    /// every device node of the host, and kubelet makes the sandbox
    /// privileged too.
    pub privileged: bool,
}

/// One container of a pod.
#[derive(Debug, Clone)]
pub struct ContainerSpec {
    /// Its name in the pod.
    pub name: String,
    /// An image already imported into the runtime.
    pub image: String,
    /// What it runs (replaces the image's entrypoint).
    pub command: Vec<String>,
    /// Device nodes passed through at the same path, read-write.
    pub devices: Vec<String>,
    /// Host directories mounted read-write: (host path, container path).
    pub mounts: Vec<(String, String)>,
}

/// A CRI client acting as kubelet.
pub struct Kubelet {
    runtime: RuntimeServiceClient<Channel>,
}

impl Kubelet {
    /// Connects to the runtime at `socket`.
    pub async fn connect(socket: &Path) -> anyhow::Result<Self> {
        let channel = kubenpu::attribution::cri::connect_unix(socket, Duration::from_secs(60))
            .await
            .map_err(|e| anyhow::anyhow!("cannot connect to {}: {e}", socket.display()))?;
        Ok(Self {
            runtime: RuntimeServiceClient::new(channel),
        })
    }

    /// Runs the pod's sandbox; returns its id.
    pub async fn run_pod(&mut self, pod: &PodSpec) -> anyhow::Result<String> {
        let response = self
            .runtime
            .run_pod_sandbox(RunPodSandboxRequest {
                config: Some(sandbox_config(pod)),
                runtime_handler: String::new(),
            })
            .await
            .with_context(|| format!("RunPodSandbox {}/{}", pod.namespace, pod.name))?;
        Ok(response.into_inner().pod_sandbox_id)
    }

    /// Creates and starts a container in the pod; returns its id.
    pub async fn run_container(
        &mut self,
        sandbox: &str,
        pod: &PodSpec,
        container: &ContainerSpec,
    ) -> anyhow::Result<String> {
        let labels = HashMap::from([
            (
                "io.kubernetes.container.name".to_owned(),
                container.name.clone(),
            ),
            ("io.kubernetes.pod.name".to_owned(), pod.name.clone()),
            (
                "io.kubernetes.pod.namespace".to_owned(),
                pod.namespace.clone(),
            ),
            ("io.kubernetes.pod.uid".to_owned(), pod.uid.clone()),
        ]);
        let config = ContainerConfig {
            metadata: Some(ContainerMetadata {
                name: container.name.clone(),
                attempt: 0,
            }),
            image: Some(ImageSpec {
                image: container.image.clone(),
                ..Default::default()
            }),
            command: container.command.clone(),
            devices: container
                .devices
                .iter()
                .map(|path| Device {
                    container_path: path.clone(),
                    host_path: path.clone(),
                    permissions: "rw".to_owned(),
                })
                .collect(),
            mounts: container
                .mounts
                .iter()
                .map(|(host, path)| Mount {
                    host_path: host.clone(),
                    container_path: path.clone(),
                    ..Default::default()
                })
                .collect(),
            labels,
            linux: Some(LinuxContainerConfig {
                security_context: Some(LinuxContainerSecurityContext {
                    namespace_options: Some(host_network()),
                    privileged: pod.privileged,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let id = self
            .runtime
            .create_container(CreateContainerRequest {
                pod_sandbox_id: sandbox.to_owned(),
                config: Some(config),
                sandbox_config: Some(sandbox_config(pod)),
            })
            .await
            .with_context(|| format!("CreateContainer {}", container.name))?
            .into_inner()
            .container_id;
        self.runtime
            .start_container(StartContainerRequest {
                container_id: id.clone(),
            })
            .await
            .with_context(|| format!("StartContainer {}", container.name))?;
        Ok(id)
    }

    /// Stops and removes every pod, as a drained node's kubelet would.
    pub async fn remove_all_pods(&mut self) -> anyhow::Result<()> {
        let sandboxes = self
            .runtime
            .list_pod_sandbox(ListPodSandboxRequest { filter: None })
            .await
            .context("ListPodSandbox")?
            .into_inner()
            .items;
        for sandbox in sandboxes {
            self.remove_pod(&sandbox.id).await?;
        }
        Ok(())
    }

    /// Stops and removes the pod with all its containers.
    pub async fn remove_pod(&mut self, sandbox: &str) -> anyhow::Result<()> {
        self.stop_pod(sandbox).await?;
        self.runtime
            .remove_pod_sandbox(RemovePodSandboxRequest {
                pod_sandbox_id: sandbox.to_owned(),
            })
            .await
            .context("RemovePodSandbox")?;
        Ok(())
    }

    /// Stops a pod and keeps it, as kubelet keeps a finished pod's
    /// sandbox for a while: the runtime lists it as not ready.
    pub async fn stop_pod(&mut self, sandbox: &str) -> anyhow::Result<()> {
        self.runtime
            .stop_pod_sandbox(StopPodSandboxRequest {
                pod_sandbox_id: sandbox.to_owned(),
            })
            .await
            .context("StopPodSandbox")?;
        Ok(())
    }
}

fn sandbox_config(pod: &PodSpec) -> PodSandboxConfig {
    PodSandboxConfig {
        metadata: Some(PodSandboxMetadata {
            name: pod.name.clone(),
            uid: pod.uid.clone(),
            namespace: pod.namespace.clone(),
            attempt: 0,
        }),
        // A host-network pod shares the node's UTS namespace: no hostname.
        labels: HashMap::from([
            ("io.kubernetes.pod.name".to_owned(), pod.name.clone()),
            (
                "io.kubernetes.pod.namespace".to_owned(),
                pod.namespace.clone(),
            ),
            ("io.kubernetes.pod.uid".to_owned(), pod.uid.clone()),
        ]),
        linux: Some(LinuxPodSandboxConfig {
            cgroup_parent: format!("/kubepods/besteffort/pod{}", pod.uid),
            security_context: Some(LinuxSandboxSecurityContext {
                namespace_options: Some(host_network()),
                privileged: pod.privileged,
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Host network (no CNI needed), the pod's own PID and IPC namespaces.
fn host_network() -> NamespaceOption {
    NamespaceOption {
        network: NamespaceMode::Node as i32,
        pid: NamespaceMode::Container as i32,
        ipc: NamespaceMode::Pod as i32,
        ..Default::default()
    }
}
