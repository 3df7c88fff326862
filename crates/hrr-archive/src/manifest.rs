//! Root and per-process `manifest.json`: read with serde (any valid JSON formatting), rewritten
//! atomically with unknown keys kept, and the root index rebuilt from the `pid-*/manifest.json`
//! files. See FORMAT.md §1.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::fsutil;
pub use crate::layout::names::{list_pid_dirs, parse_pid_dir_name, MANIFEST};
use crate::schema::ApiFamily;
/// Schema version of the root manifest.
pub const ROOT_MANIFEST_VERSION: u32 = 1;
/// Largest manifest the reader accepts.
pub const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// The five fields a process manifest and its row of the root index share (the root entry copies
/// them from the process manifest: FORMAT.md §1). Both embed it flattened, so on disk they are
/// top-level keys of either object.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStatus {
    /// Process id.
    pub pid: u32,
    /// Parent process id (0 when unknown).
    #[serde(default)]
    pub parent_pid: u32,
    /// True when the process shut down cleanly and nothing was dropped.
    #[serde(default)]
    pub complete: bool,
    /// Records in events.bin (after the schema record, before the trailer).
    #[serde(default)]
    pub event_count: u64,
    /// Blob files plus code objects written.
    #[serde(default)]
    pub blob_count: u64,
}

/// The per-process manifest (`pid-<pid>/manifest.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessManifest {
    /// Pid, parent, completeness and counts (the keys the root index copies).
    #[serde(flatten)]
    pub status: ProcessStatus,
    /// Why the capture is not complete, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete_reason: Option<String>,
    /// API family recorded (`cuda-driver`, `hip`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<ApiFamily>,
    /// Calls seen that replay cannot reproduce, with the reasons.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub unreplayable_apis: BTreeMap<String, Vec<String>>,
    /// Driver symbols the program called that the recorder passed through unrecorded, with counts.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub passthrough_calls: BTreeMap<String, u64>,
    /// Device, driver and runtime facts (free-form object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
    /// Keys this version does not know; kept on rewrite.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ProcessManifest {
    /// A fresh manifest for `pid`.
    pub fn new(pid: u32, parent_pid: u32) -> Self {
        ProcessManifest {
            status: ProcessStatus {
                pid,
                parent_pid,
                ..ProcessStatus::default()
            },
            incomplete_reason: None,
            api: None,
            unreplayable_apis: BTreeMap::new(),
            passthrough_calls: BTreeMap::new(),
            metadata: None,
            extra: Map::new(),
        }
    }
}

impl ProcessManifest {
    /// The device facts of [`Self::metadata`], typed (what `--info` shows).
    pub fn device_facts(&self) -> DeviceFacts {
        DeviceFacts::from_metadata(self.metadata.as_ref())
    }
}

/// The facts about the capturing device, driver and runtime that consumers show or check, picked
/// out of a manifest's free-form `metadata` (which stays as written, unknown keys and all). Each
/// is looked for at the top level of `metadata`, then in `device`, then in `devices[0]` (where
/// `hrr-capture` writes them); a number or a `[major, minor]` array is given as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceFacts {
    /// Device name (`device_name` or `name`).
    pub name: Option<String>,
    /// CUDA compute capability (`compute_capability`, e.g. `9.0`) or, on HIP, the GCN
    /// architecture name (`gcn_arch_name`, e.g. `gfx90a:sramecc+:xnack-`).
    pub architecture: Option<String>,
    /// Device UUID (`uuid`, 32 hex).
    pub uuid: Option<String>,
    /// Device memory in bytes (`total_global_mem`).
    pub total_memory: Option<u64>,
    /// Driver version as recorded (`driver_version`: CUDA's `1000 * major + 10 * minor`, HIP's
    /// `HIP_VERSION`).
    pub driver_version: Option<String>,
}

impl DeviceFacts {
    /// Pick the facts out of a manifest's `metadata` object.
    pub fn from_metadata(meta: Option<&Value>) -> Self {
        Self::from_places(meta, None)
    }

