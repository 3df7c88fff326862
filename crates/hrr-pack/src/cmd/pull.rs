//! `hrr-pack pull REF [-o DIR|FILE.hrr.tar.zst]`: every blob and file verified before anything
//! lands at the destination.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use hrr_archive::layout::PACK_SUFFIX;
use hrr_archive::pack::{self, PackOptions};
use oci_client::RegistryOperation;

use crate::registry::{self, transfer, ConnectArgs, Session};
use crate::ui::{bytes, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// registry/repo:tag or registry/repo@sha256:…
    reference: String,
    /// Folder to pull into (it gets <root>/), or a file ending in .hrr.tar.zst to pack into.
    /// Default: the current folder.
    #[arg(short, long, default_value = ".")]
    output: PathBuf,
    /// Flush the file system before the pulled folder is renamed into place.
    #[arg(long)]
    sync: bool,
    #[command(flatten)]
    connect: ConnectArgs,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    registry::coded(pull(&a, ui), ui.json)
}

fn pull(a: &Args, ui: &Ui) -> Result<i32> {
    let to_pack = a.output.to_string_lossy().ends_with(PACK_SUFFIX);
    if to_pack && a.output.symlink_metadata().is_ok() {
        bail!(
            "{} already exists; pull never overwrites",
            a.output.display()
        );
    }
    let session = Session::connect(&a.connect, &a.reference, RegistryOperation::Pull)?;
    let bar = ui.progress();
    let t0 = Instant::now();
    let (rep, shown) = if to_pack {
        let parent = match a.output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let tmp = tempfile::Builder::new()
            .prefix(".hrr-pull-")
            .tempdir_in(&parent)
            .with_context(|| format!("creating a temp folder in {}", parent.display()))?;
        let rep = transfer::pull(&session, tmp.path(), false, &bar)?;
        pack::pack_to_file(&rep.output, Some(&a.output), &PackOptions::default(), &bar)?;
        (rep, a.output.clone())
    } else {
        let rep = transfer::pull(&session, &a.output, a.sync, &bar)?;
        let out = rep.output.clone();
        (rep, out)
    };
    let secs = t0.elapsed().as_secs_f64();
    if ui.json {
        ui.json(&hrr_cli::json::PullJson {
            schema: "hrr.pull/1".into(),
            ok: true,
            reference: a.reference.clone(),
            digest: rep.digest.clone(),
            output: shown.display().to_string(),
            files: rep.files as u64,
            bytes: rep.file_bytes,
            bytes_downloaded: rep.bytes_downloaded,
            seconds: secs,
        });
    } else {
        // A reference by digest already names it: said once.
        let named = if a.reference.ends_with(&format!("@{}", rep.digest)) {
            a.reference.clone()
        } else {
            format!("{}@{}", a.reference, rep.digest)
        };
        ui.out(&format!(
            "pulled {named} -> {}: {} files ({}), {} downloaded, every blob and file verified, in {secs:.2} s\n",
            shown.display(),
            rep.files,
            bytes(rep.file_bytes),
            bytes(rep.bytes_downloaded)
        ));
    }
    Ok(0)
}
