//! The rules: what a secret looks like in host memory. Each rule has keywords (found in one
//! Aho-Corasick pass, in ASCII and, for text rules, in UTF-16LE; base64 text is decoded and
//! scanned again), how far before and after a keyword its match may reach, and a matcher: a
//! byte regex (`(?-u)`: `.`, `\s`, `\w` are ASCII and match any byte where they may) with an
//! optional `s` group (the secret, reported and fingerprinted), `r` group (the part overwritten by
//! scrub; default: the secret) and `k` group (the key name a generic secret was assigned to, shown
//! in the preview), or a parser of a binary key format.
//!
//! Boundaries: no rule asks for a word boundary. A secret is found whatever byte precedes it
//! (binary blobs put random bytes right next to strings); a rule of a fixed-length format takes
//! exactly that many characters whatever follows. Precision comes from the acceptance tests
//! instead: the CRC32 of GitHub and npm tokens, the JSON inside a JWT, the DER structure of a
//! key, entropy and character-class tests elsewhere.
//!
//! Listed specific first: when two rules find the same range, the earlier one is kept; a
//! [`Rule::generic`] finding overlapping a specific one is dropped.
//!
//! This file holds the rule types, their builders and the order; the rules themselves are listed
//! by kind in `keys.rs` (private keys), `cloud.rs`, `services.rs` (version control, payment,
//! messaging, AI providers, package registries) and `in_text.rs` (credentials written in text).

use regex::bytes::Regex;

/// How a rule recognises its secret.
pub enum Matcher {
    /// A byte regex.
    Regex(Regex),
    /// DER-encoded private keys.
    Der(DerForm),
    /// The binary body of an OpenSSH private key (`openssh-key-v1\0`).
    OpenSsh,
}

/// Which DER structure a keyword starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DerForm {
    /// PKCS#1 RSAPrivateKey: keyword `02 01 00 02 82` after a `30 82 hi lo` header.
    Pkcs1Rsa,
    /// PKCS#8 with a long-form length: keyword after a `30 82 hi lo` header.
    Pkcs8Long,
    /// PKCS#8 with a short length: keyword after a `30 81 len` header.
    Pkcs8Short,
    /// PKCS#8 Ed25519 (48 bytes, the keyword is its first 16): the last 32 bytes are the key.
    Pkcs8Ed25519,
    /// SEC1 EC private key (`30 len 02 01 01 04 n` + scalar + optional parameters and public key).
    Sec1,
    /// PKCS#12 / PFX (`30 82 hi lo 02 01 03 30 82`): the whole container.
    Pkcs12,
}

/// Extra acceptance test on the secret.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// Shannon entropy (bits per byte) of the secret at least this.
    Entropy(f64),
    /// Entropy at least this, and at least one digit and one letter.
    Mixed(f64),
    /// GitHub / npm token: the last 6 characters are the base62 CRC32 of the 30 before them.
    /// A token without a valid checksum is still accepted when it stands alone (text context)
    /// with entropy: test tokens and hand-made fakes look like that.
    Crc32Base62,
    /// JWT: header and payload decode (base64url) to JSON objects.
    Jwt,
    /// An `Authorization:` value: `Basic` decodes to `user:password`; others need entropy.
    AuthHeader,
    /// Generic `KEY=value`: random-looking (entropy growing with length, digits and letters,
    /// not made of words); looser for password keys (anything but a placeholder).
    Generic,
    /// A password in a URL or connection string: anything but a placeholder.
    Password,
}

/// One rule.
pub struct Rule {
    /// Stable id, shown in reports and redactions.json, and accepted by `--allow`.
    pub id: &'static str,
    /// Literal keywords (matched ASCII-case-insensitively; the matcher decides case).
    pub keywords: Vec<Vec<u8>>,
    /// Characters (bytes in ASCII) a match may start before its keyword.
    pub back: usize,
    /// Characters a match may reach after its keyword's start.
    pub fwd: usize,
    /// A text rule is also searched in UTF-16LE and inside base64.
    pub text: bool,
    /// The matcher.
    pub matcher: Matcher,
    /// Acceptance test.
    pub check: Check,
    /// A keyword-context rule (generic assignments): gives way to any specific rule it overlaps.
    pub generic: bool,
}

fn re(pattern: &str) -> Matcher {
    Matcher::Regex(
        Regex::new(&format!("(?-u){pattern}"))
            .unwrap_or_else(|e| panic!("rule regex {pattern}: {e}")),
    )
}

