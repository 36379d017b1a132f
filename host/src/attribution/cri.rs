//! Asking the container runtime who a container belongs to, over the CRI
//! v1 API on its unix socket.
//!
//! kubelet, not the runtime, writes the `io.kubernetes.*` labels on each
//! container; they are the first answer. A container made without them
//! (by another CRI client) is named from its pod sandbox's metadata.

use std::{
    path::{Path, PathBuf},
    time::Duration,
};

use hyper_util::rt::TokioIo;
use k8s_cri::v1::{
    ContainerFilter, ContainerStatusRequest, ListContainersRequest, ListPodSandboxRequest,
    PodSandboxFilter, PodSandboxState, PodSandboxStateValue, PodSandboxStatusRequest,
    runtime_service_client::RuntimeServiceClient,
};
use tonic::{Code, transport::Channel};

use super::Owner;

/// Sockets tried, in order, when none is given: containerd, CRI-O, k3s's
/// containerd, cri-dockerd.
pub const DEFAULT_SOCKETS: &[&str] = &[
    "/run/containerd/containerd.sock",
    "/run/crio/crio.sock",
    "/run/k3s/containerd/containerd.sock",
    "/run/cri-dockerd.sock",
];

const POD_NAME: &str = "io.kubernetes.pod.name";
const POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
const CONTAINER_NAME: &str = "io.kubernetes.container.name";

/// Why the runtime could not be asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CriError {
    /// No socket given and none of the usual ones exists.
    #[error("no CRI socket found (tried {}); give one with --cri-socket", .0.join(", "))]
    NoSocket(Vec<String>),
    /// The socket is there but the runtime did not answer.
    #[error("the container runtime at {socket} does not answer: {reason}")]
    Unreachable {
        /// The socket.
        socket: PathBuf,
        /// What failed.
        reason: String,
    },
}

/// A CRI v1 client that connects on first use and again after a failure.
#[derive(Debug)]
pub struct Cri {
    sockets: Vec<PathBuf>,
    timeout: Duration,
    connected: Option<(PathBuf, RuntimeServiceClient<Channel>)>,
}

impl Cri {
    /// A client for `socket`, or for the first of [`DEFAULT_SOCKETS`] that
    /// exists when it connects. Every call gives up after `timeout`.
    pub fn new(socket: Option<PathBuf>, timeout: Duration) -> Self {
        let sockets = match socket {
            Some(socket) => vec![socket],
            None => DEFAULT_SOCKETS.iter().map(PathBuf::from).collect(),
        };
        Self {
            sockets,
            timeout,
            connected: None,
        }
    }

    /// The socket of the current connection, if any.
    pub fn socket(&self) -> Option<PathBuf> {
        self.connected.as_ref().map(|(socket, _)| socket.clone())
    }

    /// Who owns container `id`: `None` if the runtime does not know it.
    pub async fn container(&mut self, id: &str) -> Result<Option<Owner>, CriError> {
        let request = ContainerStatusRequest {
            container_id: id.to_owned(),
            verbose: false,
        };
        let Some(status) = self
            .call(|mut client| async move { client.container_status(request).await })
            .await?
            .and_then(|response| response.status)
        else {
            return Ok(None);
        };
        let label = |key: &str| status.labels.get(key).cloned();
        let container = label(CONTAINER_NAME)
            .or_else(|| status.metadata.as_ref().map(|m| m.name.clone()))
            .unwrap_or_default();
        if let (Some(namespace), Some(pod)) = (label(POD_NAMESPACE), label(POD_NAME)) {
            return Ok(Some(Owner {
                namespace,
                pod,
                container,
            }));
        }
        let Some(sandbox) = self.sandbox_of(id).await? else {
            return Ok(None);
        };
        Ok(self
            .sandbox(&sandbox)
            .await?
            .map(|pod| Owner { container, ..pod }))
    }

    /// Whether the runtime answers at all.
    pub async fn ping(&mut self) -> Result<(), CriError> {
        self.call(|mut client| async move {
            client.version(k8s_cri::v1::VersionRequest::default()).await
        })
        .await
        .map(drop)
    }

    /// The pod with UID `uid`, with no container: `None` if the runtime
    /// has no sandbox for it.
    pub async fn pod(&mut self, uid: &str) -> Result<Option<Owner>, CriError> {
        Ok(self
            .sandboxes(None)
            .await?
            .into_iter()
            .find(|(_, sandbox_uid)| sandbox_uid == uid)
            .map(|(owner, _)| owner))
    }

