//! Look-ups both backends replay alike, over the shared handle map: a handle derived from
//! another (a function from a module, a kernel from a library, ...), optionally by the recorded
//! name, and a variable whose recorded address now lives elsewhere.

use std::ffi::{CStr, CString};

use anyhow::Result;

use super::shared::{Handles, H};
use super::{Event, Outcome};
use crate::replay::fields::{name, text, u};
use crate::replay::placement::Placement;

/// The handle in field `to` is what `get` derives from the one in field `from` (and the
/// recorded name, when `named`).
pub fn look_up(
    handles: &mut Handles,
    ev: &Event,
    (from, to): (&str, &str),
    named: bool,
    get: impl FnOnce(H, &CStr) -> Result<H>,
) -> Result<Outcome> {
    let f = &ev.fields;
    let owner = handles.get(u(f, from)?)?;
    let n = if named {
        CString::new(text(f, name::NAME))?
    } else {
        CString::default()
    };
    let h = get(owner, &n)?;
    handles.insert(u(f, to)?, h);
    Ok(Outcome::Done)
}

/// A variable looked up by name in its module or library (`get` answers its address and
/// size): its recorded address translates to where it is now.
pub fn global(
    handles: &Handles,
    mem: &mut Placement,
    ev: &Event,
    get: impl FnOnce(H, &CStr) -> Result<(u64, usize)>,
) -> Result<Outcome> {
    let f = &ev.fields;
    let owner = handles.get(u(f, name::OWNER)?)?;
    let n = CString::new(text(f, name::NAME))?;
    let (p, size) = get(owner, &n)?;
    mem.note_moved(u(f, name::DPTR)?, size as u64, p);
    Ok(Outcome::Done)
}
