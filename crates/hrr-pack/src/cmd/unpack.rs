//! `hrr-pack unpack FILE [-C DIR]`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use hrr_archive::pack;

use crate::ui::{bytes, rate, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// The .hrr.tar.zst to unpack (`-`: standard input).
    file: PathBuf,
    /// Folder to unpack into (it gets <root>/ from the pack; default: the current folder).
    #[arg(short = 'C', long = "directory", default_value = ".")]
    dir: PathBuf,
    /// Flush the file system before the unpacked folder is renamed into place.
    #[arg(long)]
    sync: bool,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    let _stdin;
    let a = if hrr_cli::is_dash(&a.file) {
        let (guard, p) = hrr_cli::stdin(".hrr.tar.zst")?;
        _stdin = guard;
        Args { file: p, ..a }
    } else {
        a
    };
    let removed = pack::remove_stale_unpack_dirs(&a.dir)?;
    if !removed.is_empty() {
        let names: Vec<String> = removed.iter().map(|p| p.display().to_string()).collect();
        eprintln!(
            "hrr-pack: removed {} stale temp folder(s) left by a killed unpack: {}",
            removed.len(),
            names.join(", ")
        );
    }
    let bar = ui.progress();
    let t0 = Instant::now();
    let out = pack::unpack(&a.file, &a.dir, a.sync, &bar)?;
    let secs = t0.elapsed().as_secs_f64();
    let index = pack::read_index(&a.file)?;
    if ui.json {
        ui.json(&serde_json::json!({
            "schema": "hrr.unpack/1", "ok": true, "pack": a.file.display().to_string(),
            "output": out.display().to_string(), "files": index.files.len(),
            "bytes": index.total_bytes, "seconds": secs,
        }));
    } else {
        ui.out(&format!(
            "unpacked {} -> {}: {} files, {}, every file verified, in {secs:.2} s ({})\n",
            a.file.display(),
            out.display(),
            index.files.len(),
            bytes(index.total_bytes),
            rate(index.total_bytes, secs)
        ));
    }
    Ok(0)
}
