//! Host blobs (and code objects) stored off the calling thread. The caller hashes a buffer (its
//! id is its content hash, `ObjectId::of`, on several threads for large buffers, or the last store's id when the
//! same address held the same bytes: `crate::fingerprint::blob_id`) and, unless a blob of that id was
//! already stored or queued, copies it into a staging buffer (on several threads for large
//! buffers) and queues it; the `hrr-blobs` threads ([`WRITERS`] at most) write queued blobs
//! into the archive's object store, several at once (one file each). Staging is bounded
//! (256 MiB to 1 GiB in flight by the host's memory, [`staging_limit`]; beyond it the caller
//! waits, so memory stays bounded);
//! staging buffers are reused (as much as the staging limit), so a steady stream of copies does
//! not page-fault fresh memory, and fresh large ones are asked for huge pages.
//!
//! [`BlobQueue::drain`] makes every queued object durable: the recorder calls it wherever
//! events are handed to the kernel for durability (synchronisations, blocking D2H copies), so a
//! `kill -9` after a synchronisation never finds an event naming an object that is not on disk.
//! Small objects ([`JOURNAL_OBJECT_MAX`] at most) still queued or being written are appended to
//! the capture's blob journal in one write ([`hrr_archive::journal`]; `--repair` restores them
//! from it) instead of waited for: a file created per object costs the program tens of
//! microseconds to a millisecond at each synchronisation. Larger ones are waited for.
//! [`BlobQueue::finish`] waits for every file and removes the journal. [`BlobQueue::drain_here`]
//! writes what is queued on the calling thread, for signal handlers (the writer threads may be
//! stopped with the process).

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use hrr_archive::blobs::ObjectStore;
use hrr_archive::journal::{Journal, JournalEntry, JOURNAL_OBJECT_MAX};
use hrr_archive::{CodeKind, ObjectId};

/// Staged bytes in flight (queued or being written) beyond which a caller waits, at the least
/// (see [`staging_limit`]).
pub const STAGING_LIMIT: usize = 256 << 20;
/// ... and at the most, on a host with 32 times this much memory or more.
const STAGING_LIMIT_MAX: usize = 1 << 30;

/// The staging limit of this host: a 32nd of its memory, from [`STAGING_LIMIT`] to
/// [`STAGING_LIMIT_MAX`] (a GPU host with 128 GiB stages a burst of 1 GiB of uploads without
/// waiting for the disk; a small machine keeps to 256 MiB).
fn staging_limit() -> usize {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let memory = usize::try_from(pages.max(0))
        .unwrap_or(0)
        .saturating_mul(usize::try_from(page.max(0)).unwrap_or(0));
    (memory / 32).clamp(STAGING_LIMIT, STAGING_LIMIT_MAX)
}
/// Writer threads at most (a quarter of the cores, at least one): large buffers are written
/// to the page cache faster by several threads, one file each.
pub const WRITERS: usize = 4;
/// Buffers this large or larger are copied into staging on several threads.
const PARALLEL_COPY_MIN: usize = 8 << 20;
/// Threads a blob written at once ([`BlobQueue::put_now`]) is written on besides the caller.
const COPY_THREADS: usize = 8;
/// The pieces a staging copy is split into on the threads of `hrr_archive::map_chunks`'s pool.
const POOL_COPY_PIECE: usize = 1 << 20;

/// One staged blob, or code object (`code`: its kind).
struct Job {
    id: ObjectId,
    code: Option<CodeKind>,
    bytes: Vec<u8>,
    /// In the journal already (a drain journaled it before its file was written).
    journaled: AtomicBool,
}

impl Job {
    /// Write this job's bytes into `store`.
    fn write(&self, store: &ObjectStore) -> hrr_archive::Result<bool> {
        match self.code {
            None => store.put_blob_as(self.id, &self.bytes),
            Some(kind) => store.put_code_object_as(self.id, kind, &self.bytes),
        }
    }
}

