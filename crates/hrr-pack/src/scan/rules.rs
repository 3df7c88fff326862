//! The rules: what a secret looks like in host memory. Each rule has keywords (found in one
//! Aho-Corasick pass, in ASCII and, for text rules, in UTF-16LE), how far before and after a
//! keyword its match may reach, and a matcher: a byte regex (`(?-u)`: `.`, `\s`, `\w` are ASCII
//! and match any byte where they may) with an optional `s` group (the secret, reported and
//! fingerprinted) and `r` group (the part overwritten by scrub; default: the secret), or a
//! parser of a binary key format. Listed specific first: when two rules find the same range,
//! the earlier one is kept.

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
    /// SEC1 EC P-256 (`30 77 02 01 01 04 20` + 32-byte scalar + parameters + public key).
    Sec1P256,
}

/// Extra acceptance test on the secret.
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// Shannon entropy (bits per byte) of the secret at least this.
    Entropy(f64),
    /// Generic `KEY=value`: entropy growing with length up to 3.5, and two character classes.
    Generic,
    /// A password in a URL: anything but a placeholder.
    Password,
}

/// One rule.
pub struct Rule {
    /// Stable id, shown in reports and redactions.json.
    pub id: &'static str,
    /// Literal keywords (matched ASCII-case-insensitively; the matcher decides case).
    pub keywords: Vec<Vec<u8>>,
    /// Characters (bytes in ASCII) a match may start before its keyword.
    pub back: usize,
    /// Characters a match may reach after its keyword's start.
    pub fwd: usize,
    /// A text rule is also searched in UTF-16LE.
    pub text: bool,
    /// The matcher.
    pub matcher: Matcher,
    /// Acceptance test.
    pub check: Check,
}

fn re(pattern: &str) -> Matcher {
    Matcher::Regex(Regex::new(&format!("(?-u){pattern}")).expect("rule regexes compile"))
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
    }
}

fn binary(id: &'static str, keyword: &[u8], form: Option<DerForm>) -> Rule {
    Rule {
        id,
        keywords: vec![keyword.to_vec()],
        back: 4,
        fwd: 70_000,
        text: false,
        matcher: form.map_or(Matcher::OpenSsh, Matcher::Der),
        check: Check::Entropy(3.0),
    }
}

