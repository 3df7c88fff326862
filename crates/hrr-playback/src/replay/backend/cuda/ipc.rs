//! Inter-process handles (`cuIpc*`), replayed beside the other processes of the archive
//! (`hrr-playback ROOT --all`, `crate::replay::peers`): an export publishes the live driver's
//! handle under the recorded one, an open waits for it and maps what it names where the
//! recording had it (translated like any moved allocation). Replayed alone, an open cannot be
//! reproduced and is skipped with the reason. Events exported and opened (`cuIpcGetEventHandle`,
//! `cuIpcOpenEventHandle`) are re-paired the same way; the opened event then stands for the
//! recorded one in this process's later calls. Physical memory exported as a shareable handle
//! (`cuMemExportToShareableHandle`: a POSIX file descriptor, handed over through
//! `replay::fd_pass`, or a fabric handle) is imported the same way, by the key capture recorded.

use std::ffi::{c_int, c_void};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::{anyhow, bail, Result};
use hrr_calls::cuda::ffi::{IpcHandle, IPC_HANDLE_BYTES};
use hrr_calls::shapes::{DevicePtr, IpcEventHandle, IpcMemHandle, IpcOpenMem, Shareable};

use super::driver::{cu, H};
use super::{Cuda, Event, Outcome};
use crate::replay::backend::shared::Call;
use crate::replay::pairing::HANDLE_POSIX_FD;
use crate::replay::peers::Rendezvous;

/// Why an import is skipped when it cannot be paired with its export.
const NO_KEY: &str = "the recording could not tell which export this handle pairs with";

/// Why a call that opens what another process exported (`what`: "opens memory") is skipped
/// when the process is replayed alone.
fn alone(what: &str) -> Outcome {
    Outcome::Skipped(format!(
        "{what} another process exported: replay every process of the archive together \
         (hrr-playback ROOT --all)"
    ))
}

/// The live handle another replay process published under `recorded`, waited for; replayed
/// alone, the skipped outcome saying why (`what` the call does).
fn peer_handle(recorded: &[u8], what: &str) -> Result<std::result::Result<IpcHandle, Outcome>> {
    let Some(rv) = Rendezvous::from_env() else {
        return Ok(Err(alone(what)));
    };
    Ok(Ok(IpcHandle(published(&rv.wait_for(recorded)?)?)))
}

impl Cuda {
    /// `cuIpcGetMemHandle`: export the live allocation and publish its handle.
    pub(super) fn ipc_get_mem_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcMemHandle = ev.read()?;
        let dptr = self.mem.translate(s.dptr);
        export(&s.handle, |live| {
            Ok(cu!(self.api, cuIpcGetMemHandle(live, dptr)))
        })
    }

    /// `cuIpcOpenMemHandle`: open what another replay process published for the recorded
    /// handle; the recorded range now means the opened one.
    pub(super) fn ipc_open_mem_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcOpenMem = ev.read()?;
        let handle = or_skip!(peer_handle(&s.handle, "opens memory")?);
        let mut dptr = 0u64;
        cu!(self.api, cuIpcOpenMemHandle_v2(&mut dptr, handle, s.flags))?;
        if s.bytes == 0 && dptr != s.dptr {
            bail!("the opened memory moved and its recorded size is unknown: cannot translate it");
        }
        self.mem.note_moved(s.dptr, s.bytes, dptr);
        Ok(Outcome::Done)
    }

    /// `cuIpcCloseMemHandle`.
    pub(super) fn ipc_close_mem_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: DevicePtr = ev.read()?;
        if Rendezvous::from_env().is_none() {
            return Ok(alone("closes memory"));
        }
        cu!(self.api, cuIpcCloseMemHandle(self.mem.translate(s.dptr)))?;
        self.mem.forget(s.dptr);
        Ok(Outcome::Done)
    }

    /// `cuIpcGetEventHandle`: export the live event and publish its handle.
    pub(super) fn ipc_get_event_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcEventHandle = ev.read()?;
        let event = self.handles.get(s.event)?;
        export(&s.handle, |live| {
            Ok(cu!(self.api, cuIpcGetEventHandle(live, event)))
        })
    }

    /// `cuIpcOpenEventHandle`: open the event another replay process published for the
    /// recorded handle; the recorded event handle now means it.
    pub(super) fn ipc_open_event_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcEventHandle = ev.read()?;
        let handle = or_skip!(peer_handle(&s.handle, "opens an event")?);
        let mut event: H = std::ptr::null_mut();
        cu!(self.api, cuIpcOpenEventHandle(&mut event, handle))?;
        self.handles.insert(s.event, event);
        Ok(Outcome::Done)
    }
}

