//! `--repair`: rewrite crashed captures with a clean trailer and manifest, with the messages of
//! ROCm's HRR. On a root every process capture is repaired and the root index rebuilt; the exit
//! status is 1 when any of them failed.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use hrr_archive::repair::{self, RepairOutcome};

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

/// Repair one `pid-<pid>/` capture. Exit status 0, or an error.
pub fn repair_process(out: &mut dyn Write, dir: &Path) -> Result<u8> {
    check_links(dir)?;
    remove_stale_temp_files(out, dir)?;
    let outcome = repair::repair_process(dir)?;
    print_outcome(out, &outcome)?;
    Ok(0)
}

/// Repair every capture under `root` and rebuild the root index. Exit status 1 if any failed.
pub fn repair_root(out: &mut dyn Write, root: &Path) -> Result<u8> {
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
