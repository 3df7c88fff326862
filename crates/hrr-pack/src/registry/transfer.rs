//! Push an archive folder as an OCI artifact, fetch its manifest, pull it into a folder.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use futures_util::StreamExt;
use hrr_archive::fsutil;
use hrr_archive::pack::{self, PackOptions};
use hrr_archive::progress::Progress;
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OciDescriptor, OciImageManifest};
use sha2::{Digest, Sha256};

use super::layout::{self, ann, Place, Tree};
use super::{oci_err, Session};

/// Bytes read from a layer file per upload request (the client sends them as one PATCH).
const CHUNK: usize = 4 << 20;

/// What a push did.
#[derive(Debug, Default)]
pub struct PushReport {
    /// Digest of the manifest.
    pub digest: String,
    /// Layers in the artifact (plus the tree).
    pub blobs: usize,
    /// Of which uploaded (the rest the registry already held).
    pub blobs_uploaded: usize,
    /// Compressed bytes of all blobs.
    pub bytes_total: u64,
    /// Compressed bytes uploaded.
    pub bytes_uploaded: u64,
    /// Files and their total size.
    pub files: usize,
    /// Sum of the file sizes.
    pub file_bytes: u64,
    /// Manifest annotations.
    pub annotations: BTreeMap<String, String>,
}

fn file_stream(
    path: &Path,
) -> io::Result<impl futures_util::Stream<Item = oci_client::errors::Result<Bytes>> + Send + 'static>
{
    let file = File::open(path)?;
    Ok(futures_util::stream::unfold(
        Some(file),
        |state| async move {
            let mut f = state?;
            let mut buf = vec![0u8; CHUNK];
            let mut n = 0;
            while n < CHUNK {
                match f.read(&mut buf[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Some((Err(OciDistributionError::IoError(e)), None)),
                }
            }
            if n == 0 {
                return None;
            }
            buf.truncate(n);
            Some((Ok(Bytes::from(buf)), Some(f)))
        },
    ))
}

/// Push the archive folder `src` to the session's reference. Layers the registry already
/// holds are not uploaded. `stop_after` (a test hook) fails the push after that many blobs
/// were uploaded, to exercise resuming.
pub fn push(
    s: &Session,
    src: &Path,
    force: bool,
    progress: &dyn Progress,
    stop_after: Option<usize>,
) -> Result<PushReport> {
    let registry = s.access();
    let opts = PackOptions {
        force,
        ..Default::default()
    };
    let plan = pack::plan(src, &opts, progress)?;
    let index = plan.index;
    let (layers, places, layer_sizes) = layout::plan_layers(&index);
    let tmp = tempfile::Builder::new()
        .prefix("hrr-push-")
        .tempdir()
        .context("creating a temp folder for the layers")?;
    let mut report = PushReport {
        files: index.files.len(),
        file_bytes: index.total_bytes,
        ..Default::default()
    };
    progress.start("compressing", index.total_bytes);
    let mut built = Vec::new();
    for (n, l) in layers.iter().enumerate() {
        built.push(layout::build_layer(
            src,
            &index,
            l,
            tmp.path(),
            n,
            progress,
        )?);
    }
    progress.finish();
    let annotations = layout::annotations(&index);
    let tree = Tree {
        schema: layout::TREE_SCHEMA.into(),
        index,
        places,
        layer_sizes,
    };
    let tree_bytes = serde_json::to_vec(&tree)?;
    let tree_digest = layout::sha256_digest(&tree_bytes);
    let r = &s.reference;
    let total: u64 = built.iter().map(|b| b.size).sum();
    progress.start("uploading", total);
    let mut uploaded = 0usize;
    for b in &built {
        report.blobs += 1;
        report.bytes_total += b.size;
        let have =
            s.rt.block_on(s.client.blob_exists(r, &b.digest))
                .map_err(|e| oci_err(e, "checking a layer", &registry))?;
        if !have {
            if stop_after.is_some_and(|n| uploaded >= n) {
                bail!("push stopped after {uploaded} uploaded layers (HRR_PACK_TEST_STOP_AFTER)");
            }
            let stream = file_stream(&b.path)?;
            s.rt.block_on(
                s.client
                    .push_blob_stream(r, stream, &b.digest, Some(b.size)),
            )
            .map_err(|e| oci_err(e, &format!("uploading layer {}", b.digest), &registry))?;
            uploaded += 1;
            report.blobs_uploaded += 1;
            report.bytes_uploaded += b.size;
        }
        progress.advance(b.size);
    }
    progress.finish();
    report.blobs += 1;
    report.bytes_total += tree_bytes.len() as u64;
    let have =
        s.rt.block_on(s.client.blob_exists(r, &tree_digest))
            .map_err(|e| oci_err(e, "checking the tree", &registry))?;
    if !have {
        s.rt.block_on(s.client.push_blob(r, tree_bytes.clone(), &tree_digest))
            .map_err(|e| oci_err(e, "uploading the tree", &registry))?;
        report.blobs_uploaded += 1;
        report.bytes_uploaded += tree_bytes.len() as u64;
    }
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": layout::MANIFEST_MEDIA_TYPE,
        "artifactType": layout::ARTIFACT_TYPE,
        "config": {
            "mediaType": layout::TREE_MEDIA_TYPE,
            "digest": tree_digest,
            "size": tree_bytes.len(),
        },
        "layers": built.iter().map(|b| serde_json::json!({
            "mediaType": layout::LAYER_MEDIA_TYPE,
            "digest": b.digest,
            "size": b.size,
            "annotations": {ann::ROLE: b.role},
        })).collect::<Vec<_>>(),
        "annotations": annotations,
    });
    let body = serde_json::to_vec(&manifest)?;
    report.digest = layout::sha256_digest(&body);
    let ct = layout::MANIFEST_MEDIA_TYPE
        .parse()
        .map_err(|_| anyhow!("bad content type"))?;
    s.rt.block_on(s.client.push_manifest_raw(r, body, ct))
        .map_err(|e| oci_err(e, "uploading the manifest", &registry))?;
    report.annotations = annotations;
    Ok(report)
}

