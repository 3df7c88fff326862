//! `--info`: what an archive holds, without a GPU and without writing anything.
//!
//! On an archive root it lists the processes (the user guide's block); on one `pid-<pid>/`
//! capture it gives the detail: completeness and why, events, threads, objects, the breakdown of
//! calls and kernels by name and the manifest's facts. Every count comes from one streaming pass
//! over events.bin (bounded memory), so a crashed capture shows real numbers.
//!
//! # JSON (`--info --json`)
//!
//! One object on one line, written through `hrr_cli::json::InfoProcessJson` (a process) and
//! `InfoRootJson` (a root); see `docs/json.md`. Key names are stable: new keys may be added, none is renamed or removed.
//!
//! Process capture:
//! - `kind`: `"process"`; `path`: the folder as given; `pid`, `parent_pid` (null when unknown)
//! - `api`, `api_version`: from the schema record (null when events.bin has none)
//! - `complete` (bool), `incomplete_reasons` (array of strings, empty when complete)
//! - `events`: records after the schema record (writer marks included, trailer excluded)
//! - `threads`: thread ids in first-seen order; `thread_count`
//! - `first_timestamp_ns`, `last_timestamp_ns`, `duration_ns` (null without events)
//! - `blobs`, `blob_bytes`, `code_objects`, `code_object_bytes`, `events_bin_bytes`
//! - `kernel_launches`, `graph_launches`, `d2h_copies`, `failed_calls`, `undecodable_payloads`
//! - `calls`: `[{"name", "count"}]` by count descending, then name
//! - `kernels`: `[{"name", "demangled", "launches"}]` by launches descending, then name
//!   (`name` as recorded, mangled; `demangled` as a person reads it, the text view's)
//! - `manifest_error`: null or why manifest.json could not be used
//! - `metadata`: the manifest's `metadata` object or null; `device_name`, `compute_capability`,
//!   `driver_version`: strings picked out of it, or null
//! - `unreplayable_calls`: `{call: [reason, ...]}`; `passthrough_calls`: `{call: count}`
//! - `active_marker`: whether an `active` marker is present
//! - `extracted_from` (only for an archive written by `--extract`): the manifest's provenance
//!   object (`source`, `segment`, `first_event`, `last_event`, `kernels`, `reach`,
//!   `snapshot_bytes`, `fault`)
//!
//! Archive root:
//! - `kind`: `"root"`; `path`; `capture_mode`; `owner_pid`
//! - `root_manifest`: `"ok"`, `"stale"`, `"missing"` or `"invalid"` (then the index was rebuilt
//!   in memory from the process manifests)
//! - `processes`: `[{"pid", "parent_pid", "complete", "events", "blobs", "path",
//!   "incomplete_reasons", "error"}]` sorted by pid (`events`, `parent_pid` null when unknown,
//!   `error` null unless the capture could not be read)
//! - `notes`: further findings as strings

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use hrr_archive::blobs::count_objects;
use hrr_archive::layout::{self, EVENTS_FILE, MANIFEST};
use hrr_archive::manifest::{self, DeviceFacts, ProcessManifest, RootManifest};
use hrr_archive::reader::{tail_trailer, EventReader};
use hrr_archive::schema::ApiFamily;
use hrr_archive::summary::{summarize, ProcessSummary};
use hrr_archive::Error;
use hrr_cli::json::{
    CallCountJson, InfoProcessJson, InfoRootJson, KernelCountJson, ProcessRowJson, ProcessesJson,
};

use crate::output::{self, Table};

const RULE: &str = "========================================";

/// Refuse a process capture holding a symbolic link (events.bin, manifest.json, blobs/,
/// code_objects/, regions/, ...): links inside an archive are never followed.
pub fn check_links(dir: &Path) -> Result<()> {
    layout::check_no_links(dir)?;
    Ok(())
}

/// What the root listing knows about one process capture.
#[derive(Debug)]
pub struct ProcessRow {
    /// What the listing shows of it: the text table's cells and, as it stands, its `--json` row
    /// (pid from the folder name, parent pid from the manifest, the folder, why it is incomplete,
    /// and the message of [`Self::error`]).
    pub shown: ProcessRowJson,
    /// Why it could not be read at all (its hint, if any, goes to stderr).
    pub error: Option<anyhow::Error>,
}

