//! CUDA arrays, mipmapped arrays, texture and surface objects: re-created from their recorded
//! descriptors with remapped handles (arrays and mipmapped arrays live in the backend's
//! `Handles`; the array or mipmapped array handle or device pointer inside a resource
//! descriptor is remapped or translated), and the [`Objects`] map from recorded to live object
//! values, which launches use to rewrite kernel arguments.
//!
//! Texture and surface object values are opaque 64-bit numbers kernels receive inside their
//! parameters. Objects are created in recorded order, so on the same driver the values usually
//! match and nothing is rewritten; where a live value differs, [`Objects::substitute`] rewrites
//! every 8-byte kernel parameter whose recorded value equals a live recorded object value. A
//! scalar 8-byte parameter that happens to equal such a value is rewritten too (the recorded
//! parameter layout gives sizes, not types).

use std::collections::HashMap;

use anyhow::{bail, Result};
use hrr_calls::cuda::ffi::{
    Array3dDescriptor, ArrayDescriptor, CU_RESOURCE_TYPE_ARRAY, CU_RESOURCE_TYPE_MIPMAPPED_ARRAY,
    RESOURCE_DESC_BYTES, RESOURCE_VIEW_DESC_BYTES, TEXTURE_DESC_BYTES,
};
use hrr_calls::cuda::Op;
use hrr_calls::shapes::{Array, ArrayCreate, MipmapLevel, Object, ObjectCreate};

use super::driver::{cu, H};
use super::tensor_maps::TensorMaps;
use super::Cuda;
use crate::replay::backend::shared::translate_pointer_args;
use crate::replay::backend::{Event, Outcome};
use crate::replay::placement::Placement;

/// Live texture and surface objects: recorded value to live value; and the tensor maps
/// (`tensor_maps.rs`) whose live bytes differ.
#[derive(Default)]
pub struct Objects {
    live: HashMap<u64, u64>,
    /// How many live objects got a value other than their recorded one.
    moved: usize,
    /// Tensor maps (TMA descriptors), recorded bytes to live bytes.
    pub maps: TensorMaps,
}

impl Objects {
    /// Recorded object value `recorded` is `live` here.
    pub(super) fn insert(&mut self, recorded: u64, live: u64) {
        if let Some(old) = self.live.insert(recorded, live) {
            self.moved -= usize::from(old != recorded);
        }
        self.moved += usize::from(live != recorded);
    }

    /// The live value of recorded object value `recorded`, if one was made.
    pub(super) fn live(&self, recorded: u64) -> Option<u64> {
        self.live.get(&recorded).copied()
    }

    fn remove(&mut self, recorded: u64) -> Option<u64> {
        let live = self.live.remove(&recorded)?;
        self.moved -= usize::from(live != recorded);
        Some(live)
    }

    /// The rewrites of recorded kernel arguments `args` (laid out by `offsets` and `sizes`):
    /// each 8-byte parameter whose value is a live recorded object value whose live value
    /// differs, as (offset, live value). Taken from the recorded bytes, before pointer
    /// translation, and applied after it with [`Objects::apply`].
    pub fn substitutions(&self, args: &[u8], offsets: &[u64], sizes: &[u64]) -> Vec<(usize, u64)> {
        if self.moved == 0 {
            return Vec::new();
        }
        offsets
            .iter()
            .zip(sizes)
            .filter(|&(_, &s)| s == 8)
            .filter_map(|(&o, _)| {
                let o = usize::try_from(o).ok()?;
                let v = u64::from_le_bytes(args.get(o..o.checked_add(8)?)?.try_into().ok()?);
                let live = *self.live.get(&v)?;
                (live != v).then_some((o, live))
            })
            .collect()
    }

    /// Does any live object value or tensor map differ from its recorded one?
    pub fn any_moved(&self) -> bool {
        self.moved > 0 || self.maps.any_moved()
    }

    /// Write the substitutions into the argument buffer.
    pub fn apply(args: &mut [u8], subs: &[(usize, u64)]) {
        for &(o, v) in subs {
            args[o..o + 8].copy_from_slice(&v.to_le_bytes());
        }
    }

    /// Rewrite recorded kernel arguments `args` (laid out by `offsets` and `sizes`) for this
    /// replay: object values and tensor maps found in the recorded bytes, pointers translated
    /// where ranges moved (the substitutions are found before translation, written after it).
    pub fn rewrite(&self, args: &mut [u8], offsets: &[u64], sizes: &[u64], mem: &Placement) {
        let objects = self.substitutions(args, offsets, sizes);
        let maps = self.maps.substitutions(args, offsets, sizes);
        translate_pointer_args(args, offsets, sizes, mem);
        Self::apply(args, &objects);
        TensorMaps::apply(args, &maps);
    }
}

/// A recorded descriptor's bytes, checked for the struct's size (`None` when none was given).
fn desc<'a>(bytes: &'a [u8], len: usize, what: &str) -> Result<Option<&'a [u8]>> {
    match bytes.len() {
        0 => Ok(None),
        n if n == len => Ok(Some(bytes)),
        n => bail!("recorded {what} has {n} bytes, expected {len}"),
    }
}

