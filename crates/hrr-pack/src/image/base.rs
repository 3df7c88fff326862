//! Reading a base image from what a user can hand over without a registry: an OCI image layout
//! folder, an `oci-archive` tar of one, a `docker save` tar (any Docker version), or a folder
//! holding an unpacked `docker save`.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Component, Path, PathBuf};

use oci_spec::image::{ImageIndex, ImageManifest, MediaType};

use super::{sha256_file, ImageError, Result};

/// One layer of the base, as a file to copy verbatim.
pub struct BaseLayer {
    /// Where its bytes are.
    pub path: PathBuf,
    /// OCI media type (Docker types are converted: the bytes are the same).
    pub media_type: MediaType,
    /// `sha256:<hex>` of the bytes.
    pub digest: String,
    /// Size in bytes.
    pub size: u64,
}

/// A base image, ready to have a layer appended.
pub struct Base {
    /// Its configuration, as JSON text (edited as `serde_json::Value` to keep unknown keys).
    pub config: Vec<u8>,
    /// Layers in stack order.
    pub layers: Vec<BaseLayer>,
    /// `sha256:<hex>` of the base manifest, when the base came with one.
    pub manifest_digest: Option<String>,
    /// The manifest's `org.opencontainers.image.base.digest` (the base of this base), if any.
    pub base_digest: Option<String>,
    /// An unpacked tar, removed when the base is dropped.
    pub _unpacked: Option<tempfile::TempDir>,
}

fn bad(path: &Path, reason: impl Into<String>) -> ImageError {
    ImageError::BadBase {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> ImageError + '_ {
    move |source| ImageError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A path named inside the base, kept inside it (links may not lead out).
fn inside(root: &Path, rel: &str) -> Result<PathBuf> {
    let p = Path::new(rel);
    if p.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(bad(root, format!("`{rel}` is not a plain relative path")));
    }
    let full = root.join(p);
    let real = full.canonicalize().map_err(io(&full))?;
    let real_root = root.canonicalize().map_err(io(root))?;
    if !real.starts_with(&real_root) {
        return Err(bad(root, format!("`{rel}` leads outside the base")));
    }
    Ok(real)
}

fn blob_path(root: &Path, digest: &str) -> Result<PathBuf> {
    let (alg, hex) = digest
        .split_once(':')
        .ok_or_else(|| bad(root, format!("`{digest}` is not a digest")))?;
    if !alg.bytes().all(|b| b.is_ascii_alphanumeric())
        || !hex.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(bad(root, format!("`{digest}` is not a digest")));
    }
    inside(root, &format!("blobs/{alg}/{hex}"))
}

/// Open the base at `path`; a tar is unpacked into a temp folder inside `scratch`.
pub fn open(path: &Path, scratch: &Path) -> Result<Base> {
    let meta = std::fs::metadata(path).map_err(io(path))?;
    if meta.is_dir() {
        return open_dir(path, None);
    }
    let tmp = tempfile::Builder::new()
        .prefix(".hrr-image-base-")
        .tempdir_in(scratch)
        .map_err(io(scratch))?;
    let f = File::open(path).map_err(io(path))?;
    let mut ar = tar::Archive::new(BufReader::new(f));
    ar.set_preserve_permissions(false);
    ar.set_preserve_mtime(false);
    ar.set_unpack_xattrs(false);
    ar.unpack(tmp.path())
        .map_err(|e| bad(path, format!("not a readable tar: {e}")))?;
    let root = tmp.path().to_path_buf();
    let mut base = open_dir(&root, Some(path))?;
    base._unpacked = Some(tmp);
    Ok(base)
}

fn open_dir(root: &Path, shown: Option<&Path>) -> Result<Base> {
    let shown = shown.unwrap_or(root);
    if root.join("index.json").is_file() {
        return open_layout(root, shown);
    }
    if root.join("manifest.json").is_file() {
        return open_docker(root, shown);
    }
    Err(bad(
        shown,
        "neither an OCI image layout (index.json) nor a `docker save` archive (manifest.json)",
    ))
}

/// OCI media type for a layer media type of either world.
fn oci_layer_type(mt: &MediaType, shown: &Path) -> Result<MediaType> {
    Ok(match mt.to_string().as_str() {
        "application/vnd.oci.image.layer.v1.tar"
        | "application/vnd.docker.image.rootfs.diff.tar" => MediaType::ImageLayer,
        "application/vnd.oci.image.layer.v1.tar+gzip"
        | "application/vnd.docker.image.rootfs.diff.tar.gzip" => MediaType::ImageLayerGzip,
        "application/vnd.oci.image.layer.v1.tar+zstd"
        | "application/vnd.docker.image.rootfs.diff.tar.zstd" => MediaType::ImageLayerZstd,
        "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"
        | "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip" => {
            return Err(bad(
                shown,
                "foreign (non-distributable) layers are not supported",
            ))
        }
        other => return Err(bad(shown, format!("unknown layer media type `{other}`"))),
    })
}