/// Every rule, specific ones first.
pub fn all() -> Vec<Rule> {
    use Check::*;
    vec![
        text(
            "pem-private-key",
            &["-----BEGIN"],
            0,
            17_000,
            r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?P<s>[\s\S]{64,16384}?)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
            Entropy(3.0),
        ),
        binary("openssh-private-key", b"openssh-key-v1\0", None),
        binary(
            "der-rsa-private-key",
            &[0x02, 0x01, 0x00, 0x02, 0x82],
            Some(DerForm::Pkcs1Rsa),
        ),
        binary(
            "der-pkcs8-private-key",
            &[
                0x02, 0x01, 0x00, 0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01,
                0x01, 0x01,
            ],
            Some(DerForm::Pkcs8Long),
        ),
        binary(
            "der-pkcs8-private-key",
            &[
                0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
            ],
            Some(DerForm::Pkcs8Short),
        ),
        binary(
            "der-ed25519-private-key",
            &[
                0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22,
                0x04, 0x20,
            ],
            Some(DerForm::Pkcs8Ed25519),
        ),
        binary(
            "der-ec-private-key",
            &[0x30, 0x77, 0x02, 0x01, 0x01, 0x04, 0x20],
            Some(DerForm::Sec1P256),
        ),
        text(
            "aws-access-key-id",
            &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
            1,
            24,
            r"\b(?P<s>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?P<r>[A-Z2-7]{16}))\b",
            Entropy(3.0),
        ),
        text(
            "aws-secret-access-key",
            &["secret"],
            40,
            100,
            r#"(?i)aws[\w.-]{0,20}?secret[\w.-]{0,20}?["']?\s{0,3}(?:=|:|:=|=>)\s{0,3}["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#,
            Entropy(4.0),
        ),
        text(
            "jwt",
            &["eyJ"],
            4_200,
            8_400,
            r"\b(?P<s>ey[A-Za-z0-9_-]{17,4096}\.ey[A-Za-z0-9_-]{17,4096}\.(?:[A-Za-z0-9_-]{10,4096}={0,2})?)",
            Entropy(3.0),
        ),
        text(
            "github-token",
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
            1,
            50,
            r"\b(?P<s>gh[pousr]_(?P<r>[0-9A-Za-z]{36}))\b",
            Entropy(3.0),
        ),
        text(
            "github-fine-grained-pat",
            &["github_pat_"],
            1,
            100,
            r"\b(?P<s>github_pat_(?P<r>[0-9A-Za-z_]{82}))\b",
            Entropy(3.0),
        ),
        text(
            "slack-token",
            &[
                "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe-", "xapp-",
            ],
            1,
            260,
            r"\b(?P<s>(?:xox[baprseo]|xapp)-(?P<r>[0-9A-Za-z-]{10,250}))",
            Entropy(3.0),
        ),
        text(
            "slack-webhook",
            &["hooks.slack.com"],
            12,
            160,
            r"(?P<s>https?://hooks\.slack\.com/(?:services|workflows|triggers)/(?P<r>[A-Za-z0-9+/_-]{20,120}))",
            Entropy(3.0),
        ),
        text(
            "gcp-api-key",
            &["AIza"],
            1,
            45,
            r"\b(?P<s>AIza(?P<r>[0-9A-Za-z_-]{35}))(?:[^0-9A-Za-z_-]|$)",
            Entropy(3.0),
        ),
        text(
            "huggingface-token",
            &["hf_", "api_org_"],
            1,
            50,
            r"\b(?P<s>(?:hf_|api_org_)(?P<r>[A-Za-z]{34}))(?:[^A-Za-z0-9_]|$)",
            Entropy(3.0),
        ),
        text(
            "openai-api-key",
            &["T3BlbkFJ"],
            100,
            100,
            r"\b(?P<s>sk-(?:(?:proj|svcacct|admin)-)?(?P<r>[A-Za-z0-9_-]{20,80}T3BlbkFJ[A-Za-z0-9_-]{20,80}))(?:[^A-Za-z0-9_-]|$)",
            Entropy(3.0),
        ),
        text(
            "openai-api-key",
            &["sk-proj-", "sk-svcacct-", "sk-admin-"],
            1,
            220,
            r"\b(?P<s>sk-(?:proj|svcacct|admin)-(?P<r>[A-Za-z0-9_-]{40,200}))(?:[^A-Za-z0-9_-]|$)",
            Entropy(3.5),
        ),
        text(
            "anthropic-api-key",
            &["sk-ant-"],
            1,
            140,
            r"\b(?P<s>sk-ant-(?:api|admin|sid)[0-9]{2}-(?P<r>[A-Za-z0-9_-]{80,120}))(?:[^A-Za-z0-9_-]|$)",
            Entropy(3.5),
        ),
        text(
            "npm-token",
            &["npm_"],
            1,
            45,
            r"\b(?P<s>npm_(?P<r>[A-Za-z0-9]{36}))(?:[^A-Za-z0-9]|$)",
            Entropy(3.0),
        ),
        text(
            "pypi-token",
            &["pypi-AgEIcHlwaS5vcmc"],
            1,
            420,
            r"\b(?P<s>pypi-AgEIcHlwaS5vcmc(?P<r>[A-Za-z0-9_-]{50,400}))",
            Entropy(3.5),
        ),
        text(
            "authorization-header",
            &["authorization"],
            8,
            4_200,
            r#"(?i)\b(?:proxy-)?authorization["']?\s{0,5}[:=]\s{0,5}["']?(?:(?:basic|bearer|token|digest|negotiate|apikey|aws4-hmac-sha256)\s+)?(?P<s>[A-Za-z0-9._~+/=:,-]{8,4096})"#,
            Entropy(3.0),
        ),
        text(
            "url-password",
            &["://"],
            40,
            600,
            r#"(?i)\b[a-z][a-z0-9+.-]{1,30}://[^\s/:@"'<>\x00]{1,256}:(?P<s>[^\s/@"'<>\x00]{1,256})@[^\s/"'<>\x00@]"#,
            Password,
        ),
        text(
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
                "secret",
                "token",
            ],
            80,
            240,
            r#"(?i)[\w.-]{0,50}?(?:access|auth|api|credential|creds|key|passw(?:or)?d|secret|token)[\w.-]{0,20}[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}(?P<s>[\w.=-]{10,150}|[a-z0-9][a-z0-9+/]{11,150}={0,3})"#,
            Generic,
        ),
    ]
}
