//! `hrr-pack pack ARCHIVE [-o FILE] [--level N] [-T N] [--force]`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use hrr_archive::pack::{self, PackOptions};

use crate::ui::{bytes, rate, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// The archive folder (a root, or one pid-<pid>/).
    archive: PathBuf,
    /// Output file (`-`: standard output). Default: <name>.hrr.tar.zst in the current folder.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// zstd level.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(i32).range(1..=19))]
    level: i32,
    /// Compression threads (0: one per core); the output is the same for every value.
    #[arg(short = 'T', long, default_value_t = 0)]
    threads: u32,
    /// Pack even though a capture is running or left writer state (`active` marker, temp files).
    #[arg(long)]
    force: bool,
    /// fsync the pack before it is renamed into place.
    #[arg(long)]
    sync: bool,
    /// Create the pack 0600 (default: 0644 less the umask, so that a container running as
    /// another user can read it when mounted; the archive's own files stay 0600 either way).
    #[arg(long)]
    private: bool,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    let out = match &a.output {
        Some(p) if hrr_cli::is_dash(p) => {
            hrr_cli::refuse_binary_to_terminal("a pack")?;
            None
        }
        Some(p) => Some(p.clone()),
        None => Some(PathBuf::from(pack::default_pack_name(&a.archive)?)),
    };
    let opts = PackOptions {
        level: a.level,
        threads: a.threads,
        force: a.force,
        sync: a.sync,
        private: a.private,
    };
    // Exclusive with scrub (and another pack); finish an interrupted scrub first, so neither
    // its staging folder nor a half-swapped archive is what gets packed. An archive whose
    // folder cannot be written cannot be scrubbed either: packed without the lock.
    let _lock = match hrr_archive::lock::exclusive(&a.archive, "pack") {
        Ok(l) => Some(l),
        Err(e) if e.is_unwritable() => None,
        Err(e) => return Err(e.into()),
    };
    if _lock.is_some() {
        for line in hrr_pack::scrub::recover(&a.archive)? {
            eprintln!("hrr-pack: {line}");
        }
    }
    let bar = ui.progress();
    let t0 = Instant::now();
    let o = pack::pack_to_file(&a.archive, out.as_deref(), &opts, &bar)?;
    let secs = t0.elapsed().as_secs_f64();
    if !o.removed_stale.is_empty() {
        let names: Vec<String> = o
            .removed_stale
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        eprintln!(
            "hrr-pack: removed {} stale temp file(s) left by a killed pack: {}",
            names.len(),
            names.join(", ")
        );
    }
    let shown = o
        .path
        .as_ref()
        .map_or("<stdout>".to_string(), |p| p.display().to_string());
    if ui.json {
        ui.json(&hrr_cli::json::PackJson {
            schema: "hrr.pack/1".into(),
            ok: true,
            archive: a.archive.display().to_string(),
            output: if o.path.is_some() { shown } else { "-".into() },
            root: o.index.root.clone(),
            kind: match o.index.kind {
                pack::PackKind::Root => "root",
                pack::PackKind::Process => "process",
            }
            .into(),
            files: o.files(),
            bytes_in: o.bytes_in(),
            bytes_out: o.bytes_out,
            level: a.level,
            threads: pack::workers(a.threads) as u32,
            forced: o.index.forced,
            skipped: o.skipped.clone(),
            seconds: secs,
        });
    } else {
        for s in &o.skipped {
            ui.note(&format!("left out writer temp file {s}"));
        }
        let out_msg = format!(
            "packed {} -> {shown}: {} files, {} -> {} (ratio {:.2}) in {secs:.2} s ({})\n",
            a.archive.display(),
            o.files(),
            bytes(o.bytes_in()),
            bytes(o.bytes_out),
            o.bytes_in() as f64 / o.bytes_out.max(1) as f64,
            rate(o.bytes_in(), secs)
        );
        if o.path.is_some() {
            ui.out(&out_msg);
        } else if !hrr_cli::quiet() {
            eprint!("{out_msg}");
        }
    }
    Ok(0)
}
