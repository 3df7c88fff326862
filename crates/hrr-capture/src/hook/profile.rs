//! Where capture spends its time, per exported call: `HRR_CAPTURE_PROFILE=1` makes every wrapper
//! count its calls, the wall time between entering the wrapper and leaving it, and the part of
//! it spent in the real function; at exit the busiest calls are written to standard error as a
//! table (`hrr-capture: profile ...`) with each call's mean added time and bounds under which
//! half and nine tenths of its calls stayed (first calls that load or look up what later ones
//! find cached weigh on the mean, not on these), and how many calls added 16 µs or more and
//! how much (the added time less theirs is what a workload's steady state costs). Off (the
//! default), a wrapper pays one relaxed load.
//!
//! What it measures is the calling thread's cost of capture: the wrapper's own work (recording,
//! waiting for the ordering lock, hashing on the caller, tracker scans) is `total - driver`.
//! Work moved to background threads (blob hashing and writing) is not in it.

use crate::hot::HOT;
use std::cell::Cell;
use std::ffi::CStr;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::time::Instant;

/// Exports per table the profile can tell apart (more than either table has).
const MAX_EXPORTS: usize = 1024;
/// Tables (CUDA, HIP).
const MAX_TABLES: usize = 2;

const UNKNOWN: u8 = 0;
const OFF: u8 = 1;
const ON: u8 = 2;
// `HOT.profile`: UNKNOWN at start
const _: () = assert!(UNKNOWN == 0);

/// Per table: its `NAMES` (registered on first use) and per export calls, total and driver ns.
struct Table {
    names: AtomicPtr<&'static CStr>,
    len: AtomicU64,
    calls: [AtomicU64; MAX_EXPORTS],
    total_ns: [AtomicU64; MAX_EXPORTS],
    driver_ns: [AtomicU64; MAX_EXPORTS],
    /// Per export, calls by added time: bucket `b` holds those under `FIRST_BUCKET_NS << b`.
    added_hist: [[AtomicU64; BUCKETS]; MAX_EXPORTS],
    /// Per export, calls that added [`SLOW_NS`] or more, and the time they added.
    slow_calls: [AtomicU64; MAX_EXPORTS],
    slow_ns: [AtomicU64; MAX_EXPORTS],
}

/// Buckets of the added-time histogram, and the upper bound of the first (ns); the last
/// bucket takes everything longer.
const BUCKETS: usize = 16;
const FIRST_BUCKET_NS: u64 = 250;
/// A call adding this much or more is counted apart ("slow"): first calls that load or look up
/// what later ones find cached, waits for a lock or for the disk. What a workload's steady state
/// costs is the added time less theirs.
const SLOW_NS: u64 = 16_000;

#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const ZEROS: [AtomicU64; BUCKETS] = [ZERO; BUCKETS];
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Table = Table {
    names: AtomicPtr::new(std::ptr::null_mut()),
    len: AtomicU64::new(0),
    calls: [ZERO; MAX_EXPORTS],
    total_ns: [ZERO; MAX_EXPORTS],
    driver_ns: [ZERO; MAX_EXPORTS],
    added_hist: [ZEROS; MAX_EXPORTS],
    slow_calls: [ZERO; MAX_EXPORTS],
    slow_ns: [ZERO; MAX_EXPORTS],
};
static TABLES: [Table; MAX_TABLES] = [EMPTY; MAX_TABLES];

thread_local! {
    /// Driver time of the wrapper running on this thread, so far.
    static DRIVER_NS: Cell<u64> = const { Cell::new(0) };
}

/// Is profiling on (`HRR_CAPTURE_PROFILE` set to anything but `0` or empty)?
#[inline(always)]
pub fn enabled() -> bool {
    match HOT.profile.load(Ordering::Relaxed) {
        ON => true,
        OFF => false,
        _ => decide(),
    }
}

