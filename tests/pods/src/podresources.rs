//! A stand-in for kubelet's PodResources server, the one part of a node
//! that cannot be real here: no package registry carries kubelet. It
//! serves the real protocol, generated from the agent's vendored
//! `api.proto`, on a unix socket, and answers from a JSON state file that
//! it reads anew on every call, so a test changes kubelet's answers by
//! rewriting the file (atomically, by rename).
//!
//! Every call is appended to a log file, one line each (`List ok`,
//! `Get ml/train unimplemented`), so a test can see what the agent asked.

use std::{
    io::Write as _,
    path::{Path, PathBuf},
};

use serde::Deserialize;
use tonic::{Request, Response, Status};

/// The generated messages and server.
#[allow(missing_docs, clippy::all, reason = "generated from kubelet's proto")]
pub mod v1 {
    tonic::include_proto!("v1");
}

use v1::pod_resources_lister_server::{PodResourcesLister, PodResourcesListerServer};

/// What kubelet answers, as the state file says it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct State {
    /// The pods `List` returns (and `Get` finds).
    #[serde(default)]
    pub pods: Vec<Pod>,
    /// How `List` answers.
    #[serde(default)]
    pub list: Answer,
    /// How `Get` answers.
    #[serde(default)]
    pub get: Answer,
}

/// How a call answers.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// With the pods.
    #[default]
    Ok,
    /// `ResourceExhausted`, as kubelet's rate limiter does.
    ResourceExhausted,
    /// `Unimplemented`, as a kubelet without the call does.
    Unimplemented,
}

/// A pod.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pod {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its containers.
    pub containers: Vec<Container>,
}

/// A container and what it was given.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Container {
    /// Its name.
    pub name: String,
    /// Device plugin allocations.
    #[serde(default)]
    pub devices: Vec<Devices>,
    /// DRA claims.
    #[serde(default)]
    pub claims: Vec<Claim>,
    /// Exclusive CPUs.
    #[serde(default)]
    pub cpu_ids: Vec<i64>,
}

/// IDs of one resource.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Devices {
    /// The extended resource.
    pub resource: String,
    /// The device plugin's IDs.
    pub ids: Vec<String>,
    /// NUMA nodes of the devices.
    #[serde(default)]
    pub numa: Vec<i64>,
}

/// A DRA claim.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claim {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
    /// Its devices.
    pub devices: Vec<ClaimDevice>,
}

/// One device of a claim.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClaimDevice {
    /// The DRA driver.
    pub driver: String,
    /// Its pool.
    pub pool: String,
    /// Its name in the pool.
    pub device: String,
    /// Fully qualified CDI device names.
    #[serde(default)]
    pub cdi: Vec<String>,
}

impl Pod {
    fn message(&self) -> v1::PodResources {
        v1::PodResources {
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            containers: self.containers.iter().map(Container::message).collect(),
        }
    }
}

