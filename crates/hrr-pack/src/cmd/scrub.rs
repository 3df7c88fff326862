//! `hrr-pack scrub ARCHIVE [-o OUT] [--allow FP]`.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use hrr_cli::json::{ScrubEventsJson, ScrubJson, ScrubObjectJson};
use hrr_pack::scan::Scanner;
use hrr_pack::scrub::{scrub, ScrubOptions};

use crate::ui::{bytes, Ui};

#[derive(clap::Args)]
pub struct Args {
    /// The archive folder (a root, or one pid-<pid>/).
    archive: PathBuf,
    /// Write the scrubbed archive to this new folder instead of replacing the original.
    #[arg(short, long)]
    output: Option<PathBuf>,
    #[command(flatten)]
    secrets: super::SecretArgs,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    let opts = ScrubOptions {
        out: a.output.clone(),
        allow: a.secrets.allow_list()?,
        threads: a.secrets.threads,
    };
    let key = a.secrets.key()?;
    let scanner = Scanner::new();
    let bar = ui.progress();
    let t0 = Instant::now();
    let r = scrub(&scanner, &key, &a.archive, &opts, &bar)?;
    let secs = t0.elapsed().as_secs_f64();
    let found = r.scan.found();
    if ui.json {
        ui.json(&ScrubJson {
            schema: "hrr.scrub/1".into(),
            ok: r.not_redacted.is_empty(),
            archive: r.archive.display().to_string(),
            changed: r.changed,
            redacted: found as u64,
            allowed: r.scan.allowed,
            files_scanned: r.scan.files_scanned,
            bytes_scanned: r.scan.bytes_scanned,
            objects: r
                .objects
                .iter()
                .map(|o| ScrubObjectJson {
                    path: o.path.clone(),
                    new_path: o.new_path.clone(),
                    ranges: o.ranges as u64,
                })
                .collect(),
            events: r
                .events
                .iter()
                .map(|(p, refs, ranges)| ScrubEventsJson {
                    path: p.clone(),
                    references: *refs,
                    ranges: *ranges as u64,
                })
                .collect(),
            not_redacted: r.not_redacted.clone(),
            recovered: r.recovered.clone(),
            key_id: key.id.clone(),
            seconds: secs,
        });
        return Ok(if r.not_redacted.is_empty() { 0 } else { 1 });
    }
    for line in &r.recovered {
        eprintln!("hrr-pack: {line}");
    }
    let mut s = String::new();
    let scanned = format!(
        "{} files, {}",
        r.scan.files_scanned,
        bytes(r.scan.bytes_scanned)
    );
    if !r.changed {
        writeln!(
            s,
            "nothing to scrub: {} is already scrubbed and no secret was found ({scanned})",
            r.archive.display(),
        )?;
    } else {
        for o in &r.objects {
            writeln!(
                s,
                "redacted {} range(s): {} -> {}",
                o.ranges, o.path, o.new_path
            )?;
        }
        for (p, refs, ranges) in &r.events {
            writeln!(
                s,
                "rewrote {p}: {refs} reference(s) repointed, {ranges} range(s) redacted"
            )?;
        }
        for n in &r.not_redacted {
            writeln!(s, "NOT REDACTED {n}")?;
        }
        if found == 0 {
            writeln!(
                s,
                "scrubbed {}: no secret found ({scanned}); archive marked scrubbed ({secs:.2} s)",
                r.archive.display(),
            )?;
        } else {
            writeln!(
                s,
                "scrubbed {}: {found} secret{} redacted in {} object(s){}; redactions.json written, archive marked scrubbed ({secs:.2} s)",
                r.archive.display(),
                if found == 1 { "" } else { "s" },
                r.objects.len() + r.events.len(),
                if r.scan.allowed > 0 {
                    format!(", {} left by --allow", r.scan.allowed)
                } else {
                    String::new()
                },
            )?;
        }
    }
    ui.out(&s);
    Ok(if r.not_redacted.is_empty() { 0 } else { 1 })
}