fn kw(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

fn text(
    id: &'static str,
    words: &[&str],
    back: usize,
    fwd: usize,
    pattern: &str,
    check: Check,
) -> Rule {
    Rule {
        id,
        keywords: kw(words),
        back,
        fwd,
        text: true,
        matcher: re(pattern),
        check,
        generic: false,
    }
}

/// A token that starts with its keyword (`back` 0).
fn tok(id: &'static str, words: &[&str], fwd: usize, pattern: &str, check: Check) -> Rule {
    text(id, words, 0, fwd, pattern, check)
}

fn generic(mut r: Rule) -> Rule {
    r.generic = true;
    r
}

/// A binary keyword as hrr-pack's own executable holds it: every byte inverted at compile time,
/// so that a scan of the executable does not find its own rules (the DER key prefixes are whole
/// key structures once any 32 bytes follow them in read-only data). [`binary`] inverts it back.
macro_rules! masked {
    ($bytes:expr) => {
        &const {
            let b = $bytes;
            let mut m = [0u8; $bytes.len()];
            let mut i = 0;
            while i < m.len() {
                m[i] = !b[i];
                i += 1;
            }
            m
        }
    };
}

/// A binary rule; `masked`: its keyword through [`masked!`].
fn binary(id: &'static str, masked: &[u8], back: usize, form: Option<DerForm>) -> Rule {
    Rule {
        id,
        keywords: vec![masked.iter().map(|b| !b).collect()],
        back,
        fwd: 70_000,
        text: false,
        matcher: form.map_or(Matcher::OpenSsh, Matcher::Der),
        check: Check::Entropy(3.0),
        generic: false,
    }
}

/// Base64 characters (standard and URL-safe alphabets).
const B64: &str = "A-Za-z0-9+/";

mod cloud;
mod in_text;
mod keys;
mod services;

/// Every rule, specific ones first.
pub fn all() -> Vec<Rule> {
    use Check::*;
    let mut v: Vec<Rule> = [
        keys::private_keys(),
        cloud::cloud(),
        services::version_control(),
        services::payment(),
        services::messaging(),
        services::ai_providers(),
        services::package_registries(),
        in_text::in_text(),
    ]
    .into_iter()
    .flatten()
    .collect();
    v.push(generic(text(
        "generic-secret",
        &[
            "access",
            "auth",
            "api",
            "credential",
            "creds",
            "key",
            "passwd",
            "password",
            "pwd",
            "secret",
            "token",
            "private",
        ],
        60,
        260,
        r#"(?i)(?P<k>[A-Za-z0-9_.-]{0,40}(?:access|auth|api|credential|creds|key|passw(?:or)?d|pwd|secret|token|private)[A-Za-z0-9_.-]{0,20})["']?\s{0,3}(?:=|:=|=>|:)\s{0,3}["']?(?P<s>[A-Za-z0-9_.+/~!@#$%^*-][A-Za-z0-9_.+/~!@#$%^*:-]{7,199}={0,3})"#,
        Generic,
    )));
    v
}

/// Every rule id, each once, in rule order.
pub fn ids() -> Vec<&'static str> {
    let mut ids: Vec<&'static str> = Vec::new();
    for r in all() {
        if !ids.contains(&r.id) {
            ids.push(r.id);
        }
    }
    ids
}

/// CRC32 (IEEE 802.3, the zlib one).
pub fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

/// `n` in base62 (`0-9A-Za-z`), left-padded with `0` to `width`.
pub fn base62(mut n: u64, width: usize) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 62) as usize]);
        n /= 62;
    }
    while out.len() < width {
        out.push(b'0');
    }
    out.reverse();
    String::from_utf8(out).expect("ascii")
}

/// Does `token` (`xxx_` + 30 characters + 6 of checksum) carry a valid base62 CRC32?
pub fn crc32_base62_ok(token: &[u8]) -> bool {
    let Some(p) = token.iter().position(|&b| b == b'_') else {
        return false;
    };
    let body = &token[p + 1..];
    if body.len() < 7 {
        return false;
    }
    let (data, sum) = body.split_at(body.len() - 6);
    base62(crc32(data) as u64, 6).as_bytes() == sum
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles_and_crc_matches_zlib() {
        assert!(all().len() > 90);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        let body = "aBcDeFgHiJkLmNoPqRsTuVwXyZ0123";
        let tok = format!("ghp_{body}{}", base62(crc32(body.as_bytes()) as u64, 6));
        assert!(crc32_base62_ok(tok.as_bytes()));
        assert!(!crc32_base62_ok(
            b"ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123000000"
        ));
    }
}
