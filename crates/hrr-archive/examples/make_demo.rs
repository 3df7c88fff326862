//! Writes the demo archive `examples/demo.hrr` (checked in) with the archive library's writer:
//! a parent process (pid 1180) that ended cleanly and a child (pid 1204) that crashed: no
//! trailer, a torn last record, an `active` marker naming a process that does not exist, and a
//! manifest last checkpointed before the crash. The output is byte-for-byte deterministic.
//!
//! ```text
//! cargo run -p hrr-archive --example make_demo [OUT_DIR]     # default: examples/demo.hrr
//! ```

use std::path::Path;

use hrr_archive::framing::{FILE_HEADER_LEN, TRAILER_LEN};
use hrr_archive::schema::{CallClass, FieldType, PayloadBuilder, Schema};
use hrr_archive::writer::{EventWriter, ProcessWriter, ACTIVE_MARKER, EVENTS_FILE};
use hrr_archive::{CodeKind, ObjectId};

/// Timestamp of the first event: 2023-11-14 22:13:20 UTC.
const T0: u64 = 1_700_000_000_000_000_000;
/// A pid above any kernel's pid_max, so the child's `active` marker names no live process.
const DEAD_PID: &str = "99999999";

const CU_INIT: u16 = 1;
const CU_DEVICE_GET: u16 = 2;
const CU_CTX_CREATE: u16 = 3;
const CU_MODULE_LOAD_DATA: u16 = 4;
const CU_MODULE_GET_FUNCTION: u16 = 5;
const CU_MEM_ALLOC: u16 = 6;
const CU_MEMCPY_HTOD: u16 = 7;
const CU_LAUNCH_KERNEL: u16 = 8;
const CU_MEMCPY_DTOH: u16 = 9;
const CU_MEM_FREE: u16 = 10;
const CU_CTX_SYNCHRONIZE: u16 = 11;

/// A small made-up schema in the manner of the CUDA driver API.
pub fn demo_schema() -> Schema {
    use hrr_archive::testkit::{call, cuda_schema};
    use FieldType::*;
    let other = CallClass::Other;
    cuda_schema(vec![
        call(
            CU_INIT,
            "cuInit",
            other,
            &[("result", Result), ("Flags", U32)],
        ),
        call(
            CU_DEVICE_GET,
            "cuDeviceGet",
            other,
            &[("result", Result), ("device", I32), ("ordinal", I32)],
        ),
        call(
            CU_CTX_CREATE,
            "cuCtxCreate_v2",
            other,
            &[
                ("result", Result),
                ("pctx", Handle),
                ("flags", U32),
                ("dev", I32),
            ],
        ),
        call(
            CU_MODULE_LOAD_DATA,
            "cuModuleLoadData",
            other,
            &[("result", Result), ("module", Handle), ("image", Code)],
        ),
        call(
            CU_MODULE_GET_FUNCTION,
            "cuModuleGetFunction",
            other,
            &[
                ("result", Result),
                ("hfunc", Handle),
                ("hmod", Handle),
                ("name", Str),
            ],
        ),
        call(
            CU_MEM_ALLOC,
            "cuMemAlloc_v2",
            other,
            &[("result", Result), ("dptr", Ptr), ("bytesize", U64)],
        ),
        call(
            CU_MEMCPY_HTOD,
            "cuMemcpyHtoD_v2",
            CallClass::H2d,
            &[
                ("result", Result),
                ("dstDevice", Ptr),
                ("ByteCount", U64),
                ("h2d_blob", Blob),
            ],
        ),
        call(
            CU_LAUNCH_KERNEL,
            "cuLaunchKernel",
            CallClass::Launch,
            &[
                ("result", Result),
                ("f", Handle),
                ("kernel", Str),
                ("module_image", Code),
                ("gridDimX", U32),
                ("gridDimY", U32),
                ("gridDimZ", U32),
                ("blockDimX", U32),
                ("blockDimY", U32),
                ("blockDimZ", U32),
                ("sharedMemBytes", U32),
                ("hStream", Handle),
                ("params", Bytes),
            ],
        ),
        call(
            CU_MEMCPY_DTOH,
            "cuMemcpyDtoH_v2",
            CallClass::D2h,
            &[
                ("result", Result),
                ("dstHost", Ptr),
                ("srcDevice", Ptr),
                ("ByteCount", U64),
                ("d2h_blob", Blob),
            ],
        ),
        call(
            CU_MEM_FREE,
            "cuMemFree_v2",
            other,
            &[("result", Result), ("dptr", Ptr)],
        ),
        call(
            CU_CTX_SYNCHRONIZE,
            "cuCtxSynchronize",
            other,
            &[("result", Result)],
        ),
    ])
}

