//! The secret scanner: one Aho-Corasick pass over the bytes finds the keywords of every rule (in
//! ASCII and UTF-16LE); each keyword hit is checked by its rules on a bounded window around it.
//! Input is streamed in chunks of any size: the scanner keeps a look-behind and a look-ahead
//! around every 1 MiB it searches, so matches straddling chunk boundaries are found once.
//!
//! A finding carries where the secret is, the rule, the encoding, a keyed fingerprint, and the
//! same-length replacement scrub writes (framing kept: PEM lines, `KEY=`, JWT dots, token
//! prefixes). Never the secret itself.

pub mod archive;
pub mod rules;

use std::collections::HashSet;

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

use crate::fingerprint::FingerprintKey;
use rules::{Check, DerForm, Matcher, Rule};

/// How the secret was stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Encoding {
    /// Bytes of text (ASCII / UTF-8).
    Ascii,
    /// UTF-16 little endian text.
    Utf16Le,
    /// A binary structure (DER, OpenSSH).
    Binary,
}

impl Encoding {
    /// The name used in reports and redactions.json.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Ascii => "ascii",
            Encoding::Utf16Le => "utf16le",
            Encoding::Binary => "binary",
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
    /// Keyed fingerprint (`fp:` + 32 hex) of the secret (UTF-16 decoded first, so both
    /// encodings of one secret agree).
    pub fingerprint: String,
    /// Offset of the bytes scrub overwrites.
    pub redact_offset: u64,
    /// What scrub writes there (same length; framing bytes are unchanged).
    pub replacement: Vec<u8>,
    order: usize,
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
    /// The secret (UTF-16 decoded), for the test and the fingerprint.
    secret: Vec<u8>,
    redact_off: u64,
    replacement: Vec<u8>,
}

/// Bytes searched per step.
const CHUNK: usize = 1 << 20;
/// Filler written over secret characters (valid in base64 and identifiers).
pub const FILLER: u8 = b'X';

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
        let lookahead = rules.iter().map(|r| r.fwd).max().unwrap_or(0) * 2 + max_pattern + 16;
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
        }
    }

    /// Scan a whole buffer.
    pub fn scan_bytes(&self, key: &FingerprintKey, data: &[u8]) -> Vec<Finding> {
        let mut s = self.stream(key);
        s.feed(data);
        s.finish()
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
}

