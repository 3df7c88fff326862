//! Shell completions and man pages, generated from a tool's clap definition (never written by
//! hand, so they cannot drift from the flags).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Shells completions are generated for.
pub use clap_complete::Shell;

/// Write the completion script of `cmd` for `shell` to `out`.
pub fn completions(mut cmd: clap::Command, shell: Shell, out: &mut dyn Write) {
    let name = cmd.get_name().to_string();
    clap_complete::generate(shell, &mut cmd, name, out);
}

/// Write `DIR/<tool>.1`, and `DIR/<tool>-<sub>.1` for every subcommand; returns the files.
pub fn man_pages(cmd: clap::Command, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    let mut written = Vec::new();
    let mut cmd = cmd;
    cmd.build();
    write_page(&cmd, cmd.get_name(), dir, &mut written)?;
    Ok(written)
}

fn write_page(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let path = dir.join(format!("{name}.1"));
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone().name(name.to_string()))
        .render(&mut buf)
        .with_context(|| format!("rendering {}", path.display()))?;
    std::fs::write(&path, buf).with_context(|| format!("{}", path.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" || sub.is_hide_set() {
            continue;
        }
        write_page(sub, &format!("{name}-{}", sub.get_name()), dir, written)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    #[command(name = "t")]
    struct T {
        /// A flag.
        #[arg(long)]
        flag: bool,
        #[command(subcommand)]
        sub: Option<S>,
    }
    #[derive(clap::Subcommand)]
    enum S {
        /// Go.
        Go,
    }

    #[test]
    fn completions_and_pages() {
        use clap::CommandFactory;
        let mut out = Vec::new();
        completions(T::command(), Shell::Bash, &mut out);
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("--flag") && s.contains("go"));
        let d = tempfile::tempdir().unwrap();
        let files = man_pages(T::command(), d.path()).unwrap();
        let names: Vec<_> = files
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["t.1", "t-go.1"]);
        assert!(std::fs::read_to_string(&files[0]).unwrap().contains(".TH"));
    }
}
