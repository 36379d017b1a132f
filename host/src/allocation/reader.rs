//! The PodResources conversation, as a task of its own so a slow or absent
//! kubelet never holds up counting: `List` on an interval, `Get` for a pod
//! the agent has just named (falling back to `List` where kubelet lacks
//! `Get`), the runtime's ready pods to tell running pods from finished
//! ones and to learn their UIDs, and the CDI specs for DRA claims.
//!
//! Calls are spaced by [`MIN_GAP`], so the agent stays far below
//! kubelet's limit of 100 calls/s (burst 10) whatever happens on the node.

use std::{
    collections::HashMap,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use tokio::sync::mpsc;

use super::{
    cdi,
    listing::{self, Container, Fetched},
    podresources::{CallError, Kubelet},
};
use crate::{attribution::cri::Cri, discovery::DevNum};

/// The least time between two calls to kubelet.
pub const MIN_GAP: Duration = Duration::from_millis(200);

/// Where and how often to ask.
#[derive(Debug, Clone)]
pub struct Settings {
    /// kubelet's PodResources socket.
    pub socket: PathBuf,
    /// How often to `List`.
    pub interval: Duration,
    /// How long one call may take.
    pub timeout: Duration,
    /// The container runtime's socket (`None`: the usual ones).
    pub cri_socket: Option<PathBuf>,
    /// Directories of CDI specs.
    pub cdi_dirs: Vec<PathBuf>,
    /// Where the host's `/dev` is.
    pub dev_root: PathBuf,
}

/// The allocations of the running containers, as of one `List`.
#[derive(Debug, Clone)]
pub struct Listing {
    /// The containers of running pods.
    pub containers: Vec<Container>,
    /// When the last `List` answered (a `Get` updates one pod of it).
    pub listed_at: Instant,
    /// The same, as Unix time.
    pub listed_unix: Duration,
    /// CDI specs that could not be read, each with why.
    pub invalid_cdi: Vec<(PathBuf, String)>,
}

/// What the reader reports.
#[derive(Debug, Clone)]
pub enum Report {
    /// A new listing, after a `List` or a `Get` that changed a pod.
    Listed(Arc<Listing>),
    /// A `Get` answered at this instant found no such pod: kubelet does
    /// not list it (yet).
    Unlisted(PodName, Instant),
    /// A call failed: `reason` is the label it is counted under.
    Failed {
        /// `absent`, `unavailable`, `rate_limited`, `unimplemented` or
        /// `runtime`.
        reason: &'static str,
        /// One line for the log.
        message: String,
    },
}

/// A pod to ask kubelet about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodName {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// Starts the reader; pods to `Get` go in, reports come out.
pub fn spawn(
    settings: Settings,
) -> (
    mpsc::UnboundedSender<PodName>,
    mpsc::UnboundedReceiver<Report>,
) {
    let (want_tx, want_rx) = mpsc::unbounded_channel();
    let (report_tx, report_rx) = mpsc::unbounded_channel();
    tokio::spawn(run(settings, want_rx, report_tx));
    (want_tx, report_rx)
}

async fn run(
    settings: Settings,
    mut wants: mpsc::UnboundedReceiver<PodName>,
    reports: mpsc::UnboundedSender<Report>,
) {
    let mut reader = Reader {
        kubelet: Kubelet::new(settings.socket.clone(), settings.timeout),
        cri: Cri::new(settings.cri_socket.clone(), settings.timeout),
        pods: Vec::new(),
        listed: None,
        cdi_seen: HashMap::new(),
        get: true,
        last_call: None,
        settings,
        reports,
    };
    let mut tick = tokio::time::interval(reader.settings.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => reader.list().await,
            want = wants.recv() => match want {
                Some(pod) => reader.get(pod).await,
                None => return,
            },
        }
    }
}

