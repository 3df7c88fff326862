//! `hrr-pack list FILE|ARCHIVE [--files]`: from a pack's index alone (nothing else is
//! decompressed), or from an archive folder's manifests and files.

use std::fmt::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use hrr_archive::pack::{self, PackKind, ProcessListing};

use hrr_cli::json::{ListFileJson, ListJson, ListProcessJson, ListTotalsJson};

use crate::ui::{bytes, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// A .hrr.tar.zst (`-`: standard input), an archive folder, or a registry reference (registry/repo:tag or
    /// @sha256:…; answered from the manifest's annotations, no blob is downloaded).
    path: PathBuf,
    /// Also list every file (with its BLAKE3 hash, for a pack or registry reference).
    #[arg(long)]
    files: bool,
    #[command(flatten)]
    connect: crate::registry::ConnectArgs,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    let input = hrr_cli::InputPath::new(&a.path, ".hrr.tar.zst")?;
    let path = &input.path;
    let text = path.to_string_lossy();
    let (source, kind, root, processes, files, packed) =
        if crate::registry::looks_like_reference(&text) {
            match crate::registry::transfer::list_remote(&text, &a.connect, a.files) {
                Ok(r) => r,
                Err(e) => return crate::registry::report_coded(&e, ui.json).ok_or(e),
            }
        } else if std::fs::metadata(path)
            .with_context(|| format!("{}", path.display()))?
            .is_dir()
        {
            let (kind, processes) = pack::list_dir(path)?;
            let mut files = Vec::new();
            if a.files {
                for e in walkdir::WalkDir::new(path)
                    .follow_links(false)
                    .sort_by_file_name()
                    .min_depth(1)
                {
                    let e = e?;
                    if e.file_type().is_file() {
                        let rel = e.path().strip_prefix(path)?.to_string_lossy().into_owned();
                        files.push((rel, e.metadata()?.len(), None));
                    }
                }
            }
            let root = hrr_archive::fsutil::name_of(&std::fs::canonicalize(path)?);
            ("archive", kind, root, processes, files, None)
        } else {
            let index = pack::read_index(path)?;
            let files = index
                .files
                .iter()
                .map(|f| (f.path.clone(), f.size, Some(f.blake3.clone())))
                .collect();
            (
                "pack",
                index.kind,
                index.root,
                index.processes,
                files,
                Some(std::fs::metadata(path)?.len()),
            )
        };
    let total = |f: fn(&ProcessListing) -> u64| processes.iter().map(f).sum::<u64>();
    // A pack's numbers are its index's claims: nothing of the body is read here.
    let unverified = source != "archive";
    let impossible = |p: &ProcessListing| {
        p.event_count
            .checked_mul(hrr_archive::framing::RECORD_HEADER_LEN as u64)
            .is_none_or(|min| min > p.events_bytes)
    };
    if ui.json {
        let v = ListJson {
            schema: "hrr.list/1".into(),
            ok: true,
            path: path.display().to_string(),
            source: source.into(),
            kind: match kind {
                PackKind::Root => "root",
                PackKind::Process => "process",
            }
            .into(),
            root: root.clone(),
            processes: processes
                .iter()
                .map(|p| ListProcessJson {
                    dir: p.dir.clone(),
                    pid: p.pid,
                    complete: p.complete,
                    active_marker: p.active,
                    scrubbed: p.scrubbed,
                    events: p.event_count,
                    events_bin_bytes: p.events_bytes,
                    blobs: p.blobs,
                    blob_bytes: p.blob_bytes,
                    code_objects: p.code_objects,
                    code_object_bytes: p.code_object_bytes,
                    manifest_error: p.manifest_error.clone(),
                })
                .collect(),
            totals: ListTotalsJson {
                processes: processes.len() as u64,
                events: total(|p| p.event_count),
                blobs: total(|p| p.blobs),
                blob_bytes: total(|p| p.blob_bytes),
                code_objects: total(|p| p.code_objects),
                code_object_bytes: total(|p| p.code_object_bytes),
                events_bin_bytes: total(|p| p.events_bytes),
            },
            packed_bytes: packed,
            summary: if unverified {
                "index (unverified)"
            } else {
                "archive"
            }
            .into(),
            files: a.files.then(|| {
                files
                    .iter()
                    .map(|(p, s, h)| ListFileJson {
                        path: p.clone(),
                        size: *s,
                        blake3: h.clone(),
                    })
                    .collect()
            }),
        };
        ui.json(&serde_json::to_value(&v)?);
        return Ok(0);
    }
    let mut s = String::new();
    let what = match kind {
        PackKind::Root => "archive root",
        PackKind::Process => "process capture",
    };
    match packed {
        Some(n) => writeln!(
            s,
            "{}: {} of {what} `{root}` ({} packed)",
            path.display(),
            if source == "registry" {
                "registry artifact"
            } else {
                "pack"
            },
            bytes(n)
        )?,
        None => writeln!(s, "{}: {what} `{root}`", path.display())?,
    }
    writeln!(
        s,
        "{:<10} {:<9} {:>10} {:>11} {:>8} {:>11} {:>6} {:>11}  note",
        "pid", "complete", "events", "events.bin", "blobs", "blob bytes", "code", "code bytes"
    )?;
    for p in &processes {
        let mut note = Vec::new();
        if p.active {
            note.push("active marker".to_string());
        }
        if p.scrubbed {
            note.push("scrubbed".into());
        }
        if let Some(e) = &p.manifest_error {
            note.push(format!("manifest: {e}"));
        }
        if impossible(p) {
            note.push("IMPOSSIBLE: more events than events.bin can hold".into());
        }
        writeln!(
            s,
            "{:<10} {:<9} {:>10} {:>11} {:>8} {:>11} {:>6} {:>11}  {}",
            p.pid,
            if p.complete { "yes" } else { "no" },
            p.event_count,
            bytes(p.events_bytes),
            p.blobs,
            bytes(p.blob_bytes),
            p.code_objects,
            bytes(p.code_object_bytes),
            note.join(", ")
        )?;
    }
    writeln!(
        s,
        "total: {} processes, {} events, {} blobs ({}), {} code objects ({})",
        processes.len(),
        total(|p| p.event_count),
        total(|p| p.blobs),
        bytes(total(|p| p.blob_bytes)),
        total(|p| p.code_objects),
        bytes(total(|p| p.code_object_bytes)),
    )?;
    if unverified {
        writeln!(
            s,
            "note: these numbers are the {} index's own summary, not checked against its contents; `hrr-pack verify {}` checks them",
            if source == "registry" { "artifact's" } else { "pack's" },
            path.display()
        )?;
    }
    if a.files {
        for (p, size, h) in &files {
            match h {
                Some(h) => writeln!(s, "{h}  {size:>12}  {p}")?,
                None => writeln!(s, "{size:>12}  {p}")?,
            }
        }
    }
    ui.out(&s);
    Ok(0)
}