    /// The facts of the device with ordinal `ordinal` (its entry of `devices`, where one says
    /// so, looked at first), else as [`Self::from_metadata`].
    pub fn of_device(meta: Option<&Value>, ordinal: i64) -> Self {
        let entry = meta
            .and_then(|m| m.get("devices"))
            .and_then(Value::as_array)
            .and_then(|d| d.iter().find(|e| e["ordinal"].as_i64() == Some(ordinal)));
        Self::from_places(meta, entry)
    }

    fn from_places(meta: Option<&Value>, first: Option<&Value>) -> Self {
        let text = |keys: &[&str]| meta_text(first, keys).or_else(|| meta_text(meta, keys));
        DeviceFacts {
            name: text(&["device_name", "name"]),
            architecture: text(&["compute_capability", "gcn_arch_name"]),
            uuid: text(&["uuid"]),
            total_memory: text(&["total_global_mem"]).and_then(|t| t.parse().ok()),
            driver_version: text(&["driver_version"]),
        }
    }

    /// [`Self::driver_version`] as a number, when it is one.
    pub fn driver_version_number(&self) -> Option<u64> {
        self.driver_version.as_deref()?.parse().ok()
    }
}

/// A string (or number, or `[major, minor]`) from the manifest metadata: top level first, then
/// `device`, then `devices[0]`.
fn meta_text(meta: Option<&Value>, keys: &[&str]) -> Option<String> {
    let meta = meta?;
    let places = [
        Some(meta),
        meta.get("device"),
        meta.get("devices").and_then(|d| d.get(0)),
    ];
    for place in places.into_iter().flatten() {
        for key in keys {
            match place.get(*key) {
                Some(Value::String(s)) if !s.is_empty() => return Some(s.clone()),
                Some(Value::Number(n)) => return Some(n.to_string()),
                Some(Value::Array(a)) if !a.is_empty() && a.iter().all(Value::is_number) => {
                    return Some(
                        a.iter()
                            .map(|n| n.to_string())
                            .collect::<Vec<_>>()
                            .join("."),
                    )
                }
                _ => {}
            }
        }
    }
    None
}

/// What [`salvage_process_manifest`] recovered from a manifest that does not parse.
#[derive(Debug, Clone, PartialEq)]
pub struct Salvage {
    /// Every key that parsed, as a manifest (`pid` 0 when it did not: see [`Self::has_pid`]).
    pub manifest: ProcessManifest,
    /// Whether `pid` was among the keys kept.
    pub has_pid: bool,
    /// The keys kept, in file order.
    pub kept: Vec<String>,
    /// Keys found but not kept, each with why (`api (not a string)`).
    pub dropped: Vec<String>,
    /// What is wrong with the file as a whole, in words.
    pub damage: String,
}

/// Recover what can be recovered from the bytes of a damaged process manifest: a well-formed
/// JSON object whose keys do not all have the right type keeps every key whose value does; a
/// truncated or garbled file keeps every top-level `"key": value` pair that parses whole, up to
/// the damage and, when the file is laid out as the writer writes it (one top-level key per
/// line, indented two spaces), after it. A number that runs to the end of a truncated file may
/// have lost digits and is not kept. Never fails: at worst nothing is kept.
pub fn salvage_process_manifest(bytes: &[u8]) -> Salvage {
    let (pairs, damage) = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(map)) => {
            let why = serde_json::from_slice::<ProcessManifest>(bytes)
                .err()
                .map_or_else(|| "none".to_string(), |e| e.to_string());
            (map.into_iter().collect::<Vec<_>>(), why)
        }
        Ok(_) => (Vec::new(), "not a JSON object".to_string()),
        Err(e) => {
            let (pairs, at) = scan_top_level_pairs(bytes);
            let at = at.unwrap_or(bytes.len());
            (
                pairs,
                format!("truncated or garbled JSON ({e}; first damage at byte {at})"),
            )
        }
    };
    let mut valid = Map::new();
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    for (key, value) in pairs {
        let mut probe = Map::new();
        if key != "pid" {
            probe.insert("pid".into(), Value::from(0));
        }
        probe.insert(key.clone(), value.clone());
        match serde_json::from_value::<ProcessManifest>(Value::Object(probe)) {
            Ok(_) => {
                if !kept.contains(&key) {
                    kept.push(key.clone());
                }
                valid.insert(key, value);
            }
            Err(e) => dropped.push(format!("{key} ({e})")),
        }
    }
    let has_pid = valid.contains_key("pid");
    if !has_pid {
        valid.insert("pid".into(), Value::from(0));
    }
    let manifest =
        serde_json::from_value(Value::Object(valid)).unwrap_or_else(|_| ProcessManifest::new(0, 0));
    Salvage {
        manifest,
        has_pid,
        kept,
        dropped,
        damage,
    }
}

