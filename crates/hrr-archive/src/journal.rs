//! The blob journal: `blobs.journal` in a process capture that has not finished (FORMAT.md §5, §6).
//!
//! A synchronisation makes what the program recorded so far durable against `kill -9` (events
//! handed to the kernel, the objects they name on disk). Writing a small object's own file
//! (create, write, rename) costs tens of microseconds to a millisecond of file-system metadata,
//! paid by the program at every synchronisation; appending the object's bytes to this one open
//! file costs a `write`. So a synchronisation journals the small objects still queued
//! ([`JOURNAL_OBJECT_MAX`] bytes at most each) instead of waiting for their files, which the
//! capture's writer threads go on writing. A capture that finishes has every file written and
//! removes the journal; `--repair` of a killed one restores from it every object whose file is
//! missing ([`restore`]), then removes it. A finished archive never holds a journal.
//!
//! Record: `HRJ1` (4 bytes), kind (1 byte: 0 a blob, else a code object's [`CodeKind`] as
//! [`kind_byte`] numbers it), the object id (16 bytes), length (u64 little-endian), the bytes.
//! The id is the content hash, so a record is checked by hashing its bytes (one that does not
//! match is skipped); reading stops at a torn record or a damaged header (a killed writer tears
//! at most its last record). Readers index the headers once ([`JournalIndex`], bounded), so
//! many lookups read the journal once.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::blobs::{object_present, CodeKind, ObjectId, ObjectStore};
use crate::error::{IoContext, Result};
use crate::fsutil;
use crate::layout::names::JOURNAL_FILE;

/// Objects larger than this are never journaled: a synchronisation waits for their files
/// (writing them twice would cost more than the file's metadata).
pub const JOURNAL_OBJECT_MAX: usize = 1 << 20;

const MAGIC: &[u8; 4] = b"HRJ1";
const HEADER: usize = 4 + 1 + 16 + 8;

/// Record kinds by number: 0 a blob, then the code kinds.
const KINDS: [Option<CodeKind>; 5] = [
    None,
    Some(CodeKind::Cubin),
    Some(CodeKind::Fatbin),
    Some(CodeKind::Ptx),
    Some(CodeKind::Hsaco),
];

/// The record kind of an object: 0 for a blob, else its code kind's number.
pub fn kind_byte(code: Option<CodeKind>) -> u8 {
    KINDS
        .iter()
        .position(|k| *k == code)
        .expect("every kind numbered") as u8
}

fn kind_of(byte: u8) -> Option<Option<CodeKind>> {
    KINDS.get(usize::from(byte)).copied()
}

/// One object to journal: its id (`ObjectId::of(bytes)`), code kind (`None`: a blob), bytes.
pub type JournalEntry<'a> = (ObjectId, Option<CodeKind>, &'a [u8]);

/// The journal of one process capture, opened on first append (a capture that never
/// journals has no file).
#[derive(Debug)]
pub struct Journal {
    path: PathBuf,
    file: Mutex<Option<File>>,
}

impl Journal {
    /// The journal of the process capture `pid_dir` (nothing is created yet).
    pub fn new(pid_dir: &Path) -> Self {
        Journal {
            path: pid_dir.join(JOURNAL_FILE),
            file: Mutex::new(None),
        }
    }

