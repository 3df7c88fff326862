//! Repair after a crash: keep every complete record, drop the torn tail (saved beside the file,
//! never silently lost), write a clean trailer and manifest, rebuild the root index. A capture
//! the writer marked incomplete stays incomplete. See FORMAT.md §6.
//!
//! Capture writes host blobs and code objects on background threads and makes them durable at
//! synchronisations, so a writer killed between two of them can leave events that name an
//! object which never reached the disk. Replay could not run past such an event: the events from
//! the first of them on are cut too (saved with the tail), and a writer mark put in their place
//! says which event and object (the capture stays incomplete through later repairs).

use std::collections::HashSet;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::blobs::{count_objects, object_present, ObjectId};
use crate::error::{Error, IoContext, Result};
use crate::framing::{encode_mark, encode_trailer, now_ns};
use crate::fsutil;
use crate::journal;
use crate::layout;
use crate::layout::EVENTS_FILE;
use crate::manifest::{self, ProcessManifest};
use crate::reader::EventReader;
use crate::schema::{object_fields, ApiFamily, FieldType};

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
        /// What became of a missing or damaged manifest (what was kept, rebuilt from events.bin,
        /// lost), one line each; empty when the manifest parsed.
        manifest_notes: Vec<String>,
        /// What the blob journal gave back (objects a synchronisation journaled whose files
        /// the killed writer never wrote; [`crate::journal`]).
        journal: journal::Restored,
    },
}

/// Refuse to touch a capture whose writer is still running (or whose `active` marker is not a
/// writer's: [`layout::writer_state`]).
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

/// The manifest to rewrite: the one on disk when it parses; else what
/// [`manifest::salvage_process_manifest`] keeps of it, the rest rebuilt from events.bin (its
/// schema's API family) and the folder name (the pid), with notes saying which is which.
fn manifest_to_rewrite(
    dir: &Path,
    api_from_schema: Option<ApiFamily>,
) -> Result<(Option<ProcessManifest>, ProcessManifest, Vec<String>)> {
    let path = dir.join(layout::MANIFEST);
    let rebuilt_always = "event_count, blob_count, complete, incomplete_reason";
    let folder_pid = layout::pid_of_dir_name(dir).unwrap_or(0);
    let (mut m, mut notes, rebuilt) = match manifest::read_process_manifest(dir) {
        Ok(m) => return Ok((Some(m.clone()), m, Vec::new())),
        Err(Error::Missing(_)) => (
            ProcessManifest::new(folder_pid, 0),
            vec![format!(
                "manifest.json was missing: written anew (pid {folder_pid} from the folder name)"
            )],
            vec!["pid".to_string()],
        ),
        Err(Error::BadManifest { .. }) => {
            let bytes = fsutil::read_small(&path, manifest::MAX_MANIFEST_BYTES)?;
            let s = manifest::salvage_process_manifest(&bytes);
            let mut m = s.manifest;
            let mut rebuilt = Vec::new();
            if !s.has_pid {
                m.status.pid = folder_pid;
                rebuilt.push("pid".to_string());
            }
            let mut notes = vec![format!(
                "manifest.json was damaged ({}): kept {} key(s){}",
                s.damage,
                s.kept.len(),
                if s.kept.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", s.kept.join(", "))
                }
            )];
            if !s.dropped.is_empty() {
                notes.push(format!(
                    "manifest.json: dropped what did not parse: {}",
                    s.dropped.join("; ")
                ));
            }
            (m, notes, rebuilt)
        }
        Err(e) => return Err(e),
    };
    let mut rebuilt = rebuilt;
    if m.api.is_none() {
        if let Some(api) = api_from_schema {
            m.api = Some(api);
            rebuilt.push("api".into());
        }
    }
    rebuilt.push(rebuilt_always.into());
    notes.push(format!(
        "manifest.json: rebuilt {} from events.bin and the folder",
        rebuilt.join(", ")
    ));
    let lost: Vec<&str> = [
        "parent_pid",
        "api",
        "unreplayable_apis",
        "passthrough_calls",
        "metadata",
    ]
    .into_iter()
    .filter(|k| match *k {
        "parent_pid" => m.status.parent_pid == 0,
        "api" => m.api.is_none(),
        "unreplayable_apis" => m.unreplayable_apis.is_empty(),
        "passthrough_calls" => m.passthrough_calls.is_empty(),
        _ => m.metadata.is_none(),
    })
    .collect();
    if !lost.is_empty() {
        notes.push(format!(
            "manifest.json: not recoverable, now absent: {}",
            lost.join(", ")
        ));
    }
    Ok((None, m, notes))
}

