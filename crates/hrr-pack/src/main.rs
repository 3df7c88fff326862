//! `hrr-pack`: ship hrr archives (pack, unpack, list, verify) and keep secrets out of them (scan,
//! scrub). Results go to stdout (`--json`: one JSON object, `docs/json.md`), logs and progress
//! bars to stderr. Errors: `hrr-pack: error: <what>: <why>` and an optional `hint:` line (under
//! `--json` also an `hrr.error/1` object on stdout). Exit codes: 0 ok, 1 failure (an error, or
//! `verify` found damage), 2 usage, 3 `scan` found secrets, 4 a registry refused the
//! credentials or none were found for it (`push`, `pull`, `list REF`).

mod cmd;
mod registry;
mod ui;

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

const EXIT_CODES: &str = "Exit status: 0 ok; 1 failure (an error, or verify found damage); 2 usage; \
3 scan found secrets; 4 registry credentials missing or refused (push, pull, list REF).\n\
Errors: one `hrr-pack: error: <what>: <why>` line on stderr, then an optional `hint:` line; with \
--json also {\"schema\":\"hrr.error/1\",\"ok\":false,\"error\":…,\"hint\":…,\"exit_code\":N} on stdout \
(docs/json.md). A FILE argument `-` is standard input (unpack, verify, list, scan); `-o -` is \
standard output (pack; refused on a terminal).";

/// Ship hrr archives and keep secrets out of them.
#[derive(Parser)]
#[command(
    name = "hrr-pack",
    about,
    disable_version_flag = true,
    subcommand_required = false,
    arg_required_else_help = true,
    after_help = EXIT_CODES
)]
struct Cli {
    /// One JSON object on stdout instead of text (no progress bars); on failure, an error object.
    #[arg(long, global = true)]
    json: bool,
    /// No progress bars (they are shown only on a terminal anyway).
    #[arg(long, global = true)]
    no_progress: bool,
    /// Print only errors and the result a script needs (no notices, no progress).
    #[arg(short, long, global = true)]
    quiet: bool,
    /// Print the version and the archive format version (with --json: an hrr.version/1 object).
    #[arg(short = 'V', long)]
    version: bool,
    #[command(subcommand)]
    cmd: Option<Cmd>,
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
    /// Print a shell completion script (source it, or install it where your shell looks).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: hrr_cli::Shell,
    },
    /// Write man pages (hrr-pack.1, hrr-pack-<command>.1) into DIR.
    Man {
        /// Folder to write into (created if missing).
        dir: PathBuf,
    },
}

/// The command line: [`Cli`], with [`EXIT_CODES`] after the help of every subcommand too.
fn command() -> clap::Command {
    Cli::command().mut_subcommands(|c| c.after_help(EXIT_CODES))
}

fn main() {
    let parsed = command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => std::process::exit(hrr_cli::clap_exit("hrr-pack", &e).into()),
    };
    hrr_cli::set_quiet(cli.quiet);
    let ui = ui::Ui::new(cli.json, cli.no_progress || cli.quiet);
    let result = match cli.cmd {
        _ if cli.version => version(&ui),
        None => {
            let _ = command().print_help();
            Ok(hrr_cli::EXIT_USAGE.into())
        }
        Some(Cmd::Pack(a)) => cmd::pack::run(a, &ui),
        Some(Cmd::Unpack(a)) => cmd::unpack::run(a, &ui),
        Some(Cmd::List(a)) => cmd::list::run(a, &ui),
        Some(Cmd::Verify(a)) => cmd::verify::run(a, &ui),
        Some(Cmd::Scan(a)) => cmd::scan::run(a, &ui),
        Some(Cmd::Scrub(a)) => cmd::scrub::run(a, &ui),
        Some(Cmd::Push(a)) => cmd::push::run(a, &ui),
        Some(Cmd::Pull(a)) => cmd::pull::run(a, &ui),
        Some(Cmd::Image(a)) => cmd::image::run(a, &ui),
        Some(Cmd::Completions { shell }) => {
            let mut out = Vec::new();
            hrr_cli::completions(command(), shell, &mut out);
            ui.out(&String::from_utf8_lossy(&out));
            Ok(0)
        }
        Some(Cmd::Man { dir }) => man(&dir, &ui),
    };
    let code = match result {
        Ok(code) => code,
        Err(e) => registry::report(&e, ui.json),
    };
    std::process::exit(code);
}

fn version(ui: &ui::Ui) -> anyhow::Result<i32> {
    if ui.json {
        ui.json(&serde_json::json!({
            "schema": "hrr.version/1", "ok": true, "tool": "hrr-pack",
            "version": env!("CARGO_PKG_VERSION"),
            "format_version": hrr_archive::FORMAT_VERSION,
        }));
    } else {
        ui.out(&format!(
            "hrr-pack {}\nFormat version: {}\n",
            env!("CARGO_PKG_VERSION"),
            hrr_archive::FORMAT_VERSION
        ));
    }
    Ok(0)
}

fn man(dir: &std::path::Path, ui: &ui::Ui) -> anyhow::Result<i32> {
    let files = hrr_cli::man_pages(command(), dir)?;
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    if ui.json {
        ui.json(&hrr_cli::json::ManJson::new(names));
    } else if !hrr_cli::quiet() {
        ui.out(&format!("wrote {}\n", names.join(" ")));
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        command().debug_assert();
    }
}
