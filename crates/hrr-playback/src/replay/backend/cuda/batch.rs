//! Launch batching for CUDA (`crate::replay::batch` says what a run is and when batching is
//! off): before the clock starts, each run of plain launches becomes a chain of kernel nodes in
//! graphs of up to [`CHUNK`] nodes, instantiated; at the run's first event its graphs are
//! launched on the run's stream, and the run's other events are done. The graphs hold the
//! recorded argument bytes and the functions looked up by name in the preloaded code objects,
//! so at the first event every launch is checked against what it would be issued with now (its
//! function handle as the recorded look-ups bound it, its arguments translated and substituted
//! as `launch.rs` would): a launch that differs sends the whole run launch by launch.

use std::collections::HashMap;
use std::ffi::CString;

use anyhow::{anyhow, Context, Result};
use hrr_calls::shapes::Launch;

use super::driver::{cu, packed_args_extra, KernelNodeParams, H};
use super::Cuda;
use crate::replay::backend::{Event, Outcome};
use crate::replay::batch::{Batching, LaunchRun};

/// Kernel nodes a prepared graph holds at most (a longer run is several graphs, launched one
/// after the other on its stream).
const CHUNK: usize = 4096;

/// A batched launch: the recorded shape and the live handles its recorded function may be
/// bound to (the library's kernel and that kernel's function, or the module's function).
struct Planned {
    launch: Launch,
    seq: u64,
    accepted: [H; 2],
}

/// A run prepared as graphs.
struct Prepared {
    last: u64,
    per_thread: bool,
    stream: u64,
    launches: Vec<Planned>,
    execs: Vec<H>,
}

/// The runs prepared, by first event, and where replay is inside one.
#[derive(Default)]
pub(super) struct Batches {
    runs: HashMap<u64, Prepared>,
    /// The run whose graphs were launched: its first and last event.
    active: Option<(u64, u64)>,
    summary: Batching,
}

impl Batches {
    /// What the summary says (`None`: nothing prepared or tried).
    pub(super) fn summary(&self) -> Option<Batching> {
        (self.summary.runs > 0 || self.summary.unprepared.is_some()).then(|| self.summary.clone())
    }

    /// The runs prepared: first and last event, ascending.
    pub(super) fn spans(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<_> = self.runs.iter().map(|(&f, r)| (f, r.last)).collect();
        v.sort_unstable();
        v
    }

    /// Every instantiation, for their destruction.
    fn execs(&mut self) -> impl Iterator<Item = H> + '_ {
        self.runs.drain().flat_map(|(_, r)| r.execs)
    }
}

impl Cuda {
    /// Prepare `runs` (before the clock): graphs of kernel nodes, instantiated. A run that
    /// cannot be prepared is counted with the first reason and issued launch by launch.
    pub(super) fn prepare_batches(&mut self, runs: Vec<LaunchRun>) {
        for run in runs {
            let (first, n) = (run.first(), run.launches.len() as u64);
            match self.prepare_run(run) {
                Ok(p) => {
                    let s = &mut self.batches.summary;
                    s.runs += 1;
                    s.launches += n;
                    s.graphs += p.execs.len() as u64;
                    self.batches.runs.insert(first, p);
                }
                Err(e) => {
                    let u = self
                        .batches
                        .summary
                        .unprepared
                        .get_or_insert((0, format!("{e:#}")));
                    u.0 += 1;
                }
            }
        }
        let uploaded = || -> Result<()> { Ok(cu!(self.api, cuCtxSynchronize())?) };
        if !self.batches.runs.is_empty() && uploaded().is_err() {
            // an upload failed late: every run is issued launch by launch
            let n = self.batches.runs.len() as u64;
            let _ = self.drop_batches();
            let s = &mut self.batches.summary;
            (s.runs, s.launches, s.graphs) = (0, 0, 0);
            s.unprepared = Some((n, "uploading the prepared graphs failed".into()));
        }
    }

    fn prepare_run(&mut self, run: LaunchRun) -> Result<Prepared> {
        let (stream, last) = (run.launches.first().map_or(0, |l| l.stream), run.last());
        let mut launches = Vec::with_capacity(run.launches.len());
        let mut names: HashMap<(hrr_archive::ObjectId, String), [H; 2]> = HashMap::new();
        for (launch, seq) in run.launches.into_iter().zip(run.seqs) {
            let code = launch
                .code
                .ok_or_else(|| anyhow!("a launch without its code object"))?;
            let key = (code, launch.kernel.clone());
            let accepted = match names.get(&key) {
                Some(a) => *a,
                None => {
                    let a = self.look_up_kernel(code, &launch.kernel)?;
                    names.insert(key, a);
                    a
                }
            };
            launches.push(Planned {
                launch,
                seq,
                accepted,
            });
        }
        let mut execs = Vec::new();
        for chunk in launches.chunks(CHUNK) {
            match self.instantiate_chain(chunk) {
                Ok(x) => execs.push(x),
                Err(e) => {
                    for x in execs {
                        let _ = cu!(self.api, cuGraphExecDestroy(x));
                    }
                    return Err(e);
                }
            }
        }
        Ok(Prepared {
            last,
            per_thread: run.per_thread,
            stream,
            launches,
            execs,
        })
    }