fn open_layout(root: &Path, shown: &Path) -> Result<Base> {
    let index_path = root.join("index.json");
    let index =
        ImageIndex::from_file(&index_path).map_err(|e| bad(shown, format!("index.json: {e}")))?;
    let mut candidates: Vec<_> = index.manifests().clone();
    let mut depth = 0;
    let manifest_desc = loop {
        depth += 1;
        if depth > 8 {
            return Err(bad(shown, "nested indexes go too deep"));
        }
        let fits = |d: &oci_spec::image::Descriptor| {
            d.platform().as_ref().is_none_or(|p| {
                p.os().to_string() == "linux" && p.architecture().to_string() == "amd64"
            })
        };
        let Some(d) = candidates.iter().find(|d| fits(d)).cloned() else {
            return Err(bad(shown, "no linux/amd64 image in the index"));
        };
        let mt = d.media_type().to_string();
        if mt == MediaType::ImageIndex.to_string()
            || mt == "application/vnd.docker.distribution.manifest.list.v2+json"
        {
            let nested = ImageIndex::from_file(blob_path(root, d.digest().as_ref())?)
                .map_err(|e| bad(shown, format!("nested index {}: {e}", d.digest())))?;
            candidates = nested.manifests().clone();
            continue;
        }
        break d;
    };
    let digest = manifest_desc.digest().to_string();
    let manifest = ImageManifest::from_file(blob_path(root, &digest)?)
        .map_err(|e| bad(shown, format!("manifest {digest}: {e}")))?;
    let config_path = blob_path(root, manifest.config().digest().as_ref())?;
    let config = std::fs::read(&config_path).map_err(io(&config_path))?;
    let mut layers = Vec::new();
    for l in manifest.layers() {
        let path = blob_path(root, l.digest().as_ref())?;
        let size = std::fs::metadata(&path).map_err(io(&path))?.len();
        if size != l.size() {
            return Err(bad(
                shown,
                format!(
                    "layer {} is {size} bytes, its manifest says {}",
                    l.digest(),
                    l.size()
                ),
            ));
        }
        layers.push(BaseLayer {
            path,
            media_type: oci_layer_type(l.media_type(), shown)?,
            digest: l.digest().to_string(),
            size,
        });
    }
    let base_digest = manifest
        .annotations()
        .as_ref()
        .and_then(|a| a.get("org.opencontainers.image.base.digest"))
        .cloned();
    Ok(Base {
        config,
        layers,
        manifest_digest: Some(digest),
        base_digest,
        _unpacked: None,
    })
}

/// Media type of a layer file from its first bytes.
fn sniff(path: &Path) -> Result<MediaType> {
    let mut magic = [0u8; 4];
    let mut f = File::open(path).map_err(io(path))?;
    let n = f.read(&mut magic).map_err(io(path))?;
    Ok(match &magic[..n] {
        [0x1f, 0x8b, ..] => MediaType::ImageLayerGzip,
        [0x28, 0xb5, 0x2f, 0xfd] => MediaType::ImageLayerZstd,
        _ => MediaType::ImageLayer,
    })
}

fn open_docker(root: &Path, shown: &Path) -> Result<Base> {
    #[derive(serde::Deserialize)]
    struct Entry {
        #[serde(rename = "Config")]
        config: String,
        #[serde(rename = "Layers")]
        layers: Vec<String>,
    }
    let mpath = root.join("manifest.json");
    let text = std::fs::read(&mpath).map_err(io(&mpath))?;
    let entries: Vec<Entry> =
        serde_json::from_slice(&text).map_err(|e| bad(shown, format!("manifest.json: {e}")))?;
    let entry = match entries.as_slice() {
        [one] => one,
        [] => return Err(bad(shown, "manifest.json lists no image")),
        _ => {
            return Err(bad(
                shown,
                "manifest.json lists several images; save only one",
            ))
        }
    };
    let cpath = inside(root, &entry.config)?;
    let config = std::fs::read(&cpath).map_err(io(&cpath))?;
    let mut layers = Vec::new();
    for rel in &entry.layers {
        let path = inside(root, rel)?;
        let (digest, size) = sha256_file(&path)?;
        layers.push(BaseLayer {
            media_type: sniff(&path)?,
            path,
            digest,
            size,
        });
    }
    Ok(Base {
        config,
        layers,
        manifest_digest: None,
        base_digest: None,
        _unpacked: None,
    })
}
