//! `hrr-pack image` on synthetic bases built here (an OCI layout folder, the same as an
//! oci-archive tar, a `docker save` folder): deterministic output, the layer's entries, config
//! keys of the base kept, OCI + docker-style manifests agreeing, glibc refusals. The run in a
//! real container runtime is `tests/containers/run.sh`.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use hrr_archive::testkit::assert_contains;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sha(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// A gzip layer: `bin -> usr/bin`, `usr/lib/x86_64-linux-gnu/libc.so.6` holding `libc`.
fn base_layer(libc: Option<&[u8]>) -> (Vec<u8>, Vec<u8>) {
    let mut t = tar::Builder::new(Vec::new());
    let dir = |t: &mut tar::Builder<Vec<u8>>, p: &str| {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_size(0);
        t.append_data(&mut h, p, std::io::empty()).unwrap();
    };
    for d in ["usr/", "usr/bin/", "usr/lib/", "usr/lib/x86_64-linux-gnu/"] {
        dir(&mut t, d);
    }
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    h.set_mode(0o777);
    t.append_link(&mut h, "bin", "usr/bin").unwrap();
    if let Some(libc) = libc {
        let mut h = tar::Header::new_ustar();
        h.set_size(libc.len() as u64);
        h.set_mode(0o755);
        t.append_data(&mut h, "usr/lib/x86_64-linux-gnu/libc.so.6", libc)
            .unwrap();
    }
    let plain = t.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&plain).unwrap();
    (plain, gz.finish().unwrap())
}

fn base_config(diff_id: &str) -> Value {
    json!({
        "architecture": "amd64", "os": "linux",
        "docker_version": "20.10.24", "container": "abc",
        "container_config": {"Hostname": "abc", "Cmd": ["/bin/sh"]},
        "config": {"Env": ["PATH=/usr/bin:/bin"], "Entrypoint": ["/bin/sh", "-c"],
                   "ArgsEscaped": true, "OnBuild": null, "Labels": {"x": "y"}},
        "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{diff_id}")]},
        "history": [{"created_by": "base"}],
    })
}

fn put_blob(dir: &Path, bytes: &[u8]) -> String {
    let d = sha(bytes);
    std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
    std::fs::write(dir.join("blobs/sha256").join(&d), bytes).unwrap();
    d
}

/// An OCI image layout folder with one layer.
fn oci_layout(dir: &Path, libc: Option<&[u8]>) {
    let (plain, gz) = base_layer(libc);
    let cfg = serde_json::to_vec(&base_config(&sha(&plain))).unwrap();
    let cfg_d = put_blob(dir, &cfg);
    let layer_d = put_blob(dir, &gz);
    let manifest = json!({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": format!("sha256:{cfg_d}"), "size": cfg.len()},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                    "digest": format!("sha256:{layer_d}"), "size": gz.len()}],
    });
    let m = serde_json::to_vec(&manifest).unwrap();
    let m_d = put_blob(dir, &m);
    let index = json!({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json",
         "digest": format!("sha256:{m_d}"), "size": m.len(),
         "platform": {"architecture": "amd64", "os": "linux"}}]});
    std::fs::write(dir.join("index.json"), serde_json::to_vec(&index).unwrap()).unwrap();
    std::fs::write(dir.join("oci-layout"), br#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
}

/// A `docker save` (legacy layout) folder: `<id>/layer.tar` uncompressed, `<cfg>.json`.
fn docker_save_dir(dir: &Path, libc: Option<&[u8]>) {
    let (plain, _) = base_layer(libc);
    let cfg = serde_json::to_vec(&base_config(&sha(&plain))).unwrap();
    std::fs::create_dir_all(dir.join("abcd")).unwrap();
    std::fs::write(dir.join("abcd/layer.tar"), &plain).unwrap();
    std::fs::write(dir.join("cfg.json"), &cfg).unwrap();
    let m = json!([{"Config": "cfg.json", "RepoTags": ["base:1"], "Layers": ["abcd/layer.tar"]}]);
    std::fs::write(dir.join("manifest.json"), serde_json::to_vec(&m).unwrap()).unwrap();
}

