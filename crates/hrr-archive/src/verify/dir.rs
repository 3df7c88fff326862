//! Verifying an archive folder: every blob and code object hashed against the id in its name,
//! every event decoded and every object it refers to looked up, events.bin framing and object
//! counts checked against the manifests, the redaction record against the objects.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use super::{check_process, check_root, FramingSummary, VerifyReport};
use crate::blobs::{blob_path, find_code_object, object_present, ObjectId};
use crate::error::Result;
use crate::fsutil;
use crate::layout::{
    self, join_rel as join, Target, BLOBS_DIR, CODE_OBJECTS_DIR, EVENTS_FILE, MANIFEST,
    REDACTIONS_FILE,
};
use crate::manifest;
use crate::progress::Progress;
use crate::reader::EventReader;
use crate::redact;
use crate::schema::FieldType;

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
            fsutil::name_of(dir)
        } else {
            String::new()
        };
        if let Err(e) = layout::check_no_links(dir) {
            // Nothing of a capture holding a link is read: the link could lead anywhere.
            let shown = match &e {
                crate::Error::Symlink(p) => {
                    join(&prefix, &p.strip_prefix(dir).unwrap_or(p).to_string_lossy())
                }
                _ => join(&prefix, ""),
            };
            report.bad(
                shown,
                format!("refused, nothing in this capture checked: {e}"),
            );
            manifests.push((pid.unwrap_or(0), Err("not checked".to_string())));
            continue;
        }
        let objects = verify_objects(&mut report, &prefix, dir, &mut buf, progress)?;
        let framing = verify_events(&mut report, &prefix, dir);
        let m = manifest::read_process_manifest(dir).map_err(|e| e.to_string());
        let active = layout::has_active_marker(dir);
        check_process(&mut report, &prefix, m.clone(), &framing, objects, active);
        verify_redactions(&mut report, &prefix, dir);
        manifests.push((
            pid.or_else(|| m.as_ref().ok().map(|m| m.status.pid))
                .unwrap_or(0),
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
    let (files, bytes) = count_files(path);
    report.files_checked = files;
    report.bytes_checked = bytes;
    progress.finish();
    Ok(report)
}

/// Regular files below `dir` (links not followed, writer temp files left out) and their bytes:
/// what a pack of it holds, so a folder and its pack report the same count.
fn count_files(dir: &Path) -> (u64, u64) {
    let (mut n, mut bytes) = (0, 0);
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (0, 0);
    };
    for e in rd.filter_map(|e| e.ok()) {
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.is_dir() {
            let (a, b) = count_files(&e.path());
            n += a;
            bytes += b;
        } else if meta.is_file() && !fsutil::is_temp_name(&e.file_name().to_string_lossy()) {
            n += 1;
            bytes += meta.len();
        }
    }
    (n, bytes)
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
            Ok((hash, _)) => {
                report.objects_checked += 1;
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
    // objects a synchronisation journaled in a capture that did not finish (replay reads them
    // from the journal, --repair writes their files)
    let jpath = join(prefix, crate::layout::names::JOURNAL_FILE);
    let journaled = crate::journal::journaled(dir).unwrap_or_else(|e| {
        report.bad(&jpath, format!("unreadable: {e}"));
        Default::default()
    });
    let mut in_journal = 0u64;
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
            if object_present(dir, &id, code) {
                continue;
            }
            if journaled.contains(&(id, code)) {
                in_journal += 1;
            } else {
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
    if in_journal > 0 {
        report.warn(
            &jpath,
            format!(
                "holds {in_journal} object(s) events refer to whose files were never written (the \
                 capture did not finish); replay reads them from it, `hrr-playback ARCHIVE \
                 --repair` writes their files"
            ),
        );
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
