//! hrr-pack end to end: archives written with hrr-archive's writer, the binary run on them.
//! Round trips, determinism, malicious tarballs (built here), corruption, scan recall and
//! false positives, scrub (no secret left anywhere, idempotent, replay ranges recorded).

//!
//! One module per concern: `pack` (pack, unpack, list, verify), `tarballs` (malicious packs),
//! `scan`, `scrub`, `output` (error style, JSON, completions, man pages, standard input); the
//! archives, planted secrets and searches they share are here.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use base64::engine::general_purpose::{STANDARD as B64STD, URL_SAFE_NO_PAD as B64URL_NOPAD};
use base64::Engine;
use hrr_archive::schema::FieldType;
use hrr_archive::testkit::{self, Rng};
use hrr_archive::ObjectId;

#[path = "../common/mod.rs"]
mod common;
use common::*;
use Part::{L, R};

mod output;
mod pack;
mod scan;
mod scrub;
mod tarballs;

// ---------------------------------------------------------------------------------------------
// Helpers

/// Text secrets planted in the scan and scrub tests, each with the text a process would hold
/// around it: (rule, text before, the secret's parts, text after).
#[rustfmt::skip]
const PLANTS: &[PlantRow] = &[
    ("aws-access-key-id", "AWS_ACCESS_KEY_ID=", &[L("AKIA"), R(16, BASE32)], "\0"),
    ("aws-secret-access-key", "aws_secret_access_key = ", &[R(40, B64)], "\n"),
    ("github-token", "GITHUB_TOKEN=", &[L("ghp_"), R(36, ALNUM)], "\0"),
    ("github-fine-grained-pat", "GH_PAT=", &[L("github_pat_"), R(82, ALNUM)], "\0"),
    (
        "slack-token",
        "SLACK_BOT_TOKEN=",
        &[L("xoxb-"), R(12, DIGITS), L("-"), R(13, DIGITS), L("-"), R(24, ALNUM)],
        "\0",
    ),
    ("gcp-api-key", "GOOGLE_API_KEY=", &[L("AIza"), R(35, URLSAFE)], "\0"),
    ("huggingface-token", "HF_TOKEN=", &[L("hf_"), R(34, ALPHA)], "\0"),
    (
        "openai-api-key",
        "OPENAI_API_KEY=",
        &[L("sk-proj-"), R(58, URLSAFE), L("T3BlbkFJ"), R(58, URLSAFE)],
        "\0",
    ),
    ("anthropic-api-key", "ANTHROPIC_API_KEY=", &[L("sk-ant-api03-"), R(93, URLSAFE), L("AA")], "\0"),
    ("npm-token", "//registry.npmjs.org/:_authToken=", &[L("npm_"), R(36, ALNUM)], "\n"),
    ("pypi-token", "password = ", &[L("pypi-AgEIcHlwaS5vcmc"), R(120, URLSAFE)], "\n"),
    ("url-password", "DATABASE_URL=postgres://admin:", &[R(14, ALNUM)], "@db.internal:5432/app\0"),
    ("generic-secret", "MY_SERVICE_SECRET=", &[R(32, ALNUM)], "\0"),
];

/// A secret of every text rule the scan and scrub tests plant: the rows of [`PLANTS`], then
/// three PEM keys (plain, JSON-escaped, OpenSSH), a JWT and a basic-auth header.
fn text_plants(r: &mut Rng) -> Vec<Plant> {
    let mut v = plants(PLANTS, r);
    let pem = |r: &mut Rng, lines: usize, width: usize, newline: &str| {
        let body: Vec<String> = (0..lines).map(|_| r.text(width, B64)).collect();
        format!("{newline}{}{newline}", body.join(newline))
    };
    let rsa = pem(r, 12, 64, "\n");
    v.push(plant(
        "pem-private-key",
        "-----BEGIN RSA PRIVATE KEY-----",
        &rsa,
        "-----END RSA PRIVATE KEY-----\n",
    ));
    let json = pem(r, 6, 70, "\\n");
    v.push(plant(
        "pem-private-key",
        "{\"private_key\": \"-----BEGIN PRIVATE KEY-----",
        &json,
        "-----END PRIVATE KEY-----\\n\"}",
    ));
    let ssh = pem(r, 5, 70, "\n");
    v.push(plant(
        "pem-private-key",
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        &ssh,
        "-----END OPENSSH PRIVATE KEY-----\n",
    ));
    // a JWT is checked for structure: header and payload are JSON
    let payload = format!("{{\"sub\":\"{}\",\"iat\":1700000000}}", r.text(30, ALNUM));
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{}.{}",
        B64URL_NOPAD.encode(payload),
        r.text(43, URLSAFE)
    );
    v.push(plant("jwt", "id_token: \"", &jwt, "\""));
    let basic = B64STD.encode(format!("admin:{}", r.text(24, ALNUM)));
    v.push(plant(
        "authorization-header",
        "GET / HTTP/1.1\r\nAuthorization: Basic ",
        &basic,
        "\r\n",
    ));
    v
}

/// The text of the first plant of `rule`.
fn plant_text<'a>(plants: &'a [Plant], rule: &str) -> &'a [u8] {
    &plants.iter().find(|p| p.rule == rule).unwrap().text
}