/// Copy `src[from..len]` into the new file `dst` (at offset 0), leaving a hole wherever `src`
/// has one or holds a 64 KiB block of zeros: a sparse tail stays sparse (FORMAT.md §6).
fn copy_sparse(
    src: &File,
    src_path: &Path,
    from: u64,
    len: u64,
    dst: &File,
    dst_path: &Path,
) -> Result<()> {
    use rustix::fs::{seek, SeekFrom};
    use std::os::unix::fs::FileExt;
    const BLOCK: usize = 64 << 10;
    let mut buf = vec![0u8; 16 * BLOCK];
    let mut off = from;
    while off < len {
        let data = match seek(src, SeekFrom::Data(off)) {
            Ok(d) => d,
            Err(e) if e == rustix::io::Errno::NXIO => len,
            Err(_) => off, // no SEEK_DATA here: read everything
        };
        if data >= len {
            break;
        }
        let hole = seek(src, SeekFrom::Hole(data)).map_or(len, |h| h.min(len));
        let mut pos = data;
        while pos < hole {
            let n = buf.len().min((hole - pos) as usize);
            src.read_exact_at(&mut buf[..n], pos).at(src_path)?;
            for (i, block) in buf[..n].chunks(BLOCK).enumerate() {
                if block.iter().any(|&b| b != 0) {
                    let at = pos - from + (i * BLOCK) as u64;
                    dst.write_all_at(block, at).at(dst_path)?;
                }
            }
            pos += n as u64;
        }
        off = hole;
    }
    dst.set_len(len - from).at(dst_path)
}