#[cold]
fn decide() -> bool {
    let on = flag("HRR_CAPTURE_PROFILE").unwrap_or(false);
    HOT.profile
        .store(if on { ON } else { OFF }, Ordering::Relaxed);
    on
}

/// A wrapper starts its profiled part: the time, when profiling is on.
#[inline(always)]
pub fn start() -> Option<Instant> {
    if !enabled() {
        return None;
    }
    DRIVER_NS.with(|d| d.set(0));
    Some(Instant::now())
}

/// Make the real call `f`, adding its time to the running wrapper's driver time when on.
#[inline(always)]
pub fn driver<R>(f: impl FnOnce() -> R) -> R {
    if HOT.profile.load(Ordering::Relaxed) != ON {
        return f();
    }
    let t = Instant::now();
    let r = f();
    let ns = t.elapsed().as_nanos() as u64;
    DRIVER_NS.with(|d| d.set(d.get() + ns));
    r
}

/// The wrapper of export `index` of the table `names` ends, having started at `t0`.
#[inline(always)]
pub fn end(names: &'static [&'static CStr], index: usize, t0: Option<Instant>) {
    if let Some(t0) = t0 {
        add(names, index, t0.elapsed().as_nanos() as u64);
    }
}

#[cold]
fn add(names: &'static [&'static CStr], index: usize, total: u64) {
    let Some(table) = table_of(names) else { return };
    if index >= MAX_EXPORTS {
        return;
    }
    let driver = DRIVER_NS.with(|d| d.get());
    table.calls[index].fetch_add(1, Ordering::Relaxed);
    table.total_ns[index].fetch_add(total, Ordering::Relaxed);
    table.driver_ns[index].fetch_add(driver.min(total), Ordering::Relaxed);
    let added = total - driver.min(total);
    table.added_hist[index][bucket(added)].fetch_add(1, Ordering::Relaxed);
    if added >= SLOW_NS {
        table.slow_calls[index].fetch_add(1, Ordering::Relaxed);
        table.slow_ns[index].fetch_add(added, Ordering::Relaxed);
    }
}

/// The histogram bucket of an added time.
fn bucket(ns: u64) -> usize {
    let mut b = 0;
    while b + 1 < BUCKETS && ns >= FIRST_BUCKET_NS << b {
        b += 1;
    }
    b
}

/// The added time under which `q` (0..1) of the calls in histogram `hist` stayed (the upper
/// bound of the bucket the quantile falls in; the last bucket's lower bound), ns.
fn quantile(hist: &[u64; BUCKETS], q: f64) -> u64 {
    let n: u64 = hist.iter().sum();
    let want = ((n as f64 * q).ceil() as u64).max(1);
    let mut seen = 0;
    for (b, &c) in hist.iter().enumerate() {
        seen += c;
        if seen >= want {
            return FIRST_BUCKET_NS << b.min(BUCKETS - 2);
        }
    }
    FIRST_BUCKET_NS << (BUCKETS - 2)
}

/// The slot of the table `names`, registering it on first use.
fn table_of(names: &'static [&'static CStr]) -> Option<&'static Table> {
    let want = names.as_ptr() as *mut &'static CStr;
    for t in &TABLES {
        let have = t.names.load(Ordering::Acquire);
        if have == want {
            return Some(t);
        }
        if have.is_null()
            && t.names
                .compare_exchange(
                    std::ptr::null_mut(),
                    want,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                )
                .is_ok()
        {
            t.len.store(names.len() as u64, Ordering::Release);
            return Some(t);
        }
        if t.names.load(Ordering::Acquire) == want {
            return Some(t);
        }
    }
    None
}

/// One export's figures.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Exported name.
    pub name: String,
    /// Calls through the wrapper while recording.
    pub calls: u64,
    /// Wall time in the wrapper, ns.
    pub total_ns: u64,
    /// Of which in the real function, ns.
    pub driver_ns: u64,
    /// Half of the calls added less than this, ns (a power-of-two bound).
    pub added_p50_ns: u64,
    /// Nine calls in ten added less than this, ns.
    pub added_p90_ns: u64,
    /// Calls that added [`SLOW_NS`] or more.
    pub slow_calls: u64,
    /// The time they added, ns.
    pub slow_ns: u64,
}

