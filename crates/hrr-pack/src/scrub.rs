//! Scrub: overwrite every secret a scan finds with same-length filler (framing kept), give each
//! changed object its new content id, point every event at the new ids, redact manifests,
//! regions and any other file in place (same length), record what was overwritten in
//! `redactions.json` (never the secret), and mark the archive scrubbed.
//!
//! Exclusion: scrub (and pack) hold the archive's lock ([`hrr_archive::lock`]); a second one is
//! refused with a message naming the first.
//!
//! Crash safety: the scrubbed archive is built beside the original in a staging folder
//! `.<name>.hrr-scrub` (unchanged files hard-linked, so it costs little room; copied for `-o`;
//! a file that changes is always written anew and renamed, so a link never carries a change back
//! to the original), synced, marked ready (`.<name>.hrr-scrub-ready`), then swapped in with one
//! `renameat2(RENAME_EXCHANGE)`, and the old tree (now in the staging folder) is removed before
//! scrub reports success. Where the file system has no exchange, two renames with the original
//! parked at `.<name>.hrr-scrub-old` in between. [`recover`], run first by every scrub and pack
//! under the lock, finishes whatever a `kill -9` interrupted: a staging folder (a partial build,
//! or the old tree after the swap) is removed, a parked original is put back unless the ready
//! staging folder can take its place. So at every instant the archive is at its name (or, for
//! the instant between the two fallback renames, parked, and put back by the next command), and
//! once a scrub completes no unscrubbed copy is left beside it.
//! A second scrub of a scrubbed archive finds nothing and changes nothing.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use hrr_archive::blobs::{blob_path, code_object_path, count_objects, CodeKind};
use hrr_archive::layout::{self, Target, EVENTS_FILE, MANIFEST};
use hrr_archive::manifest;
use hrr_archive::progress::Progress;
use hrr_archive::redact::{
    self, ObjectKind, RedactedObject, Redaction, RedactionsFile, FINGERPRINT_SCHEME,
    REDACTIONS_VERSION,
};
use hrr_archive::{fsutil, lock, ObjectId};
use serde_json::Value;

use crate::fingerprint::FingerprintKey;
use crate::scan::archive::{read_chunks, scan_archive, FileReport, ScanReport, ScanWith};
use crate::scan::{Finding, Scanner};

/// Options of [`scrub`].
#[derive(Debug, Clone, Default)]
pub struct ScrubOptions {
    /// Write the scrubbed archive here (must not exist) instead of replacing the original.
    pub out: Option<PathBuf>,
    /// Fingerprints left as they are.
    pub allow: HashSet<String>,
    /// Scan workers (0: one per core).
    pub threads: usize,
}

/// One object scrub rewrote.
#[derive(Debug, Clone)]
pub struct Rewritten {
    /// Its path before (below the archive root).
    pub path: String,
    /// Its path after (new content id).
    pub new_path: String,
    /// Ranges overwritten.
    pub ranges: usize,
}

/// What a scrub did.
#[derive(Debug, Clone)]
pub struct ScrubReport {
    /// The archive written (the original path, or `out`).
    pub archive: PathBuf,
    /// What the scan found (the secrets now redacted).
    pub scan: ScanReport,
    /// Objects rewritten under new ids.
    pub objects: Vec<Rewritten>,
    /// events.bin files changed: (path, references repointed, ranges redacted in payloads).
    pub events: Vec<(String, u64, usize)>,
    /// False when there was nothing to do (already scrubbed and nothing found).
    pub changed: bool,
    /// Findings that could not be redacted (parts of events.bin outside event payloads).
    pub not_redacted: Vec<String>,
    /// What [`recover`] finished of an earlier, interrupted scrub.
    pub recovered: Vec<String>,
}

fn is_marked(v: Option<&Value>) -> bool {
    v == Some(&Value::Bool(true))
}

