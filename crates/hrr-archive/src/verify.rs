//! Verify an archive folder or a pack without changing it: every blob and code object matches
//! the content id in its name, every object an event refers to exists, events.bin framing agrees
//! with the manifests, manifests agree with the files, and (in a pack) every file matches the pack
//! index. Findings are collected, not stopped at: each names the file. See FORMAT.md §9.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;

use serde::Serialize;

use crate::blobs::{blob_path, find_code_object, ObjectId};
use crate::error::Result;
use crate::framing::*;
use crate::fsutil;
use crate::layout::{
    self, join_rel as join, Target, ACTIVE_MARKER, BLOBS_DIR, CODE_OBJECTS_DIR, EVENTS_FILE,
    MANIFEST, REDACTIONS_FILE,
};
use crate::manifest::{self, ProcessManifest, RootManifest};
use crate::progress::Progress;
use crate::reader::{Dropped, EventReader};
use crate::redact;
use crate::schema::FieldType;
use crate::stream::{Framer, Unreadable};

/// One finding: which file, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Path below the archive (or pack) root, `/`-separated.
    pub path: String,
    /// What is wrong, in words.
    pub problem: String,
}

/// What a verification found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct VerifyReport {
    /// Files whose content was hashed.
    pub files_checked: u64,
    /// Their bytes.
    pub bytes_checked: u64,
    /// Problems: the archive is damaged or inconsistent.
    pub bad: Vec<Finding>,
    /// Things worth knowing that are not damage (an incomplete capture, a lagging root index).
    pub warnings: Vec<Finding>,
}

impl VerifyReport {
    fn bad(&mut self, path: impl Into<String>, problem: impl Into<String>) {
        self.bad.push(Finding {
            path: path.into(),
            problem: problem.into(),
        });
    }
    fn warn(&mut self, path: impl Into<String>, problem: impl Into<String>) {
        self.warnings.push(Finding {
            path: path.into(),
            problem: problem.into(),
        });
    }
    /// No problems found.
    pub fn ok(&self) -> bool {
        self.bad.is_empty()
    }
    /// The distinct files with problems, in order.
    pub fn bad_files(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.bad
            .iter()
            .filter(|f| seen.insert(f.path.clone()))
            .map(|f| f.path.clone())
            .collect()
    }
}

/// The framing facts of one events.bin, however they were read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FramingSummary {
    /// Records after the schema record (marks included), before any trailer.
    pub records: u64,
    /// The count a valid trailer claims.
    pub trailer_total: Option<u64>,
    /// Incomplete marks.
    pub marks: u64,
    /// Damage that stopped reading (torn tail, implausible length), in words.
    pub damaged: Option<String>,
    /// Could not be read at all (bad magic, version, schema), in words.
    pub unreadable: Option<String>,
}

impl FramingSummary {
    /// Clean trailer counting every record, no marks, nothing dropped.
    pub fn complete(&self) -> bool {
        self.unreadable.is_none()
            && self.damaged.is_none()
            && self.marks == 0
            && self.trailer_total == Some(self.records)
    }
}

/// Counts events.bin records from bytes fed in arbitrary chunks (a file streaming out of a pack):
/// the [`Framer`] without payloads, its findings worded as verify words them.
pub struct FramingCounter {
    framer: Framer,
}

impl Default for FramingCounter {
    fn default() -> Self {
        Self::new()
    }
}

impl FramingCounter {
    /// A counter at the start of a file.
    pub fn new() -> Self {
        FramingCounter {
            framer: Framer::new(None, false),
        }
    }

    /// Feed the next bytes.
    pub fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            let (n, frame) = self.framer.feed(data);
            data = &data[n..];
            if n == 0 && frame.is_none() {
                return;
            }
        }
    }

    /// The summary at the end of the file.
    pub fn finish(mut self) -> FramingSummary {
        while let (_, Some(_)) = self.framer.feed(&[]) {}
        self.framer.finish();
        let r = self.framer.recovery();
        let unreadable = self.framer.unreadable().map(|u| match u {
            Unreadable::TooShort { .. } => "shorter than its 8-byte file header".to_string(),
            Unreadable::BadMagic { found } => format!("bad magic 0x{found:08x}"),
            Unreadable::Version { file } => {
                format!("Version mismatch: file={file} reader={FORMAT_VERSION}")
            }
            Unreadable::NotSchema { kind } => {
                format!("first record has type 0x{kind:04x}, not the schema record")
            }
            Unreadable::NoSchema => "the file ends before its schema record".to_string(),
        });
        let damaged = r.dropped.as_ref().map(|d| match d {
            Dropped::TornHeader { .. } => "torn record header at the tail".to_string(),
            Dropped::ImplausibleLength { len } => format!("implausible record length {len}"),
            Dropped::TornPayload { .. } => "torn record at the tail".to_string(),
        });
        FramingSummary {
            records: r.records,
            trailer_total: r.trailer_total,
            marks: r.incomplete_marks.len() as u64,
            damaged,
            unreadable,
        }
    }
}