impl ProcessRow {
    /// The row of a capture that could not be read at all: `error` kept and its message shown.
    fn unreadable(mut self, error: anyhow::Error) -> Self {
        self.shown.error = Some(hrr_cli::render(&error).message);
        self.error = Some(error);
        self
    }
}

/// What became of reading a process manifest.
enum ManifestState<'a> {
    Ok(&'a ProcessManifest),
    Missing,
    Bad(String),
}

impl<'a> ManifestState<'a> {
    fn of(r: &'a std::result::Result<ProcessManifest, Error>) -> Self {
        match r {
            Ok(m) => ManifestState::Ok(m),
            Err(Error::Missing(_)) => ManifestState::Missing,
            Err(e) => ManifestState::Bad(e.to_string()),
        }
    }

    /// Reasons that come from the manifest rather than the event stream.
    fn reasons(&self, stream_complete: bool) -> Vec<String> {
        match self {
            ManifestState::Missing => vec!["manifest.json is missing".into()],
            ManifestState::Bad(e) => vec![format!("manifest problem: {e}")],
            ManifestState::Ok(m) if !m.status.complete && stream_complete => {
                vec![match &m.incomplete_reason {
                    Some(r) => format!("manifest.json says incomplete: {r}"),
                    None => "manifest.json says incomplete".into(),
                }]
            }
            ManifestState::Ok(_) => Vec::new(),
        }
    }
}

/// Gather one row of the root listing. Only a link where a file must be is an error here;
/// anything else unreadable is kept in the row.
pub fn process_row(pid: u32, dir: &Path) -> Result<ProcessRow> {
    check_links(dir)?;
    let events_path = dir.join(EVENTS_FILE);
    let manifest = manifest::read_process_manifest(dir);
    let mut row = ProcessRow {
        shown: ProcessRowJson {
            pid,
            parent_pid: manifest.as_ref().ok().map(|m| m.status.parent_pid),
            complete: false,
            events: None,
            blobs: None,
            path: dir.display().to_string(),
            incomplete_reasons: Vec::new(),
            error: None,
        },
        error: None,
    };
    let ProcessRowJson {
        complete,
        events,
        blobs,
        incomplete_reasons: reasons,
        ..
    } = &mut row.shown;
    // A marker that is not a writer's makes the row unreadable (never "stale").
    let writer = match layout::running_writer(dir) {
        Ok(w) => w,
        Err(e) => return Ok(row.unreadable(e.into())),
    };
    match count_objects(dir) {
        Ok(c) => *blobs = Some(c.blobs),
        Err(e @ Error::Symlink(_)) => return Err(e.into()),
        Err(e) => reasons.push(format!("cannot count blobs: {e}")),
    }
    if std::fs::symlink_metadata(&events_path).is_err() {
        reasons.push("events.bin is missing".into());
        reasons.extend(ManifestState::of(&manifest).reasons(false));
        return Ok(row);
    }
    if let Ok(m) = &manifest {
        if m.status.complete
            && matches!(tail_trailer(&events_path), Ok(Some(n)) if n == m.status.event_count)
        {
            *complete = true;
            *events = Some(m.status.event_count);
            return Ok(row);
        }
    }
    match EventReader::scan_headers(&events_path) {
        Ok(rec) => {
            *events = Some(rec.records);
            *reasons = rec.incompleteness();
            reasons.extend(ManifestState::of(&manifest).reasons(rec.complete()));
        }
        Err(e) => return Ok(row.unreadable(e.into())),
    }
    if let Some(pid) = writer {
        reasons.push(format!("capture still running (pid {pid} holds it)"));
    }
    *complete = reasons.is_empty();
    Ok(row)
}

/// The root listing: header facts and one row per process.
#[derive(Debug)]
pub struct RootInfo {
    /// The root as given.
    pub path: PathBuf,
    /// Capture mode (root manifest, else `in-tree`).
    pub capture_mode: String,
    /// Owner pid (root manifest, else the rule applied in memory).
    pub owner_pid: u32,
    /// `ok`, `stale`, `missing` or `invalid`.
    pub root_manifest: &'static str,
    /// Rows sorted by pid.
    pub rows: Vec<ProcessRow>,
    /// Further findings.
    pub notes: Vec<String>,
}

