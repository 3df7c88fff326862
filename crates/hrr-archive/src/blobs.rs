//! Content-addressed stores: host buffers in `blobs/<2hex>/<32hex>.blob` and GPU code in
//! `code_objects/<32hex>.<kind>`. Ids are the first 128 bits of BLAKE3; identical content is
//! stored once; files are written temp-file + rename (0600) in folders 0700, never through links.

use std::collections::HashSet;
use std::fmt;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::error::{Error, IoContext, Result};
use crate::fsutil;

use crate::layout::names::{blob_file_name, blob_file_stem, is_blob_file_name};
pub use crate::layout::names::{BLOBS_DIR, CODE_OBJECTS_DIR};

/// Lower-case hex of `bytes` (how ids, hashes and inline bytes are written as text).
pub fn hex(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// A 128-bit content id (BLAKE3 prefix).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub [u8; 16]);

impl ObjectId {
    /// The id of `bytes` (large buffers are hashed on several threads: [`parallel_hash`]).
    pub fn of(bytes: &[u8]) -> Self {
        let hash = parallel_hash(bytes);
        let mut id = [0u8; 16];
        id.copy_from_slice(&hash.as_bytes()[..16]);
        ObjectId(id)
    }

    /// From 16 raw bytes; all-zero means "no object".
    pub fn from_slice(b: &[u8]) -> Option<Self> {
        let id: [u8; 16] = b.try_into().ok()?;
        (id != [0u8; 16]).then_some(ObjectId(id))
    }

    /// Lower-case 32-character hex.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }

    /// Parse 32 hex characters.
    pub fn from_hex(s: &str) -> Option<Self> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let mut id = [0u8; 16];
        for (i, chunk) in s.as_bytes().chunks(2).enumerate() {
            id[i] = u8::from_str_radix(std::str::from_utf8(chunk).ok()?, 16).ok()?;
        }
        Some(ObjectId(id))
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({})", self.to_hex())
    }
}

/// Inputs at least this long are hashed on several threads.
const PARALLEL_HASH_MIN: usize = 1 << 20;

/// BLAKE3 of `bytes`, the same as `blake3::hash`, computed on the threads of
/// [`crate::map_chunks`]'s pool (BLAKE3's own split into subtrees, `Hasher::update_rayon`)
/// for inputs of [`PARALLEL_HASH_MIN`] bytes or more, on the calling thread where there is no
/// pool. (One core hashes a 64 MiB buffer in about 30-45 ms on the 2-core test VM, AVX2; the
/// split pays where cores are free, e.g. a GPU host's 16; `hash_speed` measures it.)
pub fn parallel_hash(bytes: &[u8]) -> blake3::Hash {
    // the size first: a small input never starts the pool's threads
    match (bytes.len() >= PARALLEL_HASH_MIN)
        .then(crate::pool)
        .flatten()
    {
        Some(pool) => pool.install(|| blake3::Hasher::new().update_rayon(bytes).finalize()),
        None => blake3::hash(bytes),
    }
}

/// What a code object holds; its file extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CodeKind {
    /// An ELF cubin.
    Cubin,
    /// An NVIDIA fat binary.
    Fatbin,
    /// NUL-terminated PTX text (stored with its NUL).
    Ptx,
    /// An AMD code object or offload bundle.
    Hsaco,
}

impl CodeKind {
    /// File extension.
    pub fn extension(self) -> &'static str {
        match self {
            CodeKind::Cubin => "cubin",
            CodeKind::Fatbin => "fatbin",
            CodeKind::Ptx => "ptx",
            CodeKind::Hsaco => "hsaco",
        }
    }

    /// From a file extension.
    pub fn from_extension(ext: &str) -> Option<Self> {
        Some(match ext {
            "cubin" => CodeKind::Cubin,
            "fatbin" => CodeKind::Fatbin,
            "ptx" => CodeKind::Ptx,
            "hsaco" => CodeKind::Hsaco,
            _ => return None,
        })
    }
}

/// Path of blob `id` under a process capture.
pub fn blob_path(pid_dir: &Path, id: &ObjectId) -> PathBuf {
    let hex = id.to_hex();
    pid_dir
        .join(BLOBS_DIR)
        .join(&hex[..2])
        .join(blob_file_name(&hex))
}

/// Path of code object `id` under a process capture.
pub fn code_object_path(pid_dir: &Path, id: &ObjectId, kind: CodeKind) -> PathBuf {
    pid_dir
        .join(CODE_OBJECTS_DIR)
        .join(format!("{}.{}", id.to_hex(), kind.extension()))
}

