//! `hrr-pack verify FILE|ARCHIVE`: exit 0 when every file checks out, 1 naming the bad files.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use hrr_archive::verify::{self, VerifyReport};
use hrr_cli::json::{VerifyFindingJson, VerifyJson};

use crate::ui::{bytes, rate, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// A .hrr.tar.zst, or an archive folder (`-`: a pack on standard input).
    path: PathBuf,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    let input = hrr_cli::InputPath::new(&a.path, ".hrr.tar.zst")?;
    let shown = &input.shown;
    let meta =
        std::fs::metadata(&input.path).with_context(|| format!("{}", input.path.display()))?;
    let bar = ui.progress();
    let t0 = Instant::now();
    let (source, report): (&str, VerifyReport) = if meta.is_dir() {
        ("archive", verify::verify_dir(&input.path, &bar)?)
    } else {
        match verify::verify_pack(&input.path, &bar) {
            Ok((_, r)) => ("pack", r),
            // Damage that stops the stream (or an unsafe member) is a failed verification
            // naming the member, not a usage error.
            Err(e) => {
                let mut r = VerifyReport::default();
                let entry = e
                    .entry()
                    .map_or_else(|| input.path.display().to_string(), str::to_string);
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
        let findings = |v: &[verify::Finding]| {
            v.iter()
                .map(|f| VerifyFindingJson {
                    path: f.path.clone(),
                    problem: f.problem.clone(),
                })
                .collect()
        };
        ui.json(&VerifyJson {
            schema: "hrr.verify/1".into(),
            ok: report.ok(),
            path: shown.clone(),
            source: source.into(),
            files_checked: report.files_checked,
            bytes_checked: report.bytes_checked,
            objects_checked: report.objects_checked,
            bad_files: report.bad_files(),
            bad: findings(&report.bad),
            warnings: findings(&report.warnings),
            seconds: secs,
        });
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
            "OK   {shown}: {} files ({}) checked in {secs:.2} s ({}); {} object{} (blobs, code objects) match their ids; events.bin and manifests consistent",
            report.files_checked,
            bytes(report.bytes_checked),
            rate(report.bytes_checked, secs),
            report.objects_checked,
            if report.objects_checked == 1 { "" } else { "s" },
        )?;
    } else {
        let bad = report.bad_files();
        writeln!(
            s,
            "FAIL {shown}: {} bad file{}: {}",
            bad.len(),
            if bad.len() == 1 { "" } else { "s" },
            bad.join(", ")
        )?;
    }
    ui.out(&s);
    Ok(code)
}