/// The artifact's manifest (checked to be an hrr archive) and its digest.
pub fn fetch_manifest(s: &Session) -> Result<(OciImageManifest, String)> {
    let registry = s.access();
    let (raw, digest) = s
        .rt
        .block_on(
            s.client
                .pull_manifest_raw(&s.reference, &s.auth, &[layout::MANIFEST_MEDIA_TYPE]),
        )
        .map_err(|e| oci_err(e, "fetching the manifest", &registry))?;
    let actual = layout::sha256_digest(&raw);
    if let Some(want) = s.reference.digest() {
        if want != actual {
            bail!("manifest digest {actual} differs from the requested {want}");
        }
    }
    if !digest.is_empty() && digest != actual {
        bail!("manifest digest {actual} differs from the registry's {digest}");
    }
    let m: OciImageManifest = serde_json::from_slice(&raw).context("parsing the manifest")?;
    if m.artifact_type.as_deref() != Some(layout::ARTIFACT_TYPE)
        || m.config.media_type != layout::TREE_MEDIA_TYPE
    {
        bail!(
            "{}: not an hrr archive (artifactType {:?}, config {})",
            s.reference,
            m.artifact_type,
            m.config.media_type
        );
    }
    Ok((m, actual))
}

/// Download a blob into `sink`, hashing it; error unless its sha256 is the descriptor's.
fn stream_blob(s: &Session, d: &OciDescriptor, sink: &mut dyn Write) -> Result<u64> {
    let registry = s.access();
    let (alg, want) = d
        .digest
        .split_once(':')
        .ok_or_else(|| anyhow!("malformed digest {}", d.digest))?;
    if alg != "sha256" || want.len() != 64 {
        bail!("unsupported digest {}", d.digest);
    }
    s.rt.block_on(async {
        let mut stream = s
            .client
            .pull_blob_stream(&s.reference, d)
            .await
            .map_err(|e| oci_err(e, &format!("fetching {}", d.digest), &registry))?;
        let mut h = Sha256::new();
        let mut n = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.with_context(|| format!("downloading {}", d.digest))?;
            n += chunk.len() as u64;
            if n > d.size.max(0) as u64 {
                bail!("blob {} is larger than its descriptor says", d.digest);
            }
            h.update(&chunk);
            sink.write_all(&chunk).with_context(|| {
                format!(
                    "blob {} is damaged or does not match the tree; nothing was written",
                    d.digest
                )
            })?;
        }
        let got: String = h.finalize().iter().map(|x| format!("{x:02x}")).collect();
        if got != want {
            bail!(
                "blob {} is damaged: its content hashes to sha256:{got}; nothing was written",
                d.digest
            );
        }
        if n != d.size as u64 {
            bail!("blob {} is truncated", d.digest);
        }
        Ok(n)
    })
}