    /// The live handles kernel `name` of code object `code` has: from the library it was
    /// loaded as (the kernel, and its function in the current context), else from the module.
    fn look_up_kernel(&self, code: hrr_archive::ObjectId, name: &str) -> Result<[H; 2]> {
        let c = CString::new(name).map_err(|_| anyhow!("kernel name `{name}` holds a NUL"))?;
        let (mut a, mut b): (H, H) = (std::ptr::null_mut(), std::ptr::null_mut());
        if let Some(&lib) = self.library_of_code.get(&code) {
            cu!(self.api, cuLibraryGetKernel(&mut a, lib, c.as_ptr()))?;
            cu!(self.api, cuKernelGetFunction(&mut b, a))?;
            return Ok([a, b]);
        }
        let m = *self
            .module_of_code
            .get(&code)
            .ok_or_else(|| anyhow!("code object {code} was not preloaded"))?;
        cu!(self.api, cuModuleGetFunction(&mut a, m, c.as_ptr()))?;
        Ok([a, a])
    }

    /// One graph of `chunk`'s launches, each node depending on the one before, instantiated.
    fn instantiate_chain(&self, chunk: &[Planned]) -> Result<H> {
        let api = &self.api;
        let mut graph: H = std::ptr::null_mut();
        cu!(api, cuGraphCreate(&mut graph, 0))?;
        let built = (|| -> Result<H> {
            let mut prev: H = std::ptr::null_mut();
            for p in chunk {
                let l = &p.launch;
                let mut size = l.args.len();
                let mut extra = packed_args_extra(l.args.as_ptr(), &mut size);
                // the library's kernel where it was loaded as a library (its two handles differ)
                let library = p.accepted[0] != p.accepted[1];
                let params = KernelNodeParams::of_launch(l, p.accepted[0], library, &mut extra);
                let mut node: H = std::ptr::null_mut();
                let deps = usize::from(!prev.is_null());
                cu!(
                    api,
                    cuGraphAddKernelNode_v2(&mut node, graph, &prev, deps, &params)
                )
                .map_err(|e| anyhow!("kernel `{}` as a graph node: {e}", l.kernel))?;
                prev = node;
            }
            let mut exec: H = std::ptr::null_mut();
            cu!(api, cuGraphInstantiateWithFlags(&mut exec, graph, 0))?;
            // Its work descriptors go to the device now, not at its first launch (a
            // 4096-node graph's upload costs milliseconds); waited for after all are made.
            if let Err(e) = cu!(api, cuGraphUpload(exec, std::ptr::null_mut())) {
                let _ = cu!(api, cuGraphExecDestroy(exec));
                return Err(e.into());
            }
            Ok(exec)
        })();
        let _ = cu!(api, cuGraphDestroy(graph));
        built
    }

    /// Launch event `ev` if it begins a prepared run: the run's graphs launched, or, where the
    /// run's check fails, its launches issued one by one; either way `Launches(n)`, the run's
    /// other events being done (the engine does not even decode them). `None`: not a run's
    /// first event.
    pub(super) fn batched(&mut self, ev: &Event) -> Result<Option<Outcome>> {
        if let Some((first, last)) = self.batches.active {
            if ev.seq > first && ev.seq <= last {
                return Ok(Some(Outcome::Done)); // counted with the run's first event
            }
            self.batches.active = None;
        }
        let Some(run) = self.batches.runs.get(&ev.seq) else {
            return Ok(None);
        };
        let n = run.launches.len() as u64;
        match self.check_run(run) {
            Ok(()) => {
                let stream = super::stream_of(&self.handles, run.per_thread, run.stream)?;
                for &x in &run.execs {
                    cu!(self.api, cuGraphLaunch(x, stream))
                        .map_err(|e| anyhow!("launching the graph of batched launches: {e}"))?;
                }
            }
            Err(why) => {
                let s = &mut self.batches.summary;
                s.fell_back += 1;
                s.first_fallback.get_or_insert(why);
                self.issue_one_by_one(ev.seq)?;
            }
        }
        let last = self.batches.runs[&ev.seq].last;
        self.batches.active = Some((ev.seq, last));
        Ok(Some(Outcome::Launches(n)))
    }

    /// Issue the launches of the run beginning at event `first` one by one, as their events
    /// would have been (an error names the launch's event).
    fn issue_one_by_one(&mut self, first: u64) -> Result<()> {
        let run = self.batches.runs.remove(&first).expect("a prepared run");
        let issued = (|| -> Result<()> {
            for p in &run.launches {
                let mut l = p.launch.clone();
                let at = (run.per_thread, p.seq);
                self.launch_shape(at, &mut l, None, false)
                    .with_context(|| format!("batched launch of event #{}", p.seq))?;
            }
            Ok(())
        })();
        self.batches.runs.insert(first, run);
        issued
    }

    /// Would every launch of `run` be issued now as its graph holds it? (`Err`: why not.)
    fn check_run(&self, run: &Prepared) -> std::result::Result<(), String> {
        if self.captures > 0 {
            return Err("a stream capture was under way".into());
        }
        let rewritten = self.mem.any_moved() || self.objects.any_moved();
        let mut scratch = Vec::new();
        for p in &run.launches {
            let l = &p.launch;
            let live = self.handles.get(l.function).map_err(|e| e.to_string())?;
            if !p.accepted.contains(&live) {
                return Err(format!(
                    "kernel `{}` is bound to another function than its look-up by name",
                    l.kernel
                ));
            }
            if rewritten {
                scratch.clear();
                scratch.extend_from_slice(&l.args);
                self.objects
                    .rewrite(&mut scratch, &l.arg_offsets, &l.arg_sizes, &self.mem);
                if scratch != l.args {
                    return Err(format!(
                        "arguments of kernel `{}` are translated (memory or objects moved)",
                        l.kernel
                    ));
                }
            }
        }
        Ok(())
    }

    /// Destroy the prepared graphs (the end of the replay).
    pub(super) fn drop_batches(&mut self) -> Result<()> {
        let execs: Vec<H> = self.batches.execs().collect();
        for x in execs {
            cu!(self.api, cuGraphExecDestroy(x))?;
        }
        Ok(())
    }
}
