//! `hrr-playback`: inspect (`--info`, `--events`), repair (`--repair`) and replay hrr archives.
//!
//! The offline modes read the archive through `hrr-archive` and never load a GPU library; replay
//! loads the driver at run time. Exit status: 0 ok, 1 failure, 2 usage. Errors print once, on
//! one line, as `hrr-playback: <error with context>` (a format version mismatch prints ROCm HRR's
//! `[HRR] Version mismatch in <path>/events.bin: file=<f> reader=<r>`). A closed stdout (`| head`)
//! ends the program quietly with status 0.

mod cli;
mod demangle;
mod events;
mod info;
mod output;
mod repair_cmd;
mod replay;
mod version;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use hrr_archive::layout::{self, Target};
use hrr_archive::reader::EventReader;

use crate::cli::Cli;

/// Print an error the one way errors are printed.
fn report(err: &anyhow::Error) {
    let mismatch = err
        .chain()
        .find_map(|e| match e.downcast_ref::<hrr_archive::Error>() {
            Some(v @ hrr_archive::Error::VersionMismatch { .. }) => Some(v),
            _ => None,
        });
    match mismatch {
        Some(v) => eprintln!("[HRR] {v}"),
        None => eprintln!("hrr-playback: {}", format!("{err:#}").replace('\n', " ")),
    }
}

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("hrr-playback: internal error: {msg}{at}");
    }));
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        run(&cli, &mut out).and_then(|code| {
            out.flush()?;
            Ok(code)
        })
    }));
    match result {
        Ok(Ok(code)) => ExitCode::from(code),
        Ok(Err(e)) if output::is_broken_pipe(&e) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            let _ = out.flush();
            report(&e);
            ExitCode::from(1)
        }
        Err(_) => ExitCode::from(1),
    }
}

fn run(cli: &Cli, out: &mut dyn Write) -> Result<u8> {
    if cli.version {
        version::print(out, cli.replay.runtime.as_deref())?;
        return Ok(0);
    }
    let path = cli
        .archive
        .as_deref()
        .expect("clap requires ARCHIVE without --version");
    if path.is_file() && hrr_archive::pack::is_pack_file(path) {
        return packed(cli, out, path);
    }
    if cli.repair && read_only_fs(path) {
        anyhow::bail!(
            "cannot repair {}: it is on a read-only file system (mounted `:ro`?), and --repair \
             rewrites the archive in place; copy it somewhere writable, or mount it read-write",
            path.display()
        );
    }
    archive(cli, out, path)
}

/// Is `path` on a file system mounted read-only?
fn read_only_fs(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a NUL-terminated path and `st` a valid out-pointer.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    unsafe { libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_RDONLY != 0 }
}

/// A packed archive (`.hrr.tar.zst`): unpacked, checked file by file, into a private temp folder
/// (`$TMPDIR`, never next to the pack, which may be on a read-only mount) and read from there.
/// `--info`/`--events` show paths relative to the pack (its root folder's name).
fn packed(cli: &Cli, out: &mut dyn Write, pack: &Path) -> Result<u8> {
    if cli.repair {
        anyhow::bail!(
            "{}: a packed archive is never repaired in place; unpack it (hrr-pack unpack) and \
             repair the copy",
            pack.display()
        );
    }
    let tmp = tempfile::Builder::new()
        .prefix("hrr-playback-")
        .tempdir()
        .context("creating a temp folder to unpack into")?;
    let root =
        hrr_archive::pack::unpack(pack, tmp.path(), false, &hrr_archive::progress::NoProgress)
            .with_context(|| format!("unpacking {}", pack.display()))?;
    if !(cli.info || cli.events) {
        return archive(cli, out, &root);
    }
    let here = std::env::current_dir().context("current folder")?;
    std::env::set_current_dir(tmp.path()).context("entering the unpacked archive")?;
    let name = root.file_name().map(PathBuf::from).unwrap_or_default();
    let result = archive(cli, out, &name);
    std::env::set_current_dir(here).context("leaving the unpacked archive")?;
    result
}

/// An archive folder: a root or one process capture.
fn archive(cli: &Cli, out: &mut dyn Write, path: &Path) -> Result<u8> {
    match layout::resolve(path)? {
        Target::Process { dir } => process(cli, out, &dir),
        Target::Root { root, processes } => {
            if cli.repair {
                return repair_cmd::repair_root(out, &root);
            }
            if let [(_, dir)] = processes.as_slice() {
                return process(cli, out, dir);
            }
            if cli.info || cli.events {
                return root_offline(cli, out, &root, &processes);
            }
            if processes.is_empty() {
                anyhow::bail!("{}: the archive holds no process captures", root.display());
            }
            let info = info::root_info(&root, &processes)?;
            out.flush()?;
            let mut err = std::io::stderr().lock();
            info::write_process_table(&mut err, &info.rows)?;
            writeln!(
                err,
                "[HRR] This archive holds {} processes; choose one: hrr-playback {}/pid-<pid>/",
                processes.len(),
                root.display().to_string().trim_end_matches('/')
            )?;
            Ok(2)
        }
    }
}

/// `--info` / `--events` on a root holding several (or no) processes.
fn root_offline(
    cli: &Cli,
    out: &mut dyn Write,
    root: &Path,
    processes: &[(u32, PathBuf)],
) -> Result<u8> {
    let json = cli.replay.json;
    let mut code = 0;
    if cli.info {
        let info = info::root_info(root, processes)?;
        let unreadable = info::print_root(out, &info, json)?;
        if !unreadable.is_empty() {
            out.flush()?;
            for r in &unreadable {
                if let Some(e) = &r.error {
                    report(e);
                }
            }
            code = 1;
        }
    }
    if cli.events {
        for (i, (pid, dir)) in processes.iter().enumerate() {
            if !json {
                if cli.info || i > 0 {
                    writeln!(out)?;
                }
                writeln!(out, "# pid-{pid} ({})", dir.display())?;
            }
            events::print(out, dir, json, Some(*pid))
                .with_context(|| format!("events of pid-{pid}"))?;
        }
    }
    Ok(code)
}

/// Everything aimed at one process capture.
fn process(cli: &Cli, out: &mut dyn Write, dir: &Path) -> Result<u8> {
    if cli.repair {
        return repair_cmd::repair_process(out, dir);
    }
    if cli.info || cli.events {
        if cli.info {
            info::print_process(out, dir, cli.replay.json)?;
        }
        if cli.events {
            if cli.info && !cli.replay.json {
                writeln!(out)?;
                writeln!(out, "Events:")?;
            }
            events::print(out, dir, cli.replay.json, None)?;
        }
        return Ok(0);
    }
    info::check_links(dir)?;
    EventReader::open(&layout::events_path(dir))?;
    out.flush()?;
    let code = replay::run(&cli.replay.to_options(), dir, out)?;
    Ok(code.clamp(0, 255) as u8)
}
