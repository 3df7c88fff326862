//! `--extract SEGMENT -o OUT`: one kernel launch (or a range of events) of a capture cut out
//! into a small archive that replays by itself.
//!
//! The capture is replayed up to the segment's first event; then the device memory the
//! segment can reach is read ([`Reach::All`]: every live recorded allocation and every
//! `__device__` variable looked up; [`Reach::Args`]: only the allocations the segment's
//! launches' 8-byte arguments point into, plus one level of pointers found inside those, and
//! the variables); the segment is replayed, the device synchronised, and the same ranges read
//! again. OUT is a new archive of the SOURCE schema:
//!
//! 1. the set-up events before the segment, verbatim (initialisation, contexts, allocations,
//!    frees, VMM and host memory, code loads and unloads, look-ups, attributes, streams and
//!    events; launches, copies, memsets, synchronisations, graphs, stream captures and host
//!    functions are left out), with every blob and code object they name; for one launch,
//!    only the code objects it runs are loaded (`plan_setup`);
//! 2. the first snapshot as synthetic H2D copies (the API's plain H2D call, result 0), in
//!    blobs of at most [`CHUNK`] bytes, each read, stored and dropped in turn (no full device
//!    image is ever held in memory);
//! 3. the segment's events verbatim, with their blobs;
//! 4. a context synchronisation, then the second snapshot as synthetic D2H copies: the checks.
//!
//! When the segment faulted during extraction, the synchronisation carries the fault code as
//! its recorded result and no D2H check follows: the small archive replays `REPRODUCED`.
//! A reach larger than `--extract-max-bytes` is refused with its size. The new manifest's
//! `extracted_from` says where it came from (`--info` shows it).
//!
//! Not covered yet: memory the program mapped itself with the VMM calls, CUDA arrays, managed
//! and host-mapped memory are not snapshotted (only allocations `crate::replay::placement`
//! recreates, and module variables looked up by address, `cuModuleGetGlobal`; the host's
//! recorded writes into managed and mapped memory are kept as set-up instead, and what the
//! segment writes there is not checked); HIP variables
//! written by name (`hipMemcpyToSymbol`) are restored by keeping those copies as set-up, so a
//! kernel's own later writes to such a variable are lost; a launch captured into a graph is
//! refused alone (a range from the capture's start to the graph's launch extracts). Both
//! backends read snapshots; `--replace-kernel` is CUDA only.

use crate::replay::host_ranges::HostRanges;
use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use hrr_archive::blobs::{find_code_object, open_blob};
use hrr_archive::reader::{EventReader, Record};
use hrr_archive::schema::{decode_fields, object_fields, CallClass, CallDef, FieldType, Schema};
use hrr_archive::schema::{PayloadBuilder, Value};
use hrr_archive::writer::{ProcessWriter, EVENTS_FILE};
use hrr_archive::{layout, summary, ObjectId};
use hrr_calls::shapes::{
    CopyD2h, CopyH2d, CopyResult, CopySource, CopyToSymbol, Global, Launch, NoFields,
};
use hrr_calls::wire::FieldType as WireType;
use hrr_calls::{Kind, Shape};

use super::backend::{base_name, resolve, Backend, Event, Family, Outcome, TableOp};
use super::engine::read_blob;
use super::fields;
use super::options::Options;
use super::prescan::prescan;
use super::replace::names;
use super::verdict::{self, Stop};
use crate::demangle::demangle;

mod plan;
mod snapshot;
use plan::*;
use snapshot::*;

/// The largest snapshot blob.
pub const CHUNK: u64 = 64 << 20;

/// Which device memory a snapshot holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Every live recorded allocation.
    All,
    /// The allocations the launches' pointer arguments fall in, and one level of pointers
    /// stored inside those.
    Args,
}

impl Reach {
    /// As the flag and the manifest spell it.
    pub fn word(self) -> &'static str {
        match self {
            Reach::All => "all",
            Reach::Args => "args",
        }
    }
}