fn floats(n: usize, f: impl Fn(usize) -> f32) -> Vec<u8> {
    (0..n).flat_map(|i| f(i).to_le_bytes()).collect()
}

/// A fake cubin: an ELF magic and deterministic filler.
fn fake_cubin(seed: u8, len: usize) -> Vec<u8> {
    let mut b = b"\x7fELF\x02\x01\x01\x33".to_vec();
    b.extend((0..len - 8).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)));
    b
}

/// Overwrite the timestamp of the record starting at `offset` (the writer stamps its own
/// records, schema and trailer, with the wall clock).
fn stamp(events: &Path, offset: usize, ts: u64) -> std::io::Result<()> {
    let mut b = std::fs::read(events)?;
    b[offset + 10..offset + 18].copy_from_slice(&ts.to_le_bytes());
    std::fs::write(events, b)
}

struct Clock(u64);
impl Clock {
    fn at(&mut self, micros: u64) -> u64 {
        self.0 = T0 + micros * 1000;
        self.0
    }
}

/// Write the demo archive into `out` (which must not exist).
pub fn write_demo(out: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let schema = demo_schema();
    let mut clock = Clock(T0);

    // Parent, pid 1180, threads 1180 and 1181: ends cleanly.
    let mut parent = ProcessWriter::create(out, 1180, 0, &schema)?;
    let code = parent.put_code_object(&fake_cubin(7, 1024), CodeKind::Cubin)?;
    let n = 1024usize;
    let a = parent.put_blob(&floats(n, |i| i as f32))?;
    let b = parent.put_blob(&floats(n, |i| 2.0 * i as f32))?;
    let c = parent.put_blob(&floats(n, |i| 3.0 * i as f32))?;
    let (da, db, dc) = (
        0x7f00_0020_0000u64,
        0x7f00_0020_1000u64,
        0x7f00_0020_2000u64,
    );
    {
        let ev = parent.events();
        let main = 1180;
        start_up(ev, &mut clock, main, 0x5555_0000_1000, [0, 120, 95_000])?;
        let handles = (0x5555_0000_2000, 0x5555_0000_3000);
        let at = [96_250, 96_300];
        load_function(ev, &mut clock, main, handles, code, "vector_add", at)?;
        for (i, d) in [da, db, dc].into_iter().enumerate() {
            let mut p = PayloadBuilder::new();
            p.i32(0).u64(d).u64(4 * n as u64);
            ev.append_at(
                CU_MEM_ALLOC,
                main,
                clock.at(96_400 + 10 * i as u64),
                p.as_bytes(),
            )?;
        }
        for (i, (d, blob)) in [(da, a), (db, b)].into_iter().enumerate() {
            let mut p = PayloadBuilder::new();
            p.i32(0).u64(d).u64(4 * n as u64).object(Some(blob));
            ev.append_at(
                CU_MEMCPY_HTOD,
                main,
                clock.at(96_500 + 40 * i as u64),
                p.as_bytes(),
            )?;
        }
        let worker = 1181;
        let mut params = Vec::new();
        for ptr in [da, db, dc] {
            params.extend_from_slice(&ptr.to_le_bytes());
        }
        params.extend_from_slice(&(n as u32).to_le_bytes());
        let p = launch(0x5555_0000_3000, "vector_add", code, 4, &params);
        ev.append_at(CU_LAUNCH_KERNEL, worker, clock.at(96_700), p.as_bytes())?;
        let mut p = PayloadBuilder::new();
        p.i32(0);
        ev.append_at(CU_CTX_SYNCHRONIZE, worker, clock.at(96_750), p.as_bytes())?;
        let p = dtoh(dc, 4 * n as u64, c);
        ev.append_at(CU_MEMCPY_DTOH, main, clock.at(96_800), p.as_bytes())?;
        for (i, d) in [da, db, dc].into_iter().enumerate() {
            let mut p = PayloadBuilder::new();
            p.i32(0).u64(d);
            ev.append_at(
                CU_MEM_FREE,
                main,
                clock.at(97_000 + 10 * i as u64),
                p.as_bytes(),
            )?;
        }
    }
    let parent_end = clock.0 + 1000;
    {
        let m = parent.manifest_mut();
        m.metadata = Some(serde_json::json!({
            "schema_version": 1,
            "driver_version": 13000,
            "device_count": 1,
            "devices": [{
                "ordinal": 0,
                "name": "NVIDIA H200",
                "compute_capability": "9.0",
                "total_global_mem": 150_754_820_096u64,
            }],
        }));
        m.passthrough_calls.insert("cuGetExportTable".into(), 2);
    }

    // Child, pid 1204: crashed. Its manifest was last checkpointed mid-run.
    let mut child = ProcessWriter::create(out, 1204, 1180, &schema)?;
    let child_code = child.put_code_object(&fake_cubin(42, 512), CodeKind::Cubin)?;
    let x = child.put_blob(&floats(256, |_| 0.5))?;
    let dx = 0x7f00_0040_0000u64;
    let ev = child.events();
    let main = 1204;
    start_up(
        ev,
        &mut clock,
        main,
        0x6666_0000_1000,
        [200_000, 200_100, 290_000],
    )?;
    let mut p = PayloadBuilder::new();
    p.i32(2).u64(0).u64(1 << 40); // CUDA_ERROR_OUT_OF_MEMORY
    ev.append_at(CU_MEM_ALLOC, main, clock.at(290_100), p.as_bytes())?;
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(dx).u64(1024);
    ev.append_at(CU_MEM_ALLOC, main, clock.at(290_200), p.as_bytes())?;
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(dx).u64(1024).object(Some(x));
    ev.append_at(CU_MEMCPY_HTOD, main, clock.at(290_300), p.as_bytes())?;
    {
        let m = child.manifest_mut();
        m.metadata = Some(serde_json::json!({
            "schema_version": 1,
            "driver_version": 13000,
            "devices": [{"ordinal": 0, "name": "NVIDIA H200", "compute_capability": "9.0"}],
        }));
        m.unreplayable_apis.insert(
            "cuIpcOpenMemHandle".into(),
            vec!["memory exported by another process cannot be replayed".into()],
        );
        m.passthrough_calls.insert("cuGetProcAddress_v2".into(), 41);
    }
    child.checkpoint_manifest()?;
    let ev = child.events();
    let handles = (0x6666_0000_2000, 0x6666_0000_3000);
    let at = [290_400, 290_450];
    load_function(ev, &mut clock, main, handles, child_code, "scale", at)?;
    let mut params = dx.to_le_bytes().to_vec();
    params.extend_from_slice(&2.0f32.to_le_bytes());
    let p = launch(0x6666_0000_3000, "scale", child_code, 1, &params);
    ev.append_at(CU_LAUNCH_KERNEL, main, clock.at(290_500), p.as_bytes())?;
    let p = dtoh(dx, 1024, x);
    ev.append_at(CU_MEMCPY_DTOH, main, clock.at(290_600), p.as_bytes())?;
    ev.flush(true)?;
    let child_dir = child.dir().to_path_buf();
    // The crash: no trailer, no final manifest, the marker left behind, the last record torn.
    std::mem::forget(child);
    let child_events = child_dir.join(EVENTS_FILE);
    hrr_archive::testkit::cut_tail(&child_events, 20)?;
    std::fs::write(child_dir.join(ACTIVE_MARKER), format!("{DEAD_PID}\n"))?;

    let parent_dir = parent.dir().to_path_buf();
    parent.finish()?;
    // Fixed stamps for the records the writer stamps itself.
    let parent_events = parent_dir.join(EVENTS_FILE);
    stamp(&parent_events, FILE_HEADER_LEN, T0)?;
    let plen = std::fs::metadata(&parent_events)?.len() as usize;
    stamp(&parent_events, plen - TRAILER_LEN, parent_end)?;
    stamp(&child_events, FILE_HEADER_LEN, T0 + 200_000_000)?;
    Ok(())
}

