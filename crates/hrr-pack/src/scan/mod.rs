//! The secret scanner: one Aho-Corasick pass over the bytes finds the keywords of every rule (in
//! ASCII and UTF-16LE); each keyword hit is checked by its rules on a bounded window around it.
//! Runs of base64 text (standard or URL-safe alphabet, at least [`B64_MIN`] characters) are
//! decoded at each of their four possible alignments and scanned again, so a secret wrapped in
//! base64 (a kubeconfig's `client-key-data`, a docker `auth`, an env var holding a JSON blob) is
//! found too. Input is streamed in chunks of any size: the scanner keeps a look-behind and a
//! look-ahead around every 1 MiB it searches, so matches straddling chunk (read) boundaries are
//! found once.
//!
//! A finding carries where the secret is, the rule, the encoding, a keyed fingerprint, a redacted
//! preview, and the same-length replacement scrub writes (framing kept: PEM lines, `KEY=`, JWT
//! dots, token prefixes). Never the secret itself.
//!
//! This module owns the types ([`Scanner`], [`Stream`], [`Finding`]) and the compiling of the
//! rules into one keyword automaton. The work is spread by concern:
//! - `stream`: feeding chunks, finding keyword hits, matching rule regexes around them, and
//!   merging the findings of one file;
//! - `base64`: base64 decoding and the re-scan of base64 runs;
//! - `binary`: the parsers of binary key formats (DER, OpenSSH);
//! - `accept`: the acceptance tests a match must pass (entropy, words, checksums, JWT JSON);
//! - `redact`: previews and same-length replacements;
//! - `junction`: secrets straddling two blobs of one upload (neighbours told by the copies' events);
//! - [`rules`]: the rule list itself; [`archive`]: scanning whole archives, packs and folders.

mod accept;
pub mod archive;
mod base64;
mod binary;
mod junction;
mod redact;
pub mod rules;
mod stream;

use std::collections::HashSet;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use crate::fingerprint::FingerprintKey;
pub use accept::{entropy, wordlike};
pub use base64::b64_decode;
pub use redact::redact_text;
use rules::Rule;

/// How the secret was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Encoding {
    /// Bytes of text (ASCII / UTF-8).
    Ascii,
    /// UTF-16 little endian text.
    Utf16Le,
    /// A binary structure (DER, OpenSSH).
    Binary,
    /// Inside base64 text (the offsets and lengths are those of the base64 characters).
    Base64,
}

impl Encoding {
    /// The name used in reports and redactions.json.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Ascii => "ascii",
            Encoding::Utf16Le => "utf16le",
            Encoding::Binary => "binary",
            Encoding::Base64 => "base64",
        }
    }
}

/// One secret found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Rule id.
    pub rule: &'static str,
    /// Offset of the secret in the scanned file.
    pub offset: u64,
    /// Its length in bytes.
    pub length: u64,
    /// How it was stored.
    pub encoding: Encoding,
    /// Keyed fingerprint (`fp:` + 32 hex) of the secret (UTF-16 and base64 decoded first, so
    /// every encoding of one secret agrees).
    pub fingerprint: String,
    /// What it looks like with the secret part starred out (key name and token prefix kept),
    /// e.g. `GITHUB_TOKEN ghp_********… (40 bytes)`.
    pub preview: String,
    /// Offset of the bytes scrub overwrites.
    pub redact_offset: u64,
    /// What scrub writes there (same length; framing bytes are unchanged).
    pub replacement: Vec<u8>,
    order: usize,
    generic: bool,
}

impl Finding {
    /// The range scrub overwrites.
    pub fn redact_range(&self) -> std::ops::Range<u64> {
        self.redact_offset..self.redact_offset + self.replacement.len() as u64
    }
}

/// A match before its acceptance test.
struct Candidate {
    enc: Encoding,
    /// Offset of the secret.
    secret_off: u64,
    /// Its length in the file.
    secret_len: u64,
    /// The secret (UTF-16 decoded), for the test and the fingerprint.
    secret: Vec<u8>,
    /// The characters right before and after the secret (None: none, or not text).
    before: Option<u8>,
    after: Option<u8>,
    /// The key name (`k` group), for the test and the preview.
    key: Vec<u8>,
    preview: String,
    redact_off: u64,
    replacement: Vec<u8>,
}

