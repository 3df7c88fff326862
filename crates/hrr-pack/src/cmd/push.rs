//! `hrr-pack push ARCHIVE|FILE.hrr.tar.zst REF`: the archive as an OCI artifact (FORMAT.md §11).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use hrr_archive::pack;
use oci_client::RegistryOperation;

use crate::registry::{self, transfer, ConnectArgs, Session};
use crate::ui::{bytes, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// The archive folder (a root, or one pid-<pid>/), or a .hrr.tar.zst.
    archive: PathBuf,
    /// registry/repo:tag (e.g. 127.0.0.1:5000/team/run:v1).
    reference: String,
    /// Push even though a capture is running or left writer state.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    connect: ConnectArgs,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    registry::coded(push(&a, ui), ui.json)
}

/// What was uploaded, in words that are true for a first push (everything), a repeated one
/// (nothing) and one in between.
fn uploaded_words(blobs: usize, uploaded: usize, uploaded_bytes: u64, frac: f64) -> String {
    if uploaded == 0 {
        "nothing uploaded, every blob already in the registry".to_string()
    } else if uploaded >= blobs {
        format!("uploaded all of them ({})", bytes(uploaded_bytes))
    } else {
        format!(
            "uploaded {uploaded} blob{} ({}, {:.1}%), the rest already in the registry",
            if uploaded == 1 { "" } else { "s" },
            bytes(uploaded_bytes),
            frac * 100.0
        )
    }
}

fn push(a: &Args, ui: &Ui) -> Result<i32> {
    let r = registry::parse_reference(&a.reference)?;
    if r.tag().is_none() || r.digest().is_some() {
        bail!("push needs a tag (registry/repo:tag), not a digest");
    }
    let bar = ui.progress();
    let t0 = Instant::now();
    // A pack is unpacked (verified) into a temp folder first; the artifact holds the files.
    let unpacked;
    let src = if std::fs::metadata(&a.archive)?.is_dir() {
        a.archive.clone()
    } else {
        unpacked = tempfile::Builder::new().prefix("hrr-push-").tempdir()?;
        pack::unpack(&a.archive, unpacked.path(), false, &bar)?
    };
    let session = Session::connect(&a.connect, &a.reference, RegistryOperation::Push)?;
    let stop_after = std::env::var("HRR_PACK_TEST_STOP_AFTER")
        .ok()
        .and_then(|v| v.parse().ok());
    let rep = transfer::push(&session, &src, a.force, &bar, stop_after)?;
    let secs = t0.elapsed().as_secs_f64();
    let frac = rep.bytes_uploaded as f64 / rep.bytes_total.max(1) as f64;
    if ui.json {
        ui.json(&hrr_cli::json::PushJson {
            schema: "hrr.push/1".into(),
            ok: true,
            reference: a.reference.clone(),
            digest: rep.digest.clone(),
            scheme: session.scheme.into(),
            files: rep.files as u64,
            file_bytes: rep.file_bytes,
            blobs: rep.blobs as u64,
            blobs_uploaded: rep.blobs_uploaded as u64,
            bytes_total: rep.bytes_total,
            bytes_uploaded: rep.bytes_uploaded,
            uploaded_fraction: frac,
            seconds: secs,
        });
    } else {
        ui.out(&format!(
            "pushed {} -> {}@{}: {} files ({}), {} blobs ({}); {}, in {secs:.2} s\n",
            a.archive.display(),
            a.reference,
            rep.digest,
            rep.files,
            bytes(rep.file_bytes),
            rep.blobs,
            bytes(rep.bytes_total),
            uploaded_words(rep.blobs, rep.blobs_uploaded, rep.bytes_uploaded, frac),
        ));
    }
    Ok(0)
}