/// A DER PKCS#1 RSA key of random content, and its body.
fn der_rsa(r: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let body = rsa_body(r);
    (der(0x30, &body), body)
}

fn schema() -> hrr_archive::schema::Schema {
    testkit::copy_schema(&[("note", FieldType::Bytes)])
}

/// Write a capture of process `pid` under `root` holding `blobs` (each copied H2D and back D2H)
/// and one code object.
fn write_process(root: &Path, pid: u32, blobs: &[Vec<u8>], code: &[u8]) -> Vec<ObjectId> {
    let capture = testkit::CopyCapture {
        pid,
        thread: 7,
        code,
        module: 0x10,
        base: 0x7000_0000,
        stride: 0x10000,
        d2h_note: Some(b"inline"),
    };
    testkit::write_copy_capture(root, &schema(), &capture, blobs.iter().cloned()).unwrap()
}

/// An archive with two processes: compressible and random blobs, no secrets.
fn clean_archive(root: &Path) {
    let mut r = Rng(42);
    let text: Vec<u8> = b"the quick brown fox jumps over the lazy dog\n"
        .iter()
        .cycle()
        .take(300_000)
        .copied()
        .collect();
    write_process(
        root,
        100,
        &[vec![0u8; 1 << 20], r.bytes(700_000), text],
        &r.bytes(5000),
    );
    write_process(root, 101, &[r.bytes(3000), vec![1u8; 10]], &r.bytes(100));
}

/// A temp folder with [`clean_archive`] at `run.hrr` in it: the folder, the archive.
fn clean_in_temp() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("run.hrr");
    clean_archive(&src);
    (t, src)
}

/// A temp folder with [`secret_archive`] at `sec.hrr` in it: the folder, the archive, its
/// secrets.
fn secrets_in_temp() -> (tempfile::TempDir, PathBuf, Vec<Vec<u8>>) {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("sec.hrr");
    let secrets = secret_archive(&src);
    (t, src, secrets)
}

/// Every regular file below `dir`: relative path → (mode, content).
fn tree(dir: &Path) -> BTreeMap<String, (u32, Vec<u8>)> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(dir).sort_by_file_name().min_depth(1) {
        let e = e.unwrap();
        let rel = e
            .path()
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let mode = e.metadata().unwrap().permissions().mode() & 0o7777;
        let content = if e.file_type().is_file() {
            std::fs::read(e.path()).unwrap()
        } else {
            Vec::new()
        };
        out.insert(rel, (mode, content));
    }
    out
}

fn zstd_decompress(b: &[u8]) -> Vec<u8> {
    zstd::stream::decode_all(b).unwrap()
}

fn zstd_compress(b: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(b, 3).unwrap()
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle present")
}

/// An archive whose blobs, code object and events hold every class of secret.
fn secret_archive(root: &Path) -> Vec<Vec<u8>> {
    let mut r = Rng(2024);
    let plants = text_plants(&mut r);
    let mut env = Vec::new();
    let mut wide = r.bytes(1000);
    let mut secrets = Vec::new();
    for p in &plants {
        env.extend_from_slice(&p.text);
        env.push(0);
        wide.extend(utf16(&p.text));
        wide.extend(r.bytes(50));
        secrets.push(p.secret.clone());
    }
    let (der, der_secret) = der_rsa(&mut r);
    let (ssh, ssh_secret) = openssh_key(&mut r);
    let mut binary = r.bytes(4000);
    binary.extend(&der);
    binary.extend(r.bytes(300));
    binary.extend(&ssh);
    binary.extend(r.bytes(300));
    secrets.push(der_secret[8..40].to_vec());
    secrets.push(ssh_secret[..32].to_vec());
    // a big blob with a secret straddling the scanner's 1 MiB step
    let mut big = vec![0u8; (1 << 20) - 20];
    big.extend_from_slice(plant_text(&plants, "github-token"));
    big.extend(vec![0u8; 100_000]);
    let mut code = b"\x7fELF fake cubin with a string: ".to_vec();
    code.extend_from_slice(plant_text(&plants, "github-fine-grained-pat"));
    write_process(root, 300, &[env, wide, binary, big, r.bytes(10_000)], &code);
    write_process(root, 301, &[b"nothing to see here".to_vec()], b"clean code");
    secrets
}

fn grep_tree(dir: &Path, needles: &[Vec<u8>]) -> Vec<String> {
    let mut hits = Vec::new();
    for e in walkdir::WalkDir::new(dir) {
        let e = e.unwrap();
        if !e.file_type().is_file() {
            continue;
        }
        let data = std::fs::read(e.path()).unwrap();
        for n in needles {
            for form in [n.clone(), utf16(n)] {
                if data.windows(form.len()).any(|w| w == &form[..]) {
                    hits.push(format!(
                        "{} holds {:?}",
                        e.path().display(),
                        String::from_utf8_lossy(n)
                    ));
                }
            }
        }
    }
    hits
}

fn grep_output(o: &Output, needles: &[Vec<u8>]) {
    for n in needles {
        for stream in [&o.stdout, &o.stderr] {
            for form in [n.clone(), utf16(n)] {
                assert!(
                    !stream.windows(form.len()).any(|w| w == &form[..]),
                    "a secret appears in the output"
                );
            }
        }
    }
}

fn demo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.hrr")
}
