//! CUDA code objects: each is loaded once before the first call (as a module or a library, as
//! the capture did); the program's loads then only bind their recorded handles to it, and
//! kernels, functions, modules and globals are bound through the recorded look-ups. Function and
//! kernel attributes are set again.

use std::ffi::{c_void, CStr};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use hrr_archive::ObjectId;
use hrr_calls::shapes::{
    CacheConfig, CtxLimit, Enumerated, FuncGetModule, FuncSetAttribute, FuncSetCacheConfig,
    KernelGetFunction, KernelSetAttribute, LibraryGetKernel, LibraryGetModule, LibraryLoad,
    ModuleLoad,
};

use super::driver::{cu, Api, H};
use super::Cuda;
use crate::replay::backend::{code_calls, read_code, Event, Outcome};

/// `cuModuleGetFunction` as a [`code_calls::look_up`] getter: the function of a module by name.
fn get_function(api: &Api) -> impl FnOnce(&mut H, H, &CStr) -> Result<()> + '_ {
    move |h, m, n| Ok(cu!(api, cuModuleGetFunction(h, m, n.as_ptr()))?)
}

impl Cuda {
    /// Load code object `id` from `path` once, as a library or a module.
    pub(super) fn load_code(&mut self, id: ObjectId, path: &Path, as_library: bool) -> Result<H> {
        let cache = if as_library {
            &self.library_of_code
        } else {
            &self.module_of_code
        };
        if let Some(h) = cache.get(&id) {
            return Ok(*h);
        }
        let image = read_code(path)?;
        let mut h: H = std::ptr::null_mut();
        if as_library {
            let n = std::ptr::null_mut();
            cu!(
                self.api,
                cuLibraryLoadData(
                    &mut h,
                    image.as_ptr() as *const c_void,
                    n,
                    std::ptr::null_mut(),
                    0,
                    n,
                    std::ptr::null_mut(),
                    0
                )
            )
            .with_context(|| format!("loading code object {id}"))?;
            self.library_of_code.insert(id, h);
        } else {
            cu!(
                self.api,
                cuModuleLoadData(&mut h, image.as_ptr() as *const c_void)
            )
            .with_context(|| format!("loading code object {id}"))?;
            self.module_of_code.insert(id, h);
        }
        Ok(h)
    }

    /// `cuModuleLoad*` / `cuLibraryLoad*` (`ModuleLoad`, `LibraryLoad`): loaded by `preload`;
    /// this binds the recorded handle.
    pub(super) fn bind_loaded(&mut self, ev: &Event, library: bool) -> Result<Outcome> {
        let (loaded, code, rec) = if library {
            let s: LibraryLoad = ev.read()?;
            (&self.library_of_code, s.code, s.library)
        } else {
            let s: ModuleLoad = ev.read()?;
            (&self.module_of_code, s.code, s.module)
        };
        let what = if library { "library" } else { "module" };
        let id = code.ok_or_else(|| anyhow!("the {what} image was not recorded"))?;
        let mut h = *loaded
            .get(&id)
            .ok_or_else(|| anyhow!("code object {id} missing from the archive"))?;
        if !library && self.current != 0 {
            h = self.module_on_current_device(id)?;
        }
        self.handles.insert(rec, h);
        Ok(Outcome::Done)
    }

    /// A module belongs to the context it was loaded in: code object `id` loaded again in the
    /// current context, another device's than the first (once per device). A library needs
    /// none of this (its kernels are for every context).
    fn module_on_current_device(&mut self, id: ObjectId) -> Result<H> {
        if let Some(&h) = self.modules_elsewhere.get(&(id, self.current)) {
            return Ok(h);
        }
        let path = self
            .code_paths
            .get(&id)
            .ok_or_else(|| anyhow!("code object {id} missing from the archive"))?;
        let image = read_code(path)?;
        let mut h: H = std::ptr::null_mut();
        cu!(
            self.api,
            cuModuleLoadData(&mut h, image.as_ptr() as *const c_void)
        )
        .with_context(|| format!("loading code object {id} on device {}", self.current))?;
        self.modules_elsewhere.insert((id, self.current), h);
        Ok(h)
    }

    /// `cuModuleGetFunction`.
    pub(super) fn module_get_function(&mut self, ev: &Event) -> Result<Outcome> {
        code_calls::module_get_function(&mut self.handles, ev, get_function(&self.api))
    }

    /// `cuLibraryGetKernel`.
    pub(super) fn library_get_kernel(&mut self, ev: &Event) -> Result<Outcome> {
        let (api, s) = (&self.api, ev.read::<LibraryGetKernel>()?);
        let name = Some(s.name.as_str());
        code_calls::look_up(&mut self.handles, (s.library, s.kernel), name, |h, l, n| {
            Ok(cu!(api, cuLibraryGetKernel(h, l, n.as_ptr()))?)
        })
    }

    /// `cuLibraryGetModule`.
    pub(super) fn library_get_module(&mut self, ev: &Event) -> Result<Outcome> {
        let (api, s) = (&self.api, ev.read::<LibraryGetModule>()?);
        code_calls::look_up(&mut self.handles, (s.library, s.module), None, |h, l, _| {
            Ok(cu!(api, cuLibraryGetModule(h, l))?)
        })
    }