    /// Append `entries` in one write (0600, never through a link); objects larger than
    /// [`JOURNAL_OBJECT_MAX`] are refused, a caller's error.
    pub fn append(&self, entries: &[JournalEntry<'_>]) -> Result<()> {
        let mut buf = Vec::with_capacity(entries.iter().map(|e| HEADER + e.2.len()).sum());
        for &(id, code, bytes) in entries {
            assert!(
                bytes.len() <= JOURNAL_OBJECT_MAX,
                "journaled object too large"
            );
            buf.extend_from_slice(MAGIC);
            buf.push(kind_byte(code));
            buf.extend_from_slice(&id.0);
            buf.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            buf.extend_from_slice(bytes);
        }
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if file.is_none() {
            *file = Some(fsutil::open_append(&self.path)?);
        }
        let mut f = file.as_ref().expect("opened above");
        f.write_all(&buf).at(&self.path)
    }

    /// Empty the journal (every object it holds has its file now), keeping it small. Nothing
    /// is done when it was never opened.
    pub fn clear(&self) -> Result<()> {
        let file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        match file.as_ref() {
            Some(f) => f.set_len(0).at(&self.path),
            None => Ok(()),
        }
    }

    /// Remove the journal (a capture that finished: every object has its file).
    pub fn remove(&self) -> Result<()> {
        let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
        if file.take().is_some() {
            std::fs::remove_file(&self.path).at(&self.path)?;
        }
        Ok(())
    }
}

/// What [`restore`] found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Restored {
    /// Whole records read whose bytes match their id.
    pub records: u64,
    /// Records whose bytes do not hash to their id (altered after they were written): skipped.
    pub damaged: u64,
    /// Objects written from them (their files were missing).
    pub objects: u64,
    /// Whether reading stopped at a torn record or a damaged header (what followed is lost).
    pub torn: bool,
}

/// Records indexed at the most ([`JournalIndex`]): a real journal holds what was queued at one
/// synchronisation; a hostile one cannot make a reader hold more than this many entries.
const INDEX_MAX: usize = 1 << 18;

/// One record's header: the object's id, kind (`None`: a blob) and byte count.
type Head = (ObjectId, Option<CodeKind>, u64);

/// The next record header of `r`: `Ok(None)` at the end, `Err(())` for a torn or damaged one
/// (short, bad magic or kind, longer than [`JOURNAL_OBJECT_MAX`]).
fn next_head(r: &mut impl Read, path: &Path) -> Result<std::result::Result<Option<Head>, ()>> {
    let mut head = [0u8; HEADER];
    let n = read_full(r, &mut head).at(path)?;
    if n == 0 {
        return Ok(Ok(None));
    }
    let len = u64::from_le_bytes(head[21..29].try_into().expect("8 bytes"));
    let kind = kind_of(head[4]);
    if n < HEADER || &head[..4] != MAGIC || len > JOURNAL_OBJECT_MAX as u64 {
        return Ok(Err(()));
    }
    let Some(kind) = kind else {
        return Ok(Err(()));
    };
    Ok(Ok(Some((
        ObjectId(head[5..21].try_into().expect("16 bytes")),
        kind,
        len,
    ))))
}

/// Read a record's `len` bytes and check them against `id`: `None` when torn or altered.
fn record_bytes(
    r: &mut impl Read,
    path: &Path,
    id: &ObjectId,
    len: u64,
) -> Result<Option<Vec<u8>>> {
    let mut bytes = vec![0u8; len as usize];
    let whole = read_full(r, &mut bytes).at(path)? == bytes.len();
    Ok((whole && ObjectId::of(&bytes) == *id).then_some(bytes))
}

/// Restore into the process capture `pid_dir` every journaled object whose file is missing,
/// then remove the journal; nothing when there is none. Records are read one at a time (none
/// larger than [`JOURNAL_OBJECT_MAX`]), each checked against its id (one that does not match is
/// skipped); reading stops at a torn record or a damaged header.
pub fn restore(pid_dir: &Path) -> Result<Restored> {
    let path = pid_dir.join(JOURNAL_FILE);
    let file = match fsutil::open_read(&path) {
        Ok(f) => f,
        Err(_) if std::fs::symlink_metadata(&path).is_err() => return Ok(Restored::default()),
        Err(e) => return Err(e),
    };
    let store = ObjectStore::new(pid_dir);
    let mut r = BufReader::new(file);
    let mut out = Restored::default();
    loop {
        let (id, code, len) = match next_head(&mut r, &path)? {
            Ok(Some(h)) => h,
            Ok(None) => break,
            Err(()) => {
                out.torn = true;
                break;
            }
        };
        let mut bytes = vec![0u8; len as usize];
        if read_full(&mut r, &mut bytes).at(&path)? < bytes.len() {
            out.torn = true;
            break;
        }
        if ObjectId::of(&bytes) != id {
            // its header frames it: the records after it are read
            out.damaged += 1;
            continue;
        }
        out.records += 1;
        if !object_present(pid_dir, &id, code.is_some()) {
            match code {
                None => store.put_blob_as(id, &bytes)?,
                Some(kind) => store.put_code_object_as(id, kind, &bytes)?,
            };
            out.objects += 1;
        }
    }
    std::fs::remove_file(&path).at(&path)?;
    Ok(out)
}

