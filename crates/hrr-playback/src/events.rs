//! `--events`: the whole recorded sequence, streamed (one record in memory at a time), every
//! field decoded by name from the schema record.
//!
//! # Text
//!
//! One line per event: `#<seq> T<thread id> +<ms since the first event> <call>(<field>=<value>, ...)`.
//! A record type the schema does not name prints as `type-0x<id> <n> bytes`; a payload that does
//! not match its schema entry prints `<call>(<undecodable: why>)`. A last line `# end: ...` says how
//! the stream ended: complete, or why not (the writer's "incomplete" marks, a torn tail, ...).
//!
//! # JSON Lines (`--events --json`)
//!
//! One object per event (`hrr_cli::json::EventJson`), keys in this order and stable:
//! `{"seq", "timestamp_ns", "thread_id", "type", "name", "fields": {name: value}}`; values as
//! `hrr_archive::schema::Value::to_json` gives them (integers as numbers, addresses, handles,
//! bytes and object ids as hex strings, absent objects as null). An unknown type adds
//! `"payload_bytes"`, an undecodable payload adds `"error"` (both with empty `fields`). Listing
//! several processes of a root adds `"pid"` first. The end of the stream (marks, completeness)
//! goes to stderr as `[HRR] ...` lines so that stdout holds events only.

use std::io::Write;
use std::path::Path;

use anyhow::Result;
use hrr_archive::layout;
use hrr_archive::reader::EventReader;
use hrr_cli::json::EventJson;
use serde_json::Map;

use crate::info::check_links;
use crate::output;

/// Stream the events of the capture in `dir`. `pid` (set when listing several processes of a
/// root) is added to every JSON object. Returns the number of events printed.
pub fn print(out: &mut dyn Write, dir: &Path, json: bool, pid: Option<u32>) -> Result<u64> {
    check_links(dir)?;
    let mut reader = EventReader::open(&layout::events_path(dir))?;
    let schema = reader.schema().cloned();
    let mut first_ts: Option<u64> = None;
    let mut n = 0u64;
    let mut line = String::new();
    for ev in reader.decoded(schema.as_ref()) {
        let ev = ev?;
        let h = ev.header;
        let t0 = *first_ts.get_or_insert(h.timestamp_ns);
        let call = ev.call;
        let decoded = ev.fields();
        n += 1;
        if json {
            let mut o = EventJson {
                pid,
                seq: h.seq,
                timestamp_ns: h.timestamp_ns,
                thread_id: h.thread_id,
                kind: h.kind,
                name: ev.name().to_string(),
                fields: Map::new(),
                payload_bytes: None,
                error: None,
            };
            match decoded {
                Some(Ok(f)) => {
                    for (k, v) in f {
                        o.fields.insert(k.to_string(), v.to_json());
                    }
                }
                Some(Err(why)) => o.error = Some(why.to_string()),
                None => o.payload_bytes = Some(ev.payload.len() as u64),
            }
            serde_json::to_writer(&mut *out, &o)?;
            out.write_all(b"\n")?;
            continue;
        }
        line.clear();
        use std::fmt::Write as _;
        let _ = write!(
            line,
            "#{} T{} {} ",
            h.seq,
            h.thread_id,
            output::signed_millis(h.timestamp_ns as i128 - t0 as i128)
        );
        match (call, decoded) {
            (Some(c), Some(Ok(f))) => {
                let _ = write!(line, "{}(", c.name);
                for (i, (k, v)) in f.iter().enumerate() {
                    if i > 0 {
                        line.push_str(", ");
                    }
                    let _ = write!(line, "{k}={v}");
                }
                line.push(')');
            }
            (Some(c), Some(Err(why))) => {
                let _ = write!(line, "{}(<undecodable: {why}>)", c.name);
            }
            _ => {
                let _ = write!(line, "{} {} bytes", ev.name(), ev.payload.len());
            }
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
    }
    let rec = reader.recovery();
    if json {
        out.flush()?;
        for why in rec.incompleteness() {
            eprintln!("[HRR] {}: incomplete: {why}", dir.display());
        }
    } else {
        if rec.complete() {
            writeln!(out, "# end: {} events, complete", rec.records)?;
        } else {
            writeln!(
                out,
                "# end: {} events, incomplete: {}",
                rec.records,
                rec.incompleteness().join("; ")
            )?;
        }
    }
    Ok(n)
}
