//! Pods on a real container runtime, for tests and the demo, without a
//! cluster or a registry.
//!
//! [`Containerd`] runs Debian's containerd with a private root, state and
//! socket and the cgroupfs driver; [`image`] builds OCI images from local
//! files and imports them; [`Kubelet`] creates pod sandboxes and
//! containers through CRI v1 with the `io.kubernetes.*` labels kubelet
//! sets, so the agent sees exactly what it sees on a node;
//! [`podresources`] stands in for kubelet's PodResources server.

mod containerd;
pub mod image;
mod kubelet;
pub mod podresources;

pub use containerd::Containerd;
pub use kubelet::{ContainerSpec, Kubelet, PodSpec};
