//! `hrr-pack scan ARCHIVE|PACK|FILE`: where the secrets are (file, offset, length, rule,
//! encoding, keyed fingerprint, a preview with the secret starred out), never what they are.
//! Every file of an archive is scanned (blobs, code objects, events.bin, manifests, regions,
//! anything else `pack` would ship). Exit 3 when something is found.
//!
//! Known false positives: `--allow fp:<32 hex>` leaves one secret (the fingerprint is keyed, so
//! it is stable for one fingerprint key), `--allow <rule id>` every finding of a rule;
//! `--allow-file FILE` reads such entries one per line (`#` comments), like `.gitleaksignore`.

use std::fmt::Write;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use hrr_cli::json::{ScanFindingJson, ScanJson};
use hrr_pack::scan::archive::{scan_path, ScanWith, Source};
use hrr_pack::scan::Scanner;

use crate::ui::{bytes, rate, Ui};

/// Exit status when secrets were found.
pub const FOUND: i32 = 3;

#[derive(clap::Args)]
pub struct Args {
    /// An archive folder, a .hrr.tar.zst, or any file (`-`: standard input).
    path: PathBuf,
    #[command(flatten)]
    secrets: super::SecretArgs,
}

pub fn run(a: Args, ui: &Ui) -> Result<i32> {
    let input = hrr_cli::InputPath::new(&a.path, "")?;
    let allow = a.secrets.allow_list()?;
    let key = a.secrets.key()?;
    let scanner = Scanner::new();
    let bar = ui.progress();
    let t0 = Instant::now();
    let with = ScanWith {
        scanner: &scanner,
        key: &key,
        allow: &allow,
        threads: a.secrets.threads,
    };
    let (source, report) = scan_path(&with, &input.path, &bar)?;
    let secs = t0.elapsed().as_secs_f64();
    let found = report.found();
    let code = if found > 0 { FOUND } else { 0 };
    let source = match source {
        Source::Archive => "archive",
        Source::Pack => "pack",
        Source::File => "file",
    };
    if ui.json {
        let findings = report
            .files
            .iter()
            .flat_map(|f| {
                f.findings.iter().map(move |x| ScanFindingJson {
                    file: f.path.clone(),
                    object: f.object.map(|(id, _)| id.to_hex()),
                    offset: x.offset,
                    length: x.length,
                    rule: x.rule.to_string(),
                    encoding: x.encoding.as_str().to_string(),
                    fingerprint: x.fingerprint.clone(),
                    preview: x.preview.clone(),
                })
            })
            .collect();
        ui.json(&ScanJson {
            schema: "hrr.scan/1".into(),
            ok: true,
            path: input.shown,
            source: source.into(),
            found: found as u64,
            files_with_findings: report.files.len() as u64,
            files_scanned: report.files_scanned,
            bytes_scanned: report.bytes_scanned,
            allowed: report.allowed,
            key_id: key.id.clone(),
            seconds: secs,
            findings,
        });
        return Ok(code);
    }
    let mut s = String::new();
    for f in &report.files {
        for x in &f.findings {
            writeln!(
                s,
                "{}  offset {}  length {}  {}  {}  {}  {}",
                f.path,
                x.offset,
                x.length,
                x.rule,
                x.encoding.as_str(),
                x.fingerprint,
                x.preview
            )?;
        }
    }
    let allowed = if report.allowed > 0 {
        format!("; {} left by --allow", report.allowed)
    } else {
        String::new()
    };
    if found > 0 {
        writeln!(
            s,
            "scan: {found} secret{} in {} of {} files ({} scanned in {secs:.2} s, {}){allowed}; `hrr-pack scrub` redacts them",
            if found == 1 { "" } else { "s" },
            report.files.len(),
            report.files_scanned,
            bytes(report.bytes_scanned),
            rate(report.bytes_scanned, secs),
        )?;
    } else {
        writeln!(
            s,
            "scan: no secrets found in {} files ({} scanned in {secs:.2} s, {}){allowed}",
            report.files_scanned,
            bytes(report.bytes_scanned),
            rate(report.bytes_scanned, secs),
        )?;
    }
    ui.out(&s);
    Ok(code)
}
