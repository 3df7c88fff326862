//! The corpus the plants are written into: one blob per context a process image holds a secret
//! in (plus one whose plants straddle 1 MiB read boundaries), written as a capture; and how to
//! look for what is left of a secret afterwards.

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::STANDARD as B64STD;
use base64::Engine;
use hrr_archive::testkit::{self, CopyCapture, Rng};

use crate::common::{utf16, Plant, ALNUM};

/// The form a planted text is stored in by its context.
pub enum Form {
    Raw,
    Utf16,
    Base64,
}

/// One plant written into one context: which plant, where, in which form.
pub struct Placed {
    pub plant: usize,
    pub context: &'static str,
    pub blob: usize,
    /// Offset of the whole planted text in its blob.
    pub at: usize,
    pub form: Form,
}

impl Placed {
    /// Where the secret's bytes are in its blob (`start..end`; for base64, the characters that
    /// encode nothing but secret bytes).
    pub fn secret_range(&self, p: &Plant, blob: &[u8]) -> (usize, usize) {
        let a = p.secret_offset();
        match self.form {
            Form::Raw => (self.at + a, self.at + a + p.secret.len()),
            Form::Utf16 => (self.at + 2 * a, self.at + 2 * (a + p.secret.len())),
            Form::Base64 => {
                let first = self.at + a.div_ceil(3) * 4;
                let last = self.at + (a + p.secret.len()) / 3 * 4;
                assert!(blob[self.at..].starts_with(B64STD.encode(&p.text).as_bytes()));
                (first, last.max(first + 1))
            }
        }
    }
}

fn alnum_byte(r: &mut Rng) -> u8 {
    ALNUM[r.below(ALNUM.len())]
}

/// Build the blobs: one per context (the boundary blob holds one plant per MiB).
pub fn corpus(plants: &[Plant], r: &mut Rng) -> (Vec<Vec<u8>>, Vec<Placed>) {
    let mut blobs: Vec<Vec<u8>> = Vec::new();
    let mut placed = Vec::new();
    type Wrap = fn(&mut Rng, &[u8]) -> (Vec<u8>, Vec<u8>, Form);
    let contexts: Vec<(&'static str, bool, Wrap)> = vec![
        ("c-string", false, |_, t| {
            (b"\0\0".to_vec(), [t, b"\0"].concat(), Form::Raw)
        }),
        ("json", false, |_, t| {
            (
                b"{\"value\": \"".to_vec(),
                [t, b"\", \"n\": 1}\n"].concat(),
                Form::Raw,
            )
        }),
        ("env-block", false, |_, t| {
            (
                b"PATH=/usr/bin\0HRR_PLANT=".to_vec(),
                [t, b"\0HOME=/root\0"].concat(),
                Form::Raw,
            )
        }),
        ("http-header", false, |_, t| {
            (
                b"POST /v1/x HTTP/1.1\r\nHost: api.example\r\nX-Plant: ".to_vec(),
                [t, b"\r\nContent-Length: 0\r\n\r\n"].concat(),
                Form::Raw,
            )
        }),
        ("utf16le", false, |_, t| {
            (
                utf16(b"\"value\": \""),
                [utf16(t), utf16(b"\"\0")].concat(),
                Form::Utf16,
            )
        }),
        ("random-bytes", true, |r, t| {
            let mut a = r.bytes(64);
            a.extend_from_slice(t);
            (a, r.bytes(64), Form::Raw)
        }),
        ("alnum-neighbours", true, |r, t| {
            let mut a = r.bytes(63);
            a.push(alnum_byte(r));
            a.extend_from_slice(t);
            let mut b = vec![alnum_byte(r)];
            b.extend(r.bytes(63));
            (a, b, Form::Raw)
        }),
        ("base64-wrapped", true, |_, t| {
            (
                b"{\"blob\": \"".to_vec(),
                [B64STD.encode(t).as_bytes(), b"\"}"].concat(),
                Form::Base64,
            )
        }),
    ];
    for (name, binary_ok, wrap) in contexts {
        let mut blob = r.bytes(100);
        for (i, p) in plants.iter().enumerate() {
            if p.binary && !binary_ok {
                continue;
            }
            // the text is at the end of `head` (random contexts) or the start of `tail`
            let (head, tail, form) = wrap(r, &p.text);
            let at = if head.ends_with(&p.text) {
                blob.len() + head.len() - p.text.len()
            } else {
                blob.len() + head.len()
            };
            blob.extend(head);
            blob.extend(tail);
            blob.extend(r.bytes(16));
            placed.push(Placed {
                plant: i,
                context: name,
                blob: blobs.len(),
                at,
                form,
            });
        }
        blobs.push(blob);
    }
    // across a 1 MiB read boundary: plant i straddles offset (i + 1) MiB
    let mut big = Vec::new();
    for (i, p) in plants.iter().enumerate() {
        let boundary = (i + 1) << 20;
        let start = boundary - p.text.len() / 2;
        big.resize(start, 0);
        big.extend_from_slice(&p.text);
        placed.push(Placed {
            plant: i,
            context: "read-boundary",
            blob: blobs.len(),
            at: start,
            form: Form::Raw,
        });
    }
    big.resize(big.len() + 4096, 0);
    blobs.push(big);
    (blobs, placed)
}