/// How a CUDA program starts, on `thread`: cuInit, cuDeviceGet (device 0), cuCtxCreate of
/// context `ctx`, at the microseconds `at`.
fn start_up(
    ev: &mut EventWriter,
    clock: &mut Clock,
    thread: u64,
    ctx: u64,
    at: [u64; 3],
) -> Result<(), Box<dyn std::error::Error>> {
    let mut p = PayloadBuilder::new();
    p.i32(0).u32(0);
    ev.append_at(CU_INIT, thread, clock.at(at[0]), p.as_bytes())?;
    let mut p = PayloadBuilder::new();
    p.i32(0).i32(0).i32(0);
    ev.append_at(CU_DEVICE_GET, thread, clock.at(at[1]), p.as_bytes())?;
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(ctx).u32(0).i32(0);
    ev.append_at(CU_CTX_CREATE, thread, clock.at(at[2]), p.as_bytes())?;
    Ok(())
}

/// How a CUDA program gets a kernel, on `thread`: cuModuleLoadData of `code` as the module
/// `handles.0`, then cuModuleGetFunction of `name` from it as the function `handles.1`, at the
/// microseconds `at`.
fn load_function(
    ev: &mut EventWriter,
    clock: &mut Clock,
    thread: u64,
    (module, func): (u64, u64),
    code: ObjectId,
    name: &str,
    at: [u64; 2],
) -> Result<(), Box<dyn std::error::Error>> {
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(module).object(Some(code));
    ev.append_at(CU_MODULE_LOAD_DATA, thread, clock.at(at[0]), p.as_bytes())?;
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(func).u64(module).str(name);
    ev.append_at(
        CU_MODULE_GET_FUNCTION,
        thread,
        clock.at(at[1]),
        p.as_bytes(),
    )?;
    Ok(())
}

