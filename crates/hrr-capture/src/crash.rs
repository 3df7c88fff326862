//! What a captured program's fatal signal says on stderr, so that whoever reads it can tell a
//! crash of the program from one of capture's: the signal, the address it faulted at, and the
//! stack it arrived on (glibc's `backtrace`), each frame written as the file mapped there and
//! its offset in it (`libhrr_capture.so+0x1a2b3 (0x7f…)`, which `addr2line -f -e
//! libhrr_capture.so 0x1a2b3` names), from `/proc/self/maps` read in the handler; and whether
//! capture's code is on that stack (the frames of this report and of the signal handler
//! excepted).
//!
//! Written from the signal handler ([`crate::signals`]), so async-signal-safe as far as glibc
//! allows: no allocation and no lock here (the text is formatted into a buffer on the stack and
//! written with `write(2)`); `backtrace` is called once when the handlers are installed
//! ([`prepare`]), which loads the unwinder it needs before any signal can arrive, and an
//! `alarm` ends a process whose report hangs (a crash inside the dynamic loader holding a lock
//! the unwinder takes). Capture's own address range is found at install too (from
//! `/proc/self/maps`).

use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Capture's library's mapped range (start, end; 0, 0 until [`prepare`] found it).
static OWN: [AtomicUsize; 2] = [AtomicUsize::new(0), AtomicUsize::new(0)];
/// Frames reported at most.
const FRAMES: usize = 32;
/// Seconds a report may take before the process is ended (`alarm`).
const HANG_LIMIT_S: u32 = 5;

extern "C" {
    /// glibc's `backtrace(3)`.
    fn backtrace(buffer: *mut *mut c_void, size: c_int) -> c_int;
}

/// Find capture's own address range and load the unwinder (outside any signal handler).
pub fn prepare() {
    let mut frames = [std::ptr::null_mut(); 2];
    // SAFETY: a buffer of two frames.
    unsafe { backtrace(frames.as_mut_ptr(), 2) };
    if let Some((start, end)) = own_range() {
        OWN[0].store(start, Ordering::Relaxed);
        OWN[1].store(end, Ordering::Relaxed);
    }
}

/// The range of the mappings of the file this code was loaded from.
fn own_range() -> Option<(usize, usize)> {
    let here = own_range as *const () as usize;
    let maps = std::fs::read("/proc/self/maps").ok()?;
    let rows: Vec<MapsLine> = maps.split(|&b| b == b'\n').filter_map(maps_line).collect();
    let path = rows.iter().find(|r| (r.start..r.end).contains(&here))?.path;
    let mine = rows.iter().filter(|r| r.path == path);
    let start = mine.clone().map(|r| r.start).min()?;
    let end = mine.map(|r| r.end).max()?;
    Some((start, end))
}

/// One line of `/proc/self/maps` (`start-end perms offset dev inode path`), of a mapped file.
struct MapsLine<'a> {
    start: usize,
    end: usize,
    /// Where the mapping starts in the file.
    offset: usize,
    path: &'a [u8],
}

/// The fields of `line`; `None` for a line without a path (anonymous memory) or malformed.
/// Allocates nothing (the signal handler parses with it).
fn maps_line(line: &[u8]) -> Option<MapsLine<'_>> {
    let mut fields = line.split(|&b| b == b' ').filter(|f| !f.is_empty());
    let hex = |f: &[u8]| {
        std::str::from_utf8(f)
            .ok()
            .and_then(|t| usize::from_str_radix(t, 16).ok())
    };
    let mut ends = fields.next()?.split(|&b| b == b'-');
    let (start, end) = (hex(ends.next()?)?, hex(ends.next()?)?);
    let offset = fields.nth(1).and_then(hex).unwrap_or(0);
    let path = fields.nth(2)?;
    Some(MapsLine {
        start,
        end,
        offset,
        path,
    })
}

/// A fixed buffer `core::fmt` writes into (what does not fit is cut).
struct Buf {
    bytes: [u8; 4096],
    len: usize,
}

impl std::fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let n = s.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// The signal's name.
fn name(sig: c_int) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGABRT => "SIGABRT",
        _ => "a fatal signal",
    }
}

