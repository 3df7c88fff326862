//! hrr-pack end to end: archives written with hrr-archive's writer, the binary run on them.
//! Round trips, determinism, malicious tarballs (built here), corruption, scan recall and
//! false positives, scrub (no secret left anywhere, idempotent, replay ranges recorded).

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use base64::engine::general_purpose::{STANDARD as B64STD, URL_SAFE_NO_PAD as B64URL_NOPAD};
use base64::Engine;
use hrr_archive::schema::{FieldType, Schema};
use hrr_archive::testkit::{self, Rng};
use hrr_archive::ObjectId;
use hrr_pack::fingerprint::FingerprintKey;
use hrr_pack::scan::{Encoding, Scanner};

mod common;
use common::{bin, openssh_binary, run, text, utf16};

// ---------------------------------------------------------------------------------------------
// Helpers

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URLSAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";

/// One planted secret: the rule that must find it, the text around it, the secret part.
struct Plant {
    rule: &'static str,
    text: Vec<u8>,
    secret: Vec<u8>,
}

/// A secret of every text rule.
fn text_plants(r: &mut Rng) -> Vec<Plant> {
    let mut v = Vec::new();
    let mut add = |rule: &'static str, before: String, secret: String, after: &str| {
        v.push(Plant {
            rule,
            text: format!("{before}{secret}{after}").into_bytes(),
            secret: secret.into_bytes(),
        });
    };
    let pem_body: Vec<String> = (0..12).map(|_| r.text(64, B64)).collect();
    add(
        "pem-private-key",
        "-----BEGIN RSA PRIVATE KEY-----".into(),
        format!("\n{}\n", pem_body.join("\n")),
        "-----END RSA PRIVATE KEY-----\n",
    );
    let body2: Vec<String> = (0..6).map(|_| r.text(70, B64)).collect();
    add(
        "pem-private-key",
        "{\"private_key\": \"-----BEGIN PRIVATE KEY-----".into(),
        format!("\\n{}\\n", body2.join("\\n")),
        "-----END PRIVATE KEY-----\\n\"}",
    );
    let body3: Vec<String> = (0..5).map(|_| r.text(70, B64)).collect();
    add(
        "pem-private-key",
        "-----BEGIN OPENSSH PRIVATE KEY-----".into(),
        format!("\n{}\n", body3.join("\n")),
        "-----END OPENSSH PRIVATE KEY-----\n",
    );
    add(
        "aws-access-key-id",
        "AWS_ACCESS_KEY_ID=".into(),
        format!("AKIA{}", r.text(16, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")),
        "\0",
    );
    add(
        "aws-secret-access-key",
        "aws_secret_access_key = ".into(),
        r.text(40, B64),
        "\n",
    );
    // a JWT is checked for structure: header and payload are JSON
    let payload = format!("{{\"sub\":\"{}\",\"iat\":1700000000}}", r.text(30, ALNUM));
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{}.{}",
        B64URL_NOPAD.encode(payload),
        r.text(43, URLSAFE)
    );
    add("jwt", "id_token: \"".into(), jwt, "\"");
    add(
        "github-token",
        "GITHUB_TOKEN=".into(),
        format!("ghp_{}", r.text(36, ALNUM)),
        "\0",
    );
    add(
        "github-fine-grained-pat",
        "GH_PAT=".into(),
        format!("github_pat_{}", r.text(82, ALNUM)),
        "\0",
    );
    add(
        "slack-token",
        "SLACK_BOT_TOKEN=".into(),
        format!(
            "xoxb-{}-{}-{}",
            r.text(12, b"0123456789"),
            r.text(13, b"0123456789"),
            r.text(24, ALNUM)
        ),
        "\0",
    );
    add(
        "gcp-api-key",
        "GOOGLE_API_KEY=".into(),
        format!("AIza{}", r.text(35, URLSAFE)),
        "\0",
    );
    add(
        "huggingface-token",
        "HF_TOKEN=".into(),
        format!(
            "hf_{}",
            r.text(34, b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        ),
        "\0",
    );
    add(
        "openai-api-key",
        "OPENAI_API_KEY=".into(),
        format!(
            "sk-proj-{}T3BlbkFJ{}",
            r.text(58, URLSAFE),
            r.text(58, URLSAFE)
        ),
        "\0",
    );
    add(
        "anthropic-api-key",
        "ANTHROPIC_API_KEY=".into(),
        format!("sk-ant-api03-{}AA", r.text(93, URLSAFE)),
        "\0",
    );
    add(
        "npm-token",
        "//registry.npmjs.org/:_authToken=".into(),
        format!("npm_{}", r.text(36, ALNUM)),
        "\n",
    );
    add(
        "pypi-token",
        "password = ".into(),
        format!("pypi-AgEIcHlwaS5vcmc{}", r.text(120, URLSAFE)),
        "\n",
    );
    add(
        "authorization-header",
        "GET / HTTP/1.1\r\nAuthorization: Basic ".into(),
        B64STD.encode(format!("admin:{}", r.text(24, ALNUM))),
        "\r\n",
    );
    add(
        "url-password",
        "DATABASE_URL=postgres://admin:".into(),
        r.text(14, ALNUM),
        "@db.internal:5432/app\0",
    );
    add(
        "generic-secret",
        "MY_SERVICE_SECRET=".into(),
        r.text(32, ALNUM),
        "\0",
    );
    v
}

/// A DER PKCS#1 RSA key of random content: a SEQUENCE of nine INTEGERs (version 0, n, e, d,
/// p, q, dp, dq, qinv), as the scanner's structure check wants.
fn der_rsa(r: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let int = |body: &mut Vec<u8>, bytes: Vec<u8>| {
        body.push(0x02);
        let n = bytes.len();
        if n < 0x80 {
            body.push(n as u8);
        } else if n < 0x100 {
            body.extend_from_slice(&[0x81, n as u8]);
        } else {
            body.extend_from_slice(&[0x82, (n >> 8) as u8, n as u8]);
        }
        body.extend(bytes);
    };
    let mut body = Vec::new();
    int(&mut body, vec![0]);
    let mut n = vec![0];
    n.extend(r.bytes(256));
    int(&mut body, n);
    int(&mut body, vec![1, 0, 1]);
    for len in [256, 128, 128, 128, 128, 128] {
        let mut x = r.bytes(len);
        x[0] &= 0x7F;
        int(&mut body, x);
    }
    let mut v = vec![0x30, 0x82, (body.len() >> 8) as u8, body.len() as u8];
    v.extend_from_slice(&body);
    (v, body)
}

/// An OpenSSH binary private key body.
fn openssh_key(r: &mut Rng) -> (Vec<u8>, Vec<u8>) {
    let public = r.bytes(51);
    let private = r.bytes(150);
    (openssh_binary(&public, &private), private)
}

fn schema() -> Schema {
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

// ---------------------------------------------------------------------------------------------
// Pack, unpack, list, verify

#[test]
fn pack_unpack_round_trip_is_identical_and_private() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("run.hrr");
    clean_archive(&src);
    let packed = t.path().join("run.hrr.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &packed]);
    assert!(o.status.success(), "{}", text(&o));
    // The pack is for shipping: readable by others (0644 less the umask), so a container running
    // as another user can read it mounted; what it holds unpacks 0600/0700 (below). --private
    // keeps it 0600.
    let umask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Umask:"))
                .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
        })
        .unwrap_or(0o022);
    let mode = std::fs::metadata(&packed).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644 & !umask);
    let private = t.path().join("private.hrr.tar.zst");
    assert!(run(&[&"pack", &src, &"-o", &private, &"--private"])
        .status
        .success());
    let mode = std::fs::metadata(&private).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let dest = t.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    let o = run(&[&"unpack", &packed, &"-C", &dest]);
    assert!(o.status.success(), "{}", text(&o));
    let a = tree(&src);
    let b = tree(&dest.join("run.hrr"));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (k, (_, content)) in &a {
        assert_eq!(content, &b[k].1, "{k}");
        let want = if content.is_empty() && std::fs::metadata(src.join(k)).unwrap().is_dir() {
            0o700
        } else {
            0o600
        };
        assert_eq!(b[k].0, want, "{k}");
    }
    // nothing else was left in the destination (no temp folder)
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 1);
    // verify, on both
    for p in [&packed, &dest.join("run.hrr")] {
        let o = run(&[&"verify", p]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains("OK"), "{}", text(&o));
    }
    // never overwrites
    let o = run(&[&"unpack", &packed, &"-C", &dest]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("already exists"), "{}", text(&o));
    let o = run(&[&"pack", &src, &"-o", &packed]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("already exists"), "{}", text(&o));
}