/// What `--extract` asks.
#[derive(Debug, Clone)]
pub struct Request {
    /// `N` (the launch at event N), `A..B` (events A to B), or `NAME[#k]` (the k-th launch of
    /// kernel NAME, from 1; mangled or demangled).
    pub segment: String,
    /// The archive to write (must not exist).
    pub out: PathBuf,
    /// Which memory is snapshotted.
    pub reach: Reach,
    /// The largest snapshot allowed, bytes.
    pub max_bytes: u64,
}

/// The events extracted.
#[derive(Debug, Clone)]
struct Segment {
    first: u64,
    last: u64,
    /// The launches in it, demangled, for the note and the manifest.
    kernels: Vec<String>,
    /// The 8-byte arguments of its launches (candidate pointers for [`Reach::Args`]).
    pointer_args: Vec<u64>,
    /// The code objects its launches run (`None`: keep every code object: a range of events,
    /// or a launch whose code object was not recorded).
    code: Option<HashSet<ObjectId>>,
    /// Thread and timestamp of its first event (the synthetic events take them).
    thread: u64,
    ts: u64,
}

/// One piece of a snapshot: recorded address, length, blob.
struct Piece {
    addr: u64,
    len: u64,
    blob: ObjectId,
}

/// How the user named the segment.
enum Spec {
    Event(u64),
    Range(u64, u64),
    Kernel(String, u64),
}

fn parse_spec(s: &str) -> Result<Spec> {
    let s = s.trim();
    if let Some((a, b)) = s.split_once("..") {
        let (a, b) = (a.trim_start_matches('#'), b.trim_start_matches('#'));
        if let (Ok(a), Ok(b)) = (a.parse::<u64>(), b.parse::<u64>()) {
            if a > b {
                bail!("--extract {s}: the range ends before it starts");
            }
            return Ok(Spec::Range(a, b));
        }
    }
    if let Ok(n) = s.trim_start_matches('#').parse::<u64>() {
        return Ok(Spec::Event(n));
    }
    if s.is_empty() {
        bail!("--extract: empty segment (give N, A..B or NAME[#k])");
    }
    match s.rsplit_once('#') {
        Some((name, k)) if !name.is_empty() && k.parse::<u64>().is_ok() => {
            let k = k.parse::<u64>()?;
            if k == 0 {
                bail!("--extract {s}: launches of a kernel count from #1");
            }
            Ok(Spec::Kernel(name.to_string(), k))
        }
        _ => Ok(Spec::Kernel(s.to_string(), 1)),
    }
}

