//! Reading strace's lines.

use std::collections::HashMap;

use anyhow::{Context as _, Result, bail};

/// One ioctl a traced process made on a device node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The process (thread) that made it.
    pub pid: u32,
    /// The device node's path, as the process named it.
    pub node: String,
    /// Its device number, `MAJOR:MINOR`.
    pub device: String,
    /// The ioctl request.
    pub request: u32,
    /// How it returned.
    pub ending: Ending,
}

/// How a call returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// A value of 0 or more.
    Done,
    /// `-1` with this errno (`EBUSY`, `ENOENT`, ...).
    Error(String),
    /// The trace ended inside it (the process was killed).
    Unfinished,
}

/// What a record holds.
#[derive(Debug, Default)]
pub struct Record {
    /// The ioctls on device nodes, in the order they began.
    pub calls: Vec<Call>,
    /// ioctls on descriptors strace did not name as a device: files,
    /// sockets, closed descriptors (`EBADF`), or a record made without
    /// `-yy`.
    pub elsewhere: usize,
}

/// Reads a record of `strace -f -yy -X raw -e trace=ioctl`. A call a
/// signal interrupted that the kernel restarts (`= ? ERESTARTSYS`) is one
/// call with its restart, which strace shows as another line: it is
/// counted there.
pub fn parse(trace: &str) -> Result<Record> {
    let mut record = Record::default();
    // Per process, the call strace left `<unfinished ...>`: its index in
    // `calls`, or `None` for one on no device.
    let mut open: HashMap<u32, Option<usize>> = HashMap::new();
    // Calls whose resumption was a restarted run, not their end.
    let mut restarted = Vec::new();
    for (number, line) in trace.lines().enumerate() {
        let at = || format!("line {}: {line:?}", number + 1);
        let Some((pid, rest)) = line.trim_start().split_once(char::is_whitespace) else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            bail!("{}: not a record of strace -f (no process id first)", at());
        };
        let rest = rest.trim_start();
        if let Some(result) = rest.strip_prefix("<... ioctl resumed>") {
            let index = open
                .remove(&pid)
                .with_context(|| format!("{}: resumes no call", at()))?;
            if let Some(index) = index {
                match ending(result) {
                    Some(ended) => record.calls[index].ending = ended,
                    None => restarted.push(index),
                }
            }
            continue;
        }
        let Some(arguments) = rest.strip_prefix("ioctl(") else {
            continue;
        };
        let unfinished = arguments.ends_with("<unfinished ...>");
        let Some((device, node, request)) = device_call(arguments) else {
            record.elsewhere += 1;
            if unfinished {
                open.insert(pid, None);
            }
            continue;
        };
        let request =
            u32::from_str_radix(request.trim_start_matches("0x"), 16).with_context(|| {
                format!("{}: the request is not a number: record with -X raw", at())
            })?;
        let ending = if unfinished {
            open.insert(pid, Some(record.calls.len()));
            Some(Ending::Unfinished)
        } else {
            let (_, result) = arguments
                .rsplit_once(") = ")
                .with_context(|| format!("{}: no result", at()))?;
            ending(&format!(") = {result}"))
        };
        if let Some(ending) = ending {
            record.calls.push(Call {
                pid,
                node: node.to_owned(),
                device: device.to_owned(),
                request,
                ending,
            });
        }
    }
    let mut index = 0;
    record.calls.retain(|_| {
        index += 1;
        !restarted.contains(&(index - 1))
    });
    Ok(record)
}

/// `(device, node, request)` of an ioctl's arguments whose descriptor
/// strace named as a character device: `3</dev/dri/card0<char 226:0>>,
/// 0xc0286442, ...`.
fn device_call(arguments: &str) -> Option<(&str, &str, &str)> {
    let (descriptor, rest) = arguments.split_once(">>, ")?;
    let (_, named) = descriptor.split_once('<')?;
    let (node, device) = named.split_once("<char ")?;
    let request = rest.split([',', ' ', ')']).next()?;
    Some((device, node, request))
}

/// How a call ended, from what follows its arguments (`) = 0`,
/// `) = -1 EBUSY (Device or resource busy)`); `None` for a run the kernel
/// restarts (`) = ? ERESTARTSYS ...`), which is not the call's end.
fn ending(result: &str) -> Option<Ending> {
    let value = result.trim_start().strip_prefix(") = ")?.trim_start();
    if value.starts_with("? ERESTART") {
        return None;
    }
    match value.strip_prefix("-1 ") {
        Some(errno) => Some(Ending::Error(
            errno
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_owned(),
        )),
        None => Some(Ending::Done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_on_devices_are_read_with_their_endings_and_the_rest_is_counted_apart() {
        let record = parse(
            "11    ioctl(3</dev/dri/card0<char 226:0>>, 0xc0286442, 0x7ffc2d1acfd0) = 0\n\
             11    ioctl(3</dev/dri/card0<char 226:0>>, 0xc0086448, 0x7ffc2d1acfd0) = -1 EBUSY (Device or resource busy)\n\
             12    ioctl(4</dev/dri/renderD128<char 226:128>>, 0xc0086448, 0x7f <unfinished ...>\n\
             11    ioctl(1</out/log>, 0x5401, 0x7ffe55735660) = -1 ENOTTY (Inappropriate ioctl for device)\n\
             11    ioctl(5, 0x40086409, 0x7ffe55735860) = -1 EBADF (Bad file descriptor)\n\
             12    <... ioctl resumed>) = 0\n\
             13    ioctl(3</dev/dri/card0<char 226:0>>, 0xc0086448, 0x7f) = ? ERESTARTSYS (To be restarted if SA_RESTART is set)\n\
             13    --- SIGALRM {si_signo=SIGALRM} ---\n\
             13    ioctl(3</dev/dri/card0<char 226:0>>, 0xc0086448, 0x7f) = -1 ETIME (Timer expired)\n\
             14    ioctl(3</dev/dri/card0<char 226:0>>, 0xc0286442, 0x7f <unfinished ...>\n\
             14    +++ killed by SIGKILL +++\n",
        )
        .unwrap();
        let seen: Vec<_> = record
            .calls
            .iter()
            .map(|c| (c.pid, c.device.as_str(), c.request & 0xff, c.ending.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                (11, "226:0", 0x42, Ending::Done),
                (11, "226:0", 0x48, Ending::Error("EBUSY".into())),
                (12, "226:128", 0x48, Ending::Done),
                (13, "226:0", 0x48, Ending::Error("ETIME".into())),
                (14, "226:0", 0x42, Ending::Unfinished),
            ]
        );
        assert_eq!(record.calls[2].node, "/dev/dri/renderD128");
        assert_eq!(record.elsewhere, 2);
    }

    #[test]
    fn a_record_strace_did_not_make_as_asked_is_refused_in_one_line() {
        let named = parse("11 ioctl(3</dev/dri/card0<char 226:0>>, DRM_IOCTL_VERSION, 0x7f) = 0")
            .unwrap_err();
        assert!(named.to_string().contains("-X raw"), "{named}");
        let without_pids =
            parse("ioctl(3</dev/dri/card0<char 226:0>>, 0xc0286442, 0x7f) = 0").unwrap_err();
        assert!(
            without_pids.to_string().contains("strace -f"),
            "{without_pids}"
        );
    }
}
