//! Secrets split where a byte-by-byte scan of one file misses them: across two blobs of one
//! upload (a buffer copied to the device in two pieces), and base64 wrapped into lines. Scan
//! finds them, and scrub leaves none of them behind.

use hrr_archive::testkit::{self, CopyCapture, Rng};

mod common;
use common::*;

/// Two 4 KiB pieces of random bytes uploaded to adjacent device addresses, `secret` split
/// between them at `split` characters (the first piece ends with its head).
fn two_piece_archive(root: &std::path::Path, secret: &str, split: usize) -> std::path::PathBuf {
    let mut r = Rng(0x5eed);
    let (mut a, mut b) = (r.bytes(4096), r.bytes(4096));
    let s = secret.as_bytes();
    let n = a.len();
    a[n - split..].copy_from_slice(&s[..split]);
    b[..s.len() - split].copy_from_slice(&s[split..]);
    let c = CopyCapture {
        stride: 4096, // the second piece starts where the first ends
        ..CopyCapture::small(4242)
    };
    testkit::write_copy_capture(root, &testkit::copy_schema(&[]), &c, [a, b]).unwrap();
    root.to_path_buf()
}

#[test]
fn a_secret_across_two_blobs_is_found_and_scrubbed_from_both() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("run.hrr");
    let secret = "glpat-Zq8RkW3vNp5Tx2YbLm7c";
    let arch = two_piece_archive(&root, secret, 11);

    let out = run(&[&"scan", &arch, &"--json"]);
    let t = text(&out);
    assert_eq!(out.status.code(), Some(3), "secrets found: {t}");
    let v: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 2, "one finding per blob: {v}");
    assert_ne!(findings[0]["file"], findings[1]["file"], "{v}");
    for f in findings {
        assert_eq!(f["rule"], "gitlab-token", "{v}");
    }

    succeeds(&[&"scrub", &arch]);
    // Neither half of the secret's body is left in any blob.
    let body = &secret.as_bytes()[6..];
    for e in walkdir::WalkDir::new(&arch) {
        let e = e.unwrap();
        if e.file_type().is_file() && e.path().extension().is_some_and(|x| x == "blob") {
            let data = std::fs::read(e.path()).unwrap();
            for part in [&body[..5], &body[5..]] {
                assert!(
                    !data.windows(part.len()).any(|w| w == part),
                    "{} keeps {:?}",
                    e.path().display(),
                    String::from_utf8_lossy(part)
                );
            }
        }
    }
    exits(&[&"scan", &arch], 0);
}

#[test]
fn a_secret_in_line_wrapped_base64_is_found_and_scrubbed() {
    use base64::Engine;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("run.hrr");
    let secret = "sk_live_51HqLyjWDarjtT1zdp7dcXkYq8u2Rf5Vb4NmPe3";
    let doc = format!("{{\"stripe\": {{\"api_key\": \"{secret}\"}}, \"region\": \"eu\"}}");
    let b64 = base64::engine::general_purpose::STANDARD.encode(doc.as_bytes());
    // wrapped at 20 columns (\r\n), so the key crosses several line breaks
    let wrapped: Vec<u8> = b64
        .as_bytes()
        .chunks(20)
        .collect::<Vec<_>>()
        .join(&b"\r\n"[..]);
    let mut r = Rng(7);
    let mut blob = r.bytes(2048);
    blob[500..500 + wrapped.len()].copy_from_slice(&wrapped);
    testkit::write_copy_capture(
        &root,
        &testkit::copy_schema(&[]),
        &CopyCapture::small(77),
        [blob],
    )
    .unwrap();

    let out = run(&[&"scan", &root, &"--json"]);
    assert_eq!(out.status.code(), Some(3), "secrets found: {}", text(&out));
    let v: serde_json::Value = serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let f = &v["findings"].as_array().unwrap();
    assert!(
        f.iter()
            .any(|f| f["rule"] == "stripe-secret-key" && f["encoding"] == "base64"),
        "{v}"
    );
    succeeds(&[&"scrub", &root]);
    exits(&[&"scan", &root], 0);
    // The line structure is kept (same length, breaks in place) and the key is gone.
    for e in walkdir::WalkDir::new(&root) {
        let e = e.unwrap();
        if e.path().extension().is_some_and(|x| x == "blob") {
            let data = std::fs::read(e.path()).unwrap();
            assert_eq!(data.len(), 2048);
            let joined: Vec<u8> = data[500..500 + wrapped.len()]
                .iter()
                .copied()
                .filter(|&b| b != b'\r' && b != b'\n')
                .collect();
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(&joined)
                .unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&decoded).contains(&secret[8..]),
                "the key survived scrub"
            );
            assert_eq!(data[520..522], *b"\r\n");
        }
    }
}
