//! The OCI artifact layout of an archive (FORMAT.md §11): which file goes into which layer, the
//! tree (config blob) that maps layers back to files, and the manifest annotations.
//!
//! Content-addressed objects (`blobs/`, `code_objects/`) are sorted by their BLAKE3 and cut into
//! layers by content: an object of at least [`OWN_LAYER_MIN`] bytes gets a layer of its own,
//! smaller ones are grouped, a group ending after an object whose hash's last nibble is a
//! multiple of 4 (about 4 per group) or at [`GROUP_MAX`] bytes. A layer's bytes therefore depend only on the objects
//! in it, so a second capture sharing most objects re-uses most layers, which the registry
//! already holds. Everything else (manifests, events.bin, markers) goes into one `meta` layer.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use hrr_archive::blobs::{BLOBS_DIR, CODE_OBJECTS_DIR};
use hrr_archive::pack::{PackIndex, ProcessListing};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// `artifactType` of the manifest.
pub const ARTIFACT_TYPE: &str = "application/vnd.hrr.archive.v1";
/// Media type of the config blob (the tree).
pub const TREE_MEDIA_TYPE: &str = "application/vnd.hrr.archive.tree.v1+json";
/// Media type of a layer: one zstd frame holding its files' contents back to back.
pub const LAYER_MEDIA_TYPE: &str = "application/vnd.hrr.archive.files.v1+zstd";
/// OCI image manifest media type.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// Schema of the tree.
pub const TREE_SCHEMA: &str = "hrr.oci-tree/1";
/// Objects this large get a layer of their own.
pub const OWN_LAYER_MIN: u64 = 256 << 10;
/// Largest group of small objects (uncompressed).
pub const GROUP_MAX: u64 = 1 << 20;
/// Largest tree (config blob) a reader accepts.
pub const MAX_TREE_BYTES: u64 = 64 << 20;
/// zstd level of the layers (fixed: the same content gives the same layer).
pub const LEVEL: i32 = 3;

/// Annotation keys of the manifest.
pub mod ann {
    /// Name of the archive's top folder.
    pub const ROOT: &str = "dev.hrr.archive.root";
    /// `root` or `process`.
    pub const KIND: &str = "dev.hrr.archive.kind";
    /// JSON array of the process listings (pid, complete, event_count, …).
    pub const PROCESSES: &str = "dev.hrr.archive.processes";
    /// Total events.
    pub const EVENTS: &str = "dev.hrr.archive.events";
    /// Number of files.
    pub const FILES: &str = "dev.hrr.archive.files";
    /// Sum of the file sizes.
    pub const TOTAL_BYTES: &str = "dev.hrr.archive.total-bytes";
    /// events.bin format version.
    pub const FORMAT_VERSION: &str = "dev.hrr.archive.format-version";
    /// OCI title (the root name).
    pub const TITLE: &str = "org.opencontainers.image.title";
    /// Layer role: `objects` or `meta`.
    pub const ROLE: &str = "dev.hrr.layer.role";
}

/// Where a file's bytes are: layer number (into the manifest's `layers`) and offset in that
/// layer's decompressed bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    /// Index into the manifest's layers.
    pub layer: usize,
    /// Offset in the layer's decompressed content.
    pub offset: u64,
}

/// The config blob: the pack index (every folder and file with size and BLAKE3) and, parallel
/// to `index.files`, where each file's bytes are.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Tree {
    /// [`TREE_SCHEMA`].
    pub schema: String,
    /// The archive's pack index (FORMAT.md §9).
    pub index: PackIndex,
    /// One per `index.files` entry.
    pub places: Vec<Place>,
    /// Decompressed length of each layer.
    pub layer_sizes: Vec<u64>,
}

/// One layer to build: the files (indices into `index.files`) stored in it, in order.
#[derive(Debug, Clone)]
pub struct LayerPlan {
    /// `objects` or `meta`.
    pub role: &'static str,
    /// File indices, in content order.
    pub files: Vec<usize>,
}

/// A built layer: compressed into a temp file.
#[derive(Debug)]
pub struct BuiltLayer {
    /// `sha256:…` of the compressed bytes.
    pub digest: String,
    /// Compressed size.
    pub size: u64,
    /// The temp file.
    pub path: PathBuf,
    /// `objects` or `meta`.
    pub role: &'static str,
}