/// Save `events.bin[from..len]` to `tail_path` (temp file, fsync, rename). On any failure
/// (ENOSPC included) the temp file is removed: nothing is left behind.
fn save_tail(events_path: &Path, from: u64, len: u64, tail_path: &Path) -> Result<()> {
    let tmp = fsutil::temp_path_for(tail_path);
    let result = (|| {
        let src = fsutil::open_read(events_path)?;
        let out = fsutil::create_new(&tmp)?;
        copy_sparse(&src, events_path, from, len, &out, &tmp)?;
        out.sync_all().at(&tmp)?;
        drop(out);
        std::fs::rename(&tmp, tail_path).at(tail_path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Where a crashed capture must be cut because an event names an object that is not on disk.
#[derive(Debug)]
struct MissingObjectCut {
    /// Offset in events.bin of the first such event.
    offset: u64,
    /// Records before it (writer marks included, as [`crate::stream::Recovery::records`]).
    records: u64,
    /// Sequence number of the record before it.
    last_seq: Option<u64>,
    /// Why, for the manifest's incomplete reason.
    why: String,
}

/// The first of events.bin's complete records naming a blob or code object that `dir`
/// does not hold, if any. Each object is looked up once.
fn first_missing_object(dir: &Path, events_path: &Path) -> Result<Option<MissingObjectCut>> {
    let mut reader = EventReader::open(events_path)?;
    let schema = reader.schema().cloned();
    let Some(schema) = schema else {
        return Ok(None);
    };
    let mut present: HashSet<(ObjectId, bool)> = HashSet::new();
    let (mut records, mut last_seq) = (0u64, None);
    while let Some(rec) = reader.next_raw()? {
        let end = reader.recovery().good_len;
        let call = schema.call(rec.header.kind);
        let refs = call.map(|c| object_fields(c, &rec.payload));
        for r in refs.into_iter().flat_map(|r| r.unwrap_or_default()) {
            let Some(id) = r.id else { continue };
            let code = r.ty == FieldType::Code;
            if present.contains(&(id, code)) {
                continue;
            }
            if !object_present(dir, &id, code) {
                let what = if code { "code object" } else { "blob" };
                let name = call.map_or("?", |c| c.name.as_str());
                return Ok(Some(MissingObjectCut {
                    offset: end - u64::from(rec.header.total_len),
                    records,
                    last_seq,
                    why: format!(
                        "repair: event #{} ({name}) field `{}` names {what} {id}, which the \
                         killed writer never wrote: events from it on cut",
                        rec.header.seq, r.name
                    ),
                }));
            }
            present.insert((id, code));
        }
        records += 1;
        last_seq = Some(rec.header.seq);
    }
    Ok(None)
}

/// Repair one `pid-<pid>/` capture.
pub fn repair_process(dir: &Path) -> Result<RepairOutcome> {
    layout::check_no_links(dir)?;
    check_not_active(dir)?;
    // objects a synchronisation journaled get their files before anything counts them
    let journal = journal::restore(dir)?;
    let events_path = dir.join(EVENTS_FILE);
    let mut reader = EventReader::open_headers(&events_path)?;
    let api = reader.schema().map(|s| s.api.clone());
    while reader.next_raw()?.is_some() {}
    let rec = reader.recovery().clone();
    drop(reader);
    let (manifest_now, mut m, manifest_notes) = manifest_to_rewrite(dir, api)?;
    let objects = count_objects(dir)?;
    let blob_count = objects.blobs + objects.code_objects;
    let tail_clean = rec.complete() && rec.bytes_after_trailer == 0;
    if tail_clean {
        if let Some(m) = &manifest_now {
            if m.status.complete && m.status.event_count == rec.records {
                return Ok(RepairOutcome::AlreadyComplete {
                    events: rec.records,
                });
            }
        }
    }
    // An event naming an object the writer never wrote ends what replay can use.
    let missing = first_missing_object(dir, &events_path)?;
    // Save whatever follows the last complete record (torn record, stale trailer, garbage),
    // or the first event naming a missing object, then cut it and append a clean trailer (after
    // a mark saying why, for a missing object). Each step leaves a readable file behind.
    let file = fsutil::open_write(&events_path, false)?;
    let len = file.metadata().at(&events_path)?.len();
    let cut_from = missing.as_ref().map_or(rec.good_len, |m| m.offset);
    // records kept: a cut keeps those before it, and adds its mark
    let (records, last_seq) = missing
        .as_ref()
        .map_or((rec.records, rec.last_seq), |m| (m.records + 1, m.last_seq));
    let mut saved_tail = None;
    let dropped = len.saturating_sub(cut_from);
    let has_valid_trailer_only =
        missing.is_none() && rec.clean_trailer() && rec.bytes_after_trailer == 0;
    if dropped > 0 && !has_valid_trailer_only {
        let tail_path = dir.join(layout::dropped_tail_name(cut_from));
        save_tail(&events_path, cut_from, len, &tail_path)?;
        saved_tail = Some(tail_path);
    }
    if !has_valid_trailer_only {
        file.set_len(cut_from).at(&events_path)?;
        let mut f = &file;
        f.seek(SeekFrom::End(0)).at(&events_path)?;
        let mut next_seq = last_seq.map_or(0, |s| s + 1);
        if let Some(m) = &missing {
            // the cut is marked in events.bin itself, so that no later repair blesses it
            f.write_all(&encode_mark(next_seq, now_ns(), &m.why))
                .at(&events_path)?;
            next_seq += 1;
        }
        f.write_all(&encode_trailer(next_seq, now_ns(), records))
            .at(&events_path)?;
        file.sync_all().at(&events_path)?;
    }
    m.status.event_count = records;
    m.status.blob_count = blob_count;
    let mut still: Vec<String> = rec
        .incomplete_marks
        .iter()
        .map(|r| format!("writer marked it incomplete: {r}"))
        .collect();
    still.extend(missing.map(|m| m.why));
    m.status.complete = still.is_empty();
    m.incomplete_reason = (!still.is_empty()).then(|| still.join("; "));
    manifest::write_process_manifest(dir, &m)?;
    layout::remove_active_marker(dir);
    Ok(RepairOutcome::Repaired {
        events: records,
        dropped_bytes: if has_valid_trailer_only { 0 } else { dropped },
        saved_tail,
        still_incomplete: still,
        manifest_notes,
        journal,
    })
}

/// Remove the writer temp files (`.<name>.<pid>.<n>.tmp`) in the process capture `dir` (its
/// top level, `blobs/<2 hex>/` and `code_objects/`) that were left by a process that is gone:
/// the pid in the name is dead, or now belongs to a process younger than the file. Temp files
/// of a live writer are left alone. Returns what was removed.
pub fn remove_stale_temp_files(dir: &Path) -> Result<Vec<PathBuf>> {
    layout::check_no_links(dir)?;
    let mut folders = vec![dir.to_path_buf(), dir.join(layout::CODE_OBJECTS_DIR)];
    if let Ok(subs) = std::fs::read_dir(dir.join(layout::BLOBS_DIR)) {
        for sub in subs.flatten() {
            if sub.file_type().is_ok_and(|t| t.is_dir()) {
                folders.push(sub.path());
            }
        }
    }
    let mut removed = Vec::new();
    for folder in folders {
        removed.extend(fsutil::remove_stale_temp_files_in(&folder, None)?);
    }
    removed.sort();
    Ok(removed)
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
