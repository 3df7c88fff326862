//! `hrr-playback`: inspect (`--info`, `--events`, `--list`), repair (`--repair`) and replay hrr
//! archives, one process or every process of a root together (`--all`, `all.rs`).
//!
//! The offline modes read the archive through `hrr-archive` and never load a GPU library; replay
//! loads the driver at run time. Exit status: 0 ok, 1 failure, 2 usage (and a root holding
//! several processes replayed without `--pid`), replay's verdict codes 3 FAULT, 4 HANG, 5 ERROR
//! (`replay/verdict.rs`). Errors print once, as `hrr-playback: error: <what>: <why>` and an
//! optional `hint:` line (a format version mismatch prints ROCm HRR's
//! `[HRR] Version mismatch in <path>/events.bin: file=<f> reader=<r>`); under `--json` also as an
//! `hrr.error/1` object on stdout. A closed stdout (`| head`) ends the program quietly with
//! status 0.

mod all;
mod cli;
mod demangle;
mod events;
mod info;
mod output;
mod repair_cmd;
mod replay;
mod version;

/// mimalloc: replay allocates each event's decoded fields on the reading thread and frees them
/// on the replaying one, which the system allocator serialises (tests/gpu/tiny_launches replay:
/// see the README's figures).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser};
use hrr_archive::layout::{self, Target};
use hrr_archive::reader::EventReader;
use hrr_cli::Hint;

use crate::cli::Cli;

/// Print an error the one way errors are printed; returns the exit status.
fn report(err: &anyhow::Error, json: bool) -> u8 {
    let mismatch = err
        .chain()
        .find_map(|e| match e.downcast_ref::<hrr_archive::Error>() {
            Some(v @ hrr_archive::Error::VersionMismatch { .. }) => Some(v),
            _ => None,
        });
    if let Some(v @ hrr_archive::Error::VersionMismatch { file, reader, .. }) = mismatch {
        let r = hrr_cli::Rendered {
            message: format!("[HRR] {v}"),
            hint: Some(mismatch_hint(*file, *reader)),
            code: hrr_cli::EXIT_FAILURE,
        };
        eprintln!("{}", r.message);
        eprintln!("hint: {}", r.hint.as_deref().unwrap_or_default());
        if json {
            hrr_cli::print_error_json(&hrr_cli::Rendered {
                message: r.message.trim_start_matches("[HRR] ").to_string(),
                ..r
            });
        }
        return hrr_cli::EXIT_FAILURE;
    }
    let mut r = hrr_cli::render(err);
    if r.hint.is_none() {
        r.hint = gpu_hint(&r.message);
    }
    hrr_cli::print_rendered("hrr-playback", &r, json);
    r.code
}

/// What to do about a format version mismatch (neither --repair nor a conversion helps).
fn mismatch_hint(file: u16, reader: u16) -> String {
    format!(
        "this hrr-playback reads format version {reader} only; use the hrr-playback of the release \
         that recorded the archive (format {file}); --repair does not convert it"
    )
}

/// A hint for a replay that found no GPU: `--info`/`--events` need none; in a container, which
/// device node or driver is missing and how to pass it.
fn gpu_hint(message: &str) -> Option<String> {
    let cuda = message.contains("cannot load the CUDA driver")
        || message.contains("CUDA_ERROR_NO_DEVICE")
        || message.contains("cuInit failed");
    let hip = message.contains("cannot load the HIP runtime")
        || message.contains("sees no device")
        || message.contains("hipErrorInvalidDevice")
        || message.contains("hipErrorNoDevice")
        || message.contains("hipInit failed");
    if !(cuda || hip) {
        return None;
    }
    let mut h = String::from("--info, --events and --list need no GPU; replay needs one");
    let missing = |nodes: &[&str]| -> Vec<String> {
        nodes
            .iter()
            .filter(|n| !Path::new(n).exists())
            .map(|n| n.to_string())
            .collect()
    };
    if in_container() {
        if cuda {
            let m = missing(&["/dev/nvidiactl", "/dev/nvidia0"]);
            if m.is_empty() {
                h.push_str(
                    "; this container has the NVIDIA device nodes but not the driver library \
                     libcuda.so.1: run it with --gpus all (NVIDIA Container Toolkit), which mounts \
                     the host's driver",
                );
            } else {
                h.push_str(&format!(
                    "; this container has no {}: run it with --gpus all (NVIDIA Container Toolkit)",
                    m.join(" or ")
                ));
            }
        } else {
            let m = missing(&["/dev/kfd", "/dev/dri"]);
            if m.is_empty() {
                h.push_str(
                    "; /dev/kfd and /dev/dri are present: check that the container's user may \
                     open them (--group-add video --group-add render) and that the host has an \
                     AMD GPU with the amdgpu driver loaded",
                );
            } else {
                h.push_str(&format!(
                    "; this container has no {}: run it with --device=/dev/kfd --device=/dev/dri",
                    m.join(" or ")
                ));
            }
        }
    } else if cuda {
        h.push_str(
            "; install the NVIDIA driver (it provides libcuda.so.1) or name it with --runtime PATH",
        );
    } else {
        h.push_str("; install ROCm (libamdhip64.so) or name it with --runtime PATH; the device nodes /dev/kfd and /dev/dri must be there");
    }
    Some(h)
}

