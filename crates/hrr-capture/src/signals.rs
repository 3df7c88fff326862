//! Signals. On SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT a report says on stderr where the
//! signal arrived and whether capture's code was on that stack ([`crate::crash`]), the recorder
//! hands what it has buffered to the kernel, then the previous disposition is restored and the signal takes its
//! course (the faulting instruction re-runs, `abort` re-raises). On the terminating signals
//! (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGXCPU, SIGUSR1, SIGUSR2: what a scheduler, a
//! supervisor or Ctrl-C sends) the archive is also marked incomplete with the signal's name,
//! then the default disposition is restored and the signal re-raised, so the process dies of
//! it as it would have. Handlers are installed only over default dispositions: where the
//! application installed its own, it stays in charge (and the flusher thread has written all
//! but the last ~100 ms). The archive is left without a trailer, as after any crash, for
//! `--repair`.

use std::sync::Once;

const FATAL: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

/// Terminating signals and the reason written into the archive (static: no allocation in a
/// signal handler).
const TERMINATING: [(libc::c_int, &str); 7] = [
    (libc::SIGTERM, "terminated by SIGTERM"),
    (libc::SIGINT, "terminated by SIGINT"),
    (libc::SIGHUP, "terminated by SIGHUP"),
    (libc::SIGQUIT, "terminated by SIGQUIT"),
    (libc::SIGXCPU, "terminated by SIGXCPU (CPU time limit)"),
    (libc::SIGUSR1, "terminated by SIGUSR1"),
    (libc::SIGUSR2, "terminated by SIGUSR2"),
];

static mut PREVIOUS: [Option<libc::sigaction>; 5] = [None; 5];

extern "C" fn on_fatal(sig: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: in the handler of `sig`, with the kernel's `info`.
    unsafe { crate::crash::report(sig, info) };
    crate::recorder::emergency_flush();
    if let Some(i) = FATAL.iter().position(|&s| s == sig) {
        // SAFETY: written once in `install` before the handler could run.
        let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS))[i] };
        let mut dfl: libc::sigaction = unsafe { std::mem::zeroed() };
        dfl.sa_sigaction = libc::SIG_DFL;
        let act = prev.unwrap_or(dfl);
        // SAFETY: restoring a saved disposition.
        unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) };
    }
}

extern "C" fn on_terminate(sig: libc::c_int) {
    let why = TERMINATING
        .iter()
        .find(|(s, _)| *s == sig)
        .map_or("terminated by a signal", |(_, w)| w);
    crate::recorder::emergency_mark(why);
    // SAFETY: restoring the default disposition, then re-raising (SA_NODEFER: delivered now).
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &dfl, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// A handler: of the signal's number only, or with its `siginfo_t` (`SA_SIGINFO`).
#[derive(Clone, Copy)]
enum Handler {
    Plain(extern "C" fn(libc::c_int)),
    Info(extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)),
}

/// Install `handler` for `sig` if its disposition is the default; the old one when installed.
///
/// # Safety
/// `handler` must be async-signal-tolerant.
unsafe fn install_over_default(sig: libc::c_int, handler: Handler) -> Option<libc::sigaction> {
    let mut old: libc::sigaction = std::mem::zeroed();
    if libc::sigaction(sig, std::ptr::null(), &mut old) != 0 || old.sa_sigaction != libc::SIG_DFL {
        return None;
    }
    let mut act: libc::sigaction = std::mem::zeroed();
    (act.sa_sigaction, act.sa_flags) = match handler {
        Handler::Plain(f) => (f as *const () as usize, libc::SA_NODEFER),
        Handler::Info(f) => (f as *const () as usize, libc::SA_NODEFER | libc::SA_SIGINFO),
    };
    libc::sigemptyset(&mut act.sa_mask);
    (libc::sigaction(sig, &act, std::ptr::null_mut()) == 0).then_some(old)
}

/// Block every signal in the calling thread (capture's own threads that hold locks a handler
/// here may wait for: a process-directed signal is then handled by another thread).
pub fn block_in_this_thread() {
    // SAFETY: a signal set filled by sigfillset, applied to the calling thread only.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
    }
}

/// Install the handlers once, only over default dispositions (never over the application's).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        crate::crash::prepare();
        for (i, &sig) in FATAL.iter().enumerate() {
            // SAFETY: the handler reports (no allocation, no lock), flushes with try_lock and
            // restores a disposition.
            if let Some(old) = unsafe { install_over_default(sig, Handler::Info(on_fatal)) } {
                // SAFETY: written before any handler can read it, once.
                unsafe { (*std::ptr::addr_of_mut!(PREVIOUS))[i] = Some(old) };
            }
        }
        for (sig, _) in TERMINATING {
            // SAFETY: as above.
            unsafe { install_over_default(sig, Handler::Plain(on_terminate)) };
        }
    });
}