/// The top-level `"key": value` pairs of a damaged JSON object that parse whole, and the offset
/// of the first damage (`None` when the object closed normally).
fn scan_top_level_pairs(bytes: &[u8]) -> (Vec<(String, Value)>, Option<usize>) {
    fn ws(b: &[u8], mut i: usize) -> usize {
        while b.get(i).is_some_and(|c| c.is_ascii_whitespace()) {
            i += 1;
        }
        i
    }
    // One JSON value at `i`: the value and the offset just past it.
    fn value(b: &[u8], i: usize) -> Option<(Value, usize)> {
        let mut it = serde_json::Deserializer::from_slice(b.get(i..)?).into_iter::<Value>();
        match it.next() {
            Some(Ok(v)) => Some((v, i + it.byte_offset())),
            _ => None,
        }
    }
    // The next line that starts a top-level key as the writer lays them out.
    fn resync(b: &[u8], from: usize) -> Option<usize> {
        let pat = b"\n  \"";
        (from..b.len().saturating_sub(pat.len() - 1))
            .find(|&i| &b[i..i + pat.len()] == pat)
            .map(|i| i + 3)
    }
    let mut out = Vec::new();
    let mut first_damage = None;
    let mut i = ws(bytes, 0);
    if bytes.get(i) == Some(&b'{') {
        i += 1;
    } else {
        first_damage = Some(i);
        match resync(bytes, i) {
            Some(at) => i = at,
            None => return (out, first_damage),
        }
    }
    loop {
        i = ws(bytes, i);
        let start = i;
        let pair = (|| {
            match bytes.get(i)? {
                b'}' => return Some(None),
                b'"' => {}
                _ => return None,
            }
            let (Value::String(key), end) = value(bytes, i)? else {
                return None;
            };
            let colon = ws(bytes, end);
            (bytes.get(colon) == Some(&b':')).then_some(())?;
            let (v, end) = value(bytes, ws(bytes, colon + 1))?;
            // A number cut by the end of the file may have lost digits.
            if v.is_number() && end >= bytes.len() {
                return None;
            }
            let next = ws(bytes, end);
            match bytes.get(next)? {
                b',' => Some(Some((key, v, next + 1, false))),
                b'}' => Some(Some((key, v, next + 1, true))),
                _ => None,
            }
        })();
        match pair {
            Some(None) => return (out, first_damage),
            Some(Some((key, v, next, closed))) => {
                out.push((key, v));
                if closed {
                    return (out, first_damage);
                }
                i = next;
            }
            None => {
                first_damage.get_or_insert(start);
                match resync(bytes, start + 1) {
                    Some(at) => i = at,
                    None => return (out, first_damage),
                }
            }
        }
    }
}

