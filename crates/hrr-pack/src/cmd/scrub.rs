//! `hrr-pack scrub ARCHIVE [-o OUT] [--allow FP]`.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use hrr_cli::json::{ScrubEventsJson, ScrubJson, ScrubObjectJson};
use hrr_pack::fingerprint::FingerprintKey;
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
    /// Known false positives to leave alone (repeatable, or comma-separated): a fingerprint
    /// (`fp:` + 32 hex, as scan prints it) for one secret, or a rule id (`generic-secret`, ...)
    /// for every finding of that rule.
    #[arg(long, value_name = "FP|RULE")]
    allow: Vec<String>,
    /// File of `--allow` entries (fingerprints or rule ids), one per line; `#` starts a comment.
    #[arg(long, value_name = "FILE")]
    allow_file: Vec<PathBuf>,
    /// Fingerprint key file (default: $HRR_FINGERPRINT_KEY_FILE, else ~/.config/hrr/fingerprint.key).
    #[arg(long, value_name = "FILE")]
    key_file: Option<PathBuf>,
    /// Scan threads (0: one per core).
    #[arg(short = 'T', long, default_value_t = 0)]
    threads: usize,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    let opts = ScrubOptions {
        out: a.output.clone(),
        allow: super::allow_list(&a.allow, &a.allow_file)?,
        threads: a.threads,
    };
    let key = FingerprintKey::resolve(a.key_file.as_deref())?;
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
    if !r.changed {
        writeln!(
            s,
            "nothing to scrub: {} is already scrubbed and no secret was found ({} files, {})",
            r.archive.display(),
            r.scan.files_scanned,
            bytes(r.scan.bytes_scanned)
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
                "scrubbed {}: no secret found ({} files, {}); archive marked scrubbed ({secs:.2} s)",
                r.archive.display(),
                r.scan.files_scanned,
                bytes(r.scan.bytes_scanned)
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
