//! Helpers shared by the integration suites of `hrr-pack` (each suite uses some of them): the
//! binary under test with a fingerprint key kept under `target/`, its combined output, the
//! byte forms secrets are planted in, and planted secrets made from table rows.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use hrr_archive::testkit::Rng;

/// `hrr-pack`, with one fingerprint key for the whole run of a suite (created by its first
/// command), kept under `target/`.
pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_hrr-pack"));
    c.env("HRR_FINGERPRINT_KEY_FILE", key_file());
    c
}

/// The fingerprint key file of this suite's run.
pub fn key_file() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hrr-pack-key");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("fingerprint-{}.key", std::process::id()))
}

/// Run [`bin`] with `args` to its end.
pub fn run(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = bin();
    for a in args {
        c.arg(a);
    }
    c.output().unwrap()
}

/// Run [`bin`] with `args`, which must succeed: its output.
pub fn succeeds(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let o = run(args);
    assert!(o.status.success(), "{}", text(&o));
    o
}

/// Run [`bin`] with `args`, which must exit with `code` (its output shown if not): its output.
pub fn exits(args: &[&dyn AsRef<std::ffi::OsStr>], code: i32) -> Output {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "{}", text(&o));
    o
}

/// Run [`bin`] with `args`, which must exit with `code` and say `what` (on stdout or stderr).
pub fn fails_saying(args: &[&dyn AsRef<std::ffi::OsStr>], code: i32, what: &str) {
    let o = run(args);
    let said = text(&o);
    assert_eq!(o.status.code(), Some(code), "{said}");
    assert!(said.contains(what), "expected `{what}` in: {said}");
}

/// Stdout then stderr, as text.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// ASCII text as UTF-16LE.
pub fn utf16(b: &[u8]) -> Vec<u8> {
    b.iter().flat_map(|&c| [c, 0]).collect()
}

/// An unencrypted OpenSSH binary private key holding one `public` key and the `private` section.
pub fn openssh_binary(public: &[u8], private: &[u8]) -> Vec<u8> {
    let mut v = b"openssh-key-v1\0".to_vec();
    let s = |v: &mut Vec<u8>, b: &[u8]| {
        v.extend_from_slice(&(b.len() as u32).to_be_bytes());
        v.extend_from_slice(b);
    };
    s(&mut v, b"none");
    s(&mut v, b"none");
    s(&mut v, b"");
    v.extend_from_slice(&1u32.to_be_bytes());
    s(&mut v, public);
    s(&mut v, private);
    v
}

pub const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub const UPNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
pub const LOWNUM: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
pub const ALPHA: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
pub const HEX: &[u8] = b"0123456789abcdef";
pub const DIGITS: &[u8] = b"0123456789";
pub const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
pub const URLSAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
pub const BASE32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
pub const BECH32: &[u8] = b"QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";

/// An OpenSSH binary private key of random content, and its private section.
pub fn openssh_key(r: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let public = r.bytes(51);
    let private = r.bytes(150);
    (openssh_binary(&public, &private), private)
}

/// A DER length.
fn der_len(n: usize) -> Vec<u8> {
    if n < 0x80 {
        vec![n as u8]
    } else if n < 0x100 {
        vec![0x81, n as u8]
    } else {
        vec![0x82, (n >> 8) as u8, n as u8]
    }
}

/// A DER element: `tag`, the length of `body`, `body`.
pub fn der(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend(der_len(body.len()));
    v.extend_from_slice(body);
    v
}
/// The body of a DER PKCS#1 RSA key of random content: nine INTEGERs (version 0, n, e, d, p,
/// q, dp, dq, qinv), as the scanner's structure check wants.
pub fn rsa_body(r: &mut Rng) -> Vec<u8> {
    let mut body = der(0x02, &[0]);
    let mut n = vec![0];
    n.extend(r.bytes(256));
    body.extend(der(0x02, &n));
    body.extend(der(0x02, &[1, 0, 1]));
    for len in [256, 128, 128, 128, 128, 128] {
        let mut x = r.bytes(len);
        x[0] &= 0x7F;
        body.extend(der(0x02, &x));
    }
    body
}

/// One planted secret: the rule that must find it, its text as the program held it, and the
/// sensitive part of it (what must not survive scrub; prefixes like `ghp_` may).
#[derive(Clone)]
pub struct Plant {
    pub rule: &'static str,
    pub text: Vec<u8>,
    pub secret: Vec<u8>,
    /// Binary (DER, OpenSSH): only the binary contexts apply.
    pub binary: bool,
}

impl Plant {
    /// Where the secret starts in the text.
    pub fn secret_offset(&self) -> usize {
        self.text
            .windows(self.secret.len())
            .position(|x| x == self.secret.as_slice())
            .unwrap()
    }
}

/// A plant of `secret` between `before` and `after`.
pub fn plant(rule: &'static str, before: &str, secret: &str, after: &str) -> Plant {
    Plant {
        rule,
        text: format!("{before}{secret}{after}").into_bytes(),
        secret: secret.as_bytes().to_vec(),
        binary: false,
    }
}

/// A piece of a planted secret.
#[derive(Clone, Copy)]
pub enum Part {
    /// `n` random characters of an alphabet.
    R(usize, &'static [u8]),
    /// Fixed text.
    L(&'static str),
}

/// A planted-secret row: (rule, text before, the secret's parts, text after).
pub type PlantRow = (&'static str, &'static str, &'static [Part], &'static str);

/// The plants of `rows`, their random parts drawn from `r` in order.
pub fn plants(rows: &[PlantRow], r: &mut Rng) -> Vec<Plant> {
    rows.iter()
        .map(|(rule, before, parts, after)| {
            let secret: String = parts
                .iter()
                .map(|p| match *p {
                    Part::R(n, alphabet) => r.text(n, alphabet),
                    Part::L(s) => s.to_string(),
                })
                .collect();
            plant(rule, before, &secret, after)
        })
        .collect()
}