/// One row of the root index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessEntry {
    /// The process manifest's pid, parent, completeness and counts.
    #[serde(flatten)]
    pub status: ProcessStatus,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The root manifest (`<archive>/manifest.json`): which processes the archive holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RootManifest {
    /// Schema version of this file (1).
    pub version: u32,
    /// How the archive was produced (`in-tree` for the capture library).
    #[serde(default = "default_mode")]
    pub capture_mode: String,
    /// The first process that parents another, else the first process.
    #[serde(default)]
    pub owner_pid: u32,
    /// Processes sorted by pid.
    #[serde(default)]
    pub processes: Vec<ProcessEntry>,
    /// Keys this version does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_mode() -> String {
    "in-tree".into()
}

/// Read and parse a JSON manifest without following links.
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = fsutil::read_small(path, MAX_MANIFEST_BYTES)?;
    serde_json::from_slice(&bytes).map_err(|source| Error::BadManifest {
        path: path.to_path_buf(),
        source,
    })
}

/// Write a manifest atomically (temp + fsync + rename).
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("manifests serialise");
    bytes.push(b'\n');
    fsutil::write_atomic(path, &bytes, true)
}

/// Read `pid_dir/manifest.json`.
pub fn read_process_manifest(pid_dir: &Path) -> Result<ProcessManifest> {
    read_json(&pid_dir.join(MANIFEST))
}

/// Write `pid_dir/manifest.json`.
pub fn write_process_manifest(pid_dir: &Path, m: &ProcessManifest) -> Result<()> {
    write_json(&pid_dir.join(MANIFEST), m)
}

/// Read `root/manifest.json`.
pub fn read_root_manifest(root: &Path) -> Result<RootManifest> {
    read_json(&root.join(MANIFEST))
}

/// Result of rebuilding the root index.
#[derive(Debug, Default)]
pub struct RootRebuild {
    /// The manifest written.
    pub manifest: Option<RootManifest>,
    /// pid folders whose manifest could not be read (left out of the index).
    pub skipped: Vec<(PathBuf, String)>,
}

/// Rebuild `root/manifest.json` from every `pid-*/manifest.json`, keeping the unknown keys and
/// capture mode of an existing root manifest. Nothing is written if a folder cannot be listed.
pub fn rebuild_root_index(root: &Path) -> Result<RootRebuild> {
    let rebuilt = build_root_index(root)?;
    if let Some(manifest) = &rebuilt.manifest {
        write_json(&root.join(MANIFEST), manifest)?;
    }
    Ok(rebuilt)
}

