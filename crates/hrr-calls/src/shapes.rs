//! Record shapes: the ordered, typed fields of a call's events, shared by every API (HIP's field
//! names follow CUDA's wherever the meaning is the same). Capture fills a shape and writes it;
//! replay reads an event back into the same struct. The order of the fields is the order on the
//! wire; changing it changes the format (see `tests/schema.rs`).

use hrr_archive::schema::PayloadBuilder;

use crate::wire::{FieldType, Fields, Wire};
use crate::FieldError;

/// A record shape: a struct whose fields are an event's payload after `result`.
pub trait Shape: Sized {
    /// Field names and wire types, in payload order.
    const FIELDS: &'static [(&'static str, FieldType)];
    /// Append every field, in order.
    fn write(&self, p: &mut PayloadBuilder);
    /// Read the fields back from a decoded event.
    fn read(fields: &Fields) -> Result<Self, FieldError>;
}

macro_rules! shapes {
    ($( $(#[$meta:meta])* $name:ident { $($field:ident : $ft:ident),* $(,)? } )*) => {
        $(
            $(#[$meta])*
            #[derive(Debug, Clone, Default, PartialEq, Eq)]
            #[allow(missing_docs)]
            pub struct $name { $(pub $field: $crate::rust_type!($ft),)* }

            impl Shape for $name {
                const FIELDS: &'static [(&'static str, FieldType)] =
                    &[$((stringify!($field), FieldType::$ft),)*];
                #[inline]
                fn write(&self, _p: &mut PayloadBuilder) {
                    $( Wire::put(&self.$field, _p); )*
                }
                fn read(_fields: &Fields) -> Result<Self, FieldError> {
                    let mut _at = 0usize;
                    Ok($name { $($field: $crate::wire::get_near(_fields, stringify!($field), &mut _at)?,)* })
                }
            }
        )*
    };
}

shapes! {
    // Initialisation, devices, contexts.
    /// Initialisation flags.
    Init { flags: U32 }
    /// A driver or runtime version.
    Version { version: I32 }
    /// A device ordinal looked up.
    DeviceGet { device: I32, ordinal: I32 }
    /// How many devices.
    DeviceCount { count: I32 }
    /// A device's name.
    DeviceName { name: Str, device: I32 }
    /// A device's memory size.
    DeviceTotalMem { bytes: U64, device: I32 }
    /// One device attribute.
    DeviceAttribute { value: I32, attrib: I32, device: I32 }
    /// A device's UUID (16 bytes).
    DeviceUuid { uuid: Bytes, device: I32 }
    /// HIP device properties (name and architecture read from the struct).
    DeviceProperties { device: I32, name: Str, gcn_arch_name: Str }
    /// A call on one device.
    Device { device: I32 }
    /// A retained primary context.
    PrimaryCtx { ctx: Handle, device: I32 }
    /// A created context.
    CtxCreate { ctx: Handle, flags: U32, device: I32 }
    /// A call on one context.
    Ctx { ctx: Handle }
    /// A call that records nothing but its result.
    NoFields {}
    /// A context limit set (`CU_LIMIT_*`: stack, printf FIFO, malloc heap, …).
    CtxLimit { limit: I32, value: U64 }
    /// The context's preferred L1/shared-memory split (`CU_FUNC_CACHE_PREFER_*`).
    CacheConfig { config: I32 }

    // Device memory.
    /// A device allocation.
    MemAlloc { dptr: Ptr, bytesize: U64 }
    /// A pitched allocation (CUDA: with the element size).
    MemAllocPitch { dptr: Ptr, pitch: U64, width: U64, height: U64, element_bytes: U32 }
    /// A pitched allocation (HIP).
    MallocPitch { dptr: Ptr, pitch: U64, width: U64, height: U64 }
    /// An allocation with flags (managed memory, HIP's extended allocation).
    MemAllocFlags { dptr: Ptr, bytesize: U64, flags: U32 }
    /// A call on one device pointer.
    DevicePtr { dptr: Ptr }
    /// A stream-ordered allocation.
    MemAllocAsync { dptr: Ptr, bytesize: U64, stream: Handle }
    /// A stream-ordered allocation from a pool.
    MemAllocFromPool { dptr: Ptr, bytesize: U64, pool: Handle, stream: Handle }
    /// A stream-ordered free.
    MemFreeAsync { dptr: Ptr, stream: Handle }

    // Host memory.
    /// Page-locked host memory with flags.
    HostAlloc { host_ptr: Ptr, bytesize: U64, flags: U32 }
    /// Page-locked host memory.
    HostAllocPlain { host_ptr: Ptr, bytesize: U64 }
    /// A call on one host pointer.
    HostPtr { host_ptr: Ptr }
    /// Registered host memory, with its contents at registration.
    HostRegister { host_ptr: Ptr, bytesize: U64, flags: U32, contents: Blob }
    /// The device pointer of mapped host memory.
    HostDevicePointer { dptr: Ptr, host_ptr: Ptr, flags: U32 }

    // Virtual memory management.
    /// A reserved address range.
    AddressReserve { ptr: Ptr, size: U64, alignment: U64, addr: Ptr, flags: U64 }
    /// A call on an address range.
    Range { ptr: Ptr, size: U64 }
    /// A physical allocation (its properties struct, 32 bytes).
    MemCreate { handle: Handle, size: U64, prop: Bytes, flags: U64 }
    /// A call on a physical allocation handle.
    MemHandle { handle: Handle }
    /// A mapping of a physical allocation.
    MemMap { ptr: Ptr, size: U64, offset: U64, handle: Handle, flags: U64 }
    /// Access descriptors set on a range (12 bytes each).
    MemSetAccess { ptr: Ptr, size: U64, desc: Bytes, count: U64 }

    // Copies and memsets.
    /// A host-to-device copy and its source bytes.
    CopyH2d { dst: Ptr, src: Ptr, bytes: U64, stream: Handle, h2d_blob: Blob }
    /// A device-to-host copy and the bytes it produced.
    CopyD2h { dst: Ptr, src: Ptr, bytes: U64, stream: Handle, d2h_blob: Blob }
    /// A device-to-device copy.
    CopyD2d { dst: Ptr, src: Ptr, bytes: U64, stream: Handle }
    /// A copy between the memory of two contexts (`cuMemcpyPeer`).
    CopyPeer { dst: Ptr, dst_ctx: Handle, src: Ptr, src_ctx: Handle, bytes: U64 }
    /// An asynchronous copy between the memory of two contexts (`cuMemcpyPeerAsync`).
    CopyPeerAsync { dst: Ptr, dst_ctx: Handle, src: Ptr, src_ctx: Handle, bytes: U64, stream: Handle }
    /// Peer access to a context's memory enabled from the current one.
    PeerAccess { ctx: Handle, flags: U32 }
    /// A copy whose direction was found from pointer attributes (CUDA's unified copies).
    CopyAny { dst: Ptr, src: Ptr, bytes: U64, stream: Handle, direction: U8, h2d_blob: Blob, d2h_blob: Blob }
    /// A copy with a HIP copy kind.
    CopyKind { dst: Ptr, src: Ptr, bytes: U64, kind: I32, stream: Handle, direction: U8, h2d_blob: Blob, d2h_blob: Blob }
    /// A memset of 1-, 2- or 4-byte elements.
    Memset { dst: Ptr, value: U32, element_bytes: U32, count: U64, stream: Handle }
    /// A 2D memset: `height` rows of `width` 1-, 2- or 4-byte elements, `pitch` bytes apart.
    Memset2d { dst: Ptr, pitch: U64, value: U32, element_bytes: U32, width: U64, height: U64, stream: Handle }
    /// A stream memory operation: a 32- or 64-bit `value` written to device memory at `addr` in
    /// stream order (`cuStreamWriteValue*`), or the stream waiting until the word there
    /// compares to `value` as `flags` say (`cuStreamWaitValue*`).
    StreamValue { stream: Handle, addr: Ptr, value: U64, flags: U32 }
    /// A Hopper TMA descriptor encoded (`cuTensorMapEncodeTiled`, `cuTensorMapEncodeIm2col`):
    /// the 128 bytes made (`map`) and what made them, the global address first. The arrays
    /// are little-endian: `dims` and `box_dim`/`elem_strides` `rank` entries (u64, u32),
    /// `strides` `rank - 1` (u64); an im2col map's corners `rank - 2` (i32) and no `box_dim`.
    TensorMapEncode {
        map: Bytes, im2col: U8, dtype: I32, rank: U32, addr: Ptr,
        dims: Bytes, strides: Bytes, box_dim: Bytes, elem_strides: Bytes,
        lower: Bytes, upper: Bytes, channels: U32, pixels: U32,
        interleave: I32, swizzle: I32, l2: I32, oob: I32,
    }
    /// A tensor map's global address replaced in place (`cuTensorMapReplaceAddress`): its
    /// bytes before and after.
    TensorMapReplace { before: Bytes, map: Bytes, addr: Ptr }

    // Symbols (HIP `__device__` variables).
    /// A copy into a `__device__` variable.
    CopyToSymbol { symbol: Ptr, name: Str, code: Code, src: Ptr, bytes: U64, offset: U64, kind: I32, stream: Handle, direction: U8, h2d_blob: Blob }
    /// A copy out of a `__device__` variable.
    CopyFromSymbol { dst: Ptr, symbol: Ptr, name: Str, code: Code, bytes: U64, offset: U64, kind: I32, stream: Handle, direction: U8, d2h_blob: Blob }
    /// The device address of a `__device__` variable.
    SymbolAddress { dptr: Ptr, symbol: Ptr, name: Str, code: Code }
    /// A registered fat binary.
    RegisterFatBinary { modules: Handle, code: Code, bytes: U64 }
    /// A registered kernel stub.
    RegisterFunction { modules: Handle, host_function: Ptr, name: Str }
    /// A registered `__device__` variable.
    RegisterVar { modules: Handle, host_var: Ptr, name: Str, bytes: U64, constant: I32 }
    /// A call on a registered fat binary.
    FatBinary { modules: Handle }

    // Code.
    /// A loaded module and its image.
    ModuleLoad { module: Handle, code: Code }
    /// A call on one module.
    Module { module: Handle }
    /// A function looked up in a module.
    ModuleGetFunction { function: Handle, module: Handle, name: Str }
    /// A global looked up in a module or library.
    Global { dptr: Ptr, bytes: U64, owner: Handle, name: Str }
    /// A loaded library and its image.
    LibraryLoad { library: Handle, code: Code }
    /// A call on one library.
    Library { library: Handle }
    /// A kernel looked up in a library.
    LibraryGetKernel { kernel: Handle, library: Handle, name: Str }
    /// The module of a library.
    LibraryGetModule { module: Handle, library: Handle }
    /// The function of a library kernel in the current context.
    KernelGetFunction { function: Handle, kernel: Handle }
    /// A function attribute set.
    FuncSetAttribute { function: Handle, attrib: I32, value: I32 }
    /// A kernel attribute set on a device.
    KernelSetAttribute { attrib: I32, value: I32, kernel: Handle, device: I32 }
    /// A function's cache configuration.
    FuncSetCacheConfig { function: Handle, config: I32 }

    // Launches.
    /// HIP's pushed launch configuration (`<<<>>>`).
    CallConfiguration { grid_x: U32, grid_y: U32, grid_z: U32, block_x: U32, block_y: U32, block_z: U32, shared_mem: U64, stream: Handle }
    /// A kernel launch: the kernel, its code object, dimensions and packed argument bytes.
    Launch {
        function: Handle, kernel: Str, code: Code,
        grid_x: U32, grid_y: U32, grid_z: U32, block_x: U32, block_y: U32, block_z: U32,
        shared_mem: U32, stream: Handle, args: Bytes, arg_offsets: U64s, arg_sizes: U64s,
        attrs: Bytes, cooperative: U8, in_capture: U8, args_known: U8,
    }

    // Streams, events, graphs.
    /// A created stream.
    StreamCreate { stream: Handle, flags: U32 }
    /// A created stream with a priority.
    StreamCreatePriority { stream: Handle, flags: U32, priority: I32 }
    /// A call on one stream.
    Stream { stream: Handle }
    /// A stream waiting for an event.
    StreamWaitEvent { stream: Handle, event: Handle, flags: U32 }
    /// A created event.
    EventCreate { event: Handle, flags: U32 }
    /// An event recorded on a stream.
    EventRecord { event: Handle, stream: Handle }
    /// An event recorded on a stream, with flags.
    EventRecordFlags { event: Handle, stream: Handle, flags: U32 }
    /// A call on one event.
    Event { event: Handle }
    /// A stream capture begun.
    BeginCapture { stream: Handle, mode: I32 }
    /// A stream capture into an existing graph (`cuStreamBeginCaptureToGraph`), after `deps`.
    BeginCaptureToGraph { stream: Handle, graph: Handle, deps: U64s, mode: I32 }
    /// What the driver said of a stream in capture (`cuStreamGetCaptureInfo`, recorded only
    /// while it captures): the graph being captured into and the nodes the next captured work
    /// will follow.
    CaptureInfo { stream: Handle, graph: Handle, deps: U64s }
    /// A stream capture's dependency set replaced or extended (`cuStreamUpdateCaptureDependencies`).
    CaptureDeps { stream: Handle, deps: U64s, flags: U32 }
    /// A stream capture ended, and the graph it made.
    EndCapture { stream: Handle, graph: Handle }
    /// An instantiated graph.
    GraphInstantiate { exec: Handle, graph: Handle, flags: U64 }
    /// An instantiated graph, with its upload stream.
    GraphInstantiateParams { exec: Handle, graph: Handle, flags: U64, upload_stream: Handle }
    /// A graph launch.
    GraphLaunch { exec: Handle, stream: Handle }
    /// A call on one graph or graph instantiation.
    Graph { graph: Handle }
    /// A host function enqueued on a stream.
    HostFunc { stream: Handle, func: Ptr, data: Ptr }

    // Handles reached by other paths.
    /// The module of a function, and the function's name (replay looks it up by name there
    /// when the function itself was never looked up).
    FuncGetModule { module: Handle, function: Handle, name: Str }
    /// The functions of a module or kernels of a library, enumerated: handles and their names
    /// (one per line), in the driver's order.
    Enumerated { owner: Handle, handles: U64s, names: Str }
    // Explicit CUDA graphs (wt-graphs).
    /// A created graph.
    GraphCreate { graph: Handle, flags: U32 }
    /// A graph node added, or the parameters of one set (in a graph: `exec` 0; in an
    /// instantiation: `exec` set, `graph` 0). One shape for every node type (`node_type`,
    /// `CUgraphNodeType`): a kernel node's fields are recorded as `cuLaunchKernel`'s; a memcpy
    /// node's `CUDA_MEMCPY3D` (unified pointers resolved to host or device) in `copy`; a memset
    /// node's `CUDA_MEMSET_NODE_PARAMS` in `memset`; `deps`: the nodes it depends on; `edges`:
    /// their `CUgraphEdgeData` (`_v2` calls); `library_kernel`: `function` is a `CUkernel`;
    /// `cond`: a conditional node's handle, type (`CUgraphConditionalNodeType`), body count and
    /// the body graphs the driver created, in that order (absent in older archives: empty).
    GraphNode {
        node: Handle, graph: Handle, exec: Handle, deps: U64s, edges: Bytes, node_type: I32, ctx: Handle,
        function: Handle, kernel: Str, code: Code, library_kernel: U8,
        grid_x: U32, grid_y: U32, grid_z: U32, block_x: U32, block_y: U32, block_z: U32,
        shared_mem: U32, args: Bytes, arg_offsets: U64s, arg_sizes: U64s, args_known: U8,
        copy: Bytes, memset: Bytes, host_fn: Ptr, host_data: Ptr, child: Handle, event: Handle,
        cond: U64s,
    }
    /// Dependencies added between nodes of a graph (`from[i]` before `to[i]`).
    GraphEdges { graph: Handle, from: U64s, to: U64s, edges: Bytes }
    /// An instantiation updated from a graph.
    GraphExecUpdate { exec: Handle, graph: Handle }
    /// A cloned graph.
    GraphClone { clone: Handle, graph: Handle }
    /// A call on one graph node.
    GraphNodeHandle { node: Handle }
    /// A conditional-node handle created.
    ConditionalHandle { handle: Handle, graph: Handle, ctx: Handle, default_value: U32, flags: U32 }
    /// The bytes of a host region a graph launch's memcpy nodes read (recorded before the
    /// launch that reads them).
    GraphHostSource { exec: Handle, host_ptr: Ptr, bytes: U64, h2d_blob: Blob }
    /// The bytes a graph launch's memcpy nodes wrote to a host region (recorded once the
    /// launch completed).
    GraphHostResult { exec: Handle, stream: Handle, host_ptr: Ptr, bytes: U64, d2h_blob: Blob }
    // 2D/3D copies, arrays, texture and surface objects (wt-copies).
    /// A 2D or 3D copy: the `CUDA_MEMCPY2D`/`CUDA_MEMCPY3D` fields (a 2D copy records z, LOD and
    /// the heights as 0 and depth 1; a copy to, from or between arrays its offset as `*_x`, one
    /// row of `bytes` and no pitch), the direction found (arrays count as device memory, a
    /// unified pointer by its attributes), the host source packed (`width_bytes` per row, rows
    /// x depth) and, for a host destination, the packed result.
    CopyPitched {
        src_type: U32, src_host: Ptr, src_device: Ptr, src_array: Handle,
        src_x: U64, src_y: U64, src_z: U64, src_lod: U64, src_pitch: U64, src_height: U64,
        dst_type: U32, dst_host: Ptr, dst_device: Ptr, dst_array: Handle,
        dst_x: U64, dst_y: U64, dst_z: U64, dst_lod: U64, dst_pitch: U64, dst_height: U64,
        width_bytes: U64, height: U64, depth: U64, stream: Handle, direction: U8,
        h2d_blob: Blob, d2h_blob: Blob,
    }
    /// A created array or mipmapped array (its descriptor's fields; `levels` 0 for an array).
    ArrayCreate { array: Handle, width: U64, height: U64, depth: U64, format: U32, channels: U32, flags: U32, levels: U32 }
    /// A call on one array or mipmapped array.
    Array { array: Handle }
    /// The array of one level of a mipmapped array.
    MipmapLevel { array: Handle, mipmap: Handle, level: U32 }
    /// A created texture or surface object: its value, the resource type and the C structs of
    /// the resource, texture and resource view descriptors (surfaces: the resource only).
    ObjectCreate { object: Handle, res_type: U32, res_desc: Bytes, tex_desc: Bytes, view_desc: Bytes }
    /// A call on one texture or surface object.
    Object { object: Handle }
    // Host-visible memory and stream-ordered pools (hostmem).
    /// Bytes the host wrote into host-visible memory (mapped host memory, managed memory)
    /// since the state hrr knew: `bytes` at `ptr` + `offset` (`ptr`: the region's recorded base).
    HostMemWrite { ptr: Ptr, offset: U64, bytes: U64, h2d_blob: Blob }
    /// Bytes of host-visible memory that changed by the time the host synchronised: replay
    /// compares them like a D2H result.
    HostMemCheck { ptr: Ptr, offset: U64, bytes: U64, d2h_blob: Blob }
    /// The `bytes` device allocation `dptr` held when the program freed it (a process that had
    /// copied no result back): replay compares them like a D2H result.
    FreeCheck { dptr: Ptr, bytes: U64, d2h_blob: Blob }
    /// A created memory pool and its properties (`CUmemPoolProps`, 88 bytes).
    PoolCreate { pool: Handle, props: Bytes }
    /// A call on one memory pool.
    Pool { pool: Handle }
    /// A memory pool attribute set or read (4- or 8-byte value, as a u64).
    PoolAttribute { pool: Handle, attrib: I32, value: U64 }
    /// A memory pool trimmed to keep at most `bytes`.
    PoolTrim { pool: Handle, bytes: U64 }
    /// Access descriptors set on a memory pool (12 bytes each).
    PoolSetAccess { pool: Handle, desc: Bytes, count: U64 }
    /// A device's memory pool, asked or set.
    DevicePool { pool: Handle, device: I32 }

    // Inter-process handles (issue 19): a handle's 64 bytes pair an export with its opens.
    /// Device memory at `dptr` exported as `handle` (`cuIpcGetMemHandle`).
    IpcMemHandle { handle: Bytes, dptr: Ptr }
    /// Memory another process exported as `handle`, opened at `dptr`: the whole allocation,
    /// `bytes` long (its range as the driver reported it after the call).
    IpcOpenMem { dptr: Ptr, handle: Bytes, flags: U32, bytes: U64 }
    /// An event exported as `handle`, or opened from it.
    IpcEventHandle { handle: Bytes, event: Handle }
    /// Physical memory (`cuMemCreate`'s handle) exported as an OS handle of type `kind`
    /// (`CUmemAllocationHandleType`), or imported from one into `handle`. `key` pairs an
    /// import with its export across processes: for a POSIX file descriptor, the device and
    /// inode numbers of the file it refers to (16 bytes, as `fstat` gives them, the same in
    /// every process holding it); for a fabric handle its 64 bytes; else empty.
    Shareable { handle: Handle, kind: U32, flags: U64, key: Bytes }

    // Asynchronous D2H results (async copies).
    /// What an asynchronous device-to-host copy produced, read when the copy completed (by a
    /// host function capture enqueues behind it): `copy` is the sequence number of the copy's
    /// event (whose own `d2h_blob` is then none), `d2h_blob` the bytes at `dst`.
    CopyResult { copy: U64, dst: Ptr, bytes: U64, stream: Handle, d2h_blob: Blob }
    /// The source bytes of an async H2D copy from page-locked memory, read after the call
    /// returned (by capture's recorder thread, before the program could change them): `copy`
    /// is the sequence number of the copy's event (whose own `h2d_blob` is then none).
    CopySource { copy: U64, src: Ptr, bytes: U64, stream: Handle, h2d_blob: Blob }
}

/// A [`Launch`] record borrowed from where capture keeps its parts (the kernel's name and
/// argument bytes in a thread's kept buffers, the argument layout in what capture knows of the
/// function): written exactly as the `Launch` of the same values is, without moving them into
/// one first (capture's launch hot path).
#[derive(Debug, Clone, Copy)]
pub struct LaunchView<'a> {
    /// The function handle.
    pub function: u64,
    /// The kernel's name.
    pub kernel: &'a str,
    /// Its code object.
    pub code: Option<hrr_archive::ObjectId>,
    /// Grid dimensions.
    pub grid: [u32; 3],
    /// Block dimensions.
    pub block: [u32; 3],
    /// Dynamic shared memory bytes.
    pub shared_mem: u32,
    /// The stream.
    pub stream: u64,
    /// The packed argument bytes (empty when unknown).
    pub args: &'a [u8],
    /// Offset and size of each argument (empty when unknown).
    pub layout: &'a [(u32, u32)],
    /// The launch attributes' bytes.
    pub attrs: &'a [u8],
    /// A cooperative launch.
    pub cooperative: bool,
    /// Made into a stream being captured into a graph.
    pub in_capture: bool,
    /// Whether `args` are the arguments.
    pub args_known: bool,
}

