//! Hopper TMA descriptors (`CUtensorMap`): every recorded encode is made again with the
//! tensor's translated address, and where the live bytes differ from the recorded ones
//! [`TensorMaps`] keeps the pair, so that launches (and small H2D copies: descriptors a program
//! copies to device memory) get the live bytes wherever the recorded 128 bytes stand.
//!
//! The descriptor's layout is not documented, so nothing inside it is translated by hand: the
//! driver encodes it again. An encode that fails at replay is harmless while the tensor kept its
//! recorded address (the recorded bytes still describe it) and is reported as skipped work when
//! the address moved (kernels given it would read the recorded address).

use std::collections::HashMap;
use std::ffi::c_void;

use anyhow::{bail, Result};
use hrr_calls::cuda::ffi::TENSOR_MAP_BYTES;
use hrr_calls::shapes::{TensorMapEncode, TensorMapReplace};

use super::driver::cu;
use super::Cuda;
use crate::replay::backend::shared::CallFailed;
use crate::replay::backend::{Event, Outcome};

/// A descriptor's bytes.
pub type Map = [u8; TENSOR_MAP_BYTES];

/// Descriptors sit at 64-byte aligned offsets (`CUtensorMap` is `alignas(64)`).
const MAP_ALIGN: usize = 64;

/// A descriptor the driver writes: `CUtensorMap`'s alignment (the driver refuses a map at
/// an address that is not 64-byte aligned).
#[repr(C, align(64))]
struct Aligned(Map);

/// H2D copies up to this size are searched for recorded descriptors.
const H2D_SEARCH_MAX: usize = 1 << 20;

/// Recorded descriptors whose live bytes differ, recorded to live.
#[derive(Default)]
pub struct TensorMaps {
    live: HashMap<Map, Map>,
}

impl TensorMaps {
    /// Recorded descriptor `recorded` is `live` here.
    pub fn insert(&mut self, recorded: Map, live: Map) {
        if live == recorded {
            self.live.remove(&recorded);
        } else {
            self.live.insert(recorded, live);
        }
    }

    /// The live bytes of recorded descriptor `recorded`, where they differ.
    pub fn live(&self, recorded: &Map) -> Option<&Map> {
        self.live.get(recorded)
    }

    /// Does any descriptor differ?
    pub fn any_moved(&self) -> bool {
        !self.live.is_empty()
    }

    /// The 64-byte aligned offsets in `bytes[from..to]` where a recorded descriptor whose live
    /// bytes differ stands, with those bytes.
    fn found(&self, bytes: &[u8], from: usize, to: usize) -> Vec<(usize, &Map)> {
        let to = to.min(bytes.len());
        let mut at = from.next_multiple_of(MAP_ALIGN);
        let mut found = Vec::new();
        while at + TENSOR_MAP_BYTES <= to {
            let window: &Map = bytes[at..at + TENSOR_MAP_BYTES]
                .try_into()
                .expect("128 bytes");
            if let Some(live) = self.live.get(window) {
                found.push((at, live));
                at += TENSOR_MAP_BYTES;
            } else {
                at += MAP_ALIGN;
            }
        }
        found
    }

    /// The rewrites of recorded kernel arguments `args` (laid out by `offsets` and `sizes`):
    /// each recorded descriptor inside a parameter of 128 bytes or more (by value, or inside a
    /// struct of parameters), as (offset, live bytes). Taken from the recorded bytes, before
    /// pointer translation, and applied after it with [`TensorMaps::apply`].
    pub fn substitutions(&self, args: &[u8], offsets: &[u64], sizes: &[u64]) -> Vec<(usize, Map)> {
        if self.live.is_empty() {
            return Vec::new();
        }
        let mut subs = Vec::new();
        for (&o, &s) in offsets.iter().zip(sizes) {
            if s < TENSOR_MAP_BYTES as u64 {
                continue;
            }
            let (Ok(o), Ok(s)) = (usize::try_from(o), usize::try_from(s)) else {
                continue;
            };
            let end = o.saturating_add(s);
            subs.extend(self.found(args, o, end).into_iter().map(|(at, m)| (at, *m)));
        }
        subs
    }

