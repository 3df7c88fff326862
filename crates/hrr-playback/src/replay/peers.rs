//! Several recorded processes replayed together (`hrr-playback ROOT --all`, `crate::all`): one
//! replay process per recorded `pid-*` folder, all sharing a rendezvous folder named by
//! [`PEERS_ENV`]. Through it they
//!
//! - **re-pair IPC handles**: a replayed `cuIpcGetMemHandle` publishes the handle the live driver
//!   gave, under the recorded handle's bytes ([`Rendezvous::publish`]); a replayed
//!   `cuIpcOpenMemHandle` in another process waits for the live handle filed under the
//!   recorded one it opened ([`Rendezvous::wait_for`]);
//! - **keep the recorded order across processes**: each process keeps the recorded time of the
//!   event it is at in a shared progress slot (`progress-<pid>`, 8 bytes, mapped by all); before
//!   an event that reaches the device (launches, copies, synchronisations, events, IPC calls:
//!   every call but queries, look-ups, attributes and code loads), a process waits until every
//!   other one has reached that recorded time or ended ([`Peers::before`]). Work the processes
//!   share (one writes, another reads after a pipe or a socket told it to) then happens in the
//!   order it happened when recorded. An event's time is when its call returned, so the process
//!   at the earliest time always proceeds (no process waits for one that waits for it). Events
//!   are timestamped with the host's realtime clock, so the processes must have been recorded on
//!   one host. A peer that makes no progress for [`STALL`] stops being waited for (said on
//!   stderr).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hrr_calls::Kind;

/// The rendezvous folder of the replay processes of one `--all` replay.
pub const PEERS_ENV: &str = "HRR_REPLAY_PEERS";

/// The process this replay process replays (its `pid-<pid>` folder's), once
/// [`Peers::from_env`] knew it.
static RECORDED_PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// A progress slot's value once its process has ended.
const DONE: u64 = u64::MAX;

/// How long a peer may make no progress before it is no longer waited for.
const STALL: Duration = Duration::from_secs(60);

/// How long a process waits for a handle another one must publish.
const HANDLE_WAIT: Duration = Duration::from_secs(120);

/// This replay process's progress, and the other processes'.
pub struct Peers {
    own: memmap2::MmapMut,
    others: Vec<(String, memmap2::MmapMut)>,
    /// Peers given up on (they stalled).
    given_up: Vec<bool>,
}

/// The progress file of the process recorded with `pid` (created by `--all`, 8 zero bytes).
pub fn progress_file(dir: &Path, pid: u32) -> PathBuf {
    dir.join(format!("progress-{pid}"))
}

/// Mark the replay process of `pid` ended (`--all`, once it exited: one that failed before it
/// mapped its slot never marked itself, and the others would wait for it).
pub fn mark_ended(dir: &Path, pid: u32) {
    let _ = map(&progress_file(dir, pid)).map(|m| slot(&m).store(DONE, Ordering::Release));
}

fn map(path: &Path) -> Result<memmap2::MmapMut> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    if f.metadata()?.len() != 8 {
        bail!("{} is not a progress slot (8 bytes)", path.display());
    }
    // SAFETY: a file of this replay's own rendezvous folder, 8 bytes, only read and written
    // through atomics.
    unsafe { memmap2::MmapMut::map_mut(&f) }.with_context(|| format!("mapping {}", path.display()))
}

fn slot(m: &memmap2::MmapMut) -> &AtomicU64 {
    // SAFETY: the mapping is 8 bytes, page-aligned.
    unsafe { &*(m.as_ptr() as *const AtomicU64) }
}

