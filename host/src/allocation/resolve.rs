//! From what kubelet lists to the devices discovery found: each device
//! plugin ID and DRA claim is resolved to a device by the rules the
//! vendor plugins declare ([`kubenpu_sdk::Ids`]), or by the device numbers
//! a claim's CDI devices give the container. An ID no rule resolves is
//! counted under its resource and never guessed: its container's
//! allocation is then incomplete, and nothing is inferred from it.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
    time::Instant,
};

use kubenpu_sdk::Ids;

use super::listing::{Claimed, Container};
use crate::{attribution::Owner, device_table::DeviceTable, discovery::Device};

/// Who handed a device to a container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// A kubelet device plugin.
    DevicePlugin,
    /// A DRA claim.
    Dra,
}

impl Source {
    /// The `source` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::DevicePlugin => "device_plugin",
            Source::Dra => "dra",
        }
    }
}

/// One device given to a container.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Grant {
    /// The device's stable name, as in `kubenpu_device_info`.
    pub device: Arc<str>,
    /// The device plugin's resource, or the DRA driver.
    pub resource: String,
    /// Who gave it.
    pub source: Source,
    /// The device's NUMA node, where sysfs or its device plugin names one.
    pub numa_node: Option<u32>,
}

/// One running container's resolved allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    /// Its namespace, pod and name.
    pub owner: Owner,
    /// The devices it was given, each once per resource.
    pub grants: BTreeSet<Grant>,
    /// Whether every ID it was given resolved: only then can a device be
    /// said not to be its.
    pub complete: bool,
    /// When kubelet said so.
    pub seen_at: Instant,
    /// Its exclusive CPUs; empty when it has none.
    pub cpu_ids: Vec<u32>,
}

/// A container by pod UID and container name.
pub type ContainerKey = (String, String);

/// The resolved allocations of the running containers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resolved {
    /// Per container.
    pub containers: HashMap<ContainerKey, Granted>,
    /// IDs no rule resolved, per resource (or DRA driver).
    pub unmapped: BTreeMap<String, u64>,
    /// Devices no allocator hands out, open to every container (see
    /// [`DeviceTable::open_to_all`]).
    pub open: BTreeSet<Arc<str>>,
}

impl Resolved {
    /// Resolves `containers` against the devices and vendors of `table`.
    pub fn new(containers: &[Container], table: &DeviceTable) -> Self {
        let rules = Rules::of(table);
        let mut resolved = Resolved {
            open: table.open_to_all(),
            ..Resolved::default()
        };
        for container in containers {
            let mut granted = Granted {
                owner: container.owner.clone(),
                grants: BTreeSet::new(),
                complete: true,
                seen_at: container.seen_at,
                cpu_ids: container.cpu_ids.clone(),
            };
            for listed in &container.plugin_devices {
                for id in &listed.ids {
                    let devices = rules.plugin_devices(&listed.resource, id);
                    resolved.take(
                        &mut granted,
                        &listed.resource,
                        Source::DevicePlugin,
                        devices,
                        listed.numa_node,
                    );
                }
            }
            for claimed in &container.claimed {
                let devices = rules.claimed_devices(claimed);
                resolved.take(&mut granted, &claimed.driver, Source::Dra, devices, None);
            }
            let key = (container.pod_uid.clone(), container.owner.container.clone());
            resolved.containers.insert(key, granted);
        }
        resolved
    }

    /// Adds `devices` to `granted`, each on its NUMA node from sysfs, else
    /// on `listed_node`, the node its allocator listed it on: the kernel
    /// knows the device, the plugin only says what it read or was told.
    fn take(
        &mut self,
        granted: &mut Granted,
        resource: &str,
        source: Source,
        devices: Option<Vec<&Device>>,
        listed_node: Option<u32>,
    ) {
        let Some(devices) = devices else {
            *self.unmapped.entry(resource.to_owned()).or_default() += 1;
            granted.complete = false;
            return;
        };
        granted.grants.extend(devices.into_iter().map(|d| Grant {
            device: d.name.as_str().into(),
            resource: resource.to_owned(),
            source,
            numa_node: d.numa_node.or(listed_node),
        }));
    }
}

/// The vendors' allocators, with the devices each vendor claims.
struct Rules<'a> {
    table: &'a DeviceTable,
    device_plugins: HashMap<&'a str, Vec<(Ids, &'a str)>>,
    dra_drivers: HashMap<&'a str, Vec<(Ids, &'a str)>>,
}

impl<'a> Rules<'a> {
    fn of(table: &'a DeviceTable) -> Self {
        let mut rules = Rules {
            table,
            device_plugins: HashMap::new(),
            dra_drivers: HashMap::new(),
        };
        for plugin in &table.vendors.plugins {
            let d = &plugin.description;
            for (name, ids) in &d.allocators.device_plugins {
                rules
                    .device_plugins
                    .entry(name)
                    .or_default()
                    .push((*ids, &d.name));
            }
            for (name, ids) in &d.allocators.dra_drivers {
                rules
                    .dra_drivers
                    .entry(name)
                    .or_default()
                    .push((*ids, &d.name));
            }
        }
        rules
    }