/// Writes one layer's decompressed bytes into the files placed in it, hashing each.
struct Splitter<'a> {
    /// (offset, file index), sorted by offset then size, one per distinct content (identical
    /// files are copied afterwards).
    ranges: Vec<(u64, usize)>,
    tree: &'a Tree,
    root: &'a Path,
    next: usize,
    pos: u64,
    cur: Option<(File, blake3::Hasher, u64)>,
    limit: u64,
}

impl Splitter<'_> {
    fn finish_current(&mut self) -> io::Result<()> {
        if let Some((mut f, h, _)) = self.cur.take() {
            f.flush()?;
            let i = self.ranges[self.next - 1].1;
            let want = &self.tree.index.files[i].blake3;
            if h.finalize().to_hex().as_str() != want {
                return Err(io::Error::other(format!(
                    "{}: content differs from its BLAKE3 in the tree",
                    self.tree.index.files[i].path
                )));
            }
        }
        Ok(())
    }

    fn open_next(&mut self) -> io::Result<()> {
        while self.cur.is_none() && self.next < self.ranges.len() {
            let (off, i) = self.ranges[self.next];
            if off != self.pos {
                return Err(io::Error::other("layer ranges are not contiguous"));
            }
            let f = &self.tree.index.files[i];
            let file = fsutil::create_new(&self.root.join(&f.path)).map_err(io::Error::other)?;
            self.next += 1;
            self.cur = Some((file, blake3::Hasher::new(), f.size));
            if f.size == 0 {
                self.finish_current()?;
            }
        }
        Ok(())
    }
}

impl Write for Splitter<'_> {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let n = buf.len();
        if self.pos + n as u64 > self.limit {
            return Err(io::Error::other(
                "layer holds more bytes than the tree says",
            ));
        }
        while !buf.is_empty() {
            self.open_next()?;
            let Some((f, h, left)) = self.cur.as_mut() else {
                return Err(io::Error::other("layer bytes no file claims"));
            };
            let k = (*left).min(buf.len() as u64) as usize;
            f.write_all(&buf[..k])?;
            h.update(&buf[..k]);
            *left -= k as u64;
            self.pos += k as u64;
            buf = &buf[k..];
            if *left == 0 {
                self.finish_current()?;
            }
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// What a pull wrote.
#[derive(Debug)]
pub struct PullReport {
    /// The folder created (`dest/<root>`).
    pub output: PathBuf,
    /// Manifest digest.
    pub digest: String,
    /// Files and bytes.
    pub files: usize,
    /// Sum of the file sizes.
    pub file_bytes: u64,
    /// Compressed bytes downloaded.
    pub bytes_downloaded: u64,
}

/// Pull the artifact into `dest/<root>`: everything is written into a private temp folder in
/// `dest`, every blob's sha256 and every file's BLAKE3 checked, and only then is `<root>`
/// renamed into place (never replacing anything). On error nothing is left in `dest`.
pub fn pull(s: &Session, dest: &Path, sync: bool, progress: &dyn Progress) -> Result<PullReport> {
    let (m, digest) = fetch_manifest(s)?;
    if m.config.size < 0 || m.config.size as u64 > layout::MAX_TREE_BYTES {
        bail!(
            "the tree blob is {} bytes; at most {} are accepted",
            m.config.size,
            layout::MAX_TREE_BYTES
        );
    }
    let mut tree_bytes = Vec::new();
    stream_blob(s, &m.config, &mut tree_bytes)?;
    let tree: Tree = serde_json::from_slice(&tree_bytes).context("parsing the tree")?;
    layout::validate_tree(&tree, m.layers.len())?;
    for l in &m.layers {
        if l.media_type != layout::LAYER_MEDIA_TYPE {
            bail!(
                "layer {} has media type {}, not {}",
                l.digest,
                l.media_type,
                layout::LAYER_MEDIA_TYPE
            );
        }
    }
    let root = tree.index.root.clone();
    let final_path = dest.join(&root);
    if final_path.symlink_metadata().is_ok() {
        bail!(
            "{} already exists; pull never overwrites",
            final_path.display()
        );
    }
    let tmp = tempfile::Builder::new()
        .prefix(".hrr-pull-")
        .tempdir_in(dest)
        .with_context(|| format!("creating a temp folder in {}", dest.display()))?;
    let troot = tmp.path().join(&root);
    fsutil::create_private_dir(&troot)?;
    for d in &tree.index.dirs {
        fsutil::create_private_dir(&troot.join(d))?;
    }
    // Files per layer, by (offset, size, hash): the first of identical ones is written from the
    // stream, the others copied from it afterwards. An empty file sorts before a non-empty one at
    // the same offset.
    type Key<'t> = (u64, u64, &'t str);
    let mut per_layer: Vec<BTreeMap<Key, Vec<usize>>> = vec![BTreeMap::new(); m.layers.len()];
    for (i, Place { layer, offset }) in tree.places.iter().enumerate() {
        let f = &tree.index.files[i];
        per_layer[*layer]
            .entry((*offset, f.size, f.blake3.as_str()))
            .or_default()
            .push(i);
    }
    let total: u64 = m.layers.iter().map(|l| l.size.max(0) as u64).sum();
    progress.start("downloading", total);
    let mut downloaded = tree_bytes.len() as u64;
    for (n, l) in m.layers.iter().enumerate() {
        let ranges: Vec<(u64, usize)> = per_layer[n].iter().map(|(k, v)| (k.0, v[0])).collect();
        let splitter = Splitter {
            ranges,
            tree: &tree,
            root: &troot,
            next: 0,
            pos: 0,
            cur: None,
            limit: tree.layer_sizes[n],
        };
        let mut dec = zstd::stream::write::Decoder::new(splitter)?;
        dec.window_log_max(pack::WINDOW_LOG_MAX)?;
        downloaded += stream_blob(s, l, &mut dec)?;
        dec.flush()?;
        let mut sp = dec.into_inner();
        sp.open_next()?;
        if sp.pos != tree.layer_sizes[n] || sp.next != sp.ranges.len() || sp.cur.is_some() {
            bail!("layer {} ends early (its files are incomplete)", l.digest);
        }
        for same in per_layer[n].values() {
            for &i in &same[1..] {
                let from = troot.join(&tree.index.files[same[0]].path);
                let to = troot.join(&tree.index.files[i].path);
                let mut src = fsutil::open_read(&from)?;
                let mut dst = fsutil::create_new(&to)?;
                io::copy(&mut src, &mut dst)?;
            }
        }
        progress.advance(l.size.max(0) as u64);
    }
    progress.finish();
    if sync {
        fsutil::sync_filesystem(&troot)?;
    }
    fsutil::rename_noreplace(&troot, &final_path)?;
    Ok(PullReport {
        output: final_path,
        digest,
        files: tree.index.files.len(),
        file_bytes: tree.index.total_bytes,
        bytes_downloaded: downloaded,
    })
}