fn is_object(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    parts
        .iter()
        .any(|p| *p == BLOBS_DIR || *p == CODE_OBJECTS_DIR)
}

/// Cut the files of `index` into layers, and place every file. Identical objects (same BLAKE3
/// and size) are stored once and placed at the same bytes.
pub fn plan_layers(index: &PackIndex) -> (Vec<LayerPlan>, Vec<Place>, Vec<u64>) {
    let mut objects: BTreeMap<(&str, u64), Vec<usize>> = BTreeMap::new();
    let mut meta = Vec::new();
    for (i, f) in index.files.iter().enumerate() {
        if is_object(&f.path) {
            objects
                .entry((f.blake3.as_str(), f.size))
                .or_default()
                .push(i);
        } else {
            meta.push(i);
        }
    }
    let mut plan = Planner {
        index,
        layers: Vec::new(),
        places: vec![
            Place {
                layer: 0,
                offset: 0
            };
            index.files.len()
        ],
        sizes: Vec::new(),
    };
    let mut group: Vec<Vec<usize>> = Vec::new();
    let mut group_bytes = 0u64;
    for ((hash, size), same) in objects {
        if size >= OWN_LAYER_MIN {
            plan.layer(vec![same], "objects");
            continue;
        }
        group.push(same);
        group_bytes += size;
        if hash.ends_with(['0', '4', '8', 'c']) || group_bytes >= GROUP_MAX {
            plan.layer(std::mem::take(&mut group), "objects");
            group_bytes = 0;
        }
    }
    plan.layer(group, "objects");
    plan.layer(meta.into_iter().map(|i| vec![i]).collect(), "meta");
    (plan.layers, plan.places, plan.sizes)
}

/// What [`plan_layers`] has planned so far: the layers, where each file is placed, each layer's
/// size.
struct Planner<'a> {
    index: &'a PackIndex,
    layers: Vec<LayerPlan>,
    places: Vec<Place>,
    sizes: Vec<u64>,
}

impl Planner<'_> {
    /// One more layer of `group`, in order (nothing when it is empty); each entry is the files
    /// of one object, stored once.
    fn layer(&mut self, group: Vec<Vec<usize>>, role: &'static str) {
        if group.is_empty() {
            return;
        }
        let n = self.layers.len();
        let mut off = 0u64;
        let mut files = Vec::new();
        for same in group {
            for &i in &same {
                self.places[i] = Place {
                    layer: n,
                    offset: off,
                };
            }
            files.push(same[0]);
            off += self.index.files[same[0]].size;
        }
        self.sizes.push(off);
        self.layers.push(LayerPlan { role, files });
    }
}