fn hrr_pack(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hrr-pack"))
        .args(args)
        .env("SOURCE_DATE_EPOCH", "1700000000")
        .output()
        .unwrap()
}

/// Any small glibc-linked ELF stands in for hrr-playback: coreutils' `true`.
fn playback() -> &'static str {
    ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .find(|p| Path::new(p).is_file())
        .expect("coreutils' true")
}

/// A temp folder with a good OCI layout base (glibc new enough) at `base` in it: the folder,
/// the base.
fn good_base() -> (tempfile::TempDir, PathBuf) {
    let t = tmp();
    let base = t.path().join("base");
    oci_layout(&base, Some(GOOD_LIBC));
    (t, base)
}

/// `hrr-pack image` of `base` into `out` (tag `hrr-test/pb`), with `--json`.
fn build(base: &Path, out: &Path) -> Output {
    build_with(base, out, "--json")
}

/// `hrr-pack image` of `base` into `out` (tag `hrr-test/pb`) with `flag`.
fn build_with(base: &Path, out: &Path, flag: &str) -> Output {
    hrr_pack(&[
        "image",
        "--base",
        base.to_str().unwrap(),
        "--playback",
        playback(),
        "-o",
        out.to_str().unwrap(),
        "--tag",
        "hrr-test/pb",
        flag,
    ])
}

/// [`build`], which must succeed: its JSON report.
fn built(base: &Path, out: &Path) -> Value {
    let o = build(base, out);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The two files hold the same bytes.
fn same_bytes(a: &Path, b: &Path) -> bool {
    std::fs::read(a).unwrap() == std::fs::read(b).unwrap()
}

fn members(tar_path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut ar = tar::Archive::new(std::fs::File::open(tar_path).unwrap());
    ar.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().display().to_string();
            let mut b = Vec::new();
            e.read_to_end(&mut b).unwrap();
            (name, b)
        })
        .collect()
}