    /// Write the substitutions into the argument buffer.
    pub fn apply(args: &mut [u8], subs: &[(usize, Map)]) {
        for (o, m) in subs {
            args[*o..*o + TENSOR_MAP_BYTES].copy_from_slice(m);
        }
    }

    /// `data` (an H2D copy's source) with the live bytes of every recorded descriptor in it,
    /// or `None` when it holds none (or is too large to be searched).
    pub fn in_h2d(&self, data: &[u8]) -> Option<Vec<u8>> {
        if self.live.is_empty() || data.len() > H2D_SEARCH_MAX {
            return None;
        }
        let subs: Vec<(usize, Map)> = self
            .found(data, 0, data.len())
            .into_iter()
            .map(|(at, m)| (at, *m))
            .collect();
        if subs.is_empty() {
            return None;
        }
        let mut data = data.to_vec();
        Self::apply(&mut data, &subs);
        Some(data)
    }
}

/// A recorded array of `n` little-endian elements of `N` bytes, checked for its length.
fn elements<const N: usize, T>(
    bytes: &[u8],
    n: usize,
    what: &str,
    from: fn([u8; N]) -> T,
) -> Result<Vec<T>> {
    if bytes.len() != n * N {
        bail!(
            "recorded tensor map {what} has {} bytes, expected {}",
            bytes.len(),
            n * N
        );
    }
    Ok(bytes
        .chunks_exact(N)
        .map(|c| from(c.try_into().expect("N bytes")))
        .collect())
}

/// Why a descriptor could not be made again though its tensor moved.
fn not_encoded(recorded: u64, live: u64, e: &CallFailed) -> Outcome {
    Outcome::Skipped(format!(
        "tensor map of 0x{recorded:x} (at 0x{live:x} now) could not be encoded again ({e}): kernels given it read the recorded address"
    ))
}

impl Cuda {
    /// `cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col`: encoded again at the translated
    /// address.
    pub(super) fn tensor_map_encode(&mut self, ev: &Event) -> Result<Outcome> {
        let s: TensorMapEncode = ev.read()?;
        let Ok(recorded) = Map::try_from(s.map.as_slice()) else {
            return Ok(Outcome::Ignored); // refused when recorded: nothing was made
        };
        let n = s.rank as usize;
        let dims = elements(&s.dims, n, "dimensions", u64::from_le_bytes)?;
        let strides = elements(
            &s.strides,
            n.saturating_sub(1),
            "strides",
            u64::from_le_bytes,
        )?;
        let elem = elements(&s.elem_strides, n, "element strides", u32::from_le_bytes)?;
        let addr = self.mem.translate(s.addr);
        let mut live = Aligned([0; TENSOR_MAP_BYTES]);
        let (map, ga) = (live.0.as_mut_ptr(), addr as *mut c_void);
        // the two calls' arguments: the same around the tiled box or the im2col corners
        macro_rules! encode {
            ($call:ident, $($middle:expr),*) => {
                cu!(self.api, $call(
                    map, s.dtype, s.rank, ga, dims.as_ptr(), strides.as_ptr(), $($middle,)*
                    elem.as_ptr(), s.interleave, s.swizzle, s.l2, s.oob
                ))
            };
        }
        let made = if s.im2col != 0 {
            let corners = n.saturating_sub(2);
            let lower = elements(&s.lower, corners, "lower corner", i32::from_le_bytes)?;
            let upper = elements(&s.upper, corners, "upper corner", i32::from_le_bytes)?;
            encode!(
                cuTensorMapEncodeIm2col,
                lower.as_ptr(),
                upper.as_ptr(),
                s.channels,
                s.pixels
            )
        } else {
            let boxes = elements(&s.box_dim, n, "box", u32::from_le_bytes)?;
            encode!(cuTensorMapEncodeTiled, boxes.as_ptr())
        };
        self.tensor_map_made(made, (s.addr, addr), recorded, live.0)
    }

