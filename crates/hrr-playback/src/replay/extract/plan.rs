//! Which events an extraction keeps: the segment resolved from its spec (a launch by name and
//! index, or a range of events), and the set-up events before it (`plan_setup`: initialisation,
//! allocations, code loads, look-ups; for one launch only the code objects it runs).

use super::*;

/// Find the segment `spec` names in the capture.
pub(super) fn resolve_segment(dir: &Path, schema: &Schema, spec: &Spec) -> Result<Segment> {
    let mut seg: Option<Segment> = None;
    let mut last_seq = None;
    let mut matched = 0u64;
    for rec in EventReader::open(&dir.join(EVENTS_FILE))? {
        let rec = rec?;
        let seq = rec.header.seq;
        last_seq = Some(seq);
        let call = schema.call(rec.header.kind);
        let launch = match call {
            Some(c) if c.class == CallClass::Launch => decode_fields(c, &rec.payload)
                .ok()
                .and_then(|f| Launch::read(&f).ok()),
            _ => None,
        };
        let start = match spec {
            Spec::Event(n) => *n == seq,
            Spec::Range(a, _) => *a == seq,
            Spec::Kernel(name, k) => {
                let hit = launch.as_ref().is_some_and(|l| names(name, &l.kernel));
                if hit {
                    matched += 1;
                }
                hit && matched == *k
            }
        };
        if start {
            if !matches!(spec, Spec::Range(..))
                && launch.as_ref().is_some_and(|l| l.in_capture != 0)
            {
                bail!(
                    "--extract: launch #{seq} was captured into a CUDA graph (it ran when the graph did); \
                     extract a range A..B from the capture's start to the graph's launch instead"
                );
            }
            if let Spec::Event(_) = spec {
                if launch.is_none() {
                    let what = call.map_or("an unknown record".to_string(), |c| c.name.clone());
                    bail!(
                        "--extract {seq}: event #{seq} is {what}, not a kernel launch (A..B extracts a range of events)"
                    );
                }
            }
            seg = Some(Segment {
                first: seq,
                last: match spec {
                    Spec::Range(_, b) => *b,
                    _ => seq,
                },
                kernels: Vec::new(),
                pointer_args: Vec::new(),
                code: (!matches!(spec, Spec::Range(..))).then(HashSet::new),
                thread: rec.header.thread_id,
                ts: rec.header.timestamp_ns,
            });
        }
        if let (Some(s), Some(l)) = (seg.as_mut(), launch.as_ref()) {
            if (s.first..=s.last).contains(&seq) {
                s.kernels.push(demangle(&l.kernel));
                match l.code {
                    Some(id) => {
                        if let Some(c) = s.code.as_mut() {
                            c.insert(id);
                        }
                    }
                    None => s.code = None,
                }
                for (&off, &size) in l.arg_offsets.iter().zip(&l.arg_sizes) {
                    let o = off as usize;
                    if let (8, Some(b)) = (size, l.args.get(o..o + 8)) {
                        s.pointer_args
                            .push(u64::from_le_bytes(b.try_into().expect("8 bytes")));
                    }
                }
            }
        }
        if seg.as_ref().is_some_and(|s| seq >= s.last) {
            break;
        }
    }
    let Some(seg) = seg else {
        return Err(match spec {
            Spec::Kernel(name, k) => anyhow!(
                "--extract {name}#{k}: the capture has {matched} launch(es) of a kernel named `{name}`"
            ),
            Spec::Event(n) | Spec::Range(n, _) => anyhow!(
                "--extract: the capture has no event #{n} (its last is #{})",
                last_seq.map_or("none".into(), |s| s.to_string())
            ),
        });
    };
    if last_seq.is_some_and(|l| l < seg.last) {
        bail!(
            "--extract {}..{}: the capture ends at event #{}",
            seg.first,
            seg.last,
            last_seq.unwrap_or(0)
        );
    }
    Ok(seg)
}

