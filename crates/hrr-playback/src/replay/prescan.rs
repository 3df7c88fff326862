//! The prescan: one pass over a process capture before the driver loads, for what the backend
//! needs first ([`Scan`]): the code objects to load, the device address ranges to reserve, the
//! devices to open, the first recorded GPU failure, the recorded calls replay cannot reproduce,
//! late H2D sources, exported (IPC) memory, the H2D sources worth preloading and, with
//! batching, the runs of launches replay may issue as graphs. Which calls matter is asked of the
//! API's [`Family::classify`]: no call name is spelled here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Result};
use hrr_archive::blobs::find_code_object;
use hrr_archive::reader::EventReader;
use hrr_archive::schema::{decode_fields, CallDef, Value};
use hrr_archive::writer::EVENTS_FILE;
use hrr_archive::ObjectId;
use hrr_calls::shapes::{CopySource, Launch};

use super::backend::{base_name, table_facts, CodeObject, Family, Prescan};
use super::batch::{LaunchRun, Runs};
use super::fields;
use super::report::Unreproducible;
use super::verdict::{self, RecordedFailure};

/// The field of an H2D source's blob (the copy shapes' and `CopySource`'s).
pub(super) const H2D_BLOB: &str = "h2d_blob";

/// What replay must know before the driver loads.
pub(super) struct Scan {
    /// Code objects loaded by the capture.
    pub(super) code: Vec<CodeObject>,
    /// Where code objects of an unfinished capture that only its blob journal holds were
    /// written for the backend to load (removed when the scan is dropped, after the replay:
    /// held for that, never read).
    #[allow(dead_code)]
    pub(super) journaled_code: Option<tempfile::TempDir>,
    /// Device address ranges the capture allocated or reserved.
    pub(super) ranges: Vec<(u64, u64)>,
    /// The first GPU failure the recorded run hit.
    pub(super) recorded_failure: Option<RecordedFailure>,
    /// Recorded calls that changed state and that replay cannot reproduce, by call.
    pub(super) unreproducible: Vec<Unreproducible>,
    /// The devices the capture opened contexts on, ascending (or, when it opened none, those
    /// its successful device look-ups asked for).
    pub(super) devices: Vec<i32>,
    /// Sources of async H2D copies recorded after them (`hrrMemcpySource`), by the copy's
    /// event: the decoding thread puts each into its copy's event.
    pub(super) late_sources: HashMap<u64, ObjectId>,
    /// Runs of launches replay may issue as prepared graphs (`super::batch`; empty unless the
    /// prescan was asked for them).
    pub(super) runs: Vec<LaunchRun>,
    /// The blobs of recorded H2D sources, in event order (the candidates for preloading).
    pub(super) h2d_sources: Vec<ObjectId>,
    /// Device memory exported to other processes (IPC): the allocations' recorded addresses.
    pub(super) exported: Vec<u64>,
    /// The contexts the capture opened, each with its device (the first device a recorded
    /// context value was opened on): a thread may make a context current before the call
    /// that opened it is recorded (cudart sets the primary context current while its retain
    /// is still running), so replay knows them all before the first event.
    pub(super) contexts: Vec<(u64, i32)>,
    /// Host memory the capture made visible to the device (address, length): held before
    /// the driver loads (`super::host_ranges`).
    pub(super) host_ranges: Vec<(u64, u64)>,
}