    /// The pods whose sandboxes are ready, each as `(owner with no
    /// container, UID)`: the pods that run now, which kubelet's own lists
    /// may outlive.
    pub async fn ready_pods(&mut self) -> Result<Vec<(Owner, String)>, CriError> {
        let ready = PodSandboxFilter {
            state: Some(PodSandboxStateValue {
                state: PodSandboxState::SandboxReady as i32,
            }),
            ..Default::default()
        };
        self.sandboxes(Some(ready)).await
    }

    /// The sandboxes `filter` selects, each as `(owner with no container,
    /// UID)`.
    async fn sandboxes(
        &mut self,
        filter: Option<PodSandboxFilter>,
    ) -> Result<Vec<(Owner, String)>, CriError> {
        let sandboxes = self
            .call(|mut client| async move {
                client
                    .list_pod_sandbox(ListPodSandboxRequest { filter })
                    .await
            })
            .await?
            .map(|response| response.items)
            .unwrap_or_default();
        Ok(sandboxes
            .into_iter()
            .filter_map(|sandbox| sandbox.metadata)
            .map(|metadata| {
                let owner = Owner {
                    namespace: metadata.namespace,
                    pod: metadata.name,
                    container: String::new(),
                };
                (owner, metadata.uid)
            })
            .collect())
    }

    async fn sandbox_of(&mut self, container: &str) -> Result<Option<String>, CriError> {
        let request = ListContainersRequest {
            filter: Some(ContainerFilter {
                id: container.to_owned(),
                ..Default::default()
            }),
        };
        Ok(self
            .call(|mut client| async move { client.list_containers(request).await })
            .await?
            .and_then(|response| response.containers.into_iter().next())
            .map(|container| container.pod_sandbox_id))
    }

    async fn sandbox(&mut self, id: &str) -> Result<Option<Owner>, CriError> {
        let request = PodSandboxStatusRequest {
            pod_sandbox_id: id.to_owned(),
            verbose: false,
        };
        Ok(self
            .call(|mut client| async move { client.pod_sandbox_status(request).await })
            .await?
            .and_then(|response| response.status?.metadata)
            .map(|metadata| Owner {
                namespace: metadata.namespace,
                pod: metadata.name,
                container: String::new(),
            }))
    }

    /// One call with a deadline; `None` when the runtime answers NotFound.
    /// A failed call drops the connection so the next one reconnects.
    async fn call<T, F, Fut>(&mut self, call: F) -> Result<Option<T>, CriError>
    where
        F: FnOnce(RuntimeServiceClient<Channel>) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let (socket, client) = self.connect().await?;
        let unreachable = |reason: String| CriError::Unreachable {
            socket: socket.clone(),
            reason,
        };
        let result = match tokio::time::timeout(self.timeout, call(client)).await {
            Err(_) => Err(unreachable(format!("no answer within {:?}", self.timeout))),
            Ok(Ok(response)) => Ok(Some(response.into_inner())),
            Ok(Err(status)) if status.code() == Code::NotFound => Ok(None),
            Ok(Err(status)) => Err(unreachable(describe(&status))),
        };
        if result.is_err() {
            self.connected = None;
        }
        result
    }

    async fn connect(&mut self) -> Result<(PathBuf, RuntimeServiceClient<Channel>), CriError> {
        if let Some((socket, client)) = &self.connected {
            return Ok((socket.clone(), client.clone()));
        }
        let socket = match self.sockets.as_slice() {
            [only] => only.clone(),
            candidates => candidates
                .iter()
                .find(|socket| socket.exists())
                .cloned()
                .ok_or_else(|| {
                    CriError::NoSocket(candidates.iter().map(|s| s.display().to_string()).collect())
                })?,
        };
        let channel = connect_unix(&socket, self.timeout)
            .await
            .map_err(|reason| CriError::Unreachable {
                socket: socket.clone(),
                reason,
            })?;
        let client = RuntimeServiceClient::new(channel);
        self.connected = Some((socket.clone(), client.clone()));
        Ok((socket, client))
    }
}

/// A gRPC channel over a unix socket (the URI is required but unused).
pub async fn connect_unix(socket: &Path, timeout: Duration) -> Result<Channel, String> {
    let path = socket.to_owned();
    let connector = tower::service_fn(move |_: tonic::transport::Uri| {
        let path = path.clone();
        async move {
            let stream = tokio::net::UnixStream::connect(path).await?;
            Ok::<_, std::io::Error>(TokioIo::new(stream))
        }
    });
    tonic::transport::Endpoint::from_static("http://localhost")
        .connect_timeout(timeout)
        .timeout(timeout)
        .connect_with_connector(connector)
        .await
        .map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                text = format!("{text}: {cause}");
                source = cause.source();
            }
            text
        })
}

/// A status in one line: its message, or its code if it has none.
fn describe(status: &tonic::Status) -> String {
    if status.message().is_empty() {
        format!("{:?}", status.code())
    } else {
        status.message().to_owned()
    }
}
