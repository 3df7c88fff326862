//! scan: recall in ASCII and UTF-16 across chunk boundaries, no false positives on random
//! bytes, reports that never reveal a secret.

use hrr_pack::fingerprint::FingerprintKey;
use hrr_pack::scan::{Encoding, Scanner};

use super::*;

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

#[test]
fn scan_archive_pack_and_file_report_without_revealing() {
    let (t, src, secrets) = secrets_in_temp();
    let o = exits(&[&"scan", &src, &"--json"], 3);
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
    succeeds(&[&"pack", &src, &"-o", &packed]);
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
    exits(&[&"scan", &clean], 0);
}
