//! What the OCI hook and the agent say to each other over the admission
//! socket: one JSON line each way. The hook names the container and its
//! cgroup; the agent answers once the container is ruled, or once it
//! knows it will not rule it, so the hook can let the runtime start it.

use std::io::{self, BufRead, Write};

use serde::{Deserialize, Serialize};

/// The longest line either side reads: a container id and a cgroup path
/// fit many times over; anything longer is not a peer of ours.
pub const MAX_LINE: usize = 4096;

/// The hook's question: the container being created, with the cgroup its
/// first process already sits in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Arrival {
    /// The runtime's id of the container.
    pub container: String,
    /// Its cgroup, as `/proc/<pid>/cgroup` names it in the unified
    /// hierarchy (`/kubepods/.../<id>`).
    pub cgroup: String,
}

/// The agent's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "lowercase")]
pub enum Answer {
    /// The container's rules are in the kernel, in this mode (`audit` or
    /// `enforce`), before its process runs.
    Ruled {
        /// The mode of its rule.
        mode: String,
    },
    /// The agent does not rule this container, and says why: it is not a
    /// container of a pod kubelet listed, its namespace is off, or the
    /// agent's wait ran out. Its first call is not checked.
    Unruled {
        /// Why, in a few words.
        why: String,
    },
}

/// Writes `message` as one line.
pub fn write_line<T: Serialize>(mut to: impl Write, message: &T) -> io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    to.write_all(&line)?;
    to.flush()
}

/// Reads one line of at most [`MAX_LINE`] bytes and parses it.
pub fn read_line<T: for<'de> Deserialize<'de>>(from: impl BufRead) -> io::Result<T> {
    let mut line = Vec::new();
    from.take(MAX_LINE as u64 + 1)
        .read_until(b'\n', &mut line)?;
    parse(&line)
}

/// Parses one line as read, its newline included.
pub fn parse<T: for<'de> Deserialize<'de>>(line: &[u8]) -> io::Result<T> {
    if line.len() > MAX_LINE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a line longer than {MAX_LINE} bytes"),
        ));
    }
    if !line.ends_with(b"\n") {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the peer closed before the end of its line",
        ));
    }
    serde_json::from_slice(line).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_side_reads_what_the_other_writes() {
        let arrival = Arrival {
            container: "0123abcd".into(),
            cgroup: "/kubepods/besteffort/pod1/0123abcd".into(),
        };
        let mut line = Vec::new();
        write_line(&mut line, &arrival).unwrap();
        assert_eq!(read_line::<Arrival>(&line[..]).unwrap(), arrival);
        for answer in [
            Answer::Ruled {
                mode: "enforce".into(),
            },
            Answer::Unruled {
                why: "outside pods".into(),
            },
        ] {
            let mut line = Vec::new();
            write_line(&mut line, &answer).unwrap();
            assert_eq!(read_line::<Answer>(&line[..]).unwrap(), answer);
        }
    }

    #[test]
    fn a_cut_or_endless_line_is_refused() {
        let cut = read_line::<Answer>(&br#"{"outcome":"ruled""#[..]).unwrap_err();
        assert_eq!(cut.kind(), io::ErrorKind::UnexpectedEof);
        let endless = vec![b' '; MAX_LINE + 10];
        let error = read_line::<Answer>(&endless[..]).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidData);
    }
}
