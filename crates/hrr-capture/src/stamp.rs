//! Event time stamps: nanoseconds since the Unix epoch (`CLOCK_REALTIME`), read at every
//! recorded call, so read cheaply. `clock_gettime` costs 26 ns on the CI machine and 38 ns on the
//! GPU machine (KVM guests, `tsc` clock source): a fifth of a launch's whole record. Where the
//! kernel itself keeps time with the CPU's time-stamp counter (its clock source is `tsc`: the
//! counter is invariant and the same on every CPU), [`StampClock`] reads the system clock once
//! every [`READ_EVERY`] stamps (or ~16 ms of ticks) and in between adds the counter's ticks since
//! that read, at the rate measured between its reads. Elsewhere, and until a rate is known, every
//! stamp is a `clock_gettime`. Stamps never go back (a read that finds the clock behind the last
//! stamp keeps the last stamp); a step of the system clock is taken at the next read, and a rate
//! that moves by more than 1% is measured again.

/// Stamps between two reads of the system clock.
const READ_EVERY: u32 = 256;
/// Ticks after a read past which the next stamp reads the clock again (~16 ms at 4 GHz).
const MAX_TICKS: u64 = 1 << 26;
/// Nanoseconds between the two reads a rate is measured over, at least.
const RATE_BASELINE_NS: u64 = 10_000_000;

/// Nanoseconds since the Unix epoch, now (0 before it), from `clock_gettime` directly.
/// `SystemTime`'s checked arithmetic cost a launch's record about 90 instructions more
/// (`scripts/bench-capture-instructions.sh launch`).
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write.
    if unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) } != 0 || ts.tv_sec < 0 {
        return 0;
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// The time-stamp counter, where there is one to read.
#[inline(always)]
fn ticks() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: rdtsc has no preconditions on x86-64.
    unsafe {
        std::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    0
}

/// Whether the kernel keeps time with the time-stamp counter (then it is invariant and in step
/// across CPUs: the kernel checked it before choosing it).
fn kernel_uses_tsc() -> bool {
    cfg!(target_arch = "x86_64")
        && std::fs::read_to_string(
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        )
        .is_ok_and(|s| s.trim() == "tsc")
}

/// A source of event time stamps (one per recorder: read under its lock).
#[derive(Debug)]
pub struct StampClock {
    /// Whether stamps between reads come from the time-stamp counter.
    counter: bool,
    /// The last read: ticks and nanoseconds.
    read: (u64, u64),
    /// The read the rate is measured from.
    baseline: (u64, u64),
    /// Nanoseconds a tick, as a 32.32 fixed-point number (0: not known yet).
    rate: u64,
    /// Stamps left before the next read.
    left: u32,
    /// The last stamp given.
    last: u64,
}

impl StampClock {
    /// A clock that uses the time-stamp counter where the kernel does.
    pub fn new() -> Self {
        Self::with_counter(kernel_uses_tsc())
    }

    /// A clock that uses the time-stamp counter between reads when `counter`.
    pub fn with_counter(counter: bool) -> Self {
        StampClock {
            counter,
            read: (0, 0),
            baseline: (0, 0),
            rate: 0,
            left: 0,
            last: 0,
        }
    }

    /// Nanoseconds since the Unix epoch, now.
    #[inline]
    pub fn now(&mut self) -> u64 {
        if self.left == 0 {
            return self.read_clock();
        }
        let ticks = ticks().wrapping_sub(self.read.0);
        if ticks > MAX_TICKS {
            return self.read_clock();
        }
        self.left -= 1;
        let ns = self.read.1 + ((ticks as u128 * self.rate as u128) >> 32) as u64;
        self.last = self.last.max(ns);
        self.last
    }

    /// Read the system clock (and the counter beside it); measure the counter's rate once the
    /// reads span long enough.
    #[cold]
    #[inline(never)]
    fn read_clock(&mut self) -> u64 {
        let ns = realtime_ns();
        self.last = self.last.max(ns);
        if !self.counter {
            return self.last;
        }
        let t = ticks();
        self.read = (t, ns);
        let (t0, ns0) = self.baseline;
        if t0 == 0 || ns < ns0 || t <= t0 {
            // the first read, or the clock stepped back: measure from here
            self.baseline = (t, ns);
            self.rate = 0;
        } else if ns - ns0 >= RATE_BASELINE_NS {
            let rate = (((ns - ns0) as u128) << 32) / (t - t0) as u128;
            let rate = u64::try_from(rate).unwrap_or(0);
            if self.rate != 0 && rate.abs_diff(self.rate) > self.rate / 100 {
                // a step of the clock or a counter out of step: measure again from here
                self.baseline = (t, ns);
                self.rate = 0;
            } else {
                self.rate = rate;
            }
        }
        self.left = if self.rate != 0 { READ_EVERY } else { 0 };
        self.last
    }
}

impl Default for StampClock {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system_ns() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    }

    #[test]
    fn realtime_is_the_system_clock_in_nanoseconds() {
        let before = system_ns();
        let now = realtime_ns();
        let after = system_ns();
        assert!(before <= now && now <= after, "{before} {now} {after}");
    }

    /// Stamps stay within a millisecond of the system clock and never go back, through the
    /// rate's measurement and many reads, whether the counter is used or not.
    #[test]
    fn stamps_follow_the_system_clock_and_never_go_back() {
        for counter in [kernel_uses_tsc(), false] {
            let mut clock = StampClock::with_counter(counter);
            let mut last = 0;
            let end = system_ns() + 60_000_000;
            let mut stamps = 0u64;
            while system_ns() < end {
                let before = system_ns();
                let now = clock.now();
                let after = system_ns();
                assert!(now >= last, "went back: {last} then {now}");
                assert!(
                    now + 1_000_000 >= before && now <= after + 1_000_000,
                    "{before} {now} {after} (counter {counter})"
                );
                last = now;
                stamps += 1;
                if stamps.is_multiple_of(1000) {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
            }
            if counter {
                assert_ne!(clock.rate, 0, "a rate measured in 60 ms");
            }
        }
    }
}
