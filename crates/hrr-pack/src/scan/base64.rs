//! Base64: lenient and strict decoding, the map from decoded bytes back to the characters holding
//! them, and the re-scan of every base64 run of a file at its four alignments (findings inside are
//! reported at the offsets of their base64 characters).

use super::{Encoding, Finding, Stream, B64_MAX, B64_MIN, B64_STEP, FILLER};

pub(super) fn b64_value(b: u8) -> Option<u8> {
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

/// base64url or base64, padded or not, to bytes (None when it holds anything else).
pub(super) fn b64_strict(s: &[u8]) -> Option<Vec<u8>> {
    let t: &[u8] = s.strip_suffix(b"==").or(s.strip_suffix(b"=")).unwrap_or(s);
    if t.len() % 4 == 1 || t.iter().any(|&b| b64_value(b).is_none()) {
        return None;
    }
    Some(b64_decode(t))
}

impl Stream<'_> {
    /// Decode and scan every base64 piece starting in `head..chunk_end`.
    pub(super) fn base64_runs(&mut self, chunk_end: u64) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_char_ranges_cover_the_bytes() {
        let text = b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldY"; // ABCDEFGHIJKLMNOPQRSTUVWX
        assert_eq!(b64_decode(text), b"ABCDEFGHIJKLMNOPQRSTUVWX");
        // bytes 4..7 (EFG) live in characters 5..10
        assert_eq!(b64_chars(4, 7), 5..10);
        assert_eq!(b64_chars(0, 3), 0..4);
    }
}
