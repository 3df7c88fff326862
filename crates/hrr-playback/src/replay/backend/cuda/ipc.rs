//! Inter-process handles (`cuIpc*`), replayed beside the other processes of the archive
//! (`hrr-playback ROOT --all`, `crate::replay::peers`): an export publishes the live driver's
//! handle under the recorded one, an open waits for it and maps what it names where the
//! recording had it (translated like any moved allocation). Replayed alone, an open cannot be
//! reproduced and is skipped with the reason. Events exported and opened (`cuIpcGetEventHandle`,
//! `cuIpcOpenEventHandle`) are re-paired the same way; the opened event then stands for the
//! recorded one in this process's later calls.

use anyhow::{bail, Result};
use hrr_calls::cuda::ffi::{IpcHandle, IPC_HANDLE_BYTES};
use hrr_calls::shapes::{DevicePtr, IpcEventHandle, IpcMemHandle, IpcOpenMem};

use super::driver::{cu, H};
use super::{Cuda, Event, Outcome};
use crate::replay::peers::Rendezvous;

/// Why an open is skipped when the process is replayed alone.
const ALONE: &str = "opens memory another process exported: replay every process of the \
                     archive together (hrr-playback ROOT --all)";
const ALONE_EVENT: &str = "opens an event another process exported: replay every process of \
                           the archive together (hrr-playback ROOT --all)";

impl Cuda {
    /// `cuIpcGetMemHandle`: export the live allocation and publish its handle.
    pub(super) fn ipc_get_mem_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcMemHandle = ev.read()?;
        let dptr = self.mem.translate(s.dptr);
        export(&s.handle, |live| {
            cu!(self.api, cuIpcGetMemHandle(live, dptr))?;
            Ok(())
        })
    }

    /// `cuIpcOpenMemHandle`: open what another replay process published for the recorded
    /// handle; the recorded range now means the opened one.
    pub(super) fn ipc_open_mem_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcOpenMem = ev.read()?;
        let Some(rv) = Rendezvous::from_env() else {
            return Ok(Outcome::Skipped(ALONE.into()));
        };
        let raw = published(&rv.wait_for(&s.handle)?)?;
        let mut dptr = 0u64;
        cu!(
            self.api,
            cuIpcOpenMemHandle_v2(&mut dptr, IpcHandle(raw), s.flags)
        )?;
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
            return Ok(Outcome::Skipped(ALONE.into()));
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
            cu!(self.api, cuIpcGetEventHandle(live, event))?;
            Ok(())
        })
    }

    /// `cuIpcOpenEventHandle`: open the event another replay process published for the
    /// recorded handle; the recorded event handle now means it.
    pub(super) fn ipc_open_event_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcEventHandle = ev.read()?;
        let Some(rv) = Rendezvous::from_env() else {
            return Ok(Outcome::Skipped(ALONE_EVENT.into()));
        };
        let raw = published(&rv.wait_for(&s.handle)?)?;
        let mut event: H = std::ptr::null_mut();
        cu!(self.api, cuIpcOpenEventHandle(&mut event, IpcHandle(raw)))?;
        self.handles.insert(s.event, event);
        Ok(Outcome::Done)
    }
}

/// An export replayed beside other processes: the live handle `get` fills is published under
/// the `recorded` one. Replayed alone, there is no one to open it: nothing to do.
fn export(recorded: &[u8], get: impl FnOnce(&mut IpcHandle) -> Result<()>) -> Result<Outcome> {
    let Some(rv) = Rendezvous::from_env() else {
        return Ok(Outcome::Done);
    };
    let mut live = IpcHandle::default();
    get(&mut live)?;
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
