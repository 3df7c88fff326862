//! `hrr-pack` list, pack, unpack, verify, scan, scrub, push, pull, image.

use serde::{Deserialize, Serialize};

/// One process of `hrr-pack list --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListProcessJson {
    /// Folder below the root (`pid-1204`), empty when the archive is that folder.
    pub dir: String,
    /// Process id.
    pub pid: u32,
    /// The manifest says the capture ended cleanly.
    pub complete: bool,
    /// An `active` marker is present.
    pub active_marker: bool,
    /// Scrubbed by `hrr-pack scrub`.
    pub scrubbed: bool,
    /// Events (see the module docs).
    pub events: u64,
    /// Size of events.bin.
    pub events_bin_bytes: u64,
    /// Blob files.
    pub blobs: u64,
    /// Their total size.
    pub blob_bytes: u64,
    /// Code objects.
    pub code_objects: u64,
    /// Their total size.
    pub code_object_bytes: u64,
    /// Why the manifest could not be read, or null.
    pub manifest_error: Option<String>,
}

/// Totals of `hrr-pack list --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListTotalsJson {
    /// Processes.
    pub processes: u64,
    /// Events of all processes.
    pub events: u64,
    /// Blob files.
    pub blobs: u64,
    /// Their size.
    pub blob_bytes: u64,
    /// Code objects.
    pub code_objects: u64,
    /// Their size.
    pub code_object_bytes: u64,
    /// Size of every events.bin.
    pub events_bin_bytes: u64,
}

/// One file of `hrr-pack list --files --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListFileJson {
    /// Path below the root folder.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// BLAKE3 (64 hex) for a pack or registry artifact, null for a folder.
    pub blake3: Option<String>,
}

/// `hrr-pack list --json` (`hrr.list/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListJson {
    /// `hrr.list/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// The path or reference as given.
    pub path: String,
    /// `archive`, `pack` or `registry`.
    pub source: String,
    /// `root` or `process`.
    pub kind: String,
    /// Name of the top folder.
    pub root: String,
    /// One entry per process.
    pub processes: Vec<ListProcessJson>,
    /// Sums.
    pub totals: ListTotalsJson,
    /// Size of the pack (null for a folder).
    pub packed_bytes: Option<u64>,
    /// Where the numbers come from: `archive` (read from the files) or `index (unverified)`
    /// (a pack's or registry manifest's claims, not checked against the contents).
    pub summary: String,
    /// With `--files`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<ListFileJson>>,
}

/// `hrr-pack pack --json` (`hrr.pack/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackJson {
    /// `hrr.pack/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// The archive as given.
    pub archive: String,
    /// The pack written (`-` for standard output).
    pub output: String,
    /// Name of the top folder in the pack.
    pub root: String,
    /// `root` or `process`.
    pub kind: String,
    /// Files in the pack (every file of the archive: manifests, events.bin, blobs, code
    /// objects, ...; the index not counted), as `list --files` and `verify` count them.
    pub files: u64,
    /// Their bytes.
    pub bytes_in: u64,
    /// Size of the pack.
    pub bytes_out: u64,
    /// zstd level.
    pub level: i32,
    /// Compression threads used.
    pub threads: u32,
    /// Packed with `--force` although a capture was running or left writer state.
    pub forced: bool,
    /// Writer temp files left out.
    pub skipped: Vec<String>,
    /// Wall time.
    pub seconds: f64,
}

/// `hrr-pack unpack --json` (`hrr.unpack/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UnpackJson {
    /// `hrr.unpack/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// The pack as given (`-`: standard input).
    pub pack: String,
    /// The folder created.
    pub output: String,
    /// Files written, each verified (as `pack` counts them).
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Wall time.
    pub seconds: f64,
}

/// A finding of `verify` (`bad`, `warnings`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyFindingJson {
    /// The file, below the archive.
    pub path: String,
    /// What is wrong.
    pub problem: String,
}

/// `hrr-pack verify --json` (`hrr.verify/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerifyJson {
    /// `hrr.verify/1`.
    pub schema: String,
    /// No bad file (warnings allowed).
    pub ok: bool,
    /// The pack or folder as given.
    pub path: String,
    /// `pack` or `archive`.
    pub source: String,
    /// Files whose content was hashed: every file of the archive (as `pack` and `list --files`
    /// count them), for a pack and for a folder alike.
    pub files_checked: u64,
    /// Their bytes.
    pub bytes_checked: u64,
    /// Of those, blobs and code objects checked against their content id.
    pub objects_checked: u64,
    /// The bad files' paths.
    pub bad_files: Vec<String>,
    /// Damage or inconsistency, per file.
    pub bad: Vec<VerifyFindingJson>,
    /// Worth knowing, not damage (an incomplete capture, a lagging root index).
    pub warnings: Vec<VerifyFindingJson>,
    /// Wall time.
    pub seconds: f64,
}

/// One finding of `scan` (never the secret itself).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanFindingJson {
    /// The file, below the archive (or the file given).
    pub file: String,
    /// The object id when the file is a blob or code object, else null.
    pub object: Option<String>,
    /// Byte offset in the file.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// The rule that matched.
    pub rule: String,
    /// `ascii`, `utf16le` or `base64` (and its UTF-16 form).
    pub encoding: String,
    /// Keyed fingerprint, `fp:<32 hex>`.
    pub fingerprint: String,
    /// A redacted preview (`GITHUB_TOKEN ghp_********… (40 bytes)`): never the secret.
    pub preview: String,
}

