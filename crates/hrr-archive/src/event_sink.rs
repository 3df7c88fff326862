//! Where events.bin's bytes go: written by the appending thread ([`EventSink::Direct`]), or
//! handed to a background thread that writes them ([`EventSink::Background`], what capture uses:
//! the program's thread then never waits for the kernel's copy into the page cache, a third of
//! capture's cost per launch).
//!
//! Order and durability are those of the direct sink. Buffers are written in the order they
//! were handed over: the background thread and an explicit [`EventSink::write_all_now`] (a flush
//! point) both write under one I/O lock, and the flush point first writes every buffer still
//! queued, so it returns only once everything appended before it is with the kernel. Between
//! flush points buffers wait in the queue as they waited in the writer's buffer before; the queue
//! is bounded ([`MAX_QUEUED`]: past it the appending thread writes itself).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::error::{Error, IoContext, Result};

/// Buffers queued for the background thread at most; past them the appender writes itself.
pub const MAX_QUEUED: usize = 8;

/// How long a flush point waits for the I/O lock before it gives up (a signal handler that
/// interrupted the background thread in the middle of a write would otherwise wait forever).
const IO_LOCK_PATIENCE: Duration = Duration::from_secs(2);

/// The file events.bin is written to, and how.
#[derive(Debug)]
pub enum EventSink {
    /// Written by the appending thread.
    Direct {
        /// events.bin, open for writing.
        file: File,
        /// Its path, for errors.
        path: PathBuf,
    },
    /// Written by a background thread.
    Background(Arc<Shared>),
}

/// What the appending side and the background thread share.
#[derive(Debug)]
pub struct Shared {
    file: File,
    path: PathBuf,
    queue: Mutex<Queue>,
    ready: Condvar,
    /// Held while bytes are written, so buffers reach the file in order.
    io: Mutex<()>,
}

#[derive(Debug, Default)]
struct Queue {
    pending: VecDeque<Vec<u8>>,
    /// Emptied buffers, for the appender to fill again.
    spare: Vec<Vec<u8>>,
    /// The first write error of the background thread.
    error: Option<String>,
    /// No more buffers will come: the thread ends once the queue is empty.
    closed: bool,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn error(&self, why: String) -> Error {
        Error::Io {
            path: self.path.clone(),
            source: std::io::Error::other(why),
        }
    }

    fn write(&self, bytes: &[u8]) -> Result<()> {
        (&self.file).write_all(bytes).at(&self.path)
    }

    /// The I/O lock, waited for at most [`IO_LOCK_PATIENCE`].
    fn io(&self) -> Result<MutexGuard<'_, ()>> {
        let until = Instant::now() + IO_LOCK_PATIENCE;
        loop {
            match self.io.try_lock() {
                Ok(g) => return Ok(g),
                Err(std::sync::TryLockError::Poisoned(e)) => return Ok(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_micros(50));
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    return Err(self.error(format!(
                        "the background writer held the file for {} s",
                        IO_LOCK_PATIENCE.as_secs()
                    )))
                }
            }
        }
    }

    /// The background thread: write queued buffers in order until closed and empty.
    fn run(&self) {
        loop {
            {
                let mut q = locked(&self.queue);
                while q.pending.is_empty() && !q.closed {
                    q = self.ready.wait(q).unwrap_or_else(|e| e.into_inner());
                }
                if q.pending.is_empty() {
                    return; // closed
                }
            }
            let io = locked(&self.io);
            // a flush point may have written it meanwhile
            let Some(mut buf) = locked(&self.queue).pending.pop_front() else {
                continue;
            };
            let written = self.write(&buf);
            drop(io);
            buf.clear();
            let mut q = locked(&self.queue);
            if let Err(e) = written {
                q.error.get_or_insert_with(|| e.to_string());
            }
            q.spare.push(buf);
        }
    }

    /// A write error of the background thread, if one happened.
    fn failed(&self) -> Result<()> {
        match &locked(&self.queue).error {
            Some(e) => Err(self.error(format!("the background writer failed: {e}"))),
            None => Ok(()),
        }
    }
}

impl EventSink {
    /// Write `file` (at `path`) from the appending thread.
    pub fn direct(file: File, path: PathBuf) -> Self {
        EventSink::Direct { file, path }
    }

