//! `--repair`: rewrite crashed captures with a clean trailer and manifest, with the messages of
//! ROCm's HRR. On a root every process capture is repaired and the root index rebuilt; the exit
//! status is 1 when any of them failed.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use hrr_archive::repair::{self, RepairOutcome};
use hrr_cli::json::{RepairJson, RepairedJson};

use crate::info::check_links;

fn print_outcome(out: &mut dyn Write, outcome: &RepairOutcome) -> std::io::Result<()> {
    match outcome {
        RepairOutcome::AlreadyComplete { events } => writeln!(
            out,
            "[HRR] Archive already complete ({events} events); nothing to repair"
        ),
        RepairOutcome::Repaired {
            events,
            dropped_bytes,
            saved_tail,
            still_incomplete,
            manifest_notes,
            journal,
        } => {
            write!(
                out,
                "[HRR] Repaired archive: {events} events kept, clean trailer + manifest written"
            )?;
            if let Some(path) = saved_tail {
                write!(
                    out,
                    "; saved {dropped_bytes} dropped tail bytes to {}",
                    path.display()
                )?;
            }
            writeln!(out)?;
            if journal.records > 0 || journal.damaged > 0 || journal.torn {
                write!(
                    out,
                    "[HRR] Blob journal: {} object(s) restored from {} record(s)",
                    journal.objects, journal.records
                )?;
                if journal.damaged > 0 {
                    write!(
                        out,
                        "; {} record(s) whose bytes do not match their id skipped",
                        journal.damaged
                    )?;
                }
                if journal.torn {
                    write!(
                        out,
                        "; its last record was torn (the writer was killed writing it)"
                    )?;
                }
                writeln!(out)?;
            }
            for note in manifest_notes {
                writeln!(out, "[HRR] {note}")?;
            }
            for why in still_incomplete {
                writeln!(out, "[HRR] Still incomplete: {why}")?;
            }
            Ok(())
        }
    }
}