#[derive(Default)]
struct State {
    /// Jobs queued and not yet taken by a writer.
    jobs: VecDeque<Arc<Job>>,
    /// Jobs being written by the writer threads.
    writing: Vec<Arc<Job>>,
    /// Blobs being written by callers ([`BlobQueue::put_now`]).
    writing_now: usize,
    /// Whether the journal may hold records (cleared once nothing is queued or being written).
    journal_used: bool,
    /// Bytes of the jobs queued or being written.
    in_flight: usize,
    /// Callers copying into a staging buffer (their jobs are about to be queued).
    copying: usize,
    /// Objects stored or queued, by id and whether a code object (a buffer seen again is
    /// neither copied nor queued).
    known: HashSet<(ObjectId, bool)>,
    /// The first write error; every later `put` and `drain` returns it.
    error: Option<String>,
    /// Idle staging buffers.
    pool: Vec<Vec<u8>>,
    pool_bytes: usize,
}

struct Shared {
    store: Arc<ObjectStore>,
    /// The capture's blob journal.
    journal: Journal,
    state: Mutex<State>,
    /// Work queued, space freed or the queue emptied.
    changed: Condvar,
    /// Bytes in flight beyond which a caller waits ([`staging_limit`]).
    limit: usize,
}

/// The queue of one process capture (cheap to clone: a handle).
#[derive(Clone)]
pub struct BlobQueue(Arc<Shared>);

