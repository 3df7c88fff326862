//! `hrr-capture [-o ARCHIVE] -- CMD ARGS...`: run a command with the capture library preloaded
//! and the archive variable set, and exit with the command's status.

use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};

const USAGE: &str = "usage: hrr-capture [-o ARCHIVE] -- COMMAND [ARGS...]\n\
\n\
Runs COMMAND with libhrr_capture.so preloaded, recording its CUDA driver or HIP runtime calls\n\
into ARCHIVE (default: ./capture.hrr). The library is looked for in $HRR_CAPTURE_LIB, next to\n\
this program, and in ../lib beside it.";

fn library_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("HRR_CAPTURE_LIB") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("cannot locate hrr-capture itself")?;
    let dir = exe.parent().context("hrr-capture has no parent folder")?;
    for candidate in [
        dir.join("libhrr_capture.so"),
        dir.join("../lib/libhrr_capture.so"),
    ] {
        if candidate.is_file() {
            return Ok(candidate.canonicalize().unwrap_or(candidate));
        }
    }
    bail!(
        "libhrr_capture.so not found next to {} (set HRR_CAPTURE_LIB)",
        exe.display()
    )
}

fn run() -> Result<i32> {
    let mut args = std::env::args_os().skip(1);
    let mut output = PathBuf::from("capture.hrr");
    let mut command = Vec::new();
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("-o") | Some("--output") => {
                output = args.next().context("-o needs an archive path")?.into();
            }
            Some("-h") | Some("--help") => {
                println!("{USAGE}");
                return Ok(0);
            }
            Some("--") => {
                command.extend(args.by_ref());
            }
            Some(s) if s.starts_with('-') && command.is_empty() => {
                eprintln!("{USAGE}");
                bail!("unknown option {s}");
            }
            _ => {
                command.push(a);
                command.extend(args.by_ref());
            }
        }
    }
    if command.is_empty() {
        eprintln!("{USAGE}");
        return Ok(2);
    }
    let lib = library_path()?;
    let output = if output.is_absolute() {
        output
    } else {
        std::env::current_dir()?.join(output)
    };
    let mut preload = lib.into_os_string();
    if let Some(old) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(old);
    }
    let status = Command::new(&command[0])
        .args(&command[1..])
        .env("LD_PRELOAD", preload)
        .env("HIP_HRR_CAPTURE_OUTPUT", &output)
        .status()
        .with_context(|| format!("cannot run {}", command[0].to_string_lossy()))?;
    Ok(status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
}

fn main() {
    match run() {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("hrr-capture: {e:#}");
            std::process::exit(1);
        }
    }
}
