//! File descriptors handed from one replay process of `--all` to another (`replay::peers`):
//! memory exported as a POSIX file descriptor (`cuMemExportToShareableHandle`) is opened in
//! another process only through a descriptor of the same file, which only a Unix socket can
//! carry (`SCM_RIGHTS`). A process that exports serves its descriptors on a socket of the
//! rendezvous folder (`fds-<pid>.sock`, one thread), each under the key that pairs it with its
//! imports; a process that imports asks that socket for the key and receives a descriptor.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use anyhow::{bail, Context, Result};

/// The descriptors this process serves, by key.
type Served = Arc<Mutex<HashMap<Vec<u8>, OwnedFd>>>;

/// This process's server: its socket and what it serves (started on the first export).
static SERVER: OnceLock<(PathBuf, Served)> = OnceLock::new();

/// Serve `fd` under `key` from this process's socket in `dir` (started if need be): the
/// socket's path.
pub fn serve(dir: &Path, key: &[u8], fd: OwnedFd) -> Result<PathBuf> {
    let (path, served) = match SERVER.get() {
        Some(s) => s,
        None => {
            let path = dir.join(format!("fds-{}.sock", std::process::id()));
            let listener = UnixListener::bind(&path)
                .with_context(|| format!("listening on {}", path.display()))?;
            let served: Served = Arc::default();
            let map = served.clone();
            std::thread::Builder::new()
                .name("hrr-fd-server".into())
                .spawn(move || {
                    for stream in listener.incoming().flatten() {
                        let _ = answer(stream, &map);
                    }
                })
                .context("starting the descriptor server")?;
            SERVER.get_or_init(|| (path, served))
        }
    };
    served
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key.to_vec(), fd);
    Ok(path.clone())
}

/// One request: a key (u32 length, then its bytes); the answer one byte, with the descriptor
/// attached when the key is served (1) or alone when it is not (0).
fn answer(mut stream: UnixStream, served: &Served) -> std::io::Result<()> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len)?;
    let len = u32::from_le_bytes(len) as usize;
    if len > 4096 {
        return stream.write_all(&[0]);
    }
    let mut key = vec![0u8; len];
    stream.read_exact(&mut key)?;
    let map = served.lock().unwrap_or_else(|e| e.into_inner());
    match map.get(&key) {
        Some(fd) => send_fd(stream.as_raw_fd(), fd.as_raw_fd()),
        None => stream.write_all(&[0]),
    }
}

/// Ask the server at `socket` for the descriptor served under `key`.
pub fn fetch(socket: &Path, key: &[u8]) -> Result<OwnedFd> {
    let mut stream = UnixStream::connect(socket)
        .with_context(|| format!("connecting to {}", socket.display()))?;
    let mut req = (key.len() as u32).to_le_bytes().to_vec();
    req.extend_from_slice(key);
    stream.write_all(&req).context("asking for a descriptor")?;
    match recv_fd(stream.as_raw_fd()).context("receiving a descriptor")? {
        Some(fd) => Ok(fd),
        None => bail!("{} serves no descriptor under that key", socket.display()),
    }
}

/// Run `f` on a message of the one byte `byte` with room for one descriptor attached.
fn with_message<R>(byte: &mut [u8; 1], f: impl FnOnce(&mut libc::msghdr) -> R) -> R {
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr() as *mut c_void,
        iov_len: 1,
    };
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<c_int>() as u32) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: a zeroed msghdr is valid; the pointers set here outlive `f`.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut c_void;
    msg.msg_controllen = space as _;
    f(&mut msg)
}

/// Send one byte with `fd` attached (`SCM_RIGHTS`).
fn send_fd(sock: RawFd, fd: RawFd) -> std::io::Result<()> {
    with_message(&mut [1u8], |msg| {
        // SAFETY: the control buffer has room for one header carrying one descriptor.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<c_int>() as u32) as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(c) as *mut c_int, fd);
            if libc::sendmsg(sock, msg, 0) < 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    })
}

/// Receive one byte and the descriptor attached to it (`None`: the byte came alone).
fn recv_fd(sock: RawFd) -> std::io::Result<Option<OwnedFd>> {
    let mut byte = [0u8];
    let (n, fd) = with_message(&mut byte, |msg| {
        // SAFETY: a descriptor read from a SCM_RIGHTS header is a new one of this process.
        unsafe {
            let n = libc::recvmsg(sock, msg, libc::MSG_CMSG_CLOEXEC);
            let c = libc::CMSG_FIRSTHDR(msg);
            let fd = (n == 1 && !c.is_null() && (*c).cmsg_type == libc::SCM_RIGHTS)
                .then(|| std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const c_int));
            (n, fd)
        }
    });
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: as above (owned, so closed even when the byte says no).
    let fd = fd.map(|fd| unsafe { OwnedFd::from_raw_fd(fd) });
    Ok(fd.filter(|_| byte[0] == 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Seek;

    #[test]
    fn a_served_descriptor_reaches_another_socket_user_as_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"shared bytes").unwrap();
        let socket = serve(dir.path(), b"key-1", OwnedFd::from(f)).unwrap();
        let got = fetch(&socket, b"key-1").unwrap();
        let mut same = std::fs::File::from(got);
        same.rewind().unwrap();
        let mut s = String::new();
        same.read_to_string(&mut s).unwrap();
        assert_eq!(s, "shared bytes");
        let e = fetch(&socket, b"other").unwrap_err();
        assert!(format!("{e:#}").contains("serves no descriptor"), "{e:#}");
    }
}
