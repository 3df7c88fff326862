//! Which device a replay opens: the `--device-map REC=LIVE[,REC=LIVE...]` pairs ([`DeviceMap`],
//! parsed here for the command line and the library alike), and the choice of the live device
//! for a capture that used one device ([`choose`]), from the recorded ordinals the prescan
//! found (`super::engine::prescan`) and the devices this machine has. The refusals are said
//! here, before any event replays: a capture that used several devices unless the map puts
//! them all on one device (replaying them on several is not available yet), a recorded device
//! this machine lacks, a mapped live ordinal beyond this machine's devices.

use anyhow::{bail, Result};

/// `--device-map`: recorded device ordinal → live device ordinal, each recorded ordinal once.
/// An ordinal not mapped replays on the device of the same ordinal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceMap(Vec<(i32, i32)>);

impl DeviceMap {
    /// Parse `REC=LIVE[,REC=LIVE...]` (non-negative ordinals; a recorded ordinal given twice is
    /// an error). The error says what was expected and what was given.
    pub fn parse(s: &str) -> std::result::Result<DeviceMap, String> {
        let mut pairs: Vec<(i32, i32)> = Vec::new();
        for part in s.split(',') {
            let ordinal = |t: &str| t.trim().parse::<u16>().ok().map(i32::from);
            let pair = part
                .split_once('=')
                .and_then(|(r, l)| Some((ordinal(r)?, ordinal(l)?)));
            let Some((rec, live)) = pair else {
                return Err(format!(
                    "--device-map: expected REC=LIVE pairs such as 0=1,1=0, got \"{part}\""
                ));
            };
            if let Some(&(_, before)) = pairs.iter().find(|(r, _)| *r == rec) {
                return Err(format!(
                    "--device-map: recorded device {rec} is mapped twice ({rec}={before} and {rec}={live})"
                ));
            }
            pairs.push((rec, live));
        }
        Ok(DeviceMap(pairs))
    }

    /// The pairs, as given.
    pub fn pairs(&self) -> &[(i32, i32)] {
        &self.0
    }

    /// No pair given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The live ordinal recorded ordinal `rec` replays on (itself when not mapped).
    pub fn live(&self, rec: i32) -> i32 {
        self.0
            .iter()
            .find(|(r, _)| *r == rec)
            .map_or(rec, |&(_, l)| l)
    }
}

impl std::fmt::Display for DeviceMap {
    /// `REC=LIVE,...`, as [`DeviceMap::parse`] reads it (the rerun of a localisation or a
    /// recheck gets the same map).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pairs: Vec<String> = self.0.iter().map(|(r, l)| format!("{r}={l}")).collect();
        f.write_str(&pairs.join(","))
    }
}

/// The device a replay opens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The ordinals the capture used, ascending (`[0]` when it looked up none).
    pub recorded: Vec<i32>,
    /// The ordinal they all replay on.
    pub live: i32,
}

impl Choice {
    /// What the summary's `Device` line adds: empty when the capture's one device is replayed
    /// on the device of the same ordinal.
    pub fn note(&self) -> String {
        if self.recorded == [self.live] {
            return String::new();
        }
        let list: Vec<String> = self.recorded.iter().map(i32::to_string).collect();
        let s = if list.len() == 1 { "" } else { "s" };
        format!(
            ", device {} replaying recorded device{s} {}",
            self.live,
            list.join(", ")
        )
    }
}

