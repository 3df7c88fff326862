//! `hrr-playback ROOT --all`: every process of an archive replayed together, one replay process
//! (this program on the process's `pid-<pid>/` folder, with the other flags given) per recorded
//! process, all started at once and sharing a rendezvous folder ([`crate::replay::peers`]): IPC handles
//! one process exported are re-paired with the opens of another, and results are read in the
//! order the recording read them. The summary: each process's verdict, then the totals; exit
//! code: the worst of the processes' (ERROR 5 > HANG 4 > FAULT 3 > MISMATCH 1 > PASS 0).
//!
//! `--json` prints one object: `schema` (`hrr.replay-all/1`), `processes` (per process: `pid`,
//! `exit_code`, `replay`: its own replay object, or null when it printed none), `verdict`,
//! `exit_code`, `ok`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result};
use hrr_cli::json::{ReplayAllJson, ReplayJson, ReplayedProcessJson};

use crate::replay::peers::{progress_file, PEERS_ENV};

/// One process's replay, as its replay process reported it.
struct Replayed {
    pid: u32,
    exit: u8,
    json: Option<ReplayJson>,
    stderr_tail: String,
}

/// The flags a replay process gets: the command line's, without the archive and `--all`, with
/// `--json` (its summary is read back), `--no-localize` and `--no-recheck`.
fn forwarded(archive: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = Vec::new();
    let mut dropped_archive = false;
    for a in std::env::args_os().skip(1) {
        if !dropped_archive && Path::new(&a) == archive {
            dropped_archive = true;
            continue;
        }
        if a == "--all" || a == "--json" {
            continue;
        }
        args.push(a);
    }
    args.push("--json".into());
    // a process replayed again alone (to name a faulting kernel, or to tell nondeterminism
    // apart) would wait for peers that are not there: collective kernels never return
    for flag in ["--no-localize", "--no-recheck"] {
        if !args.iter().any(|a| a == flag) {
            args.push(flag.into());
        }
    }
    args
}

/// Replay `processes` (pid, folder) of the archive `archive` together; the summary to `out`.
pub fn replay_all(
    out: &mut dyn Write,
    archive: &Path,
    processes: &[(u32, PathBuf)],
    json: bool,
) -> Result<u8> {
    let rendezvous = tempfile::Builder::new()
        .prefix("hrr-all-")
        .tempdir()
        .context("a rendezvous folder for the replay processes")?;
    for (pid, _) in processes {
        let p = progress_file(rendezvous.path(), *pid);
        std::fs::write(&p, [0u8; 8]).with_context(|| format!("writing {}", p.display()))?;
    }
    crate::replay::pairing::write(rendezvous.path(), processes)?;
    let exe = std::env::current_exe().context("finding hrr-playback itself")?;
    let args = forwarded(archive);
    if !json {
        let names: Vec<String> = processes.iter().map(|(p, _)| format!("pid-{p}")).collect();
        writeln!(
            out,
            "[HRR] Replaying {} processes together: {}",
            processes.len(),
            names.join(", ")
        )?;
        out.flush()?;
    }
    let mut children = Vec::new();
    for (pid, dir) in processes {
        let child = Command::new(&exe)
            .arg(dir)
            .args(&args)
            .env(PEERS_ENV, rendezvous.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting the replay of pid-{pid}"))?;
        children.push((*pid, child));
    }
    // every child's output read at once, each on threads of its own: read one child after
    // another, a child whose pipe filled (`-v` traces) stopped, and the others waited for it
    let outputs: Vec<Result<std::process::Output>> = std::thread::scope(|scope| {
        let waits: Vec<_> = children
            .into_iter()
            .map(|(pid, child)| {
                scope.spawn(move || {
                    child
                        .wait_with_output()
                        .with_context(|| format!("waiting for the replay of pid-{pid}"))
                })
            })
            .collect();
        waits
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a waiting thread panicked")))
            })
            .collect()
    });
    let mut done = Vec::new();
    for ((pid, _), o) in processes.iter().zip(outputs) {
        let o = o?;
        let stderr = String::from_utf8_lossy(&o.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        done.push(Replayed {
            pid: *pid,
            exit: o.status.code().map_or(5, |c| c as u8),
            json: serde_json::from_slice(&o.stdout).ok(),
            stderr_tail: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
        });
    }
    let worst = done.iter().map(|r| r.exit).max().unwrap_or(0);
    if json {
        let verdict = verdict_of(&done);
        let v = ReplayAllJson {
            schema: "hrr.replay-all/1".into(),
            processes: done
                .into_iter()
                .map(|r| ReplayedProcessJson {
                    pid: r.pid,
                    exit_code: r.exit,
                    replay: r.json,
                })
                .collect(),
            verdict,
            exit_code: worst,
            ok: worst == 0,
        };
        writeln!(out, "{}", serde_json::to_string(&v)?)?;
        return Ok(worst);
    }
    for r in &done {
        let line = match &r.json {
            Some(v) => {
                let a = &v.allocations;
                let moved = match a.translated + a.host_translated {
                    0 => String::new(),
                    _ => format!(
                        "; translated: {} allocations, {} host regions{}",
                        a.translated,
                        a.host_translated,
                        a.first_refusal
                            .as_deref()
                            .map(|w| format!(" (first refusal: {w})"))
                            .unwrap_or_default()
                    ),
                };
                format!(
                    "{}; D2H checks {} pass, {} fail{moved}",
                    v.verdict_line, v.d2h_checks.pass, v.d2h_checks.fail
                )
            }
            None => format!("no summary (exit {}): {}", r.exit, r.stderr_tail),
        };
        writeln!(out, "[HRR] pid-{}: {line}", r.pid)?;
    }
    writeln!(out, "[HRR] All {} processes: {}", done.len(), tally(&done))?;
    Ok(worst)
}

/// The verdict of the worst process (`ERROR` when one printed no summary).
fn verdict_of(done: &[Replayed]) -> String {
    done.iter()
        .max_by_key(|r| r.exit)
        .and_then(|r| Some(r.json.as_ref()?.verdict.clone()))
        .unwrap_or_else(|| "ERROR".into())
}

/// `2 PASS, 1 MISMATCH`, in the order first seen.
fn tally(done: &[Replayed]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for r in done {
        let v = r
            .json
            .as_ref()
            .map_or("ERROR", |j| j.verdict.as_str())
            .to_string();
        match counts.iter_mut().find(|(k, _)| *k == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    counts
        .iter()
        .map(|(k, n)| format!("{n} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}
