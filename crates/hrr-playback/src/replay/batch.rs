//! Launch batching, the part every API shares: which recorded launches form *runs* that replay
//! may issue as prepared graphs instead of one launch call each, and what the summary says of
//! them.
//!
//! A run is at least [`MIN_RUN`] consecutive events of the capture that are all plain launches
//! (`Launch` shape, arguments known, no launch attributes, not cooperative, not captured into
//! a graph, not failed, at most 48 KiB of dynamic shared memory) of one thread on one stream
//! through one entry point: any other event, of any thread, ends it. The prescan collects them
//! ([`Runs`]); the backend turns each into graphs before the clock starts
//! (`Backend::prepare_runs`; CUDA: `backend/cuda/batch.rs`) and, at the run's first event,
//! launches them instead of the run's launches, once it has checked that every launch of the
//! run would be issued with the function and argument bytes the graph holds (handles bound as
//! at load, no pointer translated, no object value substituted); where a check fails, that run
//! is issued launch by launch as without batching. A graph runs the same kernels in the same
//! order on the same stream; the GPU starts them faster than separate launch calls (the CUDA
//! driver's per-launch host cost is what bounds replay of tiny kernels).
//!
//! Batching is off (every launch issued alone) with `--no-batch` and wherever replay must see
//! each launch by itself: `--timing`, `--sync-after-launch`, `--sync-watchdog-ms`,
//! `--kernel-filter`, `--replace-kernel`, `--multi-thread`, the recheck's perturbed replay and
//! the fault localisation's rerun.

use hrr_calls::shapes::Launch;

use super::options::Options;

/// The fewest consecutive launches batched: shorter runs are issued one by one (a graph's
/// preparation and launch cost more than it saves on a handful of launches).
pub const MIN_RUN: usize = 64;
/// The most launches batched in one replay (the prescan keeps each batched launch's shape in
/// memory until the graphs are built).
pub const MAX_BATCHED: usize = 1 << 20;
/// The most dynamic shared memory of a batched launch: more needs a function attribute the
/// program sets during the replay, after the graphs were built.
const MAX_SHARED_MEM: u32 = 48 << 10;

/// Do `opts` let replay batch launches?
pub fn enabled(opts: &Options) -> bool {
    !(opts.no_batch
        || opts.timing
        || opts.sync_after_launch
        || opts.sync_watchdog_ms > 0
        || opts.kernel_filter.is_some()
        || !opts.replace_kernels.is_empty()
        || opts.multi_thread
        || opts.perturb)
}

/// Consecutive plain launches of one thread on one stream, events [`Self::first`] to
/// [`Self::last`].
#[derive(Debug)]
pub struct LaunchRun {
    /// Per-thread default stream semantics (`_ptsz`) of its entry point.
    pub per_thread: bool,
    /// Its launches, in order.
    pub launches: Vec<Launch>,
    /// Their events (never empty: a run starts with a launch).
    pub seqs: Vec<u64>,
}

impl LaunchRun {
    /// The run's first event.
    pub fn first(&self) -> u64 {
        self.seqs[0]
    }

    /// Its last event.
    pub fn last(&self) -> u64 {
        self.seqs[self.seqs.len() - 1]
    }
}

/// What identifies a run's launches: the recording thread, the record type (entry point) and
/// the stream.
type RunKey = (u64, u16, u64);

/// Runs collected event by event (the prescan's).
#[derive(Default)]
pub struct Runs {
    current: Option<(RunKey, LaunchRun)>,
    done: Vec<LaunchRun>,
    batched: usize,
}