/// Gather the root listing (reads only).
pub fn root_info(root: &Path, processes: &[(u32, PathBuf)]) -> Result<RootInfo> {
    let root_manifest_path = root.join(MANIFEST);
    if std::fs::symlink_metadata(&root_manifest_path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::Symlink(root_manifest_path).into());
    }
    let rows = processes
        .iter()
        .map(|(pid, dir)| process_row(*pid, dir))
        .collect::<Result<Vec<_>>>()?;
    let mut notes = Vec::new();
    let from_memory = || -> Result<RootManifest> {
        Ok(manifest::build_root_index(root)?
            .manifest
            .expect("the index is always built in memory"))
    };
    let (m, status) = match manifest::read_root_manifest(root) {
        Ok(m) => (m, "ok"),
        Err(Error::Missing(_)) => {
            notes.push(
                "root manifest.json is missing; the index above was rebuilt in memory".to_string(),
            );
            (from_memory()?, "missing")
        }
        Err(e) => {
            notes.push(format!(
                "root manifest problem: {e}; the index above was rebuilt in memory"
            ));
            (from_memory()?, "invalid")
        }
    };
    let mut status = status;
    if status == "ok" {
        let stale = m.processes.len() != rows.len()
            || m.processes.iter().zip(&rows).any(|(p, r)| {
                let r = &r.shown;
                p.status.pid != r.pid
                    || p.status.complete != r.complete
                    || Some(p.status.event_count) != r.events
            });
        if stale {
            status = "stale";
            notes.push(
                "root manifest.json is out of date (written before the processes ended); \
                 the rows above come from each process capture"
                    .to_string(),
            );
        }
    }
    Ok(RootInfo {
        path: root.to_path_buf(),
        capture_mode: m.capture_mode,
        owner_pid: m.owner_pid,
        root_manifest: status,
        rows,
        notes,
    })
}

/// Write the process table of a root (also used when asking the user to choose a process).
pub fn write_process_table(out: &mut dyn Write, rows: &[ProcessRow]) -> std::io::Result<()> {
    let mut t = Table::new(["PID", "Parent PID", "Complete", "Events", "Blobs", "Path"]);
    for r in rows.iter().map(|r| &r.shown) {
        t.row([
            r.pid.to_string(),
            r.parent_pid.map_or("?".into(), |p| p.to_string()),
            if r.complete { "yes" } else { "NO" }.to_string(),
            r.events.map_or("?".into(), |e| e.to_string()),
            r.blobs.map_or("?".into(), |b| b.to_string()),
            r.path.clone(),
        ]);
    }
    t.write(out)
}

/// The processes of a root (or the one of a `pid-<pid>/` folder), for `--list`.
#[derive(Debug)]
pub struct ListInfo {
    /// The folder as reached from the path given.
    pub path: PathBuf,
    /// One row per process, sorted by pid.
    pub rows: Vec<ProcessRow>,
}

/// Gather the `--list` rows (reads only).
pub fn process_list(path: &Path, processes: &[(u32, PathBuf)]) -> Result<ListInfo> {
    let rows = processes
        .iter()
        .map(|(pid, dir)| process_row(*pid, dir))
        .collect::<Result<Vec<_>>>()?;
    Ok(ListInfo {
        path: path.to_path_buf(),
        rows,
    })
}

/// `--list`: the process table (or its `hrr.processes/1` object). Exit 1 when a capture could
/// not be read.
pub fn print_list(out: &mut dyn Write, info: &ListInfo, json: bool) -> Result<u8> {
    let unreadable = info.rows.iter().any(|r| r.error.is_some());
    if json {
        let v = ProcessesJson {
            schema: "hrr.processes/1".into(),
            ok: !unreadable,
            path: info.path.display().to_string(),
            processes: info.rows.iter().map(|r| r.shown.clone()).collect(),
        };
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
    } else {
        write_process_table(out, &info.rows)?;
        for r in &info.rows {
            if let Some(e) = &r.shown.error {
                writeln!(out, "pid-{} could not be read: {e}", r.shown.pid)?;
            }
        }
    }
    Ok(u8::from(unreadable))
}

