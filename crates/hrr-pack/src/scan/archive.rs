//! Scanning whole archives: every blob, code object and events.bin of an archive folder (files
//! in parallel), of a pack (streamed, never unpacked), or one plain file.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context, Result};
use hrr_archive::blobs::{claimed_object_id, CODE_OBJECTS_DIR};
use hrr_archive::layout::{self, Target};
use hrr_archive::pack::{self, PackFile, PackResult, PackVisitor};
use hrr_archive::progress::Progress;
use hrr_archive::redact::ObjectKind;
use hrr_archive::writer::EVENTS_FILE;
use hrr_archive::{fsutil, ObjectId};

use super::{junction, Finding, Scanner, Stream};
use crate::fingerprint::FingerprintKey;

/// The findings in one file.
#[derive(Debug, Clone)]
pub struct FileReport {
    /// Path below the archive (or pack) root, `/`-separated.
    pub path: String,
    /// The object it is (id from its name), if it is one.
    pub object: Option<(ObjectId, ObjectKind)>,
    /// Its size.
    pub size: u64,
    /// Secrets found (allowed fingerprints and rules left out).
    pub findings: Vec<Finding>,
}

/// What a scan found.
#[derive(Debug, Clone, Default)]
pub struct ScanReport {
    /// Files scanned.
    pub files_scanned: u64,
    /// Their bytes.
    pub bytes_scanned: u64,
    /// Files with findings, by path.
    pub files: Vec<FileReport>,
    /// Findings left out because their fingerprint or rule was allowed (`--allow`).
    pub allowed: u64,
}

impl ScanReport {
    /// Number of findings.
    pub fn found(&self) -> usize {
        self.files.iter().map(|f| f.findings.len()).sum()
    }
}

/// What was scanned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// An archive folder.
    Archive,
    /// A `.hrr.tar.zst` pack.
    Pack,
    /// A plain file.
    File,
}

/// What a file of a process capture is to scrub: an object (rewritten under a new content id),
/// or `None` (events.bin, manifests, regions and anything else: redacted in place).
pub fn scanned_kind(rel_in_process: &str) -> Option<(ObjectId, ObjectKind)> {
    if rel_in_process == EVENTS_FILE {
        return None;
    }
    let id = ObjectId::from_hex(claimed_object_id(rel_in_process)?)?;
    let kind = if rel_in_process.starts_with(CODE_OBJECTS_DIR) {
        ObjectKind::Code
    } else {
        ObjectKind::Blob
    };
    Some((id, kind))
}

/// The files of the archive folder at `path` a scan reads: every regular file `pack` would
/// ship (all of them but writer temp files), as (path shown, file, object). A symbolic link
/// anywhere in the archive is an error naming it: nothing is followed, and pack refuses them too.
#[allow(clippy::type_complexity)]
pub fn archive_files(
    path: &Path,
) -> Result<Vec<(String, PathBuf, Option<(ObjectId, ObjectKind)>)>> {
    let (top, processes): (PathBuf, Vec<String>) = match layout::resolve(path)? {
        Target::Root { processes, .. } => (
            path.to_path_buf(),
            processes
                .into_iter()
                .map(|(_, d)| fsutil::name_of(&d))
                .collect(),
        ),
        Target::Process { dir } => (dir, vec![String::new()]),
    };
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(&top)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
    {
        let e = e.with_context(|| format!("listing {}", top.display()))?;
        let ft = e.file_type();
        if ft.is_dir() {
            continue;
        }
        if !ft.is_file() {
            bail!(
                "{}: not a regular file or folder (links are never followed; pack refuses it too)",
                e.path().display()
            );
        }
        if fsutil::is_temp_name(&e.file_name().to_string_lossy()) {
            continue;
        }
        let rel = e
            .path()
            .strip_prefix(&top)
            .expect("below the folder")
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        let object = processes.iter().find_map(|d| {
            let inner = if d.is_empty() {
                rel.as_str()
            } else {
                rel.strip_prefix(d.as_str())?.strip_prefix('/')?
            };
            scanned_kind(inner)
        });
        out.push((rel, e.path().to_path_buf(), object));
    }
    Ok(out)
}