/// `CU_MEM_HANDLE_TYPE_FABRIC`.
const HANDLE_FABRIC: u32 = 8;

impl Cuda {
    /// `cuMemExportToShareableHandle`: export the live physical memory and offer it under the
    /// recorded key (a file descriptor through the descriptor server, a fabric handle by its
    /// bytes).
    pub(super) fn mem_export_shareable(&mut self, ev: &Event) -> Result<Outcome> {
        let s: Shareable = ev.read()?;
        let Some(rv) = Rendezvous::from_env() else {
            return Ok(Outcome::Done);
        };
        if s.key.is_empty() {
            return Ok(Outcome::Skipped(NO_KEY.into()));
        }
        let live = self
            .mem
            .live_handle(s.handle)
            .ok_or_else(|| anyhow!("export of an unknown allocation handle 0x{:x}", s.handle))?;
        match s.kind {
            HANDLE_POSIX_FD => {
                let mut fd: c_int = -1;
                let out = &mut fd as *mut c_int as *mut c_void;
                cu!(
                    self.api,
                    cuMemExportToShareableHandle(out, live, c_int::try_from(s.kind)?, s.flags)
                )?;
                // SAFETY: the driver handed this process a new descriptor.
                rv.offer_fd(&rv.export_name(ev.seq)?, unsafe {
                    OwnedFd::from_raw_fd(fd)
                })?;
            }
            HANDLE_FABRIC => {
                let mut h = IpcHandle::default();
                let out = &mut h as *mut IpcHandle as *mut c_void;
                cu!(
                    self.api,
                    cuMemExportToShareableHandle(out, live, c_int::try_from(s.kind)?, s.flags)
                )?;
                rv.publish(&s.key, &h.0)?;
            }
            k => {
                return Ok(Outcome::Skipped(format!(
                    "shareable handles of type {k} are not re-paired"
                )))
            }
        }
        Ok(Outcome::Done)
    }

    /// `cuMemImportFromShareableHandle`: import what another replay process offered under the
    /// recorded key; the recorded allocation handle now means it.
    pub(super) fn mem_import_shareable(&mut self, ev: &Event) -> Result<Outcome> {
        let s: Shareable = ev.read()?;
        let Some(rv) = Rendezvous::from_env() else {
            return Ok(alone("imports memory"));
        };
        if s.key.is_empty() {
            return Ok(Outcome::Skipped(NO_KEY.into()));
        }
        let kind = c_int::try_from(s.kind)?;
        let mut live = 0u64;
        match s.kind {
            HANDLE_POSIX_FD => {
                let fd = rv.take_fd(&rv.paired_export(ev.seq)?)?;
                let os = fd.as_raw_fd() as usize as *mut c_void;
                cu!(
                    self.api,
                    cuMemImportFromShareableHandle(&mut live, os, kind)
                )?;
            }
            HANDLE_FABRIC => {
                let mut raw = IpcHandle(published(&rv.wait_for(&s.key)?)?);
                let os = &mut raw as *mut IpcHandle as *mut c_void;
                cu!(
                    self.api,
                    cuMemImportFromShareableHandle(&mut live, os, kind)
                )?;
            }
            k => {
                return Ok(Outcome::Skipped(format!(
                    "shareable handles of type {k} are not re-paired"
                )))
            }
        }
        self.mem.adopt_handle(s.handle, live);
        Ok(Outcome::Done)
    }
}

/// An export replayed beside other processes: the live handle `get` fills (its driver call) is
/// published under the `recorded` one. Replayed alone, there is no one to open it: nothing to do.
fn export(recorded: &[u8], get: impl FnOnce(&mut IpcHandle) -> Call<()>) -> Result<Outcome> {
    let Some(rv) = Rendezvous::from_env() else {
        return Ok(Outcome::Done);
    };
    let mut live = IpcHandle::default();
    get(&mut live)??;
    rv.publish(recorded, &live.0)?;
    Ok(Outcome::Done)
}

/// A published handle's bytes, checked for size.
fn published(bytes: &[u8]) -> Result<[u8; IPC_HANDLE_BYTES]> {
    match <[u8; IPC_HANDLE_BYTES]>::try_from(bytes) {
        Ok(raw) => Ok(raw),
        Err(_) => bail!(
            "the published handle has {} bytes, not {IPC_HANDLE_BYTES}",
            bytes.len()
        ),
    }
}