/// Are we inside a container (Docker, podman, Kubernetes)?
fn in_container() -> bool {
    if Path::new("/.dockerenv").exists() || Path::new("/run/.containerenv").exists() {
        return true;
    }
    if std::env::var_os("container").is_some() {
        return true;
    }
    std::fs::read_to_string("/proc/1/cgroup").is_ok_and(|s| {
        ["docker", "containerd", "kubepods", "libpod"]
            .iter()
            .any(|k| s.contains(k))
    })
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
        eprintln!("hrr-playback: error: internal error: {msg}{at}");
    }));
    let mut cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => return ExitCode::from(hrr_cli::clap_exit("hrr-playback", &e)),
    };
    hrr_cli::set_quiet(cli.quiet);
    if cli.quiet {
        cli.replay.no_progress = true;
    }
    let json = cli.replay.json;
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
            drop(out);
            ExitCode::from(report(&e, json))
        }
        Err(_) => ExitCode::from(1),
    }
}

fn run(cli: &Cli, out: &mut dyn Write) -> Result<u8> {
    if let Some(shell) = cli.completions {
        hrr_cli::completions(Cli::command(), shell, out);
        return Ok(0);
    }
    if let Some(dir) = &cli.generate_man {
        let files = hrr_cli::man_pages(Cli::command(), dir)?;
        let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        if cli.replay.json {
            let v = hrr_cli::json::ManJson::new(names);
            writeln!(out, "{}", serde_json::to_string(&v)?)?;
        } else if !cli.quiet {
            writeln!(out, "wrote {}", names.join(" "))?;
        }
        return Ok(0);
    }
    if cli.version {
        version::print(out, cli.replay.runtime.as_deref(), cli.replay.json)?;
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
        return Err(anyhow::anyhow!(
            "cannot repair {}: it is on a read-only file system (mounted `:ro`?), and --repair \
             rewrites the archive in place",
            path.display()
        ))
        .context(Hint::new(
            "copy it somewhere writable, or mount it read-write",
        ));
    }
    archive(cli, out, path, &path.display().to_string())
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
/// Output shows paths relative to the pack (its root folder's name); errors name the pack.
fn packed(cli: &Cli, out: &mut dyn Write, pack: &Path) -> Result<u8> {
    if cli.repair {
        return Err(anyhow::anyhow!(
            "{}: a packed archive is never repaired in place",
            pack.display()
        ))
        .context(Hint::new(format!(
            "unpack it (hrr-pack unpack {}) and repair the copy",
            pack.display()
        )));
    }
    let tmp = tempfile::Builder::new()
        .prefix("hrr-playback-")
        .tempdir()
        .context("creating a temp folder to unpack into")?;
    hrr_cli::alias_path(tmp.path(), &format!("{}:", pack.display()));
    let root =
        hrr_archive::pack::unpack(pack, tmp.path(), false, &hrr_archive::progress::NoProgress)
            .with_context(|| format!("unpacking {}", pack.display()))?;
    let mut cli = cli.clone();
    if let Some(rt) = &cli.replay.runtime {
        // the runtime named relative to where the user is, not to the temp folder
        if rt.components().count() > 1 && rt.is_relative() {
            cli.replay.runtime = Some(std::env::current_dir()?.join(rt));
        }
    }
    let here = std::env::current_dir().context("current folder")?;
    std::env::set_current_dir(tmp.path()).context("entering the unpacked archive")?;
    let name = root.file_name().map(PathBuf::from).unwrap_or_default();
    let result = archive(&cli, out, &name, &pack.display().to_string());
    std::env::set_current_dir(here).context("leaving the unpacked archive")?;
    result
}

/// Pick `pid` among a root's processes.
fn select<'a>(shown: &str, processes: &'a [(u32, PathBuf)], pid: u32) -> Result<&'a Path> {
    match processes.iter().find(|(p, _)| *p == pid) {
        Some((_, d)) => Ok(d),
        None => {
            let held: Vec<String> = processes.iter().map(|(p, _)| format!("pid-{p}")).collect();
            Err(anyhow::anyhow!(
                "{shown}: no process {pid} in this archive (it holds {})",
                if held.is_empty() {
                    "none".to_string()
                } else {
                    held.join(", ")
                }
            ))
            .context(Hint::new("--list shows the processes"))
        }
    }
}

