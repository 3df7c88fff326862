//! The device memory an extracted segment can reach and its snapshots: the ranges by reach
//! (`reach_ranges`), the synthetic H2D/D2H copies that carry a snapshot into the new archive
//! (`snapshot`, `copy_event`) and the calls they are written as (`synthetic_call`).

use super::*;

/// The plain H2D, D2H and synchronisation calls of a family.
pub(super) fn synthetic_names(family: Family) -> [&'static str; 3] {
    match family {
        Family::Cuda => ["cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuCtxSynchronize"],
        Family::Hip => ["hipMemcpyHtoD", "hipMemcpyDtoH", "hipDeviceSynchronize"],
    }
}

/// The schema's call `name`, checked to record shape `fields` (after its result).
pub(super) fn synthetic_call<'s>(
    schema: &'s Schema,
    name: &str,
    fields: &[(&str, WireType)],
) -> Result<&'s CallDef> {
    let call = schema.call_by_name(name).ok_or_else(|| {
        anyhow!("the capture's schema has no {name}: cannot write the snapshot as its calls")
    })?;
    let recorded = call
        .fields
        .iter()
        .filter(|f| f.ty != FieldType::Result)
        .map(|f| (f.name.as_str(), f.ty));
    if !recorded.eq(fields.iter().copied()) {
        bail!("the capture's {name} records other fields than this build writes");
    }
    Ok(call)
}

/// A synthetic event's payload: `result` (when the call has one), then the shape.
pub(super) fn payload(call: &CallDef, result: i32, s: &impl Shape) -> Vec<u8> {
    let mut p = PayloadBuilder::new();
    if call
        .fields
        .first()
        .is_some_and(|f| f.ty == FieldType::Result)
    {
        p.i32(result);
    }
    s.write(&mut p);
    p.into_bytes()
}

/// Sorted non-empty ranges, overlapping ones merged (adjacent ones stay apart: a copy must
/// not span two allocations).
pub(super) fn merged(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.retain(|&(s, l)| s != 0 && l != 0);
    v.sort();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (s, l) in v {
        match out.last_mut() {
            Some(last) if s < last.0.saturating_add(last.1) => {
                last.1 = last.1.max(s.saturating_add(l) - last.0)
            }
            _ => out.push((s, l)),
        }
    }
    out
}

/// The range of sorted `ranges` holding address `v`.
pub(super) fn containing(ranges: &[(u64, u64)], v: u64) -> Option<(u64, u64)> {
    let i = ranges.partition_point(|&(s, _)| s <= v);
    let &(s, l) = ranges.get(i.checked_sub(1)?)?;
    (v < s.saturating_add(l)).then_some((s, l))
}

pub(super) fn total(ranges: &[(u64, u64)]) -> u64 {
    ranges.iter().map(|r| r.1).sum()
}

pub(super) fn too_large(reach: Reach, bytes: u64, max: u64) -> anyhow::Error {
    anyhow!(
        "--extract: the segment reaches {bytes} bytes of device memory ({:.1} MiB, reach `{}`), more than --extract-max-bytes {max}",
        bytes as f64 / (1u64 << 20) as f64,
        reach.word()
    )
}

/// The device ranges a snapshot holds (recorded addresses), checked against the limit.
pub(super) fn reach_ranges(
    backend: &mut dyn Backend,
    req: &Request,
    seg: &Segment,
    globals: &[(u64, u64)],
) -> Result<Vec<(u64, u64)>> {
    let live = merged(backend.live_ranges());
    let chosen = match req.reach {
        Reach::All => live,
        Reach::Args => {
            let level0 = merged(
                seg.pointer_args
                    .iter()
                    .filter_map(|&p| containing(&live, p))
                    .collect(),
            );
            if total(&level0) > req.max_bytes {
                return Err(too_large(req.reach, total(&level0), req.max_bytes));
            }
            // One level of pointers stored in those allocations (8-byte aligned words).
            let mut found = level0.clone();
            for &(s, l) in &level0 {
                let mut off = 0;
                while off < l {
                    let n = (l - off).min(CHUNK);
                    let bytes = backend.read_device(s + off, n as usize)?;
                    for w in bytes.chunks_exact(8) {
                        let v = u64::from_le_bytes(w.try_into().expect("8 bytes"));
                        if let Some(r) = containing(&live, v) {
                            found.push(r);
                        }
                    }
                    off += n;
                }
            }
            merged(found)
        }
    };
    let all = merged(chosen.into_iter().chain(globals.iter().copied()).collect());
    if total(&all) > req.max_bytes {
        return Err(too_large(req.reach, total(&all), req.max_bytes));
    }
    Ok(all)
}

/// Read `ranges` in pieces of at most [`CHUNK`] bytes, each stored as a blob of `w` at once.
pub(super) fn snapshot(
    backend: &mut dyn Backend,
    w: &mut ProcessWriter,
    ranges: &[(u64, u64)],
) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    for &(s, l) in ranges {
        let mut off = 0;
        while off < l {
            let n = (l - off).min(CHUNK);
            let bytes = backend.read_device(s + off, n as usize)?;
            let blob = w.put_blob(&bytes)?;
            pieces.push(Piece {
                addr: s + off,
                len: n,
                blob,
            });
            off += n;
        }
    }
    Ok(pieces)
}

/// Code object `id` of the process capture `dir` and its kind: its file, else (a capture not
/// repaired yet) its record in the blob journal.
fn code_object(dir: &Path, id: &ObjectId) -> Result<(Vec<u8>, hrr_archive::CodeKind)> {
    if let Some((path, kind)) = find_code_object(dir, id) {
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        return Ok((bytes, kind));
    }
    hrr_archive::journal::read_code(dir, id)?
        .ok_or_else(|| anyhow!("code object {id} is missing (no file, no journal record)"))
}

/// Copy one source event into `w` verbatim, with the blobs and code objects it names (a
/// reference is rewritten should the store name the content otherwise).
pub(super) fn copy_event(
    w: &mut ProcessWriter,
    dir: &Path,
    call: &CallDef,
    rec: &hrr_archive::stream::Record,
) -> Result<u64> {
    let seq = rec.header.seq;
    let mut payload = rec.payload.clone();
    let refs = object_fields(call, &payload).map_err(|e| anyhow!("event #{seq}: {e}"))?;
    for r in refs {
        let Some(id) = r.id else { continue };
        let new = if r.ty == FieldType::Code {
            let (bytes, kind) = code_object(dir, &id).with_context(|| format!("event #{seq}"))?;
            w.put_code_object(&bytes, kind)?
        } else {
            let mut f = open_blob(dir, &id, None)
                .with_context(|| format!("event #{seq}: blob {id} of {}", dir.display()))?;
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes)
                .with_context(|| format!("event #{seq}: reading blob {id}"))?;
            w.put_blob(&bytes)?
        };
        if new != id {
            payload[r.offset..r.offset + 16].copy_from_slice(&new.0);
        }
    }
    let (k, t, ts) = (
        rec.header.kind,
        rec.header.thread_id,
        rec.header.timestamp_ns,
    );
    Ok(w.events().append_at(k, t, ts, &payload)?)
}
