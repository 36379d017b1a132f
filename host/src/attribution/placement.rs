//! Where a cgroup sits in kubelet's tree, read from its path alone: inside
//! a container of a pod, in a pod but in no container, or outside pods.
//!
//! kubelet names pod cgroups one of two ways, by cgroup driver:
//!
//! - systemd: `kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid>.slice/<runtime>-<id>.scope`,
//!   with the UID's dashes written as underscores (slice names use `-` as
//!   the path separator);
//! - cgroupfs: `kubepods/<qos>/pod<uid>/<id>`.
//!
//! Guaranteed pods have no QoS level, nodes may put the tree under a prefix
//! (`kubelet.slice/kubelet-kubepods.slice/…` in kind), and anything a
//! container creates below its own cgroup still belongs to that container.

use std::path::{Component, Path};

/// What a cgroup's path says about its owner.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Placement {
    /// In a container: the runtime's container id (what CRI calls it).
    Container {
        /// The pod's UID, with dashes.
        pod_uid: String,
        /// The runtime's container id.
        container_id: String,
    },
    /// In a pod's cgroup but not in one of its containers (the runtime's
    /// monitor processes, such as CRI-O's conmon).
    Pod {
        /// The pod's UID, with dashes.
        pod_uid: String,
    },
    /// Not under kubelet's tree: a system service, a shell, the root.
    Outside,
}

/// Places the cgroup at `path`, relative to the cgroup2 root.
pub fn place(path: &Path) -> Placement {
    let names: Vec<&str> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(name) => name.to_str(),
            _ => None,
        })
        .collect();
    let Some((at, pod_uid)) = names
        .iter()
        .enumerate()
        .find_map(|(i, name)| Some((i, pod_uid(&names[..i], name)?)))
    else {
        return Placement::Outside;
    };
    match names.get(at + 1).and_then(|name| container_id(name)) {
        Some(container_id) => Placement::Container {
            pod_uid,
            container_id: container_id.to_owned(),
        },
        None => Placement::Pod { pod_uid },
    }
}

/// The pod UID if `name` is a pod's cgroup below `parents`.
fn pod_uid(parents: &[&str], name: &str) -> Option<String> {
    let uid = if let Some(slice) = name.strip_suffix(".slice") {
        // systemd: `<prefix>kubepods[-<qos>]-pod<uid>.slice`.
        let (prefix, uid) = slice.rsplit_once("-pod")?;
        if !prefix.ends_with("kubepods") && !prefix.contains("kubepods-") {
            return None;
        }
        uid.replace('_', "-")
    } else {
        // cgroupfs: `pod<uid>` somewhere below `kubepods`.
        let uid = name.strip_prefix("pod")?;
        if !parents.contains(&"kubepods") {
            return None;
        }
        uid.to_owned()
    };
    let valid = !uid.is_empty() && uid.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    valid.then_some(uid)
}

/// The container id if `name` is a container's cgroup: a bare id
/// (cgroupfs), or `<runtime>-<id>` with an optional `.scope` (systemd, and
/// CRI-O under cgroupfs). CRI-O's `crio-conmon-<id>` is its monitor, not
/// the container.
fn container_id(name: &str) -> Option<&str> {
    let name = name.strip_suffix(".scope").unwrap_or(name);
    let id = ["cri-containerd-", "crio-", "docker-"]
        .iter()
        .find_map(|runtime| name.strip_prefix(runtime))
        .unwrap_or(name);
    let valid = !id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit());
    valid.then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    const UID: &str = "1f3a6b2c-8d4e-4f5a-9b6c-7d8e9f0a1b2c";
    const ID: &str = "4e1b8c5d2a3f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f0e1d";

    fn container() -> Placement {
        Placement::Container {
            pod_uid: UID.into(),
            container_id: ID.into(),
        }
    }

    fn at(path: &str) -> Placement {
        place(Path::new(path))
    }

    #[test]
    fn systemd_driver_with_each_runtime_and_qos() {
        let uid = UID.replace('-', "_");
        for runtime in ["cri-containerd", "crio", "docker"] {
            for qos in ["besteffort", "burstable"] {
                let path = format!(
                    "kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{uid}.slice/{runtime}-{ID}.scope"
                );
                assert_eq!(at(&path), container(), "{path}");
            }
        }
    }

    #[test]
    fn guaranteed_pods_have_no_qos_level() {
        let uid = UID.replace('-', "_");
        assert_eq!(
            at(&format!(
                "kubepods.slice/kubepods-pod{uid}.slice/cri-containerd-{ID}.scope"
            )),
            container()
        );
        assert_eq!(at(&format!("kubepods/pod{UID}/{ID}")), container());
    }

    #[test]
    fn cgroupfs_driver() {
        for qos in ["besteffort", "burstable"] {
            assert_eq!(at(&format!("kubepods/{qos}/pod{UID}/{ID}")), container());
        }
        assert_eq!(
            at(&format!("/kubepods/burstable/pod{UID}/crio-{ID}")),
            container()
        );
    }

    #[test]
    fn prefixed_trees_as_in_kind() {
        let uid = UID.replace('-', "_");
        let path = format!(
            "kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod{uid}.slice/cri-containerd-{ID}.scope"
        );
        assert_eq!(at(&path), container());
        assert_eq!(
            at(&format!("kubelet/kubepods/besteffort/pod{UID}/{ID}")),
            container()
        );
    }

    #[test]
    fn static_pod_uids_are_hashes() {
        let hash = "9a1d2f3e4b5c6d7e8f90a1b2c3d4e5f6";
        assert_eq!(
            at(&format!("kubepods/burstable/pod{hash}/{ID}")),
            Placement::Container {
                pod_uid: hash.into(),
                container_id: ID.into()
            }
        );
    }

    #[test]
    fn nested_cgroups_count_as_their_container() {
        let uid = UID.replace('-', "_");
        assert_eq!(
            at(&format!("kubepods/besteffort/pod{UID}/{ID}/worker/a")),
            container()
        );
        assert_eq!(
            at(&format!(
                "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid}.slice/cri-containerd-{ID}.scope/init.scope"
            )),
            container()
        );
    }

    #[test]
    fn pod_level_and_monitor_cgroups_have_no_container() {
        let uid = UID.replace('-', "_");
        let pod = Placement::Pod {
            pod_uid: UID.into(),
        };
        assert_eq!(at(&format!("kubepods/besteffort/pod{UID}")), pod);
        assert_eq!(
            at(&format!(
                "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{uid}.slice/crio-conmon-{ID}.scope"
            )),
            pod
        );
    }

    #[test]
    fn everything_else_is_outside() {
        for path in [
            "",
            "/",
            "system.slice/containerd.service",
            "user.slice/user-0.slice/session-1.scope",
            "kubepods",
            "kubepods.slice/kubepods-besteffort.slice",
            "kubepods/besteffort",
            // A pod-like name outside kubelet's tree.
            &format!("machine/pod{UID}/{ID}"),
            "kubepods/podnot-a-uid/abc",
        ] {
            assert_eq!(at(path), Placement::Outside, "{path:?}");
        }
    }
}