/// Find a code object by id whatever its kind. Only a regular file reached without a link
/// counts (a link at `code_objects/` or at the file: `None`); to open it, and to be told why it
/// cannot be, use [`open_code_object`].
pub fn find_code_object(pid_dir: &Path, id: &ObjectId) -> Option<(PathBuf, CodeKind)> {
    if fsutil::require_dir(&pid_dir.join(CODE_OBJECTS_DIR)).is_err() {
        return None;
    }
    CODE_KINDS
        .into_iter()
        .map(|k| (code_object_path(pid_dir, id, k), k))
        .find(|(p, _)| {
            std::fs::symlink_metadata(p)
                .map(|m| m.is_file())
                .unwrap_or(false)
        })
}

const CODE_KINDS: [CodeKind; 4] = [
    CodeKind::Cubin,
    CodeKind::Fatbin,
    CodeKind::Ptx,
    CodeKind::Hsaco,
];

/// Open blob `id` of the process capture `pid_dir` for reading, checked: no link is followed
/// on the way (`blobs/`, `blobs/<2 hex>/` or the file: [`Error::Symlink`] naming it), the file
/// must be a regular file ([`Error::NotAFile`]) and, when the event that uses it recorded a byte
/// count (`expected_len`), hold exactly that many bytes ([`Error::SizeMismatch`]: a truncated or
/// padded blob is never replayed as if it were whole). A missing blob is [`Error::Missing`].
/// A blob whose file is missing in a capture that did not finish but that a synchronisation
/// journaled ([`crate::journal`]) is read from the journal (as an unnamed temporary file).
/// This is the opener replay should use for every blob it reads.
pub fn open_blob(pid_dir: &Path, id: &ObjectId, expected_len: Option<u64>) -> Result<File> {
    let hex = id.to_hex();
    let name = blob_file_name(&hex);
    let file = match fsutil::open_beneath(pid_dir, &[BLOBS_DIR, &hex[..2], &name]) {
        Err(Error::Missing(p)) => match crate::journal::read(pid_dir, id, false)? {
            Some(bytes) => journaled_blob(pid_dir, &bytes)?,
            None => return Err(Error::Missing(p)),
        },
        other => other?,
    };
    if let Some(expected) = expected_len {
        let found = file.metadata().at(blob_path(pid_dir, id))?.len();
        if found != expected {
            return Err(Error::SizeMismatch {
                path: blob_path(pid_dir, id),
                expected,
                found,
            });
        }
    }
    Ok(file)
}

/// `bytes` (a journaled blob) in an unnamed temporary file, read from its start.
fn journaled_blob(pid_dir: &Path, bytes: &[u8]) -> Result<File> {
    use std::io::{Seek, SeekFrom};
    let journal = pid_dir.join(crate::layout::names::JOURNAL_FILE);
    let mut f = tempfile::tempfile().at(&journal)?;
    f.write_all(bytes).at(&journal)?;
    f.seek(SeekFrom::Start(0)).at(&journal)?;
    Ok(f)
}