/// Print the root listing (text or JSON), followed by the detail of `detail` (the single
/// process of a one-process root). Returns the processes that could not be read; their errors
/// are the caller's to print (once, on stderr).
pub fn print_root<'a>(
    out: &mut dyn Write,
    info: &'a RootInfo,
    json: bool,
    detail: Option<&Path>,
) -> Result<Vec<&'a ProcessRow>> {
    let unreadable: Vec<&ProcessRow> = info.rows.iter().filter(|r| r.error.is_some()).collect();
    let detail = detail.filter(|_| unreadable.is_empty());
    if json {
        let process = match detail {
            Some(d) => Some(Box::new(process_json(&view(d)?))),
            None => None,
        };
        let v = InfoRootJson {
            schema: "hrr.info/1".into(),
            ok: true,
            kind: "root".into(),
            path: info.path.display().to_string(),
            capture_mode: info.capture_mode.clone(),
            owner_pid: info.owner_pid,
            root_manifest: info.root_manifest.into(),
            processes: info.rows.iter().map(|r| r.shown.clone()).collect(),
            notes: info.notes.clone(),
            process,
        };
        serde_json::to_writer(&mut *out, &v)?;
        writeln!(out)?;
        return Ok(unreadable);
    }
    writeln!(out, "HRR Archive Root: {}", info.path.display())?;
    writeln!(out, "{RULE}")?;
    writeln!(out, "Capture Mode: {}", info.capture_mode)?;
    writeln!(out, "Owner PID: {}", info.owner_pid)?;
    writeln!(out, "Processes: {}", info.rows.len())?;
    write_process_table(out, &info.rows)?;
    let incomplete: Vec<&ProcessRow> = info.rows.iter().filter(|r| !r.shown.complete).collect();
    if !incomplete.is_empty() || !info.notes.is_empty() {
        writeln!(out)?;
    }
    for r in &incomplete {
        match &r.error {
            Some(_) => writeln!(
                out,
                "pid-{} could not be read by this hrr-playback (the error follows on stderr)",
                r.shown.pid
            )?,
            None => writeln!(
                out,
                "pid-{} is incomplete: {}",
                r.shown.pid,
                r.shown.incomplete_reasons.join("; ")
            )?,
        }
        if let Some(note) = journal_note(Path::new(&r.shown.path)) {
            writeln!(out, "pid-{} {note}", r.shown.pid)?;
        }
    }
    for n in &info.notes {
        writeln!(out, "Note: {n}")?;
    }
    // --repair of the root would fail on a capture it cannot read: then name the readable ones.
    let repairable = incomplete.iter().any(|r| r.error.is_none()) || info.root_manifest != "ok";
    if repairable && unreadable.is_empty() {
        writeln!(
            out,
            "To repair: hrr-playback {} --repair",
            info.path.display()
        )?;
    } else {
        for r in incomplete.iter().filter(|r| r.error.is_none()) {
            writeln!(out, "To repair: hrr-playback {} --repair", r.shown.path)?;
        }
    }
    if let Some(d) = detail {
        writeln!(out)?;
        print_process(out, d, false)?;
    }
    Ok(unreadable)
}

/// Everything the process detail prints, with the reasons combined.
struct ProcessView<'a> {
    dir: &'a Path,
    s: ProcessSummary,
    pid: Option<u32>,
    parent_pid: Option<u32>,
    reasons: Vec<String>,
    complete: bool,
}

fn view(dir: &Path) -> Result<ProcessView<'_>> {
    check_links(dir)?;
    let s = summarize(dir)?;
    let stream_complete = s.complete();
    let mut reasons = s.incompleteness();
    let state = match (&s.manifest, &s.manifest_error) {
        (Some(m), _) => ManifestState::Ok(m),
        _ if std::fs::symlink_metadata(dir.join(MANIFEST)).is_err() => ManifestState::Missing,
        (None, e) => ManifestState::Bad(e.clone().unwrap_or_default()),
    };
    reasons.extend(state.reasons(stream_complete));
    if let Some(pid) = layout::running_writer(dir)? {
        reasons.push(format!("capture still running (pid {pid} holds it)"));
    }
    let dir_pid = layout::pid_of_dir_name(dir);
    Ok(ProcessView {
        dir,
        pid: s.manifest.as_ref().map(|m| m.status.pid).or(dir_pid),
        parent_pid: s.manifest.as_ref().map(|m| m.status.parent_pid),
        complete: reasons.is_empty(),
        reasons,
        s,
    })
}

fn sorted_counts(map: &std::collections::BTreeMap<String, u64>) -> Vec<(&str, u64)> {
    let mut v: Vec<(&str, u64)> = map.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    v
}