    /// `cuTensorMapReplaceAddress`: the live bytes of the descriptor before (its recorded ones
    /// where they did not differ) given the translated address.
    pub(super) fn tensor_map_replace(&mut self, ev: &Event) -> Result<Outcome> {
        let s: TensorMapReplace = ev.read()?;
        let (Ok(before), Ok(recorded)) = (
            Map::try_from(s.before.as_slice()),
            Map::try_from(s.map.as_slice()),
        ) else {
            return Ok(Outcome::Ignored);
        };
        let mut live = Aligned(*self.objects.maps.live(&before).unwrap_or(&before));
        let addr = self.mem.translate(s.addr);
        let made = cu!(
            self.api,
            cuTensorMapReplaceAddress(live.0.as_mut_ptr(), addr as *mut c_void)
        );
        self.tensor_map_made(made, (s.addr, addr), recorded, live.0)
    }

    fn tensor_map_made(
        &mut self,
        made: std::result::Result<(), CallFailed>,
        (recorded_addr, addr): (u64, u64),
        recorded: Map,
        live: Map,
    ) -> Result<Outcome> {
        match made {
            Ok(()) => {
                self.objects.maps.insert(recorded, live);
                Ok(Outcome::Done)
            }
            // the recorded bytes describe the tensor where it still is
            Err(_) if addr == recorded_addr => Ok(Outcome::Done),
            Err(e) => Ok(not_encoded(recorded_addr, addr, &e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Map, TensorMaps, TENSOR_MAP_BYTES};

    fn map(b: u8) -> Map {
        [b; TENSOR_MAP_BYTES]
    }

    #[test]
    fn only_recorded_maps_at_aligned_offsets_inside_large_parameters_are_rewritten() {
        let mut t = TensorMaps::default();
        t.insert(map(1), map(1)); // same bytes live: nothing to do
        assert!(!t.any_moved());
        t.insert(map(2), map(9));
        // a pointer (8 bytes), padding to 64, a map, an int, padding, a map inside a struct
        let mut args = vec![0u8; 64 + 128 + 64 + 256];
        args[64..192].copy_from_slice(&map(2));
        args[256 + 128..256 + 256].copy_from_slice(&map(2));
        let (offsets, sizes) = (vec![0, 64, 192, 256], vec![8, 128, 4, 256]);
        let subs = t.substitutions(&args, &offsets, &sizes);
        assert_eq!(subs.iter().map(|s| s.0).collect::<Vec<_>>(), vec![64, 384]);
        TensorMaps::apply(&mut args, &subs);
        assert_eq!(&args[64..192], &map(9));
        assert_eq!(&args[384..512], &map(9));
        // a map not at a 64-byte boundary is not one
        let mut odd = vec![0u8; 8 + 128];
        odd[8..].copy_from_slice(&map(2));
        assert!(t.substitutions(&odd, &[0], &[136]).is_empty());
        // a parameter too short to hold one is not searched, a truncated buffer not read past
        assert!(t.substitutions(&args, &[64], &[64]).is_empty());
        assert!(t.substitutions(&args[..100], &[64], &[128]).is_empty());
    }

    #[test]
    fn small_h2d_sources_get_live_maps() {
        let mut t = TensorMaps::default();
        assert!(t.in_h2d(&map(2)).is_none());
        t.insert(map(2), map(9));
        assert_eq!(t.in_h2d(&map(2)).as_deref(), Some(&map(9)[..]));
        assert!(t.in_h2d(&map(3)).is_none());
        // an encode back to the recorded bytes forgets the pair
        t.insert(map(2), map(2));
        assert!(t.in_h2d(&map(2)).is_none());
    }
}
