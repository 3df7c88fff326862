//! One module per subcommand: parse flags, call the library, render.

pub mod image;
pub mod list;
pub mod pack;
pub mod pull;
pub mod push;
pub mod scan;
pub mod scrub;
pub mod unpack;
pub mod verify;

use std::collections::HashSet;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use hrr_pack::fingerprint::FingerprintKey;

/// The options `scan` and `scrub` share: what to leave alone, the fingerprint key, threads.
#[derive(clap::Args)]
pub struct SecretArgs {
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
    pub threads: usize,
}

impl SecretArgs {
    /// `--allow` and `--allow-file` read into one set (see [`allow_list`]).
    pub fn allow_list(&self) -> Result<HashSet<String>> {
        allow_list(&self.allow, &self.allow_file)
    }

    /// The fingerprint key (`--key-file`, else the default places).
    pub fn key(&self) -> Result<FingerprintKey> {
        FingerprintKey::resolve(self.key_file.as_deref())
    }
}

/// `--allow` entries, from the flag and from `--allow-file` (one per line, `#` comments, the
/// first word of a line counts): a fingerprint (`fp:` + 32 hex) leaves that one secret as it is
/// wherever it appears; a rule id (as `hrr-pack scan` prints it, e.g. `generic-secret`) leaves
/// every finding of that rule.
pub fn allow_list(allow: &[String], files: &[PathBuf]) -> Result<HashSet<String>> {
    let rules = hrr_pack::scan::rules::ids();
    let mut set: HashSet<String> = HashSet::new();
    let mut add = |fp: &str| -> Result<()> {
        let fp = fp.trim();
        if fp.is_empty() || fp.starts_with('#') {
            return Ok(());
        }
        if rules.contains(&fp) {
            set.insert(fp.to_string());
            return Ok(());
        }
        let hex = fp.strip_prefix("fp:").unwrap_or("");
        if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!(
                "`{fp}` is neither a fingerprint (fp: followed by 32 hex characters) nor a rule id (one of: {})",
                rules.join(", ")
            );
        }
        set.insert(fp.to_ascii_lowercase());
        Ok(())
    };
    for a in allow {
        for part in a.split(',') {
            add(part)?;
        }
    }
    for f in files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        for line in text.lines() {
            add(line.split_whitespace().next().unwrap_or(""))?;
        }
    }
    Ok(set)
}