/// A titled section of the text view: `title`, then `  none` or an indented table of `counts`
/// (name shown through `show`, then its count) under `headers`.
fn write_counts(
    out: &mut dyn Write,
    title: &str,
    headers: [&str; 2],
    counts: &[(&str, u64)],
    show: impl Fn(&str) -> String,
) -> std::io::Result<()> {
    writeln!(out, "{title}")?;
    if counts.is_empty() {
        return writeln!(out, "  none");
    }
    let mut t = Table::new(headers).indent(2).max_width(60);
    for (n, c) in counts {
        t.row([show(n), c.to_string()]);
    }
    t.write(out)
}

/// Device name, compute capability (architecture) and driver version of a capture, as both
/// views show them.
fn device_facts(s: &ProcessSummary) -> (Option<String>, Option<String>, Option<String>) {
    let meta = s.manifest.as_ref().and_then(|m| m.metadata.as_ref());
    let facts = DeviceFacts::from_metadata(meta);
    let mut driver = facts.driver_version;
    let cuda = s
        .schema
        .as_ref()
        .is_some_and(|x| x.api == ApiFamily::CudaDriver);
    if let (true, Some(Ok(v))) = (cuda, driver.as_deref().map(str::parse::<u64>)) {
        // cuDriverGetVersion: 1000 * major + 10 * minor
        driver = Some(format!("{}.{} ({v})", v / 1000, (v % 1000) / 10));
    }
    let hip = s.schema.as_ref().is_some_and(|x| x.api == ApiFamily::Hip);
    if let (true, Some(Ok(v))) = (hip, driver.as_deref().map(str::parse::<u64>)) {
        // HIP_VERSION: 10^7 * major + 10^5 * minor + patch
        driver = Some(format!(
            "{}.{}.{} ({v})",
            v / 10_000_000,
            (v / 100_000) % 100,
            v % 100_000
        ));
    }
    (facts.name, facts.architecture, driver)
}

/// The `hrr.info/1` object of one process capture.
fn process_json(v: &ProcessView<'_>) -> InfoProcessJson {
    let s = &v.s;
    let meta = s.manifest.as_ref().and_then(|m| m.metadata.as_ref());
    let (device_name, compute_capability, driver_version) = device_facts(s);
    let m = s.manifest.as_ref();
    InfoProcessJson {
        schema: "hrr.info/1".into(),
        ok: true,
        kind: "process".into(),
        path: v.dir.display().to_string(),
        pid: v.pid,
        parent_pid: v.parent_pid,
        api: s.schema.as_ref().map(|x| x.api.as_str().to_string()),
        api_version: s.schema.as_ref().map(|x| x.api_version),
        complete: v.complete,
        incomplete_reasons: v.reasons.clone(),
        events: s.events,
        threads: s.threads.clone(),
        thread_count: s.threads.len() as u64,
        first_timestamp_ns: s.time_span_ns.map(|t| t.0),
        last_timestamp_ns: s.time_span_ns.map(|t| t.1),
        duration_ns: s.time_span_ns.map(|t| t.1 - t.0),
        blobs: s.objects.blobs,
        blob_bytes: s.objects.blob_bytes,
        code_objects: s.objects.code_objects,
        code_object_bytes: s.objects.code_object_bytes,
        events_bin_bytes: s.events_bytes,
        kernel_launches: s.launches,
        graph_launches: s.graph_launches,
        d2h_copies: s.d2h_copies,
        failed_calls: s.failed_calls,
        undecodable_payloads: s.undecodable,
        calls: sorted_counts(&s.calls)
            .into_iter()
            .map(|(n, c)| CallCountJson {
                name: n.to_string(),
                count: c,
            })
            .collect(),
        kernels: sorted_counts(&s.kernels)
            .into_iter()
            .map(|(n, c)| KernelCountJson {
                name: n.to_string(),
                demangled: crate::demangle::demangle(n),
                launches: c,
            })
            .collect(),
        manifest_error: s.manifest_error.clone(),
        metadata: meta.cloned(),
        device_name,
        compute_capability,
        driver_version,
        unreplayable_calls: m.map(|m| m.unreplayable_apis.clone()).unwrap_or_default(),
        passthrough_calls: m.map(|m| m.passthrough_calls.clone()).unwrap_or_default(),
        active_marker: s.active_marker,
        extracted_from: extracted_from(s).cloned(),
        context_devices: s.context_devices.clone(),
    }
}

