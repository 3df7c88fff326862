//! The acceptance tests a match must pass before it is a finding ([`rules::Check`]): entropy,
//! character classes, reading like words or a placeholder, Basic-auth and JWT structure.

use super::base64::{b64_strict, b64_value};
use super::rules::{self, Check, Rule};
use super::{Candidate, FILLER};

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
pub(super) fn lists_keywords(rule: &Rule, c: &Candidate) -> bool {
    rule.keywords.len() > 1
        && c.secret.len() > 6
        && rule.keywords.iter().any(|k| {
            k.len() >= 4
                && c.secret[2..]
                    .windows(k.len())
                    .any(|w| w.eq_ignore_ascii_case(k))
        })
}

pub(super) fn accept(check: Check, c: &Candidate) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entropy_and_words() {
        assert!(entropy(b"XXXXXXXX") < 0.1);
        assert!(entropy(b"aZ3kq9Lm2Pq7Rt5v") > 3.5);
        assert!(wordlike(b"164oci_client::token_cachemessagekey"));
        assert!(!wordlike(b"aZ3kq9Lm2Pq7Rt5vW1xY3zA5"));
        assert!(dictionary_words(b"LongNamemips64leSlimAVX2end") >= 2);
        assert!(dictionary_words(b"aZ3kq9Lm2Pq7Rt5vW1xY3zA5") < 2);
    }
}