/// Report fatal signal `sig` (`info` as the kernel gave it) on stderr.
///
/// # Safety
/// Called from the handler of `sig`, `info` the handler's `siginfo_t` (or null).
pub unsafe fn report(sig: c_int, info: *const libc::siginfo_t) {
    // A crash inside the dynamic loader or the unwinder may leave a lock `backtrace` needs
    // held: the process then dies of SIGALRM within seconds instead of hanging.
    libc::alarm(HANG_LIMIT_S);
    let mut frames = [std::ptr::null_mut(); FRAMES];
    let n = backtrace(frames.as_mut_ptr(), FRAMES as c_int).clamp(0, FRAMES as c_int) as usize;
    let mut raw = [0usize; FRAMES];
    for (r, p) in raw.iter_mut().zip(&frames[..n]) {
        *r = *p as usize;
    }
    let addr = (!info.is_null() && sig != libc::SIGABRT).then(|| (*info).si_addr() as usize);
    let own = OWN[0].load(Ordering::Relaxed)..OWN[1].load(Ordering::Relaxed);
    let mut places = [Place::EMPTY; FRAMES];
    locate(&raw[..n], &mut places[..n]);
    let mut buf = Buf {
        bytes: [0; 4096],
        len: 0,
    };
    write_report(
        &mut buf,
        (libc::getpid(), libc::syscall(libc::SYS_gettid) as i64),
        (name(sig), addr),
        &raw[..n],
        (own, &|i| places[i].get()),
    );
    libc::write(2, buf.bytes.as_ptr() as *const c_void, buf.len);
}

/// Where a frame lies: the file mapped there (its last [`PLACE_NAME`] bytes) and the
/// frame's offset in that file.
#[derive(Clone, Copy)]
struct Place {
    name: [u8; PLACE_NAME],
    len: usize,
    offset: usize,
}

/// Bytes of a file's path a [`Place`] keeps (its end: the file's name).
const PLACE_NAME: usize = 48;

impl Place {
    const EMPTY: Place = Place {
        name: [0; PLACE_NAME],
        len: 0,
        offset: 0,
    };

    fn get(&self) -> Option<(&str, usize)> {
        let name = std::str::from_utf8(&self.name[..self.len]).ok()?;
        (!name.is_empty()).then_some((name, self.offset))
    }
}

/// Fill `places[i]` with the file mapped at `frames[i]`, reading `/proc/self/maps` with
/// `open`/`read` into a buffer on the stack (no allocation); a frame in no file's mapping is
/// left empty.
///
/// # Safety
/// Async-signal-safe: system calls only.
unsafe fn locate(frames: &[usize], places: &mut [Place]) {
    let fd = libc::open(
        c"/proc/self/maps".as_ptr(),
        libc::O_RDONLY | libc::O_CLOEXEC,
    );
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 8192];
    let mut have = 0;
    loop {
        let got = libc::read(
            fd,
            buf[have..].as_mut_ptr() as *mut c_void,
            buf.len() - have,
        );
        if got <= 0 {
            break;
        }
        have += got as usize;
        let mut used = 0;
        while let Some(end) = buf[used..have].iter().position(|&b| b == b'\n') {
            place_line(&buf[used..used + end], frames, places);
            used += end + 1;
        }
        if used == 0 && have == buf.len() {
            have = 0; // a line longer than the buffer: skipped
            continue;
        }
        buf.copy_within(used..have, 0);
        have -= used;
    }
    libc::close(fd);
}

/// One line of `/proc/self/maps` ([`maps_line`]): the frames inside
/// its range get its path and their offset in the file.
fn place_line(line: &[u8], frames: &[usize], places: &mut [Place]) {
    let Some(m) = maps_line(line) else { return };
    for (&a, place) in frames.iter().zip(places.iter_mut()) {
        if (m.start..m.end).contains(&a) {
            let keep = &m.path[m.path.len().saturating_sub(PLACE_NAME)..];
            place.name[..keep.len()].copy_from_slice(keep);
            place.len = keep.len();
            place.offset = a - m.start + m.offset;
        }
    }
}