/// Check one process capture's manifest against its events.bin framing and object counts.
pub fn check_process(
    report: &mut VerifyReport,
    prefix: &str,
    manifest: std::result::Result<ProcessManifest, String>,
    framing: &FramingSummary,
    objects_on_disk: u64,
    active: bool,
) {
    let mpath = join(prefix, MANIFEST);
    let epath = join(prefix, EVENTS_FILE);
    if let Some(why) = &framing.unreadable {
        report.bad(&epath, format!("unreadable: {why}"));
    }
    let m = match manifest {
        Ok(m) => m,
        Err(e) => {
            report.bad(&mpath, format!("cannot be read: {e}"));
            return;
        }
    };
    let folder = prefix.rsplit('/').next().unwrap_or(prefix);
    if let Some(pid) = manifest::parse_pid_dir_name(folder) {
        if pid != m.pid {
            report.bad(
                &mpath,
                format!("names pid {} but its folder is {folder}", m.pid),
            );
        }
    }
    if framing.unreadable.is_some() {
        return;
    }
    if m.complete {
        if !framing.complete() {
            let mut why = Vec::new();
            if let Some(d) = &framing.damaged {
                why.push(d.clone());
            }
            if framing.marks > 0 {
                why.push(format!("{} incomplete mark(s)", framing.marks));
            }
            match framing.trailer_total {
                None => why.push("no clean-shutdown trailer".into()),
                Some(t) if t != framing.records => why.push(format!(
                    "trailer counts {t} events but {} precede it",
                    framing.records
                )),
                _ => {}
            }
            report.bad(
                &mpath,
                format!("says complete but events.bin is not ({})", why.join("; ")),
            );
        }
        if m.event_count != framing.records {
            report.bad(
                &mpath,
                format!(
                    "event_count {} but events.bin holds {} events",
                    m.event_count, framing.records
                ),
            );
        }
        if m.blob_count != objects_on_disk {
            report.bad(
                &mpath,
                format!(
                    "blob_count {} but {objects_on_disk} blobs and code objects are present",
                    m.blob_count
                ),
            );
        }
        if active {
            report.warn(
                join(prefix, ACTIVE_MARKER),
                "present although the manifest says the capture is complete",
            );
        }
    } else {
        let reason = m
            .incomplete_reason
            .clone()
            .unwrap_or_else(|| "no reason given".into());
        report.warn(
            &mpath,
            format!(
                "capture incomplete ({reason}); counts may lag; `hrr-playback ARCHIVE --repair` tidies it"
            ),
        );
    }
}

/// Check the root index against the process manifests it summarises.
pub fn check_root(
    report: &mut VerifyReport,
    root: std::result::Result<Option<RootManifest>, String>,
    processes: &[(u32, std::result::Result<ProcessManifest, String>)],
) {
    let root = match root {
        Err(e) => {
            report.bad(MANIFEST, format!("cannot be read: {e}"));
            return;
        }
        Ok(None) => {
            report.warn(
                MANIFEST,
                "missing; `hrr-playback ARCHIVE --repair` rebuilds it",
            );
            return;
        }
        Ok(Some(r)) => r,
    };
    let all_complete = processes
        .iter()
        .all(|(_, m)| m.as_ref().is_ok_and(|m| m.complete));
    let mut problems = Vec::new();
    let listed: BTreeMap<u32, _> = root.processes.iter().map(|p| (p.pid, p)).collect();
    for (pid, m) in processes {
        let Ok(m) = m else { continue };
        match listed.get(pid) {
            None => problems.push(format!("pid {pid} is not listed")),
            Some(e) => {
                if e.complete != m.complete
                    || e.event_count != m.event_count
                    || e.blob_count != m.blob_count
                {
                    problems.push(format!("the entry of pid {pid} differs from its manifest"));
                }
            }
        }
    }
    let present: BTreeSet<u32> = processes.iter().map(|(p, _)| *p).collect();
    for pid in listed.keys() {
        if !present.contains(pid) {
            problems.push(format!("lists pid {pid}, which has no folder"));
        }
    }
    for p in problems {
        if all_complete {
            report.bad(MANIFEST, p);
        } else {
            report.warn(
                MANIFEST,
                format!("{p} (the root index lags after a crash; --repair rebuilds it)"),
            );
        }
    }
}

