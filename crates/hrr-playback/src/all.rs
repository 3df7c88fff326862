//! `hrr-playback ROOT --all`: every process of an archive replayed together, one replay process
//! (this program on the process's `pid-<pid>/` folder, with the other flags given) per recorded
//! process, all started at once and sharing a rendezvous folder ([`crate::replay::peers`]): IPC handles
//! one process exported are re-paired with the opens of another (memory shared as file
//! descriptors by the pairs [`crate::replay::pairing`] writes first), and results are read in
//! the order the recording read them. Once a process failed, one that makes no progress for
//! [`GRACE_AFTER_FAILURE`] is stopped (HANG). The summary: each process's verdict, then the
//! totals; exit code: the worst of the processes' (ERROR 5 > HANG 4 > FAULT 3 > MISMATCH 1 >
//! PASS 0).
//!
//! `--json` prints one object: `schema` (`hrr.replay-all/1`), `processes` (per process: `pid`,
//! `exit_code`, `replay`: its own replay object, or null when it printed none, `stopped` where
//! it was stopped), `verdict`, `exit_code`, `ok`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use hrr_cli::json::{ReplayAllJson, ReplayJson, ReplayedProcessJson};

use crate::replay::peers::{mark_ended, progress_file, PEERS_ENV};

/// One process's replay, as its replay process reported it.
struct Replayed {
    pid: u32,
    exit: u8,
    json: Option<ReplayJson>,
    stderr_tail: String,
    /// Why `--all` stopped it (it made no progress after another process failed).
    stopped: Option<String>,
}

/// The exit code of a replay stopped for making no progress (HANG's).
const HANG_EXIT: u8 = 4;

/// How long a replay process may make no progress once another one failed before it is
/// stopped: a kernel waiting for a peer that died (a collective) never returns.
const GRACE_AFTER_FAILURE: Duration = Duration::from_secs(10);

/// Wait for every replay process of `children` (pid, child) at once, each on a thread of its
/// own (one after another, a process whose output pipe filled could stop while the others
/// waited for it). Once one has failed, a process whose progress slot in `rendezvous` stays
/// the same for [`GRACE_AFTER_FAILURE`] is killed: their outputs, in order, and why each was
/// stopped.
fn watch(
    children: Vec<(u32, std::process::Child)>,
    rendezvous: &Path,
) -> Result<(Vec<std::process::Output>, Vec<Option<String>>)> {
    let n = children.len();
    let ids: Vec<(u32, u32)> = children.iter().map(|(p, c)| (*p, c.id())).collect();
    let (tx, rx) = std::sync::mpsc::channel();
    for (i, (pid, child)) in children.into_iter().enumerate() {
        let tx = tx.clone();
        std::thread::Builder::new()
            .name(format!("hrr-all-{pid}"))
            .spawn(move || {
                let o = child
                    .wait_with_output()
                    .with_context(|| format!("waiting for the replay of pid-{pid}"));
                let _ = tx.send((i, o));
            })
            .context("starting a waiting thread")?;
    }
    drop(tx);
    let mut outputs: Vec<Option<std::process::Output>> = (0..n).map(|_| None).collect();
    let mut stopped: Vec<Option<String>> = vec![None; n];
    let mut failed: Option<(u32, Instant)> = None;
    // progress seen per process: (slot value, since when)
    let mut progress: Vec<(Option<u64>, Instant)> = vec![(None, Instant::now()); n];
    while outputs.iter().any(Option::is_none) {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok((i, o)) => {
                mark_ended(rendezvous, ids[i].0);
                let o = o?;
                if failed.is_none() && stopped[i].is_none() && !o.status.success() {
                    failed = Some((ids[i].0, Instant::now()));
                }
                outputs[i] = Some(o);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let Some((failed_pid, at)) = failed else {
            continue;
        };
        for i in 0..n {
            if outputs[i].is_some() || stopped[i].is_some() {
                continue;
            }
            let slot = std::fs::read(progress_file(rendezvous, ids[i].0))
                .ok()
                .and_then(|b| <[u8; 8]>::try_from(&b[..]).ok())
                .map(u64::from_ne_bytes);
            if slot != progress[i].0 {
                progress[i] = (slot, Instant::now());
            }
            let still = progress[i].1.max(at).elapsed();
            if still >= GRACE_AFTER_FAILURE {
                // SAFETY: signalling a child this process started and has not reaped.
                unsafe { libc::kill(ids[i].1 as libc::pid_t, libc::SIGKILL) };
                stopped[i] = Some(format!(
                    "stopped: no progress for {} s after pid-{failed_pid} failed (waiting for it on the GPU?)",
                    still.as_secs()
                ));
            }
        }
    }
    let outputs = outputs
        .into_iter()
        .map(|o| o.ok_or_else(|| anyhow::anyhow!("a replay process was not waited for")))
        .collect::<Result<Vec<_>>>()?;
    Ok((outputs, stopped))
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
    let (outputs, stopped) = watch(children, rendezvous.path())?;
    let mut done = Vec::new();
    for (((pid, _), o), stop) in processes.iter().zip(outputs).zip(stopped) {
        let stderr = String::from_utf8_lossy(&o.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        let exit = match stop {
            Some(_) => HANG_EXIT,
            None => o.status.code().map_or(5, |c| c as u8),
        };
        done.push(Replayed {
            pid: *pid,
            exit,
            json: serde_json::from_slice(&o.stdout).ok(),
            stderr_tail: tail.into_iter().rev().collect::<Vec<_>>().join(" | "),
            stopped: stop,
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
                    stopped: r.stopped,
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
            None => match &r.stopped {
                Some(why) => format!("HANG: {why}"),
                None => format!("no summary (exit {}): {}", r.exit, r.stderr_tail),
            },
        };
        writeln!(out, "[HRR] pid-{}: {line}", r.pid)?;
    }
    writeln!(out, "[HRR] All {} processes: {}", done.len(), tally(&done))?;
    Ok(worst)
}

/// A process's verdict: its summary's, `HANG` when `--all` stopped it, else `ERROR` (it
/// printed no summary).
fn verdict(r: &Replayed) -> &str {
    match (&r.json, &r.stopped) {
        (Some(j), _) => j.verdict.as_str(),
        (None, Some(_)) => "HANG",
        (None, None) => "ERROR",
    }
}

/// The verdict of the worst process.
fn verdict_of(done: &[Replayed]) -> String {
    done.iter()
        .max_by_key(|r| r.exit)
        .map_or("ERROR", verdict)
        .to_string()
}

/// `2 PASS, 1 MISMATCH`, in the order first seen.
fn tally(done: &[Replayed]) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for r in done {
        let v = verdict(r).to_string();
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
