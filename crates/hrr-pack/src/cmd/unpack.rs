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
    let input = hrr_cli::InputPath::new(&a.file, ".hrr.tar.zst")?;
    let shown = &input.shown;
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
    let out = pack::unpack(&input.path, &a.dir, a.sync, &bar)?;
    let secs = t0.elapsed().as_secs_f64();
    let index = pack::read_index(&input.path)?;
    if ui.json {
        ui.json(&hrr_cli::json::UnpackJson {
            schema: "hrr.unpack/1".into(),
            ok: true,
            pack: shown.clone(),
            output: out.display().to_string(),
            files: index.files.len() as u64,
            bytes: index.total_bytes,
            seconds: secs,
        });
    } else {
        ui.out(&format!(
            "unpacked {shown} -> {}: {} files, {}, every file verified, in {secs:.2} s ({})\n",
            out.display(),
            index.files.len(),
            bytes(index.total_bytes),
            rate(index.total_bytes, secs)
        ));
    }
    Ok(0)
}
