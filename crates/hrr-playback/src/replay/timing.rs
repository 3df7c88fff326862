//! `--timing`: the GPU time of every kernel and graph launch of a replay, measured by the
//! backend with events recorded around each launch on its stream, summed here by name
//! ([`Timings`]) for the summary's table and `--json` (kernels by total GPU time).

use std::collections::HashMap;

/// GPU time of one kernel (or of the launches of one graph), over a replay.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelTiming {
    /// The kernel's name as recorded (mangled), or `graph 0x…` for a graph's launches.
    pub name: String,
    /// Launches timed.
    pub launches: u64,
    /// Sum, smallest and largest launch, in milliseconds.
    pub total_ms: f64,
    /// Smallest launch.
    pub min_ms: f64,
    /// Largest launch.
    pub max_ms: f64,
}

impl KernelTiming {
    /// Mean launch time.
    pub fn mean_ms(&self) -> f64 {
        if self.launches == 0 {
            0.0
        } else {
            self.total_ms / self.launches as f64
        }
    }
}

/// Launch times summed by name.
#[derive(Debug, Default)]
pub struct Timings(HashMap<String, KernelTiming>);

impl Timings {
    /// One launch of `name` took `ms`.
    pub fn add(&mut self, name: &str, ms: f64) {
        let t = self
            .0
            .entry(name.to_string())
            .or_insert_with(|| KernelTiming {
                name: name.to_string(),
                min_ms: f64::INFINITY,
                ..KernelTiming::default()
            });
        t.launches += 1;
        t.total_ms += ms;
        t.min_ms = t.min_ms.min(ms);
        t.max_ms = t.max_ms.max(ms);
    }

    /// Every kernel, by total GPU time (largest first; ties by name).
    pub fn by_total(&self) -> Vec<KernelTiming> {
        let mut v: Vec<KernelTiming> = self.0.values().cloned().collect();
        v.sort_by(|a, b| {
            b.total_ms
                .total_cmp(&a.total_ms)
                .then_with(|| a.name.cmp(&b.name))
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launches_are_summed_by_name_and_sorted_by_total() {
        let mut t = Timings::default();
        t.add("a", 1.0);
        t.add("b", 5.0);
        t.add("a", 3.0);
        let v = t.by_total();
        assert_eq!(v[0].name, "b");
        assert_eq!(v[1].launches, 2);
        assert_eq!((v[1].total_ms, v[1].min_ms, v[1].max_ms), (4.0, 1.0, 3.0));
        assert_eq!(v[1].mean_ms(), 2.0);
    }
}