#[test]
fn pack_is_byte_identical_across_threads_and_mtimes() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("run.hrr");
    clean_archive(&src);
    let a = t.path().join("a.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &a, &"-T", &"1"]);
    assert!(o.status.success(), "{}", text(&o));
    // touch every file and folder with another time
    let when = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_234_567_890);
    for e in walkdir::WalkDir::new(&src) {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let f = std::fs::File::options()
                .append(true)
                .open(e.path())
                .unwrap();
            f.set_modified(when).unwrap();
        }
    }
    let b = t.path().join("b.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &b, &"-T", &"2"]);
    assert!(o.status.success(), "{}", text(&o));
    let c = t.path().join("c.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &c, &"-T", &"0"]);
    assert!(o.status.success(), "{}", text(&o));
    let (a, b, c) = (
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        std::fs::read(&c).unwrap(),
    );
    assert!(a == b && b == c, "packs differ");
    // written to standard output (front to back, hashed first): the same bytes again
    let o = run(&[&"pack", &src, &"-o", &"-", &"-T", &"2", &"--level", &"3"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(o.stdout == a, "stdout pack differs");
    // and plain zstd + tar read it (the head's padding is a skippable frame)
    let tar = zstd_decompress(&a);
    let mut ar = tar::Archive::new(&tar[..]);
    let names: Vec<String> = ar
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names[0], "hrr-pack-index.json");
    assert_eq!(names[1], "run.hrr");
    assert!(names.contains(&"run.hrr/pid-100/events.bin".to_string()));
}

#[test]
fn pack_refuses_running_captures_unless_forced() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("run.hrr");
    clean_archive(&src);
    std::fs::write(src.join("pid-101/active"), b"101\n").unwrap();
    let out = t.path().join("x.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &out]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("`active` marker"), "{}", text(&o));
    assert!(!out.exists());
    let o = run(&[&"pack", &src, &"-o", &out, &"--force"]);
    assert!(o.status.success(), "{}", text(&o));
    std::fs::remove_file(&out).unwrap();
    std::fs::remove_file(src.join("pid-101/active")).unwrap();
    // writer state: a temp file of an interrupted write
    std::fs::write(src.join("pid-100/blobs/.x.blob.9.0.tmp"), b"half").unwrap();
    let o = run(&[&"pack", &src, &"-o", &out]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("writer state"), "{}", text(&o));
    let o = run(&[&"pack", &src, &"-o", &out, &"--force", &"--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["skipped"][0], "pid-100/blobs/.x.blob.9.0.tmp");
    // a link inside the archive is refused, never followed
    std::fs::remove_file(src.join("pid-100/blobs/.x.blob.9.0.tmp")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", src.join("pid-100/blobs/link")).unwrap();
    let o = run(&[&"pack", &src, &"-o", &t.path().join("y.tar.zst")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("symbolic link"), "{}", text(&o));
}

#[test]
fn list_reads_the_index_of_a_pack_and_an_archive_alike() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("run.hrr");
    clean_archive(&src);
    let packed = t.path().join("run.hrr.tar.zst");
    assert!(run(&[&"pack", &src, &"-o", &packed]).status.success());
    let from_pack: serde_json::Value =
        serde_json::from_slice(&run(&[&"list", &packed, &"--json"]).stdout).unwrap();
    let from_dir: serde_json::Value =
        serde_json::from_slice(&run(&[&"list", &src, &"--json"]).stdout).unwrap();
    assert_eq!(from_pack["processes"], from_dir["processes"]);
    assert_eq!(from_pack["totals"], from_dir["totals"]);
    assert_eq!(from_pack["totals"]["processes"], 2);
    assert_eq!(from_pack["processes"][0]["pid"], 100);
    assert_eq!(from_pack["processes"][0]["blobs"], 3);
    assert_eq!(from_pack["processes"][0]["events"], 7);
    assert_eq!(from_pack["processes"][1]["code_objects"], 1);
    let o = run(&[&"list", &packed, &"--files"]);
    assert!(text(&o).contains("pid-100/events.bin"), "{}", text(&o));
    // list needs only the index: a pack cut after its first members still lists
    let bytes = std::fs::read(&packed).unwrap();
    let cut = t.path().join("cut.tar.zst");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = run(&[&"list", &cut]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&[&"verify", &cut]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

fn zstd_decompress(b: &[u8]) -> Vec<u8> {
    zstd::stream::decode_all(b).unwrap()
}

fn zstd_compress(b: &[u8]) -> Vec<u8> {
    zstd::stream::encode_all(b, 3).unwrap()
}

#[test]
fn corrupt_byte_is_named_by_verify_and_unpack() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("run.hrr");
    let mut r = Rng(7);
    let marker = r.bytes(200_000);
    let ids = write_process(&src, 5, &[marker.clone(), vec![3u8; 1000]], b"code");
    let blob_rel = format!(
        "pid-5/blobs/{}/{}.blob",
        &ids[0].to_hex()[..2],
        ids[0].to_hex()
    );
    let packed = t.path().join("run.hrr.tar.zst");
    assert!(run(&[&"pack", &src, &"-o", &packed]).status.success());

    // 1. a byte changed inside the tar (then recompressed): the hash check names the file
    let mut tar = zstd_decompress(&std::fs::read(&packed).unwrap());
    let at = tar
        .windows(64)
        .position(|w| w == &marker[1000..1064])
        .unwrap();
    tar[at + 10] ^= 0x40;
    let bad = t.path().join("bad.tar.zst");
    std::fs::write(&bad, zstd_compress(&tar)).unwrap();
    let o = run(&[&"verify", &bad]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains(&blob_rel), "{}", text(&o));
    let o = run(&[&"verify", &bad, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["bad_files"][0], blob_rel.as_str());
    let dest = t.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    let o = run(&[&"unpack", &bad, &"-C", &dest]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(&blob_rel), "{}", text(&o));
    assert_eq!(
        std::fs::read_dir(&dest).unwrap().count(),
        0,
        "nothing left behind"
    );

    // 2. a byte flipped in the compressed file itself (random data is stored raw by zstd)
    let mut z = std::fs::read(&packed).unwrap();
    let at = z
        .windows(64)
        .position(|w| w == &marker[5000..5064])
        .unwrap();
    z[at + 3] ^= 0x01;
    std::fs::write(&bad, &z).unwrap();
    let o = run(&[&"verify", &bad]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains(&blob_rel), "{}", text(&o));
    let o = run(&[&"unpack", &bad, &"-C", &dest]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(&blob_rel), "{}", text(&o));
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 0);

    // 3. a byte changed in an archive folder: verify names the blob
    let mut b = std::fs::read(src.join(&blob_rel)).unwrap();
    b[77] ^= 1;
    std::fs::write(src.join(&blob_rel), &b).unwrap();
    let o = run(&[&"verify", &src]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains(&blob_rel), "{}", text(&o));
    // and a missing blob is named through the event that refers to it
    std::fs::remove_file(src.join(&blob_rel)).unwrap();
    let o = run(&[&"verify", &src]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("which is missing"), "{}", text(&o));
}

// ---------------------------------------------------------------------------------------------
// Malicious tarballs

/// A GNU header with the name bytes written as given (no checks).
fn raw_header(name: &[u8], ty: tar::EntryType, size: u64, mode: u32) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(ty);
    h.set_size(size);
    h.set_mode(mode);
    h.set_mtime(0);
    {
        let gnu = h.as_gnu_mut().unwrap();
        gnu.name = [0; 100];
        gnu.name[..name.len()].copy_from_slice(name);
    }
    h.set_cksum();
    h
}

/// A pack whose index lists `root/ok.txt` (and whatever `extra_index` adds), followed by `members`.
fn evil_pack(path: &Path, extra_files: &[(&str, &[u8])], members: &[(tar::Header, Vec<u8>)]) {
    let mut files = vec![serde_json::json!({
        "path": "ok.txt", "size": 2, "blake3": blake3::hash(b"ok").to_hex().to_string()})];
    let mut total = 2u64;
    for (p, content) in extra_files {
        files.push(serde_json::json!({"path": p, "size": content.len(),
            "blake3": blake3::hash(content).to_hex().to_string()}));
        total += content.len() as u64;
    }
    let index = serde_json::json!({
        "schema": "hrr.pack-index/1", "format_version": 1, "root": "evil", "kind": "process",
        "total_bytes": total, "processes": [], "dirs": [], "files": files,
    });
    let index = serde_json::to_vec(&index).unwrap();
    let mut b = tar::Builder::new(Vec::new());
    b.append(
        &raw_header(
            b"hrr-pack-index.json",
            tar::EntryType::Regular,
            index.len() as u64,
            0o600,
        ),
        &index[..],
    )
    .unwrap();
    b.append(
        &raw_header(b"evil", tar::EntryType::Directory, 0, 0o700),
        &[][..],
    )
    .unwrap();
    b.append(
        &raw_header(b"evil/ok.txt", tar::EntryType::Regular, 2, 0o600),
        &b"ok"[..],
    )
    .unwrap();
    for (h, data) in members {
        b.append(h, &data[..]).unwrap();
    }
    let tar = b.into_inner().unwrap();
    std::fs::write(path, zstd_compress(&tar)).unwrap();
}

/// A malicious pack: what it is, its members after the index, extra index files, the error.
type Case<'a> = (
    &'a str,
    Vec<(tar::Header, Vec<u8>)>,
    &'a [(&'a str, &'a [u8])],
    &'a str,
);

#[test]
fn every_malicious_tarball_class_is_an_error() {
    use tar::EntryType as T;
    let t = tempfile::tempdir().unwrap();
    let outside = t.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let long_name = {
        // a GNU long-name member of 1 MiB (the tar crate alone would read it all into memory)
        let mut h = raw_header(b"././@LongLink", T::GNULongName, 1 << 20, 0o644);
        h.set_cksum();
        (h, vec![b'a'; 1 << 20])
    };
    let pax = {
        let rec = b"20 path=evil/pax.txt\n".to_vec();
        (
            raw_header(b"PaxHeader", T::XHeader, rec.len() as u64, 0o644),
            rec,
        )
    };
    let mut symlink = raw_header(b"evil/lnk", T::Symlink, 0, 0o777);
    symlink.set_link_name("/etc").unwrap();
    symlink.set_cksum();
    let mut hardlink = raw_header(b"evil/hard", T::Link, 0, 0o644);
    hardlink.set_link_name("/etc/hostname").unwrap();
    hardlink.set_cksum();
    let cases: Vec<Case> = vec![
        (
            "symlink",
            vec![(symlink.clone(), vec![])],
            &[],
            "symbolic links are refused",
        ),
        (
            "symlink then a file through it",
            vec![
                (symlink, vec![]),
                (
                    raw_header(b"evil/lnk/passwd", T::Regular, 1, 0o600),
                    b"x".to_vec(),
                ),
            ],
            &[("lnk/passwd", b"x")],
            "symbolic links are refused",
        ),
        (
            "hardlink",
            vec![(hardlink, vec![])],
            &[],
            "hard links are refused",
        ),
        (
            "char device",
            vec![(raw_header(b"evil/tty", T::Char, 0, 0o600), vec![])],
            &[],
            "device files are refused",
        ),
        (
            "block device",
            vec![(raw_header(b"evil/sda", T::Block, 0, 0o600), vec![])],
            &[],
            "device files are refused",
        ),
        (
            "fifo",
            vec![(raw_header(b"evil/fifo", T::Fifo, 0, 0o600), vec![])],
            &[],
            "FIFOs are refused",
        ),
        (
            "setuid",
            vec![(
                raw_header(b"evil/suid", T::Regular, 1, 0o4755),
                b"x".to_vec(),
            )],
            &[("suid", b"x")],
            "setuid/setgid/sticky",
        ),
        (
            "setgid dir",
            vec![(raw_header(b"evil/d", T::Directory, 0, 0o2755), vec![])],
            &[],
            "setuid/setgid/sticky",
        ),
        (
            "absolute path",
            vec![(
                raw_header(b"/tmp/evil-abs", T::Regular, 1, 0o600),
                b"x".to_vec(),
            )],
            &[],
            "absolute paths are refused",
        ),
        (
            "parent dir",
            vec![(
                raw_header(b"evil/../escape", T::Regular, 1, 0o600),
                b"x".to_vec(),
            )],
            &[],
            "`..` in a path is refused",
        ),
        (
            "outside root",
            vec![(raw_header(b"other/x", T::Regular, 1, 0o600), b"x".to_vec())],
            &[],
            "outside the pack's root folder",
        ),
        (
            "duplicate",
            vec![(
                raw_header(b"evil/ok.txt", T::Regular, 2, 0o600),
                b"ok".to_vec(),
            )],
            &[],
            "appears twice",
        ),
        (
            "not in index",
            vec![(
                raw_header(b"evil/extra", T::Regular, 1, 0o600),
                b"x".to_vec(),
            )],
            &[],
            "not listed in the pack index",
        ),
        (
            "size differs from index",
            vec![(
                raw_header(b"evil/big", T::Regular, 3, 0o600),
                b"xyz".to_vec(),
            )],
            &[("big", b"x")],
            "differs from the index",
        ),
        (
            "content differs from index",
            vec![(raw_header(b"evil/f", T::Regular, 1, 0o600), b"y".to_vec())],
            &[("f", b"x")],
            "is corrupt",
        ),
        (
            "sparse",
            vec![(raw_header(b"evil/sparse", T::GNUSparse, 0, 0o600), vec![])],
            &[],
            "sparse",
        ),
        (
            "pax header",
            vec![pax],
            &[],
            "PAX extended headers are refused",
        ),
        (
            "long name bomb",
            vec![long_name],
            &[],
            "long name of 1048576 bytes",
        ),
        (
            "missing member",
            vec![],
            &[("never", b"x")],
            "missing from the pack",
        ),
    ];
    for (what, members, extra, expect) in cases {
        let p = t.path().join(format!("{}.tar.zst", what.replace(' ', "-")));
        evil_pack(&p, extra, &members);
        let dest = t.path().join(format!("dest-{}", what.replace(' ', "-")));
        std::fs::create_dir(&dest).unwrap();
        let o = run(&[&"unpack", &p, &"-C", &dest]);
        assert_eq!(o.status.code(), Some(1), "{what}: {}", text(&o));
        assert!(
            text(&o).contains(expect),
            "{what}: expected `{expect}` in {}",
            text(&o)
        );
        assert_eq!(
            std::fs::read_dir(&dest).unwrap().count(),
            0,
            "{what}: something was left in the destination"
        );
        let o = run(&[&"verify", &p]);
        assert_eq!(o.status.code(), Some(1), "{what}: verify: {}", text(&o));
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!Path::new("/tmp/evil-abs").exists());
    assert!(!t.path().join("escape").exists());
    // not a pack at all
    let p = t.path().join("plain.tar.zst");
    std::fs::write(&p, b"hello").unwrap();
    let o = run(&[&"unpack", &p, &"-C", &t.path()]);
    assert!(text(&o).contains("not an hrr pack"), "{}", text(&o));
    // trailing data after the tar
    let mut tar = Vec::new();
    {
        let idx = t.path().join("x.tar.zst");
        evil_pack(&idx, &[], &[]);
        tar.extend(zstd_decompress(&std::fs::read(&idx).unwrap()));
    }
    tar.extend_from_slice(b"appended data");
    let p = t.path().join("trailing.tar.zst");
    std::fs::write(&p, zstd_compress(&tar)).unwrap();
    let dest = t.path().join("dest-trailing");
    std::fs::create_dir(&dest).unwrap();
    let o = run(&[&"unpack", &p, &"-C", &dest]);
    assert!(
        text(&o).contains("data after the end of the tar"),
        "{}",
        text(&o)
    );
    assert_eq!(std::fs::read_dir(&dest).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------------------------
// Scan

#[test]
fn scan_finds_every_class_in_ascii_and_utf16_across_chunk_boundaries() {
    let scanner = Scanner::new();
    let key = FingerprintKey::from_bytes([1; 32]);
    let mut r = Rng(99);
    let plants = text_plants(&mut r);
    for enc in [Encoding::Ascii, Encoding::Utf16Le] {
        for p in &plants {
            let body = if enc == Encoding::Ascii {
                p.text.clone()
            } else {
                utf16(&p.text)
            };
            // at the start, in the middle of binary noise, and straddling a 1 MiB boundary
            for at in [0usize, 5000, (1 << 20) - body.len() / 2] {
                let mut data = r.bytes(at);
                data.extend_from_slice(&body);
                data.extend(r.bytes(3000));
                for feed in [data.len(), 4096, 1 << 20, 777] {
                    let mut s = scanner.stream(&key);
                    for c in data.chunks(feed) {
                        s.feed(c);
                    }
                    let found = s.finish();
                    let hit = found.iter().find(|f| f.rule == p.rule && f.encoding == enc);
                    assert!(
                        hit.is_some(),
                        "{} ({enc:?}) at {at} fed by {feed}: found {:?}",
                        p.rule,
                        found.iter().map(|f| (f.rule, f.offset)).collect::<Vec<_>>()
                    );
                    let hit = hit.unwrap();
                    // the fingerprint is of the secret, the same in both encodings
                    assert!(hit.fingerprint.starts_with("fp:"));
                    assert_eq!(found.len(), 1, "{}: {found:?}", p.rule);
                    // the reported range covers the secret
                    let scale = if enc == Encoding::Ascii { 1 } else { 2 };
                    let secret_at = at + scale * find(&p.text, &p.secret);
                    assert!(
                        hit.offset as usize <= secret_at
                            && (hit.offset + hit.length) as usize
                                >= secret_at + scale * p.secret.len() - scale * 2,
                        "{}: range {}+{} vs secret at {secret_at}",
                        p.rule,
                        hit.offset,
                        hit.length
                    );
                }
            }
        }
    }
    // binary keys, raw only
    for (rule, (data, secret)) in [
        ("der-rsa-private-key", der_rsa(&mut r)),
        ("openssh-private-key", openssh_key(&mut r)),
    ] {
        for at in [0usize, (1 << 20) - 100] {
            let mut buf = r.bytes(at);
            buf.extend_from_slice(&data);
            buf.extend(r.bytes(500));
            let mut s = scanner.stream(&key);
            for c in buf.chunks(65536) {
                s.feed(c);
            }
            let found = s.finish();
            assert_eq!(found.len(), 1, "{rule}: {found:?}");
            assert_eq!(found[0].rule, rule);
            assert_eq!(found[0].offset as usize, at + find(&data, &secret));
            assert_eq!(found[0].length as usize, secret.len());
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle present")
}

#[test]
fn scan_has_no_false_positives_on_64_mib_of_random_bytes() {
    let scanner = Scanner::new();
    let key = FingerprintKey::from_bytes([2; 32]);
    let mut r = Rng(0x5eed);
    let mut s = scanner.stream(&key);
    for _ in 0..64 {
        s.feed(&r.bytes(1 << 20));
    }
    let found = s.finish();
    assert!(found.is_empty(), "{found:?}");
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
    big.extend_from_slice(&plants[6].text);
    big.extend(vec![0u8; 100_000]);
    let mut code = b"\x7fELF fake cubin with a string: ".to_vec();
    code.extend_from_slice(&plants[7].text);
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

#[test]
fn scan_archive_pack_and_file_report_without_revealing() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("sec.hrr");
    let secrets = secret_archive(&src);
    let o = run(&[&"scan", &src, &"--json"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    grep_output(&o, &secrets);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    let rules: std::collections::BTreeSet<(String, String)> = findings
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().into(),
                f["encoding"].as_str().unwrap().into(),
            )
        })
        .collect();
    for p in text_plants(&mut Rng(1)) {
        for enc in ["ascii", "utf16le"] {
            assert!(
                rules.contains(&(p.rule.to_string(), enc.to_string())),
                "{} {enc}",
                p.rule
            );
        }
    }
    assert!(rules.contains(&("der-rsa-private-key".into(), "binary".into())));
    assert!(rules.contains(&("openssh-private-key".into(), "binary".into())));
    assert!(findings
        .iter()
        .any(|f| f["file"].as_str().unwrap().contains("code_objects/")));
    for f in findings {
        assert!(f["fingerprint"].as_str().unwrap().starts_with("fp:"));
        assert!(f["object"].is_string(), "{f}");
    }
    // text output, a pack, and a plain file say the same without the secrets
    let o = run(&[&"scan", &src]);
    assert_eq!(o.status.code(), Some(3));
    grep_output(&o, &secrets);
    let packed = t.path().join("sec.hrr.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &packed]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&[&"scan", &packed, &"--json"]);
    assert_eq!(o.status.code(), Some(3));
    grep_output(&o, &secrets);
    let vp: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(vp["found"], v["found"]);
    // --allow leaves a fingerprint out
    let fp = findings[0]["fingerprint"].as_str().unwrap();
    let o = run(&[&"scan", &src, &"--json", &"--allow", &fp]);
    let va: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(va["allowed"].as_u64().unwrap() >= 1);
    assert!(va["found"].as_u64().unwrap() < v["found"].as_u64().unwrap());
    // a clean archive exits 0
    let clean = t.path().join("clean.hrr");
    clean_archive(&clean);
    let o = run(&[&"scan", &clean]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

// ---------------------------------------------------------------------------------------------
// Scrub

#[test]
fn the_staging_copy_of_a_killed_scrub_to_o_is_removed_by_the_next_scrub_of_the_source() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("sec.hrr");
    let secrets = secret_archive(&src);
    // What `scrub -o out.hrr` leaves when killed while building: its staging folder (a full,
    // unscrubbed copy) beside OUT and its note beside the source; OUT itself never appeared.
    let out_dir = t.path().join("elsewhere");
    std::fs::create_dir(&out_dir).unwrap();
    let stage = out_dir.join(".out.hrr.hrr-scrub");
    std::fs::create_dir(&stage).unwrap();
    for f in walkdir::WalkDir::new(&src).min_depth(1) {
        let f = f.unwrap();
        let to = stage.join(f.path().strip_prefix(&src).unwrap());
        if f.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(f.path(), &to).unwrap();
        }
    }
    assert!(!grep_tree(&stage, &secrets).is_empty());
    std::fs::write(
        t.path().join(".sec.hrr.hrr-scrub-out"),
        stage.as_os_str().as_encoded_bytes(),
    )
    .unwrap();

    let o = run(&[&"scrub", &src]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("left by an interrupted scrub -o"),
        "{}",
        text(&o)
    );
    assert!(!stage.exists(), "the unscrubbed staging copy is gone");
    assert!(!t.path().join(".sec.hrr.hrr-scrub-out").exists());
    assert!(grep_tree(&src, &secrets).is_empty());
}

#[test]
fn scrub_leaves_no_secret_anywhere_and_keeps_the_archive_valid() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("sec.hrr");
    let secrets = secret_archive(&src);
    assert!(
        !grep_tree(&src, &secrets).is_empty(),
        "the secrets were planted"
    );
    let before = tree(&src);
    let mut outputs = Vec::new();

    // -o leaves the original alone
    let copy = t.path().join("copy.hrr");
    let o = run(&[&"scrub", &src, &"-o", &copy]);
    assert!(o.status.success(), "{}", text(&o));
    outputs.push(o);
    assert_eq!(tree(&src), before, "scrub -o changed the original");
    assert!(
        grep_tree(&copy, &secrets).is_empty(),
        "{:?}",
        grep_tree(&copy, &secrets)
    );

    // a staging folder left by a crashed scrub is cleaned up
    let stale = t.path().join(".sec.hrr.hrr-scrub");
    std::fs::create_dir(&stale).unwrap();
    std::fs::write(stale.join("junk"), b"x").unwrap();

    let o = run(&[&"scrub", &src, &"--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["changed"], true);
    assert!(v["redacted"].as_u64().unwrap() >= 40, "{v}");
    outputs.push(o);
    assert!(!stale.exists());
    assert_eq!(
        std::fs::read_dir(t.path()).unwrap().count(),
        2,
        "only sec.hrr and copy.hrr remain"
    );
    let hits = grep_tree(&src, &secrets);
    assert!(hits.is_empty(), "{hits:?}");

    // still valid: verify (objects match ids, every referenced blob exists), scan is clean
    for args in [
        vec!["verify"],
        vec!["verify", "--json"],
        vec!["list", "--json"],
        vec!["scan"],
        vec!["scan", "--json"],
    ] {
        let mut c = bin();
        c.args(&args).arg(&src);
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o));
        outputs.push(o);
    }
    let o = run(&[&"list", &src, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["processes"][0]["scrubbed"], true);
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(src.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m["scrubbed"], true);

    // redactions.json: new ids, ranges, rule names and fingerprints, no secrets
    let red = hrr_archive::redact::read_redactions(&src.join("pid-300"))
        .unwrap()
        .unwrap();
    assert!(red.objects.len() >= 4, "{red:?}");
    let ranges = hrr_archive::redact::redacted_ranges(&src.join("pid-300")).unwrap();
    for (id, rs) in &ranges {
        let path = hrr_archive::blobs::blob_path(&src.join("pid-300"), id);
        let code = hrr_archive::blobs::find_code_object(&src.join("pid-300"), id);
        assert!(path.exists() || code.is_some(), "{id} missing");
        assert!(!rs.is_empty());
    }
    // the events now point at the scrubbed blobs: every D2H blob named by an event exists and
    // the redacted ones are exactly those with ranges
    let mut reader =
        hrr_archive::reader::EventReader::open(&src.join("pid-300/events.bin")).unwrap();
    let schema = reader.schema().unwrap().clone();
    let mut referenced = std::collections::BTreeSet::new();
    for rec in reader.by_ref() {
        let rec = rec.unwrap();
        let call = schema.call(rec.header.kind).unwrap();
        for r in hrr_archive::schema::object_fields(call, &rec.payload).unwrap() {
            referenced.insert(r.id.unwrap());
        }
    }
    assert!(reader.recovery().complete());
    for id in ranges.keys() {
        assert!(
            referenced.contains(id),
            "redacted object {id} is not referenced"
        );
    }

    // packed and shipped: still no secret in the pack's bytes (decompressed) nor its outputs
    let packed = t.path().join("sec.hrr.tar.zst");
    let o = run(&[&"pack", &src, &"-o", &packed]);
    assert!(o.status.success());
    outputs.push(o);
    let tar = zstd_decompress(&std::fs::read(&packed).unwrap());
    for n in &secrets {
        assert!(
            !tar.windows(n.len()).any(|w| w == &n[..]),
            "a secret is in the pack"
        );
    }
    std::fs::remove_file(&packed).unwrap();

    // idempotent: a second scrub changes nothing
    let after = tree(&src);
    let o = run(&[&"scrub", &src]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("nothing to scrub"), "{}", text(&o));
    outputs.push(o);
    assert_eq!(tree(&src), after);
    for o in &outputs {
        grep_output(o, &secrets);
    }
}

#[test]
fn scrub_allow_keeps_an_allowed_secret() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("a.hrr");
    let mut r = Rng(5);
    let token = format!("ghp_{}", r.text(36, ALNUM));
    let other = format!("npm_{}", r.text(36, ALNUM));
    let blob = format!("A={token}\0B={other}\0").into_bytes();
    write_process(&src, 9, &[blob], b"code");
    let o = run(&[&"scan", &src, &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let fp = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "github-token")
        .unwrap()["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let allow_file = t.path().join("allow.txt");
    std::fs::File::create(&allow_file)
        .unwrap()
        .write_all(format!("# ok to ship\n{fp}\n").as_bytes())
        .unwrap();
    let o = run(&[&"scrub", &src, &"--allow-file", &allow_file]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!grep_tree(&src, &[token.clone().into_bytes()]).is_empty());
    assert!(grep_tree(&src, &[other.into_bytes()]).is_empty());
    let o = run(&[&"scan", &src, &"--allow", &fp]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

#[test]
fn refuses_to_scrub_a_running_capture() {
    let t = tempfile::tempdir().unwrap();
    let src = t.path().join("a.hrr");
    write_process(&src, 9, &[b"x".to_vec()], b"code");
    std::fs::write(src.join("pid-9/active"), b"9\n").unwrap();
    let o = run(&[&"scrub", &src]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("active"), "{}", text(&o));
}

#[test]
fn usage_errors_exit_2_and_json_errors_are_objects() {
    let o = run(&[&"pack", &"x", &"--level", &"30"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&[&"list", &"/nonexistent/x.tar.zst", &"--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
}

// ---------------------------------------------------------------------------------------------
// issue 20: one error style, JSON types, completions, man pages, counts shared with --info

fn demo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo.hrr")
}

#[test]
fn errors_are_one_line_each_cause_once_with_the_users_path() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("nosuch.hrr");
    for cmd in ["list", "verify", "unpack", "scan"] {
        let o = run(&[&cmd, &missing]);
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr).to_string();
        assert!(err.starts_with("hrr-pack: error: "), "{cmd}: {err}");
        assert!(!err.contains("(os error"), "{cmd}: {err}");
        assert_eq!(
            err.matches("No such file or directory").count()
                + err.matches("no such file or directory").count(),
            1,
            "{cmd}: {err}"
        );
    }
    // the writer's temp file is never named, the user's output is
    let pid = demo_root().join("pid-1180");
    let o = run(&[&"pack", &pid, &"-o", &"/nonexistent/dir/x.hrr.tar.zst"]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1));
    assert!(err.contains("/nonexistent/dir/x.hrr.tar.zst"), "{err}");
    assert!(!err.contains(".tmp"), "{err}");
    // a damaged pack: the cause once
    let packed = t.path().join("p.hrr.tar.zst");
    assert!(run(&[&"pack", &pid, &"-o", &packed]).status.success());
    let bytes = std::fs::read(&packed).unwrap();
    let cut = t.path().join("cut.hrr.tar.zst");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let o = run(&[&"unpack", &cut, &"-C", &t.path()]);
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1));
    assert!(!err.contains(".hrr-unpack-"), "{err}");
    for word in err.split(": ") {
        assert!(err.matches(word).count() == 1 || word.len() < 12, "{err}");
    }
}

#[test]
fn json_outputs_decode_with_their_types_and_counts_agree_with_info() {
    use hrr_cli::json::{ErrorJson, ListJson};
    let t = tempfile::tempdir().unwrap();
    let o = run(&[&"list", &demo_root(), &"--json"]);
    let dir: ListJson = serde_json::from_slice(&o.stdout).unwrap();
    // pid-1204 crashed: its manifest says 6, events.bin holds 9 records (what --info shows)
    assert_eq!(dir.processes[1].pid, 1204);
    assert_eq!(dir.processes[1].events, 9);
    let packed = t.path().join("demo.hrr.tar.zst");
    assert!(run(&[&"pack", &demo_root(), &"-o", &packed, &"--force"])
        .status
        .success());
    let o = run(&[&"list", &packed, &"--json", &"--files"]);
    let pack: ListJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(pack.processes, dir.processes);
    assert_eq!(pack.totals, dir.totals);
    assert!(pack.files.is_some());
    let o = run(&[&"list", &t.path().join("nosuch"), &"--json"]);
    let e: ErrorJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((e.ok, e.exit_code), (false, 1));
    let o = run(&[&"list", &"--json"]);
    let e: ErrorJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(e.exit_code, 2);
    let o = run(&[&"--version", &"--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["schema"], "hrr.version/1");
}

#[test]
fn pack_unpack_verify_scan_scrub_json_decode_with_their_types_and_counts_agree() {
    use hrr_cli::json::{ListJson, PackJson, ScanJson, ScrubJson, UnpackJson, VerifyJson};
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("s.hrr");
    secret_archive(&root);
    let packed = t.path().join("s.hrr.tar.zst");
    let o = run(&[&"pack", &root, &"-o", &packed, &"--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let p: PackJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((p.schema.as_str(), p.kind.as_str()), ("hrr.pack/1", "root"));
    // One count for the files of an archive: pack, list --files, verify of the pack and of a
    // folder (an unpacked or pulled one) all say the same.
    let o = run(&[&"list", &packed, &"--files", &"--json"]);
    let l: ListJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(l.files.unwrap().len() as u64, p.files);
    let o = run(&[&"verify", &packed, &"--json"]);
    let vp: VerifyJson = serde_json::from_slice(&o.stdout).unwrap();
    assert!(vp.ok, "{vp:?}");
    let o = run(&[&"verify", &root, &"--json"]);
    let vd: VerifyJson = serde_json::from_slice(&o.stdout).unwrap();
    assert!(vd.ok, "{vd:?}");
    assert_eq!(
        (vp.files_checked, vp.bytes_checked, vp.objects_checked),
        (p.files, p.bytes_in, vd.objects_checked)
    );
    assert_eq!((vd.files_checked, vd.bytes_checked), (p.files, p.bytes_in));
    assert_eq!(vd.objects_checked, l.totals.blobs + l.totals.code_objects);
    let o = run(&[&"verify", &packed]);
    let line = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        line.contains(&format!("{} files (", p.files))
            && line.contains(&format!(
                "{} objects (blobs, code objects)",
                vd.objects_checked
            )),
        "{line}"
    );
    let out = t.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let o = run(&[&"unpack", &packed, &"-C", &out, &"--json"]);
    let u: UnpackJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((u.files, u.bytes), (p.files, p.bytes_in));
    // scan finds the planted secrets (exit 3), scrub redacts them, a second scan finds none.
    let o = run(&[&"scan", &packed, &"--json"]);
    assert_eq!(o.status.code(), Some(3));
    let s: ScanJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (s.source.as_str(), s.found),
        ("pack", s.findings.len() as u64)
    );
    assert!(s.found > 0);
    let o = run(&[&"scrub", &root, &"--json"]);
    assert!(o.status.success(), "{}", text(&o));
    let r: ScrubJson = serde_json::from_slice(&o.stdout).unwrap();
    assert!(r.ok && r.changed && r.redacted > 0, "{r:?}");
    assert!(!r.objects.is_empty() && !r.events.is_empty());
    let o = run(&[&"scan", &root, &"--json"]);
    let s: ScanJson = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((o.status.code(), s.found), (Some(0), 0));
}

#[test]
fn completions_man_pages_and_exit_codes_in_help() {
    for shell in ["bash", "zsh", "fish"] {
        let o = run(&[&"completions", &shell]);
        assert!(o.status.success(), "{shell}");
        assert!(
            String::from_utf8_lossy(&o.stdout).contains("unpack"),
            "{shell}"
        );
    }
    let t = tempfile::tempdir().unwrap();
    assert!(run(&[&"man", &t.path()]).status.success());
    for page in ["hrr-pack.1", "hrr-pack-pack.1", "hrr-pack-scan.1"] {
        assert!(t.path().join(page).exists(), "{page}");
    }
    for args in [&["--help"][..], &["scan", "--help"], &["push", "--help"]] {
        let mut c = bin();
        c.args(args);
        let s = String::from_utf8(c.output().unwrap().stdout).unwrap();
        assert!(
            s.contains("3 scan found secrets") && s.contains("2 usage"),
            "{args:?}"
        );
    }
}

#[test]
fn dash_reads_standard_input() {
    let t = tempfile::tempdir().unwrap();
    let packed = t.path().join("p.hrr.tar.zst");
    assert!(
        run(&[&"pack", &demo_root().join("pid-1180"), &"-o", &packed])
            .status
            .success()
    );
    for cmd in [&["list", "-"][..], &["verify", "-"], &["unpack", "-", "-C"]] {
        let mut c = bin();
        c.args(cmd);
        if cmd[0] == "unpack" {
            c.arg(t.path());
        }
        c.stdin(std::fs::File::open(&packed).unwrap());
        let o = c.output().unwrap();
        assert!(o.status.success(), "{cmd:?}: {}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("-") && !out.contains("hrr-stdin-"),
            "{cmd:?}: {out}"
        );
    }
    assert!(t.path().join("pid-1180/events.bin").exists());
}
