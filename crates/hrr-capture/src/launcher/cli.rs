//! Command line: `hrr-capture [-o ARCHIVE] [--append | --force] -- COMMAND [ARGS...]`, parsed
//! with clap derive. Everything from COMMAND on is the program's and is taken verbatim.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::Parser;

/// Run a program with libhrr_capture.so preloaded, recording its CUDA driver or HIP runtime calls
/// into an hrr archive.
#[derive(Debug, Parser)]
#[command(
    name = "hrr-capture",
    disable_version_flag = true,
    override_usage = "hrr-capture [OPTIONS] -- COMMAND [ARGS]...",
    long_about = "Run a program with libhrr_capture.so preloaded, recording its CUDA driver or HIP \
runtime calls into an hrr archive (a folder holding one pid-<pid>/ per process that used the GPU).\n\
\n\
The program runs in place of hrr-capture (same process, same signals): a SIGINT, SIGTERM, SIGHUP, \
SIGQUIT, SIGUSR1 or SIGUSR2 sent to hrr-capture reaches the program itself.\n\
\n\
The library is looked for in $HRR_CAPTURE_LIB, next to this program, and in ../lib beside it. By \
hand: HIP_HRR_CAPTURE_OUTPUT=run.hrr LD_PRELOAD=/path/libhrr_capture.so COMMAND [ARGS]...",
    after_help = "Environment: HRR_CAPTURE_DIGEST_MIN bytes (default 16 MiB; `off`): blocking D2H \
results this large are recorded as digests of each 64 KiB, not their bytes; \
HRR_CAPTURE_MIN_FREE_MB (default 512): capture stops, the program runs on, below this much free \
disk; HRR_CAPTURE_PROFILE=1: where capture's time went, on stderr at exit; \
HRR_CAPTURE_FREE_CHECKS=0: a process that copies no result back is not checked at its frees.\n\
\n\
Exit status: the program's own; killed by a signal, hrr-capture dies of the same \
signal. Before the program starts: 1 failure (libhrr_capture.so not found, the old archive could \
not be moved aside), 2 usage (also: -o names the archive of an earlier run), 126 COMMAND cannot be \
executed, 127 COMMAND not found."
)]
pub struct Cli {
    /// Archive folder to record into (created if missing).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "ARCHIVE",
        default_value = "capture.hrr"
    )]
    pub output: PathBuf,

    /// ARCHIVE holds an earlier run: add this run's processes to it.
    #[arg(long, conflicts_with = "force")]
    pub append: bool,

    /// ARCHIVE holds an earlier run: move it aside to ARCHIVE.old-<timestamp> (never deleted) and
    /// capture into a fresh one.
    #[arg(long)]
    pub force: bool,

    /// Print the version and the archive format version this build writes.
    #[arg(short = 'V', long)]
    pub version: bool,

    /// The program to run and its arguments, taken verbatim (after `--`).
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        num_args = 1..,
        required_unless_present = "version"
    )]
    pub command: Vec<OsString>,
}

/// The `--version` text.
pub fn version_text() -> String {
    format!(
        "hrr-capture {}\nFormat version: {}\n",
        env!("CARGO_PKG_VERSION"),
        hrr_archive::FORMAT_VERSION
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("hrr-capture").chain(args.iter().copied()))
    }

    fn command(cli: &Cli) -> Vec<&str> {
        cli.command.iter().map(|a| a.to_str().unwrap()).collect()
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn the_command_is_taken_verbatim() {
        let cli = parse(&["-o", "a.hrr", "--", "app", "-o", "x", "--force", "--", "-V"]).unwrap();
        assert_eq!(cli.output, PathBuf::from("a.hrr"));
        assert!(!cli.force && !cli.version);
        assert_eq!(command(&cli), ["app", "-o", "x", "--force", "--", "-V"]);
        // Without `--`, the first word that is not an option starts the command.
        let cli = parse(&["--append", "app", "--help"]).unwrap();
        assert!(cli.append);
        assert_eq!(command(&cli), ["app", "--help"]);
        let cli = parse(&["--", "--weird-name"]).unwrap();
        assert_eq!(command(&cli), ["--weird-name"]);
        assert_eq!(cli.output, PathBuf::from("capture.hrr"));
    }

    #[test]
    fn usage_errors() {
        for bad in [
            &[][..],
            &["-o", "a.hrr"],
            &["-o", "a.hrr", "--"],
            &["--bogus", "--", "app"],
            &["--append", "--force", "--", "app"],
            &["-o"],
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad:?}: {e}");
        }
        assert!(parse(&["--version"]).unwrap().version);
        assert!(parse(&["-V"]).unwrap().version);
    }

    #[test]
    fn version_names_the_format() {
        let v = version_text();
        assert!(v.starts_with(&format!("hrr-capture {}\n", env!("CARGO_PKG_VERSION"))));
        assert!(v.contains(&format!("Format version: {}", hrr_archive::FORMAT_VERSION)));
    }
}