    /// The devices ID `id` of `resource` stands for; `None` if no rule
    /// resolves it.
    fn plugin_devices(&self, resource: &str, id: &str) -> Option<Vec<&'a Device>> {
        self.resolve(self.device_plugins.get(resource)?, id)
    }

    /// The devices of a claim: through its CDI devices' numbers, else
    /// through its driver's naming; `None` if neither resolves it.
    fn claimed_devices(&self, claimed: &Claimed) -> Option<Vec<&'a Device>> {
        match &claimed.nodes {
            Some(numbers) => Some(
                self.table
                    .entries
                    .iter()
                    .map(|e| &e.device)
                    .filter(|d| d.nodes.iter().any(|n| numbers.contains(&n.dev)))
                    .collect(),
            ),
            None => self.resolve(
                self.dra_drivers.get(claimed.driver.as_str())?,
                &claimed.device,
            ),
        }
    }

    fn resolve(&self, rules: &[(Ids, &str)], id: &str) -> Option<Vec<&'a Device>> {
        let mut devices = Vec::new();
        for &(ids, vendor) in rules {
            let vendors_devices = self
                .table
                .claimed()
                .filter(move |(_, plugin)| plugin.name() == vendor)
                .map(|(device, _)| device);
            devices.extend(vendors_devices.filter(|d| names(ids, id, d)));
        }
        (!devices.is_empty()).then_some(devices)
    }
}

/// Whether ID `id`, of form `ids`, names `device`.
fn names(ids: Ids, id: &str, device: &Device) -> bool {
    let node = |name: String| device.nodes.iter().any(|n| n.name == name);
    let pci = |address: String| {
        device
            .pci
            .as_ref()
            .is_some_and(|p| p.address == address.to_ascii_lowercase())
    };
    match ids {
        Ids::CardNode => indexed(id, "card").is_some_and(|n| node(format!("card{n}"))),
        Ids::AccelNode => indexed(id, "accel").is_some_and(|n| node(format!("accel{n}"))),
        Ids::PciAddress => pci(id.to_owned()),
        Ids::DashedPciAddress => match id.split('-').collect::<Vec<_>>()[..] {
            [domain, bus, slot, function, ..] => pci(format!("{domain}:{bus}:{slot}.{function}")),
            _ => false,
        },
        Ids::CardRender => match id.split('-').collect::<Vec<_>>()[..] {
            ["gpu", card, _render] if card.parse::<u32>().is_ok() => node(format!("card{card}")),
            _ => false,
        },
        Ids::EveryDevice => true,
    }
}

/// `N` of `<prefix>N` or `<prefix>N-<share>`.
fn indexed<'i>(id: &'i str, prefix: &str) -> Option<&'i str> {
    let rest = id.strip_prefix(prefix)?;
    let number = rest.split_once('-').map_or(rest, |(n, _)| n);
    (!number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())).then_some(number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::{Node, Pci, Subsystem};

    fn device(name: &str, nodes: &[(&str, &str)], pci: bool) -> Device {
        Device {
            name: name.into(),
            subsystem: Subsystem::Drm,
            driver: "i915".into(),
            pci: pci.then(|| Pci {
                address: name.into(),
                id: kubenpu_sdk::PciId {
                    vendor: 0x8086,
                    device: 0x56a0,
                },
            }),
            numa_node: None,
            nodes: nodes
                .iter()
                .map(|(n, dev)| Node {
                    name: (*n).into(),
                    dev: dev.parse().unwrap(),
                    path: format!("/dev/dri/{n}").into(),
                })
                .collect(),
        }
    }

    #[test]
    fn ids_of_each_form_name_their_device_and_nothing_else() {
        let gpu = device(
            "0000:03:00.0",
            &[("card1", "226:1"), ("renderD129", "226:129")],
            true,
        );
        let cases = [
            (Ids::CardNode, "card1-0", true),
            (Ids::CardNode, "card1", true),
            (Ids::CardNode, "card10-0", false),
            (Ids::CardNode, "card-1", false),
            (Ids::AccelNode, "accel1-0", false),
            (Ids::PciAddress, "0000:03:00.0", true),
            (Ids::PciAddress, "0000:03:00.1", false),
            (Ids::DashedPciAddress, "0000-03-00-0-0x56a0", true),
            (Ids::DashedPciAddress, "0000-03-00-1-0x56a0", false),
            (Ids::CardRender, "gpu-1-129", true),
            (Ids::CardRender, "gpu-2-130", false),
            (Ids::CardRender, "gpu-x-129", false),
            (Ids::EveryDevice, "all", true),
        ];
        for (ids, id, named) in cases {
            assert_eq!(names(ids, id, &gpu), named, "{ids:?} {id}");
        }
        let npu = device("platform/npu", &[("accel0", "261:0")], false);
        assert!(names(Ids::AccelNode, "accel0-3", &npu));
        assert!(!names(Ids::PciAddress, "platform/npu", &npu));
    }
}
