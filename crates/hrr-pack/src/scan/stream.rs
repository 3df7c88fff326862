//! One file's scan in progress: feeding chunks, finding keyword hits in each 1 MiB step, matching
//! a hit's rules (regexes in ASCII or UTF-16LE text) on a bounded window around it, and merging the
//! findings at the end. Binary formats are parsed in [`super::binary`], base64 runs re-scanned in
//! [`super::base64`].

use regex::bytes::{Match, Regex};

use super::accept::{accept, lists_keywords};
use super::redact::{preview, redact_text};
use super::rules::Matcher;
use super::{Candidate, Encoding, Finding, Stream, CHUNK};

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
            if let Some(c) = found {
                if self.seen.contains(&(ri, c.secret_off, c.enc))
                    || !accept(rule.check, &c)
                    || lists_keywords(rule, &c)
                {
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

    pub(super) fn window(&self, abs: u64, back: usize, fwd: usize) -> (u64, &[u8]) {
        let start = abs.saturating_sub(back as u64).max(self.base);
        let end = (abs + fwd as u64).min(self.position());
        (
            start,
            &self.buf[(start - self.base) as usize..(end - self.base) as usize],
        )
    }

    pub(super) fn byte_at(&self, abs: u64) -> Option<u8> {
        if abs < self.base {
            return None;
        }
        self.buf.get((abs - self.base) as usize).copied()
    }

    fn regex_ascii(&self, ri: usize, re: &Regex, abs: u64, klen: usize) -> Option<Candidate> {
        let rule = &self.sc.rules[ri];
        let (start, win) = self.window(abs, rule.back, rule.fwd);
        let (s, r, key) = covering_match(re, win, (abs - start) as usize, klen)?;
        let s_abs = start + s.start() as u64;
        let s_end = start + s.end() as u64;
        Some(Candidate {
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
        })
    }

    fn regex_utf16(&self, ri: usize, re: &Regex, abs: u64, klen: usize) -> Option<Candidate> {
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
        let (s, r, key) = covering_match(re, &text, ((abs - lo) / 2) as usize, klen / 2)?;
        let replacement: Vec<u8> = redact_text(r.as_bytes())
            .into_iter()
            .flat_map(|b| [b, 0])
            .collect();
        Some(Candidate {
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
        })
    }

    /// The bytes `from..from + len`, when all of them are still buffered.
    pub(super) fn bytes_at(&self, from: u64, len: usize) -> Option<&[u8]> {
        if from < self.base {
            return None;
        }
        let s = (from - self.base) as usize;
        self.buf.get(s..s.checked_add(len)?)
    }
}

/// The first match of `re` in `text` that starts at or before the keyword hit at `hit` and covers
/// all `klen` characters of it: its secret (`s` group, default the whole match), the part scrub
/// overwrites (`r` group, default the secret) and the key name (`k` group, default empty).
fn covering_match<'t>(
    re: &Regex,
    text: &'t [u8],
    hit: usize,
    klen: usize,
) -> Option<(Match<'t>, Match<'t>, &'t [u8])> {
    let mut at = 0;
    while at <= hit {
        let caps = re.captures_at(text, at)?;
        let m = caps.get(0).expect("group 0");
        if m.start() > hit {
            return None;
        }
        at = m.start() + 1;
        if m.end() < hit + klen {
            continue;
        }
        let s = caps.name("s").unwrap_or(m);
        let r = caps.name("r").unwrap_or(s);
        let key = caps.name("k").map_or(&[][..], |k| k.as_bytes());
        return Some((s, r, key));
    }
    None
}
