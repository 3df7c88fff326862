//! Look-ups both backends replay alike, over the shared handle map: a handle derived from
//! another (a function from a module, a kernel from a library, ...), optionally by the recorded
//! name (`cuModuleGetFunction` / `hipModuleGetFunction` read here), and a variable whose
//! recorded address now lives elsewhere.

use std::ffi::{CStr, CString};

use anyhow::Result;
use hrr_calls::shapes::{Global, ModuleGetFunction};

use super::shared::{Handles, H};
use super::{Event, Outcome};
use crate::replay::placement::Placement;

/// The handle recorded as `to` is what `get` derives from the one recorded as `from` (and the
/// recorded `name`, when there is one), written through its first argument (the driver call's
/// out-parameter); the caller reads both from its shape.
pub fn look_up(
    handles: &mut Handles,
    (from, to): (u64, u64),
    name: Option<&str>,
    get: impl FnOnce(&mut H, H, &CStr) -> Result<()>,
) -> Result<Outcome> {
    let owner = handles.get(from)?;
    let n = match name {
        Some(n) => CString::new(n)?,
        None => CString::default(),
    };
    let mut h: H = std::ptr::null_mut();
    get(&mut h, owner, &n)?;
    handles.insert(to, h);
    Ok(Outcome::Done)
}

/// `cuModuleGetFunction` / `hipModuleGetFunction` (`ModuleGetFunction`): the function is looked
/// up by its recorded name in its recorded module, through `get` (as for [`look_up`]).
pub fn module_get_function(
    handles: &mut Handles,
    ev: &Event,
    get: impl FnOnce(&mut H, H, &CStr) -> Result<()>,
) -> Result<Outcome> {
    let s: ModuleGetFunction = ev.read()?;
    look_up(handles, (s.module, s.function), Some(&s.name), get)
}

/// A variable looked up by name in its module or library (`Global`; `get` answers its address
/// and size): its recorded address translates to where it is now.
pub fn global(
    handles: &Handles,
    mem: &mut Placement,
    ev: &Event,
    get: impl FnOnce(H, &CStr) -> Result<(u64, usize)>,
) -> Result<Outcome> {
    let s: Global = ev.read()?;
    let owner = handles.get(s.owner)?;
    let n = CString::new(s.name)?;
    let (p, size) = get(owner, &n)?;
    mem.note_moved(s.dptr, size as u64, p);
    Ok(Outcome::Done)
}