impl Stream<'_> {
    /// Feed the next bytes of the file.
    pub fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
        self.process(false);
    }

    /// Bytes fed so far.
    pub fn position(&self) -> u64 {
        self.base + self.buf.len() as u64
    }

    /// End of the file: scan what is left and return the findings, sorted by offset, without
    /// findings that lie inside another (the more specific or larger one is kept).
    pub fn finish(mut self) -> Vec<Finding> {
        self.process(true);
        let mut f = std::mem::take(&mut self.findings);
        f.sort_by(|a, b| {
            a.offset
                .cmp(&b.offset)
                .then(b.length.cmp(&a.length))
                .then(a.order.cmp(&b.order))
        });
        let mut kept: Vec<Finding> = Vec::with_capacity(f.len());
        let mut max_end = 0u64;
        for x in f {
            let end = x.offset + x.length;
            if !kept.is_empty() && end <= max_end {
                continue;
            }
            max_end = max_end.max(end);
            kept.push(x);
        }
        kept
    }

    fn process(&mut self, last: bool) {
        let sc = self.sc;
        loop {
            let end = self.position();
            let limit = if last {
                end
            } else {
                end.saturating_sub(sc.lookahead as u64)
            };
            if self.head >= limit || (!last && limit - self.head < CHUNK as u64) {
                break;
            }
            let chunk_end = (self.head + CHUNK as u64).min(limit);
            let from = (self.head - self.base) as usize;
            let to = ((chunk_end + sc.max_pattern as u64).min(end) - self.base) as usize;
            let mut hits = Vec::new();
            for m in sc.ac.find_overlapping_iter(&self.buf[from..to]) {
                let abs = self.head + m.start() as u64;
                if abs < chunk_end {
                    hits.push((m.pattern().as_usize(), abs));
                }
            }
            for (p, abs) in hits {
                self.check_hit(p, abs);
            }
            self.head = chunk_end;
            let keep_from = self.head.saturating_sub(sc.lookback as u64);
            if keep_from > self.base {
                let n = (keep_from - self.base) as usize;
                self.buf.drain(..n);
                self.base = keep_from;
            }
        }
    }

    fn check_hit(&mut self, pattern: usize, abs: u64) {
        let sc = self.sc;
        let pat = &sc.patterns[pattern];
        for &ri in &pat.rules {
            let rule = &sc.rules[ri];
            let found = match &rule.matcher {
                Matcher::Regex(re) => {
                    if pat.utf16 {
                        self.regex_utf16(ri, re, abs, pat.len)
                    } else {
                        self.regex_ascii(ri, re, abs, pat.len)
                    }
                }
                Matcher::Der(form) => self.der(*form, abs),
                Matcher::OpenSsh => self.openssh(abs),
            };
            for Candidate {
                enc,
                secret_off,
                secret,
                redact_off,
                replacement,
            } in found
            {
                if !self.seen.insert((ri, secret_off, enc)) {
                    continue;
                }
                if !accept(rule.check, &secret) {
                    continue;
                }
                self.findings.push(Finding {
                    rule: rule.id,
                    offset: secret_off,
                    length: if enc == Encoding::Utf16Le {
                        secret.len() as u64 * 2
                    } else {
                        secret.len() as u64
                    },
                    encoding: enc,
                    fingerprint: self.key.fingerprint(&secret),
                    redact_offset: redact_off,
                    replacement,
                    order: ri,
                });
            }
        }
    }

    fn window(&self, abs: u64, back: usize, fwd: usize) -> (u64, &[u8]) {
        let start = abs.saturating_sub(back as u64).max(self.base);
        let end = (abs + fwd as u64).min(self.position());
        (
            start,
            &self.buf[(start - self.base) as usize..(end - self.base) as usize],
        )
    }

    fn regex_ascii(
        &self,
        ri: usize,
        re: &regex::bytes::Regex,
        abs: u64,
        klen: usize,
    ) -> Vec<Candidate> {
        let rule = &self.sc.rules[ri];
        let (start, win) = self.window(abs, rule.back, rule.fwd);
        let hit = (abs - start) as usize;
        let mut out = Vec::new();
        for caps in re.captures_iter(win) {
            let m = caps.get(0).expect("group 0");
            if m.start() > hit {
                break;
            }
            if m.end() < hit + klen {
                continue;
            }
            let s = caps.name("s").unwrap_or(m);
            let r = caps.name("r").unwrap_or(s);
            let replacement = redact_text(r.as_bytes());
            out.push(Candidate {
                enc: Encoding::Ascii,
                secret_off: start + s.start() as u64,
                secret: s.as_bytes().to_vec(),
                redact_off: start + r.start() as u64,
                replacement,
            });
        }
        out
    }

    fn regex_utf16(
        &self,
        ri: usize,
        re: &regex::bytes::Regex,
        abs: u64,
        klen: usize,
    ) -> Vec<Candidate> {
        let rule = &self.sc.rules[ri];
        let buf = &self.buf;
        let base = self.base;
        let end = self.position();
        let is_text = |i: u64| -> bool {
            let b = buf[(i - base) as usize];
            let z = buf[(i + 1 - base) as usize];
            z == 0 && matches!(b, b'\t' | b'\n' | b'\r' | 0x20..=0x7E)
        };
        let mut lo = abs;
        let mut n = 0;
        while n < rule.back && lo >= base + 2 && is_text(lo - 2) {
            lo -= 2;
            n += 1;
        }
        let mut hi = abs;
        let mut n = 0;
        while n < rule.fwd && hi + 1 < end && is_text(hi) {
            hi += 2;
            n += 1;
        }
        let text: Vec<u8> = (lo..hi)
            .step_by(2)
            .map(|i| buf[(i - base) as usize])
            .collect();
        let hit = ((abs - lo) / 2) as usize;
        let kchars = klen / 2;
        let mut out = Vec::new();
        for caps in re.captures_iter(&text) {
            let m = caps.get(0).expect("group 0");
            if m.start() > hit {
                break;
            }
            if m.end() < hit + kchars {
                continue;
            }
            let s = caps.name("s").unwrap_or(m);
            let r = caps.name("r").unwrap_or(s);
            let replacement: Vec<u8> = redact_text(r.as_bytes())
                .into_iter()
                .flat_map(|b| [b, 0])
                .collect();
            out.push(Candidate {
                enc: Encoding::Utf16Le,
                secret_off: lo + 2 * s.start() as u64,
                secret: s.as_bytes().to_vec(),
                redact_off: lo + 2 * r.start() as u64,
                replacement,
            });
        }
        out
    }

    fn bytes_at(&self, from: u64, len: usize) -> Option<&[u8]> {
        if from < self.base {
            return None;
        }
        let s = (from - self.base) as usize;
        self.buf.get(s..s.checked_add(len)?)
    }

    fn der(&self, form: DerForm, abs: u64) -> Vec<Candidate> {
        // (start of the structure, its total length, where the secret part starts)
        let parsed: Option<(u64, usize, u64)> = (|| match form {
            DerForm::Pkcs1Rsa | DerForm::Pkcs8Long => {
                let start = abs.checked_sub(4)?;
                let h = self.bytes_at(start, 4)?;
                if h[0] != 0x30 || h[1] != 0x82 {
                    return None;
                }
                let total = 4 + ((h[2] as usize) << 8 | h[3] as usize);
                Some((start, total, start + 4))
            }
            DerForm::Pkcs8Short => {
                let start = abs.checked_sub(3)?;
                let h = self.bytes_at(start, 3)?;
                if h[0] != 0x30 || h[1] != 0x81 {
                    return None;
                }
                Some((start, 3 + h[2] as usize, start + 3))
            }
            DerForm::Pkcs8Ed25519 => Some((abs, 48, abs + 16)),
            DerForm::Sec1P256 => Some((abs, 121, abs + 7)),
        })();
        let Some((start, total, secret_from)) = parsed else {
            return Vec::new();
        };
        if total < 40 {
            return Vec::new();
        }
        let secret_len = match form {
            DerForm::Sec1P256 => 32,
            _ => (start + total as u64 - secret_from) as usize,
        };
        let avail = (self.position().saturating_sub(secret_from) as usize).min(secret_len);
        let Some(secret) = self.bytes_at(secret_from, avail) else {
            return Vec::new();
        };
        vec![Candidate {
            enc: Encoding::Binary,
            secret_off: secret_from,
            secret: secret.to_vec(),
            redact_off: secret_from,
            replacement: vec![0u8; secret.len()],
        }]
    }

    fn openssh(&self, abs: u64) -> Vec<Candidate> {
        // magic, then string cipher, string kdf, string kdf options, u32 count, count public-key
        // strings, then the private section (a string): that section is the secret.
        let mut pos = abs + 15;
        let read_u32 = |pos: &mut u64| -> Option<u32> {
            let b = self.bytes_at(*pos, 4)?;
            *pos += 4;
            Some(u32::from_be_bytes(b.try_into().ok()?))
        };
        let parsed = (|| {
            for limit in [64u32, 64, 1024] {
                let n = read_u32(&mut pos)?;
                if n > limit {
                    return None;
                }
                pos += n as u64;
            }
            let keys = read_u32(&mut pos)?;
            if keys == 0 || keys > 16 {
                return None;
            }
            for _ in 0..keys {
                let n = read_u32(&mut pos)?;
                if n > 16_384 {
                    return None;
                }
                pos += n as u64;
            }
            let n = read_u32(&mut pos)?;
            if n == 0 || n > 65_536 {
                return None;
            }
            Some((pos, n as usize))
        })();
        let Some((from, len)) = parsed else {
            return Vec::new();
        };
        let avail = (self.position().saturating_sub(from) as usize).min(len);
        let Some(secret) = self.bytes_at(from, avail) else {
            return Vec::new();
        };
        vec![Candidate {
            enc: Encoding::Binary,
            secret_off: from,
            secret: secret.to_vec(),
            redact_off: from,
            replacement: vec![0u8; secret.len()],
        }]
    }
}