/// An archive folder: a root or one process capture. `shown` is the archive as the user named
/// it (the pack, for a packed archive), for the hints.
fn archive(cli: &Cli, out: &mut dyn Write, path: &Path, shown: &str) -> Result<u8> {
    match layout::resolve(path)? {
        Target::Process { dir } => {
            if let Some(pid) = cli.pid {
                if layout::pid_of_dir_name(&dir).is_some_and(|p| p != pid) {
                    return Err(anyhow::anyhow!(
                        "{}: --pid {pid}: this is the capture of another process",
                        dir.display()
                    ))
                    .context(Hint::new(
                        "--pid chooses among the processes of a root or pack",
                    ));
                }
            }
            if cli.list {
                let pid = layout::pid_of_dir_name(&dir).unwrap_or(0);
                let info = info::process_list(&dir, &[(pid, dir.clone())])?;
                return info::print_list(out, &info, cli.replay.json);
            }
            process(cli, out, &dir)
        }
        Target::Root { root, processes } => {
            if cli.repair {
                return repair_cmd::repair_root(out, &root, cli.replay.json);
            }
            if cli.list {
                let info = info::process_list(&root, &processes)?;
                return info::print_list(out, &info, cli.replay.json);
            }
            if let Some(pid) = cli.pid {
                let dir = select(shown, &processes, pid)?.to_path_buf();
                return process(cli, out, &dir);
            }
            if cli.all {
                if processes.is_empty() {
                    anyhow::bail!("{}: the archive holds no process captures", root.display());
                }
                let archive = cli.archive.as_deref().unwrap_or(&root);
                return all::replay_all(out, archive, &processes, cli.replay.json);
            }
            if cli.info || cli.events {
                return root_offline(cli, out, &root, &processes);
            }
            if let [(_, dir)] = processes.as_slice() {
                return process(cli, out, dir);
            }
            if processes.is_empty() {
                anyhow::bail!("{}: the archive holds no process captures", root.display());
            }
            let info = info::root_info(&root, &processes)?;
            out.flush()?;
            let mut err = std::io::stderr().lock();
            info::write_process_table(&mut err, &info.rows)?;
            let direct = if shown.ends_with(".tar.zst") {
                String::new()
            } else {
                format!(
                    " (or hrr-playback {}/pid-<pid>/)",
                    root.display().to_string().trim_end_matches('/')
                )
            };
            let msg = format!(
                "{shown}: this archive holds {} processes; choose one: hrr-playback {shown} --pid <pid>{direct}, or replay them together with --all",
                processes.len(),
            );
            writeln!(err, "[HRR] This archive holds {} processes; choose one: hrr-playback {shown} --pid <pid>{direct}, or replay them together with --all", processes.len())?;
            drop(err);
            if cli.replay.json {
                hrr_cli::print_error_json(&hrr_cli::Rendered {
                    message: msg,
                    hint: Some(format!("hrr-playback {shown} --list shows them")),
                    code: hrr_cli::EXIT_USAGE,
                });
            }
            Ok(hrr_cli::EXIT_USAGE)
        }
    }
}

/// `--info` / `--events` on a root: the root table first, then (for a single process) its
/// detail; `--events` of every process.
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
        let detail = match processes {
            [(_, dir)] => Some(dir.as_path()),
            _ => None,
        };
        let unreadable = info::print_root(out, &info, json, detail)?;
        if !unreadable.is_empty() {
            out.flush()?;
            for r in &unreadable {
                if let Some(e) = &r.error {
                    report(e, false);
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
        return repair_cmd::repair_process(out, dir, cli.replay.json);
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