fn filter_allowed(
    findings: Vec<Finding>,
    allow: &HashSet<String>,
    allowed: &mut u64,
) -> Vec<Finding> {
    findings
        .into_iter()
        .filter(|f| {
            let keep = !allow.contains(&f.fingerprint) && !allow.contains(f.rule);
            if !keep {
                *allowed += 1;
            }
            keep
        })
        .collect()
}

/// The size of a scanned file and its findings.
type FileScan = Result<(u64, Vec<Finding>)>;

/// Scan one file from disk (no links followed), in 1 MiB reads.
pub fn scan_file(
    scanner: &Scanner,
    key: &FingerprintKey,
    file: &Path,
    progress: &dyn Progress,
) -> Result<(u64, Vec<Finding>)> {
    let mut stream = scanner.stream(key);
    read_chunks(fsutil::open_read(file)?, file, |chunk| {
        stream.feed(chunk);
        progress.advance(chunk.len() as u64);
        Ok(())
    })?;
    let size = stream.position();
    Ok((size, stream.finish()))
}

/// Read `f` (the file at `path`, named in errors) to its end in 1 MiB reads, handing `each`
/// every chunk read (to change in place if it likes).
pub fn read_chunks(
    mut f: impl Read,
    path: &Path,
    mut each: impl FnMut(&mut [u8]) -> Result<()>,
) -> Result<()> {
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            return Ok(());
        }
        each(&mut buf[..n])?;
    }
}

/// What a scan goes by, whatever it scans: the rules, the fingerprint key, the `--allow` entries
/// (fingerprints and rule ids) and the worker threads of an archive scan (0: one per core).
#[derive(Clone, Copy)]
pub struct ScanWith<'a> {
    /// The rules.
    pub scanner: &'a Scanner,
    /// The fingerprint key.
    pub key: &'a FingerprintKey,
    /// Findings to leave alone.
    pub allow: &'a HashSet<String>,
    /// Workers of an archive scan (0: one per core).
    pub threads: usize,
}

/// Scan the archive folder at `path` with `with.threads` workers.
pub fn scan_archive(with: &ScanWith, path: &Path, progress: &dyn Progress) -> Result<ScanReport> {
    let ScanWith {
        scanner,
        key,
        allow,
        threads,
    } = *with;
    let files = archive_files(path)?;
    let total: u64 = files
        .iter()
        .filter_map(|(_, p, _)| std::fs::symlink_metadata(p).ok())
        .map(|m| m.len())
        .sum();
    progress.start("scanning", total);
    let threads = if threads == 0 {
        hrr_archive::cores()
    } else {
        threads
    }
    .clamp(1, files.len().max(1));
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<FileScan>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= files.len() {
                    break;
                }
                let r = scan_file(scanner, key, &files[i].1, progress);
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
            });
        }
    });
    progress.finish();
    let mut report = ScanReport::default();
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    let mut sizes = std::collections::HashMap::new();
    for ((shown, _, object), r) in files.into_iter().zip(results) {
        let (size, findings) = r.expect("every file was scanned")?;
        report.files_scanned += 1;
        report.bytes_scanned += size;
        sizes.insert(shown.clone(), (size, object));
        let findings = filter_allowed(findings, allow, &mut report.allowed);
        if !findings.is_empty() {
            report.files.push(FileReport {
                path: shown,
                object,
                size,
                findings,
            });
        }
    }
    // Secrets across two blobs of one upload.
    for (prefix, dir) in process_dirs(path)? {
        let found = junction::scan_junctions(scanner, key, &dir)?;
        for (rel, f) in found {
            let shown = format!("{prefix}{rel}");
            let Some(&(size, object)) = sizes.get(&shown) else {
                continue;
            };
            let mut kept = filter_allowed(vec![f], allow, &mut report.allowed);
            let Some(f) = kept.pop() else { continue };
            match report.files.iter_mut().find(|r| r.path == shown) {
                Some(r) => r.findings.push(f),
                None => report.files.push(FileReport {
                    path: shown,
                    object,
                    size,
                    findings: vec![f],
                }),
            }
        }
    }
    report.files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(report)
}

