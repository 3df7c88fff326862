//! Where a fault happened, in a person's terms: the launch (kernel demangled, launch index,
//! grid and block) and each argument's value with the recorded allocation it points into, or
//! none (the likely culprit). Built from the recorded `Launch` event, read again from the
//! archive when needed (the replay loop keeps only sequence numbers); and `localize`, which
//! reruns the replay in a fresh process with `--sync-after-launch` to find the launch behind a
//! fault that surfaced later (a GPU context is unusable after a fault, so it cannot be redone
//! in this one). [`rerun_command`] builds that second `hrr-playback`; `super::recheck` uses it
//! too.

use std::path::Path;

use anyhow::{anyhow, Result};
use hrr_archive::reader::EventReader;
use hrr_archive::schema::{decode_fields, CallClass, Schema};
use hrr_calls::shapes::Launch;
use hrr_calls::Shape;

use super::options::Options;
use crate::demangle::demangle;

/// One argument of a launch, and the launch a fault is attributed to: the summary's JSON types
/// (`fault_site`, `last_launch`; docs/json.md), used as they are.
pub use hrr_cli::json::{LaunchArgJson as Arg, LaunchSiteJson as Site};

/// `kernel (launch N, event #S) grid (x,y,z) block (x,y,z)`.
pub fn describe(site: &Site) -> String {
    let [gx, gy, gz] = site.grid;
    let [bx, by, bz] = site.block;
    format!(
        "{} (launch {}, event #{}) grid ({gx},{gy},{gz}) block ({bx},{by},{bz})",
        site.kernel, site.launch, site.seq
    )
}

/// Smallest value taken for a device address when no allocation holds it (below: a count, an
/// index, a flag).
const ADDRESS_FLOOR: u64 = 1 << 32;

/// The site of the launch recorded at event `seq` (the `launch`-th of the replay), its pointer
/// arguments matched against the recorded allocations `ranges` (`(start, len)`).
pub fn site_of(
    events: &Path,
    schema: &Schema,
    seq: u64,
    launch: u64,
    ranges: &[(u64, u64)],
) -> Result<Option<Site>> {
    let reader = EventReader::open(events)?;
    for rec in reader {
        let rec = rec?;
        if rec.header.seq != seq {
            continue;
        }
        let Some(call) = schema.call(rec.header.kind) else {
            return Ok(None);
        };
        if call.class != CallClass::Launch {
            return Ok(None);
        }
        let fields = decode_fields(call, &rec.payload).map_err(|e| anyhow!("event #{seq}: {e}"))?;
        let l = Launch::read(&fields).map_err(|e| anyhow!("event #{seq}: {e}"))?;
        return Ok(Some(site(&l, seq, launch, ranges)));
    }
    Ok(None)
}

fn site(l: &Launch, seq: u64, launch: u64, ranges: &[(u64, u64)]) -> Site {
    let args = l
        .arg_offsets
        .iter()
        .zip(&l.arg_sizes)
        .map(|(&offset, &size)| {
            let bytes = l
                .args
                .get(offset as usize..(offset + size.min(8)) as usize)
                .unwrap_or(&[]);
            let mut v = [0u8; 8];
            v[..bytes.len()].copy_from_slice(bytes);
            let value = u64::from_le_bytes(v);
            let holder = (size == 8)
                .then(|| {
                    ranges
                        .iter()
                        .find(|&&(s, n)| value >= s && value - s < n.max(1))
                })
                .flatten();
            Arg {
                offset,
                size,
                value: format!("0x{value:x}"),
                allocation: holder.map(|&(s, n)| format!("[0x{s:x}, +{n})")),
                suspicious: size == 8 && holder.is_none() && value >= ADDRESS_FLOOR,
            }
        })
        .collect();
    Site {
        seq,
        launch,
        kernel: demangle(&l.kernel),
        kernel_mangled: l.kernel.clone(),
        grid: [l.grid_x, l.grid_y, l.grid_z],
        block: [l.block_x, l.block_y, l.block_z],
        shared_mem: l.shared_mem,
        args,
        localized_by_rerun: false,
    }
}

/// Rerun the replay of `dir` in a fresh `hrr-playback` with `--sync-after-launch`, so the
/// fault surfaces at the launch that caused it; returns that launch's site, if it was found.
pub fn localize(dir: &Path, opts: &Options) -> Option<Site> {
    let mut c = rerun_command(dir, opts).ok()?;
    c.arg("--sync-after-launch");
    let out = c.stderr(std::process::Stdio::null()).output().ok()?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    let mut s: Site = serde_json::from_value(v.get("fault_site")?.clone()).ok()?;
    s.localized_by_rerun = true;
    Some(s)
}

/// A fresh `hrr-playback` replaying `dir` as this one does (runtime, placement, kernel filter,
/// watchdog, loops, device map), quietly (`--json --no-progress`) and without reruns of its own
/// (`--no-localize --no-recheck`): the second replay of a localisation or a recheck.
pub fn rerun_command(dir: &Path, opts: &Options) -> Result<std::process::Command> {
    let exe = std::env::current_exe().map_err(|e| anyhow!("cannot find hrr-playback: {e}"))?;
    let mut c = std::process::Command::new(exe);
    c.arg(dir)
        .args(["--no-localize", "--no-recheck", "--json", "--no-progress"]);
    if let Some(r) = &opts.runtime {
        c.arg("--runtime").arg(r);
    }
    if opts.no_placement {
        c.arg("--no-placement");
    }
    if let Some(f) = &opts.kernel_filter {
        c.arg("--kernel-filter").arg(f);
    }
    if opts.sync_watchdog_ms > 0 {
        c.arg("--sync-watchdog-ms")
            .arg(opts.sync_watchdog_ms.to_string());
    }
    if opts.loop_count > 1 {
        c.arg("--loop").arg(opts.loop_count.to_string());
    }
    if opts.multi_thread {
        c.arg("--multi-thread");
    }
    if !opts.device_map.is_empty() {
        c.arg("--device-map").arg(opts.device_map.to_string());
    }
    for (name, path) in &opts.replace_kernels {
        c.arg("--replace-kernel")
            .arg(format!("{name}={}", path.display()));
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointer_arguments_are_matched_to_allocations() {
        let mut args = Vec::new();
        args.extend_from_slice(&0x7000_0000_1000u64.to_le_bytes()); // in the first allocation
        args.extend_from_slice(&0x7fff_0000_0000u64.to_le_bytes()); // in none
        args.extend_from_slice(&42u32.to_le_bytes());
        let l = Launch {
            kernel: "_Z10gather_badPKfPKiPfi".into(),
            grid_x: 2,
            grid_y: 1,
            grid_z: 1,
            block_x: 256,
            block_y: 1,
            block_z: 1,
            args,
            arg_offsets: vec![0, 8, 16],
            arg_sizes: vec![8, 8, 4],
            ..Default::default()
        };
        let s = site(&l, 31, 4, &[(0x7000_0000_0000, 1 << 20)]);
        assert_eq!(
            s.kernel,
            "gather_bad(float const*, int const*, float*, int)"
        );
        assert_eq!(
            s.args[0].allocation.as_deref(),
            Some("[0x700000000000, +1048576)")
        );
        assert!(!s.args[0].suspicious);
        assert!(s.args[1].allocation.is_none() && s.args[1].suspicious);
        assert_eq!(s.args[2].value, "0x2a");
        assert!(!s.args[2].suspicious);
        assert!(describe(&s).starts_with("gather_bad(float const*, int const*, float*, int) (launch 4, event #31) grid (2,1,1) block (256,1,1)"));
    }
}
