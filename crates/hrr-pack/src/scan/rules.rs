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

/// Every rule, specific ones first.
pub fn all() -> Vec<Rule> {
    use Check::*;
    let mut v = vec![
        // ---- private keys -----------------------------------------------------------------
        text(
            "pem-private-key",
            &["-----BEGIN"],
            0,
            17_000,
            r"(?i)-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----(?P<s>[\s\S]{64,16384}?)-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----",
            Entropy(3.0),
        ),
        text(
            "putty-private-key",
            &["Private-Lines:"],
            0,
            9_000,
            r"Private-Lines: ?[0-9]{1,3}\r?\n(?P<s>(?:[A-Za-z0-9+/=]{4,64}\r?\n){1,120})",
            Entropy(3.0),
        ),
        tok(
            "age-secret-key",
            &["AGE-SECRET-KEY-1"],
            80,
            r"(?P<s>AGE-SECRET-KEY-1(?P<r>[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}))",
            Entropy(3.0),
        ),
        binary(
            "openssh-private-key",
            masked!(*b"openssh-key-v1\0"),
            0,
            None,
        ),
        binary(
            "der-rsa-private-key",
            masked!([0x02, 0x01, 0x00, 0x02, 0x82]),
            4,
            Some(DerForm::Pkcs1Rsa),
        ),
        binary(
            "der-rsa-private-key",
            masked!([0x02, 0x01, 0x00, 0x02, 0x81]),
            4,
            Some(DerForm::Pkcs1Rsa),
        ),
        binary(
            "der-pkcs8-private-key",
            masked!([
                0x02, 0x01, 0x00, 0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01,
                0x01, 0x01,
            ]),
            4,
            Some(DerForm::Pkcs8Long),
        ),
        binary(
            "der-pkcs8-private-key",
            masked!([
                0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01,
            ]),
            3,
            Some(DerForm::Pkcs8Short),
        ),
        binary(
            "der-ed25519-private-key",
            masked!([
                0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22,
                0x04, 0x20,
            ]),
            0,
            Some(DerForm::Pkcs8Ed25519),
        ),
        binary(
            "der-ec-private-key",
            masked!([0x02, 0x01, 0x01, 0x04, 0x20]),
            3,
            Some(DerForm::Sec1),
        ),
        binary(
            "der-ec-private-key",
            masked!([0x02, 0x01, 0x01, 0x04, 0x30]),
            3,
            Some(DerForm::Sec1),
        ),
        binary(
            "pkcs12-container",
            masked!([0x02, 0x01, 0x03, 0x30, 0x82]),
            4,
            Some(DerForm::Pkcs12),
        ),
        // ---- cloud --------------------------------------------------------------------------
        text(
            "aws-access-key-id",
            &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
            0,
            24,
            r"(?P<s>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)(?P<r>[A-Z2-7]{16}))",
            Entropy(3.0),
        ),
        text(
            "aws-secret-access-key",
            &["secret"],
            40,
            100,
            &format!(
                r#"(?i)(?P<k>aws[\w.-]{{0,20}}?secret[\w.-]{{0,20}}?)["']?\s{{0,3}}(?:=|:|:=|=>)\s{{0,3}}["']?(?P<s>[{B64}]{{40}})"#
            ),
            Entropy(4.0),
        ),
        text(
            "aws-session-token",
            &[
                "session_token",
                "session-token",
                "sessiontoken",
                "security-token",
            ],
            20,
            1_300,
            &format!(
                r#"(?i)(?P<k>(?:aws[\w.-]{{0,8}})?(?:session|security)[_-]?token)["']?\s{{0,3}}(?:=|:|:=|=>)\s{{0,3}}["']?(?P<s>[{B64}]{{100,1200}}={{0,2}})"#
            ),
            Entropy(4.0),
        ),
        tok(
            "aws-bedrock-api-key",
            &["ABSKQmVkcm9ja0FQSUtleS"],
            300,
            &format!(r"(?P<s>ABSK(?P<r>QmVkcm9ja0FQSUtleS[{B64}]{{80,260}}={{0,2}}))"),
            Entropy(4.0),
        ),
        tok(
            "gcp-api-key",
            &["AIza"],
            40,
            r"(?P<s>AIza(?P<r>[0-9A-Za-z_-]{35}))",
            Entropy(3.0),
        ),
        tok(
            "gcp-oauth-client-secret",
            &["GOCSPX-"],
            40,
            r"(?P<s>GOCSPX-(?P<r>[0-9A-Za-z_-]{28}))",
            Entropy(3.0),
        ),
        tok(
            "gcp-oauth-access-token",
            &["ya29."],
            2_100,
            r"(?P<s>ya29\.(?P<r>[0-9A-Za-z_-]{30,2048}))",
            Mixed(3.5),
        ),
        text(
            "azure-storage-account-key",
            &["AccountKey="],
            0,
            100,
            &format!(r"(?i)AccountKey=(?P<s>[{B64}]{{86}}==)"),
            Entropy(4.0),
        ),
        text(
            "azure-shared-access-key",
            &["SharedAccessKey="],
            0,
            100,
            &format!(r"(?i)SharedAccessKey=(?P<s>[{B64}]{{43}}=)"),
            Entropy(4.0),
        ),
        text(
            "azure-sas-signature",
            &["sig="],
            0,
            120,
            r"(?:[?&]|^)sig=(?P<s>[A-Za-z0-9%+/]{40,100}(?:%3[Dd]|=)?)",
            Mixed(4.0),
        ),
        text(
            "azure-ad-client-secret",
            &["Q~"],
            4,
            40,
            r"(?P<s>[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})",
            Mixed(3.5),
        ),
        text(
            "azure-devops-pat",
            &["AZDO"],
            76,
            10,
            r"(?P<s>[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4})",
            Mixed(4.0),
        ),
        tok(
            "alibaba-access-key-id",
            &["LTAI"],
            30,
            r"(?P<s>LTAI(?P<r>[A-Za-z0-9]{20}))",
            Mixed(3.5),
        ),
        tok(
            "tencent-secret-id",
            &["AKID"],
            40,
            r"(?P<s>AKID(?P<r>[A-Za-z0-9]{32}))",
            Mixed(3.5),
        ),
        tok(
            "digitalocean-token",
            &["dop_v1_", "doo_v1_", "dor_v1_"],
            75,
            r"(?P<s>do[opr]_v1_(?P<r>[a-f0-9]{64}))",
            Entropy(3.0),
        ),
        tok(
            "heroku-api-key",
            &["HRKU-"],
            70,
            r"(?P<s>HRKU-(?P<r>[0-9A-Za-z_-]{60}))",
            Entropy(3.5),
        ),
        tok(
            "cloudflare-origin-ca-key",
            &["v1.0-"],
            180,
            r"(?P<s>v1\.0-(?P<r>[a-f0-9]{24}-[a-f0-9]{146}))",
            Entropy(3.0),
        ),
        tok(
            "databricks-token",
            &["dapi"],
            40,
            r"(?P<s>dapi(?P<r>[a-f0-9]{32}(?:-[0-9])?))",
            Mixed(3.0),
        ),
        tok(
            "hashicorp-vault-token",
            &["hvs.", "hvb.", "hvr."],
            260,
            r"(?P<s>hv[sbr]\.(?P<r>[A-Za-z0-9_-]{90,250}))",
            Mixed(4.0),
        ),
        text(
            "terraform-cloud-token",
            &[".atlasv1."],
            14,
            90,
            r"(?P<s>[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,70})",
            Entropy(3.5),
        ),
        tok(
            "doppler-token",
            &[
                "dp.pt.",
                "dp.st.",
                "dp.sa.",
                "dp.ct.",
                "dp.scim.",
                "dp.audit.",
            ],
            60,
            r"(?P<s>dp\.(?:pt|st|sa|ct|scim|audit)\.(?P<r>[A-Za-z0-9]{40,44}))",
            Entropy(3.5),
        ),
        tok(
            "pulumi-token",
            &["pul-"],
            50,
            r"(?P<s>pul-(?P<r>[a-f0-9]{40}))",
            Mixed(3.0),
        ),
        tok(
            "flyio-token",
            &["fo1_", "fm1r_", "fm2_"],
            1_100,
            r"(?P<s>(?:fo1_|fm1r_|fm2_)(?P<r>[A-Za-z0-9_+/=-]{43,1000}))",
            Entropy(4.0),
        ),
        tok(
            "supabase-token",
            &["sbp_", "sb_secret_"],
            60,
            r"(?P<s>(?:sbp_|sb_secret_)(?P<r>[A-Za-z0-9_-]{30,50}))",
            Mixed(3.5),
        ),
        tok(
            "planetscale-token",
            &["pscale_tkn_", "pscale_pw_", "pscale_oauth_"],
            80,
            r"(?P<s>pscale_(?:tkn|pw|oauth)_(?P<r>[A-Za-z0-9_.=-]{32,64}))",
            Entropy(3.5),
        ),
        tok(
            "grafana-token",
            &["glc_", "glsa_"],
            420,
            &format!(
                r"(?P<s>(?:glc_(?P<r>[{B64}]{{32,400}}={{0,2}})|glsa_[A-Za-z0-9]{{32}}_[A-Fa-f0-9]{{8}}))"
            ),
            Entropy(3.5),
        ),
        tok(
            "newrelic-key",
            &["NRAK-", "NRJS-", "NRII-", "NRAA-"],
            40,
            r"(?P<s>NR(?:AK|JS|II|AA)-(?P<r>[A-Za-z0-9]{19,32}))",
            Mixed(3.0),
        ),
        tok(
            "sentry-token",
            &["sntrys_eyJ", "sntryu_"],
            400,
            r"(?P<s>sntry(?:s_(?P<r>eyJ[A-Za-z0-9+/=_]{30,300}_[A-Za-z0-9+/]{43})|u_[a-f0-9]{64}))",
            Entropy(3.5),
        ),
        tok(
            "dynatrace-token",
            &["dt0c01."],
            100,
            r"(?P<s>dt0c01\.(?P<r>[A-Z0-9]{24}\.[A-Z0-9]{64}))",
            Entropy(3.5),
        ),
        tok(
            "postman-api-key",
            &["PMAK-"],
            70,
            r"(?P<s>PMAK-(?P<r>[a-f0-9]{24}-[a-f0-9]{34}))",
            Entropy(3.0),
        ),
        tok(
            "atlassian-api-token",
            &["ATATT3", "ATCTT3", "ATBB"],
            260,
            r"(?P<s>(?:ATATT3|ATCTT3)(?P<r>[A-Za-z0-9_=-]{150,250})|ATBB[A-Za-z0-9_=.-]{32,40})",
            Mixed(4.0),
        ),
        tok(
            "linear-api-key",
            &["lin_api_", "lin_oauth_"],
            60,
            r"(?P<s>lin_(?:api|oauth)_(?P<r>[A-Za-z0-9]{40}))",
            Entropy(3.5),
        ),
        tok(
            "notion-token",
            &["ntn_", "secret_"],
            60,
            r"(?P<s>(?:ntn_(?P<r>[0-9]{11}[A-Za-z0-9]{35})|secret_[A-Za-z0-9]{43}))",
            Mixed(4.0),
        ),
        tok(
            "shopify-token",
            &["shpat_", "shpca_", "shppa_", "shpss_"],
            50,
            r"(?P<s>shp(?:at|ca|pa|ss)_(?P<r>[a-fA-F0-9]{32}))",
            Entropy(3.0),
        ),
        tok(
            "airtable-token",
            &["pat"],
            90,
            r"(?P<s>pat(?P<r>[A-Za-z0-9]{14}\.[a-f0-9]{64}))",
            Mixed(3.0),
        ),
        tok(
            "contentful-token",
            &["CFPAT-"],
            60,
            r"(?P<s>CFPAT-(?P<r>[A-Za-z0-9_-]{43}))",
            Entropy(3.5),
        ),
        tok(
            "prefect-api-key",
            &["pnu_"],
            50,
            r"(?P<s>pnu_(?P<r>[A-Za-z0-9]{36}))",
            Mixed(3.5),
        ),
        tok(
            "readme-api-key",
            &["rdme_"],
            80,
            r"(?P<s>rdme_(?P<r>[a-z0-9]{70}))",
            Entropy(4.0),
        ),
        tok(
            "sourcegraph-token",
            &["sgp_"],
            70,
            r"(?P<s>sgp_(?P<r>(?:[A-Fa-f0-9]{16}_)?[a-fA-F0-9]{40}))",
            Mixed(3.0),
        ),
        tok(
            "harness-token",
            &["pat.", "sat."],
            80,
            r"(?P<s>[ps]at\.(?P<r>[A-Za-z0-9_-]{22}\.[0-9a-f]{24}\.[A-Za-z0-9]{20}))",
            Entropy(3.5),
        ),
        tok(
            "onepassword-service-token",
            &["ops_eyJ"],
            2_100,
            &format!(r"(?P<s>ops_(?P<r>eyJ[{B64}]{{250,2000}}={{0,2}}))"),
            Entropy(4.0),
        ),
        tok(
            "mapbox-secret-token",
            &["sk.eyJ"],
            300,
            r"(?P<s>sk\.(?P<r>eyJ[A-Za-z0-9_-]{20,150}\.[A-Za-z0-9_-]{20,120}))",
            Entropy(4.0),
        ),
        tok(
            "dropbox-token",
            &["sl."],
            200,
            r"(?P<s>sl\.(?P<r>[A-Za-z0-9_-]{130,180}))",
            Mixed(4.5),
        ),
        // ---- version control ----------------------------------------------------------------
        tok(
            "github-token",
            &["ghp_", "gho_", "ghu_", "ghs_", "ghr_"],
            45,
            r"(?P<s>gh[pousr]_(?P<r>[0-9A-Za-z]{36}))",
            Crc32Base62,
        ),
        tok(
            "github-fine-grained-pat",
            &["github_pat_"],
            100,
            r"(?P<s>github_pat_(?P<r>[0-9A-Za-z_]{82}))",
            Entropy(3.0),
        ),
        tok(
            "gitlab-token",
            &[
                "glpat-",
                "gldt-",
                "glrt-",
                "gloas-",
                "glsoat-",
                "glft-",
                "glimt-",
                "glagent-",
                "glcbt-",
                "glffct-",
                "glwt-",
                "glptt-",
                "GR1348941",
            ],
            120,
            r"(?P<s>(?:gl(?:pat|dt|rt|oas|soat|ft|imt|agent|cbt|ffct|wt|ptt)-|GR1348941)(?P<r>[0-9A-Za-z_-]{20,80}(?:\.[0-9a-z]{2}\.[0-9a-z]{9})?))",
            Mixed(3.0),
        ),
        // ---- payment ------------------------------------------------------------------------
        tok(
            "stripe-secret-key",
            &["sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"],
            260,
            r"(?P<s>(?:[sr]k_(?:live|test)_|whsec_)(?P<r>[0-9A-Za-z]{24,247}))",
            Mixed(3.5),
        ),
        tok(
            "square-token",
            &["sq0atp-", "sq0csp-", "EAAA"],
            80,
            r"(?P<s>(?:sq0atp-(?P<r>[0-9A-Za-z_-]{22})|sq0csp-[0-9A-Za-z_-]{43}|EAAA[0-9A-Za-z_-]{60}))",
            Mixed(3.5),
        ),
        tok(
            "facebook-access-token",
            &["EAACEdEose0cBA", "EAAG", "EAAB", "EAAJ"],
            260,
            r"(?P<s>EAA(?:CEdEose0cBA|G|B|J)(?P<r>[0-9A-Za-z]{90,240}))",
            Mixed(4.0),
        ),
        tok(
            "braintree-access-token",
            &["access_token$"],
            80,
            r"(?P<s>access_token\$(?:production|sandbox)\$(?P<r>[0-9a-z]{16}\$[0-9a-f]{32}))",
            Entropy(3.0),
        ),
        tok(
            "razorpay-key",
            &["rzp_live_", "rzp_test_"],
            40,
            r"(?P<s>rzp_(?:live|test)_(?P<r>[A-Za-z0-9]{14}))",
            Mixed(3.0),
        ),
        tok(
            "flutterwave-key",
            &["FLWSECK-", "FLWSECK_TEST-"],
            60,
            r"(?P<s>FLWSECK(?:_TEST)?-(?P<r>[a-f0-9]{32})-X)",
            Entropy(3.0),
        ),
        tok(
            "plaid-access-token",
            &[
                "access-sandbox-",
                "access-development-",
                "access-production-",
            ],
            60,
            r"(?P<s>access-(?:sandbox|development|production)-(?P<r>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}))",
            Entropy(3.0),
        ),
        tok(
            "shippo-token",
            &["shippo_live_", "shippo_test_"],
            60,
            r"(?P<s>shippo_(?:live|test)_(?P<r>[a-f0-9]{40}))",
            Entropy(3.0),
        ),
        tok(
            "easypost-key",
            &["EZAK", "EZTK"],
            60,
            r"(?P<s>EZ[AT]K(?P<r>[A-Za-z0-9]{54}))",
            Mixed(3.5),
        ),
        tok(
            "duffel-token",
            &["duffel_live_", "duffel_test_"],
            60,
            r"(?P<s>duffel_(?:live|test)_(?P<r>[A-Za-z0-9_=-]{43}))",
            Entropy(3.5),
        ),
        // ---- messaging ----------------------------------------------------------------------
        tok(
            "slack-token",
            &[
                "xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxo-", "xoxe-", "xapp-", "xoxe.",
            ],
            260,
            r"(?P<s>(?:xox[baprseo]|xapp|xoxe\.xox[bp])-(?P<r>[0-9A-Za-z-]{10,250}))",
            Mixed(3.0),
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
            "discord-webhook",
            &["discord.com/api/webhooks/", "discordapp.com/api/webhooks/"],
            20,
            120,
            r"(?P<s>discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/(?P<r>[A-Za-z0-9_-]{60,68}))",
            Entropy(3.5),
        ),
        text(
            "teams-webhook",
            &[".webhook.office.com/"],
            40,
            300,
            r"(?P<s>[a-z0-9-]{1,40}\.webhook\.office\.com/webhookb2/(?P<r>[A-Za-z0-9@/_-]{40,250}))",
            Entropy(3.5),
        ),
        text(
            "telegram-bot-token",
            &[":AA"],
            10,
            40,
            r"(?P<s>[0-9]{8,10}:AA(?P<r>[0-9A-Za-z_-]{33}))",
            Entropy(3.5),
        ),
        tok(
            "twilio-api-key",
            &["SK"],
            40,
            r"(?P<s>SK(?P<r>[0-9a-fA-F]{32}))",
            Mixed(3.0),
        ),
        tok(
            "sendgrid-api-key",
            &["SG."],
            75,
            r"(?P<s>SG\.(?P<r>[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}))",
            Entropy(3.5),
        ),
        tok(
            "mailgun-api-key",
            &["key-"],
            40,
            r"(?P<s>key-(?P<r>[0-9a-f]{32}))",
            Mixed(3.0),
        ),
        text(
            "mailchimp-api-key",
            &["-us"],
            32,
            8,
            r"(?P<s>[0-9a-f]{32}-us[0-9]{1,2})",
            Mixed(3.0),
        ),
        tok(
            "brevo-api-key",
            &["xkeysib-", "xsmtpsib-"],
            100,
            r"(?P<s>x(?:keysib|smtpsib)-(?P<r>[a-f0-9]{64}-[A-Za-z0-9]{16}))",
            Entropy(3.5),
        ),
        text(
            "firebase-cloud-messaging-key",
            &[":APA91b"],
            12,
            150,
            r"(?P<s>AAAA[A-Za-z0-9_-]{7}:APA91b(?P<r>[A-Za-z0-9_-]{134}))",
            Entropy(4.0),
        ),
        tok(
            "typeform-token",
            &["tfp_"],
            70,
            r"(?P<s>tfp_(?P<r>[A-Za-z0-9_.=-]{59}))",
            Mixed(3.5),
        ),
        // ---- LLM and AI providers -----------------------------------------------------------
        text(
            "openai-api-key",
            &["T3BlbkFJ"],
            100,
            100,
            r"(?P<s>sk-(?:(?:proj|svcacct|admin)-)?(?P<r>[A-Za-z0-9_-]{20,80}T3BlbkFJ[A-Za-z0-9_-]{20,80}))",
            Entropy(3.0),
        ),
        tok(
            "openai-api-key",
            &["sk-proj-", "sk-svcacct-", "sk-admin-"],
            220,
            r"(?P<s>sk-(?:proj|svcacct|admin)-(?P<r>[A-Za-z0-9_-]{40,200}))",
            Entropy(3.5),
        ),
        tok(
            "anthropic-api-key",
            &["sk-ant-"],
            140,
            r"(?P<s>sk-ant-(?:api|admin|sid|oat|ort)[0-9]{2}-(?P<r>[A-Za-z0-9_-]{80,120}))",
            Entropy(3.5),
        ),
        tok(
            "openrouter-api-key",
            &["sk-or-v1-"],
            80,
            r"(?P<s>sk-or-v1-(?P<r>[a-f0-9]{64}))",
            Entropy(3.0),
        ),
        tok(
            "huggingface-token",
            &["hf_", "api_org_"],
            45,
            r"(?P<s>(?:hf_|api_org_)(?P<r>[A-Za-z]{34}))",
            Entropy(3.5),
        ),
        tok(
            "groq-api-key",
            &["gsk_"],
            60,
            r"(?P<s>gsk_(?P<r>[A-Za-z0-9]{52}))",
            Mixed(3.5),
        ),
        tok(
            "replicate-api-token",
            &["r8_"],
            45,
            r"(?P<s>r8_(?P<r>[A-Za-z0-9]{37}))",
            Mixed(3.5),
        ),
        tok(
            "perplexity-api-key",
            &["pplx-"],
            60,
            r"(?P<s>pplx-(?P<r>[A-Za-z0-9]{48}))",
            Mixed(3.5),
        ),
        tok(
            "xai-api-key",
            &["xai-"],
            90,
            r"(?P<s>xai-(?P<r>[A-Za-z0-9]{80}))",
            Mixed(4.0),
        ),
        tok(
            "nvidia-api-key",
            &["nvapi-"],
            75,
            r"(?P<s>nvapi-(?P<r>[A-Za-z0-9_-]{64}))",
            Entropy(3.5),
        ),
        tok(
            "langsmith-api-key",
            &["lsv2_pt_", "lsv2_sk_"],
            60,
            r"(?P<s>lsv2_(?:pt|sk)_(?P<r>[a-f0-9]{32}_[a-f0-9]{10}))",
            Entropy(3.0),
        ),
        tok(
            "pinecone-api-key",
            &["pcsk_"],
            90,
            r"(?P<s>pcsk_(?P<r>[A-Za-z0-9]{4,8}_[A-Za-z0-9]{55,75}))",
            Mixed(3.5),
        ),
        // ---- package registries -------------------------------------------------------------
        tok(
            "npm-token",
            &["npm_"],
            45,
            r"(?P<s>npm_(?P<r>[A-Za-z0-9]{36}))",
            Crc32Base62,
        ),
        tok(
            "pypi-token",
            &["pypi-AgEIcHlwaS5vcmc", "pypi-AgENdGVzdC5weXBpLm9yZw"],
            420,
            r"(?P<s>pypi-(?P<r>AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,400}))",
            Entropy(3.5),
        ),
        tok(
            "rubygems-api-key",
            &["rubygems_"],
            60,
            r"(?P<s>rubygems_(?P<r>[a-f0-9]{48}))",
            Entropy(3.0),
        ),
        tok(
            "nuget-api-key",
            &["oy2"],
            50,
            r"(?P<s>oy2(?P<r>[a-z0-9]{43}))",
            Entropy(4.0),
        ),
        tok(
            "dockerhub-token",
            &["dckr_pat_", "dckr_oat_"],
            50,
            r"(?P<s>dckr_(?:pat|oat)_(?P<r>[A-Za-z0-9_-]{27,32}))",
            Entropy(3.5),
        ),
        tok(
            "crates-io-token",
            &["cio"],
            40,
            r"(?P<s>cio(?P<r>[A-Za-z0-9]{32}))",
            Mixed(4.0),
        ),
        tok(
            "artifactory-token",
            &["AKCp", "cmVmd"],
            80,
            r"(?P<s>(?:AKCp(?P<r>[A-Za-z0-9]{69})|cmVmd[A-Za-z0-9]{59}))",
            Mixed(4.0),
        ),
        tok(
            "clojars-token",
            &["CLOJARS_"],
            70,
            r"(?P<s>CLOJARS_(?P<r>[a-z0-9]{60}))",
            Entropy(4.0),
        ),
        // ---- structured tokens and credentials in text --------------------------------------
        text(
            "jwt",
            &["eyJ"],
            4_200,
            8_400,
            r"(?P<s>ey[A-Za-z0-9_-]{17,4096}\.ey[A-Za-z0-9_-]{17,4096}\.(?:[A-Za-z0-9_-]{10,4096}={0,2})?)",
            Jwt,
        ),
        text(
            "docker-config-auth",
            &["\"auth\""],
            0,
            600,
            &format!(r#"(?P<k>"auth")\s{{0,3}}:\s{{0,3}}"(?P<s>[{B64}]{{8,512}}={{0,2}})""#),
            AuthHeader,
        ),
        text(
            "authorization-header",
            &["authorization"],
            8,
            4_200,
            r#"(?i)(?:proxy-)?authorization["']?\s{0,5}[:=]\s{0,5}["']?(?P<k>(?:basic|bearer|token|digest|negotiate|apikey|aws4-hmac-sha256|sso-key|key)\s+)?(?P<s>[A-Za-z0-9._~+/=:,-]{12,4096})"#,
            AuthHeader,
        ),
        text(
            "api-key-header",
            &[
                "x-api-key",
                "api-key:",
                "x-auth-token",
                "private-token",
                "x-access-token",
                "x-goog-api-key",
            ],
            0,
            600,
            r#"(?i)(?P<k>x-api-key|api-key|x-auth-token|private-token|x-access-token|x-goog-api-key)["']?\s{0,3}:\s{0,3}["']?(?P<s>[A-Za-z0-9._~+/=-]{20,512})"#,
            Mixed(3.5),
        ),
        text(
            "url-password",
            &["://"],
            40,
            600,
            r#"(?i)[a-z][a-z0-9+.-]{1,30}://[\x21-\x7e&&[^/:@"'<>]]{0,256}:(?P<s>[\x21-\x7e&&[^/@"'<>]]{1,256})@[\x21-\x7e&&[^/"'<>@]]"#,
            Password,
        ),
        text(
            "connection-string-password",
            &["password=", "pwd=", "password =", "pwd ="],
            400,
            200,
            r#"(?i)(?:server|data source|host|address|addr|hostname|uid|user id|username)\s*=[^\x00\r\n"]{0,300}?;\s*(?P<k>password|pwd)\s*=\s*(?P<s>[\x21-\x7e&&[^;"']]{1,128})"#,
            Password,
        ),
        text(
            "url-query-password",
            &["password=", "passwd=", "pwd="],
            1,
            200,
            r#"(?i)[?&;](?P<k>password|passwd|pwd)=(?P<s>[\x21-\x7e&&[^&;"'<>]]{1,128})"#,
            Password,
        ),
        text(
            "netrc-password",
            &["machine"],
            0,
            400,
            r"machine\s+[^\s\x00]{1,200}\s+login\s+[^\s\x00]{1,200}\s+password\s+(?P<s>[\x21-\x7e]{1,200})",
            Password,
        ),
    ];
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