struct Reader {
    kubelet: Kubelet,
    cri: Cri,
    settings: Settings,
    /// kubelet's last `List`, with `Get`s applied.
    pods: Vec<Fetched>,
    /// When that `List` answered.
    listed: Option<(Instant, Duration)>,
    /// CDI devices as last read, for claims whose transient spec is
    /// removed while their container still runs.
    cdi_seen: HashMap<String, Vec<DevNum>>,
    /// Whether kubelet implements `Get`.
    get: bool,
    last_call: Option<Instant>,
    reports: mpsc::UnboundedSender<Report>,
}

impl Reader {
    async fn list(&mut self) {
        self.pace().await;
        match self.kubelet.list().await {
            Ok(pods) => {
                let at = Instant::now();
                self.pods = pods.into_iter().map(|pod| Fetched { pod, at }).collect();
                let unix = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default();
                self.listed = Some((at, unix));
                self.publish().await;
            }
            Err(e) => self.failed(&e),
        }
    }

    async fn get(&mut self, pod: PodName) {
        if self.listed.is_none() || self.known(&pod) {
            return;
        }
        if !self.get {
            return self.list().await;
        }
        self.pace().await;
        match self.kubelet.get(&pod.namespace, &pod.name).await {
            Ok(Some(pod)) => {
                self.pods.push(Fetched {
                    pod,
                    at: Instant::now(),
                });
                self.publish().await;
            }
            Ok(None) => {
                let _ = self.reports.send(Report::Unlisted(pod, Instant::now()));
            }
            Err(e @ CallError::Unimplemented(_)) => {
                self.get = false;
                self.failed(&e);
                self.list().await;
            }
            Err(e) => self.failed(&e),
        }
    }

    fn known(&self, pod: &PodName) -> bool {
        self.pods
            .iter()
            .any(|f| f.pod.namespace == pod.namespace && f.pod.name == pod.name)
    }

    /// Waits until [`MIN_GAP`] has passed since the last call.
    async fn pace(&mut self) {
        if let Some(last) = self.last_call {
            tokio::time::sleep_until((last + MIN_GAP).into()).await;
        }
        self.last_call = Some(Instant::now());
    }

    fn failed(&self, e: &CallError) {
        let _ = self.reports.send(Report::Failed {
            reason: e.reason(),
            message: e.to_string(),
        });
    }

    /// Joins the pods with the runtime's ready pods and the CDI specs, and
    /// reports the listing.
    async fn publish(&mut self) {
        let Some((listed_at, listed_unix)) = self.listed else {
            return;
        };
        let ready = match self.cri.ready_pods().await {
            Ok(ready) => ready,
            Err(e) => {
                let _ = self.reports.send(Report::Failed {
                    reason: "runtime",
                    message: format!("cannot tell running pods from finished ones: {e}"),
                });
                return;
            }
        };
        let mut uids: HashMap<(&str, &str), Vec<&str>> = HashMap::new();
        for (owner, uid) in &ready {
            uids.entry((&owner.namespace, &owner.pod))
                .or_default()
                .push(uid);
        }
        let specs = cdi::read(&self.settings.cdi_dirs, &self.settings.dev_root);
        let mut cdi = HashMap::new();
        for name in listing::cdi_names(&self.pods) {
            if let Some(nodes) = specs.devices.get(name).or_else(|| self.cdi_seen.get(name)) {
                cdi.insert(name.to_owned(), nodes.clone());
            }
        }
        // Two ready sandboxes under one name (a pod being replaced): which
        // one kubelet means is not known, so neither is taken.
        let uid_of = |namespace: &str, name: &str| match uids.get(&(namespace, name))?.as_slice() {
            [uid] => Some(*uid),
            _ => None,
        };
        let containers = listing::containers(&self.pods, uid_of, &cdi);
        self.cdi_seen = cdi;
        let listing = Listing {
            containers,
            listed_at,
            listed_unix,
            invalid_cdi: specs.invalid,
        };
        let _ = self.reports.send(Report::Listed(Arc::new(listing)));
    }
}
