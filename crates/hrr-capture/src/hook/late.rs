//! Work a hook leaves to finish after its call returned, on one `hrr-late` thread of its own:
//! today the results of blocking D2H copies, read back from device-side snapshots of their
//! sources (`crate::api::cuda::snapshot`), so that the copy returns without hashing and
//! writing its result.
//!
//! Bounded: a job holds its bytes of [`BUDGET`] from [`reserve`] until its [`Reservation`] is
//! dropped (as soon as the device memory it holds is free again), and [`reserve`] waits, at
//! most [`RESERVE_WAIT`], while the budget is spent. [`drain`] waits until every job handed over
//! has run: before a context is destroyed (its snapshots with it) and at the archive's finish.
//! Jobs run in the order they were handed over; one that panics is dropped, the others still
//! run. After a fork the child starts empty (the parent's jobs name the parent's contexts).

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Bytes held by jobs not yet done with their device memory, at the most.
pub const BUDGET: usize = 1 << 30;

/// The longest [`reserve`] waits for the budget before the caller does the work itself.
pub const RESERVE_WAIT: Duration = Duration::from_secs(2);

/// A job: runs once, on the `hrr-late` thread.
pub type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    /// The process whose thread runs the jobs (0: none started).
    pid: u32,
    jobs: VecDeque<Job>,
    /// A job is running now.
    running: bool,
    /// Bytes reserved by live [`Reservation`]s.
    reserved: usize,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    pid: 0,
    jobs: VecDeque::new(),
    running: false,
    reserved: 0,
});
/// Signalled when a job is handed over, a job finished, or bytes were released.
static CHANGED: Condvar = Condvar::new();

fn queue() -> MutexGuard<'static, Queue> {
    QUEUE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `bytes` of [`BUDGET`], held until dropped.
pub struct Reservation {
    bytes: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        let mut q = queue();
        q.reserved = q.reserved.saturating_sub(self.bytes);
        drop(q);
        CHANGED.notify_all();
    }
}

/// Hold `bytes` of the budget for a job, waiting (at most [`RESERVE_WAIT`]) while earlier jobs
/// hold it; `None`: larger than the budget, or still spent after the wait.
pub fn reserve(bytes: usize) -> Option<Reservation> {
    if bytes > BUDGET {
        return None;
    }
    let mut q = queue();
    let deadline = std::time::Instant::now() + RESERVE_WAIT;
    while q.reserved + bytes > BUDGET {
        let left = deadline.checked_duration_since(std::time::Instant::now())?;
        q = CHANGED
            .wait_timeout(q, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    q.reserved += bytes;
    Some(Reservation { bytes })
}

/// Run `job` on the `hrr-late` thread (started on first use). `Err(job)`: the thread could not
/// start; the caller runs it.
pub fn hand_over(job: Job) -> Result<(), Job> {
    let pid = std::process::id();
    let mut q = queue();
    if q.pid != pid {
        // never started, or started by the parent of this forked child
        if std::thread::Builder::new()
            .name("hrr-late".into())
            .spawn(run)
            .is_err()
        {
            return Err(job);
        }
        *q = Queue {
            pid,
            ..Queue::default()
        };
    }
    q.jobs.push_back(job);
    drop(q);
    CHANGED.notify_all();
    Ok(())
}

/// The `hrr-late` thread: runs the jobs as they come.
fn run() {
    let pid = std::process::id();
    let mut q = queue();
    loop {
        if q.pid != pid && q.pid != 0 {
            return;
        }
        match q.jobs.pop_front() {
            Some(job) => {
                q.running = true;
                drop(q);
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                q = queue();
                q.running = false;
                CHANGED.notify_all();
            }
            None => {
                q = CHANGED.wait(q).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

/// Wait until every job handed over (by this process) has run.
pub fn drain() {
    let pid = std::process::id();
    let mut q = queue();
    while q.pid == pid && (q.running || !q.jobs.is_empty()) {
        q = CHANGED.wait(q).unwrap_or_else(|e| e.into_inner());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn jobs_run_in_order_and_drain_waits_for_them() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        for i in 0..5 {
            let seen = seen.clone();
            let job: Job = Box::new(move || {
                std::thread::sleep(Duration::from_millis(5));
                seen.lock().unwrap().push(i);
            });
            assert!(hand_over(job).is_ok());
        }
        drain();
        assert_eq!(*seen.lock().unwrap(), vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_panicking_job_does_not_stop_the_next() {
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        assert!(hand_over(Box::new(|| panic!("job failed"))).is_ok());
        assert!(hand_over(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        }))
        .is_ok());
        drain();
        assert_eq!(ran.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_budget_is_held_until_released() {
        assert!(reserve(BUDGET + 1).is_none());
        let whole = reserve(BUDGET).expect("the whole budget");
        let t = std::thread::spawn(|| reserve(1).map(|r| r.bytes));
        std::thread::sleep(Duration::from_millis(50));
        drop(whole); // the waiting reservation goes through once this is released
        assert_eq!(t.join().unwrap(), Some(1));
    }
}