    /// `cuKernelGetFunction`.
    pub(super) fn kernel_get_function(&mut self, ev: &Event) -> Result<Outcome> {
        let (api, s) = (&self.api, ev.read::<KernelGetFunction>()?);
        code_calls::look_up(
            &mut self.handles,
            (s.kernel, s.function),
            None,
            |h, k, _| Ok(cu!(api, cuKernelGetFunction(h, k))?),
        )
    }

    /// `cuModuleUnload` / `cuLibraryUnload`: the code stays loaded (replay loads each code object
    /// once, `load_code`), but the recorded handle is forgotten: the driver may hand the same
    /// address out again, as a function say, and a stale binding would then be taken for it.
    pub(super) fn unbind(&mut self, recorded: u64) -> Result<Outcome> {
        self.handles.remove(recorded);
        Ok(Outcome::Done)
    }

    /// `cuFuncGetModule`: the program asked the module of a bound function, or capture recorded
    /// the module of a launched function it never saw looked up; then the function is looked up
    /// by name in that module. A recorded name in a bound module always wins: the function's
    /// value may be bound still to a function of a module since unloaded (the driver hands
    /// values out again; replay keeps code loaded), and the name says which one it is now.
    pub(super) fn func_get_module(&mut self, ev: &Event) -> Result<Outcome> {
        let (api, s) = (&self.api, ev.read::<FuncGetModule>()?);
        let by_name = !s.name.is_empty() && self.handles.get(s.module).is_ok();
        if !by_name && self.handles.get(s.function).is_ok() {
            return code_calls::look_up(
                &mut self.handles,
                (s.function, s.module),
                None,
                |h, f, _| Ok(cu!(api, cuFuncGetModule(h, f))?),
            );
        }
        let name = Some(s.name.as_str());
        code_calls::look_up(
            &mut self.handles,
            (s.module, s.function),
            name,
            get_function(api),
        )
    }

    /// `cuModuleEnumerateFunctions` / `cuLibraryEnumerateKernels`: each enumerated handle is
    /// bound by its recorded name (the driver's order need not be the same).
    pub(super) fn enumerated(&mut self, ev: &Event, library: bool) -> Result<Outcome> {
        let (api, s) = (&self.api, ev.read::<Enumerated>()?);
        for (&handle, name) in s.handles.iter().zip(s.names.split('\n')) {
            code_calls::look_up(
                &mut self.handles,
                (s.owner, handle),
                Some(name),
                |h, o, n| {
                    if library {
                        cu!(api, cuLibraryGetKernel(h, o, n.as_ptr()))?;
                    } else {
                        cu!(api, cuModuleGetFunction(h, o, n.as_ptr()))?;
                    }
                    Ok(())
                },
            )?;
        }
        Ok(Outcome::Done)
    }

    /// `cuModuleGetGlobal` / `cuLibraryGetGlobal`: the variable's recorded address translates
    /// to where it is now.
    pub(super) fn get_global(&mut self, ev: &Event, library: bool) -> Result<Outcome> {
        let api = &self.api;
        code_calls::global(&self.handles, &mut self.mem, ev, |owner, n| {
            let (mut p, mut size) = (0u64, 0usize);
            if library {
                cu!(
                    api,
                    cuLibraryGetGlobal(&mut p, &mut size, owner, n.as_ptr())
                )?;
            } else {
                cu!(
                    api,
                    cuModuleGetGlobal_v2(&mut p, &mut size, owner, n.as_ptr())
                )?;
            }
            Ok((p, size))
        })
    }

    /// `cuFuncSetAttribute`.
    pub(super) fn func_set_attribute(&mut self, ev: &Event) -> Result<Outcome> {
        let s: FuncSetAttribute = ev.read()?;
        let func = self.handles.get(s.function)?;
        cu!(self.api, cuFuncSetAttribute(func, s.attrib, s.value))?;
        Ok(Outcome::Done)
    }

    /// `cuKernelSetAttribute`, for the live device of the recorded one.
    pub(super) fn kernel_set_attribute(&mut self, ev: &Event) -> Result<Outcome> {
        let s: KernelSetAttribute = ev.read()?;
        let kernel = self.handles.get(s.kernel)?;
        cu!(
            self.api,
            cuKernelSetAttribute(s.attrib, s.value, kernel, self.live_device(s.device))
        )?;
        Ok(Outcome::Done)
    }

    /// A context limit (device malloc heap, stack, printf FIFO, …): set again, in order, so
    /// kernels that rely on it (device-side `new`, deep recursion) run as recorded.
    pub(super) fn ctx_set_limit(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CtxLimit = ev.read()?;
        cu!(self.api, cuCtxSetLimit(s.limit, s.value as usize))?;
        Ok(Outcome::Done)
    }

    /// The context's cache configuration, set again in order.
    pub(super) fn ctx_set_cache_config(&mut self, ev: &Event) -> Result<Outcome> {
        let s: CacheConfig = ev.read()?;
        cu!(self.api, cuCtxSetCacheConfig(s.config))?;
        Ok(Outcome::Done)
    }

    /// `cuFuncSetCacheConfig`.
    pub(super) fn func_set_cache_config(&mut self, ev: &Event) -> Result<Outcome> {
        let s: FuncSetCacheConfig = ev.read()?;
        let func = self.handles.get(s.function)?;
        cu!(self.api, cuFuncSetCacheConfig(func, s.config))?;
        Ok(Outcome::Done)
    }
}
