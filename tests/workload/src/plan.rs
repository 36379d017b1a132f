//! The workload's command line.

use std::time::Duration;

/// What one item issues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// COUNT calls of NR with a zeroed argument.
    Raw { node: String, nr: u8, count: u64 },
    /// COUNT syncobj waits that time out after `timeout`.
    SyncobjWait {
        node: String,
        count: u64,
        timeout: Duration,
    },
    /// One dumb buffer per (width, height, bpp).
    Dumb {
        node: String,
        sizes: Vec<(u32, u32, u32)>,
    },
    /// One virtio-gpu 2D resource per size in bytes.
    Resource { node: String, sizes: Vec<u32> },
    /// COUNT rounds of a virtio-gpu 2D resource made and waited for.
    CreateWait { node: String, count: u64 },
    /// COUNT rounds of a virtio-gpu 2D resource made and polled (no-block
    /// waits) until the host has made it.
    CreatePoll { node: String, count: u64 },
    /// One virtio-gpu guest blob per size in bytes.
    Blob { node: String, sizes: Vec<u64> },
    /// Opens the node and sends it to the process listening at `socket`;
    /// no calls.
    SendFd { socket: String, node: String },
    /// COUNT calls of NR on the node a peer sends to `socket`.
    RecvFd { socket: String, nr: u8, count: u64 },
    /// COUNT DMA-heap allocations of BYTES each.
    Heap {
        node: String,
        count: u64,
        bytes: u64,
    },
    /// COUNT udmabufs of BYTES of a memfd each.
    Udmabuf {
        node: String,
        count: u64,
        bytes: u64,
    },
}

impl Item {
    /// The device node.
    pub fn node(&self) -> &str {
        match self {
            Item::Raw { node, .. }
            | Item::SyncobjWait { node, .. }
            | Item::Dumb { node, .. }
            | Item::Resource { node, .. }
            | Item::CreateWait { node, .. }
            | Item::CreatePoll { node, .. }
            | Item::Blob { node, .. }
            | Item::Heap { node, .. }
            | Item::Udmabuf { node, .. }
            | Item::SendFd { node, .. } => node,
            Item::RecvFd { socket, .. } => socket,
        }
    }

    /// The number (`cmd & 0xff`) of the calls the item counts.
    pub fn nr(&self) -> u8 {
        match self {
            Item::Raw { nr, .. } | Item::RecvFd { nr, .. } => *nr,
            Item::SendFd { .. } => 0,
            Item::SyncobjWait { .. } => crate::ioctls::SYNCOBJ_WAIT,
            Item::Dumb { .. } => crate::ioctls::MODE_CREATE_DUMB,
            Item::Resource { .. } => crate::ioctls::VIRTGPU_RESOURCE_CREATE,
            Item::CreateWait { .. } | Item::CreatePoll { .. } => crate::ioctls::VIRTGPU_WAIT,
            Item::Blob { .. } => crate::ioctls::VIRTGPU_RESOURCE_CREATE_BLOB,
            Item::Heap { .. } => (crate::ioctls::DMA_HEAP_IOCTL_ALLOC & 0xff) as u8,
            Item::Udmabuf { .. } => (crate::ioctls::UDMABUF_CREATE & 0xff) as u8,
        }
    }
}

/// Everything the command line asks for.
#[derive(Debug)]
pub struct Options {
    /// Threads per item.
    pub threads: u64,
    /// SIGALRM interval, if any.
    pub signals: Option<Duration>,
    /// Pin thread `i` to the `i`-th allowed CPU (modulo their number), so
    /// every CPU runs some.
    pub spread: bool,
    /// Wait, with each item's node open, until this path exists.
    pub after: Option<std::path::PathBuf>,
    /// CPU work (a spin) before each call of a `NODE:NR:COUNT` item, or
    /// each round of a `create-wait` one, as a thread that computes
    /// between its submits does.
    pub work: Duration,
    /// Run the threads under policy `SCHED_EXT`, as a sched_ext scheduler
    /// with `SCX_OPS_SWITCH_PARTIAL` takes only such tasks.
    pub sched_ext: bool,
    /// The items, in order.
    pub items: Vec<Item>,
}

