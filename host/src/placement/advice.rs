//! What would fix a container's placement, from what the agent knows: its
//! calls on a device and how many came from another NUMA node, its CPUs
//! against the device's node, the mode in force, and the node's other
//! devices of the same vendor.

use super::Mode;

/// One container's use of one device, as the advice weighs it.
#[derive(Debug, Clone, Copy)]
pub struct Use {
    /// Its counted calls.
    pub calls: u64,
    /// Those made from a CPU of another node than the device's.
    pub remote: u64,
    /// The device's NUMA node, if the machine names one.
    pub device_node: Option<u32>,
    /// Its CPUs on the device's node, and all its CPUs, where known.
    pub cpus: Option<(u32, u32)>,
}

/// The advice for `usage`, with placement in `mode`; `elsewhere` names
/// the same vendor's devices on other nodes (its CPUs' node among them).
pub fn advise(usage: Use, mode: Mode, elsewhere: &[String]) -> String {
    let Some(node) = usage.device_node else {
        return "the device has no NUMA node: nothing to place".into();
    };
    if usage.calls == 0 {
        return "no calls yet".into();
    }
    match usage.cpus {
        Some((0, total)) => {
            let mut advice = format!(
                "none of its {total} CPUs is on node {node}, the device's: give it CPUs of node {node}"
            );
            if !elsewhere.is_empty() {
                advice.push_str(&format!(
                    ", or have it claim a device on its CPUs' node ({})",
                    elsewhere.join(", ")
                ));
            }
            advice
        }
        _ if usage.remote == 0 => "near: every call from the device's node".into(),
        Some(_) if mode == Mode::SchedExt => {
            format!("placed: the scheduler wakes it on node {node} when a CPU there is idle")
        }
        Some(_) => format!(
            "it may run on node {node}, the device's: --placement sched-ext would run it there"
        ),
        None => {
            "its CPUs are unknown: the allocation join reads them once it has counted a call".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(calls: u64, remote: u64, cpus: Option<(u32, u32)>) -> Use {
        Use {
            calls,
            remote,
            device_node: Some(1),
            cpus,
        }
    }

    #[test]
    fn each_case_gets_its_own_advice() {
        let others = ["0000:01:00.0".to_owned()];
        let far = advise(usage(10, 10, Some((0, 4))), Mode::Off, &others);
        assert_eq!(
            far,
            "none of its 4 CPUs is on node 1, the device's: give it CPUs of node 1, or have it claim a device on its CPUs' node (0000:01:00.0)"
        );
        assert!(!advise(usage(10, 10, Some((0, 4))), Mode::Off, &[]).contains("claim"));
        assert!(advise(usage(10, 0, Some((2, 4))), Mode::Off, &others).starts_with("near"));
        assert!(
            advise(usage(10, 5, Some((2, 4))), Mode::Hints, &others)
                .ends_with("--placement sched-ext would run it there")
        );
        assert!(advise(usage(10, 5, Some((2, 4))), Mode::SchedExt, &others).starts_with("placed"));
        assert!(advise(usage(10, 5, None), Mode::Off, &others).starts_with("its CPUs are unknown"));
        assert_eq!(
            advise(usage(0, 0, None), Mode::Off, &others),
            "no calls yet"
        );
        let nowhere = Use {
            device_node: None,
            ..usage(10, 0, None)
        };
        assert!(advise(nowhere, Mode::Off, &others).contains("no NUMA node"));
    }
}