impl Peers {
    /// The rendezvous named by [`PEERS_ENV`], for the process recorded with `pid` (`None`: this
    /// replay is alone).
    pub fn from_env(pid: u32) -> Result<Option<Peers>> {
        let Some(dir) = std::env::var_os(PEERS_ENV) else {
            return Ok(None);
        };
        let dir = PathBuf::from(dir);
        let own = map(&progress_file(&dir, pid))
            .with_context(|| format!("{PEERS_ENV}: no progress slot of pid {pid}"))?;
        let _ = RECORDED_PID.set(pid);
        let mut others = Vec::new();
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .with_context(|| format!("reading {}", dir.display()))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("progress-") && *n != format!("progress-{pid}"))
            .collect();
        entries.sort();
        for name in entries {
            others.push((name.clone(), map(&dir.join(&name))?));
        }
        let given_up = vec![false; others.len()];
        Ok(Some(Peers {
            own,
            others,
            given_up,
        }))
    }

    /// Before an event recorded at `ts` (when its call returned) whose call is of `kind`: note
    /// the progress, and unless the call stays on the host (queries, look-ups, attributes, code
    /// loads), wait until every other process reached `ts` or ended.
    pub fn before(&mut self, ts: u64, kind: Option<Kind>) {
        slot(&self.own).store(ts, Ordering::Release);
        let host_only = matches!(
            kind,
            Some(
                Kind::Query
                    | Kind::Lookup
                    | Kind::Attribute
                    | Kind::Init
                    | Kind::Load
                    | Kind::Unload
                    | Kind::Register
                    | Kind::Configure
            )
        );
        if !host_only {
            self.wait_until(ts);
        }
    }

    fn wait_until(&mut self, ts: u64) {
        let mut last: Vec<u64> = self
            .others
            .iter()
            .map(|(_, m)| slot(m).load(Ordering::Acquire))
            .collect();
        let mut since = Instant::now();
        let mut spins = 0u32;
        loop {
            let mut behind = false;
            for (i, (name, m)) in self.others.iter().enumerate() {
                let at = slot(m).load(Ordering::Acquire);
                if at != last[i] {
                    last[i] = at;
                    since = Instant::now();
                }
                if at < ts && !self.given_up[i] {
                    behind = true;
                    if since.elapsed() > STALL {
                        eprintln!(
                            "[HRR] {name}: no progress for {} s; no longer waited for",
                            STALL.as_secs()
                        );
                        self.given_up[i] = true;
                    }
                }
            }
            if !behind {
                return;
            }
            spins += 1;
            match spins {
                0..=1000 => std::hint::spin_loop(),
                1001..=2000 => std::thread::yield_now(),
                _ => std::thread::sleep(Duration::from_micros(50)),
            }
        }
    }
}

/// The rendezvous folder as the backend sees it: where IPC handles are published and found.
pub struct Rendezvous {
    dir: PathBuf,
}

impl Rendezvous {
    /// The folder named by [`PEERS_ENV`] (`None`: this replay is alone).
    pub fn from_env() -> Option<Rendezvous> {
        std::env::var_os(PEERS_ENV).map(|d| Rendezvous { dir: d.into() })
    }

    /// Publish `live`, the handle the live driver gave for what the recording exported as
    /// `recorded` (written whole, then renamed: a reader never sees part of it).
    pub fn publish(&self, recorded: &[u8], live: &[u8]) -> Result<()> {
        self.publish_as(&handle_name(recorded), live)
    }

    /// The live handle another replay process published for the recorded handle `recorded`,
    /// waited for (up to [`HANDLE_WAIT`]).
    pub fn wait_for(&self, recorded: &[u8]) -> Result<Vec<u8>> {
        self.wait_as(&handle_name(recorded))
    }

    /// Hand the file descriptor the live driver exported, for what the recording exported
    /// under `key`, to whichever process imports it (`super::fd_pass`).
    pub fn offer_fd(&self, key: &[u8], fd: std::os::fd::OwnedFd) -> Result<()> {
        let socket = super::fd_pass::serve(&self.dir, key, fd)?;
        use std::os::unix::ffi::OsStrExt;
        self.publish_as(&fd_name(key), socket.as_os_str().as_bytes())
    }

    /// The file descriptor another replay process offered under `key`, waited for.
    pub fn take_fd(&self, key: &[u8]) -> Result<std::os::fd::OwnedFd> {
        use std::os::unix::ffi::OsStrExt;
        let socket = self.wait_as(&fd_name(key))?;
        super::fd_pass::fetch(Path::new(std::ffi::OsStr::from_bytes(&socket)), key)
    }

    /// The name a descriptor exported at this process's event `seq` is offered under (its
    /// imports find it through the pairs `--all` wrote, [`super::pairing`]).
    pub fn export_name(&self, seq: u64) -> Result<Vec<u8>> {
        Ok(export_name((recorded_pid()?, seq)))
    }

    /// The name of the export this process's import at event `seq` is paired with.
    pub fn paired_export(&self, seq: u64) -> Result<Vec<u8>> {
        let path = self.dir.join(super::pairing::PAIRS_FILE);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        match super::pairing::paired(&text, (recorded_pid()?, seq)) {
            Some(export) => Ok(export_name(export)),
            None => bail!(
                "no recorded process of this archive exported memory this import can be paired with"
            ),
        }
    }

