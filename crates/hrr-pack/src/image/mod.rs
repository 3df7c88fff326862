//! `hrr-pack image`: a container image bundling `hrr-playback`, built offline from a base image
//! file by appending one layer. No daemon, no registry.
//!
//! The output is one tar that is at once an OCI image layout (`oci-layout`, `index.json`,
//! `blobs/sha256/…`; what `podman load` and `skopeo` read) and a `docker save` archive (a
//! docker-style `manifest.json` naming the config and layer blobs; what `docker load` reads from
//! 20.10 on). The same inputs always give the same bytes:
//! - the layer holds `usr/`, `usr/local/`, `usr/local/bin/` (folders, 0755) and
//!   `usr/local/bin/hrr-playback` (0755), uid/gid 0, mtime the image's creation time (see
//!   [`creation_epoch`]: `SOURCE_DATE_EPOCH`, else the newest input), no `bin/`/`lib/` entries
//!   (they would replace a merged-/usr base's links);
//!   gzip (flate2, level 6, header mtime 0) for every Docker and OCI reader;
//! - the base config is edited as JSON values (every key of the base is kept, Docker's own
//!   included): the layer's diff_id and a history entry appended, `Cmd` set to
//!   `["hrr-playback", "--help"]`, `Entrypoint` removed (users name `hrr-playback` themselves),
//!   `/usr/local/bin` kept on `PATH`, `created` from the epoch;
//! - manifest and index are OCI types (`oci-spec`), Docker media types of the base converted
//!   (the blobs are unchanged), JSON keys sorted; tar members sorted, fixed headers.
//!
//! - a base that is itself an `hrr-pack image` output has its hrr-playback layer (the last
//!   layer, with the last history entry ours) replaced rather than a second one stacked, so
//!   building again on an image gives the image the same base would.
//!
//! Before anything is written the base's `libc.so.6` must provide the newest glibc symbol
//! version the binary references; otherwise the build is refused, naming both versions.

pub mod base;
pub mod glibc;

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use oci_spec::image::{
    Arch, Descriptor, DescriptorBuilder, Digest, ImageIndexBuilder, ImageManifestBuilder,
    MediaType, Os, PlatformBuilder,
};
use serde_json::{json, Value};
use sha2::{Digest as _, Sha256};

use glibc::{GlibcVersion, Needs};

/// The comment of the history entry this tool appends (how its own layer is recognised).
pub const HISTORY_COMMENT: &str = "hrr-pack image";
/// Where the binary goes in the image.
pub const INSTALL_PATH: &str = "usr/local/bin/hrr-playback";
/// The image's default command (never an entrypoint).
pub const CMD: [&str; 2] = ["hrr-playback", "--help"];

/// Errors of `hrr-pack image`.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Reading or writing a file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What happened.
        source: io::Error,
    },
    /// The base is not an image this tool can read.
    #[error("base {}: {reason}", path.display())]
    BadBase {
        /// The base as given.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The binary cannot be bundled.
    #[error("{}: {reason}", path.display())]
    BadBinary {
        /// The binary.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The base's C library is too old (or missing) for the binary.
    #[error(
        "the base image cannot run {}: it needs glibc {needs} or newer, and the base {}; \
         pick a newer base (e.g. rocm/dev-ubuntu-24.04, glibc 2.39) or build hrr-playback on an \
         older system",
        binary.display(),
        match has { Some(v) => format!("has glibc {v}"), None => "has no glibc (no libc.so.6)".to_string() }
    )]
    Glibc {
        /// The binary.
        binary: PathBuf,
        /// Newest version the binary references.
        needs: GlibcVersion,
        /// What the base provides.
        has: Option<GlibcVersion>,
    },
    /// Building an OCI document.
    #[error("OCI document: {0}")]
    Oci(String),
}

/// Result of this module.
pub type Result<T> = std::result::Result<T, ImageError>;

/// What to build.
pub struct ImageOptions {
    /// The base image (OCI layout folder, oci-archive tar, docker-archive tar or folder).
    pub base: PathBuf,
    /// The `hrr-playback` binary to bundle.
    pub playback: PathBuf,
    /// The image tar to write (replaced atomically).
    pub output: PathBuf,
    /// Image name, `name[:tag]` (`:latest` added when missing).
    pub tag: String,
    /// Timestamp of the layer's files, the config's `created` and the history entry; `None`:
    /// the newest input ([`creation_epoch`]).
    pub epoch: Option<u64>,
}