impl Cuda {
    /// `cuArrayCreate_v2`, `cuArray3DCreate_v2`, `cuMipmappedArrayCreate`.
    pub(super) fn array_create(&mut self, ev: &Event, op: Op) -> Result<Outcome> {
        let s: ArrayCreate = ev.read()?;
        let d3 = Array3dDescriptor {
            width: s.width as usize,
            height: s.height as usize,
            depth: s.depth as usize,
            format: s.format,
            channels: s.channels,
            flags: s.flags,
        };
        let mut live: H = std::ptr::null_mut();
        match op {
            Op::ArrayCreate => {
                let d = ArrayDescriptor {
                    width: d3.width,
                    height: d3.height,
                    format: d3.format,
                    channels: d3.channels,
                };
                cu!(self.api, cuArrayCreate_v2(&mut live, &d))?;
            }
            Op::MipmappedArrayCreate => {
                cu!(self.api, cuMipmappedArrayCreate(&mut live, &d3, s.levels))?
            }
            _ => cu!(self.api, cuArray3DCreate_v2(&mut live, &d3))?,
        }
        self.handles.insert(s.array, live);
        Ok(Outcome::Done)
    }

    /// `cuMipmappedArrayGetLevel`: the level's array is bound to its recorded handle.
    pub(super) fn mipmap_level(&mut self, ev: &Event) -> Result<Outcome> {
        let s: MipmapLevel = ev.read()?;
        let mm = self.handles.get(s.mipmap)?;
        let mut live: H = std::ptr::null_mut();
        cu!(self.api, cuMipmappedArrayGetLevel(&mut live, mm, s.level))?;
        self.handles.insert(s.array, live);
        Ok(Outcome::Done)
    }

    /// `cuArrayDestroy`, `cuMipmappedArrayDestroy`.
    pub(super) fn array_destroy(&mut self, ev: &Event, op: Op) -> Result<Outcome> {
        let s: Array = ev.read()?;
        let live = self.handles.get(s.array)?;
        if op == Op::MipmappedArrayDestroy {
            cu!(self.api, cuMipmappedArrayDestroy(live))?;
        } else {
            cu!(self.api, cuArrayDestroy(live))?;
        }
        self.handles.remove(s.array);
        Ok(Outcome::Done)
    }

    /// `cuTexObjectCreate`, `cuSurfObjectCreate`: the resource descriptor's array or mipmapped
    /// array handle remapped (its device pointer translated for linear and pitched resources).
    pub(super) fn object_create(&mut self, ev: &Event, op: Op) -> Result<Outcome> {
        let s: ObjectCreate = ev.read()?;
        let Some(res) = desc(&s.res_desc, RESOURCE_DESC_BYTES, "resource descriptor")? else {
            bail!("no resource descriptor was recorded");
        };
        let mut res = res.to_vec();
        let inner = u64::from_le_bytes(res[8..16].try_into().expect("8 bytes"));
        let live_inner = match s.res_type {
            CU_RESOURCE_TYPE_ARRAY | CU_RESOURCE_TYPE_MIPMAPPED_ARRAY => {
                self.handles.get(inner)? as u64
            }
            _ => self.mem.translate(inner),
        };
        res[8..16].copy_from_slice(&live_inner.to_le_bytes());
        let mut live = 0u64;
        if op == Op::SurfObjectCreate {
            cu!(self.api, cuSurfObjectCreate(&mut live, res.as_ptr()))?;
        } else {
            let tex = desc(&s.tex_desc, TEXTURE_DESC_BYTES, "texture descriptor")?;
            let view = desc(
                &s.view_desc,
                RESOURCE_VIEW_DESC_BYTES,
                "resource view descriptor",
            )?;
            let ptr = |d: Option<&[u8]>| d.map_or(std::ptr::null(), |d| d.as_ptr());
            cu!(
                self.api,
                cuTexObjectCreate(&mut live, res.as_ptr(), ptr(tex), ptr(view))
            )?;
        }
        self.objects.insert(s.object, live);
        Ok(Outcome::Done)
    }

    /// `cuTexObjectDestroy`, `cuSurfObjectDestroy`.
    pub(super) fn object_destroy(&mut self, ev: &Event, op: Op) -> Result<Outcome> {
        let s: Object = ev.read()?;
        let Some(live) = self.objects.remove(s.object) else {
            bail!("object 0x{:x} was never created in this archive", s.object);
        };
        if op == Op::SurfObjectDestroy {
            cu!(self.api, cuSurfObjectDestroy(live))?;
        } else {
            cu!(self.api, cuTexObjectDestroy(live))?;
        }
        Ok(Outcome::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::Objects;

    /// Arguments: an 8-byte value at 0, a 4-byte one at 8, an 8-byte one at 16.
    fn args(a: u64, b: u32, c: u64) -> Vec<u8> {
        let mut v = a.to_le_bytes().to_vec();
        v.extend_from_slice(&b.to_le_bytes());
        v.extend_from_slice(&[0; 4]);
        v.extend_from_slice(&c.to_le_bytes());
        v
    }

    #[test]
    fn only_8_byte_parameters_holding_a_moved_live_value_are_rewritten() {
        let (offsets, sizes) = (vec![0, 8, 16], vec![8, 4, 8]);
        let mut o = Objects::default();
        o.insert(5, 5); // same value at replay: nothing to do
        assert!(o.substitutions(&args(5, 5, 5), &offsets, &sizes).is_empty());
        o.insert(7, 70);
        let mut a = args(7, 7, 5);
        let subs = o.substitutions(&a, &offsets, &sizes);
        assert_eq!(subs, vec![(0, 70)]); // the 4-byte 7 stays, the unmoved 5 too
        Objects::apply(&mut a, &subs);
        assert_eq!(a, args(70, 7, 5));
        // a truncated buffer is not read past its end
        assert!(o.substitutions(&[7, 0, 0], &offsets, &sizes).is_empty());
        // a destroyed object is no longer substituted
        assert_eq!(o.remove(7), Some(70));
        assert!(o.substitutions(&args(7, 0, 7), &offsets, &sizes).is_empty());
    }
}