impl Row {
    /// Time capture added, ns.
    pub fn added_ns(&self) -> u64 {
        self.total_ns.saturating_sub(self.driver_ns)
    }
}

/// Every export called so far, most added time first.
pub fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    for t in &TABLES {
        let p = t.names.load(Ordering::Acquire);
        if p.is_null() {
            continue;
        }
        let len = (t.len.load(Ordering::Acquire) as usize).min(MAX_EXPORTS);
        // SAFETY: `p` and `len` were stored together from a `&'static [&'static CStr]`.
        let names = unsafe { std::slice::from_raw_parts(p as *const &'static CStr, len) };
        for (i, name) in names.iter().enumerate() {
            let calls = t.calls[i].load(Ordering::Relaxed);
            if calls > 0 {
                let hist = std::array::from_fn(|b| t.added_hist[i][b].load(Ordering::Relaxed));
                rows.push(Row {
                    name: name.to_string_lossy().into_owned(),
                    calls,
                    total_ns: t.total_ns[i].load(Ordering::Relaxed),
                    driver_ns: t.driver_ns[i].load(Ordering::Relaxed),
                    added_p50_ns: quantile(&hist, 0.5),
                    added_p90_ns: quantile(&hist, 0.9),
                    slow_calls: t.slow_calls[i].load(Ordering::Relaxed),
                    slow_ns: t.slow_ns[i].load(Ordering::Relaxed),
                });
            }
        }
    }
    rows.sort_by(|a, b| b.added_ns().cmp(&a.added_ns()).then(a.name.cmp(&b.name)));
    rows
}

/// The table written at exit: the `top` calls by time capture added, then the total.
pub fn render(rows: &[Row], top: usize) -> String {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut s = format!(
        "hrr-capture: profile of process {} (calling threads' time; added = wrapper - driver; \
         slow: calls adding {} us or more)\n",
        std::process::id(),
        SLOW_NS / 1000
    );
    let _ = writeln!(
        s,
        "  {:<34} {:>10} {:>11} {:>11} {:>11} {:>9} {:>9} {:>9} {:>8} {:>9}",
        "call",
        "calls",
        "added ms",
        "driver ms",
        "total ms",
        "us/call",
        "p50 <us",
        "p90 <us",
        "slow",
        "slow ms"
    );
    for r in rows.iter().take(top) {
        let _ = writeln!(
            s,
            "  {:<34} {:>10} {:>11.2} {:>11.2} {:>11.2} {:>9.2} {:>9} {:>9} {:>8} {:>9.2}",
            r.name,
            r.calls,
            ms(r.added_ns()),
            ms(r.driver_ns),
            ms(r.total_ns),
            r.added_ns() as f64 / 1e3 / r.calls as f64,
            r.added_p50_ns as f64 / 1e3,
            r.added_p90_ns as f64 / 1e3,
            r.slow_calls,
            ms(r.slow_ns)
        );
    }
    let calls: u64 = rows.iter().map(|r| r.calls).sum();
    let added: u64 = rows.iter().map(Row::added_ns).sum();
    let driver: u64 = rows.iter().map(|r| r.driver_ns).sum();
    let _ = writeln!(
        s,
        "  {:<34} {:>10} {:>11.2} {:>11.2}",
        format!("all {} calls", rows.len()),
        calls,
        ms(added),
        ms(driver)
    );
    s
}

/// Capture's own work timed apart with profiling on: how many and how long, all inside the
/// added time of the rows whose calls did it.
pub struct Work {
    what: &'static str,
    calls: AtomicU64,
    ns: AtomicU64,
}

/// Argument layouts asked of the driver (`api::cuda::state::query_layout`, at a function's
/// first launch: cudaTensorCoreGemm's, inside the sample's timed region, 11-18 us on an H100).
pub static LAYOUT_QUERIES: Work = Work::new("argument layouts asked of the driver");

/// Async D2H results recorded (`hook::common::record_result`: their content address, a
/// fingerprint when the same buffer held the same bytes before, and their store), on
/// whichever thread records them.
pub static RESULTS_RECORDED: Work = Work::new("async D2H results recorded");

/// Async H2D sources read after their call returned (`hook::common::source_later`).
pub static SOURCES_RECORDED: Work = Work::new("async H2D sources recorded");

/// Content addresses (BLAKE3) of buffers about to be stored (`crate::fingerprint::blob_id`),
/// and the fingerprints that spare them when a buffer holds what it held before.
pub static BLOB_HASHES: Work = Work::new("content addresses hashed");
pub static BLOB_FINGERPRINTS: Work = Work::new("buffers fingerprinted as seen before");

/// Synchronisations' waits for the results their completion made visible
/// (`hook::results::wait_recorded`, records made on the waiting thread included).
pub static RESULT_WAITS: Work = Work::new("synchronisations waiting for results");

/// The tracker of host-visible memory (`api::cuda::hostmem`) reading regions for host writes
/// before device work that may reach them, and for device writes after a synchronisation.
pub static HOSTMEM_BEFORE_WORK: Work = Work::new("host-visible memory read before device work");
pub static HOSTMEM_AFTER_SYNC: Work = Work::new("host-visible memory read after synchronisations");

/// Argument layouts read from the code (`api::cuda::param_info`) without asking the driver.
pub static LAYOUTS_FROM_CODE: AtomicU64 = AtomicU64::new(0);
/// With [`check_layouts`]: layouts read from the code and checked against the driver's.
pub static LAYOUTS_CHECKED: AtomicU64 = AtomicU64::new(0);
/// Of those, the ones that differed (each reported on standard error when found).
pub static LAYOUTS_DIFFERING: AtomicU64 = AtomicU64::new(0);

/// Is `HRR_CAPTURE_CHECK_LAYOUTS` set (to anything but `0` or empty)? Then every layout read
/// from the code is checked against the driver's answer, which is the one used, and the count
/// is written to standard error at exit.
pub fn check_layouts() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| flag("HRR_CAPTURE_CHECK_LAYOUTS").unwrap_or(false))
}

