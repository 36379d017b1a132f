//! Passing an open device node between processes over a unix socket
//! (`SCM_RIGHTS`), as a process hands a DRM fd to another: the receiver's
//! calls on it are its own, whoever opened it.

use std::{
    fs::File,
    io,
    os::{
        fd::{AsRawFd as _, FromRawFd as _},
        unix::net::{UnixListener, UnixStream},
    },
    path::Path,
    time::Duration,
};

/// Room for one fd in a control message.
const CONTROL: usize = 64;

/// Sends `file` to the process listening at `socket`, waiting for it to
/// listen.
pub fn send(file: &File, socket: &Path) -> Result<(), String> {
    let stream = loop {
        match UnixStream::connect(socket) {
            Ok(stream) => break stream,
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(format!("cannot connect to {}: {e}", socket.display())),
        }
    };
    let fd = file.as_raw_fd();
    let (mut byte, mut control) = ([0u8; 1], [0u8; CONTROL]);
    let mut iov = iovec(&mut byte);
    // SAFETY: the CMSG macros stay inside `control`, which is large
    // enough for one fd.
    let sent = unsafe {
        let mut message = message(&mut iov, &mut control);
        message.msg_controllen = libc::CMSG_SPACE(size_of::<i32>() as u32) as _;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = libc::SOL_SOCKET;
        (*header).cmsg_type = libc::SCM_RIGHTS;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<i32>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<i32>(), fd);
        libc::sendmsg(stream.as_raw_fd(), &message, 0)
    };
    if sent != 1 {
        return Err(format!("sendmsg: {}", io::Error::last_os_error()));
    }
    Ok(())
}

/// Listens at `socket` (replacing a stale one) and returns the first fd a
/// peer sends.
pub fn receive(socket: &Path) -> Result<File, String> {
    let _ = std::fs::remove_file(socket);
    let listener = UnixListener::bind(socket)
        .map_err(|e| format!("cannot listen at {}: {e}", socket.display()))?;
    let (stream, _) = listener
        .accept()
        .map_err(|e| format!("accept at {}: {e}", socket.display()))?;
    let (mut byte, mut control) = ([0u8; 1], [0u8; CONTROL]);
    let mut iov = iovec(&mut byte);
    // SAFETY: as in `send`; the kernel writes at most `msg_controllen`.
    let fd = unsafe {
        let mut message = message(&mut iov, &mut control);
        if libc::recvmsg(stream.as_raw_fd(), &mut message, 0) != 1 {
            return Err(format!("recvmsg: {}", io::Error::last_os_error()));
        }
        let header = libc::CMSG_FIRSTHDR(&message);
        if header.is_null() || (*header).cmsg_type != libc::SCM_RIGHTS {
            return Err("the peer sent no file descriptor".into());
        }
        std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<i32>())
    };
    // SAFETY: the kernel installed `fd` in this process for us alone.
    Ok(unsafe { File::from_raw_fd(fd) })
}

/// One byte of payload: a control message needs some.
fn iovec(byte: &mut [u8; 1]) -> libc::iovec {
    libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    }
}

/// A message of `iov`, with `control` for its control message.
fn message(iov: &mut libc::iovec, control: &mut [u8; CONTROL]) -> libc::msghdr {
    // SAFETY: a msghdr is plain data; zeroed is empty.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = control.len() as _;
    message
}
