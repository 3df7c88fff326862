//! Base64: lenient and strict decoding, the map from decoded bytes back to the characters holding
//! them, and the re-scan of every base64 run of a file at its four alignments (findings inside are
//! reported at the offsets of their base64 characters). Base64 wrapped into lines (PEM bodies,
//! MIME's 76 columns, `base64` 's 76, kubeconfigs) is joined across its line breaks first.

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
        let mut wrapped: Vec<usize> = Vec::new();
        for i in from..to {
            let abs = self.base + i as u64;
            if b64_value(self.buf[i]).is_none() {
                // A line of whole base64 groups ending in a line break may begin a wrapped block.
                if let (Some(start), b'\r' | b'\n') = (run, self.buf[i]) {
                    let width = (abs - start) as usize;
                    if width >= WRAP_MIN && width.is_multiple_of(4) && start >= self.base {
                        wrapped.push((start - self.base) as usize);
                    }
                }
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
        let mut scanned_to = 0;
        for start in wrapped {
            if start < scanned_to {
                continue; // a later line of a block already scanned
            }
            if let Some((chars, end)) = wrapped_block(&self.buf, start) {
                self.scan_wrapped(&chars);
                scanned_to = end;
            }
        }
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

/// Shortest line of a wrapped base64 block (PEM uses 64, MIME and `base64` 76).
const WRAP_MIN: usize = 16;

impl Stream<'_> {
    /// Scan one joined block: `chars` are the buffer indices of its base64 characters.
    fn scan_wrapped(&mut self, chars: &[usize]) {
        let text: Vec<u8> = chars.iter().map(|&c| self.buf[c]).collect();
        let line_of = |k: usize| chars[k] - k; // grows by the break length at every break
        for shift in 0..4usize {
            let decoded = b64_decode(&text[shift..]);
            if decoded.len() < B64_MIN / 4 * 3 - 3 {
                continue;
            }
            for inner in self.sc.scan_decoded(self.key, &decoded) {
                let len = (text.len() - shift) as u64;
                let c = b64_chars(inner.offset, inner.offset + inner.length);
                let (c0, c1) = (shift + c.start as usize, shift + c.end.min(len) as usize);
                if c1 <= c0 || line_of(c0) == line_of(c1 - 1) {
                    continue; // inside one line: the scan of base64 runs finds it there
                }
                let r = b64_chars(
                    inner.redact_offset,
                    inner.redact_offset + inner.replacement.len() as u64,
                );
                let (r0, r1) = (shift + r.start as usize, shift + r.end.min(len) as usize);
                let offset = self.base + chars[c0] as u64;
                if !self.seen.insert((inner.order, offset, Encoding::Base64)) {
                    continue;
                }
                // Same length in the file: characters become filler, line breaks stay.
                let (a, b) = if r1 > r0 {
                    (chars[r0], chars[r1 - 1] + 1)
                } else {
                    (chars[c0], chars[c0])
                };
                let replacement = self.buf[a..b]
                    .iter()
                    .map(|&x| if b64_value(x).is_some() { FILLER } else { x })
                    .collect();
                self.findings.push(Finding {
                    rule: inner.rule,
                    offset,
                    length: (chars[c1 - 1] + 1 - chars[c0]) as u64,
                    encoding: Encoding::Base64,
                    fingerprint: inner.fingerprint,
                    preview: format!("base64 (wrapped) of {}", inner.preview),
                    redact_offset: self.base + a as u64,
                    replacement,
                    order: inner.order,
                    generic: inner.generic,
                });
            }
        }
    }
}

/// The wrapped base64 block whose first line starts at `start`: the indices of its characters
/// (at most [`B64_MAX`]) and the index where it ends; `None` unless it has at least two lines,
/// all but the last of one width (a multiple of 4, at least [`WRAP_MIN`]) and the last no
/// longer.
fn wrapped_block(buf: &[u8], start: usize) -> Option<(Vec<usize>, usize)> {
    let run = |at: usize| {
        buf[at..]
            .iter()
            .take_while(|&&b| b64_value(b).is_some())
            .count()
    };
    let brk = |at: usize| match buf.get(at..at + 2) {
        Some([b'\r', b'\n']) => 2,
        _ if buf.get(at) == Some(&b'\n') => 1,
        _ => 0,
    };
    let width = run(start);
    if width < WRAP_MIN || !width.is_multiple_of(4) || brk(start + width) == 0 {
        return None;
    }
    let mut chars: Vec<usize> = (start..start + width).collect();
    let mut at = start + width;
    let mut lines = 1;
    while chars.len() < B64_MAX {
        let b = brk(at);
        if b == 0 {
            break;
        }
        let n = run(at + b);
        if n == 0 || n > width {
            break;
        }
        chars.extend(at + b..at + b + n);
        lines += 1;
        at += b + n;
        if n < width {
            break; // the last line
        }
    }
    chars.truncate(B64_MAX);
    (lines >= 2).then_some((chars, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_blocks_are_joined_across_line_breaks() {
        let buf = b"x QUJDREVGR0hJSktMTU5P\r\nUFFSU1RVVldY\n- rest";
        let (chars, end) = wrapped_block(buf, 2).unwrap();
        let text: Vec<u8> = chars.iter().map(|&c| buf[c]).collect();
        assert_eq!(b64_decode(&text), b"ABCDEFGHIJKLMNOPQRSTUVWX");
        assert_eq!(&buf[end..end + 1], b"\n");
        // one line is not a wrapped block, nor lines of uneven width
        assert!(wrapped_block(b"QUJDREVGR0hJSktMTU5P rest", 0).is_none());
        assert!(wrapped_block(b"QUJDREVGR0hJSktM\nTU5PUFFSU1RVVldYWVo\n", 0).is_none());
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