/// Are argument layouts read from the code (`api::cuda::param_info`)? `HRR_CAPTURE_LAYOUTS_FROM_CODE`
/// (`1` or `0`) decides, else [`LAYOUTS_FROM_CODE_DEFAULT`]; [`check_layouts`] reads them too.
pub fn layouts_from_code() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        flag("HRR_CAPTURE_LAYOUTS_FROM_CODE").unwrap_or(LAYOUTS_FROM_CODE_DEFAULT)
            || check_layouts()
    })
}

/// Whether layouts are read from the code unless `HRR_CAPTURE_LAYOUTS_FROM_CODE` says.
pub const LAYOUTS_FROM_CODE_DEFAULT: bool = true;

/// Are large async D2H results digested by a kernel enqueued behind their copy
/// (`api::cuda::digest::behind`)? `HRR_CAPTURE_ASYNC_DIGESTS` (`1` or `0`) decides, else
/// [`ASYNC_DIGESTS_DEFAULT`].
pub fn async_digests() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| flag("HRR_CAPTURE_ASYNC_DIGESTS").unwrap_or(ASYNC_DIGESTS_DEFAULT))
}

/// On since the thirteenth session's GPU runs (H100): the 104 CUDA samples replay as before
/// (103 PASS, systemWideAtomics the known MISMATCH) and every `scripts/gpu-e2e.sh` workload
/// PASSes with it; simpleMultiCopy's serialized loop keeps 0.89 of its plain throughput against
/// 0.53 with the host reading each result. `HRR_CAPTURE_ASYNC_DIGESTS=0` turns it off.
pub const ASYNC_DIGESTS_DEFAULT: bool = true;