/// Open code object `id` (whatever its kind) of the process capture `pid_dir` for reading,
/// checked like [`open_blob`]: no link followed at `code_objects/` or the file, a regular file
/// only. `Ok(None)` when there is none of that id (or no `code_objects/` at all). Returns the
/// file, its path and its kind.
pub fn open_code_object(
    pid_dir: &Path,
    id: &ObjectId,
) -> Result<Option<(File, PathBuf, CodeKind)>> {
    for kind in CODE_KINDS {
        let name = format!("{}.{}", id.to_hex(), kind.extension());
        match fsutil::open_beneath(pid_dir, &[CODE_OBJECTS_DIR, &name]) {
            Ok(f) => return Ok(Some((f, code_object_path(pid_dir, id, kind), kind))),
            // the file is not there, or there is no code_objects/ at all: none of that id
            Err(Error::Missing(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Whether object `id` (a code object when `code`, else a blob) is stored under `pid_dir` as
/// a regular file reached without a link.
pub fn object_present(pid_dir: &Path, id: &ObjectId, code: bool) -> bool {
    if code {
        find_code_object(pid_dir, id).is_some()
    } else {
        std::fs::symlink_metadata(blob_path(pid_dir, id)).is_ok_and(|m| m.is_file())
    }
}

/// Writes blobs and code objects of one process capture, each content stored once. Shareable
/// between threads (a writer thread may store blobs while the recorder appends events).
#[derive(Debug)]
pub struct ObjectStore {
    pid_dir: PathBuf,
    /// Objects written (or found on disk), by id and whether a code object: code objects
    /// live apart from blobs (a code object with the bytes of a stored blob is still written).
    written: Mutex<HashSet<(ObjectId, bool)>>,
    /// Objects this store wrote (not found already on disk).
    new_objects: std::sync::atomic::AtomicU64,
}

impl ObjectStore {
    /// A store writing under `pid_dir` (which must exist).
    pub fn new(pid_dir: &Path) -> Self {
        ObjectStore {
            pid_dir: pid_dir.to_path_buf(),
            written: Mutex::new(HashSet::new()),
            new_objects: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The process capture this store writes into.
    pub fn pid_dir(&self) -> &Path {
        &self.pid_dir
    }

    /// Store a host buffer; returns its id and whether it was new.
    pub fn put_blob(&self, bytes: &[u8]) -> Result<(ObjectId, bool)> {
        let id = ObjectId::of(bytes);
        let new = self.put_blob_as(id, bytes)?;
        Ok((id, new))
    }

    /// Store a host buffer whose id the caller computed (`id` MUST be `ObjectId::of(bytes)`:
    /// blobs are content-addressed); returns whether it was new.
    pub fn put_blob_as(&self, id: ObjectId, bytes: &[u8]) -> Result<bool> {
        let path = blob_path(&self.pid_dir, &id);
        self.put((id, false), &path, bytes, 1)
    }

    /// [`Self::put_blob_as`], a large buffer written by up to `threads` threads at once (each
    /// a part of the file): for a caller that waits for the write, so the page-cache copy runs
    /// at more than one core's speed.
    pub fn put_blob_as_parallel(&self, id: ObjectId, bytes: &[u8], threads: usize) -> Result<bool> {
        let path = blob_path(&self.pid_dir, &id);
        self.put((id, false), &path, bytes, threads)
    }

    /// Whether this store has written (or found on disk) object `id` (a code object when
    /// `code`, else a blob).
    pub fn contains(&self, id: &ObjectId, code: bool) -> bool {
        self.written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&(*id, code))
    }

    /// How many objects this store wrote (those found already on disk not counted).
    pub fn new_objects(&self) -> u64 {
        self.new_objects.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Store a code object; returns its id and whether it was new.
    pub fn put_code_object(&self, bytes: &[u8], kind: CodeKind) -> Result<(ObjectId, bool)> {
        let id = ObjectId::of(bytes);
        let new = self.put_code_object_as(id, kind, bytes)?;
        Ok((id, new))
    }

    /// Store a code object whose id the caller computed (`id` MUST be `ObjectId::of(bytes)`);
    /// returns whether it was new.
    pub fn put_code_object_as(&self, id: ObjectId, kind: CodeKind, bytes: &[u8]) -> Result<bool> {
        let path = code_object_path(&self.pid_dir, &id, kind);
        self.put((id, true), &path, bytes, 1)
    }

    /// Write object `key` (its id, and whether a code object) at `path` unless written before.
    fn put(
        &self,
        key: (ObjectId, bool),
        path: &Path,
        bytes: &[u8],
        threads: usize,
    ) -> Result<bool> {
        let written = &self.written;
        if written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&key)
        {
            return Ok(false);
        }
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => return Err(Error::Symlink(path.to_path_buf())),
            Ok(m) if m.is_file() && m.len() == bytes.len() as u64 => {
                written
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key);
                return Ok(false);
            }
            _ => {}
        }
        let dir = path.parent().expect("object paths have a parent");
        fsutil::create_private_dir(dir)?;
        let tmp = fsutil::temp_path_for(path);
        let result = (|| {
            let mut f = fsutil::create_new(&tmp)?;
            write_in_parts(&mut f, bytes, threads).at(&tmp)?;
            drop(f);
            std::fs::rename(&tmp, path).at(path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result?;
        written
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key);
        self.new_objects
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(true)
    }
}

/// Parts of a file written by threads of their own are at least this large.
const PARALLEL_WRITE_PART: usize = 8 << 20;

/// Write `bytes` to the empty file `f`: in up to `threads` parts of at least
/// [`PARALLEL_WRITE_PART`] bytes, each by a thread of its own (positioned writes), or on this
/// thread alone.
fn write_in_parts(f: &mut File, bytes: &[u8], threads: usize) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    let parts = threads.min(bytes.len() / PARALLEL_WRITE_PART).max(1);
    if parts == 1 {
        return f.write_all(bytes);
    }
    let part = bytes.len().div_ceil(parts);
    let file: &File = f;
    std::thread::scope(|s| {
        let mut here = Ok(());
        let mut others = Vec::new();
        for (i, chunk) in bytes.chunks(part).enumerate() {
            let at = (i * part) as u64;
            let spawned = (i > 0)
                .then(|| {
                    std::thread::Builder::new()
                        .spawn_scoped(s, move || file.write_all_at(chunk, at))
                        .ok()
                })
                .flatten();
            match spawned {
                Some(t) => others.push(t),
                // the first part, or a thread that could not start: written here
                None => here = here.and(file.write_all_at(chunk, at)),
            }
        }
        others.into_iter().fold(here, |acc, t| {
            acc.and(
                t.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("a writer thread panicked"))),
            )
        })
    })
}

/// Counts and bytes of the objects stored under a process capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectCounts {
    /// Number of `.blob` files.
    pub blobs: u64,
    /// Their total size.
    pub blob_bytes: u64,
    /// Number of code objects.
    pub code_objects: u64,
    /// Their total size.
    pub code_object_bytes: u64,
}

/// Count the blobs and code objects under `pid_dir` (temp files are not counted). Nothing is
/// followed: a link at `blobs/`, `code_objects/`, a `blobs/<2 hex>/` folder or any entry inside
/// them is an error ([`Error::Symlink`] naming it), and so is a `blobs/` or `code_objects/` that
/// is not a folder. Missing folders count zero.
pub fn count_objects(pid_dir: &Path) -> Result<ObjectCounts> {
    let mut c = ObjectCounts::default();
    let folder = |name: &str| -> Result<Option<PathBuf>> {
        let p = pid_dir.join(name);
        match std::fs::symlink_metadata(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).at(&p),
            Ok(_) => fsutil::require_dir(&p).map(|()| Some(p)),
        }
    };
    if let Some(blobs) = folder(BLOBS_DIR)? {
        for sub in std::fs::read_dir(&blobs).at(&blobs)? {
            let sub = sub.at(&blobs)?;
            let ft = sub.file_type().at(sub.path())?;
            if ft.is_symlink() {
                return Err(Error::Symlink(sub.path()));
            }
            if !ft.is_dir() {
                continue;
            }
            for f in std::fs::read_dir(sub.path()).at(sub.path())? {
                let f = f.at(sub.path())?;
                let name = f.file_name();
                let meta = f.metadata().at(f.path())?;
                if meta.file_type().is_symlink() {
                    return Err(Error::Symlink(f.path()));
                }
                if meta.is_file() && is_blob_file_name(&name.to_string_lossy()) {
                    c.blobs += 1;
                    c.blob_bytes += meta.len();
                }
            }
        }
    }
    if let Some(code) = folder(CODE_OBJECTS_DIR)? {
        for f in std::fs::read_dir(&code).at(&code)? {
            let f = f.at(&code)?;
            let meta = f.metadata().at(f.path())?;
            if meta.file_type().is_symlink() {
                return Err(Error::Symlink(f.path()));
            }
            let name = f.file_name().to_string_lossy().into_owned();
            if meta.is_file() && !fsutil::is_temp_name(&name) {
                c.code_objects += 1;
                c.code_object_bytes += meta.len();
            }
        }
    }
    Ok(c)
}

/// For a file path below a process capture (or with more folders in front, `/`-separated): the
/// 32-hex content id its name claims, when it is a blob (`blobs/<2 hex>/<32 hex>.blob`) or a code
/// object (`code_objects/<32 hex>.<kind>`).
pub fn claimed_object_id(rel: &str) -> Option<&str> {
    let parts: Vec<&str> = rel.split('/').collect();
    let n = parts.len();
    let is_hex =
        |s: &str| s.len() == 32 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if n >= 3 && parts[n - 3] == BLOBS_DIR {
        let name = blob_file_stem(parts[n - 1])?;
        return (is_hex(name) && parts[n - 2] == &name[..2]).then_some(name);
    }
    if n >= 2 && parts[n - 2] == CODE_OBJECTS_DIR {
        let (name, ext) = parts[n - 1].split_once('.')?;
        CodeKind::from_extension(ext)?;
        return is_hex(name).then_some(name);
    }
    None
}

/// Would [`count_objects`] count the file at `rel` (a path below a process capture,
/// `/`-separated)?
pub fn is_counted_object(rel: &str) -> bool {
    match rel.split_once('/') {
        Some((BLOBS_DIR, rest)) => rest.matches('/').count() == 1 && is_blob_file_name(rest),
        Some((CODE_OBJECTS_DIR, name)) => !name.contains('/') && !fsutil::is_temp_name(name),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn parallel_hash_is_blake3() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let data: Vec<u8> = (0..(13 << 20) + 777)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        for len in [
            0,
            1,
            1024,
            1025,
            PARALLEL_HASH_MIN - 1,
            PARALLEL_HASH_MIN,
            8 << 20,
            data.len(),
        ] {
            assert_eq!(
                parallel_hash(&data[..len]),
                blake3::hash(&data[..len]),
                "{len}"
            );
        }
    }

    /// Hash and copy speeds of a 64 MiB buffer (`cargo test -p hrr-archive --release --
    /// --ignored --nocapture hash_speed`).
    #[test]
    #[ignore]
    fn hash_speed() {
        use std::hint::black_box;
        let data: Vec<u8> = (0..64u32 << 20)
            .map(|i| (i * 7 + (i >> 13)) as u8)
            .collect();
        let mut copy = vec![1u8; data.len()]; // faulted in: the copy below is a reused buffer's
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let one = blake3::hash(black_box(&data));
            let single = t.elapsed();
            let t = std::time::Instant::now();
            let par = parallel_hash(black_box(&data));
            let parallel = t.elapsed();
            let t = std::time::Instant::now();
            copy.copy_from_slice(black_box(&data));
            black_box(&copy);
            let copied = t.elapsed();
            assert_eq!(one, par);
            eprintln!("64 MiB: blake3 {single:?}, parallel {parallel:?}, copy {copied:?}");
        }
    }

    #[test]
    fn blobs_dedup_and_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::new(dir.path());
        let (a, new_a) = store.put_blob(b"abc").unwrap();
        let (b, new_b) = store.put_blob(b"abc").unwrap();
        assert_eq!(a, b);
        assert!(new_a && !new_b);
        let p = blob_path(dir.path(), &a);
        assert_eq!(std::fs::read(&p).unwrap(), b"abc");
        assert_eq!(p.file_name().unwrap().len(), 32 + 5);
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = std::fs::metadata(p.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dmode, 0o700);
        // a second store (another session) sees the existing file and does not rewrite it
        let again = ObjectStore::new(dir.path());
        assert!(!again.put_blob(b"abc").unwrap().1);
        let (co, _) = store
            .put_code_object(b"\x7fELF....", CodeKind::Cubin)
            .unwrap();
        assert_eq!(
            find_code_object(dir.path(), &co).unwrap().1,
            CodeKind::Cubin
        );
        let counts = count_objects(dir.path()).unwrap();
        assert_eq!((counts.blobs, counts.code_objects), (1, 1));
        assert_eq!(ObjectId::from_hex(&a.to_hex()), Some(a));
    }

    #[test]
    fn object_names_are_recognised() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(
            claimed_object_id(&format!("pid-1/blobs/01/{id}.blob")),
            Some(id)
        );
        assert_eq!(claimed_object_id(&format!("blobs/01/{id}.blob")), Some(id));
        assert_eq!(claimed_object_id(&format!("blobs/02/{id}.blob")), None);
        assert_eq!(
            claimed_object_id(&format!("pid-1/code_objects/{id}.cubin")),
            Some(id)
        );
        assert_eq!(claimed_object_id(&format!("code_objects/{id}.exe")), None);
        assert_eq!(claimed_object_id("pid-1/events.bin"), None);
        assert!(is_counted_object(&format!("blobs/01/{id}.blob")));
        assert!(is_counted_object("code_objects/x.cubin"));
        assert!(!is_counted_object("code_objects/.x.tmp"));
        assert!(!is_counted_object("blobs/x.blob"));
    }

    #[test]
    fn refuses_to_write_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("outside");
        std::fs::write(&target, b"keep").unwrap();
        let id = ObjectId::of(b"xyz");
        let p = blob_path(dir.path(), &id);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&target, &p).unwrap();
        let store = ObjectStore::new(dir.path());
        assert!(matches!(store.put_blob(b"xyz"), Err(Error::Symlink(_))));
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
    }
}
