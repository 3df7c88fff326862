//! Keyed fingerprints of secrets: BLAKE3 in keyed mode over the secret, 128 bits, written
//! `fp:<32 hex>`. The key stays on the machine that scans (a file, 0600), so fingerprints shipped
//! in `redactions.json` cannot be used to test guesses of a secret; the same key gives the same
//! fingerprint on every run, which is what `--allow` needs.

use std::io::{Read, Write};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Environment variable naming the key file.
pub const KEY_FILE_ENV: &str = "HRR_FINGERPRINT_KEY_FILE";

/// A fingerprint key.
pub struct FingerprintKey {
    key: [u8; 32],
    /// Identifies the key without revealing it (16 hex).
    pub id: String,
}

impl std::fmt::Debug for FingerprintKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FingerprintKey({})", self.id)
    }
}

impl FingerprintKey {
    /// A key from 32 bytes.
    pub fn from_bytes(key: [u8; 32]) -> Self {
        let id = blake3::derive_key("hrr fingerprint key id v1", &key);
        FingerprintKey {
            key,
            id: hrr_archive::schema::hex(&id[..8]),
        }
    }

    /// A fresh random key (fingerprints then only compare within one run).
    pub fn random() -> Result<Self> {
        let mut key = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .context("reading /dev/urandom")?;
        Ok(Self::from_bytes(key))
    }

    /// Where the key lives: `$HRR_FINGERPRINT_KEY_FILE`, else
    /// `$XDG_CONFIG_HOME/hrr/fingerprint.key`, else `~/.config/hrr/fingerprint.key`.
    pub fn default_path() -> Option<PathBuf> {
        if let Some(p) = std::env::var_os(KEY_FILE_ENV).filter(|p| !p.is_empty()) {
            return Some(PathBuf::from(p));
        }
        let config = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|p| !p.is_empty())
                    .map(|h| PathBuf::from(h).join(".config"))
            })?;
        Some(config.join("hrr").join("fingerprint.key"))
    }

    /// Load the key at `path`, creating it (random, 0600, folder 0700) if missing.
    pub fn load_or_create(path: &Path) -> Result<Self> {
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let t = text.trim();
                let id = hrr_archive::ObjectId::from_hex(&t[..t.len().min(32)]);
                let id2 = hrr_archive::ObjectId::from_hex(t.get(32..).unwrap_or(""));
                match (t.len(), id, id2) {
                    (64, Some(a), Some(b)) => {
                        let mut key = [0u8; 32];
                        key[..16].copy_from_slice(&a.0);
                        key[16..].copy_from_slice(&b.0);
                        Ok(Self::from_bytes(key))
                    }
                    _ => bail!(
                        "{}: not a fingerprint key (64 lower-case hex characters expected)",
                        path.display()
                    ),
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key = Self::random()?;
                if let Some(dir) = path.parent() {
                    std::fs::DirBuilder::new()
                        .recursive(true)
                        .mode(0o700)
                        .create(dir)
                        .with_context(|| format!("creating {}", dir.display()))?;
                }
                // Written whole under a temporary name, then linked into place only if no
                // key is there yet: two first runs at once agree on one key.
                let dir = path.parent().unwrap_or(Path::new("."));
                let mut tmp = tempfile::Builder::new()
                    .prefix(".fingerprint-")
                    .tempfile_in(dir)
                    .with_context(|| format!("creating a key file in {}", dir.display()))?;
                writeln!(tmp, "{}", hrr_archive::schema::hex(&key.key))
                    .with_context(|| format!("writing {}", path.display()))?;
                match tmp.persist_noclobber(path) {
                    Ok(_) => {}
                    Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                        return Self::load_or_create(path); // another run made it first
                    }
                    Err(e) => {
                        return Err(e.error).with_context(|| format!("creating {}", path.display()))
                    }
                }
                Ok(key)
            }
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    }

    /// The key to use: `path` if given, else [`Self::default_path`]; a random key (with a note
    /// on stderr) when there is no home to keep one in.
    pub fn resolve(path: Option<&Path>) -> Result<Self> {
        match path.map(Path::to_path_buf).or_else(Self::default_path) {
            Some(p) => Self::load_or_create(&p),
            None => {
                eprintln!("hrr-pack: no HOME or {KEY_FILE_ENV}: fingerprints use a one-run key (--allow will not match them later)");
                Self::random()
            }
        }
    }

    /// The fingerprint of `secret`.
    pub fn fingerprint(&self, secret: &[u8]) -> String {
        let h = blake3::keyed_hash(&self.key, secret);
        format!("fp:{}", hrr_archive::schema::hex(&h.as_bytes()[..16]))
    }
}
