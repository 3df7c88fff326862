//! Repair after a crash: keep every complete record, drop the torn tail (saved beside the file,
//! never silently lost), write a clean trailer and manifest, rebuild the root index. A capture
//! the writer marked incomplete stays incomplete. See FORMAT.md §6.

use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::blobs::count_objects;
use crate::error::{Error, IoContext, Result};
use crate::framing::{encode_trailer, now_ns};
use crate::fsutil;
use crate::layout;
use crate::layout::EVENTS_FILE;
use crate::manifest::{self, ProcessManifest};
use crate::reader::EventReader;

/// What a repair did to one process capture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairOutcome {
    /// Trailer, counts and manifest already agreed; nothing was written.
    AlreadyComplete {
        /// Events in the capture.
        events: u64,
    },
    /// A clean trailer and manifest were written.
    Repaired {
        /// Events kept.
        events: u64,
        /// Bytes cut from the tail (saved in `saved_tail`).
        dropped_bytes: u64,
        /// Where the cut bytes were saved.
        saved_tail: Option<PathBuf>,
        /// Why the capture is still not complete (writer marks), empty if it now is.
        still_incomplete: Vec<String>,
    },
}

/// Refuse to touch a capture whose writer is still running.
fn check_not_active(dir: &Path) -> Result<()> {
    if let Some(pid) = layout::running_writer(dir)? {
        return Err(Error::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other(format!(
                "capture is still running (pid {pid} holds it); wait for it to exit"
            )),
        });
    }
    Ok(())
}

/// Repair one `pid-<pid>/` capture.
pub fn repair_process(dir: &Path) -> Result<RepairOutcome> {
    layout::check_no_links(dir)?;
    check_not_active(dir)?;
    let events_path = dir.join(EVENTS_FILE);
    let rec = EventReader::scan_headers(&events_path)?;
    let manifest_now = manifest::read_process_manifest(dir).ok();
    let objects = count_objects(dir)?;
    let blob_count = objects.blobs + objects.code_objects;
    let tail_clean = rec.complete() && rec.bytes_after_trailer == 0;
    if tail_clean {
        if let Some(m) = &manifest_now {
            if m.complete && m.event_count == rec.records {
                return Ok(RepairOutcome::AlreadyComplete {
                    events: rec.records,
                });
            }
        }
    }
    // Save whatever follows the last complete record (torn record, stale trailer, garbage),
    // then cut it and append a clean trailer. Each step leaves a readable file behind.
    let file = fsutil::open_write(&events_path, false)?;
    let len = file.metadata().at(&events_path)?.len();
    let cut_from = rec.good_len;
    let mut saved_tail = None;
    let dropped = len.saturating_sub(cut_from);
    let has_valid_trailer_only = rec.clean_trailer() && rec.bytes_after_trailer == 0;
    if dropped > 0 && !has_valid_trailer_only {
        let tail_path = dir.join(layout::dropped_tail_name(cut_from));
        let mut src = fsutil::open_read(&events_path)?;
        src.seek(SeekFrom::Start(cut_from)).at(&events_path)?;
        let tmp = fsutil::temp_path_for(&tail_path);
        let mut out = fsutil::create_new(&tmp)?;
        std::io::copy(&mut src, &mut out).at(&tmp)?;
        out.sync_all().at(&tmp)?;
        std::fs::rename(&tmp, &tail_path).at(&tail_path)?;
        saved_tail = Some(tail_path);
    }
    if !has_valid_trailer_only {
        file.set_len(cut_from).at(&events_path)?;
        let mut f = &file;
        f.seek(SeekFrom::End(0)).at(&events_path)?;
        let next_seq = rec.last_seq.map_or(0, |s| s + 1);
        f.write_all(&encode_trailer(next_seq, now_ns(), rec.records))
            .at(&events_path)?;
        file.sync_all().at(&events_path)?;
    }
    let pid = layout::pid_of(dir).unwrap_or(0);
    let mut m = manifest_now.unwrap_or_else(|| ProcessManifest::new(pid, 0));
    m.event_count = rec.records;
    m.blob_count = blob_count;
    m.complete = rec.incomplete_marks.is_empty();
    let still: Vec<String> = rec
        .incomplete_marks
        .iter()
        .map(|r| format!("writer marked it incomplete: {r}"))
        .collect();
    m.incomplete_reason = (!still.is_empty()).then(|| still.join("; "));
    manifest::write_process_manifest(dir, &m)?;
    layout::remove_active_marker(dir);
    Ok(RepairOutcome::Repaired {
        events: rec.records,
        dropped_bytes: if has_valid_trailer_only { 0 } else { dropped },
        saved_tail,
        still_incomplete: still,
    })
}

/// Outcome of repairing every process under a root.
#[derive(Debug)]
pub struct RootRepair {
    /// Per process: its folder and outcome (or the error).
    pub processes: Vec<(PathBuf, Result<RepairOutcome>)>,
    /// Whether the root index could be rebuilt (error text if not).
    pub index_error: Option<String>,
}

/// Repair every `pid-*` capture under `root` and rebuild the root index.
pub fn repair_root(root: &Path) -> Result<RootRepair> {
    let dirs = manifest::list_pid_dirs(root)?;
    let processes = dirs
        .into_iter()
        .filter(|(_, d)| std::fs::symlink_metadata(d.join(EVENTS_FILE)).is_ok())
        .map(|(_, d)| {
            let r = repair_process(&d);
            (d, r)
        })
        .collect();
    let index_error = manifest::rebuild_root_index(root)
        .err()
        .map(|e| e.to_string());
    Ok(RootRepair {
        processes,
        index_error,
    })
}
