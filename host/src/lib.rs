//! KubeNPU's node agent, as a library with one module per job.
//!
//! Data flows one way: [`discovery`] finds the node's devices and
//! [`plugins`] the vendors; [`device_table`] joins them into the table the
//! kernel program's maps are filled from; the embedded [`program`] counts
//! the ioctls that table selects; [`attribution`] names the pod behind each
//! cgroup and [`usage`] folds the counts per pod; [`fdinfo`] adds, where
//! drivers publish them, engine time and memory per pod, and [`energy`]
//! divides each device's joules among the pods by them; [`allocation`]
//! joins what kubelet allocated to each container with what it calls, and
//! [`policy`] rules, in the kernel, what each container may call, from
//! its creation on where [`admission`] holds it until then; [`placement`]
//! runs each accelerator thread near its device.

pub mod admission;
pub mod agent;
pub mod allocation;
pub mod attribution;
pub mod catalog;
pub mod clock;
pub mod config;
pub mod device_table;
pub mod discovery;
pub mod energy;
pub mod faults;
pub mod fdinfo;
pub mod http;
pub mod logging;
pub mod metrics;
pub mod placement;
pub mod plugins;
pub mod policy;
pub mod probe;
pub mod program;
pub mod server;
pub mod startup;
pub mod usage;
pub mod watch;
