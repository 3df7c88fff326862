//! Private keys: PEM and PuTTY text, age keys, and the binary formats (OpenSSH, DER PKCS#1,
//! PKCS#8, SEC1, PKCS#12), whose keywords are stored masked ([`masked!`]).

use super::*;

/// The private keys rules, in rule order.
pub(super) fn private_keys() -> Vec<Rule> {
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
    ]
    .into_iter()
    .chain(BINARY.iter().map(|&(id, masked, back, form)| binary(id, masked, back, form)))
    .collect()
}

/// The binary keys: (rule, keyword through [`masked!`], bytes of the key before the keyword,
/// DER form; `None`: OpenSSH). A table, one row a keyword, in rule order (rustfmt would break
/// every row over six lines).
#[rustfmt::skip]
const BINARY: &[(&str, &[u8], usize, Option<DerForm>)] = &[
    ("openssh-private-key", masked!(*b"openssh-key-v1\0"), 0, None),
    ("der-rsa-private-key", masked!([0x02, 0x01, 0x00, 0x02, 0x82]), 4, Some(DerForm::Pkcs1Rsa)),
    ("der-rsa-private-key", masked!([0x02, 0x01, 0x00, 0x02, 0x81]), 4, Some(DerForm::Pkcs1Rsa)),
    ("der-pkcs8-private-key", masked!([0x02, 0x01, 0x00, 0x30, 0x0D, 0x06, 0x09, 0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]), 4, Some(DerForm::Pkcs8Long)),
    ("der-pkcs8-private-key", masked!([0x02, 0x01, 0x00, 0x30, 0x13, 0x06, 0x07, 0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]), 3, Some(DerForm::Pkcs8Short)),
    ("der-ed25519-private-key", masked!([0x30, 0x2E, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2B, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20]), 0, Some(DerForm::Pkcs8Ed25519)),
    ("der-ec-private-key", masked!([0x02, 0x01, 0x01, 0x04, 0x20]), 3, Some(DerForm::Sec1)),
    ("der-ec-private-key", masked!([0x02, 0x01, 0x01, 0x04, 0x30]), 3, Some(DerForm::Sec1)),
    ("pkcs12-container", masked!([0x02, 0x01, 0x03, 0x30, 0x82]), 4, Some(DerForm::Pkcs12)),
];