    /// Hand `buf` (emptied, ready to be filled again) to be written. The direct sink writes it
    /// now; the background sink queues it, or writes it now when the queue is full or the
    /// thread is gone.
    pub fn hand_over(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        if buf.is_empty() {
            return Ok(());
        }
        match self {
            EventSink::Direct { file, path } => {
                file.write_all(buf).at(&*path)?;
                buf.clear();
            }
            EventSink::Background(s) => {
                s.failed()?;
                let mut q = locked(&s.queue);
                if q.pending.len() >= MAX_QUEUED || q.closed {
                    drop(q);
                    return self.write_all_now(buf);
                }
                let spare = q
                    .spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(buf.capacity()));
                q.pending.push_back(std::mem::replace(buf, spare));
                drop(q);
                s.ready.notify_one();
            }
        }
        Ok(())
    }

    /// A flush point: every queued buffer, then `buf`, written before this returns.
    pub fn write_all_now(&mut self, buf: &mut Vec<u8>) -> Result<()> {
        match self {
            EventSink::Direct { .. } => self.hand_over(buf),
            EventSink::Background(s) => {
                let _io = s.io()?;
                let queued: Vec<Vec<u8>> = locked(&s.queue).pending.drain(..).collect();
                for mut q in queued {
                    s.write(&q)?;
                    q.clear();
                    locked(&s.queue).spare.push(q);
                }
                if !buf.is_empty() {
                    s.write(buf)?;
                    buf.clear();
                }
                s.failed()
            }
        }
    }

    /// fsync what was written.
    pub fn sync(&self) -> Result<()> {
        let (file, path) = match self {
            EventSink::Direct { file, path } => (file, path),
            EventSink::Background(s) => (&s.file, &s.path),
        };
        file.sync_data().at(path)
    }

    /// Move the writing to a background thread, which first runs `on_start` (capture blocks
    /// signals there, so that no signal handler that flushes runs on the thread holding the
    /// I/O lock it would wait for). No change if it is there already, or if no thread can be
    /// started: the appending thread then keeps writing.
    pub fn start_background(&mut self, on_start: fn()) -> Result<()> {
        let EventSink::Direct { file, path } = self else {
            return Ok(());
        };
        let shared = Arc::new(Shared {
            file: file.try_clone().at(&*path)?,
            path: path.clone(),
            queue: Mutex::new(Queue::default()),
            ready: Condvar::new(),
            io: Mutex::new(()),
        });
        let worker = shared.clone();
        let started = std::thread::Builder::new()
            .name("hrr-events".into())
            .spawn(move || {
                on_start();
                worker.run()
            });
        if started.is_ok() {
            *self = EventSink::Background(shared);
        }
        Ok(())
    }
}

impl Drop for EventSink {
    /// The background thread writes what is queued and ends.
    fn drop(&mut self) {
        if let EventSink::Background(s) = self {
            locked(&s.queue).closed = true;
            s.ready.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sink(dir: &tempfile::TempDir) -> (EventSink, PathBuf) {
        let path = dir.path().join("events.bin");
        let file = File::create(&path).unwrap();
        (EventSink::direct(file, path.clone()), path)
    }

    #[test]
    fn buffers_reach_the_file_in_order_and_a_flush_point_waits_for_all() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, path) = sink(&dir);
        s.start_background(|| {}).unwrap();
        assert!(matches!(s, EventSink::Background(_)));
        let mut expected = Vec::new();
        for i in 0..2000u32 {
            let mut buf = i.to_le_bytes().repeat(1 + (i as usize % 7));
            expected.extend_from_slice(&buf);
            s.hand_over(&mut buf).unwrap();
            assert!(buf.is_empty());
        }
        let mut last = b"end".to_vec();
        expected.extend_from_slice(&last);
        s.write_all_now(&mut last).unwrap();
        // everything is in the file now, in order, without waiting for the thread
        assert_eq!(std::fs::read(&path).unwrap(), expected);
        drop(s);
    }

    #[test]
    fn a_failed_background_write_is_reported_at_the_next_hand_over_or_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.bin");
        std::fs::write(&path, b"").unwrap();
        // open for reading only: every write fails (EBADF)
        let mut s = EventSink::direct(File::open(&path).unwrap(), path.clone());
        s.start_background(|| {}).unwrap();
        let mut buf = b"abc".to_vec();
        s.hand_over(&mut buf).unwrap(); // queued: the thread's write fails later
        let until = Instant::now() + Duration::from_secs(10);
        let err = loop {
            let mut more = b"def".to_vec();
            match s.hand_over(&mut more) {
                Err(e) => break e,
                Ok(()) if Instant::now() < until => std::thread::sleep(Duration::from_millis(5)),
                Ok(()) => panic!("no error reported"),
            }
        };
        assert!(err.to_string().contains("events.bin"), "{err}");
        assert!(s.write_all_now(&mut b"ghi".to_vec()).is_err());
    }

    #[test]
    fn the_direct_sink_writes_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (mut s, path) = sink(&dir);
        let mut buf = b"abc".to_vec();
        s.hand_over(&mut buf).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
    }
}
