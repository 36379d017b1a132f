//! The CRI conversation, as a task of its own so a slow or absent runtime
//! never holds up counting. Questions queue while the runtime is away and
//! are asked again when it answers; each change of the runtime's health is
//! reported once.

use std::{collections::VecDeque, path::PathBuf, time::Duration};

use tokio::sync::mpsc;

use super::{
    Owner,
    cri::{Cri, CriError},
};

/// A question for the runtime.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ask {
    /// Who owns the container with this id.
    Container(String),
    /// Which pod has this UID.
    Pod(String),
}

/// What the resolver reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Report {
    /// The answer to a question: `None` when the runtime does not know it.
    Answer(Ask, Option<Owner>),
    /// The runtime stopped answering (or was never found).
    Down(CriError),
    /// The runtime answers (again).
    Up(PathBuf),
}

/// Starts the resolver; questions go in, reports come out. `retry` is how
/// often an absent runtime is tried again and a present one checked.
pub fn spawn(
    cri: Cri,
    retry: Duration,
) -> (mpsc::UnboundedSender<Ask>, mpsc::UnboundedReceiver<Report>) {
    let (ask_tx, ask_rx) = mpsc::unbounded_channel();
    let (report_tx, report_rx) = mpsc::unbounded_channel();
    tokio::spawn(run(cri, retry, ask_rx, report_tx));
    (ask_tx, report_rx)
}

async fn run(
    mut cri: Cri,
    retry: Duration,
    mut asks: mpsc::UnboundedReceiver<Ask>,
    reports: mpsc::UnboundedSender<Report>,
) {
    let mut resolver = Resolver {
        pending: VecDeque::new(),
        up: None,
        reports,
    };
    let mut tick = tokio::time::interval(retry);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            ask = asks.recv() => match ask {
                Some(ask) => {
                    if !resolver.pending.contains(&ask) {
                        resolver.pending.push_back(ask);
                    }
                    if resolver.up != Some(false) {
                        resolver.work(&mut cri).await;
                    }
                }
                None => return,
            },
            _ = tick.tick() => {
                if resolver.pending.is_empty() {
                    let health = cri.ping().await;
                    resolver.health(health.map(|()| cri.socket()));
                } else {
                    resolver.work(&mut cri).await;
                }
            }
        }
    }
}

struct Resolver {
    pending: VecDeque<Ask>,
    /// `None` until the first call.
    up: Option<bool>,
    reports: mpsc::UnboundedSender<Report>,
}

impl Resolver {
    /// Asks every pending question until the runtime fails.
    async fn work(&mut self, cri: &mut Cri) {
        while let Some(ask) = self.pending.front() {
            let answer = match ask {
                Ask::Container(id) => cri.container(id).await,
                Ask::Pod(uid) => cri.pod(uid).await,
            };
            match answer {
                Ok(owner) => {
                    self.health(Ok(cri.socket()));
                    let ask = self.pending.pop_front().expect("front exists");
                    let _ = self.reports.send(Report::Answer(ask, owner));
                }
                Err(e) => {
                    self.health(Err(e));
                    return;
                }
            }
        }
    }

    /// Reports a change of health, once.
    fn health(&mut self, now: Result<Option<PathBuf>, CriError>) {
        let up = now.is_ok();
        if self.up == Some(up) {
            return;
        }
        self.up = Some(up);
        let _ = self.reports.send(match now {
            Ok(socket) => Report::Up(socket.unwrap_or_default()),
            Err(e) => Report::Down(e),
        });
    }
}
