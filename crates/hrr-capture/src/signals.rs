//! Fatal signals: on SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT the recorder hands what it has
//! buffered to the kernel, then the previous disposition is restored and the signal takes its
//! course (the faulting instruction re-runs, `abort` re-raises). The archive is left without a
//! trailer, as after any crash, for `--repair`.

use std::sync::Once;

const SIGNALS: [libc::c_int; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGABRT,
];

static mut PREVIOUS: [Option<libc::sigaction>; 5] = [None; 5];

extern "C" fn on_fatal(sig: libc::c_int) {
    crate::recorder::emergency_flush();
    if let Some(i) = SIGNALS.iter().position(|&s| s == sig) {
        // SAFETY: written once in `install` before the handler could run.
        let prev = unsafe { (*std::ptr::addr_of!(PREVIOUS))[i] };
        let mut dfl: libc::sigaction = unsafe { std::mem::zeroed() };
        dfl.sa_sigaction = libc::SIG_DFL;
        let act = prev.unwrap_or(dfl);
        // SAFETY: restoring a saved disposition.
        unsafe { libc::sigaction(sig, &act, std::ptr::null_mut()) };
    }
}

/// Install the handlers once, only over default dispositions (never over the application's).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        for (i, &sig) in SIGNALS.iter().enumerate() {
            // SAFETY: querying and setting dispositions with zeroed, then filled, structs.
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                (*std::ptr::addr_of_mut!(PREVIOUS))[i] = Some(old);
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_fatal as *const () as usize;
                act.sa_flags = libc::SA_NODEFER;
                libc::sigemptyset(&mut act.sa_mask);
                libc::sigaction(sig, &act, std::ptr::null_mut());
            }
        }
    });
}