/// The manifest's `extracted_from` (an archive written by `--extract`).
fn extracted_from(s: &ProcessSummary) -> Option<&serde_json::Value> {
    s.manifest.as_ref()?.extra.get("extracted_from")
}

/// Print the detail of one process capture. Returns whether it is complete.
pub fn print_process(out: &mut dyn Write, dir: &Path, json: bool) -> Result<bool> {
    let v = view(dir)?;
    if json {
        serde_json::to_writer(&mut *out, &process_json(&v))?;
        writeln!(out)?;
        return Ok(v.complete);
    }
    let s = &v.s;
    let (device, cc, driver) = device_facts(s);
    let empty_unrep = Default::default();
    let empty_pass = Default::default();
    let unreplayable = s
        .manifest
        .as_ref()
        .map_or(&empty_unrep, |m| &m.unreplayable_apis);
    let passthrough = s
        .manifest
        .as_ref()
        .map_or(&empty_pass, |m| &m.passthrough_calls);
    let calls = sorted_counts(&s.calls);
    let kernels = sorted_counts(&s.kernels);
    let kv =
        |out: &mut dyn Write, k: &str, val: &str| writeln!(out, "{:<20}{val}", format!("{k}:"));
    writeln!(out, "HRR Archive: {}", v.dir.display())?;
    writeln!(out, "{RULE}")?;
    kv(out, "PID", &v.pid.map_or("?".into(), |p| p.to_string()))?;
    kv(
        out,
        "Parent PID",
        &v.parent_pid.map_or("?".into(), |p| p.to_string()),
    )?;
    let api = match &s.schema {
        Some(x) => format!("{} {}", x.api, x.api_version),
        None => "unknown (events.bin carries no schema record)".into(),
    };
    kv(out, "API", &api)?;
    if v.complete {
        kv(out, "Complete", "yes (clean shutdown)")?;
    } else {
        kv(out, "Complete", "NO")?;
        for r in &v.reasons {
            writeln!(out, "{:<20}- {r}", "")?;
        }
    }
    kv(out, "Events", &s.events.to_string())?;
    let mut threads = s
        .threads
        .iter()
        .take(16)
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if s.threads.len() > 16 {
        threads.push_str(&format!(", ... {} more", s.threads.len() - 16));
    }
    let threads = if s.threads.is_empty() {
        "0".to_string()
    } else {
        format!("{} ({threads})", s.threads.len())
    };
    kv(out, "Threads", &threads)?;
    let span = match s.time_span_ns {
        Some((a, b)) => format!("{} ms (from {})", output::millis(b - a), output::utc(a)),
        None => "-".into(),
    };
    kv(out, "Time span", &span)?;
    kv(
        out,
        "Blobs",
        &format!(
            "{}, {}",
            s.objects.blobs,
            output::bytes(s.objects.blob_bytes)
        ),
    )?;
    kv(
        out,
        "Code objects",
        &format!(
            "{}, {}",
            s.objects.code_objects,
            output::bytes(s.objects.code_object_bytes)
        ),
    )?;
    kv(out, "events.bin", &output::bytes(s.events_bytes))?;
    kv(out, "Kernel launches", &s.launches.to_string())?;
    kv(out, "Graph launches", &s.graph_launches.to_string())?;
    kv(out, "D2H copies", &s.d2h_copies.to_string())?;
    kv(out, "Failed calls", &s.failed_calls.to_string())?;
    if s.undecodable > 0 {
        kv(
            out,
            "Undecodable",
            &format!("{} payloads do not match the schema", s.undecodable),
        )?;
    }
    kv(out, "Device", device.as_deref().unwrap_or("-"))?;
    let hip = s.schema.as_ref().is_some_and(|x| x.api == ApiFamily::Hip);
    let arch_label = if hip {
        "Architecture"
    } else {
        "Compute capability"
    };
    kv(out, arch_label, cc.as_deref().unwrap_or("-"))?;
    kv(out, "Driver version", driver.as_deref().unwrap_or("-"))?;
    if s.context_devices.len() > 1 {
        let list: Vec<String> = s.context_devices.iter().map(i64::to_string).collect();
        kv(
            out,
            "Devices used",
            &format!(
                "{} (a context on each: replay opens as many, or --device-map puts them on fewer)",
                list.join(", ")
            ),
        )?;
    }
    if let Some(x) = extracted_from(s) {
        let text = |k: &str| {
            x.get(k)
                .map(|v| v.as_str().map_or(v.to_string(), str::to_string))
        };
        let (first, last) = (x.get("first_event"), x.get("last_event"));
        let events = match (first, last) {
            (Some(a), Some(b)) if a == b => format!("#{a}"),
            (Some(a), Some(b)) => format!("#{a}..#{b}"),
            _ => "?".into(),
        };
        let kernels: Vec<&str> = x
            .get("kernels")
            .and_then(|k| k.as_array())
            .map(|k| k.iter().filter_map(|v| v.as_str()).collect())
            .unwrap_or_default();
        kv(
            out,
            "Extracted from",
            &format!(
                "{} events {events} ({}), reach {}, snapshot {} bytes{}",
                text("source").unwrap_or_default(),
                kernels.join(", "),
                text("reach").unwrap_or_default(),
                text("snapshot_bytes").unwrap_or_default(),
                match x.get("fault").and_then(|f| f.as_i64()) {
                    Some(c) => format!(", faulted ({c}) as expected"),
                    None => String::new(),
                }
            ),
        )?;
    }

    writeln!(out)?;
    write_counts(out, "Calls by name:", ["Call", "Count"], &calls, |n| {
        n.to_string()
    })?;
    writeln!(out)?;
    write_counts(
        out,
        "Kernels by name:",
        ["Kernel", "Launches"],
        &kernels,
        crate::demangle::demangle,
    )?;
    writeln!(out)?;
    writeln!(out, "Unreplayable calls (from the manifest):")?;
    if unreplayable.is_empty() {
        writeln!(out, "  none")?;
    }
    for (name, why) in unreplayable {
        writeln!(out, "  {name}: {}", why.join("; "))?;
    }
    writeln!(out)?;
    // Entry points the recorder handed out without recording them (looked up through
    // cuGetProcAddress/dlsym, given a counting forwarder: `hrr-capture`'s `hook/forward.rs`):
    // the count is how often the program called each one, unrecorded (queries, calls no table
    // row covers). Entry points looked up but never called are not listed; beyond the
    // forwarder pool, calls go uncounted. The text view names the most called few; --json
    // lists them all.
    const SHOWN: usize = 12;
    writeln!(
        out,
        "Called without recording (passed through; from the manifest): {}",
        if passthrough.is_empty() {
            "none".to_string()
        } else {
            format!(
                "{} entry point{}",
                passthrough.len(),
                if passthrough.len() == 1 { "" } else { "s" }
            )
        }
    )?;
    if !passthrough.is_empty() {
        let mut t = Table::new(["Entry point", "Calls passed through (not recorded)"])
            .indent(2)
            .max_width(60);
        let sorted = sorted_counts(passthrough);
        for (n, c) in sorted.iter().take(SHOWN) {
            t.row([n.to_string(), c.to_string()]);
        }
        t.write(out)?;
        if sorted.len() > SHOWN {
            writeln!(
                out,
                "  ... {} more (--json lists them all)",
                sorted.len() - SHOWN
            )?;
        }
        // the ones replay names as not reproducible (`replay::prescan::passed_through_writes`)
        let api = s.schema.as_ref().map_or("", |x| x.api.as_str());
        let writers: Vec<&str> = sorted
            .iter()
            .filter(|(n, _)| crate::replay::passed_through_writes(api, n))
            .map(|(n, _)| *n)
            .collect();
        if !writers.is_empty() {
            writeln!(
                out,
                "  Of these, writing device memory (replay cannot reissue them): {}",
                writers.join(", ")
            )?;
        }
    }
    if !v.complete {
        writeln!(out)?;
        if let Some(note) = journal_note(v.dir) {
            writeln!(out, "This capture {note}")?;
        }
        writeln!(out, "To repair: hrr-playback {} --repair", v.dir.display())?;
    }
    Ok(v.complete)
}

/// What the blob journal of the unfinished capture `dir` holds, when it holds anything: objects
/// a synchronisation made durable before their files were written (replay reads them there).
fn journal_note(dir: &Path) -> Option<String> {
    let n = hrr_archive::journal::journaled(dir).ok()?.len();
    (n > 0).then(|| {
        format!(
            "holds {n} object(s) in blobs.journal whose files were never written (replay reads \
             them there; --repair writes them)"
        )
    })
}