fn hash_file(path: &Path, buf: &mut [u8], progress: &dyn Progress) -> Result<(blake3::Hash, u64)> {
    use crate::error::IoContext;
    let mut f = fsutil::open_read(path)?;
    let mut h = blake3::Hasher::new();
    let mut n_total = 0;
    loop {
        let n = f.read(buf).at(path)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        n_total += n as u64;
        progress.advance(n as u64);
    }
    Ok((h.finalize(), n_total))
}

/// Verify the archive folder at `path` (a root or one `pid-<pid>/`).
pub fn verify_dir(path: &Path, progress: &dyn Progress) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let (dirs, root) = match layout::resolve(path)? {
        Target::Root { root, processes } => (
            processes
                .into_iter()
                .map(|(pid, d)| (Some(pid), d))
                .collect::<Vec<_>>(),
            Some(root),
        ),
        Target::Process { dir } => (vec![(None, dir)], None),
    };
    let total: u64 = dirs
        .iter()
        .filter_map(|(_, d)| crate::blobs::count_objects(d).ok())
        .map(|c| c.blob_bytes + c.code_object_bytes)
        .sum();
    progress.start("verifying", total);
    let mut buf = vec![0u8; 1 << 20];
    let mut manifests = Vec::new();
    for (pid, dir) in &dirs {
        let prefix = if root.is_some() {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        } else {
            String::new()
        };
        let objects = verify_objects(&mut report, &prefix, dir, &mut buf, progress)?;
        let framing = verify_events(&mut report, &prefix, dir);
        let m = manifest::read_process_manifest(dir).map_err(|e| e.to_string());
        let active = layout::has_active_marker(dir);
        check_process(&mut report, &prefix, m.clone(), &framing, objects, active);
        verify_redactions(&mut report, &prefix, dir);
        manifests.push((
            pid.or_else(|| m.as_ref().ok().map(|m| m.pid)).unwrap_or(0),
            m,
        ));
    }
    if let Some(root) = &root {
        let rm = if std::fs::symlink_metadata(root.join(MANIFEST)).is_err() {
            Ok(None)
        } else {
            manifest::read_root_manifest(root)
                .map(Some)
                .map_err(|e| e.to_string())
        };
        check_root(&mut report, rm, &manifests);
    }
    progress.finish();
    Ok(report)
}

