//! What a call does, for capture (when to flush, what to order) and replay (what to prescan,
//! what to reissue) alike.

use hrr_archive::schema::CallClass;

/// What a call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Driver or runtime initialisation.
    Init,
    /// A query of the driver, a device or an object: changes nothing.
    Query,
    /// Creates, destroys or selects a context or device.
    Context,
    /// A device allocation whose range replay reserves at its recorded address.
    Alloc,
    /// Reserves a device address range (virtual memory management) replay reserves again.
    Reserve,
    /// Managed (unified) memory allocation.
    Managed,
    /// Frees a device allocation.
    Free,
    /// Page-locked or registered host memory.
    HostMem,
    /// Virtual memory management: reserve, create, map, access, release.
    Vmm,
    /// A host-to-device copy (its source bytes are recorded).
    H2d,
    /// A device-to-host copy (its result is recorded).
    D2h,
    /// A device-to-device copy.
    D2d,
    /// A copy whose direction is found at run time (may hold H2D source or D2H result bytes).
    Copy,
    /// A memset.
    Memset,
    /// Loads code: a module, a library, a fat binary.
    Load,
    /// Unloads code.
    Unload,
    /// Looks up a function, kernel, module or global in loaded code.
    Lookup,
    /// Sets a function or kernel attribute or cache configuration.
    Attribute,
    /// Registers code or symbols with the runtime (HIP start-up).
    Register,
    /// Prepares a launch (HIP's pushed call configuration).
    Configure,
    /// A kernel launch.
    Launch,
    /// Creates or destroys a stream.
    Stream,
    /// Creates, records or destroys an event, or makes a stream wait for one.
    Event,
    /// Blocks the host until work is done.
    Sync,
    /// Begins or ends a stream capture.
    Capture,
    /// Instantiates or destroys a graph.
    Graph,
    /// Launches a graph.
    GraphLaunch,
    /// Enqueues a host function.
    HostFunc,
    /// Creates or destroys a CUDA array, a mipmapped array, a texture or a surface object, or
    /// encodes a tensor map (a TMA descriptor): the opaque objects kernels are handed.
    Array,
    /// Creates, configures, queries or destroys a stream-ordered memory pool.
    Pool,
    /// Host-visible memory (mapped, managed) the host wrote: replay writes the bytes (a
    /// pseudo-call recorded by capture, no driver export).
    HostWrite,
    /// Host-visible memory the host read after a synchronisation: replay compares the bytes,
    /// like a D2H result (a pseudo-call recorded by capture, no driver export).
    HostCheck,
    /// Not a call: the result of an asynchronous D2H copy, recorded when the copy completed.
    D2hResult,
    /// Not a call: the source of an asynchronous H2D copy from page-locked memory, recorded
    /// after the call returned; replay takes it for the copy's own source.
    H2dSource,
    /// Exports device memory or an event to other processes, or opens or closes what another
    /// process exported (`cuIpc*`): replay re-pairs them between the processes it replays
    /// together (`hrr-playback --all`).
    Ipc,
    /// What device memory held when the program freed it, in a process that had copied no
    /// result back: replay compares it like a D2H result (a pseudo-call recorded by capture,
    /// no driver export).
    FreeCheck,
}

impl Kind {
    /// The schema's classification for consumers that know no API.
    pub fn schema_class(self) -> CallClass {
        match self {
            Kind::Launch => CallClass::Launch,
            Kind::GraphLaunch => CallClass::GraphLaunch,
            Kind::H2d => CallClass::H2d,
            // A generic copy may hold a D2H result.
            Kind::D2h | Kind::Copy | Kind::HostCheck | Kind::D2hResult | Kind::FreeCheck => {
                CallClass::D2h
            }
            Kind::HostWrite => CallClass::H2d,
            _ => CallClass::Other,
        }
    }
}
