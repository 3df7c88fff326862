//! Scanning whole archives: every blob, code object and events.bin of an archive folder (files
//! in parallel), of a pack (streamed, never unpacked), or one plain file.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use anyhow::{Context, Result};
use hrr_archive::blobs::{claimed_object_id, BLOBS_DIR, CODE_OBJECTS_DIR};
use hrr_archive::layout::{self, Target};
use hrr_archive::pack::{self, PackFile, PackResult, PackVisitor};
use hrr_archive::progress::Progress;
use hrr_archive::redact::ObjectKind;
use hrr_archive::writer::EVENTS_FILE;
use hrr_archive::{fsutil, ObjectId};

use super::{Finding, Scanner, Stream};
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
    /// Secrets found (allowed fingerprints left out).
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
    /// Findings left out because their fingerprint was allowed.
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

/// Is a file (path below a process capture) one a scan reads? events.bin, blobs, code objects.
pub fn scanned_kind(rel_in_process: &str) -> Option<Option<(ObjectId, ObjectKind)>> {
    if rel_in_process == EVENTS_FILE {
        return Some(None);
    }
    let id = ObjectId::from_hex(claimed_object_id(rel_in_process)?)?;
    let kind = if rel_in_process.starts_with(CODE_OBJECTS_DIR) {
        ObjectKind::Code
    } else {
        ObjectKind::Blob
    };
    Some(Some((id, kind)))
}

/// The files of the archive folder at `path` a scan reads: (path shown, file, object).
#[allow(clippy::type_complexity)]
pub fn archive_files(
    path: &Path,
) -> Result<Vec<(String, PathBuf, Option<(ObjectId, ObjectKind)>)>> {
    let dirs: Vec<(String, PathBuf)> = match layout::resolve(path)? {
        Target::Root { processes, .. } => processes
            .into_iter()
            .map(|(_, d)| {
                let name = d.file_name().map(|n| n.to_string_lossy().into_owned());
                (format!("{}/", name.unwrap_or_default()), d)
            })
            .collect(),
        Target::Process { dir } => vec![(String::new(), dir)],
    };
    let mut out = Vec::new();
    for (prefix, dir) in dirs {
        let mut rels = vec![EVENTS_FILE.to_string()];
        for sub in [BLOBS_DIR, CODE_OBJECTS_DIR] {
            let top = dir.join(sub);
            if std::fs::symlink_metadata(&top).is_err() {
                continue;
            }
            for e in walkdir::WalkDir::new(&top)
                .follow_links(false)
                .sort_by_file_name()
                .min_depth(1)
                .max_depth(2)
            {
                let e = e.with_context(|| format!("listing {}", top.display()))?;
                if !e.file_type().is_file() {
                    continue;
                }
                let rel = e
                    .path()
                    .strip_prefix(&dir)
                    .expect("below the folder")
                    .to_string_lossy()
                    .into_owned();
                rels.push(rel);
            }
        }
        for rel in rels {
            if let Some(object) = scanned_kind(&rel) {
                let file = dir.join(&rel);
                if std::fs::symlink_metadata(&file).is_ok() {
                    out.push((format!("{prefix}{rel}"), file, object));
                }
            }
        }
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
            let keep = !allow.contains(&f.fingerprint);
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
    let mut f = fsutil::open_read(file)?;
    let mut stream = scanner.stream(key);
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f
            .read(&mut buf)
            .with_context(|| format!("reading {}", file.display()))?;
        if n == 0 {
            break;
        }
        stream.feed(&buf[..n]);
        progress.advance(n as u64);
    }
    let size = stream.position();
    Ok((size, stream.finish()))
}

/// Scan the archive folder at `path` with `threads` workers (0: one per core).
pub fn scan_archive(
    scanner: &Scanner,
    key: &FingerprintKey,
    path: &Path,
    allow: &HashSet<String>,
    threads: usize,
    progress: &dyn Progress,
) -> Result<ScanReport> {
    let files = archive_files(path)?;
    let total: u64 = files
        .iter()
        .filter_map(|(_, p, _)| std::fs::symlink_metadata(p).ok())
        .map(|m| m.len())
        .sum();
    progress.start("scanning", total);
    let threads = if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
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
    for ((shown, _, object), r) in files.into_iter().zip(results) {
        let (size, findings) = r.expect("every file was scanned")?;
        report.files_scanned += 1;
        report.bytes_scanned += size;
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
    Ok(report)
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
        self.cur = inner
            .and_then(scanned_kind)
            .map(|object| (self.scanner.stream(self.key), object));
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
pub fn scan_pack(
    scanner: &Scanner,
    key: &FingerprintKey,
    path: &Path,
    allow: &HashSet<String>,
    progress: &dyn Progress,
) -> Result<ScanReport> {
    let mut v = PackScan {
        scanner,
        key,
        allow,
        cur: None,
        report: ScanReport::default(),
        processes: Vec::new(),
    };
    pack::read_pack(path, &mut v, progress)?;
    Ok(v.report)
}

/// Scan an archive folder, a pack or a plain file, whichever `path` is.
pub fn scan_path(
    scanner: &Scanner,
    key: &FingerprintKey,
    path: &Path,
    allow: &HashSet<String>,
    threads: usize,
    progress: &dyn Progress,
) -> Result<(Source, ScanReport)> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    if meta.is_dir() {
        return Ok((
            Source::Archive,
            scan_archive(scanner, key, path, allow, threads, progress)?,
        ));
    }
    if pack::is_pack_file(path) {
        return Ok((
            Source::Pack,
            scan_pack(scanner, key, path, allow, progress)?,
        ));
    }
    progress.start("scanning", meta.len());
    let (size, findings) = scan_file(scanner, key, path, progress)?;
    progress.finish();
    let mut report = ScanReport {
        files_scanned: 1,
        bytes_scanned: size,
        ..Default::default()
    };
    let findings = filter_allowed(findings, allow, &mut report.allowed);
    if !findings.is_empty() {
        report.files.push(FileReport {
            path: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            object: None,
            size,
            findings,
        });
    }
    Ok((Source::File, report))
}
