//! `hrr-pack verify FILE|ARCHIVE`: exit 0 when every file checks out, 1 naming the bad files.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use hrr_archive::verify::{self, VerifyReport};

use crate::ui::{bytes, rate, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// A .hrr.tar.zst, or an archive folder (`-`: a pack on standard input).
    path: PathBuf,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    let _stdin;
    let a = if hrr_cli::is_dash(&a.path) {
        let (guard, p) = hrr_cli::stdin(".hrr.tar.zst")?;
        _stdin = guard;
        Args { path: p }
    } else {
        a
    };
    let meta = std::fs::metadata(&a.path).with_context(|| format!("{}", a.path.display()))?;
    let bar = ui.progress();
    let t0 = Instant::now();
    let (source, report): (&str, VerifyReport) = if meta.is_dir() {
        ("archive", verify::verify_dir(&a.path, &bar)?)
    } else {
        match verify::verify_pack(&a.path, &bar) {
            Ok((_, r)) => ("pack", r),
            // Damage that stops the stream (or an unsafe member) is a failed verification
            // naming the member, not a usage error.
            Err(e) => {
                let mut r = VerifyReport::default();
                let entry = e
                    .entry()
                    .map_or_else(|| a.path.display().to_string(), str::to_string);
                r.bad.push(verify::Finding {
                    path: entry,
                    problem: e.to_string(),
                });
                ("pack", r)
            }
        }
    };
    let secs = t0.elapsed().as_secs_f64();
    let code = if report.ok() { 0 } else { 1 };
    if ui.json {
        ui.json(&serde_json::json!({
            "schema": "hrr.verify/1", "ok": report.ok(), "path": a.path.display().to_string(),
            "source": source, "files_checked": report.files_checked,
            "bytes_checked": report.bytes_checked, "bad_files": report.bad_files(),
            "bad": report.bad, "warnings": report.warnings, "seconds": secs,
        }));
        return Ok(code);
    }
    let mut s = String::new();
    for f in &report.bad {
        writeln!(s, "BAD  {}: {}", f.path, f.problem)?;
    }
    for f in &report.warnings {
        writeln!(s, "warn {}: {}", f.path, f.problem)?;
    }
    if report.ok() {
        writeln!(
            s,
            "OK   {}: {} files ({}) hashed in {secs:.2} s ({}); objects match their ids; manifests consistent",
            a.path.display(),
            report.files_checked,
            bytes(report.bytes_checked),
            rate(report.bytes_checked, secs)
        )?;
    } else {
        let bad = report.bad_files();
        writeln!(
            s,
            "FAIL {}: {} bad file{}: {}",
            a.path.display(),
            bad.len(),
            if bad.len() == 1 { "" } else { "s" },
            bad.join(", ")
        )?;
    }
    ui.out(&s);
    Ok(code)
}
