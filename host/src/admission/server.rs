//! The admission socket: a task that takes each hook's arrival, finds
//! the cgroup it names, hands it to the agent's loop, and writes the
//! loop's answer back. Only root may connect: the socket is 0600, and the
//! runtime runs its hooks as root.

use std::{
    io,
    os::{linux::fs::MetadataExt, unix::fs::PermissionsExt},
    path::{Component, Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::{UnixListener, UnixStream},
    sync::{mpsc, oneshot},
};
use tracing::{debug, warn};

use super::wire::{self, Answer, Arrival};

/// How long a hook may take to say which container it holds.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// A container held at its creation until the loop answers.
#[derive(Debug)]
pub struct Held {
    /// What the hook said.
    pub arrival: Arrival,
    /// Its cgroup's id (the cgroup directory's inode).
    pub cgroup_id: u64,
    /// Its cgroup's path under the cgroup root.
    pub path: PathBuf,
    /// Where the loop's answer goes.
    pub answer: oneshot::Sender<Answer>,
}

/// Binds the socket at `path`, replacing a predecessor's; says in one
/// line what is wrong when it cannot.
pub fn bind(path: &Path) -> anyhow::Result<UnixListener> {
    let fail = |what: &str, e: io::Error| {
        anyhow::anyhow!(
            "cannot {what} the admission socket {}: {e} (give a writable path with --admission-socket)",
            path.display()
        )
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail("create the directory of", e))?;
    }
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(fail("replace", e)),
        _ => {}
    }
    let listener = UnixListener::bind(path).map_err(|e| fail("bind", e))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(|e| fail("restrict", e))?;
    Ok(listener)
}

/// Serves hooks on `listener` until the loop stops taking arrivals;
/// `cgroup_root` is where their cgroup paths are.
pub async fn serve(
    listener: UnixListener,
    cgroup_root: PathBuf,
    loop_tx: mpsc::UnboundedSender<Held>,
) {
    // A cgroup the agent cannot find is a setting to fix: said once.
    let warned = Arc::new(AtomicBool::new(false));
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    debug!("admission: accept: {e}");
                    continue;
                }
            },
            _ = loop_tx.closed() => return,
        };
        let (root, loop_tx, warned) = (cgroup_root.clone(), loop_tx.clone(), warned.clone());
        tokio::spawn(async move {
            if let Err(e) = converse(stream, &root, loop_tx, &warned).await {
                debug!("admission: {e}");
            }
        });
    }
}

/// One hook's conversation: its arrival in, the loop's answer out.
async fn converse(
    stream: UnixStream,
    root: &Path,
    loop_tx: mpsc::UnboundedSender<Held>,
    warned: &AtomicBool,
) -> io::Result<()> {
    let (reader, mut writer) = stream.into_split();
    let mut line = Vec::new();
    let mut reader = BufReader::new(reader).take(wire::MAX_LINE as u64 + 1);
    tokio::time::timeout(READ_TIMEOUT, reader.read_until(b'\n', &mut line))
        .await
        .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "the hook said nothing"))??;
    let arrival: Arrival = wire::parse(&line)?;
    let answer = match cgroup_of(root, &arrival.cgroup) {
        Ok((path, cgroup_id)) => {
            let (tx, rx) = oneshot::channel();
            let held = Held {
                arrival,
                cgroup_id,
                path,
                answer: tx,
            };
            if loop_tx.send(held).is_err() {
                return Ok(());
            }
            rx.await.unwrap_or(Answer::Unruled {
                why: "the agent is stopping".into(),
            })
        }
        Err(why) => {
            if !warned.swap(true, Ordering::Relaxed) {
                warn!(
                    "admission: {why}: the agent's cgroup root is not the hierarchy the runtime places containers in (give the node's cgroup2 mount with --cgroup-root); such containers are ruled at their first open, after that call"
                );
            }
            Answer::Unruled { why }
        }
    };
    let mut reply = Vec::new();
    wire::write_line(&mut reply, &answer)?;
    writer.write_all(&reply).await
}

/// The path under `root` and the id of the cgroup `named` (as
/// `/proc/<pid>/cgroup` gives it), or why it cannot be found.
fn cgroup_of(root: &Path, named: &str) -> Result<(PathBuf, u64), String> {
    let path = PathBuf::from(named.trim_start_matches('/'));
    if !path.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(format!("cgroup {named:?} is not a plain path"));
    }
    match std::fs::metadata(root.join(&path)) {
        Ok(meta) => Ok((path, meta.st_ino())),
        Err(e) => Err(format!(
            "cgroup {named} is not under {}: {e}",
            root.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cgroup_is_found_by_its_path_and_nothing_outside_the_root() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("kubepods/pod1/abc");
        std::fs::create_dir_all(&dir).unwrap();
        let (path, id) = cgroup_of(root.path(), "/kubepods/pod1/abc").unwrap();
        assert_eq!(path, Path::new("kubepods/pod1/abc"));
        assert_eq!(id, std::fs::metadata(&dir).unwrap().st_ino());
        assert!(cgroup_of(root.path(), "/kubepods/../etc").is_err());
        let missing = cgroup_of(root.path(), "/kubepods/pod2").unwrap_err();
        assert!(missing.contains("is not under"), "{missing}");
    }

    #[tokio::test]
    async fn a_hook_gets_the_loops_answer_and_a_bad_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("cgroup");
        std::fs::create_dir_all(root.join("kubepods/c1")).unwrap();
        let socket = dir.path().join("run/admission.sock");
        let listener = bind(&socket).unwrap();
        let mode = std::fs::metadata(&socket).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let (tx, mut rx) = mpsc::unbounded_channel();
        tokio::spawn(serve(listener, root, tx));
        tokio::spawn(async move {
            while let Some(held) = rx.recv().await {
                let mode = format!("enforce {}", held.arrival.container);
                let _ = held.answer.send(Answer::Ruled { mode });
            }
        });
        let ask = |line: String| {
            let socket = socket.clone();
            async move {
                let mut stream = UnixStream::connect(&socket).await.unwrap();
                stream.write_all(line.as_bytes()).await.unwrap();
                let mut reply = Vec::new();
                stream.read_to_end(&mut reply).await.unwrap();
                reply
            }
        };
        let reply = ask("{\"container\":\"c1\",\"cgroup\":\"/kubepods/c1\"}\n".into()).await;
        let answer: Answer = wire::parse(&reply).unwrap();
        assert_eq!(
            answer,
            Answer::Ruled {
                mode: "enforce c1".into()
            }
        );
        let reply = ask("{\"container\":\"c2\",\"cgroup\":\"/kubepods/c2\"}\n".into()).await;
        let answer: Answer = wire::parse(&reply).unwrap();
        assert!(matches!(answer, Answer::Unruled { why } if why.contains("is not under")));
        assert!(ask("not json\n".into()).await.is_empty());
    }
}
