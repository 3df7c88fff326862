//! What `--extract` and `--replace-kernel` need of the CUDA driver: device memory read at a
//! recorded address (a snapshot, `crate::replay::extract`), and a replacement kernel loaded
//! from a module image, its parameter layout asked with `cuFuncGetParamInfo`, and launches of
//! the recorded kernel sent to it (`crate::replay::replace`).

use std::ffi::{c_void, CString};

use anyhow::{anyhow, Context, Result};

use super::driver::{cu, H};
use super::Cuda;

/// `CUDA_ERROR_INVALID_VALUE`: `cuFuncGetParamInfo`'s answer past the last parameter.
const INVALID_VALUE: i32 = 1;

impl Cuda {
    /// `len` bytes at recorded device address `addr`, read once every stream is idle (the legacy
    /// stream does not wait for non-blocking streams), on the legacy stream, waited for.
    pub(super) fn read_recorded(&mut self, addr: u64, len: usize) -> Result<Vec<u8>> {
        let mut got = vec![0u8; len];
        let src = self.mem.translate(addr);
        let dst = got.as_mut_ptr() as *mut c_void;
        let what = || format!("reading 0x{addr:x} (+{len} bytes) of device memory");
        cu!(self.api, cuCtxSynchronize()).with_context(what)?;
        cu!(
            self.api,
            cuMemcpyDtoHAsync_v2(dst, src, len, std::ptr::null_mut())
        )
        .with_context(what)?;
        cu!(self.api, cuCtxSynchronize()).with_context(what)?;
        Ok(got)
    }

    /// Load `image` as a module and bind its kernel `name` as the replacement of the recorded
    /// kernel of that (mangled) name; its parameter layout when the driver has
    /// `cuFuncGetParamInfo` (CUDA 12.4+).
    pub(super) fn load_replacement(
        &mut self,
        name: &str,
        image: &[u8],
    ) -> Result<Option<Vec<(u64, u64)>>> {
        // PTX must end in a NUL; a byte more after a cubin or fatbin is harmless.
        let mut image = image.to_vec();
        image.push(0);
        let mut module: H = std::ptr::null_mut();
        cu!(
            self.api,
            cuModuleLoadData(&mut module, image.as_ptr() as *const c_void)
        )
        .context("loading the replacement module")?;
        let cname = CString::new(name).map_err(|_| anyhow!("kernel name holds a NUL"))?;
        let mut func: H = std::ptr::null_mut();
        cu!(
            self.api,
            cuModuleGetFunction(&mut func, module, cname.as_ptr())
        )
        .with_context(|| format!("the replacement module has no kernel `{name}`"))?;
        let layout = self.api.cuFuncGetParamInfo.and_then(|info| {
            let mut params = Vec::new();
            for i in 0.. {
                let (mut off, mut size) = (0usize, 0usize);
                // SAFETY: a function of this driver and out-pointers to locals.
                match unsafe { info(func, i, &mut off, &mut size) } {
                    0 => params.push((off as u64, size as u64)),
                    INVALID_VALUE => break,     // past the last parameter
                    _ if i == 0 => return None, // the driver cannot tell
                    _ => break,
                }
            }
            Some(params)
        });
        self.replaced.insert(name.to_string(), (func, 0));
        Ok(layout)
    }

    /// The function to launch for recorded kernel `kernel`: its replacement (counted) or `func`.
    pub(super) fn replaced_function(&mut self, kernel: &str, func: H) -> H {
        if self.replaced.is_empty() {
            return func; // no lookup by (long) name at every launch
        }
        match self.replaced.get_mut(kernel) {
            Some((f, n)) => {
                *n += 1;
                *f
            }
            None => func,
        }
    }
}