/// Compute the root index [`rebuild_root_index`] would write, in memory only (nothing is
/// written: safe on a read-only archive).
pub fn build_root_index(root: &Path) -> Result<RootRebuild> {
    let dirs = list_pid_dirs(root)?;
    let mut skipped = Vec::new();
    let mut processes = Vec::new();
    for (_, dir) in dirs {
        match read_process_manifest(&dir) {
            Ok(m) => processes.push(m.status),
            Err(e) => skipped.push((dir, e.to_string())),
        }
    }
    processes.sort_by_key(|p| p.pid);
    let previous = read_root_manifest(root).ok();
    let pids: std::collections::HashSet<u32> = processes.iter().map(|p| p.pid).collect();
    let owner_pid = processes
        .iter()
        .find(|p| {
            processes
                .iter()
                .any(|c| c.parent_pid == p.pid && c.pid != p.pid)
        })
        .or_else(|| processes.iter().find(|p| !pids.contains(&p.parent_pid)))
        .or(processes.first())
        .map_or(0, |p| p.pid);
    let manifest = RootManifest {
        version: ROOT_MANIFEST_VERSION,
        capture_mode: previous
            .as_ref()
            .map_or_else(default_mode, |p| p.capture_mode.clone()),
        owner_pid,
        processes: processes
            .into_iter()
            .map(|status| ProcessEntry {
                status,
                extra: Map::new(),
            })
            .collect(),
        extra: previous.map(|p| p.extra).unwrap_or_default(),
    };
    Ok(RootRebuild {
        manifest: Some(manifest),
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_keys_survive_a_rewrite_and_any_formatting_parses() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(MANIFEST),
            br#"{"pid":7,"future_key":{"x":[1,2]},"complete":true,"event_count":3,"blob_count":1,"parent_pid":1}"#,
        )
        .unwrap();
        let mut m = read_process_manifest(dir.path()).unwrap();
        assert_eq!(
            (m.status.pid, m.status.parent_pid, m.status.event_count),
            (7, 1, 3)
        );
        m.status.event_count = 4;
        write_process_manifest(dir.path(), &m).unwrap();
        let v: Value =
            serde_json::from_slice(&std::fs::read(dir.path().join(MANIFEST)).unwrap()).unwrap();
        assert_eq!(v["future_key"]["x"][1], 2);
        assert_eq!(v["event_count"], 4);
    }

    #[test]
    fn the_shared_status_keys_stay_top_level_and_unknown_keys_stay_in_extra() {
        // a root entry: the five keys go to `status` only, every other key to `extra`
        let e: ProcessEntry =
            serde_json::from_str(r#"{"zzz":1,"pid":5,"complete":true,"aaa":[2],"event_count":3}"#)
                .unwrap();
        let status = ProcessStatus {
            pid: 5,
            complete: true,
            event_count: 3,
            ..ProcessStatus::default()
        };
        assert_eq!(e.status, status);
        assert_eq!(e.extra.keys().collect::<Vec<_>>(), ["zzz", "aaa"]);
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"pid":5,"parent_pid":0,"complete":true,"event_count":3,"blob_count":0,"zzz":1,"aaa":[2]}"#
        );
        // a process manifest: the five keys first, its own keys next, unknown keys last
        let text = r#"{"pid":5,"parent_pid":0,"complete":true,"event_count":3,"blob_count":0,"incomplete_reason":"r","api":"hip","passthrough_calls":{"c":2},"zzz":1,"aaa":[2]}"#;
        let m: ProcessManifest = serde_json::from_str(text).unwrap();
        assert_eq!(m.status, status);
        assert_eq!(m.api, Some(ApiFamily::Hip));
        assert_eq!(m.extra.keys().collect::<Vec<_>>(), ["zzz", "aaa"]);
        assert_eq!(serde_json::to_string(&m).unwrap(), text);
    }

    #[test]
    fn a_damaged_manifest_keeps_every_key_that_parses() {
        let mut full = ProcessManifest::new(2674, 1);
        full.api = Some(ApiFamily::CudaDriver);
        full.metadata = Some(serde_json::json!({"devices": [{"name": "NVIDIA H200"}]}));
        full.passthrough_calls
            .insert("cuGetProcAddress_v2".into(), 12);
        full.status.event_count = 123;
        full.extra
            .insert("future".into(), serde_json::json!([1, 2]));
        let mut text = serde_json::to_vec_pretty(&full).unwrap();
        text.push(b'\n');
        // well-formed, one key of the wrong type
        let mut v: Value = serde_json::from_slice(&text).unwrap();
        v["event_count"] = Value::from("lots");
        let s = salvage_process_manifest(&serde_json::to_vec(&v).unwrap());
        assert!(s.has_pid && s.manifest.status.pid == 2674);
        assert_eq!(s.manifest.api, Some(ApiFamily::CudaDriver));
        assert_eq!(s.manifest.metadata, full.metadata);
        assert_eq!(s.manifest.passthrough_calls, full.passthrough_calls);
        assert_eq!(s.manifest.extra["future"], serde_json::json!([1, 2]));
        assert!(s.dropped.len() == 1 && s.dropped[0].starts_with("event_count"));
        // truncated inside the last key: everything before it is kept
        let cut = text.len() - 8;
        let s = salvage_process_manifest(&text[..cut]);
        assert_eq!(s.manifest.status.pid, 2674);
        assert_eq!(s.manifest.metadata, full.metadata);
        assert_eq!(s.manifest.passthrough_calls, full.passthrough_calls);
        assert!(s.damage.contains("truncated"), "{}", s.damage);
        // garbage in the middle of a line: the keys on the lines after it are kept too
        let t = String::from_utf8(text.clone()).unwrap();
        let garbled = t.replace("\"api\": \"cuda-driver\"", "\"api\": \u{1}\u{7}\"cu");
        let s = salvage_process_manifest(garbled.as_bytes());
        assert_eq!(s.manifest.api, None);
        assert_eq!(s.manifest.metadata, full.metadata);
        assert_eq!(s.manifest.status.pid, 2674);
        assert!(!s.kept.contains(&"api".to_string()));
        // a number cut by the end of the file is not trusted
        let s = salvage_process_manifest(b"{\"parent_pid\": 7, \"pid\": 26");
        assert!(!s.has_pid && s.manifest.status.parent_pid == 7);
        // nothing at all
        let s = salvage_process_manifest(b"\x00\x01garbage");
        assert!(s.kept.is_empty() && !s.has_pid);
    }

    #[test]
    fn device_facts_are_found_at_top_level_or_in_the_first_device() {
        let m = serde_json::json!({"driver_version": 13000, "devices": [{"name": "NVIDIA H200",
            "compute_capability": [9, 0], "total_global_mem": 150_000_000_000u64, "uuid": "ab"}]});
        let f = DeviceFacts::from_metadata(Some(&m));
        assert_eq!(f.name.as_deref(), Some("NVIDIA H200"));
        assert_eq!(f.architecture.as_deref(), Some("9.0"));
        assert_eq!(f.driver_version.as_deref(), Some("13000"));
        assert_eq!(f.driver_version_number(), Some(13000));
        assert_eq!(f.total_memory, Some(150_000_000_000));
        assert_eq!(f.uuid.as_deref(), Some("ab"));
        assert_eq!(DeviceFacts::from_metadata(None), DeviceFacts::default());
        let hip = serde_json::json!({"devices": [{"gcn_arch_name": "gfx90a"}]});
        assert_eq!(
            DeviceFacts::from_metadata(Some(&hip))
                .architecture
                .as_deref(),
            Some("gfx90a")
        );
    }

    #[test]
    fn the_facts_of_one_device_come_from_its_entry() {
        let m = serde_json::json!({"driver_version": 13000, "devices": [
            {"ordinal": 0, "name": "GPU A", "compute_capability": "9.0"},
            {"ordinal": 1, "name": "GPU B", "compute_capability": "8.0"}]});
        let b = DeviceFacts::of_device(Some(&m), 1);
        assert_eq!(b.name.as_deref(), Some("GPU B"));
        assert_eq!(b.architecture.as_deref(), Some("8.0"));
        assert_eq!(b.driver_version_number(), Some(13000)); // from the top level
                                                            // an ordinal no entry names: the first device's, as from_metadata gives them
        let other = DeviceFacts::of_device(Some(&m), 5);
        assert_eq!(other, DeviceFacts::from_metadata(Some(&m)));
        assert_eq!(other.name.as_deref(), Some("GPU A"));
    }

    #[test]
    fn root_index_is_rebuilt_from_pid_dirs() {
        let root = tempfile::tempdir().unwrap();
        for (pid, parent) in [(20u32, 10u32), (10, 1)] {
            let d = root.path().join(crate::layout::names::pid_dir_name(pid));
            std::fs::create_dir(&d).unwrap();
            write_process_manifest(&d, &ProcessManifest::new(pid, parent)).unwrap();
        }
        std::fs::create_dir(root.path().join("pid-30")).unwrap();
        std::fs::create_dir(root.path().join("pid-x")).unwrap();
        let r = rebuild_root_index(root.path()).unwrap();
        let m = read_root_manifest(root.path()).unwrap();
        assert_eq!(
            m.processes.iter().map(|p| p.status.pid).collect::<Vec<_>>(),
            [10, 20]
        );
        assert_eq!(m.owner_pid, 10);
        assert_eq!(r.skipped.len(), 1);
    }
}
