//! Work offered to the pool of hashing threads beside a driver call ([`beside`]): storing a
//! module image while the driver loads it, hashing an upload's source while the driver copies
//! it. The work is offered, not queued: when no pool thread has taken it up by the time the
//! caller's own part returns (every one busy with other work, such as the hashing of a large
//! upload just before), the caller runs it itself rather than wait behind that work. In one
//! capture in six of the tensor-core GEMM samples (H100, their 128 MiB of inputs uploaded just
//! before) the module load inside the sample's timed region took 1 to 3 ms instead of ~10 µs,
//! waiting for its image's store when it was queued on the pool and waited for; a pool whose
//! threads were all busy is one way that happens (not established there).

use std::sync::{Arc, Condvar, Mutex, MutexGuard};

/// `here()` on the calling thread while `there()` is offered to a thread of the pool
/// (`hrr_archive::later`), both done when it returns (`there`'s result `None` if it panicked,
/// on either side), where this process has the pool running already; otherwise both handed
/// back (`Err`) for the caller to run its own way (starting the pool's threads costs more
/// than running `there` beside saves). Handing `there` to a waiting pool thread costs the
/// caller a few microseconds.
pub fn beside<A, B, H, T>(here: H, there: T) -> Result<(A, Option<B>), (H, T)>
where
    H: FnOnce() -> A,
    T: FnOnce() -> B + Send,
    B: Send + 'static,
{
    if hrr_archive::pool_threads() == 0 {
        return Err((here, there));
    }
    let task: Box<dyn FnOnce() -> B + Send + '_> = Box::new(there);
    // SAFETY: only the lifetime is erased. The task, and what it borrows, is run or dropped
    // before this function returns or unwinds: by the caller (`take_or_wait` takes it out of
    // the offer), or by a pool thread while the caller waits for its result. A pool thread that
    // comes to the offer later finds it taken and touches nothing of the task's.
    let task: Box<dyn FnOnce() -> B + Send + 'static> = unsafe { std::mem::transmute(task) };
    let offer = Arc::new(Offer {
        stage: Mutex::new(Stage::Offered(task)),
        finished: Condvar::new(),
    });
    let taken_up = offer.clone();
    // not handed over (the pool went away meanwhile: a fork child's), it stays offered and
    // runs on the caller below
    let _ = hrr_archive::later(move || taken_up.run_if_offered());
    // the task is settled before a panic of `here` unwinds past its borrows
    let a = std::panic::catch_unwind(std::panic::AssertUnwindSafe(here));
    let b = offer.take_or_wait();
    match a {
        Ok(a) => Ok((a, b)),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// A task offered to the pool, and where it stands.
struct Offer<B> {
    stage: Mutex<Stage<B>>,
    finished: Condvar,
}

enum Stage<B> {
    /// Not taken up yet.
    Offered(Box<dyn FnOnce() -> B + Send>),
    /// A pool thread runs it.
    Running,
    /// A pool thread ran it (`None`: it panicked).
    Finished(Option<B>),
    /// The caller took it back, or took its result.
    Taken,
}

impl<B> Offer<B> {
    fn stage(&self) -> MutexGuard<'_, Stage<B>> {
        self.stage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// On a pool thread: run the task unless the caller took it back.
    fn run_if_offered(&self) {
        let task = {
            let mut stage = self.stage();
            match std::mem::replace(&mut *stage, Stage::Running) {
                Stage::Offered(task) => task,
                other => {
                    *stage = other;
                    return;
                }
            }
        };
        let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task)).ok();
        *self.stage() = Stage::Finished(done);
        self.finished.notify_all();
    }

    /// On the caller: run the task here if no pool thread took it up, else wait for it.
    fn take_or_wait(&self) -> Option<B> {
        let mut stage = self.stage();
        loop {
            match std::mem::replace(&mut *stage, Stage::Taken) {
                Stage::Offered(task) => {
                    drop(stage);
                    return std::panic::catch_unwind(std::panic::AssertUnwindSafe(task)).ok();
                }
                Stage::Finished(done) => return done,
                Stage::Running => {
                    *stage = Stage::Running;
                    stage = self.finished.wait(stage).unwrap_or_else(|e| e.into_inner());
                }
                Stage::Taken => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::beside;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    /// Wait (at most 30 s) until `ready()`.
    fn until(what: &str, ready: impl Fn() -> bool) {
        let t = Instant::now();
        while !ready() {
            assert!(t.elapsed().as_secs() < 30, "{what}");
            std::thread::yield_now();
        }
    }

    // One test: the two cases share the process's one pool.
    #[test]
    fn a_task_offered_runs_beside_the_caller_or_on_it_when_the_pool_is_busy() {
        assert!(hrr_archive::start_pool(), "the pool starts here");
        let threads = hrr_archive::pool_threads();

        // a free pool thread takes it up while the caller runs its own part
        let started = AtomicBool::new(false);
        let caller = std::thread::current().id();
        let (waited, there) = beside(
            || {
                until("the task never started", || started.load(Ordering::Acquire));
                std::thread::current().id()
            },
            || {
                started.store(true, Ordering::Release);
                std::thread::current().name().map(str::to_string)
            },
        )
        .ok()
        .expect("the pool is running");
        assert_eq!(waited, caller);
        assert!(there
            .expect("the task ran")
            .is_some_and(|n| n.starts_with("hrr-chunks-")));
        // a task that panics leaves the caller's result as it was
        let (here, panicked) = beside(|| 7, || -> u8 { panic!("a task's panic") })
            .ok()
            .expect("the pool is running");
        assert_eq!((here, panicked), (7, None));

        // the caller's part panics while a pool thread runs the task: the panic goes on only
        // once the task is done with what it borrowed
        let done = AtomicBool::new(false);
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let started = AtomicBool::new(false);
            let _ = beside(
                || {
                    until("the task never started", || started.load(Ordering::Acquire));
                    panic!("the caller's part panics")
                },
                || {
                    started.store(true, Ordering::Release);
                    std::thread::sleep(Duration::from_millis(100));
                    done.store(true, Ordering::Release);
                },
            );
        }));
        assert!(unwound.is_err());
        assert!(
            done.load(Ordering::Acquire),
            "unwound before the task was done"
        );

        // every pool thread held (as by the hashing of a large upload): the caller runs it
        let hold = Duration::from_millis(1500);
        let busy = Arc::new(AtomicUsize::new(0));
        for _ in 0..threads {
            let busy = busy.clone();
            assert!(hrr_archive::later(move || {
                busy.fetch_add(1, Ordering::AcqRel);
                std::thread::sleep(hold);
            }));
        }
        until("the pool's threads never started", || {
            busy.load(Ordering::Acquire) == threads
        });
        let borrowed = String::from("abc");
        let t = Instant::now();
        let (here, there) = beside(|| 5, || (std::thread::current().id(), borrowed.len()))
            .ok()
            .expect("the pool is running");
        assert!(
            t.elapsed() < hold / 2,
            "waited {:?} behind the pool",
            t.elapsed()
        );
        assert_eq!((here, there), (5, Some((caller, 3))));
    }
}
