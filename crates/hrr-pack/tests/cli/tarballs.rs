//! Malicious tarballs (built here): every class is an error, nothing lands outside.

use super::*;

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
    // One member of `content` (its size in the header); a plain 0600 file; an empty 0600 entry.
    let one = |name: &[u8], ty, mode, content: &[u8]| {
        vec![(
            raw_header(name, ty, content.len() as u64, mode),
            content.to_vec(),
        )]
    };
    let file = |name: &[u8], content: &[u8]| one(name, T::Regular, 0o600, content);
    let node = |name: &[u8], ty| one(name, ty, 0o600, b"");
    let through_link = file(b"evil/lnk/passwd", b"x");
    // A table, one case a row.
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("symlink", vec![(symlink.clone(), vec![])], &[], "symbolic links are refused"),
        (
            "symlink then a file through it",
            [vec![(symlink, vec![])], through_link].concat(),
            &[("lnk/passwd", b"x")],
            "symbolic links are refused",
        ),
        ("hardlink", vec![(hardlink, vec![])], &[], "hard links are refused"),
        ("char device", node(b"evil/tty", T::Char), &[], "device files are refused"),
        ("block device", node(b"evil/sda", T::Block), &[], "device files are refused"),
        ("fifo", node(b"evil/fifo", T::Fifo), &[], "FIFOs are refused"),
        (
            "setuid",
            one(b"evil/suid", T::Regular, 0o4755, b"x"),
            &[("suid", b"x")],
            "setuid/setgid/sticky",
        ),
        ("setgid dir", one(b"evil/d", T::Directory, 0o2755, b""), &[], "setuid/setgid/sticky"),
        ("absolute path", file(b"/tmp/evil-abs", b"x"), &[], "absolute paths are refused"),
        ("parent dir", file(b"evil/../escape", b"x"), &[], "`..` in a path is refused"),
        ("outside root", file(b"other/x", b"x"), &[], "outside the pack's root folder"),
        ("duplicate", file(b"evil/ok.txt", b"ok"), &[], "appears twice"),
        ("not in index", file(b"evil/extra", b"x"), &[], "not listed in the pack index"),
        (
            "size differs from index",
            file(b"evil/big", b"xyz"),
            &[("big", b"x")],
            "differs from the index",
        ),
        ("content differs from index", file(b"evil/f", b"y"), &[("f", b"x")], "is corrupt"),
        ("sparse", node(b"evil/sparse", T::GNUSparse), &[], "sparse"),
        ("pax header", vec![pax], &[], "PAX extended headers are refused"),
        ("long name bomb", vec![long_name], &[], "long name of 1048576 bytes"),
        ("missing member", vec![], &[("never", b"x")], "missing from the pack"),
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