/// Does a device allocation large enough for a digested result have the digest kernels loaded
/// at its context's next event record (`api::cuda::digest::prepare`)?
/// `HRR_CAPTURE_DIGEST_PRELOAD` (`1` or `0`) decides, else on; off, they load at the context's
/// first large result. A diagnostic: on an H100 (sixteenth session, 3 pairs, captured / plain)
/// off kept tf32TensorCoreGemm at 0.989 against 0.930 on, but loading behind the first async
/// download cost simpleStreams' memcopy 0.318 (0.925 on), simpleMultiCopy's pinned D2H 0.090
/// (0.882) and asyncAPI's overlap loop all its iterations (0.789).
pub fn digest_preload() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| flag("HRR_CAPTURE_DIGEST_PRELOAD").unwrap_or(true))
}

/// The digest kernels' PTX from the file `HRR_CAPTURE_DIGEST_PTX` names instead of the one built
/// in (NUL-terminated; `None` when unset or unreadable, with a notice). A diagnostic: a PTX
/// regenerated from an edited `gpu/digest.cu` on a GPU machine (`scripts/gen-digest-ptx.sh`)
/// tried without rebuilding capture. Capture checks the kernels' first chunk against the
/// host's at first use as it does the built-in ones, so a wrong file costs speed, not results.
pub fn digest_ptx() -> Option<&'static [u8]> {
    static PTX: std::sync::OnceLock<Option<Vec<u8>>> = std::sync::OnceLock::new();
    PTX.get_or_init(|| {
        let path = std::env::var_os("HRR_CAPTURE_DIGEST_PTX")?;
        let why = match std::fs::read(&path) {
            Ok(mut text) if !text.contains(&0) => {
                text.push(0);
                return Some(text);
            }
            Ok(_) => "the file holds a NUL byte, not PTX text".to_string(),
            Err(e) => e.to_string(),
        };
        let path = std::path::Path::new(&path).display();
        crate::recorder::notice(&format!(
            "HRR_CAPTURE_DIGEST_PTX: {path}: {why}; the built-in kernels are used"
        ));
        None
    })
    .as_deref()
}

/// Does the first work after a synchronisation of the whole device read every region of
/// host-visible memory (`HRR_CAPTURE_HOSTMEM_READ_ALL=1`), not only those device code was
/// handed a pointer into (`api::cuda::hostmem`)?
pub fn hostmem_read_all() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| flag("HRR_CAPTURE_HOSTMEM_READ_ALL").unwrap_or(false))
}

/// A boolean variable: `None` unset or empty, `false` for `0`, else `true`.
fn flag(name: &str) -> Option<bool> {
    let v = std::env::var_os(name).filter(|v| !v.is_empty())?;
    Some(v != "0")
}

impl Work {
    const fn new(what: &'static str) -> Work {
        Work {
            what,
            calls: AtomicU64::new(0),
            ns: AtomicU64::new(0),
        }
    }