const USAGE: &str = "usage: kubenpu-workload [--threads N] [--spread] [--signals MS] [--after PATH] [--work-us US] [--sched-ext] ITEM... (ITEM: NODE:NR:COUNT, syncobj-wait:NODE:COUNT:TIMEOUT_MS, dumb:NODE:WxHxBPP,..., resource:NODE:BYTES,..., create-wait:NODE:COUNT, create-poll:NODE:COUNT, blob:NODE:BYTES,..., send-fd:SOCKET:NODE, recv-fd:SOCKET:NR:COUNT, heap:NODE:COUNT:BYTES, udmabuf:NODE:COUNT:BYTES)";

/// Parses the arguments.
pub fn parse(mut args: Vec<String>) -> Result<Options, String> {
    let mut threads = 1;
    let mut signals = None;
    let mut spread = false;
    let mut after = None;
    let mut work = Duration::ZERO;
    let mut sched_ext = false;
    loop {
        match args.first().map(String::as_str) {
            Some("--threads") => {
                threads = args
                    .get(1)
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--threads needs a number of threads above 0")?;
                args.drain(..2);
            }
            Some("--signals") => {
                let ms: u64 = args
                    .get(1)
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .ok_or("--signals needs an interval in milliseconds above 0")?;
                signals = Some(Duration::from_millis(ms));
                args.drain(..2);
            }
            Some("--after") => {
                after = Some(args.get(1).ok_or("--after needs a path")?.into());
                args.drain(..2);
            }
            Some("--spread") => {
                spread = true;
                args.remove(0);
            }
            Some("--sched-ext") => {
                sched_ext = true;
                args.remove(0);
            }
            Some("--work-us") => {
                let us: u64 = args
                    .get(1)
                    .and_then(|n| n.parse().ok())
                    .ok_or("--work-us needs microseconds of CPU work per call")?;
                work = Duration::from_micros(us);
                args.drain(..2);
            }
            _ => break,
        }
    }
    if args.is_empty() {
        return Err(USAGE.into());
    }
    let items = args.iter().map(|a| item(a)).collect::<Result<_, _>>()?;
    Ok(Options {
        threads,
        signals,
        spread,
        after,
        work,
        sched_ext,
        items,
    })
}

fn number<T: std::str::FromStr>(text: &str) -> Option<T> {
    text.parse().ok()
}

fn list<T>(text: &str, one: impl Fn(&str) -> Option<T>) -> Option<Vec<T>> {
    text.split(',').map(one).collect()
}

fn item(arg: &str) -> Result<Item, String> {
    let bad = || format!("{arg:?} is not an item; {USAGE}");
    let (kind, rest) = arg.split_once(':').ok_or_else(bad)?;
    let parsed = match kind {
        "syncobj-wait" => {
            let mut parts = rest.rsplitn(3, ':');
            let timeout = parts.next().and_then(number).map(Duration::from_millis);
            let count = parts.next().and_then(number);
            let node = parts.next();
            match (node, count, timeout) {
                (Some(node), Some(count), Some(timeout)) => Some(Item::SyncobjWait {
                    node: node.into(),
                    count,
                    timeout,
                }),
                _ => None,
            }
        }
        "dumb" => rest.rsplit_once(':').and_then(|(node, sizes)| {
            let sizes = list(sizes, |s| {
                let mut dims = s.split('x').map(number::<u32>);
                Some((dims.next()??, dims.next()??, dims.next()??))
            })?;
            Some(Item::Dumb {
                node: node.into(),
                sizes,
            })
        }),
        "resource" => rest.rsplit_once(':').and_then(|(node, sizes)| {
            Some(Item::Resource {
                node: node.into(),
                sizes: list(sizes, number)?,
            })
        }),
        "create-wait" | "create-poll" => rest.rsplit_once(':').and_then(|(node, count)| {
            let (node, count) = (node.into(), number(count)?);
            Some(if kind == "create-wait" {
                Item::CreateWait { node, count }
            } else {
                Item::CreatePoll { node, count }
            })
        }),
        "blob" => rest.rsplit_once(':').and_then(|(node, sizes)| {
            Some(Item::Blob {
                node: node.into(),
                sizes: list(sizes, number)?,
            })
        }),
        "heap" | "udmabuf" => {
            let mut parts = rest.rsplitn(3, ':');
            let bytes = parts.next().and_then(number);
            let count = parts.next().and_then(number);
            match (parts.next(), count, bytes) {
                (Some(node), Some(count), Some(bytes)) if kind == "heap" => Some(Item::Heap {
                    node: node.into(),
                    count,
                    bytes,
                }),
                (Some(node), Some(count), Some(bytes)) => Some(Item::Udmabuf {
                    node: node.into(),
                    count,
                    bytes,
                }),
                _ => None,
            }
        }
        "send-fd" => rest.split_once(':').map(|(socket, node)| Item::SendFd {
            socket: socket.into(),
            node: node.into(),
        }),
        "recv-fd" => raw(rest).and_then(|item| match item {
            Item::Raw { node, nr, count } => Some(Item::RecvFd {
                socket: node,
                nr,
                count,
            }),
            _ => None,
        }),
        _ => raw(arg),
    };
    parsed.ok_or_else(bad)
}

