//! HIP code objects: each (a fat binary registered by a hipcc program, or a module image) is
//! loaded once with `hipModuleLoadData` before the first call; the program's module loads then
//! only bind their recorded handles to it; functions are looked up by (code object, name) for
//! `<<<>>>` launches or through the recorded look-ups; variables by name (`hipModuleGetGlobal`,
//! symbols of registered fat binaries).

use std::ffi::{c_void, CString};

use anyhow::{anyhow, Context, Result};
use hrr_archive::ObjectId;

use hrr_calls::shapes::{ModuleLoad, SymbolAddress};

use super::runtime::{hip, H};
use super::Hip;
use crate::replay::backend::{code_calls, read_code, CodeObject, Event, Outcome};

impl Hip {
    /// Load a code object once.
    pub(super) fn load_code(&mut self, c: &CodeObject) -> Result<()> {
        if self.module_of_code.contains_key(&c.id) {
            return Ok(());
        }
        let image = read_code(&c.path)?;
        let mut m: H = std::ptr::null_mut();
        hip!(
            self.api,
            hipModuleLoadData(&mut m, image.as_ptr() as *const c_void)
        )
        .with_context(|| format!("loading code object {}", c.id))?;
        self.module_of_code.insert(c.id, (m, image));
        Ok(())
    }

    /// The module of code object `id`.
    pub(super) fn module(&self, id: Option<ObjectId>) -> Result<H> {
        let id = id.ok_or_else(|| anyhow!("the code object was not recorded"))?;
        self.module_of_code
            .get(&id)
            .map(|(m, _)| *m)
            .ok_or_else(|| anyhow!("code object {id} missing from the archive"))
    }

    /// The function `name` of code object `code` (for `<<<>>>` launches).
    pub(super) fn function(&mut self, code: Option<ObjectId>, name: &str) -> Result<H> {
        let id = code.ok_or_else(|| anyhow!("the code object of `{name}` was not recorded"))?;
        if let Some(f) = self.functions.get(&(id, name.to_string())) {
            return Ok(*f);
        }
        let m = self.module(Some(id))?;
        let c = CString::new(name)?;
        let mut f: H = std::ptr::null_mut();
        hip!(self.api, hipModuleGetFunction(&mut f, m, c.as_ptr()))?;
        self.functions.insert((id, name.to_string()), f);
        Ok(f)
    }

    /// Device address of variable `name` of code object `code`, and its size.
    pub(super) fn global(&self, code: Option<ObjectId>, name: &str) -> Result<(u64, u64)> {
        let m = self.module(code)?;
        let c = CString::new(name)?;
        let (mut p, mut n) = (0u64, 0usize);
        hip!(self.api, hipModuleGetGlobal(&mut p, &mut n, m, c.as_ptr()))
            .with_context(|| format!("looking up `{name}`"))?;
        Ok((p, n as u64))
    }

    /// `hipModuleLoad*`: loaded by `preload`; this binds the recorded handle.
    pub(super) fn bind_loaded(&mut self, ev: &Event) -> Result<Outcome> {
        let s: ModuleLoad = ev.read()?;
        let m = self.module(s.code)?;
        self.handles.insert(s.module, m);
        Ok(Outcome::Done)
    }

    /// `hipModuleGetFunction`.
    pub(super) fn module_get_function(&mut self, ev: &Event) -> Result<Outcome> {
        let api = &self.api;
        code_calls::module_get_function(&mut self.handles, ev, |h, m, n| {
            Ok(hip!(api, hipModuleGetFunction(h, m, n.as_ptr()))?)
        })
    }

    /// `hipGetSymbolAddress`: the symbol's recorded address translates to where it is now.
    pub(super) fn get_symbol_address(&mut self, ev: &Event) -> Result<Outcome> {
        let s: SymbolAddress = ev.read()?;
        let (addr, size) = self.global(s.code, &s.name)?;
        self.mem.note_moved(s.dptr, size, addr);
        Ok(Outcome::Done)
    }

    /// `hipModuleGetGlobal`: the variable's recorded address translates to where it is now.
    pub(super) fn module_get_global(&mut self, ev: &Event) -> Result<Outcome> {
        let api = &self.api;
        code_calls::global(&self.handles, &mut self.mem, ev, |m, n| {
            let (mut p, mut size) = (0u64, 0usize);
            hip!(api, hipModuleGetGlobal(&mut p, &mut size, m, n.as_ptr()))?;
            Ok((p, size))
        })
    }
}