/// What a frame is named by: its file and offset there, by the frame's index.
type Locate<'a> = &'a dyn Fn(usize) -> Option<(&'a str, usize)>;

/// The report's text: `who` (pid, thread id), `what` (signal name, faulting address), the
/// stack `frames` (innermost first, starting in this report's own frames), `own` capture's
/// library's range and where each frame lies.
fn write_report(
    w: &mut impl std::fmt::Write,
    (pid, tid): (i32, i64),
    (signal, addr): (&str, Option<usize>),
    frames: &[usize],
    (own, place): (std::ops::Range<usize>, Locate),
) {
    let ours = |a: usize| own.contains(&a);
    // The program's stack starts after this report's and the handler's frames (ours) and the
    // signal trampoline (the first frame after them).
    let handler = frames.iter().take_while(|&&a| ours(a)).count();
    let program = frames.get(handler + 1..).unwrap_or_default();
    let on_stack = program.iter().any(|&a| ours(a));
    let _ = write!(w, "hrr-capture: pid {pid} (thread {tid}) received {signal}");
    if let Some(a) = addr {
        let _ = write!(w, " at address 0x{a:x}");
    }
    let _ = writeln!(
        w,
        "; {}",
        if own.is_empty() {
            "whether capture's code is on the stack is not known"
        } else if program.is_empty() {
            "the stack could not be read"
        } else if on_stack {
            "capture's code is on the stack: please report this with the lines below"
        } else {
            "capture's code is not on the stack (the program's or a library's crash)"
        }
    );
    for (i, &a) in program.iter().enumerate() {
        let _ = match place(handler + 1 + i) {
            Some((file, offset)) => {
                let name = file.rsplit('/').next().unwrap_or(file);
                writeln!(w, "hrr-capture:   #{i} {name}+0x{offset:x} (0x{a:x})")
            }
            None => writeln!(w, "hrr-capture:   #{i} 0x{a:x}"),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(frames: &[usize], own: std::ops::Range<usize>) -> String {
        let mut s = String::new();
        let (start, end) = (own.start, own.end);
        let place = |i: usize| {
            let a = frames[i];
            (start..end)
                .contains(&a)
                .then(|| ("/opt/hrr/lib/libhrr_capture.so", a - start))
        };
        write_report(&mut s, (7, 9), ("SIGSEGV", Some(0)), frames, (own, &place));
        s
    }

    #[test]
    fn a_crash_says_whether_capture_code_is_on_the_program_stack() {
        let own = 0x1000..0x2000;
        // report, handler, trampoline, then the program's frames
        let theirs = text(&[0x1100, 0x1200, 0x9000, 0x5000, 0x5100], own.clone());
        assert!(theirs.starts_with(
            "hrr-capture: pid 7 (thread 9) received SIGSEGV at address 0x0; capture's code is not on the stack"
        ), "{theirs}");
        assert!(theirs.contains("hrr-capture:   #0 0x5000\nhrr-capture:   #1 0x5100\n"));
        let ours = text(&[0x1100, 0x1200, 0x9000, 0x1abc, 0x5100], own);
        assert!(
            ours.contains("capture's code is on the stack: please report"),
            "{ours}"
        );
        assert!(
            ours.contains("hrr-capture:   #0 libhrr_capture.so+0xabc (0x1abc)\n"),
            "{ours}"
        );
        let unknown = text(&[0x1100, 0x9000], 0..0);
        assert!(unknown.contains("is not known"), "{unknown}");
    }

    #[test]
    fn frames_are_named_by_the_file_mapped_there() {
        let here = the_own_range_holds_this_code as *const () as usize;
        let mut places = [Place::EMPTY; 2];
        // SAFETY: system calls on this process's own maps.
        unsafe { locate(&[here, 8], &mut places) };
        let (name, offset) = places[0].get().expect("this test's own file");
        let exe = std::env::current_exe().unwrap();
        assert!(exe.to_str().unwrap().ends_with(name), "{name}");
        assert!(offset > 0 && offset < std::fs::metadata(exe).unwrap().len() as usize);
        assert!(places[1].get().is_none(), "address 8 lies in no file");
    }

    #[test]
    fn the_own_range_holds_this_code() {
        let (start, end) = own_range().expect("this test's own mapping");
        assert!((start..end).contains(&(own_range as *const () as usize)));
    }
}
