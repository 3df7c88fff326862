//! `--perturb` (set for the second replay of a recheck, `replay::recheck`): before each kernel
//! and graph launch, replay pauses the host a little (up to 1 ms, 200 ms in all) and launches a
//! short kernel of its own that spins on part of the GPU (every other launch: on every SM), on
//! a non-blocking stream of its own, with a pseudo-random number of blocks, block size and spin
//! time (at most about 20 µs; one launch in four, within a budget, holds part of the SMs for up
//! to about 200 µs). The program's blocks are then scheduled onto the SMs in another
//! order and at other times than in the first replay, so results that depend on scheduling (the
//! order of atomic updates, clock values) differ between the two replays and are told apart as
//! the program's own nondeterminism, while results that do not depend on it are unaffected.
//! Cooperative launches (which need their blocks co-resident) and launches inside a stream
//! capture get no noise. Where the kernel cannot be loaded (a driver without a PTX compiler),
//! the second replay runs unperturbed.

use std::ffi::{c_int, c_void};
use std::time::Duration;

use anyhow::Result;

use super::driver::{cu, Api, H};

/// The spinning kernel: `hrr_noise(u64 cycles)` waits until `cycles` SM clock cycles passed.
const PTX: &[u8] = b"
.version 7.0
.target sm_70
.address_size 64

.visible .entry hrr_noise(
\t.param .u64 hrr_noise_param_0
)
{
\t.reg .pred %p<2>;
\t.reg .b64 %rd<5>;
\tld.param.u64 %rd1, [hrr_noise_param_0];
\tmov.u64 %rd2, %clock64;
$L_spin:
\tmov.u64 %rd3, %clock64;
\tsub.s64 %rd4, %rd3, %rd2;
\tsetp.lt.u64 %p1, %rd4, %rd1;
\t@%p1 bra $L_spin;
\tret;
}
\0";

/// The most cycles one noise kernel spins (about 20 µs at 2 GHz).
const MAX_CYCLES: u64 = 40_000;

/// The most cycles a long noise kernel spins (about 200 µs at 2 GHz), and the most all long
/// ones spin in one replay (about 2 s).
const LONG_CYCLES: u64 = 400_000;
const LONG_BUDGET: u64 = 4_000_000_000;

/// The longest host pause before one launch, and the most pausing in all (so a replay of many
/// launches is not slowed much): values the device reads from its clocks depend on when
/// kernels start, which the device alone does not change between two replays.
const MAX_PAUSE: Duration = Duration::from_micros(1000);
const PAUSE_BUDGET: Duration = Duration::from_millis(200);

/// `CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT`.
const MULTIPROCESSOR_COUNT: c_int = 16;
/// `CU_STREAM_NON_BLOCKING`.
const STREAM_NON_BLOCKING: u32 = 1;

/// The loaded noise kernel, its stream and the pseudo-random state.
pub struct Noise {
    func: H,
    stream: H,
    sms: u32,
    state: u64,
    paused: Duration,
    long_cycles: u64,
    /// Noise kernels launched.
    pub launched: u64,
}

impl Noise {
    /// Load the kernel on device `dev` (`Err`: why the driver could not).
    pub fn new(api: &Api, dev: c_int) -> Result<Noise> {
        Self::load(api, dev)
    }

    fn load(api: &Api, dev: c_int) -> Result<Noise> {
        let mut module: H = std::ptr::null_mut();
        cu!(
            api,
            cuModuleLoadData(&mut module, PTX.as_ptr() as *const c_void)
        )?;
        let mut func: H = std::ptr::null_mut();
        cu!(
            api,
            cuModuleGetFunction(&mut func, module, c"hrr_noise".as_ptr())
        )?;
        let mut stream: H = std::ptr::null_mut();
        cu!(api, cuStreamCreate(&mut stream, STREAM_NON_BLOCKING))?;
        let mut sms: c_int = 0;
        cu!(
            api,
            cuDeviceGetAttribute(&mut sms, MULTIPROCESSOR_COUNT, dev)
        )?;
        Ok(Noise {
            func,
            stream,
            sms: sms.max(1) as u32,
            state: 0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()),
            paused: Duration::ZERO,
            long_cycles: 0,
            launched: 0,
        })
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Pause the host a little (within [`PAUSE_BUDGET`]) and launch one noise kernel, before a
    /// launch of the program's.
    pub fn before_launch(&mut self, api: &Api) -> Result<()> {
        let r = self.next();
        if self.paused < PAUSE_BUDGET {
            let pause = MAX_PAUSE.mul_f64((r >> 40) as f64 / (1u64 << 24) as f64);
            std::thread::sleep(pause);
            self.paused += pause;
        }
        // Every other launch, noise on every SM (one to four blocks each), so that even a
        // program's single block shares its SM's warp schedulers with noise warps (the order
        // of its warps' atomic updates then changes); otherwise a random share of the SMs,
        // and one launch in four (within [`LONG_BUDGET`]) holds a quarter to three quarters of
        // the SMs for up to [`LONG_CYCLES`]: a longer kernel's blocks (or a graph's) then
        // start on other SMs and finish in another order (sums of floating-point atomics).
        let long = (r >> 58) & 3 == 3 && self.long_cycles < LONG_BUDGET;
        let blocks = match ((r >> 60) & 1, long) {
            (_, true) => self.sms / 4 + (r % u64::from(self.sms / 2 + 1)) as u32,
            (0, _) => self.sms * (1 + ((r >> 8) % 4) as u32),
            _ => 1 + (r % u64::from(2 * self.sms)) as u32,
        };
        let threads = 32u32 << ((r >> 16) % 4);
        let mut cycles = match long {
            true => LONG_CYCLES / 4 + (r >> 24) % (LONG_CYCLES * 3 / 4),
            false => (r >> 24) % MAX_CYCLES,
        };
        if long {
            self.long_cycles += cycles;
        }
        let mut params = [&mut cycles as *mut u64 as *mut c_void];
        cu!(
            api,
            cuLaunchKernel(
                self.func,
                blocks,
                1,
                1,
                threads,
                1,
                1,
                0,
                self.stream,
                params.as_mut_ptr(),
                std::ptr::null_mut()
            )
        )?;
        self.launched += 1;
        Ok(())
    }
}
