//! `hrr-pack image --base BASE [--playback PATH] -o IMAGE.tar [--tag NAME]`: a container image
//! bundling hrr-playback, built offline (no daemon, no registry); see `hrr_pack::image`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use hrr_pack::image::{self, ImageOptions};

use crate::ui::{bytes, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// Base image: an OCI image layout folder, an oci-archive tar, or a `docker save` tar.
    #[arg(long, value_name = "BASE")]
    base: PathBuf,
    /// The hrr-playback binary to bundle. Default: the one next to hrr-pack.
    #[arg(long, value_name = "PATH")]
    playback: Option<PathBuf>,
    /// The image tar to write (loads with `docker load -i` and `podman load -i`).
    #[arg(short, long, value_name = "IMAGE.tar")]
    output: PathBuf,
    /// Image name, `name[:tag]`.
    #[arg(long, value_name = "NAME", default_value = "hrr-playback:latest")]
    tag: String,
    /// Replace an existing output file (otherwise refused, as pull and unpack never overwrite).
    #[arg(long)]
    force: bool,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    if !a.force && a.output.symlink_metadata().is_ok() {
        return Err(anyhow::anyhow!(
            "{} already exists; hrr-pack image does not overwrite it",
            a.output.display()
        ))
        .context(hrr_cli::Hint::new(
            "name another output, or pass --force to replace it",
        ));
    }
    let playback = match a.playback {
        Some(p) => p,
        None => {
            let exe = std::env::current_exe().context("locating hrr-pack")?;
            let p = exe.with_file_name("hrr-playback");
            anyhow::ensure!(
                p.is_file(),
                "no hrr-playback next to {} (name one with --playback PATH)",
                exe.display()
            );
            p
        }
    };
    let opts = ImageOptions {
        base: a.base,
        playback,
        output: a.output,
        tag: a.tag,
        epoch: image::epoch_from_env(),
    };
    let o = image::build(&opts)?;
    if let Some(e) = &o.removed_entrypoint {
        ui.note(&format!(
            "removed the base's Entrypoint {e} (the command names hrr-playback)"
        ));
    }
    if o.replaced_layer {
        ui.note("the base is an hrr-pack image: its hrr-playback layer was replaced, not stacked");
    }
    if ui.json {
        ui.json(&o);
    } else {
        ui.out(&format!(
            "image {} -> {} ({}, {} layers)\ncreated  {} (from {})\nmanifest {}\nconfig   {}\nglibc: needs {}, base has {}\n",
            o.tag,
            o.output,
            bytes(o.bytes),
            o.layers,
            o.created,
            o.created_from,
            o.manifest_digest,
            o.config_digest,
            o.glibc_needed.as_deref().unwrap_or("none"),
            o.glibc_base.as_deref().unwrap_or("none"),
        ));
    }
    Ok(0)
}
