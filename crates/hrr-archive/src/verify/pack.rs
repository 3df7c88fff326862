//! Verifying a pack without unpacking it: every file against the pack index, every object
//! against its id, events.bin framing (streamed through [`FramingCounter`]) against the
//! manifests, the root manifest against the processes.

use std::collections::BTreeMap;
use std::path::Path;

use super::{check_process, check_root, FramingCounter, FramingSummary, VerifyReport};
use crate::layout::{classify_pid_dir_name, PidName};
use crate::layout::{join_rel as join, ACTIVE_MARKER, EVENTS_FILE, MANIFEST};
use crate::manifest::{self, ProcessManifest, RootManifest};
use crate::pack::{
    read_pack, PackFile, PackIndex, PackKind, PackResult, PackVisitor, ProcessListing,
};
use crate::progress::Progress;

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
            self.report.objects_checked += 1;
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
pub fn verify_pack(path: &Path, progress: &dyn Progress) -> PackResult<(PackIndex, VerifyReport)> {
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
    if index.kind == PackKind::Root {
        for d in index.dirs.iter().filter(|d| !d.contains('/')) {
            if let PidName::NonCanonical(why) = classify_pid_dir_name(d) {
                report.bad(
                    d.as_str(),
                    format!("not a canonical process folder name ({why}): refused"),
                );
            }
        }
    }
    let mut processes = Vec::new();
    let mut actual = Vec::new();
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
        actual.push(listing_of(&index, dir, m.as_ref().ok(), active));
        let pid = manifest::parse_pid_dir_name(dir)
            .or_else(|| m.as_ref().ok().map(|m| m.status.pid))
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
    check_summary(&mut report, &index, &actual);
    Ok((index, report))
}

/// The listing the index should hold for the process capture `dir`, from the files the pack
/// holds (their sizes are the tar's, checked) and its manifest.
fn listing_of(
    index: &PackIndex,
    dir: &str,
    m: Option<&ProcessManifest>,
    active: bool,
) -> ProcessListing {
    let mut l = ProcessListing {
        dir: dir.to_string(),
        pid: m
            .map(|m| m.status.pid)
            .or_else(|| {
                manifest::parse_pid_dir_name(if dir.is_empty() { &index.root } else { dir })
            })
            .unwrap_or(0),
        complete: m.is_some_and(|m| m.status.complete),
        active,
        scrubbed: m
            .is_some_and(|m| m.extra.get("scrubbed") == Some(&serde_json::Value::Bool(true))),
        event_count: m.map_or(0, |m| m.status.event_count),
        events_bytes: 0,
        blobs: 0,
        blob_bytes: 0,
        code_objects: 0,
        code_object_bytes: 0,
        manifest_error: None,
    };
    for f in &index.files {
        let rest = if dir.is_empty() {
            Some(f.path.as_str())
        } else {
            f.path.strip_prefix(dir).and_then(|r| r.strip_prefix('/'))
        };
        let Some(rest) = rest else { continue };
        if rest == EVENTS_FILE {
            l.events_bytes = f.size;
        } else if crate::blobs::is_counted_object(rest) {
            if rest.starts_with(crate::layout::BLOBS_DIR) {
                l.blobs += 1;
                l.blob_bytes += f.size;
            } else {
                l.code_objects += 1;
                l.code_object_bytes += f.size;
            }
        }
    }
    l
}

/// The index's process summary (what `hrr-pack list` shows without reading the body) must be
/// what the pack holds: the same processes, and for each the counts and sizes of its files and
/// the facts of its manifest.
fn check_summary(report: &mut VerifyReport, index: &PackIndex, actual: &[ProcessListing]) {
    let name = crate::layout::PACK_INDEX_NAME;
    let mut claimed: BTreeMap<&str, &ProcessListing> = BTreeMap::new();
    for p in &index.processes {
        if claimed.insert(p.dir.as_str(), p).is_some() {
            report.bad(name, format!("lists process `{}` twice", p.dir));
        }
    }
    let shown = |d: &str| {
        if d.is_empty() {
            "the process".to_string()
        } else {
            d.to_string()
        }
    };
    for a in actual {
        let Some(c) = claimed.remove(a.dir.as_str()) else {
            report.bad(
                name,
                format!("does not list {}, which the pack holds", shown(&a.dir)),
            );
            continue;
        };
        let mut wrong = Vec::new();
        // Every counted field of the summary against what the pack holds.
        macro_rules! compare {
            ($($field:ident),*) => {$(
                if c.$field != a.$field {
                    wrong.push(format!(
                        "{} {} (the pack holds {})",
                        stringify!($field),
                        c.$field,
                        a.$field
                    ));
                }
            )*};
        }
        compare!(
            pid,
            complete,
            active,
            scrubbed,
            event_count,
            events_bytes,
            blobs,
            blob_bytes,
            code_objects,
            code_object_bytes
        );
        if !wrong.is_empty() {
            report.bad(
                name,
                format!(
                    "summary of {} is not what the pack holds: claims {}",
                    shown(&a.dir),
                    wrong.join(", ")
                ),
            );
        }
    }
    for d in claimed.keys() {
        report.bad(
            name,
            format!("lists {}, which the pack does not hold", shown(d)),
        );
    }
}
