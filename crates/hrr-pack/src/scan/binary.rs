//! Binary key formats, found by their keyword (a DER header, the OpenSSH magic) and parsed just
//! far enough to tell a private key from bytes that happen to start like one: PKCS#1, PKCS#8,
//! SEC1 and PKCS#12 DER structures, and the private section of an OpenSSH key.

use super::accept::entropy;
use super::rules::DerForm;
use super::{Candidate, Stream};

impl Stream<'_> {
    /// A DER private key of `form` whose keyword (its first bytes after the header) is at `abs`.
    pub(super) fn der(&self, form: DerForm, abs: u64) -> Option<Candidate> {
        // Where the structure would start, given where its keyword is.
        let starts: &[u64] = match form {
            DerForm::Pkcs1Rsa | DerForm::Pkcs8Long | DerForm::Pkcs12 => &[4],
            DerForm::Pkcs8Short => &[3],
            DerForm::Pkcs8Ed25519 => &[0],
            DerForm::Sec1 => &[2, 3],
        };
        for &back in starts {
            let Some(start) = abs.checked_sub(back) else {
                continue;
            };
            let Some(head) = self.bytes_at(start, 4) else {
                continue;
            };
            let Some((tag, hl, len)) = tlv(head) else {
                continue;
            };
            if tag != 0x30 {
                continue;
            }
            let total = hl + len;
            if total < 40 {
                continue;
            }
            let Some(whole) = self.bytes_at(start, total) else {
                continue;
            };
            let content = &whole[hl..];
            let ok = match form {
                DerForm::Pkcs1Rsa => rsa_private(content),
                DerForm::Pkcs8Long | DerForm::Pkcs8Short => pkcs8(content),
                DerForm::Pkcs8Ed25519 => total == 48 && entropy(&whole[16..]) >= 4.0,
                DerForm::Sec1 => sec1(content),
                DerForm::Pkcs12 => pkcs12(content),
            };
            if !ok {
                continue;
            }
            let (from, secret) = match form {
                DerForm::Pkcs8Ed25519 => (start + 16, &whole[16..]),
                _ => (start + hl as u64, content),
            };
            return Some(Candidate::binary(from, secret, "DER structure"));
        }
        None
    }

    /// The private section of an OpenSSH key whose magic is at `abs`.
    pub(super) fn openssh(&self, abs: u64) -> Option<Candidate> {
        // magic, then string cipher, string kdf, string kdf options, u32 count, count public-key
        // strings, then the private section (a string): that section is the secret.
        let mut pos = abs + 15;
        let read_u32 = |pos: &mut u64| -> Option<u32> {
            let b = self.bytes_at(*pos, 4)?;
            *pos += 4;
            Some(u32::from_be_bytes(b.try_into().ok()?))
        };
        let parsed = (|| {
            for limit in [64u32, 64, 1024] {
                let n = read_u32(&mut pos)?;
                if n > limit {
                    return None;
                }
                pos += n as u64;
            }
            let keys = read_u32(&mut pos)?;
            if keys == 0 || keys > 16 {
                return None;
            }
            for _ in 0..keys {
                let n = read_u32(&mut pos)?;
                if n > 16_384 {
                    return None;
                }
                pos += n as u64;
            }
            let n = read_u32(&mut pos)?;
            if n == 0 || n > 65_536 {
                return None;
            }
            Some((pos, n as usize))
        })();
        let (from, len) = parsed?;
        let avail = (self.position().saturating_sub(from) as usize).min(len);
        let secret = self.bytes_at(from, avail)?;
        if entropy(secret) < 3.0 {
            return None;
        }
        Some(Candidate::binary(from, secret, "OpenSSH private section"))
    }
}

/// Tag, header length, content length of the element at the start of `b`.
fn tlv(b: &[u8]) -> Option<(u8, usize, usize)> {
    let tag = *b.first()?;
    let l0 = *b.get(1)? as usize;
    if l0 < 0x80 {
        return Some((tag, 2, l0));
    }
    let n = l0 & 0x7F;
    if n == 0 || n > 3 {
        return None;
    }
    let mut len = 0usize;
    for i in 0..n {
        len = len << 8 | *b.get(2 + i)? as usize;
    }
    if len < 0x80 {
        return None; // not DER (minimal length encoding)
    }
    Some((tag, 2 + n, len))
}

/// The elements of `content`, which they must fill exactly.
fn elements(content: &[u8]) -> Option<Vec<(u8, &[u8])>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < content.len() {
        let (tag, hl, len) = tlv(&content[pos..])?;
        let body = content.get(pos + hl..pos + hl + len)?;
        out.push((tag, body));
        pos += hl + len;
    }
    Some(out)
}

/// RSAPrivateKey: version, n, e, d, p, q, dp, dq, qinv (and more primes for version 1).
fn rsa_private(content: &[u8]) -> bool {
    let Some(els) = elements(content) else {
        return false;
    };
    els.len() >= 9
        && els.iter().all(|(t, _)| *t == 0x02)
        && (els[0].1 == [0] || els[0].1 == [1])
        && els[1].1.len() >= 64
        && entropy(els[3].1) >= 4.0
}

/// ECPrivateKey: version 1, the scalar, optional [0] parameters and [1] public key.
fn sec1(content: &[u8]) -> bool {
    let Some(els) = elements(content) else {
        return false;
    };
    els.len() >= 2
        && els[0] == (0x02, &[1][..])
        && els[1].0 == 0x04
        && (16..=66).contains(&els[1].1.len())
        && entropy(els[1].1) >= 3.5
        && els[2..].iter().all(|(t, _)| *t == 0xA0 || *t == 0xA1)
}

/// PrivateKeyInfo: version, algorithm, the key (an octet string holding a structure).
fn pkcs8(content: &[u8]) -> bool {
    let Some(els) = elements(content) else {
        return false;
    };
    if els.len() < 3
        || els[0].0 != 0x02
        || els[0].1.len() != 1
        || els[0].1[0] > 1
        || els[1].0 != 0x30
        || els[2].0 != 0x04
        || !els[3..]
            .iter()
            .all(|(t, _)| matches!(*t, 0xA0 | 0xA1 | 0x81))
    {
        return false;
    }
    let inner = els[2].1;
    let Some((0x30, hl, len)) = tlv(inner) else {
        return false;
    };
    if hl + len != inner.len() {
        return false;
    }
    rsa_private(&inner[hl..]) || sec1(&inner[hl..])
}

/// PFX: version 3, authSafe (a ContentInfo), optional macData.
fn pkcs12(content: &[u8]) -> bool {
    const DATA_OID: &[u8] = &[0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x07];
    let Some(els) = elements(content) else {
        return false;
    };
    if els.len() < 2 || els[0] != (0x02, &[3][..]) || els[1].0 != 0x30 {
        return false;
    }
    let Some(ci) = elements(els[1].1) else {
        return false;
    };
    ci.first()
        .is_some_and(|(t, oid)| *t == 0x06 && oid.len() == 9 && oid.starts_with(DATA_OID))
}
