//! What a finding shows and what scrub writes: the redacted preview of a secret and the
//! same-length replacement of secret text.

use super::FILLER;

/// The preview of a secret: its key name, the kept prefix, stars.
pub(super) fn preview(key: &[u8], kept: &[u8], hidden: usize) -> String {
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
    }
}