    /// `f()`, timed when profiling is on.
    pub fn time<R>(&self, f: impl FnOnce() -> R) -> R {
        if !enabled() {
            return f();
        }
        let t = Instant::now();
        let r = f();
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.ns
            .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    /// Its line of the report (`None`: none done).
    fn line(&self) -> Option<String> {
        let n = self.calls.load(Ordering::Relaxed);
        let us = self.ns.load(Ordering::Relaxed) as f64 / 1e3;
        (n > 0).then(|| format!("  capture's own: {}: {n} ({us:.1} us)\n", self.what))
    }
}

/// At exit, with profiling on: write the table to standard error (and, with
/// [`check_layouts`], the check's count).
pub fn report() {
    static REPORTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if REPORTED.swap(true, Ordering::AcqRel) {
        return;
    }
    if HOT.profile.load(Ordering::Relaxed) == ON {
        let rows = rows();
        if !rows.is_empty() {
            eprint!("{}", render(&rows, 25));
        }
        for work in [
            &LAYOUT_QUERIES,
            &RESULTS_RECORDED,
            &SOURCES_RECORDED,
            &BLOB_HASHES,
            &BLOB_FINGERPRINTS,
            &RESULT_WAITS,
            &HOSTMEM_BEFORE_WORK,
            &HOSTMEM_AFTER_SYNC,
        ] {
            if let Some(l) = work.line() {
                eprint!("{l}");
            }
        }
        let from_code = LAYOUTS_FROM_CODE.load(Ordering::Relaxed);
        if from_code > 0 {
            eprintln!("  capture's own: argument layouts read from the code: {from_code}");
        }
    }
    if check_layouts() {
        eprintln!(
            "hrr-capture: argument layouts read from the code and checked against the driver: {}, differing: {}",
            LAYOUTS_CHECKED.load(Ordering::Relaxed),
            LAYOUTS_DIFFERING.load(Ordering::Relaxed)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_come_from_the_histogram_buckets() {
        assert_eq!(
            (bucket(0), bucket(249), bucket(250), bucket(999)),
            (0, 0, 1, 2)
        );
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        let mut h = [0u64; BUCKETS];
        h[1] = 8; // 250..500 ns
        h[5] = 2; // 4..8 us
        assert_eq!(quantile(&h, 0.5), 500);
        assert_eq!(quantile(&h, 0.8), 500);
        assert_eq!(quantile(&h, 0.9), 8000);
    }

    /// Calls adding 16 us or more are counted apart with the time they added; the others only
    /// in the histogram.
    #[test]
    fn slow_calls_are_counted_with_their_added_time() {
        static NAMES: [&CStr; 2] = [c"hrrTestFast", c"hrrTestSlowProfiled"];
        for total in [1_000, 2_000, 40_000, 100_000] {
            DRIVER_NS.with(|d| d.set(500));
            add(&NAMES, 1, total);
        }
        let row = rows()
            .into_iter()
            .find(|r| r.name == "hrrTestSlowProfiled")
            .expect("the row");
        assert_eq!((row.calls, row.slow_calls), (4, 2));
        assert_eq!(row.slow_ns, 39_500 + 99_500);
        assert_eq!(row.added_ns(), 143_000 - 4 * 500);
    }

    #[test]
    fn the_table_sorts_by_added_time_and_sums_every_row() {
        let row = |name: &str, calls, total_ns, driver_ns| Row {
            name: name.into(),
            calls,
            total_ns,
            driver_ns,
            added_p50_ns: 500,
            added_p90_ns: 2000,
            slow_calls: calls / 5,
            slow_ns: calls / 5 * 100_000,
        };
        let mut rows = vec![
            row("cuLaunchKernel", 1000, 5_000_000, 3_000_000),
            row("cuMemcpyHtoD_v2", 10, 9_000_000, 1_000_000),
        ];
        rows.sort_by_key(|r| std::cmp::Reverse(r.added_ns()));
        let t = render(&rows, 1);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[2].trim_start().starts_with("cuMemcpyHtoD_v2"), "{t}");
        assert!(lines[2].contains("8.00"), "{t}");
        // 2 of the 10 calls slow, adding 0.20 ms
        assert!(
            lines[2].ends_with("0.5         2        2      0.20"),
            "{t}"
        );
        assert!(
            !t.contains("cuLaunchKernel "),
            "top 1 leaves the launch out: {t}"
        );
        assert!(
            lines[3].contains("all 2 calls") && lines[3].contains("1010"),
            "{t}"
        );
        assert!(
            lines[3].contains("10.00") && lines[3].contains("4.00"),
            "{t}"
        );
    }
}
