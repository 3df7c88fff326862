//! Inter-process handles (`cuIpc*`), replayed beside the other processes of the archive
//! (`hrr-playback ROOT --all`, `crate::replay::peers`): an export publishes the live driver's
//! handle under the recorded one, an open waits for it and maps what it names where the
//! recording had it (translated like any moved allocation). Replayed alone, an open cannot be
//! reproduced and is skipped with the reason. IPC event handles are not re-paired yet.

use anyhow::{bail, Result};
use hrr_calls::cuda::ffi::{IpcHandle, IPC_HANDLE_BYTES};
use hrr_calls::shapes::{DevicePtr, IpcEventHandle, IpcMemHandle, IpcOpenMem};

use super::driver::cu;
use super::{Cuda, Event, Outcome};
use crate::replay::peers::Rendezvous;

/// Why an open is skipped when the process is replayed alone.
const ALONE: &str = "opens memory another process exported: replay every process of the \
                     archive together (hrr-playback ROOT --all)";

impl Cuda {
    /// `cuIpcGetMemHandle`: export the live allocation and publish its handle.
    pub(super) fn ipc_get_mem_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcMemHandle = ev.read()?;
        let Some(rv) = Rendezvous::from_env() else {
            return Ok(Outcome::Done); // no other process to open it
        };
        let mut live = IpcHandle::default();
        let dptr = self.mem.translate(s.dptr);
        cu!(self.api, cuIpcGetMemHandle(&mut live, dptr))?;
        rv.publish(&s.handle, &live.0)?;
        Ok(Outcome::Done)
    }

    /// `cuIpcOpenMemHandle`: open what another replay process published for the recorded
    /// handle; the recorded range now means the opened one.
    pub(super) fn ipc_open_mem_handle(&mut self, ev: &Event) -> Result<Outcome> {
        let s: IpcOpenMem = ev.read()?;
        let Some(rv) = Rendezvous::from_env() else {
            return Ok(Outcome::Skipped(ALONE.into()));
        };
        let bytes = rv.wait_for(&s.handle)?;
        let Ok(raw) = <[u8; IPC_HANDLE_BYTES]>::try_from(&bytes[..]) else {
            bail!(
                "the published handle has {} bytes, not {IPC_HANDLE_BYTES}",
                bytes.len()
            );
        };
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

    /// `cuIpcGetEventHandle`, `cuIpcOpenEventHandle`: not re-paired yet.
    pub(super) fn ipc_event(&mut self, ev: &Event) -> Result<Outcome> {
        let _: IpcEventHandle = ev.read()?;
        Ok(Outcome::Skipped(
            "IPC event handles are not re-paired by replay yet".into(),
        ))
    }
}