/// Where each object of a journal lies (its bytes' offset and length), up to the first torn
/// or damaged header and at most [`INDEX_MAX`] records: built once by reading the headers, so
/// a reader asking for many objects reads the journal once, not once per object.
#[derive(Debug)]
pub struct JournalIndex {
    path: PathBuf,
    /// The journal's length when indexed (a journal that grew is indexed again).
    len: u64,
    /// Where each object's bytes start and their length, and a code object's kind.
    entries: std::collections::HashMap<(ObjectId, bool), (u64, u64, Option<CodeKind>)>,
}

impl JournalIndex {
    /// Index the journal of the process capture `pid_dir`; `None` when there is none.
    pub fn open(pid_dir: &Path) -> Result<Option<JournalIndex>> {
        let path = pid_dir.join(JOURNAL_FILE);
        let Ok(file) = fsutil::open_read(&path) else {
            return Ok(None);
        };
        let len = file.metadata().at(&path)?.len();
        let mut r = BufReader::new(file);
        let (mut entries, mut at) = (std::collections::HashMap::new(), 0u64);
        while entries.len() < INDEX_MAX {
            let Ok(Some((id, code, n))) = next_head(&mut r, &path)? else {
                break;
            };
            at += HEADER as u64;
            if at + n > len {
                break;
            }
            entries.entry((id, code.is_some())).or_insert((at, n, code));
            r.seek_relative(n as i64).at(&path)?;
            at += n;
        }
        Ok(Some(JournalIndex { path, len, entries }))
    }

    /// The objects indexed (id, and whether a code object).
    pub fn objects(&self) -> impl Iterator<Item = &(ObjectId, bool)> {
        self.entries.keys()
    }

    /// The bytes of object `id` (a code object when `code`), checked against the id; `None`
    /// when not indexed, or its bytes do not hash to it.
    pub fn get(&self, id: &ObjectId, code: bool) -> Result<Option<Vec<u8>>> {
        let Some(&(at, n, _)) = self.entries.get(&(*id, code)) else {
            return Ok(None);
        };
        let mut f = fsutil::open_read(&self.path)?;
        std::io::Seek::seek(&mut f, std::io::SeekFrom::Start(at)).at(&self.path)?;
        record_bytes(&mut f, &self.path, id, n)
    }
}

/// The bytes of object `id` (a code object when `code`) journaled in the process capture
/// `pid_dir`, checked against the id; `None` when there is no journal or no such record. For
/// readers of a capture that did not finish and was not repaired (a process that ended with
/// `_exit`, or was killed): a synchronisation made the object durable in the journal only.
/// The journal's index is kept between calls (one capture's at a time).
pub fn read(pid_dir: &Path, id: &ObjectId, code: bool) -> Result<Option<Vec<u8>>> {
    match index_of(pid_dir)? {
        Some(index) => index.get(id, code),
        None => Ok(None),
    }
}