/// Shannon entropy of `b` in bits per byte.
pub fn entropy(b: &[u8]) -> f64 {
    if b.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for &x in b {
        counts[x as usize] += 1;
    }
    let n = b.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

fn accept(check: Check, secret: &[u8]) -> bool {
    match check {
        Check::Entropy(min) => entropy(secret) >= min,
        Check::Generic => {
            let len = secret.len() as f64;
            let min = (0.85 * len.log2()).min(3.5);
            let classes = [
                secret.iter().any(u8::is_ascii_lowercase),
                secret.iter().any(u8::is_ascii_uppercase),
                secret.iter().any(u8::is_ascii_digit),
            ]
            .iter()
            .filter(|&&c| c)
            .count();
            entropy(secret) >= min && classes >= 2
        }
        Check::Password => {
            !secret.is_empty()
                && !secret.iter().all(|&b| b == FILLER || b == b'*')
                && !secret.starts_with(b"$")
                && !secret.starts_with(b"%")
                && !secret.starts_with(b"{")
        }
    }
}

/// Same-length replacement of secret text: every character becomes [`FILLER`] except the
/// framing (`.`, `=`, whitespace, and a backslash with the character it escapes, so JSON `\n`
/// stays an escape).
pub fn redact_text(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut escaped = false;
    for &b in s {
        if escaped {
            out.push(b);
            escaped = false;
        } else if b == b'\\' {
            out.push(b);
            escaped = true;
        } else if matches!(b, b'.' | b'=' | b' ' | b'\t' | b'\n' | b'\r') {
            out.push(b);
        } else {
            out.push(FILLER);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_framing() {
        assert_eq!(redact_text(b"ab.cd=\\nx"), b"XX.XX=\\nX");
        assert!(entropy(b"XXXXXXXX") < 0.1);
        assert!(entropy(b"aZ3kq9Lm2Pq7Rt5v") > 3.5);
    }
}