fn get<'a>(m: &'a [(String, Vec<u8>)], name: &str) -> &'a [u8] {
    &m.iter()
        .find(|(n, _)| n == name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .1
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

const GOOD_LIBC: &[u8] = b"\x7fELF....GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.99\0GLIBC_PRIVATE\0";

#[test]
fn oci_layout_base_gives_a_deterministic_dual_image() {
    let (t, base) = good_base();
    let (a, b) = (t.path().join("a.tar"), t.path().join("b.tar"));
    let report = built(&base, &a);
    built(&base, &b);
    assert!(same_bytes(&a, &b), "identical builds");
    // Its own type decodes it (deny_unknown_fields: a key added or dropped fails here).
    let typed: hrr_cli::json::ImageJson = serde_json::from_value(report.clone()).unwrap();
    assert_eq!((typed.schema.as_str(), typed.layers), ("hrr.image/1", 2));
    assert_eq!(report["tag"], "hrr-test/pb:latest");
    assert_eq!(report["glibc_base"], "2.99");
    assert_eq!(report["removed_entrypoint"], json!(["/bin/sh", "-c"]));

    let m = members(&a);
    let names: Vec<&str> = m.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(&names[..3], ["oci-layout", "blobs/", "blobs/sha256/"]);
    assert_eq!(&names[names.len() - 2..], ["index.json", "manifest.json"]);
    // Every blob is named by its content.
    for (n, bytes) in &m {
        if let Some(d) = n.strip_prefix("blobs/sha256/").filter(|d| !d.is_empty()) {
            assert_eq!(d, sha(bytes), "{n}");
        }
    }
    let index: Value = serde_json::from_slice(get(&m, "index.json")).unwrap();
    let desc = &index["manifests"][0];
    assert_eq!(
        desc["annotations"]["org.opencontainers.image.ref.name"],
        "hrr-test/pb:latest"
    );
    let md = desc["digest"].as_str().unwrap();
    assert_eq!(md, report["manifest_digest"]);
    let manifest: Value =
        serde_json::from_slice(get(&m, &format!("blobs/sha256/{}", &md[7..]))).unwrap();
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 2);
    let cd = manifest["config"]["digest"].as_str().unwrap();
    let cfg: Value =
        serde_json::from_slice(get(&m, &format!("blobs/sha256/{}", &cd[7..]))).unwrap();
    // Unknown (Docker) keys of the base are kept; the command is set, the entrypoint gone.
    assert_eq!(cfg["docker_version"], "20.10.24");
    assert_eq!(cfg["container_config"]["Hostname"], "abc");
    assert_eq!(cfg["config"]["ArgsEscaped"], true);
    assert_eq!(cfg["config"]["Labels"]["x"], "y");
    assert_eq!(cfg["config"]["Cmd"], json!(["hrr-playback", "--help"]));
    assert!(cfg["config"].get("Entrypoint").is_none());
    assert_eq!(cfg["config"]["Env"][0], "PATH=/usr/local/bin:/usr/bin:/bin");
    assert_eq!(cfg["created"], "2023-11-14T22:13:20Z");
    assert_eq!(cfg["history"].as_array().unwrap().len(), 2);
    // The added layer: only usr/… entries, the binary byte for byte, its diff_id in the config.
    let ld = layers[1]["digest"].as_str().unwrap();
    assert_eq!(
        layers[1]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let gz = get(&m, &format!("blobs/sha256/{}", &ld[7..]));
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut plain)
        .unwrap();
    assert_eq!(
        cfg["rootfs"]["diff_ids"][1],
        format!("sha256:{}", sha(&plain))
    );
    let mut ar = tar::Archive::new(&plain[..]);
    let mut entries = Vec::new();
    for e in ar.entries().unwrap() {
        let mut e = e.unwrap();
        let h = e.header().clone();
        let name = e.path().unwrap().display().to_string();
        let mut body = Vec::new();
        e.read_to_end(&mut body).unwrap();
        assert_eq!(
            (h.uid().unwrap(), h.gid().unwrap(), h.mode().unwrap()),
            (0, 0, 0o755)
        );
        assert_eq!(h.mtime().unwrap(), 1_700_000_000);
        entries.push((name, body));
    }
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "usr/",
            "usr/local/",
            "usr/local/bin/",
            "usr/local/bin/hrr-playback"
        ]
    );
    assert!(
        entries[3].1 == std::fs::read(playback()).unwrap(),
        "the binary, byte for byte"
    );
    // The docker-style manifest names the same config and layers.
    let docker: Value = serde_json::from_slice(get(&m, "manifest.json")).unwrap();
    assert_eq!(docker[0]["Config"], format!("blobs/sha256/{}", &cd[7..]));
    assert_eq!(docker[0]["RepoTags"], json!(["hrr-test/pb:latest"]));
    let dl: Vec<String> = layers
        .iter()
        .map(|l| format!("blobs/sha256/{}", &l["digest"].as_str().unwrap()[7..]))
        .collect();
    assert_eq!(docker[0]["Layers"], json!(dl));

    // The same layout as an oci-archive tar gives the same image.
    let archive = t.path().join("base-oci.tar");
    let mut tb = tar::Builder::new(std::fs::File::create(&archive).unwrap());
    tb.append_dir_all(".", &base).unwrap();
    tb.finish().unwrap();
    drop(tb);
    let c = t.path().join("c.tar");
    built(&archive, &c);
    assert!(same_bytes(&a, &c), "same as from the folder");
}