/// Hash every blob and code object; returns how many there are.
fn verify_objects(
    report: &mut VerifyReport,
    prefix: &str,
    dir: &Path,
    buf: &mut [u8],
    progress: &dyn Progress,
) -> Result<u64> {
    let mut count = 0;
    let mut files = Vec::new();
    let blobs = dir.join(BLOBS_DIR);
    if let Ok(top) = std::fs::read_dir(&blobs) {
        let mut subs: Vec<_> = top.filter_map(|e| e.ok()).collect();
        subs.sort_by_key(|e| e.file_name());
        for sub in subs {
            let sub_name = sub.file_name().to_string_lossy().into_owned();
            let ft = sub.file_type().ok();
            if !ft.is_some_and(|t| t.is_dir()) {
                continue;
            }
            if let Ok(rd) = std::fs::read_dir(sub.path()) {
                let mut names: Vec<_> = rd.filter_map(|e| e.ok()).collect();
                names.sort_by_key(|e| e.file_name());
                for f in names {
                    let name = f.file_name().to_string_lossy().into_owned();
                    files.push((format!("{BLOBS_DIR}/{sub_name}/{name}"), f));
                }
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(dir.join(CODE_OBJECTS_DIR)) {
        let mut names: Vec<_> = rd.filter_map(|e| e.ok()).collect();
        names.sort_by_key(|e| e.file_name());
        for f in names {
            let name = f.file_name().to_string_lossy().into_owned();
            files.push((format!("{CODE_OBJECTS_DIR}/{name}"), f));
        }
    }
    for (rel, entry) in files {
        let shown = join(prefix, &rel);
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_symlink() {
            report.bad(&shown, "is a symbolic link; archives never hold links");
            continue;
        }
        if !ft.is_file() {
            continue;
        }
        if fsutil::is_temp_name(&name) {
            report.warn(&shown, "writer temp file (left by an interrupted write)");
            continue;
        }
        let is_blob = rel.starts_with(BLOBS_DIR);
        if is_blob && !layout::is_blob_file_name(&name) {
            continue;
        }
        count += 1;
        let Some(claimed) = crate::blobs::claimed_object_id(&rel) else {
            report.bad(&shown, "name is not a content id");
            continue;
        };
        match hash_file(&entry.path(), buf, progress) {
            Ok((hash, n)) => {
                report.files_checked += 1;
                report.bytes_checked += n;
                let found = &hash.to_hex()[..32];
                if found != claimed {
                    report.bad(
                        &shown,
                        format!("content does not match its id (its content hashes to {found})"),
                    );
                }
            }
            Err(e) => report.bad(&shown, format!("cannot be read: {e}")),
        }
    }
    Ok(count)
}

/// Read events.bin: framing facts, and every object an event refers to must exist.
fn verify_events(report: &mut VerifyReport, prefix: &str, dir: &Path) -> FramingSummary {
    let epath = join(prefix, EVENTS_FILE);
    let mut reader = match EventReader::open(&dir.join(EVENTS_FILE)) {
        Ok(r) => r,
        Err(e) => {
            return FramingSummary {
                unreadable: Some(e.to_string()),
                ..Default::default()
            }
        }
    };
    let schema = reader.schema().cloned();
    let mut missing = 0u64;
    let mut undecodable = 0u64;
    let mut checked: BTreeSet<(ObjectId, bool)> = BTreeSet::new();
    for ev in reader.decoded(schema.as_ref()) {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                report.bad(&epath, format!("read error: {e}"));
                break;
            }
        };
        let Some(spans) = ev.object_refs() else {
            continue;
        };
        let Ok(spans) = spans else {
            undecodable += 1;
            continue;
        };
        for span in spans {
            let Some(id) = span.id else { continue };
            let code = span.ty == FieldType::Code;
            if !checked.insert((id, code)) {
                continue;
            }
            let present = if code {
                find_code_object(dir, &id).is_some()
            } else {
                std::fs::symlink_metadata(blob_path(dir, &id)).is_ok_and(|m| m.is_file())
            };
            if !present {
                missing += 1;
                if missing <= 20 {
                    report.bad(
                        &epath,
                        format!(
                            "event #{} ({}) field `{}` refers to {} {id}, which is missing",
                            ev.header.seq,
                            ev.name(),
                            span.name,
                            if code { "code object" } else { "blob" }
                        ),
                    );
                }
            }
        }
    }
    if missing > 20 {
        report.bad(&epath, format!("{} more missing objects", missing - 20));
    }
    if undecodable > 0 {
        report.warn(
            &epath,
            format!("{undecodable} event payload(s) do not match their schema entry"),
        );
    }
    let r = reader.recovery();
    FramingSummary {
        records: r.records,
        trailer_total: r.trailer_total,
        marks: r.incomplete_marks.len() as u64,
        damaged: r.dropped.as_ref().map(|_| {
            r.incompleteness()
                .into_iter()
                .find(|s| s.starts_with("no clean"))
                .unwrap_or_else(|| "damaged tail".into())
        }),
        unreadable: None,
    }
}

fn verify_redactions(report: &mut VerifyReport, prefix: &str, dir: &Path) {
    let rpath = join(prefix, REDACTIONS_FILE);
    if std::fs::symlink_metadata(dir.join(REDACTIONS_FILE)).is_err() {
        return;
    }
    let file = match redact::read_redactions(dir) {
        Ok(Some(f)) => f,
        Ok(None) => return,
        Err(e) => {
            report.bad(&rpath, format!("cannot be read: {e}"));
            return;
        }
    };
    for (hex, obj) in &file.objects {
        let Some(id) = ObjectId::from_hex(hex) else {
            report.bad(&rpath, format!("`{hex}` is not an object id"));
            continue;
        };
        let path = if obj.kind == redact::ObjectKind::Code {
            find_code_object(dir, &id).map(|(p, _)| p)
        } else {
            Some(blob_path(dir, &id))
        };
        let size = path.and_then(|p| std::fs::symlink_metadata(p).ok().map(|m| m.len()));
        match size {
            None => report.bad(&rpath, format!("lists {hex}, which is missing")),
            Some(size) => {
                if obj
                    .ranges
                    .iter()
                    .any(|r| r.offset.checked_add(r.length).is_none_or(|e| e > size))
                {
                    report.bad(
                        &rpath,
                        format!("a range of {hex} runs past its {size} bytes"),
                    );
                }
            }
        }
    }
}

#[cfg(feature = "pack")]
pub use pack_verify::verify_pack;

#[cfg(feature = "pack")]
mod pack_verify {
    use super::*;
    use crate::pack::{read_pack, PackFile, PackIndex, PackKind, PackResult, PackVisitor};

    #[derive(Default)]
    struct Verifier {
        report: VerifyReport,
        cur: Option<Current>,
        manifests: BTreeMap<String, Vec<u8>>,
        framing: BTreeMap<String, FramingSummary>,
    }

    enum Current {
        Manifest(String, Vec<u8>),
        Events(String, Box<FramingCounter>),
        Other,
    }

    fn split(rel: &str) -> (&str, &str) {
        rel.rsplit_once('/').unwrap_or(("", rel))
    }

    impl PackVisitor for Verifier {
        fn file_start(&mut self, rel: &str, file: &PackFile) -> PackResult<()> {
            let (dir, name) = split(rel);
            self.cur = Some(
                if name == MANIFEST && file.size <= manifest::MAX_MANIFEST_BYTES {
                    Current::Manifest(dir.to_string(), Vec::with_capacity(file.size as usize))
                } else if name == EVENTS_FILE {
                    Current::Events(dir.to_string(), Box::default())
                } else {
                    Current::Other
                },
            );
            Ok(())
        }
        fn file_data(&mut self, data: &[u8]) -> PackResult<()> {
            match &mut self.cur {
                Some(Current::Manifest(_, v)) => v.extend_from_slice(data),
                Some(Current::Events(_, c)) => c.feed(data),
                _ => {}
            }
            Ok(())
        }
        fn file_end(
            &mut self,
            _pack: &Path,
            rel: &str,
            file: &PackFile,
            found: &str,
        ) -> PackResult<()> {
            self.report.files_checked += 1;
            self.report.bytes_checked += file.size;
            match self.cur.take() {
                Some(Current::Manifest(dir, v)) => {
                    self.manifests.insert(dir, v);
                }
                Some(Current::Events(dir, c)) => {
                    self.framing.insert(dir, c.finish());
                }
                _ => {}
            }
            if found != file.blake3 {
                self.report.bad(
                    rel,
                    format!(
                        "corrupt: content hashes to {found}, the pack index says {}",
                        file.blake3
                    ),
                );
            } else if let Some(claimed) = crate::blobs::claimed_object_id(rel) {
                if &found[..32] != claimed {
                    self.report.bad(
                        rel,
                        format!(
                            "content does not match its id (its content hashes to {})",
                            &found[..32]
                        ),
                    );
                }
            }
            Ok(())
        }
    }

    /// Verify the pack at `path` without unpacking it: every file against the index, every
    /// object against its id, events.bin framing against the manifests. A damaged stream or an
    /// unsafe member is an error (it names the member).
    pub fn verify_pack(
        path: &Path,
        progress: &dyn Progress,
    ) -> PackResult<(PackIndex, VerifyReport)> {
        let mut v = Verifier::default();
        let index = read_pack(path, &mut v, progress)?;
        let mut report = v.report;
        let pid_dirs: Vec<String> = match index.kind {
            PackKind::Process => vec![String::new()],
            PackKind::Root => index
                .dirs
                .iter()
                .filter(|d| !d.contains('/') && manifest::parse_pid_dir_name(d).is_some())
                .filter(|d| {
                    index
                        .files
                        .iter()
                        .any(|f| f.path == format!("{d}/{EVENTS_FILE}"))
                })
                .cloned()
                .collect(),
        };
        let mut processes = Vec::new();
        for dir in &pid_dirs {
            let objects = index
                .files
                .iter()
                .filter(|f| {
                    let rest = if dir.is_empty() {
                        Some(f.path.as_str())
                    } else {
                        f.path
                            .strip_prefix(dir.as_str())
                            .and_then(|r| r.strip_prefix('/'))
                    };
                    rest.is_some_and(crate::blobs::is_counted_object)
                })
                .count() as u64;
            let m = match v.manifests.get(dir) {
                None => Err("missing".to_string()),
                Some(bytes) => {
                    serde_json::from_slice::<ProcessManifest>(bytes).map_err(|e| e.to_string())
                }
            };
            let framing = v.framing.get(dir).cloned().unwrap_or(FramingSummary {
                unreadable: Some("missing".into()),
                ..Default::default()
            });
            let active = index
                .files
                .iter()
                .any(|f| f.path == join(dir, ACTIVE_MARKER));
            check_process(&mut report, dir, m.clone(), &framing, objects, active);
            let pid = manifest::parse_pid_dir_name(dir)
                .or_else(|| m.as_ref().ok().map(|m| m.pid))
                .unwrap_or(0);
            processes.push((pid, m));
        }
        if index.kind == PackKind::Root {
            let rm = match v.manifests.get("") {
                None => Ok(None),
                Some(b) => serde_json::from_slice::<RootManifest>(b)
                    .map(Some)
                    .map_err(|e| e.to_string()),
            };
            check_root(&mut report, rm, &processes);
        }
        Ok((index, report))
    }
}