/// Bytes of a launch record's grid, block and shared memory (`u32` each)...
const LAUNCH_WORDS_BYTES: usize = 7 * 4;
/// ... and its stream (`u64`) after them.
const LAUNCH_DIMS_BYTES: usize = LAUNCH_WORDS_BYTES + 8;

impl LaunchView<'_> {
    /// The owned [`Launch`] of the same values (a graph kernel node keeps its launch's fields).
    pub fn to_launch(&self) -> Launch {
        let [grid_x, grid_y, grid_z] = self.grid;
        let [block_x, block_y, block_z] = self.block;
        Launch {
            function: self.function,
            kernel: self.kernel.to_owned(),
            code: self.code,
            grid_x,
            grid_y,
            grid_z,
            block_x,
            block_y,
            block_z,
            shared_mem: self.shared_mem,
            stream: self.stream,
            args: self.args.to_vec(),
            arg_offsets: self
                .layout
                .iter()
                .map(|&(offset, _)| offset as u64)
                .collect(),
            arg_sizes: self.layout.iter().map(|&(_, size)| size as u64).collect(),
            attrs: self.attrs.to_vec(),
            cooperative: self.cooperative as u8,
            in_capture: self.in_capture as u8,
            args_known: self.args_known as u8,
        }
    }

    /// Append the record's fields, in [`Launch`]'s order and wire types.
    #[inline]
    pub fn write(&self, p: &mut PayloadBuilder) {
        // the buffer grows once; the fixed-width fields between the code object and the
        // arguments go in as one block
        let n = self.layout.len();
        let strings = self.kernel.len() + self.args.len() + self.attrs.len();
        p.reserve(8 + 16 + LAUNCH_DIMS_BYTES + 3 * 4 + 2 * (4 + 8 * n) + 3 + strings);
        p.u64(self.function).str(self.kernel).object(self.code);
        p.encoded(&self.dims()).encoded(self.args);
        write_layout(p, self.layout);
        self.write_rest(p);
    }

    /// Append the record's fields as [`Self::write`] does, those every launch of the kernel
    /// shares taken as `t` encoded them (`t` made of this view's function, kernel, code object
    /// and layout): capture's launch hot path, a few copies and stores in all.
    #[inline]
    pub fn write_from(&self, t: &LaunchTemplate, p: &mut PayloadBuilder) {
        p.reserve(
            t.head.len()
                + LAUNCH_DIMS_BYTES
                + 4
                + self.args.len()
                + t.tail.len()
                + 4
                + self.attrs.len()
                + 3,
        );
        p.encoded(&t.head)
            .encoded(&self.dims())
            .encoded(self.args)
            .encoded(&t.tail);
        self.write_rest(p);
    }

    /// Grid, block, shared memory and stream, as the record holds them, and the length of
    /// the argument bytes that follow them (one block: one copy).
    #[inline(always)]
    fn dims(&self) -> [u8; LAUNCH_DIMS_BYTES + 4] {
        let mut dims = [0u8; LAUNCH_DIMS_BYTES + 4];
        let words = self
            .grid
            .iter()
            .chain(&self.block)
            .chain([&self.shared_mem]);
        for (chunk, v) in dims.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&v.to_le_bytes());
        }
        dims[LAUNCH_WORDS_BYTES..LAUNCH_DIMS_BYTES].copy_from_slice(&self.stream.to_le_bytes());
        dims[LAUNCH_DIMS_BYTES..].copy_from_slice(&(self.args.len() as u32).to_le_bytes());
        dims
    }

    /// The fields after the argument layout: attributes and flags (without attributes, the
    /// common case, one block).
    #[inline(always)]
    fn write_rest(&self, p: &mut PayloadBuilder) {
        let flags = [
            self.cooperative as u8,
            self.in_capture as u8,
            self.args_known as u8,
        ];
        if self.attrs.is_empty() {
            let mut rest = [0u8; 4 + 3];
            rest[4..].copy_from_slice(&flags);
            p.encoded(&rest);
        } else {
            p.bytes(self.attrs).encoded(&flags);
        }
    }
}