#[test]
fn docker_save_base_is_converted_to_oci_types() {
    let t = tmp();
    let base = t.path().join("save");
    docker_save_dir(&base, Some(GOOD_LIBC));
    let out = t.path().join("o.tar");
    let report = built(&base, &out);
    let m = members(&out);
    let docker: Value = serde_json::from_slice(get(&m, "manifest.json")).unwrap();
    let l0 = docker[0]["Layers"][0].as_str().unwrap();
    assert!(get(&m, l0) == std::fs::read(base.join("abcd/layer.tar")).unwrap());
    let md = report["manifest_digest"].as_str().unwrap();
    let manifest: Value =
        serde_json::from_slice(get(&m, &format!("blobs/sha256/{}", &md[7..]))).unwrap();
    assert_eq!(
        manifest["layers"][0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar"
    );
}

fn refused(libc: Option<&[u8]>) -> String {
    let t = tmp();
    let base = t.path().join("base");
    oci_layout(&base, libc);
    let out: PathBuf = t.path().join("o.tar");
    let o = build(&base, &out);
    assert_eq!(o.status.code(), Some(1));
    assert!(!out.exists(), "nothing is written on a refusal");
    let names: Vec<_> = std::fs::read_dir(t.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["base"], "no temp files left");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_old_or_missing_glibc_is_refused_clearly() {
    let e = refused(Some(b"GLIBC_2.2.5\0GLIBC_2.17\0"));
    assert!(
        e.contains("the base image cannot run") && e.contains("and the base has glibc 2.17"),
        "{e}"
    );
    assert_contains(&e, "it needs glibc 2.");
    let e = refused(None);
    assert_contains(&e, "has no glibc (no libc.so.6)");
}

#[test]
fn not_a_base_and_not_a_binary_are_errors() {
    let t = tmp();
    std::fs::create_dir(t.path().join("empty")).unwrap();
    let o = build(&t.path().join("empty"), &t.path().join("o.tar"));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("neither an OCI image layout"));
    let base = t.path().join("base");
    oci_layout(&base, Some(GOOD_LIBC));
    let script = t.path().join("script.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let o = hrr_pack(&[
        "image",
        "--base",
        base.to_str().unwrap(),
        "--playback",
        script.to_str().unwrap(),
        "-o",
        t.path().join("o.tar").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not an x86-64 ELF"));
}

#[test]
fn an_existing_output_is_kept_and_an_image_as_base_gets_its_layer_replaced() {
    let (t, base) = good_base();
    let a = t.path().join("a.tar");
    built(&base, &a);
    let first = std::fs::read(&a).unwrap();
    // Not overwritten without --force (pull and unpack never overwrite either).
    std::fs::write(&a, b"precious").unwrap();
    let o = build(&base, &a);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("already exists") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(&a).unwrap(), b"precious");
    let o = build_with(&base, &a, "--force");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(&a).unwrap() == first, "--force replaces it");
    // Built on its own output, the image replaces its hrr-playback layer: the same image.
    let b = t.path().join("b.tar");
    let report = built(&a, &b);
    assert_eq!(report["replaced_layer"], true);
    assert_eq!(report["layers"], 2);
    assert!(
        std::fs::read(&b).unwrap() == first,
        "no second layer stacked"
    );
    // The same from a `docker save` base (no base digest to carry over).
    let save = t.path().join("save");
    docker_save_dir(&save, Some(GOOD_LIBC));
    let (c, d) = (t.path().join("c.tar"), t.path().join("d.tar"));
    built(&save, &c);
    built(&c, &d);
    assert!(
        same_bytes(&c, &d),
        "no second layer stacked on a docker-save base either"
    );
}

#[test]
fn creation_time_is_source_date_epoch_or_the_newest_input() {
    let (t, base) = good_base();
    // A binary newer than the base's own creation time: the image is as old as the binary.
    let bin = t.path().join("hrr-playback");
    std::fs::copy(playback(), &bin).unwrap();
    let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_800_000_000);
    std::fs::File::options()
        .write(true)
        .open(&bin)
        .unwrap()
        .set_modified(when)
        .unwrap();
    let build_unset = |base: &Path, out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_hrr-pack"))
            .args(["image", "--base", base.to_str().unwrap(), "--playback"])
            .arg(&bin)
            .args(["-o", out.to_str().unwrap(), "--json"])
            .env_remove("SOURCE_DATE_EPOCH")
            .output()
            .unwrap()
    };
    let a = t.path().join("a.tar");
    let o = build_unset(&base, &a);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["created"], "2027-01-15T08:00:00Z");
    assert_eq!(r["created_from"], "hrr-playback");
    // Rebuilt on itself (a newer file), the time stays: it is the image's, not the file's.
    let b = t.path().join("b.tar");
    let o = build_unset(&a, &b);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["created"], "2027-01-15T08:00:00Z");
    assert!(same_bytes(&a, &b));
    // SOURCE_DATE_EPOCH wins.
    let c = t.path().join("c.tar");
    let o = build(&base, &c);
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (r["created"].as_str(), r["created_from"].as_str()),
        (Some("2023-11-14T22:13:20Z"), Some("SOURCE_DATE_EPOCH"))
    );
}