/// The live device for a capture that looked up the device ordinals `recorded` (successful
/// look-ups, any order), with `map` and `live_count` devices here; refused (a message for the
/// user) when the capture used several devices, when a mapped live ordinal is not a device
/// here, or when the capture's device is not here and was not mapped.
pub fn choose(recorded: &[i32], map: &DeviceMap, live_count: i32) -> Result<Choice> {
    let here = |n: i32| match n {
        0 => "this machine has no device".to_string(),
        1 => "this machine has 1 device (0)".to_string(),
        n => format!("this machine has {n} devices (0 to {})", n - 1),
    };
    for &(rec, live) in map.pairs() {
        if live >= live_count {
            bail!(
                "[HRR] Device missing: --device-map {rec}={live} names device {live}; {}.",
                here(live_count)
            );
        }
    }
    let mut used = recorded.to_vec();
    used.sort_unstable();
    used.dedup();
    if used.is_empty() {
        used.push(0);
    }
    let lives: Vec<i32> = used.iter().map(|&r| map.live(r)).collect();
    if lives.iter().any(|&l| l != lives[0]) {
        let list: Vec<String> = used.iter().map(i32::to_string).collect();
        let onto: Vec<String> = used.iter().map(|r| format!("{r}=0")).collect();
        bail!(
            "[HRR] Several devices: the archive used devices {}; replay on several devices is not available yet. Replay it on one device with --device-map {} (peer copies become copies within that device).",
            list.join(", "),
            onto.join(",")
        );
    }
    let live = lives[0];
    if live >= live_count {
        let rec = used[0];
        if live_count == 0 {
            bail!(
                "[HRR] Device missing: the archive used device {rec}; {}.",
                here(0)
            );
        }
        bail!(
            "[HRR] Device missing: the archive used device {rec}; {}. Replay with --device-map {rec}=0 to run it on device 0.",
            here(live_count)
        );
    }
    Ok(Choice {
        recorded: used,
        live,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_maps_parse_and_say_what_is_wrong() {
        let m = DeviceMap::parse("0=1,1=0").unwrap();
        assert_eq!(m.pairs(), &[(0, 1), (1, 0)]);
        assert_eq!((m.live(0), m.live(1), m.live(2)), (1, 0, 2));
        assert_eq!(m.to_string(), "0=1,1=0");
        assert_eq!(DeviceMap::parse(" 3 = 0").unwrap().pairs(), &[(3, 0)]);
        let bad = |s: &str| DeviceMap::parse(s).unwrap_err();
        assert_eq!(
            bad("x"),
            "--device-map: expected REC=LIVE pairs such as 0=1,1=0, got \"x\""
        );
        assert!(bad("0=1,").ends_with("got \"\""), "{}", bad("0=1,"));
        assert!(bad("1=-1").ends_with("got \"1=-1\""));
        assert!(bad("1=0=2").ends_with("got \"1=0=2\""));
        assert!(bad("a=1").contains("expected REC=LIVE"));
        assert_eq!(
            bad("1=0,1=2"),
            "--device-map: recorded device 1 is mapped twice (1=0 and 1=2)"
        );
    }

    #[test]
    fn the_live_device_is_chosen_or_refused() {
        let none = DeviceMap::default();
        let c = |rec: &[i32], m: &DeviceMap, n| choose(rec, m, n);
        let pick = |rec, live| Choice {
            recorded: vec![rec],
            live,
        };
        assert_eq!(c(&[], &none, 1).unwrap(), pick(0, 0));
        assert_eq!(c(&[1, 1], &none, 2).unwrap(), pick(1, 1));
        let to0 = DeviceMap::parse("1=0").unwrap();
        assert_eq!(c(&[1], &to0, 1).unwrap(), pick(1, 0));
        let e = c(&[1], &none, 1).unwrap_err().to_string();
        assert!(
            e.contains("used device 1") && e.contains("--device-map 1=0"),
            "{e}"
        );
        assert!(e.contains("has 1 device (0)"), "{e}");
        let e = c(&[0, 2], &none, 4).unwrap_err().to_string();
        assert!(
            e.contains("devices 0, 2")
                && e.contains("not available yet")
                && e.contains("--device-map 0=0,2=0"),
            "{e}"
        );
        // several devices mapped onto one replay there
        let both = c(&[2, 0, 2], &DeviceMap::parse("2=0").unwrap(), 1).unwrap();
        assert_eq!(
            both,
            Choice {
                recorded: vec![0, 2],
                live: 0
            }
        );
        assert_eq!(both.note(), ", device 0 replaying recorded devices 0, 2");
        assert_eq!(pick(0, 0).note(), "");
        assert_eq!(pick(1, 0).note(), ", device 0 replaying recorded device 1");
        let e = c(&[0], &DeviceMap::parse("0=3").unwrap(), 2).unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("--device-map 0=3") && e.contains("(0 to 1)"),
            "{e}"
        );
        // a live ordinal out of range is refused even for a device the archive did not use
        let e = c(&[0], &DeviceMap::parse("5=7").unwrap(), 1).unwrap_err();
        assert!(e.to_string().contains("device 7"), "{e}");
        let e = c(&[0], &none, 0).unwrap_err().to_string();
        assert!(
            e.contains("no device") && !e.contains("--device-map"),
            "{e}"
        );
    }
}
