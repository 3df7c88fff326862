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