impl Runs {
    /// Launch `l` at event `seq` of thread `thread`, record type `kind`: it continues the
    /// current run or starts one (a launch that cannot be batched ends the current run).
    pub fn launch(&mut self, seq: u64, (thread, kind): (u64, u16), per_thread: bool, l: Launch) {
        if !batchable(&l) {
            return self.other();
        }
        let key = (thread, kind, l.stream);
        match &mut self.current {
            Some((k, run)) if *k == key => {
                run.launches.push(l);
                run.seqs.push(seq);
            }
            _ => {
                self.other();
                let run = LaunchRun {
                    per_thread,
                    launches: vec![l],
                    seqs: vec![seq],
                };
                self.current = Some((key, run));
            }
        }
    }

    /// Any other event: the current run ends.
    pub fn other(&mut self) {
        let Some((_, run)) = self.current.take() else {
            return;
        };
        if run.launches.len() >= MIN_RUN && self.batched + run.launches.len() <= MAX_BATCHED {
            self.batched += run.launches.len();
            self.done.push(run);
        }
    }

    /// The runs found, in event order.
    pub fn finish(mut self) -> Vec<LaunchRun> {
        self.other();
        self.done
    }
}

/// Can launch `l` go into a prepared graph?
fn batchable(l: &Launch) -> bool {
    l.args_known != 0
        && l.cooperative == 0
        && l.attrs.is_empty()
        && l.in_capture == 0
        && l.code.is_some()
        && !l.kernel.is_empty()
        && l.shared_mem <= MAX_SHARED_MEM
}

/// What the summary says of batching.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Batching {
    /// Runs prepared as graphs before the clock started.
    pub runs: u64,
    /// Their launches.
    pub launches: u64,
    /// Graphs they were prepared as.
    pub graphs: u64,
    /// Runs issued launch by launch after all (their check at the first event failed), counted
    /// at every `--loop` pass.
    pub fell_back: u64,
    /// Why the first of those fell back.
    pub first_fallback: Option<String>,
    /// Runs that could not be prepared (the first reason): issued launch by launch.
    pub unprepared: Option<(u64, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(stream: u64) -> Launch {
        Launch {
            kernel: "k".into(),
            code: Some(hrr_archive::ObjectId::of(b"code")),
            args_known: 1,
            stream,
            ..Launch::default()
        }
    }

    #[test]
    fn runs_are_long_stretches_of_plain_launches_on_one_stream_of_one_thread() {
        let mut runs = Runs::default();
        let mut seq = 0;
        let mut add = |runs: &mut Runs, n: usize, stream: u64, thread: u64| {
            for _ in 0..n {
                seq += 1;
                runs.launch(seq, (thread, 7), false, launch(stream));
            }
        };
        add(&mut runs, MIN_RUN, 1, 10); // events 1..=64: a run
        add(&mut runs, MIN_RUN - 1, 2, 10); // another stream: too short
        add(&mut runs, MIN_RUN + 5, 2, 11); // another thread: a run
        runs.other();
        add(&mut runs, 3, 2, 11);
        let mut cooperative = launch(2);
        cooperative.cooperative = 1;
        runs.launch(1000, (11, 7), false, cooperative); // ends the stretch of 3
        let found = runs.finish();
        let spans: Vec<_> = found
            .iter()
            .map(|r| (r.first(), r.last(), r.launches.len()))
            .collect();
        assert_eq!(
            spans,
            vec![(1, 64, 64), (128, 196, MIN_RUN + 5)],
            "runs: {found:?}"
        );
    }

    #[test]
    fn launches_that_need_more_than_a_graph_holds_are_not_batched() {
        let unknown = Launch {
            args_known: 0,
            ..launch(1)
        };
        let attrs = Launch {
            attrs: vec![0; 72],
            ..launch(1)
        };
        let captured = Launch {
            in_capture: 1,
            ..launch(1)
        };
        let big_shared = Launch {
            shared_mem: 64 << 10,
            ..launch(1)
        };
        let no_code = Launch {
            code: None,
            ..launch(1)
        };
        for l in [unknown, attrs, captured, big_shared, no_code] {
            assert!(!batchable(&l), "{l:?}");
        }
        assert!(batchable(&launch(1)));
    }
}