/// `hrr-pack scan --json` (`hrr.scan/1`). Secrets found exit 3 with `ok` true (the scan ran).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScanJson {
    /// `hrr.scan/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// The path as given.
    pub path: String,
    /// `archive`, `pack` or `file`.
    pub source: String,
    /// Secrets found (not counting allowed ones).
    pub found: u64,
    /// Files with at least one.
    pub files_with_findings: u64,
    /// Files scanned.
    pub files_scanned: u64,
    /// Their bytes.
    pub bytes_scanned: u64,
    /// Left out by `--allow`/`--allow-file`.
    pub allowed: u64,
    /// Id of the fingerprint key.
    pub key_id: String,
    /// Wall time.
    pub seconds: f64,
    /// The findings.
    pub findings: Vec<ScanFindingJson>,
}

/// A blob or code object `scrub` rewrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrubObjectJson {
    /// Its old path.
    pub path: String,
    /// Its new path (new content id).
    pub new_path: String,
    /// Ranges redacted.
    pub ranges: u64,
}

/// An events.bin `scrub` rewrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrubEventsJson {
    /// Its path.
    pub path: String,
    /// References repointed at new object ids.
    pub references: u64,
    /// Ranges redacted in it.
    pub ranges: u64,
}

/// `hrr-pack scrub --json` (`hrr.scrub/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrubJson {
    /// `hrr.scrub/1`.
    pub schema: String,
    /// Every secret found was redacted (`not_redacted` empty; exit 0).
    pub ok: bool,
    /// The archive scrubbed (the output folder with `-o`).
    pub archive: String,
    /// Anything was written.
    pub changed: bool,
    /// Secrets redacted.
    pub redacted: u64,
    /// Left as they are by `--allow`.
    pub allowed: u64,
    /// Files scanned.
    pub files_scanned: u64,
    /// Their bytes.
    pub bytes_scanned: u64,
    /// Objects rewritten.
    pub objects: Vec<ScrubObjectJson>,
    /// events.bin files rewritten.
    pub events: Vec<ScrubEventsJson>,
    /// Findings that could not be redacted (exit 1).
    pub not_redacted: Vec<String>,
    /// What this scrub finished or rolled back first of an interrupted earlier one.
    pub recovered: Vec<String>,
    /// Id of the fingerprint key.
    pub key_id: String,
    /// Wall time.
    pub seconds: f64,
}

// push, pull, image

/// `hrr-pack push --json` (`hrr.push/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushJson {
    /// `hrr.push/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// The reference as given (`registry/repo:tag`).
    pub reference: String,
    /// `sha256:` of the artifact's manifest.
    pub digest: String,
    /// `https` or `http`.
    pub scheme: String,
    /// Files of the archive (as `pack` counts them).
    pub files: u64,
    /// Their bytes.
    pub file_bytes: u64,
    /// Registry blobs of the artifact (layers plus the tree).
    pub blobs: u64,
    /// Of those, uploaded (the rest the registry had).
    pub blobs_uploaded: u64,
    /// Compressed bytes of all blobs.
    pub bytes_total: u64,
    /// Compressed bytes uploaded.
    pub bytes_uploaded: u64,
    /// `bytes_uploaded / bytes_total`.
    pub uploaded_fraction: f64,
    /// Wall time.
    pub seconds: f64,
}

/// `hrr-pack pull --json` (`hrr.pull/1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PullJson {
    /// `hrr.pull/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// The reference as given.
    pub reference: String,
    /// `sha256:` of the manifest pulled.
    pub digest: String,
    /// The folder created, or the pack written (`-o FILE.hrr.tar.zst`).
    pub output: String,
    /// Files of the archive, each verified (as `pack` counts them).
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Compressed bytes downloaded.
    pub bytes_downloaded: u64,
    /// Wall time.
    pub seconds: f64,
}

/// `hrr-pack image --json` (`hrr.image/1`); also what `hrr_pack::image::build` returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageJson {
    /// `hrr.image/1`.
    pub schema: String,
    /// Always true.
    pub ok: bool,
    /// The image tar written.
    pub output: String,
    /// Full reference, `name:tag`.
    pub tag: String,
    /// `sha256:` of the manifest (the image digest of registries and podman).
    pub manifest_digest: String,
    /// `sha256:` of the config (Docker's image id).
    pub config_digest: String,
    /// `sha256:` of the added (gzip) layer.
    pub layer_digest: String,
    /// `sha256:` of that layer uncompressed.
    pub diff_id: String,
    /// Layers in the image, the added one included.
    pub layers: u64,
    /// Newest glibc the binary needs, or null (no versioned glibc references).
    pub glibc_needed: Option<String>,
    /// Newest glibc the base provides, or null.
    pub glibc_base: Option<String>,
    /// Size of the image tar.
    pub bytes: u64,
    /// The base's `Entrypoint` that was removed (as it was), or null.
    pub removed_entrypoint: Option<serde_json::Value>,
    /// Creation time (RFC 3339), also the layer's file times.
    pub created: String,
    /// `SOURCE_DATE_EPOCH`, `hrr-playback` (the binary's mtime) or `base` (the base's own
    /// creation time, else its file's mtime).
    pub created_from: String,
    /// The base was an `hrr-pack image` output whose hrr-playback layer was replaced.
    pub replaced_layer: bool,
}
