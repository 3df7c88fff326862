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
//! The id is the content hash, so a record is checked by hashing its bytes; reading stops at
//! the first record torn or damaged (a killed writer leaves at most its last one so).

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

/// The record kind of an object: 0 for a blob, else its code kind's number.
pub fn kind_byte(code: Option<CodeKind>) -> u8 {
    match code {
        None => 0,
        Some(CodeKind::Cubin) => 1,
        Some(CodeKind::Fatbin) => 2,
        Some(CodeKind::Ptx) => 3,
        Some(CodeKind::Hsaco) => 4,
    }
}

fn kind_of(byte: u8) -> Option<Option<CodeKind>> {
    Some(match byte {
        0 => None,
        1 => Some(CodeKind::Cubin),
        2 => Some(CodeKind::Fatbin),
        3 => Some(CodeKind::Ptx),
        4 => Some(CodeKind::Hsaco),
        _ => return None,
    })
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
    /// Whole records read.
    pub records: u64,
    /// Objects written from them (their files were missing).
    pub objects: u64,
    /// Whether reading stopped at a torn or damaged record (what followed it is lost).
    pub torn: bool,
}

/// Restore into the process capture `pid_dir` every journaled object whose file is missing,
/// then remove the journal; nothing when there is none. Records are read one at a time (none
/// larger than [`JOURNAL_OBJECT_MAX`]), each checked against its id.
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
    let mut bytes = Vec::new();
    loop {
        let mut head = [0u8; HEADER];
        match read_full(&mut r, &mut head).at(&path)? {
            0 => break,
            n if n < HEADER => {
                out.torn = true;
                break;
            }
            _ => {}
        }
        let len = u64::from_le_bytes(head[21..29].try_into().expect("8 bytes"));
        let (Some(code), true) = (kind_of(head[4]), &head[..4] == MAGIC) else {
            out.torn = true;
            break;
        };
        if len > JOURNAL_OBJECT_MAX as u64 {
            out.torn = true;
            break;
        }
        bytes.resize(len as usize, 0);
        let id = ObjectId(head[5..21].try_into().expect("16 bytes"));
        if read_full(&mut r, &mut bytes).at(&path)? < bytes.len() || ObjectId::of(&bytes) != id {
            out.torn = true;
            break;
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

/// The bytes of object `id` (a code object when `code`) journaled in the process capture
/// `pid_dir`, checked against the id; `None` when there is no journal or no such record. For
/// readers of a capture that did not finish and was not repaired (a process that ended with
/// `_exit`, or was killed): a synchronisation made the object durable in the journal only.
pub fn read(pid_dir: &Path, id: &ObjectId, code: bool) -> Result<Option<Vec<u8>>> {
    let path = pid_dir.join(JOURNAL_FILE);
    let Ok(file) = fsutil::open_read(&path) else {
        return Ok(None);
    };
    let mut r = BufReader::new(file);
    let mut head = [0u8; HEADER];
    while read_full(&mut r, &mut head).at(&path)? == HEADER && &head[..4] == MAGIC {
        let len = u64::from_le_bytes(head[21..29].try_into().expect("8 bytes"));
        let Some(kind) = kind_of(head[4]).filter(|_| len <= JOURNAL_OBJECT_MAX as u64) else {
            break;
        };
        if head[5..21] == id.0 && kind.is_some() == code {
            let mut bytes = vec![0u8; len as usize];
            if read_full(&mut r, &mut bytes).at(&path)? == bytes.len()
                && ObjectId::of(&bytes) == *id
            {
                return Ok(Some(bytes));
            }
            break;
        }
        std::io::copy(&mut (&mut r).take(len), &mut std::io::sink()).at(&path)?;
    }
    Ok(None)
}

/// The objects journaled in the process capture `pid_dir` (id, and whether a code object),
/// each record checked against its id, up to the first torn or damaged one; empty when there
/// is no journal.
pub fn journaled(pid_dir: &Path) -> Result<std::collections::HashSet<(ObjectId, bool)>> {
    let path = pid_dir.join(JOURNAL_FILE);
    let mut out = std::collections::HashSet::new();
    let Ok(file) = fsutil::open_read(&path) else {
        return Ok(out);
    };
    let mut r = BufReader::new(file);
    let (mut head, mut bytes) = ([0u8; HEADER], Vec::new());
    while read_full(&mut r, &mut head).at(&path)? == HEADER && &head[..4] == MAGIC {
        let len = u64::from_le_bytes(head[21..29].try_into().expect("8 bytes"));
        let Some(kind) = kind_of(head[4]).filter(|_| len <= JOURNAL_OBJECT_MAX as u64) else {
            break;
        };
        bytes.resize(len as usize, 0);
        let id = ObjectId(head[5..21].try_into().expect("16 bytes"));
        if read_full(&mut r, &mut bytes).at(&path)? < bytes.len() || ObjectId::of(&bytes) != id {
            break;
        }
        out.insert((id, kind.is_some()));
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
    fn a_record_whose_bytes_do_not_hash_to_its_id_is_not_restored() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::new(dir.path());
        let (good, bad) = (b"kept".as_slice(), b"altered".as_slice());
        j.append(&[(ObjectId::of(good), None, good)]).unwrap();
        j.append(&[(ObjectId::of(b"original"), None, bad)]).unwrap();
        let got = restore(dir.path()).unwrap();
        assert_eq!((got.records, got.objects, got.torn), (1, 1, true));
        assert!(!blob_path(dir.path(), &ObjectId::of(b"original")).exists());
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