impl Candidate {
    /// A secret in a binary structure (`what`, named in the preview): overwritten with zeros.
    fn binary(from: u64, secret: &[u8], what: &str) -> Candidate {
        Candidate {
            enc: Encoding::Binary,
            secret_off: from,
            secret_len: secret.len() as u64,
            secret: secret.to_vec(),
            before: None,
            after: None,
            key: Vec::new(),
            preview: format!("<{what}, {} bytes>", secret.len()),
            redact_off: from,
            replacement: vec![0u8; secret.len()],
        }
    }
}

/// Bytes searched per step.
const CHUNK: usize = 1 << 20;
/// Filler written over secret characters (valid in base64 and identifiers).
pub const FILLER: u8 = b'X';
/// Shortest base64 run decoded (18 bytes).
pub const B64_MIN: usize = 24;
/// Longest piece of a base64 run decoded at once; longer runs are decoded in overlapping pieces.
const B64_MAX: usize = 40 * 1024;
/// Step between the pieces of a long run (a power of two, so a multiple of 4).
const B64_STEP: usize = 32 * 1024;

struct Pattern {
    rules: Vec<usize>,
    utf16: bool,
    len: usize,
}

/// The compiled rules and keyword automaton; build once, scan many files.
pub struct Scanner {
    rules: Vec<Rule>,
    ac: AhoCorasick,
    patterns: Vec<Pattern>,
    lookback: usize,
    lookahead: usize,
    max_pattern: usize,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

/// Scanning of one file in progress: feed chunks, then [`Stream::finish`].
pub struct Stream<'s> {
    sc: &'s Scanner,
    key: &'s FingerprintKey,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    base: u64,
    /// Keyword hits before this file offset have been handled.
    head: u64,
    findings: Vec<Finding>,
    seen: HashSet<(usize, u64, Encoding)>,
    /// Decode base64 runs.
    b64: bool,
    /// Start of the base64 run the head is in.
    run_start: Option<u64>,
}

impl Scanner {
    /// Compile every rule of [`rules::all`].
    pub fn new() -> Self {
        let rules = rules::all();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut patterns: Vec<Pattern> = Vec::new();
        let mut add = |bytes: Vec<u8>, rule: usize, utf16: bool| {
            let folded = bytes.to_ascii_lowercase();
            if let Some(i) = keys.iter().position(|k| *k == folded) {
                if !patterns[i].rules.contains(&rule) {
                    patterns[i].rules.push(rule);
                }
            } else {
                patterns.push(Pattern {
                    rules: vec![rule],
                    utf16,
                    len: folded.len(),
                });
                keys.push(folded);
            }
        };
        for (i, r) in rules.iter().enumerate() {
            for k in &r.keywords {
                add(k.clone(), i, false);
                if r.text {
                    add(k.iter().flat_map(|&b| [b, 0]).collect(), i, true);
                }
            }
        }
        let ac = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&keys)
            .expect("keyword automaton builds");
        let max_pattern = keys.iter().map(Vec::len).max().unwrap_or(0);
        let lookback = rules.iter().map(|r| r.back).max().unwrap_or(0) * 2 + 16;
        let lookahead = (rules.iter().map(|r| r.fwd).max().unwrap_or(0) * 2 + max_pattern + 16)
            .max(B64_MAX + 16);
        Scanner {
            rules,
            ac,
            patterns,
            lookback,
            lookahead,
            max_pattern,
        }
    }

    /// The rule ids, in order (each once).
    pub fn rule_ids(&self) -> Vec<&'static str> {
        let mut ids: Vec<&'static str> = Vec::new();
        for r in &self.rules {
            if !ids.contains(&r.id) {
                ids.push(r.id);
            }
        }
        ids
    }

    /// Start scanning one file (or blob).
    pub fn stream<'s>(&'s self, key: &'s FingerprintKey) -> Stream<'s> {
        Stream {
            sc: self,
            key,
            buf: Vec::new(),
            base: 0,
            head: 0,
            findings: Vec::new(),
            seen: HashSet::new(),
            b64: true,
            run_start: None,
        }
    }

    /// Scan a whole buffer.
    pub fn scan_bytes(&self, key: &FingerprintKey, data: &[u8]) -> Vec<Finding> {
        let mut s = self.stream(key);
        s.feed(data);
        s.finish()
    }

    /// Scan decoded base64 (no further base64 decoding).
    fn scan_decoded(&self, key: &FingerprintKey, data: &[u8]) -> Vec<Finding> {
        let mut s = self.stream(key);
        s.b64 = false;
        s.feed(data);
        s.finish()
    }
}
