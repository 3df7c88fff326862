//! # hrr-pack
//!
//! The library behind the `hrr-pack` binary: the secret scanner ([`scan`]: rules, streaming
//! engine, archive and pack walks), scrub ([`scrub`]) and keyed fingerprints
//! ([`fingerprint`]). The packed form itself (`.hrr.tar.zst`: pack, unpack, list, verify) is part
//! of the archive format and lives in `hrr_archive::pack`.
//!
//! ```
//! use hrr_pack::{fingerprint::FingerprintKey, scan::Scanner};
//! let scanner = Scanner::new();
//! let key = FingerprintKey::from_bytes([7; 32]);
//! let token = b"GITHUB_TOKEN=ghp_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5\0";
//! let found = scanner.scan_bytes(&key, token);
//! assert_eq!(found[0].rule, "github-token");
//! assert_eq!(found[0].offset, 13);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod fingerprint;
pub mod image;
pub mod scan;
pub mod scrub;