/// `NODE:NR:COUNT`.
fn raw(arg: &str) -> Option<Item> {
    let mut parts = arg.rsplitn(3, ':');
    let count = parts.next().and_then(number)?;
    let nr = parts.next()?;
    let nr = match nr.strip_prefix("0x") {
        Some(hex) => u8::from_str_radix(hex, 16).ok()?,
        None => nr.parse().ok()?,
    };
    Some(Item::Raw {
        node: parts.next()?.into(),
        nr,
        count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn every_item_and_option_parses() {
        let options = parse(args(
            "--threads 4 --spread --sched-ext --signals 5 --after /tmp/go /dev/dri/card0:0x48:10 syncobj-wait:/dev/dri/card0:3:20 \
             dumb:/dev/dri/card0:64x64x32,1x1x8 resource:/dev/dri/card0:4096 create-wait:/dev/dri/card0:5 create-poll:/dev/dri/card0:6 blob:/dev/dri/card0:8192,4096 \
             send-fd:/tmp/s:/dev/dri/card0 recv-fd:/tmp/s:0x41:7 heap:/dev/dma_heap/system:3:4096 \
             udmabuf:/dev/udmabuf:2:8192",
        ))
        .unwrap();
        assert_eq!(options.threads, 4);
        assert!(options.spread);
        assert!(options.sched_ext);
        assert_eq!(options.after, Some("/tmp/go".into()));
        assert_eq!(options.signals, Some(Duration::from_millis(5)));
        let node = || "/dev/dri/card0".to_string();
        assert_eq!(
            options.items,
            [
                Item::Raw {
                    node: node(),
                    nr: 0x48,
                    count: 10
                },
                Item::SyncobjWait {
                    node: node(),
                    count: 3,
                    timeout: Duration::from_millis(20)
                },
                Item::Dumb {
                    node: node(),
                    sizes: vec![(64, 64, 32), (1, 1, 8)]
                },
                Item::Resource {
                    node: node(),
                    sizes: vec![4096]
                },
                Item::CreateWait {
                    node: node(),
                    count: 5
                },
                Item::CreatePoll {
                    node: node(),
                    count: 6
                },
                Item::Blob {
                    node: node(),
                    sizes: vec![8192, 4096]
                },
                Item::SendFd {
                    socket: "/tmp/s".into(),
                    node: node()
                },
                Item::RecvFd {
                    socket: "/tmp/s".into(),
                    nr: 0x41,
                    count: 7
                },
                Item::Heap {
                    node: "/dev/dma_heap/system".into(),
                    count: 3,
                    bytes: 4096
                },
                Item::Udmabuf {
                    node: "/dev/udmabuf".into(),
                    count: 2,
                    bytes: 8192
                },
            ]
        );
    }

    #[test]
    fn mistakes_are_refused() {
        for bad in [
            "",
            "--threads 0 /dev/x:1:1",
            "--signals x /dev/x:1:1",
            "/dev/x:zz:1",
            "dumb:/dev/x:64x64",
            "syncobj-wait:/dev/x:3",
            "heap:/dev/x:3",
        ] {
            assert!(parse(args(bad)).is_err(), "{bad:?}");
        }
    }
}