/// One pass over the capture for its code objects and device address ranges (and, with
/// `batch`, the runs of launches that replay may batch).
pub(super) fn prescan(dir: &Path, family: Family, batch: bool) -> Result<Scan> {
    let mut reader = EventReader::open(&dir.join(EVENTS_FILE))?;
    let schema = reader
        .schema()
        .cloned()
        .ok_or_else(|| anyhow!("events.bin has no schema record"))?;
    let mut code: Vec<CodeObject> = Vec::new();
    let mut journaled: Option<tempfile::TempDir> = None;
    let mut ranges = Vec::new();
    let mut recorded_failure = None;
    let mut unrepro: Vec<Unreproducible> = Vec::new();
    let mut devices: Vec<i32> = Vec::new();
    let mut context_devices: Vec<i32> = Vec::new();
    let mut contexts: Vec<(u64, i32)> = Vec::new();
    let mut host_ranges: Vec<(u64, u64)> = Vec::new();
    let mut late_sources = HashMap::new();
    let mut exported = Vec::new();
    let mut runs = batch.then(Runs::default);
    // What the prescan asks of a record type, answered once per type (not at every event):
    // why replay cannot reproduce it, what the prescan reads of it, and (batching) whether it
    // has the launch shape and per-thread stream semantics.
    type PerKind = (Option<&'static str>, Option<Prescan>, (bool, bool), bool);
    let mut h2d_sources = Vec::new();
    let mut per_kind: Vec<Option<PerKind>> = Vec::new();
    for rec in reader.by_ref() {
        let rec = rec?;
        let Some(call) = schema.call(rec.header.kind) else {
            continue;
        };
        let k = usize::from(rec.header.kind);
        if per_kind.len() <= k {
            per_kind.resize(k + 1, None);
        }
        let (unreproducible, classified, (launch, per_thread), uploads) = *per_kind[k]
            .get_or_insert_with(|| {
                let (name, per_thread) = base_name(&call.name);
                let launch = (has_launch_shape(call), per_thread);
                let uploads = call.fields.iter().any(|f| f.name == H2D_BLOB);
                (
                    unreproducible(family, call),
                    family.classify(name),
                    launch,
                    uploads,
                )
            });
        let failed = fields::recorded_status(call, &rec.payload).is_some_and(|c| c != 0);
        if uploads && !failed {
            if let Ok(fields) = decode_fields(call, &rec.payload) {
                h2d_sources.extend(fields.iter().filter_map(|(n, v)| match (*n, v) {
                    (H2D_BLOB, Value::Blob(Some(id))) => Some(*id),
                    _ => None,
                }));
            }
        }
        if let Some(runs) = runs.as_mut() {
            match (launch && !failed).then(|| decode_fields(call, &rec.payload)) {
                Some(Ok(fields)) => match <Launch as hrr_calls::shapes::Shape>::read(&fields) {
                    Ok(l) => runs.launch(
                        rec.header.seq,
                        (rec.header.thread_id, rec.header.kind),
                        per_thread,
                        l,
                    ),
                    Err(_) => runs.other(),
                },
                _ => runs.other(),
            }
        }
        if let Some(why) = unreproducible.filter(|_| !failed) {
            match unrepro.iter_mut().find(|u| u.call == call.name) {
                Some(u) => u.count += 1,
                None => unrepro.push(Unreproducible {
                    call: call.name.clone(),
                    first_seq: Some(rec.header.seq),
                    count: 1,
                    why,
                }),
            }
        }
        if recorded_failure.is_none() {
            if let Some(code) =
                fields::recorded_status(call, &rec.payload).filter(|&c| verdict::is_gpu_fault(c))
            {
                recorded_failure = Some(RecordedFailure {
                    seq: rec.header.seq,
                    call: call.name.clone(),
                    code,
                });
            }
        }
        let Some(kind) = classified else {
            continue;
        };
        let fields = decode_fields(call, &rec.payload)
            .map_err(|e| anyhow!("event #{}: {e}", rec.header.seq))?;
        if fields::status_not_zero(&fields) {
            continue; // failed (calls without a status, like registrations, count as done)
        }
        match kind {
            Prescan::Alloc(extent) => ranges.push(fields::extent(&fields, extent)),
            Prescan::LateSource => {
                let s = <CopySource as hrr_calls::shapes::Shape>::read(&fields)
                    .map_err(|e| anyhow!("event #{}: {e}", rec.header.seq))?;
                if let Some(id) = s.h2d_blob {
                    late_sources.insert(s.copy, id);
                }
            }
            Prescan::IpcExport => {
                let s =
                    <hrr_calls::shapes::IpcMemHandle as hrr_calls::shapes::Shape>::read(&fields)
                        .map_err(|e| anyhow!("event #{}: {e}", rec.header.seq))?;
                exported.push(s.dptr);
            }
            Prescan::DeviceLookup => {
                if let Some(o) = fields::device_ordinal(&fields).filter(|o| !devices.contains(o)) {
                    devices.push(o);
                }
            }
            Prescan::ContextOpen => {
                if let Some((ctx, d)) = fields::context_opened(&fields) {
                    if !context_devices.contains(&d) {
                        context_devices.push(d);
                    }
                    if !contexts.iter().any(|&(c, _)| c == ctx) {
                        contexts.push((ctx, d));
                    }
                }
            }
            Prescan::HostRange => host_ranges.extend(fields::host_range(&fields)),
            Prescan::CodeLoad { as_library } => {
                let Some(id) = fields::code_object(&fields) else {
                    continue;
                };
                if !code
                    .iter()
                    .any(|c| c.id == id && c.as_library == as_library)
                {
                    let path = match find_code_object(dir, &id) {
                        Some((path, _)) => path,
                        None => journaled_code(dir, &id, &mut journaled)?.ok_or_else(|| {
                            anyhow!(
                                "code object {id} is referenced by event #{} but missing from {}",
                                rec.header.seq,
                                dir.join(hrr_archive::layout::CODE_OBJECTS_DIR).display(),
                            )
                        })?,
                    };
                    code.push(CodeObject {
                        id,
                        path,
                        as_library,
                    });
                }
            }
        }
    }
    // cudart looks every device up at start: a process that opened a context on one device
    // of two replays on that one
    if !context_devices.is_empty() {
        devices = context_devices;
    }
    devices.sort_unstable();
    Ok(Scan {
        code,
        journaled_code: journaled,
        ranges,
        recorded_failure,
        unreproducible: unrepro,
        devices,
        late_sources,
        runs: runs.map(Runs::finish).unwrap_or_default(),
        h2d_sources,
        exported,
        contexts,
        host_ranges,
    })
}

/// Are `call`'s fields (its status aside) those of the launch shape (every API's kernel
/// launches)?
pub(super) fn has_launch_shape(call: &CallDef) -> bool {
    let recorded = call.fields.iter().map(|f| f.name.as_str());
    let recorded = recorded.filter(|n| *n != fields::RESULT);
    recorded.eq(<Launch as hrr_calls::shapes::Shape>::FIELDS
        .iter()
        .map(|(n, _)| *n))
}

/// Why replay cannot reproduce a recorded call that changed state, from its table operation's
/// kind and shape (`None`: replay reissues it, or it changes nothing replay depends on). A call
/// the table does not know at all (an archive of a newer recorder) is named too.
fn unreproducible(family: Family, call: &hrr_archive::schema::CallDef) -> Option<&'static str> {
    let name = base_name(&call.name).0;
    let fields = call.fields.iter().map(|f| f.name.as_str());
    match table_facts(family, name, fields) {
        None => Some("not a call of this build's table: not reissued"),
        Some((hrr_calls::Kind::HostFunc, _)) => {
            Some("host functions run program code the archive does not hold")
        }
        Some(_) => None,
    }
}