/// The argument offsets and sizes of `layout`, as a `Launch` record holds them.
fn write_layout(p: &mut PayloadBuilder, layout: &[(u32, u32)]) {
    p.u64s_from(layout.iter().map(|&(offset, _)| offset as u64));
    p.u64s_from(layout.iter().map(|&(_, size)| size as u64));
}

/// The fields of a [`Launch`] record that every launch of one kernel shares, encoded once: the
/// function handle, kernel name and code object before the launch's own fields, the argument
/// layout after its arguments ([`LaunchView::write_from`]). Capture keeps one per kernel a
/// thread launches, so that a launch's record is the copy of these two and its own values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchTemplate {
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl LaunchTemplate {
    /// The template of launches of `function` (kernel `kernel` in code object `code`, its
    /// arguments laid out as `layout`).
    pub fn new(
        function: u64,
        kernel: &str,
        code: Option<hrr_archive::ObjectId>,
        layout: &[(u32, u32)],
    ) -> Self {
        let mut t = LaunchTemplate::default();
        t.set(function, kernel, code, layout);
        t
    }

    /// Make this the template of launches of `function`, as [`Self::new`] does, reusing its
    /// buffers.
    pub fn set(
        &mut self,
        function: u64,
        kernel: &str,
        code: Option<hrr_archive::ObjectId>,
        layout: &[(u32, u32)],
    ) {
        let mut head = PayloadBuilder::with_buffer(std::mem::take(&mut self.head));
        head.u64(function).str(kernel).object(code);
        self.head = head.into_bytes();
        let mut tail = PayloadBuilder::with_buffer(std::mem::take(&mut self.tail));
        write_layout(&mut tail, layout);
        self.tail = tail.into_bytes();
    }
}

