//! Which devices a replay opens: the `--device-map REC=LIVE[,REC=LIVE...]` pairs ([`DeviceMap`],
//! parsed here for the command line and the library alike), and the choice of the live device
//! of each recorded one ([`choose`]), from the recorded ordinals the prescan found
//! (`super::prescan`: the devices whose contexts the capture opened) and the devices
//! this machine has. The refusals are said here, before any event replays: a recorded device
//! this machine lacks (with the map that would put it on device 0), a mapped live ordinal
//! beyond this machine's devices.

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

/// The devices a replay opens: each recorded ordinal the capture used and the live one it
/// replays on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// The ordinals the capture used, ascending (`[0]` when it used none).
    pub recorded: Vec<i32>,
    /// The live ordinal each of `recorded` replays on (same order).
    pub lives: Vec<i32>,
}

impl Choice {
    /// The live ordinal recorded ordinal `rec` replays on, if the capture used it.
    pub fn live_of(&self, rec: i32) -> Option<i32> {
        let i = self.recorded.iter().position(|&r| r == rec)?;
        Some(self.lives[i])
    }

    /// The live devices to open, each once, in the order of the recorded ones (the first is
    /// current when replay starts).
    pub fn live_devices(&self) -> Vec<i32> {
        let mut v: Vec<i32> = Vec::new();
        for &l in &self.lives {
            if !v.contains(&l) {
                v.push(l);
            }
        }
        v
    }

    /// What the summary's `Device` line adds: empty when the capture's one device is replayed
    /// on the device of the same ordinal; the live devices when there are several; which
    /// recorded devices they replay when the ordinals differ.
    pub fn note(&self) -> String {
        let list = |v: &[i32]| v.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
        let lives = self.live_devices();
        let s = if self.recorded.len() == 1 { "" } else { "s" };
        let moved = self.recorded != self.lives;
        match (lives.len(), moved) {
            (1, false) => String::new(),
            (1, true) => format!(
                ", device {} replaying recorded device{s} {}",
                lives[0],
                list(&self.recorded)
            ),
            (_, false) => format!(", devices {}", list(&lives)),
            (_, true) => format!(
                ", devices {} replaying recorded devices {}",
                list(&self.lives),
                list(&self.recorded)
            ),
        }
    }
}

/// The live devices for a capture that used the device ordinals `recorded` (any order), with
/// `map` and `live_count` devices here: each recorded device replays on the device of its
/// ordinal unless the map says otherwise (several may share one). Refused (a message for the
/// user) when a mapped live ordinal is not a device here, or when a device the capture used is
/// not here and was not mapped (the message names the map that would run it on device 0).
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
    if lives.iter().any(|&l| l >= live_count) {
        let list: Vec<String> = used.iter().map(i32::to_string).collect();
        let (s, onto) = match used.len() {
            1 => ("", format!("{}=0", used[0])),
            _ => (
                "s",
                used.iter()
                    .map(|r| format!("{r}=0"))
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        };
        if live_count == 0 {
            bail!(
                "[HRR] Device missing: the archive used device{s} {}; {}.",
                list.join(", "),
                here(0)
            );
        }
        let (them, peer) = match used.len() {
            1 => ("it", ""),
            _ => ("them", " (peer copies become copies within that device)"),
        };
        bail!(
            "[HRR] Device missing: the archive used device{s} {}; {}. Replay with --device-map {onto} to run {them} on device 0{peer}.",
            list.join(", "),
            here(live_count)
        );
    }
    Ok(Choice {
        recorded: used,
        lives,
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
    fn the_live_devices_are_chosen_or_refused() {
        let none = DeviceMap::default();
        let c = |rec: &[i32], m: &DeviceMap, n| choose(rec, m, n);
        let pick = |rec: &[i32], live: &[i32]| Choice {
            recorded: rec.to_vec(),
            lives: live.to_vec(),
        };
        assert_eq!(c(&[], &none, 1).unwrap(), pick(&[0], &[0]));
        assert_eq!(c(&[1, 1], &none, 2).unwrap(), pick(&[1], &[1]));
        let to0 = DeviceMap::parse("1=0").unwrap();
        assert_eq!(c(&[1], &to0, 1).unwrap(), pick(&[1], &[0]));
        let e = c(&[1], &none, 1).unwrap_err().to_string();
        assert!(
            e.contains("used device 1;") && e.contains("--device-map 1=0 to run it"),
            "{e}"
        );
        assert!(e.contains("has 1 device (0)"), "{e}");
        // several devices replay on several devices, each on its own or where the map says
        let two = c(&[2, 0], &none, 4).unwrap();
        assert_eq!(two, pick(&[0, 2], &[0, 2]));
        assert_eq!(two.live_devices(), vec![0, 2]);
        assert_eq!(two.live_of(2), Some(2));
        assert_eq!(two.live_of(1), None);
        assert_eq!(two.note(), ", devices 0, 2");
        let swapped = c(&[0, 1], &DeviceMap::parse("0=1,1=0").unwrap(), 2).unwrap();
        assert_eq!(swapped.live_devices(), vec![1, 0]);
        assert_eq!(
            swapped.note(),
            ", devices 1, 0 replaying recorded devices 0, 1"
        );
        // fewer devices here than the capture used: refused, naming the map onto device 0
        let e = c(&[0, 1], &none, 1).unwrap_err().to_string();
        assert!(
            e.contains("used devices 0, 1;")
                && e.contains("has 1 device (0)")
                && e.contains("--device-map 0=0,1=0 to run them on device 0"),
            "{e}"
        );
        // several devices mapped onto one replay there
        let both = c(&[2, 0, 2], &DeviceMap::parse("2=0").unwrap(), 1).unwrap();
        assert_eq!(both, pick(&[0, 2], &[0, 0]));
        assert_eq!(both.live_devices(), vec![0]);
        assert_eq!(both.note(), ", device 0 replaying recorded devices 0, 2");
        assert_eq!(pick(&[0], &[0]).note(), "");
        assert_eq!(
            pick(&[1], &[0]).note(),
            ", device 0 replaying recorded device 1"
        );
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
