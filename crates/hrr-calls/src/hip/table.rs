//! The HIP runtime call table: one row per recorded call, in record-type order (append only).
//! The grammar is the CUDA table's (see `cuda/table.rs` and the crate docs); rows with an
//! explicit return type (registrations) return no status and record no `result`.

/// The HIP runtime call table: `hip_calls!(m)` expands to `m! { rows }`, and
/// `hip_calls!(m; tokens)` to `m! { tokens rows }` (arguments of `m` ahead of the rows).
#[macro_export]
macro_rules! hip_calls {
    ($m:ident $(; $($pre:tt)*)?) => {
        $m! {
            $($($pre)*)?
            Init [hipInit] (flags: c_uint = flags) : Init, Init;
            DriverGetVersion [hipDriverGetVersion] (v: *mut c_int => version) : Version, Query;
            RuntimeGetVersion [hipRuntimeGetVersion] (v: *mut c_int => version) : Version, Query;
            GetDeviceCount [hipGetDeviceCount] (count: *mut c_int => count) : DeviceCount, Query;
            SetDevice [hipSetDevice] (dev: c_int = device) : Device, Context;
            GetDevice [hipGetDevice] (dev: *mut c_int => device) : Device, Query;
            DeviceGet [hipDeviceGet] (dev: *mut c_int => device, ordinal: c_int = ordinal) : DeviceGet, Query;
            DeviceGetName [hipDeviceGetName] (name: *mut c_char, len: c_int, dev: c_int) : DeviceName, Query => device_get_name(..);
            DeviceTotalMem [hipDeviceTotalMem] (bytes: *mut usize => bytes, dev: c_int = device) : DeviceTotalMem, Query;
            DeviceGetAttribute [hipDeviceGetAttribute] (v: *mut c_int => value, attrib: c_int = attrib, dev: c_int = device) : DeviceAttribute, Query;
            GetDeviceProperties [hipGetDeviceProperties] (prop: *mut u8, dev: c_int) : DeviceProperties, Query => get_device_properties(..);
            GetDevicePropertiesR0600 [hipGetDevicePropertiesR0600] (prop: *mut u8, dev: c_int) : DeviceProperties, Query => get_device_properties(..);
            DeviceSynchronize [hipDeviceSynchronize] () : NoFields, Sync;
            DeviceReset [hipDeviceReset] () : NoFields, Context after device_reset;
            Malloc [hipMalloc] (ptr: *mut Ptr, size: usize) : MemAlloc, Alloc, ordered after malloc;
            ExtMallocWithFlags [hipExtMallocWithFlags] (ptr: *mut Ptr, size: usize, flags: c_uint) : MemAllocFlags, Alloc, ordered after malloc_flags;
            MallocManaged [hipMallocManaged] (ptr: *mut Ptr, size: usize, flags: c_uint) : MemAllocFlags, Managed, ordered after malloc_managed;
            MallocAsync [hipMallocAsync] (ptr: *mut Ptr, size: usize, stream: Handle) : MemAllocAsync, Alloc, ordered after malloc_async;
            MallocPitch [hipMallocPitch] (ptr: *mut Ptr, pitch: *mut usize, width: usize, height: usize) : MallocPitch, Alloc, ordered after malloc_pitch;
            Free [hipFree] (ptr: Ptr) : DevicePtr, Free, ordered => free;
            FreeAsync [hipFreeAsync] (ptr: Ptr, stream: Handle) : MemFreeAsync, Free, ordered => free_async;
            HostMalloc [hipHostMalloc] (ptr: *mut Ptr => host_ptr, size: usize = bytesize, flags: c_uint = flags) : HostAlloc, HostMem, ordered;
            HostFree [hipHostFree] (ptr: Ptr = host_ptr) : HostPtr, HostMem, ordered;
            HostRegister [hipHostRegister] (ptr: Ptr, size: usize, flags: c_uint) : HostRegister, HostMem => host_register(..);
            HostUnregister [hipHostUnregister] (ptr: Ptr = host_ptr) : HostPtr, HostMem, ordered;
            HostGetDevicePointer [hipHostGetDevicePointer] (dptr: *mut Ptr, ptr: Ptr, flags: c_uint) : HostDevicePointer, HostMem => host_get_device_pointer(..);
            MemAddressReserve [hipMemAddressReserve] (ptr: *mut Ptr => ptr, size: usize = size, align: usize = alignment, addr: Ptr = addr, flags: u64 = flags) : AddressReserve, Reserve, ordered;
            MemAddressFree [hipMemAddressFree] (ptr: Ptr = ptr, size: usize = size) : Range, Vmm, ordered;
            MemCreate [hipMemCreate] (handle: *mut u64, size: usize, prop: *const u8, flags: u64) : MemCreate, Vmm, ordered => mem_create(..);
            MemRelease [hipMemRelease] (handle: u64 = handle) : MemHandle, Vmm, ordered;
            MemMap [hipMemMap] (ptr: Ptr, size: usize, offset: usize, handle: u64, flags: u64) : MemMap, Vmm, ordered => mem_map;
            MemUnmap [hipMemUnmap] (ptr: Ptr, size: usize) : Range, Vmm, ordered => mem_unmap;
            MemSetAccess [hipMemSetAccess] (ptr: Ptr, size: usize, desc: *const u8, count: usize) : MemSetAccess, Vmm => mem_set_access(..);
            Memcpy [hipMemcpy] (dst: Ptr, src: Ptr, n: usize, kind: c_int) : CopyKind, Copy => memcpy;
            MemcpyAsync [hipMemcpyAsync] (dst: Ptr, src: Ptr, n: usize, kind: c_int, stream: Handle) : CopyKind, Copy => memcpy_async(..);
            MemcpyWithStream [hipMemcpyWithStream] (dst: Ptr, src: Ptr, n: usize, kind: c_int, stream: Handle) : CopyKind, Copy => memcpy_async(..);
            MemcpyHtoD [hipMemcpyHtoD] (dst: Ptr, src: Ptr, n: usize) : CopyH2d, H2d => memcpy_htod(..);
            MemcpyHtoDAsync [hipMemcpyHtoDAsync] (dst: Ptr, src: Ptr, n: usize, stream: Handle) : CopyH2d, H2d => memcpy_htod_async(..);
            MemcpyDtoH [hipMemcpyDtoH] (dst: Ptr, src: Ptr, n: usize) : CopyD2h, D2h => memcpy_dtoh(..);
            MemcpyDtoHAsync [hipMemcpyDtoHAsync] (dst: Ptr, src: Ptr, n: usize, stream: Handle) : CopyD2h, D2h => memcpy_dtoh_async;
            MemcpyDtoD [hipMemcpyDtoD] (dst: Ptr, src: Ptr, n: usize) : CopyD2d, D2d => memcpy_dtod(..);
            MemcpyDtoDAsync [hipMemcpyDtoDAsync] (dst: Ptr = dst, src: Ptr = src, n: usize = bytes, stream: Handle = stream) : CopyD2d, D2d;
            Memset [hipMemset] (dst: Ptr, v: c_int, n: usize) : Memset, Memset after memset_bytes;
            MemsetAsync [hipMemsetAsync] (dst: Ptr, v: c_int, n: usize, stream: Handle) : Memset, Memset after memset_bytes_async;
            MemsetD8 [hipMemsetD8] (dst: Ptr, v: u8, n: usize) : Memset, Memset => memset(..);
            MemsetD8Async [hipMemsetD8Async] (dst: Ptr, v: u8, n: usize, stream: Handle) : Memset, Memset => memset_async(..);
            MemsetD16 [hipMemsetD16] (dst: Ptr, v: u16, n: usize) : Memset, Memset => memset(..);
            MemsetD16Async [hipMemsetD16Async] (dst: Ptr, v: u16, n: usize, stream: Handle) : Memset, Memset => memset_async(..);
            MemsetD32 [hipMemsetD32] (dst: Ptr, v: c_int, n: usize) : Memset, Memset => memset(..);
            MemsetD32Async [hipMemsetD32Async] (dst: Ptr, v: c_int, n: usize, stream: Handle) : Memset, Memset => memset_async(..);
            MemcpyToSymbol [hipMemcpyToSymbol] (symbol: Ptr, src: Ptr, n: usize, offset: usize, kind: c_int) : CopyToSymbol, H2d => memcpy_to_symbol;
            MemcpyToSymbolAsync [hipMemcpyToSymbolAsync] (symbol: Ptr, src: Ptr, n: usize, offset: usize, kind: c_int, stream: Handle) : CopyToSymbol, H2d => memcpy_to_symbol_async;
            MemcpyFromSymbol [hipMemcpyFromSymbol] (dst: Ptr, symbol: Ptr, n: usize, offset: usize, kind: c_int) : CopyFromSymbol, D2h => memcpy_from_symbol;
            MemcpyFromSymbolAsync [hipMemcpyFromSymbolAsync] (dst: Ptr, symbol: Ptr, n: usize, offset: usize, kind: c_int, stream: Handle) : CopyFromSymbol, D2h => memcpy_from_symbol_async;
            GetSymbolAddress [hipGetSymbolAddress] (dptr: *mut Ptr, symbol: Ptr) : SymbolAddress, Lookup after get_symbol_address;
            RegisterFatBinary [__hipRegisterFatBinary] (data: *const c_void) -> *mut Ptr : RegisterFatBinary, Register => register_fat_binary;
            RegisterFunction [__hipRegisterFunction] (modules: *mut Ptr, host_function: *const c_void, device_function: *mut c_char, device_name: *const c_char, thread_limit: c_uint, tid: *mut c_void, bid: *mut c_void, block: *mut Dim3, grid: *mut Dim3, wsize: *mut c_int) -> () : RegisterFunction, Register => register_function;
            RegisterVar [__hipRegisterVar] (modules: *mut Ptr, var: *mut c_void, host_var: *mut c_char, device_var: *const c_char, ext: c_int, size: usize, constant: c_int, global: c_int) -> () : RegisterVar, Register => register_var;
            UnregisterFatBinary [__hipUnregisterFatBinary] (modules: *mut Ptr) -> () : FatBinary, Register => unregister_fat_binary;
            ModuleLoad [hipModuleLoad] (m: *mut Handle, fname: *const c_char) : ModuleLoad, Load, ordered => module_load;
            ModuleLoadData [hipModuleLoadData] (m: *mut Handle, image: *const c_void) : ModuleLoad, Load, ordered => module_load_data;
            ModuleLoadDataEx [hipModuleLoadDataEx] (m: *mut Handle, image: *const c_void, n: c_uint, opts: *mut c_int, vals: *mut Ptr) : ModuleLoad, Load, ordered => module_load_data_ex;
            ModuleUnload [hipModuleUnload] (m: Handle) : Module, Unload, ordered => module_unload;
            ModuleGetFunction [hipModuleGetFunction] (f: *mut Handle, m: Handle, name: *const c_char) : ModuleGetFunction, Lookup, ordered after module_get_function;
            ModuleGetGlobal [hipModuleGetGlobal] (dptr: *mut Ptr, bytes: *mut usize, m: Handle, name: *const c_char) : Global, Lookup => get_global(..);
            PushCallConfiguration [__hipPushCallConfiguration] (grid: Dim3, block: Dim3, shmem: usize, stream: Handle) : CallConfiguration, Configure after push_call_configuration;
            LaunchKernel [hipLaunchKernel] (f: *const c_void, grid: Dim3, block: Dim3, args: *mut Ptr, shmem: usize, stream: Handle) : Launch, Launch after launch_kernel;
            LaunchCooperativeKernel [hipLaunchCooperativeKernel] (f: *const c_void, grid: Dim3, block: Dim3, args: *mut Ptr, shmem: c_uint, stream: Handle) : Launch, Launch after launch_cooperative;
            ExtLaunchKernel [hipExtLaunchKernel] (f: *const c_void, grid: Dim3, block: Dim3, args: *mut Ptr, shmem: usize, stream: Handle, start: Handle, stop: Handle, flags: c_int) : Launch, Launch after ext_launch_kernel;
            ModuleLaunchKernel [hipModuleLaunchKernel] (f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, stream: Handle, params: *mut Ptr, extra: *mut Ptr) : Launch, Launch after module_launch_kernel;
            StreamCreate [hipStreamCreate] (s: *mut Handle) : StreamCreate, Stream, ordered after stream_create;
            StreamCreateWithFlags [hipStreamCreateWithFlags] (s: *mut Handle => stream, flags: c_uint = flags) : StreamCreate, Stream, ordered;
            StreamCreateWithPriority [hipStreamCreateWithPriority] (s: *mut Handle => stream, flags: c_uint = flags, prio: c_int = priority) : StreamCreatePriority, Stream, ordered;
            StreamDestroy [hipStreamDestroy] (s: Handle = stream) : Stream, Stream, ordered;
            StreamSynchronize [hipStreamSynchronize] (s: Handle = stream) : Stream, Sync;
            StreamWaitEvent [hipStreamWaitEvent] (s: Handle = stream, e: Handle = event, flags: c_uint = flags) : StreamWaitEvent, Event;
            EventCreate [hipEventCreate] (e: *mut Handle) : EventCreate, Event, ordered after event_create;
            EventCreateWithFlags [hipEventCreateWithFlags] (e: *mut Handle => event, flags: c_uint = flags) : EventCreate, Event, ordered;
            EventRecord [hipEventRecord] (e: Handle = event, s: Handle = stream) : EventRecord, Event;
            EventSynchronize [hipEventSynchronize] (e: Handle = event) : Event, Sync;
            EventDestroy [hipEventDestroy] (e: Handle = event) : Event, Event, ordered;
            StreamBeginCapture [hipStreamBeginCapture] (s: Handle, mode: c_int) : BeginCapture, Capture => stream_begin_capture;
            StreamEndCapture [hipStreamEndCapture] (s: Handle, g: *mut Handle) : EndCapture, Capture after stream_end_capture;
            GraphLaunch [hipGraphLaunch] (exec: Handle, s: Handle) : GraphLaunch, GraphLaunch after graph_launch;
            LaunchHostFunc [hipLaunchHostFunc] (s: Handle, func: Ptr, data: Ptr) : HostFunc, HostFunc => launch_host_func(..);
            // Asynchronous D2H results (async copies). A pseudo-row, as CUDA's `hrrMemcpyResult`:
            // no runtime entry point; recorded by the host function capture enqueues behind an
            // async D2H copy (`hipMemcpyAsync` to host, `hipMemcpyDtoHAsync`).
            MemcpyResult [hrrHipMemcpyResult] (copy: u64, dst: Ptr, n: usize, stream: Handle) : CopyResult, D2hResult => memcpy_result;
            // Not recorded: a query that says work is done lets async D2H results be recorded first.
            EventQuery [hipEventQuery] (e: Handle) : Event, Query => query_done(..);
            StreamQuery [hipStreamQuery] (s: Handle) : Stream, Query => query_done(..);
            // Sizes in work-items (grid times block), as Tensile's GEMMs (rocBLAS) launch. ROCm 5
            // declares these two with C++ linkage: their mangled names are exported too.
            ExtModuleLaunchKernel [hipExtModuleLaunchKernel, _Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_j] (f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: usize, stream: Handle, params: *mut Ptr, extra: *mut Ptr, start: Handle, stop: Handle, flags: c_uint) : Launch, Launch after ext_module_launch_kernel;
            HccModuleLaunchKernel [hipHccModuleLaunchKernel, _Z24hipHccModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_tS6_] (f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: usize, stream: Handle, params: *mut Ptr, extra: *mut Ptr, start: Handle, stop: Handle) : Launch, Launch after hcc_module_launch_kernel;
            // Pitched copies between linear memory (arrays are not recorded on HIP).
            Memcpy2D [hipMemcpy2D] (dst: Ptr, dpitch: usize, src: Ptr, spitch: usize, width: usize, height: usize, kind: c_int) : CopyPitched, Copy => memcpy_2d;
            Memcpy2DAsync [hipMemcpy2DAsync] (dst: Ptr, dpitch: usize, src: Ptr, spitch: usize, width: usize, height: usize, kind: c_int, stream: Handle) : CopyPitched, Copy => memcpy_2d_async;
            // The per-thread default stream forms (`-fgpu-default-stream=per-thread`).
            MemcpySpt [hipMemcpy_spt] (dst: Ptr, src: Ptr, n: usize, kind: c_int) : CopyKind, Copy => memcpy_spt;
            MemcpyToSymbolSpt [hipMemcpyToSymbol_spt] (symbol: Ptr, src: Ptr, n: usize, offset: usize, kind: c_int) : CopyToSymbol, H2d => memcpy_to_symbol_spt;
            MemcpyFromSymbolSpt [hipMemcpyFromSymbol_spt] (dst: Ptr, symbol: Ptr, n: usize, offset: usize, kind: c_int) : CopyFromSymbol, D2h => memcpy_from_symbol_spt;
            Memcpy2DSpt [hipMemcpy2D_spt] (dst: Ptr, dpitch: usize, src: Ptr, spitch: usize, width: usize, height: usize, kind: c_int) : CopyPitched, Copy => memcpy_2d_spt;
            MemsetSpt [hipMemset_spt] (dst: Ptr, v: c_int, n: usize) : Memset, Memset after memset_bytes_spt;
            MemcpyAsyncSpt [hipMemcpyAsync_spt] (dst: Ptr, src: Ptr, n: usize, kind: c_int, stream: Handle) : CopyKind, Copy => memcpy_async(..);
            MemsetAsyncSpt [hipMemsetAsync_spt] (dst: Ptr, v: c_int, n: usize, stream: Handle) : Memset, Memset after memset_bytes_async_spt;
            Memcpy2DAsyncSpt [hipMemcpy2DAsync_spt] (dst: Ptr, dpitch: usize, src: Ptr, spitch: usize, width: usize, height: usize, kind: c_int, stream: Handle) : CopyPitched, Copy => memcpy_2d_async_spt;
            MemcpyFromSymbolAsyncSpt [hipMemcpyFromSymbolAsync_spt] (dst: Ptr, symbol: Ptr, n: usize, offset: usize, kind: c_int, stream: Handle) : CopyFromSymbol, D2h => memcpy_from_symbol_async_spt;
            MemcpyToSymbolAsyncSpt [hipMemcpyToSymbolAsync_spt] (symbol: Ptr, src: Ptr, n: usize, offset: usize, kind: c_int, stream: Handle) : CopyToSymbol, H2d => memcpy_to_symbol_async_spt;
            StreamQuerySpt [hipStreamQuery_spt] (s: Handle) : Stream, Query => query_done(..);
            StreamSynchronizeSpt [hipStreamSynchronize_spt] (s: Handle = stream) : Stream, Sync;
            StreamWaitEventSpt [hipStreamWaitEvent_spt] (s: Handle = stream, e: Handle = event, flags: c_uint = flags) : StreamWaitEvent, Event;
            EventRecordSpt [hipEventRecord_spt] (e: Handle = event, s: Handle = stream) : EventRecord, Event;
            LaunchCooperativeKernelSpt [hipLaunchCooperativeKernel_spt] (f: *const c_void, grid: Dim3, block: Dim3, args: *mut Ptr, shmem: c_uint, stream: Handle) : Launch, Launch after launch_cooperative_spt;
            LaunchKernelSpt [hipLaunchKernel_spt] (f: *const c_void, grid: Dim3, block: Dim3, args: *mut Ptr, shmem: usize, stream: Handle) : Launch, Launch after launch_kernel_spt;
            GraphLaunchSpt [hipGraphLaunch_spt] (exec: Handle, s: Handle) : GraphLaunch, GraphLaunch after graph_launch_spt;
            StreamBeginCaptureSpt [hipStreamBeginCapture_spt] (s: Handle, mode: c_int) : BeginCapture, Capture => stream_begin_capture_spt;
            StreamEndCaptureSpt [hipStreamEndCapture_spt] (s: Handle, g: *mut Handle) : EndCapture, Capture after stream_end_capture_spt;
            LaunchHostFuncSpt [hipLaunchHostFunc_spt] (s: Handle, func: Ptr, data: Ptr) : HostFunc, HostFunc => launch_host_func(..);
            // Stream-ordered memory pools: allocations from a pool are placed at their recorded
            // addresses like every allocation; the pool calls are recorded for what they say.
            MallocFromPoolAsync [hipMallocFromPoolAsync] (ptr: *mut Ptr, size: usize, pool: Handle, stream: Handle) : MemAllocFromPool, Alloc, ordered after malloc_from_pool_async;
            MemPoolCreate [hipMemPoolCreate] (pool: *mut Handle, props: *const u8) : PoolCreate, Pool, ordered after mem_pool_create;
            MemPoolDestroy [hipMemPoolDestroy] (pool: Handle = pool) : Pool, Pool, ordered;
            MemPoolTrimTo [hipMemPoolTrimTo] (pool: Handle = pool, keep: usize = bytes) : PoolTrim, Pool;
            DeviceGetDefaultMemPool [hipDeviceGetDefaultMemPool] (pool: *mut Handle => pool, dev: c_int = device) : DevicePool, Pool;
            DeviceGetMemPool [hipDeviceGetMemPool] (pool: *mut Handle => pool, dev: c_int = device) : DevicePool, Pool;
            DeviceSetMemPool [hipDeviceSetMemPool] (dev: c_int = device, pool: Handle = pool) : DevicePool, Pool;
            // Graphs made by stream capture: instantiated, launched (rows above) and destroyed.
            GraphInstantiate [hipGraphInstantiate] (exec: *mut Handle, g: Handle, err: *mut Handle, log: *mut c_char, size: usize) : GraphInstantiate, Graph, ordered after graph_instantiate;
            GraphInstantiateWithFlags [hipGraphInstantiateWithFlags] (exec: *mut Handle => exec, g: Handle = graph, flags: u64 = flags) : GraphInstantiate, Graph, ordered;
            GraphExecDestroy [hipGraphExecDestroy] (g: Handle = graph) : Graph, Graph, ordered;
            GraphDestroy [hipGraphDestroy] (g: Handle = graph) : Graph, Graph, ordered;
            // 3D copies between pitched linear memory (arrays are not recorded).
            Memcpy3D [hipMemcpy3D] (p: *const Memcpy3DParms) : CopyPitched, Copy => memcpy_3d;
            Memcpy3DAsync [hipMemcpy3DAsync] (p: *const Memcpy3DParms, stream: Handle) : CopyPitched, Copy => memcpy_3d_async;
            // 2D memsets: `h` rows of `w` bytes `pitch` apart, the value an `int` (its low byte).
            Memset2D [hipMemset2D] (dst: Ptr, pitch: usize, v: c_int, w: usize, h: usize) : Memset2d, Memset after memset_2d_bytes;
            Memset2DAsync [hipMemset2DAsync] (dst: Ptr, pitch: usize, v: c_int, w: usize, h: usize, stream: Handle) : Memset2d, Memset after memset_2d_bytes_async;
        }
    };
}
