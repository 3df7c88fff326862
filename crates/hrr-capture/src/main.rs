//! `hrr-capture [-o ARCHIVE] [--append | --force] -- COMMAND [ARGS...]`: run a command with the
//! capture library preloaded and the archive variable set, as that command (it is `exec`ed, so
//! signals reach it and its exit status or death by signal is the launcher's).
//!
//! Errors print once, as `hrr-capture: error: <what>: <why>` and an optional `hint:` line. Exit
//! status before the program starts: 1 failure, 2 usage (also: `-o` names the archive of an
//! earlier run), 126 cannot execute COMMAND, 127 COMMAND not found.

mod launcher;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use launcher::cli::{self, Cli};
use launcher::exec;
use launcher::fail::{Fail, EXIT_USAGE};
use launcher::output::{self, Plan};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return usage_error(e),
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            f.print();
            ExitCode::from(f.code)
        }
    }
}

/// clap's `--help` goes to stdout (status 0); its usage errors are printed in our style (status 2).
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return ExitCode::SUCCESS;
    }
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let _ = write!(std::io::stderr(), "hrr-capture: error: {text}");
    ExitCode::from(EXIT_USAGE)
}

/// Everything up to the `exec`; returns only on `--version` or an error.
fn run(cli: &Cli) -> Result<(), Fail> {
    if cli.version {
        print!("{}", cli::version_text());
        return Ok(());
    }
    let lib = exec::library_path()?;
    let state = output::inspect(&cli.output)?;
    if let Plan::MoveAside(to) = output::plan(&cli.output, &state, cli.append, cli.force)? {
        output::move_aside(&cli.output, &to)?;
        eprintln!(
            "hrr-capture: moved the earlier archive {} aside to {}",
            cli.output.display(),
            to.display()
        );
    }
    let archive = exec::absolute(&cli.output);
    Err(exec::exec(&cli.command, &lib, &archive))
}