/// The capture's events in file order, each with the call of its record type (events of types
/// the schema does not name are passed over), up to the first whose sequence number `past`
/// says is past the end.
fn calls_until<'s>(
    dir: &Path,
    schema: &'s Schema,
    mut past: impl FnMut(u64) -> bool + 's,
) -> Result<impl Iterator<Item = Result<(Record, &'s CallDef)>> + 's> {
    let events = EventReader::open(&dir.join(EVENTS_FILE))?;
    Ok(events
        .map_while(move |rec| match rec {
            Ok(r) if past(r.header.seq) => None,
            rec => Some(rec),
        })
        .filter_map(|rec| match rec {
            Ok(r) => schema.call(r.header.kind).map(|call| Ok((r, call))),
            Err(e) => Some(Err(e.into())),
        }))
}

/// `rec` with the source its async H2D copy got later (`hrrMemcpySource`, in `late` by the
/// copy's event), so that the copy replays and is written with its bytes.
fn with_late_source(
    mut rec: Record,
    call: &CallDef,
    late: &HashMap<u64, ObjectId>,
) -> Result<Record> {
    let seq = rec.header.seq;
    let Some(id) = late.get(&seq) else {
        return Ok(rec);
    };
    let refs = object_fields(call, &rec.payload).map_err(|e| anyhow!("event #{seq}: {e}"))?;
    // the copy's source field (CopyH2d, CopyAny), empty: ids have a fixed size
    if let Some(r) = refs.iter().find(|r| r.name == "h2d_blob" && r.id.is_none()) {
        rec.payload[r.offset..r.offset + 16].copy_from_slice(&id.0);
    }
    Ok(rec)
}

/// `rec` with the copy it names (an async D2H result's or an async H2D source's `copy`: a
/// sequence number of the source archive) renumbered as written into the extracted one.
fn renumber_copy(
    rec: Record,
    call: &CallDef,
    family: Family,
    new_seq: &HashMap<u64, u64>,
) -> Result<Record> {
    let seq = rec.header.seq;
    let fields = decode_fields(call, &rec.payload).map_err(|e| anyhow!("event #{seq}: {e}"))?;
    let status = fields::recorded_status(call, &rec.payload).unwrap_or(0);
    let payload = match kind_of(family, &call.name, &fields) {
        Some((Kind::D2hResult, _)) => {
            renumbered::<CopyResult>(call, status, &fields, |s| &mut s.copy, new_seq)?
        }
        Some((Kind::H2dSource, _)) => {
            renumbered::<CopySource>(call, status, &fields, |s| &mut s.copy, new_seq)?
        }
        _ => None,
    };
    Ok(match payload {
        Some(payload) => Record { payload, ..rec },
        None => rec,
    })
}

/// The payload of shape `S` read from `fields` with its `copy` renumbered by `new_seq`; `None`
/// when that copy was not written.
fn renumbered<S: Shape>(
    call: &CallDef,
    status: i32,
    fields: &[(&str, Value)],
    copy: impl Fn(&mut S) -> &mut u64,
    new_seq: &HashMap<u64, u64>,
) -> Result<Option<Vec<u8>>> {
    let mut s = S::read(fields)?;
    let c = copy(&mut s);
    let Some(&n) = new_seq.get(c) else {
        return Ok(None);
    };
    *c = n;
    Ok(Some(payload(call, status, &s)))
}

/// Bytes of the files under `p`.
fn tree_bytes(p: &Path) -> u64 {
    let Ok(m) = std::fs::symlink_metadata(p) else {
        return 0;
    };
    if !m.is_dir() {
        return m.len();
    }
    std::fs::read_dir(p)
        .map(|rd| rd.flatten().map(|e| tree_bytes(&e.path())).sum())
        .unwrap_or(0)
}

/// What the extraction did, for the closing lines and the manifest.
struct Done {
    seg: Segment,
    snapshot_bytes: u64,
    pieces: usize,
    checks: usize,
    events: u64,
    fault: Option<(i32, String)>,
    out_dir: PathBuf,
    /// D2H results before the segment that differed from the recording (the snapshot is of
    /// this replay's state, not the recorded one's).
    prefix_mismatches: u64,
}

/// Extract `req` from the process capture in `dir`; the closing lines to `out`. Returns the
/// exit code (0: the archive was written).
pub fn run(opts: &Options, req: &Request, dir: &Path, out: &mut dyn Write) -> Result<i32> {
    if std::fs::symlink_metadata(&req.out).is_ok() {
        bail!(
            "--extract: {} exists; the small archive is written to a new folder",
            req.out.display()
        );
    }
    let result = extract(opts, req, dir);
    let done = match result {
        Ok(d) => d,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&req.out); // ours: it did not exist
            return Err(e);
        }
    };
    let (src, dst) = (tree_bytes(dir), tree_bytes(&req.out));
    let seg = &done.seg;
    let what = if seg.first == seg.last {
        format!("launch #{} {}", seg.first, seg.kernels.join(", "))
    } else {
        format!("events #{}..#{}", seg.first, seg.last)
    };
    if opts.json {
        let v = serde_json::json!({
            "schema": "hrr.extract/1", "ok": true,
            "source": hrr_cli::unalias(&dir.display().to_string()),
            "archive": done.out_dir.display().to_string(),
            "first": seg.first, "last": seg.last, "kernels": seg.kernels,
            "reach": req.reach.word(), "snapshot_bytes": done.snapshot_bytes,
            "snapshot_blobs": done.pieces, "d2h_checks": done.checks, "events": done.events,
            "fault": done.fault.as_ref().map(|(c, n)| serde_json::json!({"code": c, "name": n})),
            "archive_bytes": dst, "source_bytes": src,
            "prefix_mismatches": done.prefix_mismatches,
        });
        writeln!(out, "{v}")?;
    } else {
        writeln!(
            out,
            "[HRR] Extracted {what} into {}",
            done.out_dir.display()
        )?;
        writeln!(
            out,
            "[HRR] {:<16}: {} bytes in {} blob{} (reach {})",
            "Snapshot",
            done.snapshot_bytes,
            done.pieces,
            if done.pieces == 1 { "" } else { "s" },
            req.reach.word()
        )?;
        writeln!(out, "[HRR] {:<16}: {}", "Events", done.events)?;
        if done.prefix_mismatches > 0 {
            writeln!(
                out,
                "[HRR] {:<16}: {} D2H result{} before the segment differed from the recording: \
                 the snapshot is this replay's state",
                "Warning",
                done.prefix_mismatches,
                if done.prefix_mismatches == 1 { "" } else { "s" }
            )?;
        }
        match &done.fault {
            Some((code, name)) => writeln!(
                out,
                "[HRR] {:<16}: the segment faulted ({name}, {code}): recorded as the expected outcome",
                "Outcome"
            )?,
            None => writeln!(out, "[HRR] {:<16}: {}", "D2H checks", done.checks)?,
        }
        writeln!(
            out,
            "[HRR] {:<16}: {dst} bytes (source {src} bytes)",
            "Archive size"
        )?;
    }
    out.flush()?;
    Ok(0)
}