/// A listing row: path, size, BLAKE3.
pub type FileRow = (String, u64, Option<String>);

/// What `list REF` shows: source, kind, root, processes, files, compressed size.
pub type RemoteListing = (
    &'static str,
    pack::PackKind,
    String,
    Vec<pack::ProcessListing>,
    Vec<FileRow>,
    Option<u64>,
);

/// `hrr-pack list REF`: kind, root and processes from the manifest's annotations (no blob is
/// fetched); with `files`, the tree (the config blob, small) for the file list. The last value
/// is the artifact's compressed size.
pub fn list_remote(
    reference: &str,
    connect: &super::ConnectArgs,
    files: bool,
) -> Result<RemoteListing> {
    let s = Session::connect(connect, reference, oci_client::RegistryOperation::Pull)?;
    let (m, _) = fetch_manifest(&s)?;
    let a = m.annotations.clone().unwrap_or_default();
    let processes = layout::processes_from(&a)?;
    let kind = match a.get(ann::KIND).map(String::as_str) {
        Some("process") => pack::PackKind::Process,
        _ => pack::PackKind::Root,
    };
    let root = a.get(ann::ROOT).cloned().unwrap_or_default();
    let mut rows = Vec::new();
    if files {
        if m.config.size < 0 || m.config.size as u64 > layout::MAX_TREE_BYTES {
            bail!("the tree blob is too large");
        }
        let mut buf = Vec::new();
        stream_blob(&s, &m.config, &mut buf)?;
        let tree: Tree = serde_json::from_slice(&buf).context("parsing the tree")?;
        rows = tree
            .index
            .files
            .into_iter()
            .map(|f| (f.path, f.size, Some(f.blake3)))
            .collect();
    }
    let size =
        m.layers.iter().map(|l| l.size.max(0) as u64).sum::<u64>() + m.config.size.max(0) as u64;
    Ok(("registry", kind, root, processes, rows, Some(size)))
}
