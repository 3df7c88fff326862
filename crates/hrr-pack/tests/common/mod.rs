//! Helpers shared by the integration suites of `hrr-pack` (each suite uses some of them): the
//! binary under test with a fingerprint key kept under `target/`, its combined output, and the
//! byte forms secrets are planted in.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