fn extract(opts: &Options, req: &Request, dir: &Path) -> Result<Done> {
    let sum = summary::summarize(dir)?;
    let schema = sum
        .schema
        .clone()
        .ok_or_else(|| anyhow!("{}: events.bin has no schema record", dir.display()))?;
    let family = Family::of(schema.api.as_str()).ok_or_else(|| {
        anyhow!(
            "{}: extraction from `{}` archives is not available (CUDA driver and HIP only)",
            dir.display(),
            schema.api
        )
    })?;
    let seg = resolve_segment(dir, &schema, &parse_spec(&req.segment)?)?;
    let setup = plan_setup(dir, &schema, family, &seg)?;
    let [h2d_name, d2h_name, sync_name] = synthetic_names(family);
    let h2d = synthetic_call(&schema, h2d_name, CopyH2d::FIELDS)?;
    let d2h = synthetic_call(&schema, d2h_name, CopyD2h::FIELDS)?;
    let sync = synthetic_call(&schema, sync_name, NoFields::FIELDS)?;

    let scan = prescan(dir, family, false)?;
    let held = HostRanges::reserve(&scan.host_ranges, &family.device_spans(&scan.ranges));
    let mut backend = family.open(opts, &scan.ranges, &scan.devices, held)?;
    backend.preflight(sum.manifest.as_ref().and_then(|m| m.metadata.as_ref()))?;
    backend.preload(&scan.code)?;

    let pid = layout::pid_of_dir_name(dir).unwrap_or(1);
    let ppid = sum.manifest.as_ref().map_or(0, |m| m.status.parent_pid);
    let mut w = ProcessWriter::create(&req.out, pid, ppid, &schema)
        .with_context(|| format!("creating {}", req.out.display()))?;
    let blobs = |id: Option<ObjectId>, expected: Option<u64>| read_blob(dir, id, expected);

    // Replay up to the segment, snapshot, replay the segment.
    let mut globals = Vec::new();
    let mut ranges = Vec::new();
    let mut before: Option<Vec<Piece>> = None;
    let mut fault: Option<(i32, String)> = None;
    let mut prefix_mismatches = 0u64;
    let last = seg.last;
    for rec in calls_until(dir, &schema, |seq| seq > last)? {
        let (rec, call) = rec?;
        let rec = with_late_source(rec, call, &scan.late_sources)?;
        let seq = rec.header.seq;
        let fields = decode_fields(call, &rec.payload)
            .map_err(|e| anyhow!("event #{seq} ({}): {e}", call.name))?;
        let failed = fields::failed_in_capture(&fields);
        if seq < seg.first && !failed && setup.contains(&seq) {
            if let Some((Kind::Lookup, Shaped::Global)) = kind_of(family, &call.name, &fields) {
                let g = Global::read(&fields)?;
                globals.push((g.dptr, g.bytes));
            }
        }
        if seq >= seg.first && before.is_none() {
            ranges = reach_ranges(&mut *backend, req, &seg, &globals)?;
            before = Some(
                snapshot(&mut *backend, &mut w, &ranges).context("snapshot before the segment")?,
            );
        }
        let recorded_fault = scan.recorded_failure.as_ref().is_some_and(|f| f.seq == seq);
        if failed && !recorded_fault {
            continue; // failed during capture: not reissued
        }
        let (name, per_thread) = base_name(&call.name);
        let ev = Event::of_record(&rec.header, (name, per_thread), fields, None);
        let outcome = backend.replay(&ev, &blobs, opts);
        if let (Ok(Outcome::D2h { got, expected, .. }), true) = (&outcome, seq < seg.first) {
            let want = read_blob(dir, *expected, None)?;
            if want
                .as_ref()
                .is_some_and(|w| !super::check::matches(got, w))
            {
                prefix_mismatches += 1;
            }
        }
        if let Err(e) = outcome {
            match verdict::classify(&e) {
                Stop::Fault { code, name } if seq >= seg.first => {
                    fault = Some((code, name));
                    break;
                }
                _ if seq >= seg.first => {
                    return Err(e.context(format!("event #{seq} {} (in the segment)", call.name)))
                }
                _ => {
                    return Err(e.context(format!(
                        "replaying up to the segment: event #{seq} {}",
                        call.name
                    )))
                }
            }
        }
    }
    let before = before.ok_or_else(|| anyhow!("the segment was never reached"))?;
    if fault.is_none() {
        if let Err(e) = backend.finish() {
            match verdict::classify(&e) {
                Stop::Fault { code, name } => fault = Some((code, name)),
                _ => return Err(e.context("synchronising after the segment")),
            }
        }
    }
    // The same ranges again (those the segment freed left out): the checks.
    let after = if fault.is_none() {
        let live = merged(backend.live_ranges());
        ranges.retain(|&(s, l)| {
            globals.iter().any(|&(g, gl)| g <= s && s + l <= g + gl)
                || containing(&live, s).is_some_and(|(ls, ll)| s + l <= ls + ll)
        });
        snapshot(&mut *backend, &mut w, &ranges).context("snapshot after the segment")?
    } else {
        Vec::new()
    };

    // Write the small archive: set-up, snapshot as H2D, the segment, sync, D2H checks.
    let (t, ts) = (seg.thread, seg.ts);
    let mut wrote_h2d = false;
    // sequence numbers of the source archive → of the extracted one
    let mut new_seq: HashMap<u64, u64> = HashMap::new();
    let last = seg.last;
    for rec in calls_until(dir, &schema, |seq| seq > last)? {
        let (rec, call) = rec?;
        let rec = with_late_source(rec, call, &scan.late_sources)?;
        let rec = renumber_copy(rec, call, family, &new_seq)?;
        let seq = rec.header.seq;
        if seq < seg.first {
            if setup.contains(&seq) {
                new_seq.insert(seq, copy_event(&mut w, dir, call, &rec)?);
            }
            continue;
        }
        if !wrote_h2d {
            for p in &before {
                let s = CopyH2d {
                    dst: p.addr,
                    src: 0,
                    bytes: p.len,
                    stream: 0,
                    h2d_blob: Some(p.blob),
                };
                w.events().append_at(h2d.id, t, ts, &payload(h2d, 0, &s))?;
            }
            wrote_h2d = true;
        }
        new_seq.insert(seq, copy_event(&mut w, dir, call, &rec)?);
    }
    let code = fault.as_ref().map_or(0, |f| f.0);
    w.events()
        .append_at(sync.id, t, ts, &payload(sync, code, &NoFields {}))?;
    for p in &after {
        let s = CopyD2h {
            dst: 0,
            src: p.addr,
            bytes: p.len,
            stream: 0,
            d2h_blob: Some(p.blob),
        };
        w.events().append_at(d2h.id, t, ts, &payload(d2h, 0, &s))?;
    }

    let snapshot_bytes = before.iter().map(|p| p.len).sum();
    let m = w.manifest_mut();
    if let Some(src) = &sum.manifest {
        m.metadata = src.metadata.clone();
    }
    m.extra.insert(
        "extracted_from".into(),
        serde_json::json!({
            // absolute, and named as the user did for a packed archive (unpacked to a temp folder)
            "source": hrr_cli::unalias(&std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()).display().to_string()),
            "first_event": seg.first,
            "last_event": seg.last,
            "segment": req.segment,
            "kernels": seg.kernels,
            "reach": req.reach.word(),
            "snapshot_bytes": snapshot_bytes,
            "fault": fault.as_ref().map(|f| f.0),
        }),
    );
    let out_dir = w.dir().to_path_buf();
    let written = w.finish()?;
    Ok(Done {
        seg,
        snapshot_bytes,
        pieces: before.len(),
        checks: after.len(),
        events: written.status.event_count,
        fault,
        out_dir,
        prefix_mismatches,
    })
}

