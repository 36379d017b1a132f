//! kubelet's PodResources API, v1: the client generated from the vendored
//! `proto/podresources/v1/api.proto`, and the two calls the reader makes.
//!
//! kubelet serves it on a unix socket under its root directory; the
//! connection is made anew after any failure, so a kubelet restart (which
//! removes and recreates the socket) costs one failed call.

use std::{path::PathBuf, time::Duration};

use tonic::{Code, transport::Channel};

/// The generated messages and client.
#[allow(missing_docs, clippy::all, reason = "generated from kubelet's proto")]
pub mod v1 {
    tonic::include_proto!("v1");
}

use v1::{
    GetPodResourcesRequest, ListPodResourcesRequest, PodResources,
    pod_resources_lister_client::PodResourcesListerClient,
};

/// Where kubelet serves the API with its default `--root-dir`.
pub const DEFAULT_SOCKET: &str = "/var/lib/kubelet/pod-resources/kubelet.sock";

/// Why a call brought no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    /// No socket at the path: kubelet is not running, or not here.
    #[error("no PodResources socket at {0} (is kubelet running with this --root-dir?)")]
    Absent(PathBuf),
    /// kubelet refused the call: more than its 100 calls/s.
    #[error("kubelet refused the call: {0} (its limit is 100 calls/s)")]
    RateLimited(String),
    /// The call does not exist on this kubelet (`Get` before 1.34, or
    /// with its feature gate off).
    #[error("kubelet does not implement {0}")]
    Unimplemented(&'static str),
    /// The socket did not answer as a PodResources server.
    #[error("PodResources at {socket} did not answer: {reason}")]
    Unavailable {
        /// The socket asked.
        socket: PathBuf,
        /// What failed.
        reason: String,
    },
}

impl CallError {
    /// The `reason` label of `kubenpu_allocation_errors_total`.
    pub fn reason(&self) -> &'static str {
        match self {
            CallError::Absent(_) => "absent",
            CallError::RateLimited(_) => "rate_limited",
            CallError::Unimplemented(_) => "unimplemented",
            CallError::Unavailable { .. } => "unavailable",
        }
    }
}

/// A connection to kubelet's PodResources socket, made when first needed.
#[derive(Debug)]
pub struct Kubelet {
    socket: PathBuf,
    timeout: Duration,
    client: Option<PodResourcesListerClient<Channel>>,
}

impl Kubelet {
    /// A client of the socket at `socket`; each call may take `timeout`.
    pub fn new(socket: PathBuf, timeout: Duration) -> Self {
        Self {
            socket,
            timeout,
            client: None,
        }
    }

    /// Every pod kubelet lists, with its containers' devices.
    pub async fn list(&mut self) -> Result<Vec<PodResources>, CallError> {
        let client = self.client().await?;
        match client.list(ListPodResourcesRequest {}).await {
            Ok(answer) => Ok(answer.into_inner().pod_resources),
            Err(status) => Err(self.failed("List", status)),
        }
    }

    /// One pod, by namespace and name; `None` if kubelet does not know it.
    pub async fn get(
        &mut self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<PodResources>, CallError> {
        let client = self.client().await?;
        let request = GetPodResourcesRequest {
            pod_name: name.to_owned(),
            pod_namespace: namespace.to_owned(),
        };
        match client.get(request).await {
            Ok(answer) => Ok(answer.into_inner().pod_resources),
            Err(status) if status.code() == Code::NotFound => Ok(None),
            Err(status) => Err(self.failed("Get", status)),
        }
    }

    async fn client(&mut self) -> Result<&mut PodResourcesListerClient<Channel>, CallError> {
        if self.client.is_none() {
            if !self.socket.exists() {
                return Err(CallError::Absent(self.socket.clone()));
            }
            let channel = crate::attribution::cri::connect_unix(&self.socket, self.timeout)
                .await
                .map_err(|reason| CallError::Unavailable {
                    socket: self.socket.clone(),
                    reason,
                })?;
            self.client = Some(PodResourcesListerClient::new(channel));
        }
        Ok(self.client.as_mut().expect("connected above"))
    }

    /// Classifies a failed call; anything but a refusal drops the
    /// connection, so the next call connects anew. A call that failed
    /// because the socket went (kubelet stopping: the channel reconnects
    /// to a path no longer there) is the socket's absence, as the next
    /// call would find it, not a server that did not answer.
    fn failed(&mut self, call: &'static str, status: tonic::Status) -> CallError {
        match status.code() {
            Code::ResourceExhausted => CallError::RateLimited(status.message().to_owned()),
            Code::Unimplemented => CallError::Unimplemented(call),
            _ if !self.socket.exists() => {
                self.client = None;
                CallError::Absent(self.socket.clone())
            }
            _ => {
                self.client = None;
                CallError::Unavailable {
                    socket: self.socket.clone(),
                    reason: format!("{call}: {}", one_line(&status)),
                }
            }
        }
    }
}

/// A status and its causes, on one line.
fn one_line(status: &tonic::Status) -> String {
    let mut text = format!("{:?}: {}", status.code(), status.message());
    let mut source = std::error::Error::source(status);
    while let Some(cause) = source {
        text = format!("{text}: {cause}");
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A failure once the socket is gone is its absence; with the socket
    /// there, the server did not answer.
    #[test]
    fn a_call_that_failed_because_the_socket_went_is_absent() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("kubelet.sock");
        let mut kubelet = Kubelet::new(socket.clone(), Duration::from_secs(1));
        let gone = kubelet.failed(
            "List",
            tonic::Status::unavailable("No such file or directory"),
        );
        assert_eq!(gone, CallError::Absent(socket.clone()));
        std::fs::write(&socket, "").unwrap();
        let failed = kubelet.failed("List", tonic::Status::unavailable("connection closed"));
        assert_eq!(failed.reason(), "unavailable");
        assert_eq!(
            kubelet.failed("List", tonic::Status::resource_exhausted("slow down")),
            CallError::RateLimited("slow down".into())
        );
    }
}