/// Remove the temp files a killed writer left in `dir`, saying so in one line.
fn remove_stale_temp_files(out: &mut dyn Write, dir: &Path) -> Result<()> {
    let removed = repair::remove_stale_temp_files(dir)?;
    if !removed.is_empty() {
        let names: Vec<String> = removed
            .iter()
            .map(|p| {
                p.strip_prefix(dir)
                    .unwrap_or(p)
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        writeln!(
            out,
            "[HRR] Removed {} stale temp file(s) left by a killed run in {}: {}",
            removed.len(),
            dir.display(),
            names.join(", ")
        )?;
    }
    Ok(())
}

fn entry(dir: &Path, result: Result<&RepairOutcome, String>) -> RepairedJson {
    let mut e = RepairedJson {
        path: dir.display().to_string(),
        outcome: "failed".into(),
        events: None,
        dropped_bytes: 0,
        saved_tail: None,
        still_incomplete: Vec::new(),
        journal_restored: 0,
        error: None,
    };
    match result {
        Ok(RepairOutcome::AlreadyComplete { events }) => {
            e.outcome = "already_complete".into();
            e.events = Some(*events);
        }
        Ok(RepairOutcome::Repaired {
            events,
            dropped_bytes,
            saved_tail,
            still_incomplete,
            journal,
            ..
        }) => {
            e.outcome = "repaired".into();
            e.journal_restored = journal.objects;
            e.events = Some(*events);
            e.dropped_bytes = *dropped_bytes;
            e.saved_tail = saved_tail.as_ref().map(|p| p.display().to_string());
            e.still_incomplete = still_incomplete.clone();
        }
        Err(why) => e.error = Some(why),
    }
    e
}

fn summary(
    path: &Path,
    kind: &str,
    processes: Vec<RepairedJson>,
    index: Option<String>,
) -> RepairJson {
    let count = |o: &str| processes.iter().filter(|p| p.outcome == o).count() as u64;
    RepairJson {
        schema: "hrr.repair/1".into(),
        ok: count("failed") == 0 && index.is_none(),
        path: path.display().to_string(),
        kind: kind.into(),
        repaired: count("repaired"),
        already_complete: count("already_complete"),
        failed: count("failed"),
        processes,
        root_index_error: index,
    }
}

fn write_json(out: &mut dyn Write, v: &RepairJson) -> Result<()> {
    serde_json::to_writer(&mut *out, v)?;
    writeln!(out)?;
    Ok(())
}

/// The archive's exclusive lock (the one `hrr-pack scrub` and `pack` take), so a repair never
/// runs beside them. Where the lock file cannot be written (a read-only mount), the repair goes
/// on and fails with its own clear message when it writes.
fn exclusive(archive: &Path) -> Result<Option<hrr_archive::lock::ArchiveLock>> {
    match hrr_archive::lock::exclusive(archive, "repair") {
        Ok(l) => Ok(Some(l)),
        Err(e) if e.is_unwritable() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Repair one `pid-<pid>/` capture. Exit status 0, or an error.
pub fn repair_process(out: &mut dyn Write, dir: &Path, json: bool) -> Result<u8> {
    check_links(dir)?;
    let _lock = exclusive(dir)?;
    remove_stale_temp_files(out, dir)?;
    let outcome = repair::repair_process(dir)?;
    if json {
        let v = summary(dir, "process", vec![entry(dir, Ok(&outcome))], None);
        write_json(out, &v)?;
    } else {
        print_outcome(out, &outcome)?;
    }
    Ok(0)
}

/// Repair every capture under `root` and rebuild the root index. Exit status 1 if any failed.
pub fn repair_root(out: &mut dyn Write, root: &Path, json: bool) -> Result<u8> {
    let _lock = exclusive(root)?;
    // Refuse before anything is written when a capture holds a link where a file must be.
    let dirs = hrr_archive::layout::list_pid_dirs(root)?;
    for (_, dir) in &dirs {
        check_links(dir)?;
    }
    for (_, dir) in &dirs {
        remove_stale_temp_files(out, dir)?;
    }
    let removed = hrr_archive::fsutil::remove_stale_temp_files_in(root, None)?;
    if !removed.is_empty() {
        let names: Vec<String> = removed
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        writeln!(
            out,
            "[HRR] Removed {} stale temp file(s) left by a killed run in {}: {}",
            removed.len(),
            root.display(),
            names.join(", ")
        )?;
    }
    let r = repair::repair_root(root)?;
    if json {
        let entries = r
            .processes
            .iter()
            .map(|(d, res)| {
                entry(
                    d,
                    res.as_ref()
                        .map_err(|e| hrr_cli::strip_os_error(&e.to_string())),
                )
            })
            .collect();
        let v = summary(root, "root", entries, r.index_error.clone());
        write_json(out, &v)?;
        return Ok(u8::from(!v.ok));
    }
    writeln!(
        out,
        "[HRR] Repairing {} process captures under {}",
        r.processes.len(),
        root.display()
    )?;
    let (mut repaired, mut complete, mut failed) = (0usize, 0usize, 0usize);
    for (dir, result) in &r.processes {
        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        writeln!(out, "[HRR] --- {name} ---")?;
        match result {
            Ok(o) => {
                match o {
                    RepairOutcome::AlreadyComplete { .. } => complete += 1,
                    RepairOutcome::Repaired { .. } => repaired += 1,
                }
                print_outcome(out, o)?;
            }
            Err(e) => {
                failed += 1;
                writeln!(out, "[HRR] Repair failed: {e}")?;
            }
        }
    }
    if let Some(e) = &r.index_error {
        writeln!(out, "[HRR] Root index not rebuilt: {e}")?;
    }
    writeln!(
        out,
        "[HRR] Repair summary: {repaired} repaired, {complete} already complete, {failed} failed"
    )?;
    Ok(u8::from(failed > 0 || r.index_error.is_some()))
}