/// What was built: the `hrr.image/1` object `hrr-pack image --json` prints (one field list,
/// [`hrr_cli::json::ImageJson`], for the build's outcome and its JSON form; `output` is the
/// image tar's path as text, `layers` counts the image's layers, the added one included).
pub type ImageOutcome = hrr_cli::json::ImageJson;

fn io_err(path: &Path) -> impl Fn(io::Error) -> ImageError + '_ {
    move |source| ImageError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn oci(e: impl std::fmt::Display) -> ImageError {
    ImageError::Oci(e.to_string())
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// `sha256:<hex>` of some bytes.
pub fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

/// `sha256:<hex>` and size of a file, streamed.
pub fn sha256_file(path: &Path) -> Result<(String, u64)> {
    let mut f = File::open(path).map_err(io_err(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0u64;
    loop {
        let k = f.read(&mut buf).map_err(io_err(path))?;
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        n += k as u64;
    }
    Ok((format!("sha256:{}", hex(&h.finalize())), n))
}

/// `SOURCE_DATE_EPOCH`, when set and valid.
pub fn epoch_from_env() -> Option<u64> {
    std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Seconds since 1970 of an RFC 3339 time (`2024-05-01T12:00:00Z`, fractions and a `+hh:mm`
/// offset allowed); `None` when it is not one (or before 1970).
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    u64::try_from(t.timestamp()).ok()
}

/// The image's creation time and where it came from: `SOURCE_DATE_EPOCH` when set, else the
/// newest input: the binary's mtime, or the base's own `created` (its file's mtime when it
/// has none). Not the build's clock, so the same inputs give the same bytes; and an image
/// rebuilt on an image from the same binary gets the same time.
pub fn creation_epoch(
    env: Option<u64>,
    binary: &Path,
    base_config: &[u8],
    base_file: &Path,
) -> (u64, &'static str) {
    if let Some(e) = env {
        return (e, "SOURCE_DATE_EPOCH");
    }
    let mtime = |p: &Path| {
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
    };
    let base = serde_json::from_slice::<Value>(base_config)
        .ok()
        .and_then(|v| {
            v.get("created")
                .and_then(Value::as_str)
                .and_then(parse_rfc3339)
        })
        .or_else(|| mtime(base_file))
        .unwrap_or(0);
    let bin = mtime(binary).unwrap_or(0);
    if bin >= base {
        (bin, "hrr-playback")
    } else {
        (base, "base")
    }
}

/// A base built by this tool: take its hrr-playback layer off (last layer, last diff_id, last
/// history entry), so the new one replaces it. Returns whether it did.
fn strip_own_layer(base: &mut base::Base) -> Result<bool> {
    let Ok(mut cfg) = serde_json::from_slice::<Value>(&base.config) else {
        return Ok(false); // edit_config says what is wrong with it
    };
    let ours = cfg
        .get("history")
        .and_then(Value::as_array)
        .and_then(|h| h.last())
        .is_some_and(|e| {
            e.get("comment").and_then(Value::as_str) == Some(HISTORY_COMMENT)
                && e.get("empty_layer").is_none_or(|v| v != &json!(true))
        });
    let n_diff = cfg
        .pointer("/rootfs/diff_ids")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if !ours || n_diff == 0 || n_diff != base.layers.len() {
        return Ok(false);
    }
    if let Some(h) = cfg.get_mut("history").and_then(Value::as_array_mut) {
        h.pop();
    }
    if let Some(d) = cfg
        .pointer_mut("/rootfs/diff_ids")
        .and_then(Value::as_array_mut)
    {
        d.pop();
    }
    base.layers.pop();
    // The base of that image is this one's base (none when it came from a `docker save`).
    base.manifest_digest = base.base_digest.take();
    base.config = serde_json::to_vec(&cfg).map_err(oci)?;
    Ok(true)
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since 1970.
pub fn rfc3339(epoch: u64) -> String {
    let t = i64::try_from(epoch)
        .ok()
        .and_then(|t| chrono::DateTime::from_timestamp(t, 0))
        .unwrap_or_default();
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `name:tag` (`:latest` added when the last path component has no tag).
pub fn full_tag(tag: &str) -> String {
    let last = tag.rsplit('/').next().unwrap_or(tag);
    if last.contains(':') || last.contains('@') {
        tag.to_string()
    } else {
        format!("{tag}:latest")
    }
}

/// The layer: a deterministic tar of the binary at [`INSTALL_PATH`] with its parent folders.
/// Returns (uncompressed tar, gzip bytes).
pub fn build_layer(binary: &[u8], epoch: u64) -> Result<(Vec<u8>, Vec<u8>)> {
    let mut tar = tar::Builder::new(Vec::new());
    let header = |size: u64, dir: bool| {
        let mut h = tar::Header::new_ustar();
        h.set_size(size);
        h.set_mode(0o755);
        h.set_uid(0);
        h.set_gid(0);
        h.set_mtime(epoch);
        h.set_entry_type(if dir {
            tar::EntryType::Directory
        } else {
            tar::EntryType::Regular
        });
        h
    };
    let w = |e: io::Error| ImageError::Io {
        path: PathBuf::from("<layer>"),
        source: e,
    };
    for d in ["usr/", "usr/local/", "usr/local/bin/"] {
        let mut h = header(0, true);
        tar.append_data(&mut h, d, io::empty()).map_err(w)?;
    }
    let mut h = header(binary.len() as u64, false);
    tar.append_data(&mut h, INSTALL_PATH, binary).map_err(w)?;
    let plain = tar.into_inner().map_err(w)?;
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(Vec::new(), flate2::Compression::new(6));
    gz.write_all(&plain).map_err(w)?;
    let gz = gz.finish().map_err(w)?;
    Ok((plain, gz))
}

/// Sort every object's keys, so documents serialised from hash maps are byte-stable.
fn sorted(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut items: Vec<_> = m.into_iter().collect();
            items.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(items.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn stable_json<T: serde::Serialize>(doc: &T) -> Result<Vec<u8>> {
    let v = serde_json::to_value(doc).map_err(oci)?;
    serde_json::to_vec(&sorted(v)).map_err(oci)
}

fn digest(s: &str) -> Result<Digest> {
    s.parse().map_err(oci)
}

/// Edit the base config (as JSON values: unknown keys stay): append the layer, set the command.
/// Returns the new config and the removed entrypoint, if any.
pub fn edit_config(base: &[u8], diff_id: &str, epoch: u64) -> Result<(Value, Option<Value>)> {
    let mut cfg: Value = serde_json::from_slice(base)
        .map_err(|e| ImageError::Oci(format!("base config is not JSON: {e}")))?;
    let obj = cfg
        .as_object_mut()
        .ok_or_else(|| ImageError::Oci("base config is not a JSON object".into()))?;
    let arch = obj
        .get("architecture")
        .and_then(Value::as_str)
        .unwrap_or("amd64");
    if arch != "amd64" {
        return Err(ImageError::Oci(format!(
            "the base is for `{arch}`; hrr-playback here is built for amd64"
        )));
    }
    let created = rfc3339(epoch);
    let diff_ids = obj
        .get_mut("rootfs")
        .and_then(|r| r.get_mut("diff_ids"))
        .and_then(Value::as_array_mut)
        .ok_or_else(|| ImageError::Oci("base config has no rootfs.diff_ids".into()))?;
    diff_ids.push(json!(diff_id));
    if let Some(h) = obj.get_mut("history").and_then(Value::as_array_mut) {
        h.push(json!({
            "created": created,
            "created_by": format!("hrr-pack image: COPY hrr-playback /{INSTALL_PATH}"),
            "comment": HISTORY_COMMENT,
        }));
    }
    obj.insert("created".into(), json!(created));
    let conf = obj.entry("config").or_insert_with(|| json!({}));
    if conf.is_null() {
        *conf = json!({});
    }
    let conf = conf
        .as_object_mut()
        .ok_or_else(|| ImageError::Oci("base config's `config` is not an object".into()))?;
    let removed = match conf.remove("Entrypoint") {
        Some(Value::Null) | None => None,
        Some(Value::Array(a)) if a.is_empty() => None,
        Some(e) => Some(e),
    };
    conf.insert("Cmd".into(), json!(CMD));
    let env = conf.entry("Env").or_insert_with(|| json!([]));
    if env.is_null() {
        *env = json!([]);
    }
    let env = env
        .as_array_mut()
        .ok_or_else(|| ImageError::Oci("base config's Env is not a list".into()))?;
    let path_at = env
        .iter()
        .position(|e| e.as_str().is_some_and(|s| s.starts_with("PATH=")));
    match path_at {
        None => env.push(json!(
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        )),
        Some(i) => {
            let cur = env[i].as_str().unwrap_or("PATH=").to_string();
            if !cur[5..].split(':').any(|p| p == "/usr/local/bin") {
                env[i] = json!(format!("PATH=/usr/local/bin:{}", &cur[5..]));
            }
        }
    }
    Ok((cfg, removed))
}

/// Newest glibc in the base: the topmost layer holding a `libc.so.6` (or old-style
/// `libc-2.NN.so`) decides.
pub fn base_glibc(layers: &[base::BaseLayer]) -> Result<Option<GlibcVersion>> {
    for l in layers.iter().rev() {
        let f = File::open(&l.path).map_err(io_err(&l.path))?;
        let f = io::BufReader::with_capacity(1 << 20, f);
        let reader: Box<dyn Read> = match l.media_type {
            MediaType::ImageLayerGzip => Box::new(flate2::read::MultiGzDecoder::new(f)),
            MediaType::ImageLayerZstd => {
                Box::new(zstd::stream::read::Decoder::with_buffer(f).map_err(io_err(&l.path))?)
            }
            _ => Box::new(f),
        };
        let bad = |e: io::Error| ImageError::BadBase {
            path: l.path.clone(),
            reason: format!("layer {} is not a readable tar: {e}", l.digest),
        };
        let mut ar = tar::Archive::new(reader);
        let mut found: Option<GlibcVersion> = None;
        for entry in ar.entries().map_err(bad)? {
            let mut entry = entry.map_err(bad)?;
            let path = entry.path().map_err(bad)?.into_owned();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let in_lib = path
                .components()
                .any(|c| matches!(c.as_os_str().to_str(), Some("lib" | "lib64")));
            if !in_lib {
                continue;
            }
            let v = if name == "libc.so.6" {
                match entry.header().entry_type() {
                    tar::EntryType::Regular => glibc::provided_by_libc(&mut entry).map_err(bad)?,
                    tar::EntryType::Symlink => entry
                        .link_name()
                        .ok()
                        .flatten()
                        .and_then(|t| t.file_name().and_then(|n| n.to_str()).map(String::from))
                        .and_then(|n| glibc::from_file_name(&n)),
                    _ => None,
                }
            } else {
                glibc::from_file_name(name)
            };
            found = found.max(v);
        }
        if found.is_some() {
            return Ok(found);
        }
    }
    Ok(None)
}

/// A member of the output tar.
enum Member<'a> {
    Dir(&'static str),
    Bytes(String, &'a [u8]),
    File(String, &'a Path, u64),
}

/// Build the image. See the module docs for what is written.
pub fn build(opts: &ImageOptions) -> Result<ImageOutcome> {
    let binary = std::fs::read(&opts.playback).map_err(io_err(&opts.playback))?;
    let bad_bin = |reason: &str| ImageError::BadBinary {
        path: opts.playback.clone(),
        reason: reason.into(),
    };
    let needs = glibc::needed(&binary).ok_or_else(|| {
        bad_bin("not an x86-64 ELF executable (point --playback at hrr-playback)")
    })?;
    let out_dir = match opts.output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut base = base::open(&opts.base, &out_dir)?;
    let replaced_layer = strip_own_layer(&mut base)?;
    let (epoch, created_from) =
        creation_epoch(opts.epoch, &opts.playback, &base.config, &opts.base);
    let has = base_glibc(&base.layers)?;
    if let Needs::Glibc(v) = needs {
        if has.is_none_or(|h| h < v) {
            return Err(ImageError::Glibc {
                binary: opts.playback.clone(),
                needs: v,
                has,
            });
        }
    }

    let (plain, gz) = build_layer(&binary, epoch)?;
    drop(binary);
    let diff_id = sha256(&plain);
    drop(plain);
    let layer_digest = sha256(&gz);
    let (cfg, removed_entrypoint) = edit_config(&base.config, &diff_id, epoch)?;
    let cfg_bytes = serde_json::to_vec(&cfg).map_err(oci)?;
    let cfg_digest = sha256(&cfg_bytes);

    let mut layer_descs: Vec<Descriptor> = base
        .layers
        .iter()
        .map(|l| {
            Ok(Descriptor::new(
                l.media_type.clone(),
                l.size,
                digest(&l.digest)?,
            ))
        })
        .collect::<Result<_>>()?;
    layer_descs.push(Descriptor::new(
        MediaType::ImageLayerGzip,
        gz.len() as u64,
        digest(&layer_digest)?,
    ));
    let mut mb = ImageManifestBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageManifest)
        .config(Descriptor::new(
            MediaType::ImageConfig,
            cfg_bytes.len() as u64,
            digest(&cfg_digest)?,
        ))
        .layers(layer_descs);
    if let Some(d) = &base.manifest_digest {
        mb = mb.annotations(
            [(
                "org.opencontainers.image.base.digest".to_string(),
                d.clone(),
            )]
            .into_iter()
            .collect::<std::collections::HashMap<_, _>>(),
        );
    }
    let manifest = mb.build().map_err(oci)?;
    let manifest_bytes = stable_json(&manifest)?;
    let manifest_digest = sha256(&manifest_bytes);

    let tag = full_tag(&opts.tag);
    let index = ImageIndexBuilder::default()
        .schema_version(2u32)
        .media_type(MediaType::ImageIndex)
        .manifests(vec![DescriptorBuilder::default()
            .media_type(MediaType::ImageManifest)
            .digest(digest(&manifest_digest)?)
            .size(manifest_bytes.len() as u64)
            .platform(
                PlatformBuilder::default()
                    .architecture(Arch::Amd64)
                    .os(Os::Linux)
                    .build()
                    .map_err(oci)?,
            )
            .annotations(
                [
                    ("org.opencontainers.image.ref.name".to_string(), tag.clone()),
                    ("io.containerd.image.name".to_string(), tag.clone()),
                ]
                .into_iter()
                .collect::<std::collections::HashMap<_, _>>(),
            )
            .build()
            .map_err(oci)?])
        .build()
        .map_err(oci)?;
    let index_bytes = stable_json(&index)?;
    let blob = |d: &str| format!("blobs/sha256/{}", d.trim_start_matches("sha256:"));
    let mut layer_paths: Vec<String> = base.layers.iter().map(|l| blob(&l.digest)).collect();
    layer_paths.push(blob(&layer_digest));
    let docker = json!([{
        "Config": blob(&cfg_digest),
        "RepoTags": [tag],
        "Layers": layer_paths,
    }]);
    let docker_bytes = serde_json::to_vec(&docker).map_err(oci)?;
    let layout = br#"{"imageLayoutVersion":"1.0.0"}"#;

    // Blobs sorted by digest, each once (a base may repeat a layer).
    let mut blobs: Vec<Member> = vec![
        Member::Bytes(blob(&cfg_digest), &cfg_bytes),
        Member::Bytes(blob(&manifest_digest), &manifest_bytes),
        Member::Bytes(blob(&layer_digest), &gz),
    ];
    for l in &base.layers {
        blobs.push(Member::File(blob(&l.digest), &l.path, l.size));
    }
    let name = |m: &Member| match m {
        Member::Dir(n) => n.to_string(),
        Member::Bytes(n, _) | Member::File(n, _, _) => n.clone(),
    };
    blobs.sort_by_key(name);
    blobs.dedup_by(|a, b| name(a) == name(b));
    let mut members = vec![
        Member::Bytes("oci-layout".into(), layout),
        Member::Dir("blobs/"),
        Member::Dir("blobs/sha256/"),
    ];
    members.extend(blobs);
    members.push(Member::Bytes("index.json".into(), &index_bytes));
    members.push(Member::Bytes("manifest.json".into(), &docker_bytes));

    let tmp = tempfile::Builder::new()
        .prefix(".hrr-image-")
        .suffix(".tmp")
        .tempfile_in(&out_dir)
        .map_err(io_err(&out_dir))?;
    let werr = io_err(&opts.output);
    {
        let mut tar = tar::Builder::new(io::BufWriter::with_capacity(1 << 20, tmp.as_file()));
        for m in &members {
            let mut h = tar::Header::new_ustar();
            h.set_uid(0);
            h.set_gid(0);
            h.set_mtime(epoch);
            match m {
                Member::Dir(n) => {
                    h.set_entry_type(tar::EntryType::Directory);
                    h.set_mode(0o755);
                    h.set_size(0);
                    tar.append_data(&mut h, n, io::empty()).map_err(&werr)?;
                }
                Member::Bytes(n, b) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_mode(0o644);
                    h.set_size(b.len() as u64);
                    tar.append_data(&mut h, n, *b).map_err(&werr)?;
                }
                Member::File(n, p, size) => {
                    h.set_entry_type(tar::EntryType::Regular);
                    h.set_mode(0o644);
                    h.set_size(*size);
                    let f = File::open(p).map_err(io_err(p))?;
                    tar.append_data(&mut h, n, f.take(*size)).map_err(&werr)?;
                }
            }
        }
        let mut w = tar.into_inner().map_err(&werr)?;
        w.flush().map_err(&werr)?;
    }
    let bytes = tmp.as_file().metadata().map_err(&werr)?.len();
    tmp.persist(&opts.output).map_err(|e| ImageError::Io {
        path: opts.output.clone(),
        source: e.error,
    })?;
    Ok(ImageOutcome {
        schema: "hrr.image/1".into(),
        ok: true,
        output: opts.output.display().to_string(),
        tag,
        manifest_digest,
        config_digest: cfg_digest,
        layer_digest,
        diff_id,
        layers: (base.layers.len() + 1) as u64,
        glibc_needed: match needs {
            Needs::Glibc(v) => Some(v.to_string()),
            Needs::Nothing => None,
        },
        glibc_base: has.map(|v| v.to_string()),
        bytes,
        removed_entrypoint,
        created: rfc3339(epoch),
        created_from: created_from.to_string(),
        replaced_layer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_format_as_rfc3339() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_153_704_088), "2006-07-24T01:21:28Z");
        assert_eq!(rfc3339(951_827_696), "2000-02-29T12:34:56Z");
        for t in [0, 951_827_696, 1_153_704_088, 1_700_000_000, 4_102_444_800] {
            assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
        }
        assert_eq!(
            parse_rfc3339("2000-02-29T12:34:56.123456789Z"),
            Some(951_827_696)
        );
        assert_eq!(
            parse_rfc3339("2000-02-29T14:34:56+02:00"),
            Some(951_827_696)
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn tags_get_latest() {
        assert_eq!(full_tag("hrr-playback"), "hrr-playback:latest");
        assert_eq!(full_tag("localhost:5000/x"), "localhost:5000/x:latest");
        assert_eq!(full_tag("a/b:1"), "a/b:1");
    }

    #[test]
    fn config_edit_keeps_unknown_keys_and_sets_cmd() {
        let base = br#"{"architecture":"amd64","os":"linux","docker_version":"20.10",
            "container_config":{"Hostname":"x"},
            "config":{"Entrypoint":["/bin/sh"],"Env":["PATH=/usr/bin:/bin"],"ArgsEscaped":true,
            "Healthcheck":{"Test":["NONE"]}},
            "rootfs":{"type":"layers","diff_ids":["sha256:aa"]},"history":[{"created_by":"x"}]}"#;
        let (cfg, removed) = edit_config(base, "sha256:bb", 0).unwrap();
        assert_eq!(removed, Some(json!(["/bin/sh"])));
        assert_eq!(cfg["docker_version"], "20.10");
        assert_eq!(cfg["container_config"]["Hostname"], "x");
        assert_eq!(cfg["config"]["ArgsEscaped"], true);
        assert_eq!(cfg["config"]["Healthcheck"]["Test"][0], "NONE");
        assert_eq!(cfg["config"]["Cmd"], json!(CMD));
        assert!(cfg["config"].get("Entrypoint").is_none());
        assert_eq!(cfg["config"]["Env"][0], "PATH=/usr/local/bin:/usr/bin:/bin");
        assert_eq!(cfg["rootfs"]["diff_ids"], json!(["sha256:aa", "sha256:bb"]));
        assert_eq!(cfg["history"].as_array().unwrap().len(), 2);
        assert_eq!(cfg["created"], "1970-01-01T00:00:00Z");
    }

    #[test]
    fn layer_is_deterministic_and_has_only_usr_entries() {
        let (a, ga) = build_layer(b"\x7fELF binary", 5).unwrap();
        let (b, gb) = build_layer(b"\x7fELF binary", 5).unwrap();
        assert_eq!((a.clone(), ga), (b, gb));
        assert_eq!(
            hrr_archive::testkit::tar_names(&a),
            ["usr/", "usr/local/", "usr/local/bin/", INSTALL_PATH].map(String::from)
        );
    }
}