/// Counts and hashes what passes through.
struct HashingWriter<W> {
    inner: W,
    hash: Sha256,
    n: u64,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// `sha256:<hex>` of bytes.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex(&Sha256::digest(bytes)))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Compress one layer's files (read from `src`) into a file in `tmp`, checking each file's
/// size against the index as it is read.
pub fn build_layer(
    src: &Path,
    index: &PackIndex,
    plan: &LayerPlan,
    tmp: &Path,
    n: usize,
    progress: &dyn hrr_archive::progress::Progress,
) -> Result<BuiltLayer> {
    let path = tmp.join(format!("layer-{n}"));
    let out = std::fs::File::create(&path).with_context(|| format!("{}", path.display()))?;
    let hw = HashingWriter {
        inner: io::BufWriter::new(out),
        hash: Sha256::new(),
        n: 0,
    };
    let mut enc = zstd::stream::write::Encoder::new(hw, LEVEL)?;
    enc.include_checksum(true)?;
    for &i in &plan.files {
        let f = &index.files[i];
        let p = src.join(&f.path);
        let file = hrr_archive::fsutil::open_read(&p)?;
        let copied = io::copy(&mut io::Read::take(file, f.size + 1), &mut enc)
            .with_context(|| format!("reading {}", p.display()))?;
        if copied != f.size {
            bail!(
                "{} changed while it was pushed (size {copied}, expected {})",
                p.display(),
                f.size
            );
        }
        progress.advance(f.size);
    }
    let mut hw = enc.finish()?;
    hw.flush()?;
    Ok(BuiltLayer {
        digest: format!("sha256:{}", hex(&hw.hash.finalize())),
        size: hw.n,
        path,
        role: plan.role,
    })
}

/// The manifest's annotations: enough for `hrr-pack list REF` without fetching any blob.
pub fn annotations(index: &PackIndex) -> BTreeMap<String, String> {
    let mut a = BTreeMap::new();
    let kind = serde_json::to_value(index.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default();
    a.insert(ann::TITLE.into(), index.root.clone());
    a.insert(ann::ROOT.into(), index.root.clone());
    a.insert(ann::KIND.into(), kind);
    a.insert(
        ann::PROCESSES.into(),
        serde_json::to_string(&index.processes).unwrap_or_default(),
    );
    a.insert(
        ann::EVENTS.into(),
        index
            .processes
            .iter()
            .map(|p| p.event_count)
            .sum::<u64>()
            .to_string(),
    );
    a.insert(ann::FILES.into(), index.files.len().to_string());
    a.insert(ann::TOTAL_BYTES.into(), index.total_bytes.to_string());
    a.insert(ann::FORMAT_VERSION.into(), index.format_version.to_string());
    a
}

/// Parse the processes annotation.
pub fn processes_from(ann: &BTreeMap<String, String>) -> Result<Vec<ProcessListing>> {
    let s = ann
        .get(ann::PROCESSES)
        .context("the manifest has no process list annotation (not an hrr archive?)")?;
    serde_json::from_str(s).context("parsing the process list annotation")
}

/// Check a pulled tree before anything is written: schema, plain relative paths, no
/// duplicates, every place inside its layer, layer sizes agreeing with the files.
pub fn validate_tree(tree: &Tree, layers: usize) -> Result<()> {
    if tree.schema != TREE_SCHEMA {
        bail!("tree schema `{}` is not {TREE_SCHEMA}", tree.schema);
    }
    let idx = &tree.index;
    let plain = |p: &str| {
        !p.is_empty()
            && !p.starts_with('/')
            && p.split('/')
                .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(['\\', '\0']))
    };
    if !plain(&idx.root) || idx.root.contains('/') {
        bail!("tree: root `{}` is not a plain folder name", idx.root);
    }
    if tree.places.len() != idx.files.len() || tree.layer_sizes.len() != layers {
        bail!("tree: places or layer sizes do not match the files and layers");
    }
    let mut seen = std::collections::HashSet::new();
    for d in &idx.dirs {
        if !plain(d) || !seen.insert(d.as_str()) {
            bail!("tree: folder `{d}` is not a plain relative path or is listed twice");
        }
    }
    let mut total = 0u64;
    for (f, p) in idx.files.iter().zip(&tree.places) {
        if !plain(&f.path) || !seen.insert(f.path.as_str()) {
            bail!(
                "tree: file `{}` is not a plain relative path or is listed twice",
                f.path
            );
        }
        if let Some((parent, _)) = f.path.rsplit_once('/') {
            if !idx.dirs.iter().any(|d| d == parent) {
                bail!(
                    "tree: file `{}` is in a folder the tree does not list",
                    f.path
                );
            }
        }
        if f.blake3.len() != 64 || !f.blake3.bytes().all(|b| b.is_ascii_hexdigit()) {
            bail!("tree: `{}`: malformed hash", f.path);
        }
        let end = p.offset.checked_add(f.size);
        if p.layer >= layers || end.is_none_or(|e| e > tree.layer_sizes[p.layer]) {
            bail!("tree: `{}` lies outside its layer", f.path);
        }
        total = total.saturating_add(f.size);
    }
    for d in &idx.dirs {
        if let Some((parent, _)) = d.rsplit_once('/') {
            if !idx.dirs.iter().any(|x| x == parent) {
                bail!("tree: folder `{d}` is in a folder the tree does not list");
            }
        }
    }
    if total != idx.total_bytes {
        bail!("tree: total_bytes differs from the sum of the file sizes");
    }
    Ok(())
}