/// [`read`] for code object `id`, with its kind (what a reader that writes it elsewhere needs:
/// `--extract` of an unrepaired capture).
pub fn read_code(pid_dir: &Path, id: &ObjectId) -> Result<Option<(Vec<u8>, CodeKind)>> {
    let Some(index) = index_of(pid_dir)? else {
        return Ok(None);
    };
    let Some(&(_, _, Some(kind))) = index.entries.get(&(*id, true)) else {
        return Ok(None);
    };
    Ok(index.get(id, true)?.map(|bytes| (bytes, kind)))
}

/// The index of `pid_dir`'s journal, kept between calls (one capture's at a time) while the
/// journal keeps its length; `None` when there is no journal.
fn index_of(pid_dir: &Path) -> Result<Option<std::sync::Arc<JournalIndex>>> {
    static LAST: Mutex<Option<std::sync::Arc<JournalIndex>>> = Mutex::new(None);
    let path = pid_dir.join(JOURNAL_FILE);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Ok(None);
    };
    let cached = LAST.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(i) = cached.filter(|i| i.path == path && i.len == meta.len()) {
        return Ok(Some(i));
    }
    let Some(i) = JournalIndex::open(pid_dir)? else {
        return Ok(None);
    };
    let i = std::sync::Arc::new(i);
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(i.clone());
    Ok(Some(i))
}

/// The objects journaled in the process capture `pid_dir` (id, and whether a code object),
/// each record checked against its id, up to the first torn or damaged one; empty when there
/// is no journal.
pub fn journaled(pid_dir: &Path) -> Result<std::collections::HashSet<(ObjectId, bool)>> {
    let mut out = std::collections::HashSet::new();
    if let Some(index) = JournalIndex::open(pid_dir)? {
        for &(id, code) in index.objects() {
            if index.get(&id, code)?.is_some() {
                out.insert((id, code));
            }
        }
    }
    Ok(out)
}

