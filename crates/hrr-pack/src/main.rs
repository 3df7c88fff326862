//! `hrr-pack`: ship hrr archives (pack, unpack, list, verify) and keep secrets out of them (scan,
//! scrub). Results go to stdout (`--json`: one JSON object), logs and progress bars to stderr.
//! Exit codes: 0 ok, 1 failure (an error, or `verify` found damage), 2 usage, 3 `scan` found
//! secrets, 4 a registry refused the credentials (`push`, `pull`, `list REF`).

mod cmd;
mod registry;
mod ui;

use clap::{Parser, Subcommand};

/// Ship hrr archives and keep secrets out of them.
#[derive(Parser)]
#[command(name = "hrr-pack", version, about, propagate_version = true)]
struct Cli {
    /// One JSON object on stdout instead of text (no progress bars).
    #[arg(long, global = true)]
    json: bool,
    /// No progress bars (they are shown only on a terminal anyway).
    #[arg(long, global = true)]
    no_progress: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Pack an archive into one .hrr.tar.zst (byte-identical output for the same archive).
    Pack(cmd::pack::Args),
    /// Unpack a .hrr.tar.zst, verifying every file; never overwrites.
    Unpack(cmd::unpack::Args),
    /// List the processes, events, blobs and sizes of a pack (from its index) or an archive.
    List(cmd::list::Args),
    /// Check every file of a pack or archive against its hash; exit 1 naming the bad files.
    Verify(cmd::verify::Args),
    /// List the secrets in an archive, pack or file (never the secrets themselves); exit 3 if any.
    Scan(cmd::scan::Args),
    /// Redact the secrets of an archive in place (or into -o), keeping it valid and replayable.
    Scrub(cmd::scrub::Args),
    /// Push an archive or pack to an OCI registry as an artifact (only new layers are uploaded).
    Push(cmd::push::Args),
    /// Pull an archive from an OCI registry, verifying every file before it lands.
    Pull(cmd::pull::Args),
    /// Build a container image bundling hrr-playback: one layer appended to a base image file.
    Image(cmd::image::Args),
}

fn main() {
    let cli = Cli::parse();
    let ui = ui::Ui::new(cli.json, cli.no_progress);
    let result = match cli.cmd {
        Cmd::Pack(a) => cmd::pack::run(a, &ui),
        Cmd::Unpack(a) => cmd::unpack::run(a, &ui),
        Cmd::List(a) => cmd::list::run(a, &ui),
        Cmd::Verify(a) => cmd::verify::run(a, &ui),
        Cmd::Scan(a) => cmd::scan::run(a, &ui),
        Cmd::Scrub(a) => cmd::scrub::run(a, &ui),
        Cmd::Push(a) => cmd::push::run(a, &ui),
        Cmd::Pull(a) => cmd::pull::run(a, &ui),
        Cmd::Image(a) => cmd::image::run(a, &ui),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("hrr-pack: error: {e:#}");
            if ui.json {
                ui.json(&serde_json::json!({
                    "schema": "hrr.error/1", "ok": false, "error": format!("{e:#}"),
                }));
            }
            1
        }
    };
    std::process::exit(code);
}
