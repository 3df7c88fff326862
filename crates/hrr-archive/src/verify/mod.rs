//! Verify an archive folder or a pack without changing it: every blob and code object matches
//! the content id in its name, every object an event refers to exists, events.bin framing agrees
//! with the manifests, manifests agree with the files, and (in a pack) every file matches the pack
//! index. Findings are collected, not stopped at: each names the file. See FORMAT.md §9.
//! [`verify_dir`] ([`dir`]) checks a folder, [`verify_pack`] ([`pack`]) a pack without
//! unpacking it; both report through the same checks, defined here.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::framing::FORMAT_VERSION;
use crate::layout::{join_rel as join, ACTIVE_MARKER, EVENTS_FILE, MANIFEST};
use crate::manifest::{self, ProcessManifest, RootManifest};
use crate::reader::Dropped;
use crate::stream::{Framer, Unreadable};

pub mod dir;
#[cfg(feature = "pack")]
pub mod pack;

pub use dir::verify_dir;
#[cfg(feature = "pack")]
pub use pack::verify_pack;

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
    /// Files checked: every file of the archive (manifests, events.bin, blobs, code objects,
    /// ...; writer temp files and links left out), the same count for a pack (each hashed
    /// against its index) and for a folder (objects hashed, events.bin and manifests read), and
    /// the count `hrr-pack pack` and `list --files` give.
    pub files_checked: u64,
    /// Their bytes.
    pub bytes_checked: u64,
    /// Of those, blobs and code objects hashed against the content id in their name.
    pub objects_checked: u64,
    /// Problems: the archive is damaged or inconsistent.
    pub bad: Vec<Finding>,
    /// Things worth knowing that are not damage (an incomplete capture, a lagging root index).
    pub warnings: Vec<Finding>,
}

impl VerifyReport {
    pub(crate) fn bad(&mut self, path: impl Into<String>, problem: impl Into<String>) {
        self.bad.push(Finding {
            path: path.into(),
            problem: problem.into(),
        });
    }
    pub(crate) fn warn(&mut self, path: impl Into<String>, problem: impl Into<String>) {
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
        if pid != m.status.pid {
            report.bad(
                &mpath,
                format!("names pid {} but its folder is {folder}", m.status.pid),
            );
        }
    }
    if framing.unreadable.is_some() {
        return;
    }
    if m.status.complete {
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
        if m.status.event_count != framing.records {
            report.bad(
                &mpath,
                format!(
                    "event_count {} but events.bin holds {} events",
                    m.status.event_count, framing.records
                ),
            );
        }
        if m.status.blob_count != objects_on_disk {
            report.bad(
                &mpath,
                format!(
                    "blob_count {} but {objects_on_disk} blobs and code objects are present",
                    m.status.blob_count
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
        if m.status.event_count > framing.records {
            // A checkpoint counts only what was written out before it: never more than the
            // records on disk.
            report.bad(
                &mpath,
                format!(
                    "event_count {} but events.bin holds only {} events",
                    m.status.event_count, framing.records
                ),
            );
        }
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
        .all(|(_, m)| m.as_ref().is_ok_and(|m| m.status.complete));
    let mut problems = Vec::new();
    let listed: BTreeMap<u32, _> = root.processes.iter().map(|p| (p.status.pid, p)).collect();
    for (pid, m) in processes {
        let Ok(m) = m else { continue };
        match listed.get(pid) {
            None => problems.push(format!("pid {pid} is not listed")),
            Some(e) => {
                if e.status.complete != m.status.complete
                    || e.status.event_count != m.status.event_count
                    || e.status.blob_count != m.status.blob_count
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