/// Scrub the archive at `path` (a root or one process capture).
pub fn scrub(
    scanner: &Scanner,
    key: &FingerprintKey,
    path: &Path,
    opts: &ScrubOptions,
    progress: &dyn Progress,
) -> Result<ScrubReport> {
    let _lock = lock::exclusive(path, "scrub")?;
    let mut recovered = recover(path)?;
    if let Some(out) = &opts.out {
        recovered.extend(recover(out)?);
    }
    let target = layout::resolve(path)?;
    let src = std::fs::canonicalize(path).with_context(|| format!("{}", path.display()))?;
    let (is_root, pid_dirs): (bool, Vec<String>) = match &target {
        Target::Root { processes, .. } => (
            true,
            processes
                .iter()
                .map(|(_, d)| {
                    d.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect(),
        ),
        Target::Process { .. } => (false, vec![String::new()]),
    };
    for d in &pid_dirs {
        if layout::has_active_marker(&src.join(d)) {
            bail!(
                "{}: capture still running or killed before its clean shutdown (`active` marker); run `hrr-playback {} --repair` first",
                src.join(d).display(),
                path.display()
            );
        }
    }
    let with = ScanWith {
        scanner,
        key,
        allow: &opts.allow,
        threads: opts.threads,
    };
    let scan = scan_archive(&with, &src, progress)?;
    let marked = pid_dirs.iter().all(|d| {
        manifest::read_process_manifest(&src.join(d))
            .is_ok_and(|m| is_marked(m.extra.get("scrubbed")))
    }) && (!is_root
        || manifest::read_root_manifest(&src).is_ok_and(|m| is_marked(m.extra.get("scrubbed"))));
    if scan.found() == 0 && marked && opts.out.is_none() {
        return Ok(ScrubReport {
            archive: src,
            scan,
            objects: Vec::new(),
            events: Vec::new(),
            changed: false,
            not_redacted: Vec::new(),
            recovered,
        });
    }

    // Stage the new tree beside its destination.
    let name = src
        .file_name()
        .ok_or_else(|| anyhow!("{}: has no name", src.display()))?
        .to_string_lossy()
        .into_owned();
    let (stage, dest) = match &opts.out {
        Some(out) => {
            if std::fs::symlink_metadata(out).is_ok() {
                bail!(
                    "{}: already exists; hrr-pack never overwrites",
                    out.display()
                );
            }
            let parent = out
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            let out_name = out
                .file_name()
                .ok_or_else(|| anyhow!("{}: has no name", out.display()))?
                .to_string_lossy()
                .into_owned();
            (
                parent.join(layout::scrub_staging_name(&out_name)),
                out.clone(),
            )
        }
        None => (
            src.parent()
                .unwrap_or(Path::new("/"))
                .join(layout::scrub_staging_name(&name)),
            src.clone(),
        ),
    };
    // A scrub to `-o` stages a full copy of the unscrubbed archive beside OUT: say where, beside
    // the source, so the next scrub or pack of the source removes it after a `kill -9`.
    let note = opts.out.as_ref().map(|_| out_note_path(&src));
    if let Some(note) = &note {
        let stage_abs = std::path::absolute(&stage).unwrap_or_else(|_| stage.clone());
        fsutil::write_atomic(note, stage_abs.as_os_str().as_encoded_bytes(), true)
            .with_context(|| format!("writing {}", note.display()))?;
    }
    let result = build_and_swap(&key.id, &src, &stage, &dest, opts, is_root, &pid_dirs, scan);
    if let Some(note) = &note {
        let _ = std::fs::remove_file(note);
    }
    match result {
        Ok(mut r) => {
            r.recovered = recovered;
            Ok(r)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&stage);
            let _ = std::fs::remove_file(ready_path(&stage));
            Err(e)
        }
    }
}

/// The staging folder of an in-place scrub is `.<name>` + this, beside the archive.
pub const STAGE_SUFFIX: &str = ".hrr-scrub";

fn ready_path(stage: &Path) -> PathBuf {
    let mut s = stage.as_os_str().to_owned();
    s.push("-ready");
    PathBuf::from(s)
}

fn parked_path(stage: &Path) -> PathBuf {
    let mut s = stage.as_os_str().to_owned();
    s.push("-old");
    PathBuf::from(s)
}

fn sync_dir(dir: &Path) {
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

/// Finish what an interrupted scrub of the archive at `path` left (call it holding the
/// archive's lock): roll back or complete it, so the archive is at its name and no staging
/// folder or parked original is left beside it. For an archive root, also the scrubs of its
/// process captures. Returns what was done, one line each (nothing when nothing was left).
pub fn recover(path: &Path) -> Result<Vec<String>> {
    let dest = lock::locked_folder(path);
    let mut done = Vec::new();
    recover_one(&dest, &mut done)?;
    recover_out(&dest, &mut done)?;
    if path != dest {
        // a process capture inside a root: its own staging folder sits inside the root
        recover_one(
            &std::path::absolute(path).unwrap_or(path.to_path_buf()),
            &mut done,
        )?;
    }
    if let Ok(entries) = std::fs::read_dir(&dest) {
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for n in names {
            let Some(inner) = n.strip_prefix('.') else {
                continue;
            };
            let pid = inner
                .strip_suffix(STAGE_SUFFIX)
                .or_else(|| inner.strip_suffix(&format!("{STAGE_SUFFIX}-old")))
                .or_else(|| inner.strip_suffix(&format!("{STAGE_SUFFIX}-ready")));
            if let Some(pid) = pid {
                if manifest::parse_pid_dir_name(pid).is_some() {
                    recover_one(&dest.join(pid), &mut done)?;
                }
            }
        }
    }
    Ok(done)
}

/// Where a scrub of `src` to `-o OUT` notes its staging folder (beside `src`, like its lock).
fn out_note_path(src: &Path) -> PathBuf {
    let name = src.file_name().unwrap_or_default().to_string_lossy();
    src.with_file_name(format!(".{name}{STAGE_SUFFIX}-out"))
}

/// The staging folder of an interrupted scrub of `src` to `-o OUT` (a full unscrubbed copy),
/// found through its note beside `src`: removed. OUT itself appears only complete (renamed
/// into place last), so it is left as it is.
fn recover_out(src: &Path, done: &mut Vec<String>) -> Result<()> {
    let note = out_note_path(src);
    let Ok(bytes) = fsutil::read_small(&note, 1 << 16) else {
        return Ok(());
    };
    let stage = PathBuf::from(String::from_utf8_lossy(&bytes).into_owned());
    let is_stage = stage.file_name().is_some_and(|n| {
        let n = n.to_string_lossy();
        n.starts_with('.') && n.ends_with(STAGE_SUFFIX)
    });
    if is_stage && std::fs::symlink_metadata(&stage).is_ok_and(|m| m.is_dir()) {
        std::fs::remove_dir_all(&stage).with_context(|| format!("removing {}", stage.display()))?;
        done.push(format!(
            "removed {} left by an interrupted scrub -o",
            stage.display()
        ));
    }
    let ready = ready_path(&stage);
    if is_stage && std::fs::symlink_metadata(&ready).is_ok() {
        std::fs::remove_file(&ready).with_context(|| format!("removing {}", ready.display()))?;
    }
    std::fs::remove_file(&note).with_context(|| format!("removing {}", note.display()))?;
    Ok(())
}

fn recover_one(dest: &Path, done: &mut Vec<String>) -> Result<()> {
    let (Some(parent), Some(name)) = (dest.parent(), dest.file_name()) else {
        return Ok(());
    };
    let stage = parent.join(format!(".{}{STAGE_SUFFIX}", name.to_string_lossy()));
    let parked = parked_path(&stage);
    let ready = ready_path(&stage);
    let exists = |p: &Path| std::fs::symlink_metadata(p).is_ok();
    if !exists(dest) && exists(&parked) {
        if exists(&stage) && exists(&ready) {
            std::fs::rename(&stage, dest)
                .with_context(|| format!("moving {} into place", stage.display()))?;
            done.push(format!(
                "completed an interrupted scrub of {} (scrubbed tree moved into place)",
                dest.display()
            ));
        } else {
            std::fs::rename(&parked, dest)
                .with_context(|| format!("moving {} back", parked.display()))?;
            done.push(format!(
                "rolled back an interrupted scrub of {} (original put back)",
                dest.display()
            ));
        }
    }
    for leftover in [&stage, &parked] {
        if exists(leftover) {
            std::fs::remove_dir_all(leftover)
                .with_context(|| format!("removing {}", leftover.display()))?;
            done.push(format!(
                "removed {} left by an interrupted scrub",
                leftover.display()
            ));
        }
    }
    if exists(&ready) {
        std::fs::remove_file(&ready).with_context(|| format!("removing {}", ready.display()))?;
    }
    if !done.is_empty() {
        sync_dir(parent);
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn build_and_swap(
    key_id: &str,
    src: &Path,
    stage: &Path,
    dest: &Path,
    opts: &ScrubOptions,
    is_root: bool,
    pid_dirs: &[String],
    scan: ScanReport,
) -> Result<ScrubReport> {
    replicate(src, stage, opts.out.is_none())?;
    let mut report = ScrubReport {
        archive: dest.to_path_buf(),
        scan: ScanReport::default(),
        objects: Vec::new(),
        events: Vec::new(),
        changed: true,
        not_redacted: Vec::new(),
        recovered: Vec::new(),
    };
    for d in pid_dirs {
        let prefix = if d.is_empty() {
            String::new()
        } else {
            format!("{d}/")
        };
        let files: Vec<&FileReport> = scan
            .files
            .iter()
            .filter(|f| f.path.starts_with(&prefix))
            .collect();
        scrub_process(
            &src.join(d),
            &stage.join(d),
            &prefix,
            &files,
            key_id,
            &mut report,
        )?;
    }
    // Files outside every process capture (root manifest, extra files): redacted in place.
    let mut root_redacted: Vec<Value> = Vec::new();
    if is_root {
        for f in &scan.files {
            let inside = pid_dirs
                .iter()
                .any(|d| !d.is_empty() && f.path.starts_with(&format!("{d}/")));
            if inside {
                continue;
            }
            redact_in_place(&src.join(&f.path), &stage.join(&f.path), &f.findings)?;
            for x in &f.findings {
                root_redacted.push(serde_json::json!({
                    "file": f.path, "offset": x.redact_offset,
                    "length": x.replacement.len(), "rule": x.rule,
                    "encoding": x.encoding.as_str(), "fingerprint": x.fingerprint,
                }));
            }
            report.objects.push(Rewritten {
                path: f.path.clone(),
                new_path: f.path.clone(),
                ranges: f.findings.len(),
            });
        }
    }
    if is_root {
        manifest::rebuild_root_index(stage)?;
        let mut m = manifest::read_root_manifest(stage)?;
        m.extra.insert("scrubbed".into(), Value::Bool(true));
        if !root_redacted.is_empty() {
            m.extra
                .insert("redacted_files".into(), Value::Array(root_redacted));
        }
        manifest::write_json(&stage.join(MANIFEST), &m)?;
    }
    fsutil::sync_filesystem(stage)?;
    let parent = dest.parent().unwrap_or(Path::new("/"));
    if opts.out.is_some() {
        fsutil::rename_noreplace(stage, dest)?;
        sync_dir(parent);
    } else {
        let ready = ready_path(stage);
        fsutil::create_new(&ready)?;
        sync_dir(parent);
        if fsutil::exchange(stage, dest)? {
            sync_dir(parent);
            std::fs::remove_dir_all(stage)
                .with_context(|| format!("removing the old tree {}", stage.display()))?;
        } else {
            // No RENAME_EXCHANGE on this file system: two renames, the original parked in
            // between (recover() puts it back, or moves the ready stage in, after a crash).
            let parked = parked_path(stage);
            std::fs::rename(dest, &parked).with_context(|| format!("moving {}", dest.display()))?;
            std::fs::rename(stage, dest).with_context(|| format!("moving {}", stage.display()))?;
            sync_dir(parent);
            std::fs::remove_dir_all(&parked)
                .with_context(|| format!("removing {}", parked.display()))?;
        }
        std::fs::remove_file(&ready).with_context(|| format!("removing {}", ready.display()))?;
        sync_dir(parent);
    }
    report.scan = scan;
    Ok(report)
}

/// Copy the folder tree `src` to `dst` (0700 folders): files hard-linked (`link`) or copied.
fn replicate(src: &Path, dst: &Path, link: bool) -> Result<()> {
    fsutil::create_private_dir(dst)?;
    for e in walkdir::WalkDir::new(src)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
    {
        let e = e.with_context(|| format!("listing {}", src.display()))?;
        let rel = e.path().strip_prefix(src).expect("below the root");
        let to = dst.join(rel);
        let ft = e.file_type();
        if ft.is_dir() {
            fsutil::create_private_dir(&to)?;
        } else if ft.is_file() {
            let name = e.file_name().to_string_lossy();
            if fsutil::is_temp_name(&name) {
                continue;
            }
            if !(link && std::fs::hard_link(e.path(), &to).is_ok()) {
                let mut from = fsutil::open_read(e.path())?;
                let mut out = fsutil::create_new(&to)?;
                std::io::copy(&mut from, &mut out)
                    .with_context(|| format!("copying {}", e.path().display()))?;
            }
        } else {
            bail!(
                "{}: not a regular file or folder (links are never followed)",
                e.path().display()
            );
        }
    }
    Ok(())
}

/// Write `src` with the replacements of `findings` applied to `dst_dir/<temp>`, hashing on the
/// way; returns the temp path and the new id.
fn write_redacted(src: &Path, dst_dir: &Path, findings: &[Finding]) -> Result<(PathBuf, ObjectId)> {
    fsutil::create_private_dir(dst_dir)?;
    let tmp = fsutil::temp_path_for(&dst_dir.join("scrubbed"));
    let from = fsutil::open_read(src)?;
    let mut out = fsutil::create_new(&tmp)?;
    let mut hasher = blake3::Hasher::new();
    let mut pos = 0u64;
    let mut sorted: Vec<&Finding> = findings.iter().collect();
    sorted.sort_by_key(|f| f.redact_offset);
    read_chunks(from, src, |chunk| {
        let end = pos + chunk.len() as u64;
        let touching: Vec<&&Finding> = sorted
            .iter()
            .filter(|f| {
                let r = f.redact_range();
                r.start < end && r.end > pos
            })
            .collect();
        if !touching.is_empty() {
            // A replacement differs from the original only where it redacts; writing only
            // those bytes makes overlapping findings add up instead of undoing each other.
            let original = chunk.to_vec();
            for f in touching {
                let r = f.redact_range();
                for i in r.start.max(pos)..r.end.min(end) {
                    let b = f.replacement[(i - r.start) as usize];
                    let k = (i - pos) as usize;
                    if b != original[k] {
                        chunk[k] = b;
                    }
                }
            }
        }
        hasher.update(chunk);
        out.write_all(chunk)
            .with_context(|| format!("writing {}", tmp.display()))?;
        pos = end;
        Ok(())
    })?;
    out.sync_all()
        .with_context(|| format!("syncing {}", tmp.display()))?;
    let hash = hasher.finalize();
    let id = ObjectId::from_slice(&hash.as_bytes()[..16]).expect("a hash is never all zero");
    Ok((tmp, id))
}

/// Redact `findings` in a file that is not an object (its name stays): the new content is
/// written beside `dst` and renamed over it, so a hard link to the original is replaced, never
/// written through.
fn redact_in_place(src: &Path, dst: &Path, findings: &[Finding]) -> Result<()> {
    let dir = dst.parent().expect("files live in a folder");
    let (tmp, _) = write_redacted(src, dir, findings)?;
    std::fs::rename(&tmp, dst).with_context(|| format!("renaming to {}", dst.display()))?;
    Ok(())
}

fn scrub_process(
    src: &Path,
    stage: &Path,
    prefix: &str,
    files: &[&FileReport],
    key_id: &str,
    report: &mut ScrubReport,
) -> Result<()> {
    let mut renames: HashMap<ObjectId, ObjectId> = HashMap::new();
    let mut redactions = redact::read_redactions(src)?.unwrap_or_else(|| RedactionsFile {
        version: REDACTIONS_VERSION,
        fingerprint: FINGERPRINT_SCHEME.into(),
        ..Default::default()
    });
    redactions.key_id = key_id.to_string();
    let mut events_findings: Vec<&Finding> = Vec::new();
    let mut in_place: Vec<(&str, &FileReport)> = Vec::new();
    for f in files {
        let rel = &f.path[prefix.len()..];
        let Some((old_id, kind)) = f.object else {
            if rel == EVENTS_FILE {
                events_findings.extend(f.findings.iter());
            } else {
                in_place.push((rel, f));
            }
            continue;
        };
        let src_file = src.join(rel);
        let dir = stage.join(rel);
        let dir = dir.parent().expect("objects live in a folder");
        let (tmp, new_id) = write_redacted(&src_file, dir, &f.findings)?;
        let new_path = match kind {
            ObjectKind::Blob => blob_path(stage, &new_id),
            ObjectKind::Code => {
                let ext = rel.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
                let kind = CodeKind::from_extension(ext)
                    .ok_or_else(|| anyhow!("{rel}: unknown code object kind"))?;
                code_object_path(stage, &new_id, kind)
            }
        };
        if let Some(parent) = new_path.parent() {
            fsutil::create_private_dir(parent)?;
        }
        if std::fs::symlink_metadata(&new_path).is_ok() {
            std::fs::remove_file(&tmp).ok();
        } else {
            std::fs::rename(&tmp, &new_path)
                .with_context(|| format!("renaming to {}", new_path.display()))?;
        }
        if new_id != old_id {
            std::fs::remove_file(stage.join(rel))
                .with_context(|| format!("removing {}", stage.join(rel).display()))?;
            renames.insert(old_id, new_id);
        }
        // Carry the ranges recorded by an earlier scrub over to the new id.
        let mut entry = redactions
            .objects
            .remove(&old_id.to_hex())
            .unwrap_or_else(|| RedactedObject {
                kind,
                size: f.size,
                ranges: Vec::new(),
            });
        for x in &f.findings {
            entry.ranges.push(Redaction {
                offset: x.redact_offset,
                length: x.replacement.len() as u64,
                rule: x.rule.to_string(),
                encoding: x.encoding.as_str().to_string(),
                fingerprint: x.fingerprint.clone(),
            });
        }
        entry.ranges.sort_by_key(|r| (r.offset, r.length));
        entry.kind = kind;
        entry.size = f.size;
        let new_rel = new_path
            .strip_prefix(stage)
            .expect("below the stage")
            .to_string_lossy()
            .into_owned();
        report.objects.push(Rewritten {
            path: format!("{prefix}{rel}"),
            new_path: format!("{prefix}{new_rel}"),
            ranges: f.findings.len(),
        });
        match redactions.objects.get_mut(&new_id.to_hex()) {
            // Two objects that became identical: keep the union of their ranges.
            Some(existing) => {
                existing.ranges.extend(entry.ranges);
                existing.ranges.sort_by_key(|r| (r.offset, r.length));
                existing.ranges.dedup();
            }
            None => {
                redactions.objects.insert(new_id.to_hex(), entry);
            }
        }
    }
    if !renames.is_empty() || !events_findings.is_empty() {
        let repl: Vec<(u64, Vec<u8>)> = events_findings
            .iter()
            .map(|f| (f.redact_offset, f.replacement.clone()))
            .collect();
        let events_dst = stage.join(EVENTS_FILE);
        let tmp = fsutil::temp_path_for(&events_dst);
        let rw = redact::rewrite_events(&src.join(EVENTS_FILE), &tmp, &renames, &repl);
        let rw = match rw {
            Ok(rw) => rw,
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e.into());
            }
        };
        std::fs::rename(&tmp, &events_dst)
            .with_context(|| format!("renaming to {}", events_dst.display()))?;
        let applied: BTreeMap<u64, u64> = rw.redacted.iter().map(|r| (r.start, r.end)).collect();
        for f in &events_findings {
            let r = f.redact_range();
            let covered = applied
                .range(..r.end)
                .any(|(&s, &e)| s < r.end && e > r.start);
            if covered {
                redactions.events.push(Redaction {
                    offset: r.start,
                    length: r.end - r.start,
                    rule: f.rule.to_string(),
                    encoding: f.encoding.as_str().to_string(),
                    fingerprint: f.fingerprint.clone(),
                });
            } else {
                report.not_redacted.push(format!(
                    "{prefix}{EVENTS_FILE} offset {}: {} outside any event payload (file header or schema record)",
                    f.offset, f.rule
                ));
            }
        }
        report.events.push((
            format!("{prefix}{EVENTS_FILE}"),
            rw.references,
            rw.redacted.len(),
        ));
    }
    // Manifests, regions/, anything else: same length, same name.
    let mut file_ranges: BTreeMap<String, Vec<Redaction>> = match redactions.extra.get("files") {
        Some(v) => serde_json::from_value(v.clone()).unwrap_or_default(),
        None => BTreeMap::new(),
    };
    for (rel, f) in &in_place {
        redact_in_place(&src.join(rel), &stage.join(rel), &f.findings)?;
        let e = file_ranges.entry(rel.to_string()).or_default();
        for x in &f.findings {
            e.push(Redaction {
                offset: x.redact_offset,
                length: x.replacement.len() as u64,
                rule: x.rule.to_string(),
                encoding: x.encoding.as_str().to_string(),
                fingerprint: x.fingerprint.clone(),
            });
        }
        e.sort_by_key(|r| (r.offset, r.length));
        e.dedup();
        report.objects.push(Rewritten {
            path: format!("{prefix}{rel}"),
            new_path: format!("{prefix}{rel}"),
            ranges: f.findings.len(),
        });
    }
    if !file_ranges.is_empty() {
        redactions.extra.insert(
            "files".into(),
            serde_json::to_value(&file_ranges).expect("serialises"),
        );
    }
    let n_ranges: usize = file_ranges.values().map(Vec::len).sum::<usize>()
        + redactions
            .objects
            .values()
            .map(|o| o.ranges.len())
            .sum::<usize>()
        + redactions.events.len();
    if n_ranges > 0 {
        redact::write_redactions(stage, &redactions)?;
    }
    // from the stage: its manifest may just have been redacted
    let mut m = manifest::read_process_manifest(stage)
        .with_context(|| format!("{}: manifest after redaction", stage.display()))?;
    m.extra.insert("scrubbed".into(), Value::Bool(true));
    m.extra
        .insert("redactions".into(), Value::from(n_ranges as u64));
    let counts = count_objects(stage)?;
    m.status.blob_count = counts.blobs + counts.code_objects;
    manifest::write_process_manifest(stage, &m)?;
    Ok(())
}