    fn publish_as(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let path = self.dir.join(name);
        let tmp = self.dir.join(format!("{name}.tmp-{}", std::process::id()));
        std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("publishing {}", path.display()))
    }

    fn wait_as(&self, name: &str) -> Result<Vec<u8>> {
        let path = self.dir.join(name);
        let start = Instant::now();
        loop {
            match std::fs::read(&path) {
                Ok(b) => return Ok(b),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            }
            if start.elapsed() > HANDLE_WAIT || self.alone() {
                bail!(
                    "no other process of this replay exported the handle it opens (they ended, \
                     or {} s passed): was the exporting process recorded in this archive?",
                    HANDLE_WAIT.as_secs()
                );
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Every other replay process ended (at most one progress slot, this process's, is not
    /// [`DONE`]): nobody is left to publish a handle.
    fn alone(&self) -> bool {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return false;
        };
        let running = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with("progress-"))
            .filter(|e| {
                std::fs::read(e.path())
                    .ok()
                    .and_then(|b| <[u8; 8]>::try_from(&b[..]).ok())
                    .is_none_or(|b| u64::from_ne_bytes(b) != DONE)
            })
            .count();
        running <= 1
    }
}

impl Drop for Peers {
    /// This process ended: no other one waits for it any more.
    fn drop(&mut self) {
        slot(&self.own).store(DONE, Ordering::Release);
    }
}

/// The process this replay process replays, as [`Peers::from_env`] learnt it.
fn recorded_pid() -> Result<u32> {
    RECORDED_PID
        .get()
        .copied()
        .context("the recorded process of this replay is not known")
}

/// The name a descriptor exported at event `(pid, seq)` is served under.
fn export_name((pid, seq): (u32, u64)) -> Vec<u8> {
    format!("x{pid}-{seq}").into_bytes()
}

/// The file a handle is published under: its bytes in hex.
fn handle_name(recorded: &[u8]) -> String {
    format!("handle-{}", hrr_archive::blobs::hex(recorded))
}

/// The file naming the socket that serves the descriptor of `key`.
fn fd_name(key: &[u8]) -> String {
    format!("fd-{}", hrr_archive::blobs::hex(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendezvous(pids: &[u32]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for &p in pids {
            std::fs::write(progress_file(d.path(), p), [0u8; 8]).unwrap();
        }
        d
    }

    fn peers(dir: &Path, pid: u32) -> Peers {
        let own = map(&progress_file(dir, pid)).unwrap();
        let others = [1u32, 2]
            .iter()
            .filter(|&&p| p != pid)
            .map(|&p| {
                (
                    format!("progress-{p}"),
                    map(&progress_file(dir, p)).unwrap(),
                )
            })
            .collect::<Vec<_>>();
        let given_up = vec![false; others.len()];
        Peers {
            own,
            others,
            given_up,
        }
    }

    #[test]
    fn a_reading_event_waits_until_the_other_process_passed_its_time() {
        let d = rendezvous(&[1, 2]);
        let mut a = peers(d.path(), 1);
        // A query stays on the host: it does not wait.
        let start = Instant::now();
        a.before(100, Some(Kind::Query));
        assert!(start.elapsed() < Duration::from_millis(50));
        let dir = d.path().to_path_buf();
        let t = std::thread::spawn(move || {
            let mut b = peers(&dir, 2);
            std::thread::sleep(Duration::from_millis(50));
            b.before(150, Some(Kind::Launch));
            std::thread::sleep(Duration::from_millis(50));
            drop(b); // ended
        });
        let start = Instant::now();
        a.before(200, Some(Kind::Launch));
        assert!(
            start.elapsed() >= Duration::from_millis(90),
            "{:?}",
            start.elapsed()
        );
        t.join().unwrap();
        assert_eq!(slot(&a.own).load(Ordering::Acquire), 200);
    }

    #[test]
    fn handles_are_published_under_the_recorded_bytes() {
        let d = rendezvous(&[1, 2]);
        let (a, b) = (
            Rendezvous {
                dir: d.path().into(),
            },
            Rendezvous {
                dir: d.path().into(),
            },
        );
        a.publish(&[0xab; 64], b"live handle").unwrap();
        assert_eq!(b.wait_for(&[0xab; 64]).unwrap(), b"live handle");
        // no partial file left behind
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");
    }
}
