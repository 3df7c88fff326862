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

fn b64_value(b: u8) -> Option<u8> {
    Some(match b {
        b'A'..=b'Z' => b - b'A',
        b'a'..=b'z' => b - b'a' + 26,
        b'0'..=b'9' => b - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    })
}

/// Decode base64 (either alphabet, no padding) leniently: whole groups of 4, then a tail of 2
/// or 3 characters.
pub fn b64_decode(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3 + 2);
    let mut acc = 0u32;
    let mut n = 0;
    for &c in s {
        let Some(v) = b64_value(c) else { break };
        acc = acc << 6 | v as u32;
        n += 1;
        if n == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            n = 0;
        }
    }
    match n {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
    out
}

/// The characters of a base64 text holding decoded bytes `a..b`.
fn b64_chars(a: u64, b: u64) -> std::ops::Range<u64> {
    let first = (a / 3) * 4 + a % 3;
    let last = b.saturating_sub(1);
    let end = (last / 3) * 4 + last % 3 + 2;
    first..end
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

    /// End of the file: scan what is left and return the findings, sorted by offset. A generic
    /// finding mostly covered by a specific one gives way to it; a finding inside another is left out
    /// (the larger, or the more specific of equals, is kept).
    pub fn finish(mut self) -> Vec<Finding> {
        self.process(true);
        let mut f = std::mem::take(&mut self.findings);
        let specific: Vec<std::ops::Range<u64>> = f
            .iter()
            .filter(|x| !x.generic)
            .map(|x| x.offset..x.offset + x.length)
            .collect();
        if !specific.is_empty() {
            // covered for the most part by a specific finding: the same secret
            f.retain(|x| {
                let (a, b) = (x.offset, x.offset + x.length);
                !x.generic
                    || !specific.iter().any(|r| {
                        let common = b.min(r.end).saturating_sub(a.max(r.start));
                        common * 2 >= x.length
                    })
            });
        }
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
            if self.b64 {
                self.base64_runs(chunk_end);
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

    /// Decode and scan every base64 piece starting in `head..chunk_end`.
    fn base64_runs(&mut self, chunk_end: u64) {
        let mut pieces: Vec<(u64, usize)> = Vec::new();
        let from = (self.head - self.base) as usize;
        let to = (chunk_end - self.base) as usize;
        let mut run = self.run_start;
        for i in from..to {
            let abs = self.base + i as u64;
            if b64_value(self.buf[i]).is_none() {
                run = None;
                continue;
            }
            let start = *run.get_or_insert(abs);
            if (abs - start) & (B64_STEP as u64 - 1) == 0 {
                let mut j = i;
                let lim = (i + B64_MAX).min(self.buf.len());
                while j < lim && b64_value(self.buf[j]).is_some() {
                    j += 1;
                }
                if j - i >= B64_MIN {
                    pieces.push((abs, j - i));
                }
            }
        }
        self.run_start = run;
        for (abs, len) in pieces {
            let i = (abs - self.base) as usize;
            let text = self.buf[i..i + len].to_vec();
            for shift in 0..4usize {
                let decoded = b64_decode(&text[shift..]);
                if decoded.len() < B64_MIN / 4 * 3 - 3 {
                    continue;
                }
                let at = abs + shift as u64;
                for inner in self.sc.scan_decoded(self.key, &decoded) {
                    let chars = b64_chars(inner.offset, inner.offset + inner.length);
                    let red = b64_chars(
                        inner.redact_offset,
                        inner.redact_offset + inner.replacement.len() as u64,
                    );
                    let red_end = red.end.min((len - shift) as u64);
                    let red = red.start..red_end.max(red.start);
                    let offset = at + chars.start;
                    if !self.seen.insert((inner.order, offset, Encoding::Base64)) {
                        continue;
                    }
                    self.findings.push(Finding {
                        rule: inner.rule,
                        offset,
                        length: chars.end.min((len - shift) as u64) - chars.start,
                        encoding: Encoding::Base64,
                        fingerprint: inner.fingerprint,
                        preview: format!("base64 of {}", inner.preview),
                        redact_offset: at + red.start,
                        replacement: vec![FILLER; (red.end - red.start) as usize],
                        order: inner.order,
                        generic: inner.generic,
                    });
                }
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
            for c in found {
                if self.seen.contains(&(ri, c.secret_off, c.enc)) {
                    continue;
                }
                if !accept(rule.check, &c) || lists_keywords(rule, &c) {
                    continue;
                }
                self.seen.insert((ri, c.secret_off, c.enc));
                self.findings.push(Finding {
                    rule: rule.id,
                    offset: c.secret_off,
                    length: c.secret_len,
                    encoding: c.enc,
                    fingerprint: self.key.fingerprint(&c.secret),
                    preview: c.preview,
                    redact_offset: c.redact_off,
                    replacement: c.replacement,
                    order: ri,
                    generic: rule.generic,
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

    fn byte_at(&self, abs: u64) -> Option<u8> {
        if abs < self.base {
            return None;
        }
        self.buf.get((abs - self.base) as usize).copied()
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
        let mut at = 0;
        while at <= hit {
            let Some(caps) = re.captures_at(win, at) else {
                break;
            };
            let m = caps.get(0).expect("group 0");
            if m.start() > hit {
                break;
            }
            at = m.start() + 1;
            if m.end() < hit + klen {
                continue;
            }
            let s = caps.name("s").unwrap_or(m);
            let r = caps.name("r").unwrap_or(s);
            let key = caps.name("k").map_or(&[][..], |k| k.as_bytes());
            let s_abs = start + s.start() as u64;
            let s_end = start + s.end() as u64;
            out.push(Candidate {
                enc: Encoding::Ascii,
                secret_off: s_abs,
                secret_len: s.len() as u64,
                secret: s.as_bytes().to_vec(),
                before: s_abs.checked_sub(1).and_then(|i| self.byte_at(i)),
                after: self.byte_at(s_end),
                key: key.to_vec(),
                preview: preview(key, &win[s.start()..r.start()], r.len()),
                redact_off: start + r.start() as u64,
                replacement: redact_text(r.as_bytes()),
            });
            break;
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
        let mut at = 0;
        while at <= hit {
            let Some(caps) = re.captures_at(&text, at) else {
                break;
            };
            let m = caps.get(0).expect("group 0");
            if m.start() > hit {
                break;
            }
            at = m.start() + 1;
            if m.end() < hit + kchars {
                continue;
            }
            let s = caps.name("s").unwrap_or(m);
            let r = caps.name("r").unwrap_or(s);
            let key = caps.name("k").map_or(&[][..], |k| k.as_bytes());
            let replacement: Vec<u8> = redact_text(r.as_bytes())
                .into_iter()
                .flat_map(|b| [b, 0])
                .collect();
            out.push(Candidate {
                enc: Encoding::Utf16Le,
                secret_off: lo + 2 * s.start() as u64,
                secret_len: 2 * s.len() as u64,
                secret: s.as_bytes().to_vec(),
                before: s.start().checked_sub(1).map(|i| text[i]),
                after: text.get(s.end()).copied(),
                key: key.to_vec(),
                preview: preview(key, &text[s.start()..r.start()], r.len()),
                redact_off: lo + 2 * r.start() as u64,
                replacement,
            });
            break;
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
        // Where the structure would start, given where its keyword is.
        let starts: &[u64] = match form {
            DerForm::Pkcs1Rsa | DerForm::Pkcs8Long | DerForm::Pkcs12 => &[4],
            DerForm::Pkcs8Short => &[3],
            DerForm::Pkcs8Ed25519 => &[0],
            DerForm::Sec1 => &[2, 3],
        };
        for &back in starts {
            let Some(start) = abs.checked_sub(back) else {
                continue;
            };
            let Some(head) = self.bytes_at(start, 4) else {
                continue;
            };
            let Some((tag, hl, len)) = der::tlv(head) else {
                continue;
            };
            if tag != 0x30 {
                continue;
            }
            let total = hl + len;
            if total < 40 {
                continue;
            }
            let Some(whole) = self.bytes_at(start, total) else {
                continue;
            };
            let content = &whole[hl..];
            let ok = match form {
                DerForm::Pkcs1Rsa => der::rsa_private(content),
                DerForm::Pkcs8Long | DerForm::Pkcs8Short => der::pkcs8(content),
                DerForm::Pkcs8Ed25519 => total == 48 && entropy(&whole[16..]) >= 4.0,
                DerForm::Sec1 => der::sec1(content),
                DerForm::Pkcs12 => der::pkcs12(content),
            };
            if !ok {
                continue;
            }
            let (from, secret) = match form {
                DerForm::Pkcs8Ed25519 => (start + 16, &whole[16..]),
                _ => (start + hl as u64, content),
            };
            return vec![Candidate {
                enc: Encoding::Binary,
                secret_off: from,
                secret_len: secret.len() as u64,
                secret: secret.to_vec(),
                before: None,
                after: None,
                key: Vec::new(),
                preview: format!("<DER structure, {} bytes>", secret.len()),
                redact_off: from,
                replacement: vec![0u8; secret.len()],
            }];
        }
        Vec::new()
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
        if entropy(secret) < 3.0 {
            return Vec::new();
        }
        vec![Candidate {
            enc: Encoding::Binary,
            secret_off: from,
            secret_len: secret.len() as u64,
            secret: secret.to_vec(),
            before: None,
            after: None,
            key: Vec::new(),
            preview: format!("<OpenSSH private section, {} bytes>", secret.len()),
            redact_off: from,
            replacement: vec![0u8; secret.len()],
        }]
    }
}

/// Just enough DER to tell a private key from bytes that happen to start like one.
mod der {
    /// Tag, header length, content length of the element at the start of `b`.
    pub fn tlv(b: &[u8]) -> Option<(u8, usize, usize)> {
        let tag = *b.first()?;
        let l0 = *b.get(1)? as usize;
        if l0 < 0x80 {
            return Some((tag, 2, l0));
        }
        let n = l0 & 0x7F;
        if n == 0 || n > 3 {
            return None;
        }
        let mut len = 0usize;
        for i in 0..n {
            len = len << 8 | *b.get(2 + i)? as usize;
        }
        if len < 0x80 {
            return None; // not DER (minimal length encoding)
        }
        Some((tag, 2 + n, len))
    }

    /// The elements of `content`, which they must fill exactly.
    pub fn elements(content: &[u8]) -> Option<Vec<(u8, &[u8])>> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < content.len() {
            let (tag, hl, len) = tlv(&content[pos..])?;
            let body = content.get(pos + hl..pos + hl + len)?;
            out.push((tag, body));
            pos += hl + len;
        }
        Some(out)
    }

    /// RSAPrivateKey: version, n, e, d, p, q, dp, dq, qinv (and more primes for version 1).
    pub fn rsa_private(content: &[u8]) -> bool {
        let Some(els) = elements(content) else {
            return false;
        };
        els.len() >= 9
            && els.iter().all(|(t, _)| *t == 0x02)
            && (els[0].1 == [0] || els[0].1 == [1])
            && els[1].1.len() >= 64
            && super::entropy(els[3].1) >= 4.0
    }

    /// ECPrivateKey: version 1, the scalar, optional [0] parameters and [1] public key.
    pub fn sec1(content: &[u8]) -> bool {
        let Some(els) = elements(content) else {
            return false;
        };
        els.len() >= 2
            && els[0] == (0x02, &[1][..])
            && els[1].0 == 0x04
            && (16..=66).contains(&els[1].1.len())
            && super::entropy(els[1].1) >= 3.5
            && els[2..].iter().all(|(t, _)| *t == 0xA0 || *t == 0xA1)
    }

    /// PrivateKeyInfo: version, algorithm, the key (an octet string holding a structure).
    pub fn pkcs8(content: &[u8]) -> bool {
        let Some(els) = elements(content) else {
            return false;
        };
        if els.len() < 3
            || els[0].0 != 0x02
            || els[0].1.len() != 1
            || els[0].1[0] > 1
            || els[1].0 != 0x30
            || els[2].0 != 0x04
            || !els[3..]
                .iter()
                .all(|(t, _)| matches!(*t, 0xA0 | 0xA1 | 0x81))
        {
            return false;
        }
        let inner = els[2].1;
        let Some((0x30, hl, len)) = tlv(inner) else {
            return false;
        };
        if hl + len != inner.len() {
            return false;
        }
        rsa_private(&inner[hl..]) || sec1(&inner[hl..])
    }

    /// PFX: version 3, authSafe (a ContentInfo), optional macData.
    pub fn pkcs12(content: &[u8]) -> bool {
        const DATA_OID: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07];
        let Some(els) = elements(content) else {
            return false;
        };
        if els.len() < 2 || els[0] != (0x02, &[3][..]) || els[1].0 != 0x30 {
            return false;
        }
        let Some(ci) = elements(els[1].1) else {
            return false;
        };
        ci.first()
            .is_some_and(|(t, oid)| *t == 0x06 && oid.len() == 9 && oid.starts_with(DATA_OID))
    }
}

/// The preview of a secret: its key name, the kept prefix, stars.
fn preview(key: &[u8], kept: &[u8], hidden: usize) -> String {
    let show = |b: &[u8], max: usize| -> String {
        b.iter()
            .take(max)
            .map(|&c| {
                if (0x21..0x7F).contains(&c) {
                    c as char
                } else {
                    '.'
                }
            })
            .collect()
    };
    let mut s = String::new();
    let key = key.trim_ascii();
    if !key.is_empty() {
        s.push_str(&show(key, 40));
        s.push(' ');
    }
    s.push_str(&show(kept, 24));
    s.push_str(&"*".repeat(hidden.min(8)));
    if hidden > 8 {
        s.push('…');
    }
    s.push_str(&format!(" ({} bytes)", kept.len() + hidden));
    s
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

/// How many of lower case, upper case, digits appear.
fn classes(s: &[u8]) -> usize {
    [
        s.iter().any(u8::is_ascii_lowercase),
        s.iter().any(u8::is_ascii_uppercase),
        s.iter().any(u8::is_ascii_digit),
    ]
    .iter()
    .filter(|&&c| c)
    .count()
}

/// Made of words: more than 60% of it is letters in runs that read like words (5 or more all
/// lower or all upper case, 6 or more capitalised). Random base62 tokens rarely are (0.4% of
/// 16-character ones, 0.02% of 32-character ones are taken for words); random lower case
/// base36 often is, so rules of such formats test entropy only.
pub fn wordlike(s: &[u8]) -> bool {
    let mut in_words = 0usize;
    let mut i = 0;
    while i < s.len() {
        if !s[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        // split letter runs at lower→upper changes (camelCase words)
        let mut j = i + 1;
        while j < s.len()
            && s[j].is_ascii_alphabetic()
            && !(s[j].is_ascii_uppercase() && s[j - 1].is_ascii_lowercase())
        {
            j += 1;
        }
        let w = &s[i..j];
        let tail = &w[1..];
        let word = (w.len() >= 5
            && (w.iter().all(u8::is_ascii_lowercase) || w.iter().all(u8::is_ascii_uppercase)))
            || (w.len() >= 6 && tail.iter().all(u8::is_ascii_lowercase));
        if word {
            in_words += w.len();
        }
        i = j;
    }
    in_words * 10 > s.len() * 6
}

fn placeholder(s: &[u8]) -> bool {
    const WORDS: &[&str] = &[
        "password",
        "passwd",
        "pass",
        "secret",
        "changeme",
        "example",
        "redacted",
        "none",
        "null",
        "true",
        "false",
        "undefined",
        "your_password",
        "yourpassword",
        "mypassword",
        "pwd",
        "user",
        "username",
        "token",
    ];
    s.is_empty()
        || s.iter().all(|&b| b == s[0])
        || s.iter().all(|&b| b == FILLER || b == b'*' || b == b'x')
        || matches!(s[0], b'$' | b'%' | b'{' | b'<' | b'[' | b'(' | b'@')
        || s.windows(2).any(|w| w == b"%s" || w == b"%d" || w == b"{}")
        || WORDS.iter().any(|w| s.eq_ignore_ascii_case(w.as_bytes()))
}

fn alnum(b: Option<u8>) -> bool {
    b.is_some_and(|b| b.is_ascii_alphanumeric())
}

/// base64url or base64, padded or not, to bytes (None when it holds anything else).
fn b64_strict(s: &[u8]) -> Option<Vec<u8>> {
    let t: &[u8] = s.strip_suffix(b"==").or(s.strip_suffix(b"=")).unwrap_or(s);
    if t.len() % 4 == 1 || t.iter().any(|&b| b64_value(b).is_none()) {
        return None;
    }
    Some(b64_decode(t))
}

fn basic_auth(secret: &[u8]) -> bool {
    // the value may run on into a neighbouring byte: also try it cut after its padding, or
    // at a whole number of base64 groups
    let mut cuts = vec![secret.len(), secret.len() / 4 * 4];
    if let Some(p) = secret
        .iter()
        .rposition(|&b| b != b'=' && b64_value(b).is_none())
    {
        cuts.push(p);
    }
    if let Some(p) = secret.iter().position(|&b| b == b'=') {
        let end = secret[p..].iter().take_while(|&&b| b == b'=').count() + p;
        cuts.push(end);
    }
    cuts.into_iter()
        .filter(|&n| n > 0 && n <= secret.len())
        .any(|n| basic_auth_exact(&secret[..n]))
}

fn basic_auth_exact(secret: &[u8]) -> bool {
    b64_strict(secret).is_some_and(|d| {
        d.len() >= 3
            && d.contains(&b':')
            && !d.starts_with(b":")
            && d.iter().all(|&b| (0x20..0x7F).contains(&b))
            && !placeholder(&d[d.iter().position(|&b| b == b':').unwrap_or(0) + 1..])
    })
}

/// Common words of identifiers and messages. A random token holds two of them (4 letters or
/// more, any case) with a probability of about 10^-5; glued string literals in a binary's
/// read-only data (`LongNamemips64leSlim...`) often do.
const WORDS: &[&str] = &[
    "able", "access", "alloc", "array", "auth", "back", "base", "bind", "block", "body", "bool",
    "buffer", "byte", "cache", "call", "case", "char", "check", "class", "client", "close", "code",
    "config", "const", "context", "copy", "core", "count", "data", "date", "debug", "default",
    "desc", "device", "dict", "done", "down", "each", "else", "empty", "end", "enum", "error",
    "event", "except", "exit", "fail", "false", "field", "file", "find", "first", "flag", "float",
    "font", "form", "format", "frame", "free", "from", "func", "half", "handle", "hash", "have",
    "head", "help", "high", "hook", "host", "http", "image", "impl", "index", "info", "init",
    "input", "into", "item", "iter", "join", "just", "kernel", "key", "kind", "last", "left",
    "length", "level", "line", "link", "list", "load", "local", "lock", "long", "loop", "main",
    "make", "many", "match", "max", "memory", "message", "meta", "method", "min", "mode", "module",
    "more", "name", "next", "node", "none", "null", "number", "object", "only", "open", "option",
    "order", "other", "output", "over", "pack", "page", "param", "parse", "part", "pass", "path",
    "point", "pool", "port", "print", "proc", "push", "query", "queue", "read", "ready", "reg",
    "request", "reset", "result", "return", "right", "root", "rule", "same", "scan", "self",
    "send", "server", "set", "shape", "size", "slice", "slim", "some", "sort", "space", "start",
    "state", "status", "step", "store", "stream", "string", "struct", "sync", "system", "table",
    "task", "test", "text", "than", "that", "this", "thread", "time", "token", "total", "trace",
    "tree", "true", "type", "unit", "update", "user", "value", "vector", "view", "wait", "when",
    "with", "word", "work", "write", "zero",
];

fn dictionary_words(s: &[u8]) -> usize {
    let lower = s.to_ascii_lowercase();
    let mut n = 0;
    let mut i = 0;
    while i < lower.len() {
        let hit = WORDS
            .iter()
            .filter(|w| w.len() >= 4 && lower[i..].starts_with(w.as_bytes()))
            .map(|w| w.len())
            .max();
        match hit {
            Some(len) => {
                n += 1;
                i += len;
            }
            None => i += 1,
        }
    }
    n
}

fn random_looking(s: &[u8], min_entropy: f64) -> bool {
    entropy(s) >= min_entropy && classes(s) >= 2 && !wordlike(s) && dictionary_words(s) < 2
}

/// A token whose body holds another keyword of its rule (`glpat-gldt-glrt-...`) is a list of
/// prefixes, as a scanner's own binary holds, not a token.
fn lists_keywords(rule: &Rule, c: &Candidate) -> bool {
    rule.keywords.len() > 1
        && c.secret.len() > 6
        && rule.keywords.iter().any(|k| {
            k.len() >= 4
                && c.secret[2..]
                    .windows(k.len())
                    .any(|w| w.eq_ignore_ascii_case(k))
        })
}

fn accept(check: Check, c: &Candidate) -> bool {
    let secret = &c.secret[..];
    match check {
        Check::Entropy(min) => entropy(secret) >= min,
        Check::Mixed(min) => random_looking(secret, min),
        Check::Crc32Base62 => {
            rules::crc32_base62_ok(secret)
                || (!alnum(c.before)
                    && !alnum(c.after)
                    && entropy(secret) >= 3.0
                    && classes(&secret[4..]) >= 2)
        }
        Check::Jwt => {
            let mut parts = secret.split(|&b| b == b'.');
            let json = |p: Option<&[u8]>| {
                p.and_then(b64_strict)
                    .and_then(|d| serde_json::from_slice::<serde_json::Value>(&d).ok())
                    .is_some_and(|v| v.is_object())
            };
            json(parts.next()) && json(parts.next())
        }
        Check::AuthHeader => {
            let scheme = c.key.trim_ascii();
            if scheme.eq_ignore_ascii_case(b"basic") || scheme == b"\"auth\"" || scheme.is_empty() {
                if basic_auth(secret) {
                    return true;
                }
                if scheme.eq_ignore_ascii_case(b"basic") {
                    return false;
                }
            }
            secret.len() >= 16 && random_looking(secret, 3.5)
        }
        Check::Generic => {
            let value = {
                let mut v = secret;
                while let Some(t) = v.strip_suffix(b"=") {
                    v = t;
                }
                v
            };
            let key = c.key.to_ascii_lowercase();
            let password_key = key.windows(5).any(|w| w == b"passw") || key.ends_with(b"pwd");
            // `scheme://...` after a name ending in a keyword is a URL, not an assignment
            if placeholder(value) || value.starts_with(b"//") {
                return false;
            }
            if password_key {
                value.len() >= 8
                    && entropy(value) >= 2.5
                    && (classes(value) >= 2 || value.iter().any(|b| !b.is_ascii_alphanumeric()))
                    && !wordlike(value)
            } else {
                let len = value.len() as f64;
                // short hex is an id (a key id, a hash prefix), not a key
                let short_hex = value.len() < 20 && value.iter().all(u8::is_ascii_hexdigit);
                !short_hex
                    && value.len() >= 12
                    && value.iter().any(u8::is_ascii_digit)
                    && value.iter().any(u8::is_ascii_alphabetic)
                    && random_looking(value, (0.9 * len.log2()).min(3.6))
            }
        }
        Check::Password => !placeholder(secret),
    }
}

/// Same-length replacement of secret text: every character becomes [`FILLER`] except the
/// framing (`.`, `=`, whitespace, and JSON escapes: a backslash with the character it escapes,
/// `\uXXXX` becoming `\u0058`, so a JSON string stays valid).
pub fn redact_text(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        if b == b'\\' && i + 1 < s.len() {
            if s[i + 1] == b'u'
                && i + 6 <= s.len()
                && s[i + 2..i + 6].iter().all(u8::is_ascii_hexdigit)
            {
                out.extend_from_slice(b"\\u0058");
                i += 6;
            } else {
                out.extend_from_slice(&s[i..i + 2]);
                i += 2;
            }
            continue;
        }
        if matches!(b, b'.' | b'=' | b' ' | b'\t' | b'\n' | b'\r') {
            out.push(b);
        } else {
            out.push(FILLER);
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_framing() {
        assert_eq!(redact_text(b"ab.cd=\\nx"), b"XX.XX=\\nX");
        assert_eq!(redact_text(b"a\\u00e9b"), b"X\\u0058X");
        assert!(entropy(b"XXXXXXXX") < 0.1);
        assert!(entropy(b"aZ3kq9Lm2Pq7Rt5v") > 3.5);
        assert!(wordlike(b"164oci_client::token_cachemessagekey"));
        assert!(!wordlike(b"aZ3kq9Lm2Pq7Rt5vW1xY3zA5"));
        assert!(dictionary_words(b"LongNamemips64leSlimAVX2end") >= 2);
        assert!(dictionary_words(b"aZ3kq9Lm2Pq7Rt5vW1xY3zA5") < 2);
    }

    #[test]
    fn base64_char_ranges_cover_the_bytes() {
        let text = b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"; // ABCDEFGHIJKLMNOPQRSTUVWX
        assert_eq!(b64_decode(text), b"ABCDEFGHIJKLMNOPQRSTUVWX");
        // bytes 4..7 (EFG) live in characters 5..10
        assert_eq!(b64_chars(4, 7), 5..10);
        assert_eq!(b64_chars(0, 3), 0..4);
    }
}