/// Read until `buf` is full or the end: how many bytes were read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blobs::{blob_path, find_code_object};

    #[test]
    fn restore_writes_the_missing_objects_and_stops_at_a_torn_record() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            b"first blob".as_slice(),
            b"code".as_slice(),
            b"third".as_slice(),
        );
        let (ia, ib, ic) = (ObjectId::of(a), ObjectId::of(b), ObjectId::of(c));
        // `a` already has its file; `b` (a code object) and `c` do not
        ObjectStore::new(dir.path()).put_blob_as(ia, a).unwrap();
        let j = Journal::new(dir.path());
        j.append(&[(ia, None, a), (ib, Some(CodeKind::Cubin), b)])
            .unwrap();
        j.append(&[(ic, None, c)]).unwrap();
        // a torn fourth record: its header only
        let path = dir.path().join(JOURNAL_FILE);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&MAGIC[..]).unwrap();
        f.write_all(&[0u8; 10]).unwrap();
        drop(f);
        let got = restore(dir.path()).unwrap();
        assert_eq!(
            got,
            Restored {
                records: 3,
                damaged: 0,
                objects: 2,
                torn: true
            }
        );
        assert_eq!(std::fs::read(blob_path(dir.path(), &ic)).unwrap(), c);
        let (code, kind) = find_code_object(dir.path(), &ib).unwrap();
        assert_eq!(
            (std::fs::read(code).unwrap().as_slice(), kind),
            (b, CodeKind::Cubin)
        );
        assert!(!path.exists(), "the journal is removed once restored");
        assert_eq!(restore(dir.path()).unwrap(), Restored::default());
    }

    #[test]
    fn a_record_whose_bytes_do_not_hash_to_its_id_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        let (good, bad) = (b"kept".as_slice(), b"altered".as_slice());
        j.append(&[(ObjectId::of(good), None, good)]).unwrap();
        j.append(&[(ObjectId::of(b"original"), None, bad)]).unwrap();
        let after = b"after it".as_slice();
        j.append(&[(ObjectId::of(after), None, after)]).unwrap();
        assert_eq!(
            journaled(dir.path()).unwrap().len(),
            2,
            "the altered one left out"
        );
        let got = restore(dir.path()).unwrap();
        assert_eq!(
            (got.records, got.damaged, got.objects, got.torn),
            (2, 1, 2, false)
        );
        assert!(!blob_path(dir.path(), &ObjectId::of(b"original")).exists());
        assert!(blob_path(dir.path(), &ObjectId::of(after)).exists());
    }

    /// A header claiming more than an object may hold ends the journal there: nothing is
    /// allocated for it, by restore or by a reader.
    #[test]
    fn a_hostile_length_ends_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let good = b"good".as_slice();
        Journal::new(dir.path())
            .append(&[(ObjectId::of(good), None, good)])
            .unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join(JOURNAL_FILE))
            .unwrap();
        f.write_all(MAGIC).unwrap();
        f.write_all(&[0u8; 17]).unwrap();
        f.write_all(&u64::MAX.to_le_bytes()).unwrap();
        drop(f);
        assert_eq!(journaled(dir.path()).unwrap().len(), 1);
        let got = restore(dir.path()).unwrap();
        assert_eq!((got.records, got.objects, got.torn), (1, 1, true));
    }

    #[test]
    fn read_finds_a_journaled_object_by_id_and_kind() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read(dir.path(), &ObjectId::of(b"a"), false).unwrap(), None);
        let j = Journal::new(dir.path());
        let (a, b) = (b"alpha".as_slice(), b"beta".as_slice());
        j.append(&[
            (ObjectId::of(a), None, a),
            (ObjectId::of(b), Some(CodeKind::Ptx), b),
        ])
        .unwrap();
        let got = |bytes: &[u8], code| read(dir.path(), &ObjectId::of(bytes), code).unwrap();
        assert_eq!(got(a, false).as_deref(), Some(a));
        assert_eq!(got(b, true).as_deref(), Some(b));
        assert_eq!(got(a, true), None, "a blob is not a code object");
        assert_eq!(got(b"gamma", false), None);
        let all = journaled(dir.path()).unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.contains(&(ObjectId::of(a), false)) && all.contains(&(ObjectId::of(b), true)));
    }

    /// Readers of a capture that did not finish get a journaled blob whose file is missing
    /// through the one blob opener replay uses, sizes checked as for a file.
    #[test]
    fn open_blob_reads_a_journaled_blob_whose_file_is_missing() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let bytes = b"result of the last synchronisation".as_slice();
        let id = ObjectId::of(bytes);
        assert!(crate::blobs::open_blob(dir.path(), &id, None).is_err());
        Journal::new(dir.path())
            .append(&[(id, None, bytes)])
            .unwrap();
        let mut got = Vec::new();
        crate::blobs::open_blob(dir.path(), &id, Some(bytes.len() as u64))
            .unwrap()
            .read_to_end(&mut got)
            .unwrap();
        assert_eq!(got, bytes);
        assert!(crate::blobs::open_blob(dir.path(), &id, Some(3)).is_err());
    }

    #[test]
    fn clear_and_remove_leave_no_records() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        j.clear().unwrap();
        j.remove().unwrap();
        assert!(
            !dir.path().join(JOURNAL_FILE).exists(),
            "never opened: no file"
        );
        j.append(&[(ObjectId::of(b"x"), None, b"x")]).unwrap();
        j.clear().unwrap();
        assert_eq!(
            std::fs::metadata(dir.path().join(JOURNAL_FILE))
                .unwrap()
                .len(),
            0
        );
        j.append(&[(ObjectId::of(b"y"), None, b"y")]).unwrap();
        assert_eq!(restore(dir.path()).unwrap().objects, 1);
        let j = Journal::new(dir.path());
        j.append(&[(ObjectId::of(b"z"), None, b"z")]).unwrap();
        j.remove().unwrap();
        assert!(!dir.path().join(JOURNAL_FILE).exists());
    }
}
