//! CUDA stream-ordered memory pools: created with the recorded properties (on device 0),
//! configured (attributes, trimming, access for device 0), and the device's default and
//! current pools; pool handles are remapped. Allocations from pools are placed at their
//! recorded addresses like every allocation (`backend::memory_calls`), so no replay memory
//! comes from these pools: they are re-created so the calls on them succeed as recorded.
//! `cuMemPoolGetAttribute` is a query (its row's kind) and is not reissued.

use std::ffi::{c_int, c_void};

use anyhow::Result;
use hrr_calls::shapes::{DevicePool, Pool, PoolAttribute, PoolCreate, PoolSetAccess, PoolTrim};

use super::driver::{cu, H};
use super::Cuda;
use crate::replay::backend::{Event, Outcome};

/// Size of a `CUmemAccessDesc` (its `location` first).
const ACCESS_DESC_BYTES: usize = 12;

impl Cuda {
    /// `cuMemPoolCreate`.
    pub(super) fn pool_create(&mut self, ev: &Event) -> Result<Outcome> {
        let s: PoolCreate = ev.read()?;
        let mut props = s.props.clone();
        props.resize(props.len().max(88), 0);
        self.map_location(&mut props[super::memory::PROP_LOCATION..]);
        let mut pool: H = std::ptr::null_mut();
        cu!(self.api, cuMemPoolCreate(&mut pool, props.as_ptr()))?;
        self.handles.insert(s.pool, pool);
        Ok(Outcome::Done)
    }

    /// `cuMemPoolDestroy`.
    pub(super) fn pool_destroy(&mut self, ev: &Event) -> Result<Outcome> {
        let s: Pool = ev.read()?;
        let pool = self.handles.get(s.pool)?;
        cu!(self.api, cuMemPoolDestroy(pool))?;
        self.handles.remove(s.pool);
        Ok(Outcome::Done)
    }

    /// `cuMemPoolSetAttribute`: attributes 1–3 (`REUSE_*`) take an int, the others a u64.
    pub(super) fn pool_set_attribute(&mut self, ev: &Event) -> Result<Outcome> {
        let s: PoolAttribute = ev.read()?;
        let pool = self.handles.get(s.pool)?;
        let (mut int, mut wide) = (s.value as c_int, s.value);
        let value = if (1..=3).contains(&s.attrib) {
            &mut int as *mut c_int as *mut c_void
        } else {
            &mut wide as *mut u64 as *mut c_void
        };
        cu!(self.api, cuMemPoolSetAttribute(pool, s.attrib, value))?;
        Ok(Outcome::Done)
    }

    /// `cuMemPoolTrimTo`.
    pub(super) fn pool_trim(&mut self, ev: &Event) -> Result<Outcome> {
        let s: PoolTrim = ev.read()?;
        let pool = self.handles.get(s.pool)?;
        cu!(self.api, cuMemPoolTrimTo(pool, s.bytes as usize))?;
        Ok(Outcome::Done)
    }

    /// `cuMemPoolSetAccess`: the recorded descriptors, for the live devices of the recorded
    /// ones.
    pub(super) fn pool_set_access(&mut self, ev: &Event) -> Result<Outcome> {
        let s: PoolSetAccess = ev.read()?;
        let pool = self.handles.get(s.pool)?;
        let mut desc = s.desc.clone();
        for d in desc.chunks_exact_mut(ACCESS_DESC_BYTES) {
            self.map_location(d);
        }
        let count = desc.len() / ACCESS_DESC_BYTES;
        cu!(self.api, cuMemPoolSetAccess(pool, desc.as_ptr(), count))?;
        Ok(Outcome::Done)
    }

    /// `cuDeviceGetDefaultMemPool` (`default`) and `cuDeviceGetMemPool`: the recorded handle
    /// is the live pool of the live device of the recorded one.
    pub(super) fn device_pool(&mut self, ev: &Event, default: bool) -> Result<Outcome> {
        let s: DevicePool = ev.read()?;
        let dev = self.live_device(s.device);
        let mut pool: H = std::ptr::null_mut();
        if default {
            cu!(self.api, cuDeviceGetDefaultMemPool(&mut pool, dev))?;
        } else {
            cu!(self.api, cuDeviceGetMemPool(&mut pool, dev))?;
        }
        self.handles.insert(s.pool, pool);
        Ok(Outcome::Done)
    }

    /// `cuDeviceSetMemPool`.
    pub(super) fn device_set_pool(&mut self, ev: &Event) -> Result<Outcome> {
        let s: DevicePool = ev.read()?;
        let pool = self.handles.get(s.pool)?;
        cu!(
            self.api,
            cuDeviceSetMemPool(self.live_device(s.device), pool)
        )?;
        Ok(Outcome::Done)
    }
}