impl Container {
    fn message(&self) -> v1::ContainerResources {
        v1::ContainerResources {
            name: self.name.clone(),
            devices: self
                .devices
                .iter()
                .map(|d| v1::ContainerDevices {
                    resource_name: d.resource.clone(),
                    device_ids: d.ids.clone(),
                    topology: (!d.numa.is_empty()).then(|| v1::TopologyInfo {
                        nodes: d.numa.iter().map(|&id| v1::NumaNode { id }).collect(),
                    }),
                })
                .collect(),
            cpu_ids: self.cpu_ids.clone(),
            memory: Vec::new(),
            dynamic_resources: self
                .claims
                .iter()
                .map(|c| v1::DynamicResource {
                    claim_name: c.name.clone(),
                    claim_namespace: c.namespace.clone(),
                    claim_resources: c
                        .devices
                        .iter()
                        .map(|d| v1::ClaimResource {
                            cdi_devices: d
                                .cdi
                                .iter()
                                .map(|name| v1::CdiDevice { name: name.clone() })
                                .collect(),
                            driver_name: d.driver.clone(),
                            pool_name: d.pool.clone(),
                            device_name: d.device.clone(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }
}

/// The server: its state file and its call log.
struct Kubelet {
    state: PathBuf,
    calls: PathBuf,
}

impl Kubelet {
    /// The state now; a missing file is a kubelet with no pods.
    fn state(&self) -> Result<State, Status> {
        match std::fs::read_to_string(&self.state) {
            Ok(text) => serde_json::from_str(&text)
                .map_err(|e| Status::internal(format!("state file {}: {e}", self.state.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(State::default()),
            Err(e) => Err(Status::internal(e.to_string())),
        }
    }

    fn answer(&self, call: &str, answer: Answer) -> Result<(), Status> {
        let word = match answer {
            Answer::Ok => "ok",
            Answer::ResourceExhausted => "resource_exhausted",
            Answer::Unimplemented => "unimplemented",
        };
        if let Ok(mut log) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.calls)
        {
            let _ = writeln!(log, "{call} {word}");
        }
        match answer {
            Answer::Ok => Ok(()),
            Answer::ResourceExhausted => Err(Status::resource_exhausted("rejected by rate limit")),
            Answer::Unimplemented => Err(Status::unimplemented(format!("{call} is not enabled"))),
        }
    }
}

#[tonic::async_trait]
impl PodResourcesLister for Kubelet {
    async fn list(
        &self,
        _: Request<v1::ListPodResourcesRequest>,
    ) -> Result<Response<v1::ListPodResourcesResponse>, Status> {
        let state = self.state()?;
        self.answer("List", state.list)?;
        Ok(Response::new(v1::ListPodResourcesResponse {
            pod_resources: state.pods.iter().map(Pod::message).collect(),
        }))
    }

    async fn get_allocatable_resources(
        &self,
        _: Request<v1::AllocatableResourcesRequest>,
    ) -> Result<Response<v1::AllocatableResourcesResponse>, Status> {
        Ok(Response::new(v1::AllocatableResourcesResponse::default()))
    }

    async fn get(
        &self,
        request: Request<v1::GetPodResourcesRequest>,
    ) -> Result<Response<v1::GetPodResourcesResponse>, Status> {
        let request = request.into_inner();
        let state = self.state()?;
        let call = format!("Get {}/{}", request.pod_namespace, request.pod_name);
        self.answer(&call, state.get)?;
        let pod = state
            .pods
            .iter()
            .find(|p| p.namespace == request.pod_namespace && p.name == request.pod_name)
            .ok_or_else(|| Status::not_found(format!("pod {call} not found")))?;
        Ok(Response::new(v1::GetPodResourcesResponse {
            pod_resources: Some(pod.message()),
        }))
    }
}

/// Serves on `socket` (replacing a stale one) from `state`, logging calls
/// to `calls`, until `stop` completes; then removes the socket, as kubelet
/// does when it stops.
pub async fn serve(
    socket: &Path,
    state: PathBuf,
    calls: PathBuf,
    stop: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let listener = bind(socket)?;
    let incoming = tokio_stream::wrappers::UnixListenerStream::new(listener);
    tonic::transport::Server::builder()
        .add_service(PodResourcesListerServer::new(Kubelet { state, calls }))
        .serve_with_incoming_shutdown(incoming, stop)
        .await?;
    let _ = std::fs::remove_file(socket);
    Ok(())
}

/// Answers every connection on `socket` with an HTTP error and hangs up,
/// until `stop` completes; then removes the socket.
pub async fn serve_not_grpc(socket: &Path, stop: impl Future<Output = ()>) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt as _;
    let listener = bind(socket)?;
    let answer = async {
        while let Ok((mut stream, _)) = listener.accept().await {
            let _ = stream
                .write_all(b"HTTP/1.0 400 Bad Request\r\n\r\nnot kubelet")
                .await;
        }
    };
    tokio::select! {
        _ = answer => {}
        _ = stop => {}
    }
    let _ = std::fs::remove_file(socket);
    Ok(())
}

/// Listens on `socket`, replacing a stale one.
fn bind(socket: &Path) -> anyhow::Result<tokio::net::UnixListener> {
    if let Some(dir) = socket.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let _ = std::fs::remove_file(socket);
    Ok(tokio::net::UnixListener::bind(socket)?)
}
