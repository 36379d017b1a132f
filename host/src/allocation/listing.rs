//! What kubelet says each container was given, in the agent's terms: the
//! device plugins' resource names and IDs as listed, and DRA claims with
//! the device numbers their CDI devices put in the container.

use std::{collections::HashMap, time::Instant};

use crate::{attribution::Owner, discovery::DevNum};

use super::podresources::v1;

/// One container's allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Container {
    /// Its namespace, pod and container name.
    pub owner: Owner,
    /// Its pod's UID, from the container runtime (kubelet's list has
    /// none): names are reused, UIDs are not.
    pub pod_uid: String,
    /// When kubelet said so (by `List`, or by `Get` for its pod).
    pub seen_at: Instant,
    /// Devices from device plugins, per resource.
    pub plugin_devices: Vec<PluginDevices>,
    /// Devices from DRA claims.
    pub claimed: Vec<Claimed>,
    /// Its exclusive CPUs (kubelet's CPU manager); empty when it has none.
    pub cpu_ids: Vec<u32>,
}

/// The IDs a device plugin allocated under one resource name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginDevices {
    /// The extended resource, e.g. `gpu.intel.com/i915`.
    pub resource: String,
    /// The plugin's own IDs, e.g. `card0-1`.
    pub ids: Vec<String>,
    /// The NUMA node the plugin says these devices are on. kubelet lists
    /// a resource's devices once per node, so an entry names at most one;
    /// `None` where it names none (or, from another kubelet, several).
    pub numa_node: Option<u32>,
}

/// One device of a DRA claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimed {
    /// The DRA driver, e.g. `gpu.intel.com`.
    pub driver: String,
    /// The driver's name for the device, e.g. `0000-03-00-0-0x56a0`.
    pub device: String,
    /// The device numbers its CDI devices give the container; `None` if
    /// it names none or a CDI device no spec defines (any more).
    pub nodes: Option<Vec<DevNum>>,
}

/// A pod as kubelet described it, and when.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// kubelet's answer.
    pub pod: v1::PodResources,
    /// When it came.
    pub at: Instant,
}

/// The containers of `pods` that run now, with the UID `uid_of` gives
/// their pod (`None`: not running, such as a finished pod an older
/// kubelet still lists), their CDI devices looked up in `cdi`.
pub fn containers<'a>(
    pods: &[Fetched],
    uid_of: impl Fn(&str, &str) -> Option<&'a str>,
    cdi: &HashMap<String, Vec<DevNum>>,
) -> Vec<Container> {
    pods.iter()
        .filter_map(|fetched| {
            Some((
                &fetched.pod,
                fetched.at,
                uid_of(&fetched.pod.namespace, &fetched.pod.name)?,
            ))
        })
        .flat_map(|(pod, seen_at, uid)| {
            pod.containers.iter().map(move |c| Container {
                owner: Owner {
                    namespace: pod.namespace.clone(),
                    pod: pod.name.clone(),
                    container: c.name.clone(),
                },
                pod_uid: uid.to_owned(),
                seen_at,
                plugin_devices: c
                    .devices
                    .iter()
                    .map(|d| PluginDevices {
                        resource: d.resource_name.clone(),
                        ids: d.device_ids.clone(),
                        numa_node: one_numa_node(d.topology.as_ref()),
                    })
                    .collect(),
                claimed: c
                    .dynamic_resources
                    .iter()
                    .flat_map(|claim| {
                        claim.claim_resources.iter().map(|r| Claimed {
                            driver: r.driver_name.clone(),
                            device: r.device_name.clone(),
                            nodes: cdi_nodes(&r.cdi_devices, cdi),
                        })
                    })
                    .collect(),
                cpu_ids: c
                    .cpu_ids
                    .iter()
                    .filter_map(|&cpu| u32::try_from(cpu).ok())
                    .collect(),
            })
        })
        .collect()
}

fn one_numa_node(topology: Option<&v1::TopologyInfo>) -> Option<u32> {
    match topology?.nodes[..] {
        [ref node] => u32::try_from(node.id).ok(),
        _ => None,
    }
}

fn cdi_nodes(names: &[v1::CdiDevice], cdi: &HashMap<String, Vec<DevNum>>) -> Option<Vec<DevNum>> {
    if names.is_empty() {
        return None;
    }
    let mut nodes = Vec::new();
    for name in names {
        nodes.extend(cdi.get(&name.name)?);
    }
    Some(nodes)
}

/// Every CDI device name `pods` refer to.
pub fn cdi_names(pods: &[Fetched]) -> impl Iterator<Item = &str> {
    pods.iter()
        .flat_map(|f| &f.pod.containers)
        .flat_map(|c| &c.dynamic_resources)
        .flat_map(|d| &d.claim_resources)
        .flat_map(|r| &r.cdi_devices)
        .map(|d| d.name.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_topology_of_one_node_places_a_device() {
        let topology = |ids: &[i64]| v1::TopologyInfo {
            nodes: ids.iter().map(|&id| v1::NumaNode { id }).collect(),
        };
        assert_eq!(one_numa_node(None), None);
        assert_eq!(one_numa_node(Some(&topology(&[]))), None);
        assert_eq!(one_numa_node(Some(&topology(&[1]))), Some(1));
        assert_eq!(one_numa_node(Some(&topology(&[0, 1]))), None);
        assert_eq!(one_numa_node(Some(&topology(&[-1]))), None);
    }
}