/// Entry points capture passed through without recording them (the manifest's
/// `passthrough_calls`: name, calls) that may write device memory: replay never issues them,
/// so it names them as it names recorded calls it cannot reproduce.
pub(super) fn passed_through_writes(
    family: Family,
    passthrough: &std::collections::BTreeMap<String, u64>,
) -> Vec<Unreproducible> {
    passthrough
        .iter()
        .filter(|(name, &count)| count > 0 && family.passed_through_writes(name))
        .map(|(name, &count)| Unreproducible {
            call: name.clone(),
            first_seq: None,
            count,
            why: "capture passed it through without recording it (no table row); it writes device memory",
        })
        .collect()
}

/// Code object `id` of an unfinished capture `dir` that only its blob journal holds (a
/// synchronisation journaled it and the process ended before its file was written), written
/// into a private temporary folder (`tmp`, made on first use) for the backend to load by path;
/// `None` when the journal does not hold it either.
fn journaled_code(
    dir: &Path,
    id: &ObjectId,
    tmp: &mut Option<tempfile::TempDir>,
) -> Result<Option<PathBuf>> {
    let Some(bytes) = hrr_archive::journal::read(dir, id, true)? else {
        return Ok(None);
    };
    if tmp.is_none() {
        *tmp = Some(
            tempfile::Builder::new()
                .prefix("hrr-journaled-code")
                .tempdir()?,
        );
    }
    let path = tmp.as_ref().expect("made above").path().join(id.to_hex());
    std::fs::write(&path, bytes).map_err(|e| {
        anyhow!(
            "writing journaled code object {id} to {}: {e}",
            path.display()
        )
    })?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::backend::TableOp;
    use hrr_archive::schema::{CallClass, CallDef};

    fn call(name: &str, fields: &[&str]) -> CallDef {
        let mut v = serde_json::json!({"id": 1, "name": name, "fields": []});
        v["fields"] = fields
            .iter()
            .map(|f| serde_json::json!({"name": f, "type": "u64"}))
            .collect();
        let mut c: CallDef = serde_json::from_value(v).expect("a call definition");
        c.class = CallClass::Other;
        c
    }

    /// The fields of a table operation's shape (with `result`), as a schema names them.
    fn fields_of<O: TableOp>(op: O) -> Vec<&'static str> {
        std::iter::once("result")
            .chain(op.fields().iter().map(|(n, _)| *n))
            .collect()
    }

    #[test]
    fn the_prescan_names_state_changes_replay_cannot_reproduce() {
        use hrr_calls::cuda::Op;
        let cuda = |name: &str, op: Op| unreproducible(Family::Cuda, &call(name, &fields_of(op)));
        assert!(cuda("cuLaunchHostFunc", Op::LaunchHostFunc).is_some());
        // Replayed (host memory re-created at its recorded address), or changing nothing
        // replay depends on.
        assert!(cuda("cuMemHostRegister_v2", Op::MemHostRegister).is_none());
        assert!(cuda("cuMemHostGetDevicePointer_v2", Op::MemHostGetDevicePointer).is_none());
        assert!(cuda("cuMemAllocHost_v2", Op::MemAllocHost).is_none());
        assert!(cuda("cuLaunchKernel", Op::LaunchKernel).is_none());
        assert!(cuda("cuDeviceGetAttribute", Op::DeviceGetAttribute).is_none());
        // Unknown to the table (a newer recorder's call).
        assert!(unreproducible(Family::Cuda, &call("cuNewThing", &["result"])).is_some());
        // HIP replays its host registrations.
        use hrr_calls::hip::Op as H;
        let hip = |name: &str, op: H| unreproducible(Family::Hip, &call(name, &fields_of(op)));
        assert!(hip("hipHostRegister", H::HostRegister).is_none());
        assert!(hip("hipLaunchHostFunc", H::LaunchHostFunc).is_some());
    }
}