/// The process folders of the archive at `path`, each with its path prefix in reports.
fn process_dirs(path: &Path) -> Result<Vec<(String, PathBuf)>> {
    Ok(match layout::resolve(path)? {
        Target::Root { processes, .. } => processes
            .into_iter()
            .map(|(_, d)| {
                let name = fsutil::name_of(&d);
                (format!("{name}/"), d)
            })
            .collect(),
        Target::Process { dir } => vec![(String::new(), dir)],
    })
}

struct PackScan<'a> {
    scanner: &'a Scanner,
    key: &'a FingerprintKey,
    allow: &'a HashSet<String>,
    cur: Option<(Stream<'a>, Option<(ObjectId, ObjectKind)>)>,
    report: ScanReport,
    processes: Vec<String>,
}

impl PackVisitor for PackScan<'_> {
    fn index(&mut self, index: &pack::PackIndex) -> PackResult<()> {
        self.processes = index.processes.iter().map(|p| p.dir.clone()).collect();
        Ok(())
    }
    fn file_start(&mut self, rel: &str, _file: &PackFile) -> PackResult<()> {
        let inner = self.processes.iter().find_map(|d| {
            if d.is_empty() {
                Some(rel)
            } else {
                rel.strip_prefix(d.as_str())?.strip_prefix('/')
            }
        });
        // every member is scanned (the index too): all of it leaves with the pack
        self.cur = Some((self.scanner.stream(self.key), inner.and_then(scanned_kind)));
        Ok(())
    }
    fn file_data(&mut self, data: &[u8]) -> PackResult<()> {
        if let Some((s, _)) = &mut self.cur {
            s.feed(data);
        }
        Ok(())
    }
    fn file_end(&mut self, pack: &Path, rel: &str, file: &PackFile, found: &str) -> PackResult<()> {
        if let Some((stream, object)) = self.cur.take() {
            let size = stream.position();
            self.report.files_scanned += 1;
            self.report.bytes_scanned += size;
            let findings = filter_allowed(stream.finish(), self.allow, &mut self.report.allowed);
            if !findings.is_empty() {
                self.report.files.push(FileReport {
                    path: rel.to_string(),
                    object,
                    size,
                    findings,
                });
            }
        }
        if found != file.blake3 {
            return Err(pack::PackError::HashMismatch {
                path: pack.to_path_buf(),
                entry: rel.to_string(),
                expected: file.blake3.clone(),
                found: found.to_string(),
            });
        }
        Ok(())
    }
}

/// Scan a pack without unpacking it.
pub fn scan_pack(with: &ScanWith, path: &Path, progress: &dyn Progress) -> Result<ScanReport> {
    let mut v = PackScan {
        scanner: with.scanner,
        key: with.key,
        allow: with.allow,
        cur: None,
        report: ScanReport::default(),
        processes: Vec::new(),
    };
    pack::read_pack(path, &mut v, progress)?;
    Ok(v.report)
}

/// Scan an archive folder, a pack or a plain file, whichever `path` is.
pub fn scan_path(
    with: &ScanWith,
    path: &Path,
    progress: &dyn Progress,
) -> Result<(Source, ScanReport)> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if meta.is_dir() {
        return Ok((Source::Archive, scan_archive(with, path, progress)?));
    }
    if pack::is_pack_file(path) {
        return Ok((Source::Pack, scan_pack(with, path, progress)?));
    }
    progress.start("scanning", meta.len());
    let (size, findings) = scan_file(with.scanner, with.key, path, progress)?;
    progress.finish();
    let mut report = ScanReport {
        files_scanned: 1,
        bytes_scanned: size,
        ..Default::default()
    };
    let findings = filter_allowed(findings, with.allow, &mut report.allowed);
    if !findings.is_empty() {
        report.files.push(FileReport {
            path: fsutil::name_of(path),
            object: None,
            size,
            findings,
        });
    }
    Ok((Source::File, report))
}