/// What an event's call does, and its record shape (`None`: not a call of the table).
pub(super) fn kind_of(
    family: Family,
    name: &str,
    fields: &[(&str, Value)],
) -> Option<(Kind, Shaped)> {
    fn of<O: TableOp>(name: &str, fields: &[(&str, Value)]) -> Option<(Kind, Shaped)> {
        let op = resolve::<O>(base_name(name).0, fields.iter().map(|(n, _)| *n))?;
        let shaped = match op.fields() {
            f if f == Global::FIELDS => Shaped::Global,
            f if f == CopyToSymbol::FIELDS => Shaped::ToSymbol,
            _ => Shaped::Other,
        };
        Some((op.kind(), shaped))
    }
    match family {
        Family::Cuda => of::<hrr_calls::cuda::Op>(name, fields),
        Family::Hip => of::<hrr_calls::hip::Op>(name, fields),
    }
}

/// The record shapes extraction tells apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shaped {
    /// A module variable looked up (`Global`): its range is snapshotted.
    Global,
    /// A copy to a variable by name (HIP's `hipMemcpyToSymbol`, `CopyToSymbol`): kept as set-up,
    /// since the variable's address is not known to the snapshot.
    ToSymbol,
    /// Anything else.
    Other,
}

/// The set-up a small archive keeps from before its segment. Host writes into host-visible
/// (mapped, managed) memory are kept too: that memory is not in the snapshot, so its contents
/// are rebuilt from what the host wrote (device writes to it before the segment are lost).
pub(super) fn is_setup((kind, shaped): (Kind, Shaped)) -> bool {
    use Kind::*;
    shaped == Shaped::ToSymbol
        || matches!(
            kind,
            Init | Context
                | Alloc
                | Reserve
                | Managed
                | Free
                | HostMem
                | Vmm
                | Load
                | Unload
                | Lookup
                | Attribute
                | Register
                | Stream
                | Event
                | Array
                | Pool
                | HostWrite
        )
}

/// The set-up events before the segment the small archive keeps (by sequence number): every
/// set-up call, less the code loads (and registrations) of code objects the segment's launches
/// do not run, and the look-ups, attributes, registrations and unloads of what those loaded
/// (an event naming a handle a dropped load or look-up produced is dropped with it).
pub(super) fn plan_setup(
    dir: &Path,
    schema: &Schema,
    family: Family,
    seg: &Segment,
) -> Result<HashSet<u64>> {
    let mut keep = HashSet::new();
    let mut dropped: HashSet<u64> = HashSet::new();
    let first = seg.first;
    for rec in calls_until(dir, schema, |seq| seq >= first)? {
        let (rec, call) = rec?;
        let seq = rec.header.seq;
        let fields = decode_fields(call, &rec.payload)
            .map_err(|e| anyhow!("event #{seq} ({}): {e}", call.name))?;
        let Some(ks) = kind_of(family, &call.name, &fields).filter(|&k| is_setup(k)) else {
            continue;
        };
        let handles: Vec<u64> = fields
            .iter()
            .filter_map(|(_, v)| match v {
                Value::Handle(h) if *h != 0 => Some(*h),
                _ => None,
            })
            .collect();
        let loads = matches!(ks.0, Kind::Load | Kind::Register);
        if let (true, Some(id), Some(needed)) = (loads, fields::code_object(&fields), &seg.code) {
            if needed.contains(&id) {
                for h in &handles {
                    dropped.remove(h); // a handle value reused by a load that stays
                }
                keep.insert(seq);
            } else {
                dropped.extend(handles);
            }
            continue;
        }
        if handles.iter().any(|h| dropped.contains(h)) {
            if matches!(ks.0, Kind::Lookup | Kind::Register) {
                dropped.extend(handles); // derived from a dropped load
            }
            continue;
        }
        keep.insert(seq);
    }
    Ok(keep)
}