/// `--extract-max-bytes`: bytes, or with a `K`, `M`, `G` or `T` suffix (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (num, shift) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(format!("unknown size suffix `{c}` (K, M, G or T)")),
            };
            (&t[..i], shift)
        }
        _ => (t, 0),
    };
    let n: u64 = num.trim().parse().map_err(|e| format!("{e}"))?;
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| "too large".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_parse() {
        assert!(matches!(parse_spec("12").unwrap(), Spec::Event(12)));
        assert!(matches!(parse_spec("#12").unwrap(), Spec::Event(12)));
        assert!(matches!(parse_spec("3..9").unwrap(), Spec::Range(3, 9)));
        assert!(parse_spec("9..3").is_err());
        assert!(matches!(parse_spec("axpy").unwrap(), Spec::Kernel(n, 1) if n == "axpy"));
        assert!(matches!(parse_spec("axpy#2").unwrap(), Spec::Kernel(n, 2) if n == "axpy"));
        assert!(parse_spec("axpy#0").is_err());
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("8G"), Ok(8 << 30));
        assert_eq!(parse_bytes("2m"), Ok(2 << 20));
        assert!(parse_bytes("1X").is_err());
    }

    #[test]
    fn ranges_merge_and_are_found() {
        let r = merged(vec![
            (0x2000, 0x100),
            (0x1000, 0x1000),
            (0, 5),
            (0x2050, 0x10),
        ]);
        assert_eq!(r, vec![(0x1000, 0x1000), (0x2000, 0x100)]);
        assert_eq!(containing(&r, 0x1fff), Some((0x1000, 0x1000)));
        assert_eq!(containing(&r, 0x2000), Some((0x2000, 0x100)));
        assert_eq!(containing(&r, 0x2100), None);
        assert_eq!(containing(&r, 0xfff), None);
    }
}