impl BlobQueue {
    /// A queue writing into `store`, with its writer threads started; `None` if none can be
    /// started (the caller then writes blobs itself).
    pub fn start(store: Arc<ObjectStore>) -> Option<BlobQueue> {
        let shared = Arc::new(Shared {
            journal: Journal::new(store.pid_dir()),
            store,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
            limit: staging_limit(),
        });
        let cores = hrr_archive::cores();
        let started = (0..(cores / 4).clamp(1, WRITERS))
            .filter(|_| {
                let worker = shared.clone();
                std::thread::Builder::new()
                    .name("hrr-blobs".into())
                    .spawn(move || write_loop(&worker))
                    .is_ok()
            })
            .count();
        (started > 0).then_some(BlobQueue(shared))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether object `id` (a code object when `code`, else a blob) is stored or queued.
    pub fn knows(&self, id: &ObjectId, code: bool) -> bool {
        self.lock().known.contains(&(*id, code)) || self.0.store.contains(id, code)
    }

    /// Queue `bytes` (whose id is `id`) unless known; waits while the staging limit is reached.
    pub fn put(&self, id: ObjectId, bytes: &[u8]) -> Result<(), String> {
        self.stage_and_queue(id, None, bytes)
    }

    /// Queue code object `bytes` of `kind` (whose id is `id`) unless known, as [`Self::put`]
    /// does a blob: a module loaded in the middle of a program's timed region (the runtime
    /// loads modules lazily, at a kernel's first use) costs it a copy, not a file written.
    pub fn put_code(&self, id: ObjectId, kind: CodeKind, bytes: &[u8]) -> Result<(), String> {
        self.stage_and_queue(id, Some(kind), bytes)
    }

    fn stage_and_queue(
        &self,
        id: ObjectId,
        code: Option<CodeKind>,
        bytes: &[u8],
    ) -> Result<(), String> {
        let mut st = self.lock();
        loop {
            if let Some(e) = &st.error {
                return Err(e.clone());
            }
            if st.known.contains(&(id, code.is_some())) {
                return Ok(());
            }
            if st.in_flight == 0 || st.in_flight + bytes.len() <= self.0.limit {
                break;
            }
            st = self.0.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        st.known.insert((id, code.is_some()));
        st.in_flight += bytes.len();
        st.copying += 1;
        let mut buf = match st.pool.iter().position(|b| b.capacity() >= bytes.len()) {
            Some(i) => {
                let b = st.pool.swap_remove(i);
                st.pool_bytes -= b.capacity();
                b
            }
            None => Vec::new(),
        };
        drop(st);
        stage(&mut buf, bytes);
        let mut st = self.lock();
        st.copying -= 1;
        st.jobs.push_back(Arc::new(Job {
            id,
            code,
            bytes: buf,
            journaled: AtomicBool::new(false),
        }));
        self.0.changed.notify_all();
        Ok(())
    }

    /// Write `bytes` (whose id is `id`) now, unless known, on this thread and up to
    /// [`COPY_THREADS`] others, without staging: for a caller that would wait for the write
    /// anyway (a blocking D2H copy, whose result must be on disk before it returns). Counted
    /// as being written meanwhile, so a [`Self::drain`] elsewhere waits for it.
    pub fn put_now(&self, id: ObjectId, bytes: &[u8]) -> Result<(), String> {
        {
            let mut st = self.lock();
            if let Some(e) = &st.error {
                return Err(e.clone());
            }
            if !st.known.insert((id, false)) {
                return Ok(());
            }
            st.writing_now += 1;
        }
        let written = self.0.store.put_blob_as_parallel(id, bytes, COPY_THREADS);
        let mut st = self.lock();
        st.writing_now -= 1;
        if let Err(e) = &written {
            st.error.get_or_insert_with(|| e.to_string());
        }
        self.0.changed.notify_all();
        written.map(|_| ()).map_err(|e| e.to_string())
    }

    /// Make every queued object durable: small ones not yet written are journaled (one write),
    /// larger ones waited for; the first write error, if any.
    pub fn drain(&self) -> Result<(), String> {
        let mut st = self.lock();
        loop {
            if let Some(e) = &st.error {
                return Err(e.clone());
            }
            let pending = || st.jobs.iter().chain(&st.writing);
            let to_journal: Vec<Arc<Job>> = pending()
                .filter(|j| j.bytes.len() <= JOURNAL_OBJECT_MAX)
                .filter(|j| !j.journaled.load(Ordering::Acquire))
                .cloned()
                .collect();
            if !to_journal.is_empty() {
                st.journal_used = true;
                drop(st);
                let entries: Vec<JournalEntry<'_>> = to_journal
                    .iter()
                    .map(|j| (j.id, j.code, j.bytes.as_slice()))
                    .collect();
                let appended = self.0.journal.append(&entries);
                st = self.lock();
                match appended {
                    Ok(()) => to_journal
                        .iter()
                        .for_each(|j| j.journaled.store(true, Ordering::Release)),
                    Err(e) => {
                        st.error.get_or_insert_with(|| e.to_string());
                    }
                }
                continue;
            }
            let waiting = st.copying > 0
                || st.writing_now > 0
                || pending().any(|j| !j.journaled.load(Ordering::Acquire));
            if !waiting {
                break;
            }
            st = self.0.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if st.journal_used && st.jobs.is_empty() && st.writing.is_empty() {
            // every journaled object has its file now: keep the journal small
            st.journal_used = false;
            if let Err(e) = self.0.journal.clear() {
                st.error.get_or_insert_with(|| e.to_string());
            }
        }
        st.error.clone().map_or(Ok(()), Err)
    }

    /// Wait until every queued object's file is written, then remove the journal (a capture
    /// finishing); the first write error, if any (the journal is then kept for `--repair`).
    pub fn finish(&self) -> Result<(), String> {
        let mut st = self.lock();
        while (!st.jobs.is_empty()
            || !st.writing.is_empty()
            || st.writing_now > 0
            || st.copying > 0)
            && st.error.is_none()
        {
            st = self.0.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if st.error.is_none() {
            if let Err(e) = self.0.journal.remove() {
                st.error.get_or_insert_with(|| e.to_string());
            }
        }
        st.error.clone().map_or(Ok(()), Err)
    }

    /// From a signal handler: write every queued blob on this thread (skipped if the queue is
    /// locked), leaving those the writer threads are writing to them and waiting up to two
    /// seconds for those.
    pub fn drain_here(&self) {
        let Ok(mut st) = self.0.state.try_lock() else {
            return;
        };
        let jobs: Vec<Arc<Job>> = st.jobs.drain(..).collect();
        drop(st);
        for job in jobs {
            let _ = job.write(&self.0.store);
        }
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            match self.0.state.try_lock() {
                Ok(st) if st.writing.is_empty() && st.writing_now == 0 => break,
                _ => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
}

/// Copy `bytes` into the staging buffer `buf` (its earlier contents dropped), on the threads of
/// `hrr_archive::map_chunks`'s pool when large: a big upload is staged at memory bandwidth, not
/// one core's copy speed.
fn stage(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.clear();
    if bytes.len() < PARALLEL_COPY_MIN {
        buf.extend_from_slice(bytes);
        return;
    }
    if buf.capacity() < bytes.len() {
        *buf = Vec::with_capacity(bytes.len());
        advise_huge_pages(buf.spare_capacity_mut());
    }
    let (to, from) = (buf.as_mut_ptr() as usize, bytes.as_ptr() as usize);
    // SAFETY: `buf` has room for `bytes.len()` bytes (reserved above); the ranges are disjoint
    // and `bytes` does not overlap `buf`.
    let copy_range = |r: std::ops::Range<usize>| unsafe {
        std::ptr::copy_nonoverlapping(
            (from + r.start) as *const u8,
            (to + r.start) as *mut u8,
            r.len(),
        )
    };
    hrr_archive::on_pool_pieces(bytes.len(), POOL_COPY_PIECE, copy_range);
    // SAFETY: every byte of the first `bytes.len()` was written above.
    unsafe { buf.set_len(bytes.len()) };
}

/// Ask for transparent huge pages behind a fresh staging buffer, before its first touch: a
/// 64 MiB buffer then costs 32 page faults instead of 16,384 (hosts set to `madvise` give none
/// otherwise). Advice only: nothing changes where the kernel declines.
fn advise_huge_pages(buf: &mut [std::mem::MaybeUninit<u8>]) {
    const PAGE: usize = 4096;
    let start = (buf.as_ptr() as usize).next_multiple_of(PAGE);
    let end = (buf.as_ptr() as usize + buf.len()) / PAGE * PAGE;
    if end > start {
        // SAFETY: the range lies inside `buf`, page-aligned; MADV_HUGEPAGE changes no contents.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

/// A writer thread: take the front job, write it, recycle its buffer.
fn write_loop(q: &Shared) {
    loop {
        let job = {
            let mut st = q.state.lock().unwrap_or_else(|e| e.into_inner());
            loop {
                if let Some(j) = st.jobs.pop_front() {
                    st.writing.push(j.clone());
                    break j;
                }
                st = q.changed.wait(st).unwrap_or_else(|e| e.into_inner());
            }
        };
        let result = job.write(&q.store);
        let mut st = q.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = result {
            st.error.get_or_insert_with(|| e.to_string());
        }
        if let Some(i) = st.writing.iter().position(|j| Arc::ptr_eq(j, &job)) {
            st.writing.swap_remove(i);
        }
        st.in_flight = st.in_flight.saturating_sub(job.bytes.len());
        if let Ok(job) = Arc::try_unwrap(job) {
            let cap = job.bytes.capacity();
            if st.pool_bytes + cap <= q.limit {
                st.pool_bytes += cap;
                st.pool.push(job.bytes);
            }
        }
        q.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_blobs_are_written_once_and_drained() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(ObjectStore::new(dir.path()));
        let q = BlobQueue::start(store.clone()).unwrap();
        let a = vec![1u8; 1 << 20];
        let b = vec![2u8; 3 << 20];
        for bytes in [&a, &b, &a] {
            q.put(ObjectId::of(bytes), bytes).unwrap();
        }
        q.finish().unwrap();
        assert_eq!(store.new_objects(), 2);
        for bytes in [&a, &b] {
            let id = ObjectId::of(bytes);
            assert!(q.knows(&id, false));
            let path = hrr_archive::blobs::blob_path(dir.path(), &id);
            assert_eq!(&std::fs::read(path).unwrap(), bytes);
        }
    }

    /// Code objects go through the queue to their own folder, once each, apart from blobs: a
    /// code object with the bytes of a stored blob is written too.
    #[test]
    fn queued_code_objects_are_written_apart_from_blobs() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(ObjectStore::new(dir.path()));
        let q = BlobQueue::start(store.clone()).unwrap();
        let image = b"\x7fELF code object bytes".repeat(1000);
        let id = ObjectId::of(&image);
        q.put(id, &image).unwrap();
        q.put_code(id, CodeKind::Cubin, &image).unwrap();
        q.put_code(id, CodeKind::Cubin, &image).unwrap();
        q.finish().unwrap();
        assert_eq!(store.new_objects(), 2);
        let code = hrr_archive::blobs::code_object_path(dir.path(), &id, CodeKind::Cubin);
        assert_eq!(std::fs::read(code).unwrap(), image);
        let blob = hrr_archive::blobs::blob_path(dir.path(), &id);
        assert_eq!(std::fs::read(blob).unwrap(), image);
    }

    /// `put_now` writes before returning, from the caller's bytes (a large blob in parts on
    /// several threads: every byte lands at its offset), once per content.
    #[test]
    fn blobs_written_now_are_on_disk_on_return_and_known() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(ObjectStore::new(dir.path()));
        let q = BlobQueue::start(store.clone()).unwrap();
        let big: Vec<u8> = (0..(37u32 << 20) + 5)
            .map(|i| (i ^ (i >> 11)) as u8)
            .collect();
        let small = vec![7u8; 4096];
        for bytes in [&big, &small, &big] {
            let id = ObjectId::of(bytes);
            q.put_now(id, bytes).unwrap();
            let path = hrr_archive::blobs::blob_path(dir.path(), &id);
            assert!(
                &std::fs::read(path).unwrap() == bytes,
                "{} bytes",
                bytes.len()
            );
            assert!(q.knows(&id, false));
        }
        assert_eq!(store.new_objects(), 2);
        // a staged put of the same content writes nothing again
        q.put(ObjectId::of(&small), &small).unwrap();
        q.drain().unwrap();
        assert_eq!(store.new_objects(), 2);
    }

    #[test]
    fn large_blobs_are_staged_in_pieces_and_written_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(ObjectStore::new(dir.path()));
        let q = BlobQueue::start(store.clone()).unwrap();
        // Sizes around the parallel copy's threshold and not a multiple of its piece count.
        let blobs: Vec<Vec<u8>> = [PARALLEL_COPY_MIN - 1, PARALLEL_COPY_MIN, (9 << 20) + 3]
            .iter()
            .enumerate()
            .map(|(k, &n)| (0..n).map(|i| (i * 7 + k * 13 + i / 4093) as u8).collect())
            .collect();
        for b in &blobs {
            q.put(ObjectId::of(b), b).unwrap();
        }
        q.drain().unwrap();
        // none of them is small enough to journal: a drain waited for their files
        assert!(!dir.path().join("blobs.journal").exists());
        assert_eq!(store.new_objects(), blobs.len() as u64);
        for b in &blobs {
            let path = hrr_archive::blobs::blob_path(dir.path(), &ObjectId::of(b));
            assert!(std::fs::read(path).unwrap() == *b, "{} bytes", b.len());
        }
    }

    /// After a drain, every small object put before it is durable as a file or as a journal
    /// record (what a `kill -9` right then leaves): restoring the journal into a copy of the
    /// folder as it was gives back every object. `finish` writes every file and removes the
    /// journal.
    #[test]
    fn a_drain_leaves_every_small_object_as_a_file_or_in_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(ObjectStore::new(dir.path()));
        let q = BlobQueue::start(store.clone()).unwrap();
        let journal = dir.path().join(hrr_archive::layout::names::JOURNAL_FILE);
        for round in 0..20u32 {
            let objects: Vec<Vec<u8>> = (0..8u32)
                .map(|k| (round * 8 + k).to_le_bytes().repeat(100 + k as usize))
                .collect();
            for o in &objects {
                q.put(ObjectId::of(o), o).unwrap();
            }
            q.put_code(ObjectId::of(&objects[0]), CodeKind::Ptx, &objects[0])
                .unwrap();
            q.drain().unwrap();
            // the journal first, then the files: a file missing now was missing then too
            let journaled = std::fs::read(&journal).unwrap_or_default();
            let copy = tempfile::tempdir().unwrap();
            std::fs::write(copy.path().join("blobs.journal"), &journaled).unwrap();
            let restored = hrr_archive::journal::restore(copy.path()).unwrap();
            assert!(!restored.torn);
            for o in &objects {
                let id = ObjectId::of(o);
                let on_disk = hrr_archive::blobs::blob_path(dir.path(), &id).exists();
                let in_journal = hrr_archive::blobs::blob_path(copy.path(), &id).exists();
                assert!(on_disk || in_journal, "round {round}: {id} lost");
            }
            let code = ObjectId::of(&objects[0]);
            assert!(
                hrr_archive::blobs::find_code_object(dir.path(), &code).is_some()
                    || hrr_archive::blobs::find_code_object(copy.path(), &code).is_some()
            );
        }
        q.finish().unwrap();
        assert!(!journal.exists(), "a finished queue leaves no journal");
        assert_eq!(store.new_objects(), 20 * 9);
    }
}