/// A `cuLaunchKernel` payload: kernel `name` (function `func`, of `code`), `grid` blocks of 256
/// threads, no shared memory, the default stream, `params`.
fn launch(func: u64, name: &str, code: ObjectId, grid: u32, params: &[u8]) -> PayloadBuilder {
    let mut p = PayloadBuilder::new();
    p.i32(0).u64(func).str(name).object(Some(code));
    for dim in [grid, 1, 1, 256, 1, 1] {
        p.u32(dim);
    }
    p.u32(0).u64(0).bytes(params);
    p
}

/// A `cuMemcpyDtoH_v2` payload: `size` bytes from `src` into the demo's host buffer, `blob`.
fn dtoh(src: u64, size: u64, blob: ObjectId) -> PayloadBuilder {
    let mut p = PayloadBuilder::new();
    p.i32(0)
        .u64(0x5600_0000_0000)
        .u64(src)
        .u64(size)
        .object(Some(blob));
    p
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args_os()
        .nth(1)
        .map_or_else(|| "examples/demo.hrr".into(), std::path::PathBuf::from);
    if out.exists() {
        if !out.join("manifest.json").is_file() {
            return Err(format!(
                "{}: exists and is not an archive; not replacing it",
                out.display()
            )
            .into());
        }
        std::fs::remove_dir_all(&out)?;
    }
    write_demo(&out)?;
    println!("wrote {}", out.display());
    Ok(())
}