/// Directions of a copy whose direction is found at run time, as recorded in `direction`
/// ([`CopyAny`], [`CopyKind`], the symbol copies).
pub mod direction {
    /// Device to device.
    pub const D2D: u8 = 0;
    /// Host to device.
    pub const H2D: u8 = 1;
    /// Device to host.
    pub const D2H: u8 = 2;
    /// Host to host.
    pub const H2H: u8 = 3;

    /// The direction of a copy from whether each side is device memory.
    pub fn of(src_is_device: bool, dst_is_device: bool) -> u8 {
        match (src_is_device, dst_is_device) {
            (true, true) => D2D,
            (false, true) => H2D,
            (true, false) => D2H,
            (false, false) => H2H,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `LaunchView` writes the payload its `Launch` writes, and owns up as that `Launch`: a
    /// field added to, moved in or retyped in `Launch` fails here until the view follows.
    #[test]
    fn a_launch_view_is_written_as_its_launch() {
        let layout = [(0u32, 8u32), (8, 4), (16, 8)];
        let code = Some(hrr_archive::ObjectId([7; 16]));
        for (known, cooperative, in_capture) in [(true, false, true), (false, true, false)] {
            let args: Vec<u8> = if known { (0..24).collect() } else { Vec::new() };
            let owned = Launch {
                function: 0x5500_0000_1230,
                kernel: "_Z4axpyfPfS_".into(),
                code,
                grid_x: 1,
                grid_y: 2,
                grid_z: 3,
                block_x: 4,
                block_y: 5,
                block_z: 6,
                shared_mem: 1024,
                stream: 0x77,
                args: args.clone(),
                arg_offsets: layout.iter().map(|&(o, _)| o as u64).collect(),
                arg_sizes: layout.iter().map(|&(_, s)| s as u64).collect(),
                attrs: vec![1, 2, 3],
                cooperative: cooperative as u8,
                in_capture: in_capture as u8,
                args_known: known as u8,
            };
            let view = LaunchView {
                function: 0x5500_0000_1230,
                kernel: "_Z4axpyfPfS_",
                code,
                grid: [1, 2, 3],
                block: [4, 5, 6],
                shared_mem: 1024,
                stream: 0x77,
                args: &args,
                layout: &layout,
                attrs: &[1, 2, 3],
                cooperative,
                in_capture,
                args_known: known,
            };
            let (mut a, mut b) = (PayloadBuilder::new(), PayloadBuilder::new());
            owned.write(&mut a);
            view.write(&mut b);
            assert_eq!(a.as_bytes(), b.as_bytes());
            assert_eq!(view.to_launch(), owned);
            // written through the kernel's template: the same bytes, after what the buffer held
            // (set again over another kernel's: the buffers reused, nothing of it left)
            let mut template = LaunchTemplate::new(1, "_Z5otherPfS_S_S_S_S_", None, &[(0, 8); 6]);
            template.set(view.function, view.kernel, code, &layout);
            assert_eq!(
                template,
                LaunchTemplate::new(view.function, view.kernel, code, &layout)
            );
            let mut c = PayloadBuilder::new();
            c.u32(0xfeed);
            view.write_from(&template, &mut c);
            assert_eq!(&c.as_bytes()[..4], &0xfeedu32.to_le_bytes());
            assert_eq!(&c.as_bytes()[4..], a.as_bytes());
        }
    }
}