/// A capture of process `pid` under `root`: `code` loaded, then every blob uploaded (and read
/// back) by thread 7, 64 KiB apart from 0x7000_0000.
pub fn write_process(root: &Path, pid: u32, blobs: &[Vec<u8>], code: &[u8]) {
    let c = CopyCapture {
        pid,
        code,
        base: 0x7000_0000,
        stride: 0x10000,
        ..CopyCapture::small(pid)
    };
    testkit::write_copy_capture(root, &testkit::copy_schema(&[]), &c, blobs.iter().cloned())
        .unwrap();
}

/// Every file below `dir` (the archive and anything beside it in `dir`).
pub fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().to_path_buf(), std::fs::read(e.path()).unwrap()))
        .collect()
}

/// Byte windows of a secret in the form it was stored: any one left means residue.
pub fn residue_needles(p: &Plant, form: &Form) -> Vec<Vec<u8>> {
    let w = 10.min(p.secret.len());
    let mut out: Vec<Vec<u8>> = p.secret.windows(w).step_by(3).map(<[u8]>::to_vec).collect();
    match form {
        Form::Raw => {}
        Form::Utf16 => out = out.iter().map(|n| utf16(n)).collect(),
        Form::Base64 => {
            // the characters that depend on the secret's bytes only
            let enc = B64STD.encode(&p.text);
            let at = p.secret_offset();
            let first = at.div_ceil(3) * 4;
            let last = (at + p.secret.len()) / 3 * 4;
            let chars = &enc.as_bytes()[first..last.max(first)];
            out = chars
                .windows(12.min(chars.len()))
                .step_by(4)
                .map(<[u8]>::to_vec)
                .collect();
        }
    }
    out
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// Which of `needles` occur in `hay`: one pass per needle length, with a hash set.
pub fn occurring<'a>(hay: &[u8], needles: &'a [(String, Vec<u8>)]) -> Vec<&'a str> {
    use std::collections::{HashMap, HashSet};
    let mut by_len: HashMap<usize, HashMap<&[u8], &str>> = HashMap::new();
    for (label, n) in needles {
        by_len.entry(n.len()).or_default().insert(n, label);
    }
    let mut out = HashSet::new();
    for (len, set) in &by_len {
        if *len == 0 || hay.len() < *len {
            continue;
        }
        let firsts: HashSet<u8> = set.keys().map(|k| k[0]).collect();
        for i in 0..=hay.len() - len {
            if firsts.contains(&hay[i]) {
                if let Some(l) = set.get(&hay[i..i + len]) {
                    out.insert(*l);
                }
            }
        }
    }
    let mut v: Vec<&str> = out.into_iter().collect();
    v.sort();
    v
}
