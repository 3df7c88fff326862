//! The CUDA driver call table: one row per recorded call (see the crate docs for the grammar).
//! Row order is record-type order: append new rows at the end, never reorder (archives name
//! calls by record type within their own schema, but goldens and old readers expect stability).
//!
//! Row: `Op [exports…] (typed C arguments, annotated) [-> non-status return] : Shape, Kind
//! [, ordered] [=> custom_fn | => custom_fn(..) | after after_fn];` where an argument `= field`
//! records its value, `=> field` reads an out-pointer after the call, and a bare argument is not
//! recorded; `=> custom_fn` makes the real call itself, `after after_fn` runs once it returned.

/// The CUDA driver call table: `cuda_calls!(m)` expands to `m! { rows }`, and
/// `cuda_calls!(m; tokens)` to `m! { tokens rows }` (arguments of `m` ahead of the rows).
#[macro_export]
macro_rules! cuda_calls {
    ($m:ident $(; $($pre:tt)*)?) => {
        $m! {
            $($($pre)*)?
            Init [cuInit] (flags: c_uint) : Init, Init after init;
            DriverGetVersion [cuDriverGetVersion] (v: *mut c_int => version) : Version, Query;
            DeviceGet [cuDeviceGet] (dev: *mut c_int => device, ordinal: c_int = ordinal) : DeviceGet, Query;
            DeviceGetCount [cuDeviceGetCount] (count: *mut c_int => count) : DeviceCount, Query;
            DeviceGetName [cuDeviceGetName] (name: *mut c_char, len: c_int, dev: c_int) : DeviceName, Query => device_get_name(..);
            DeviceTotalMem [cuDeviceTotalMem_v2] (bytes: *mut usize => bytes, dev: c_int = device) : DeviceTotalMem, Query;
            DeviceGetAttribute [cuDeviceGetAttribute] (v: *mut c_int => value, attrib: c_int = attrib, dev: c_int = device) : DeviceAttribute, Query;
            DeviceGetUuid [cuDeviceGetUuid, cuDeviceGetUuid_v2] (uuid: *mut u8, dev: c_int) : DeviceUuid, Query after device_get_uuid;
            DevicePrimaryCtxRetain [cuDevicePrimaryCtxRetain] (ctx: *mut Handle => ctx, dev: c_int = device) : PrimaryCtx, Context, ordered;
            DevicePrimaryCtxRelease [cuDevicePrimaryCtxRelease_v2] (dev: c_int) : Device, Context => device_context_gone(..);
            DevicePrimaryCtxReset [cuDevicePrimaryCtxReset_v2] (dev: c_int) : Device, Context => device_context_gone(..);
            CtxCreate [cuCtxCreate_v2] (ctx: *mut Handle => ctx, flags: c_uint = flags, dev: c_int = device) : CtxCreate, Context, ordered;
            CtxDestroy [cuCtxDestroy_v2] (ctx: Handle) : Ctx, Context, ordered => ctx_destroy;
            CtxSetCurrent [cuCtxSetCurrent] (ctx: Handle = ctx) : Ctx, Context, ordered;
            CtxPushCurrent [cuCtxPushCurrent_v2] (ctx: Handle = ctx) : Ctx, Context, ordered;
            CtxPopCurrent [cuCtxPopCurrent_v2] (ctx: *mut Handle => ctx) : Ctx, Context;
            CtxSynchronize [cuCtxSynchronize] () : NoFields, Sync;
            CtxSynchronizeCtx [cuCtxSynchronize_v2] (ctx: Handle = ctx) : Ctx, Sync;
            MemAlloc [cuMemAlloc_v2] (dptr: *mut u64, size: usize) : MemAlloc, Alloc, ordered after mem_alloc;
            MemAllocPitch [cuMemAllocPitch_v2] (dptr: *mut u64, pitch: *mut usize, width: usize, height: usize, elem: c_uint) : MemAllocPitch, Alloc, ordered after mem_alloc_pitch;
            MemAllocManaged [cuMemAllocManaged] (dptr: *mut u64, size: usize, flags: c_uint) : MemAllocFlags, Managed, ordered after mem_alloc_managed;
            MemFree [cuMemFree_v2] (dptr: u64) : DevicePtr, Free, ordered => mem_free;
            MemAllocAsync [cuMemAllocAsync, cuMemAllocAsync_ptsz] (dptr: *mut u64, size: usize, stream: Handle) : MemAllocAsync, Alloc, ordered after mem_alloc_async;
            MemAllocFromPoolAsync [cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync_ptsz] (dptr: *mut u64, size: usize, pool: Handle, stream: Handle) : MemAllocFromPool, Alloc, ordered after mem_alloc_from_pool_async;
            MemFreeAsync [cuMemFreeAsync, cuMemFreeAsync_ptsz] (dptr: u64 = dptr, stream: Handle = stream) : MemFreeAsync, Free, ordered;
            MemHostAlloc [cuMemHostAlloc] (pp: *mut *mut c_void, size: usize, flags: c_uint) : HostAlloc, HostMem, ordered after mem_host_alloc;
            MemAllocHost [cuMemAllocHost_v2] (pp: *mut *mut c_void, size: usize) : HostAllocPlain, HostMem, ordered after mem_alloc_host;
            MemFreeHost [cuMemFreeHost] (p: *mut c_void) : HostPtr, HostMem, ordered => mem_free_host;
            MemHostRegister [cuMemHostRegister_v2] (p: *mut c_void, size: usize, flags: c_uint) : HostRegister, HostMem => host_register;
            MemHostUnregister [cuMemHostUnregister] (p: *mut c_void) : HostPtr, HostMem, ordered => mem_host_unregister;
            MemHostGetDevicePointer [cuMemHostGetDevicePointer_v2] (dptr: *mut u64, p: *mut c_void, flags: c_uint) : HostDevicePointer, HostMem after host_get_device_pointer;
            MemAddressReserve [cuMemAddressReserve] (ptr: *mut u64 => ptr, size: usize = size, align: usize = alignment, addr: u64 = addr, flags: u64 = flags) : AddressReserve, Reserve, ordered;
            MemAddressFree [cuMemAddressFree] (ptr: u64 = ptr, size: usize = size) : Range, Vmm, ordered;
            MemCreate [cuMemCreate] (handle: *mut u64, size: usize, prop: *const u8, flags: u64) : MemCreate, Vmm, ordered => mem_create(..);
            MemRelease [cuMemRelease] (handle: u64 = handle) : MemHandle, Vmm, ordered;
            MemMap [cuMemMap] (ptr: u64 = ptr, size: usize = size, offset: usize = offset, handle: u64 = handle, flags: u64 = flags) : MemMap, Vmm, ordered after mem_map;
            MemUnmap [cuMemUnmap] (ptr: u64, size: usize) : Range, Vmm, ordered => mem_unmap;
            MemSetAccess [cuMemSetAccess] (ptr: u64, size: usize, desc: *const u8, count: usize) : MemSetAccess, Vmm => mem_set_access(..);
            MemcpyHtoD [cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds] (dst: u64, src: *const c_void, n: usize) : CopyH2d, H2d => memcpy_htod(..);
            MemcpyHtoDAsync [cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz] (dst: u64, src: *const c_void, n: usize, stream: Handle) : CopyH2d, H2d => memcpy_htod_async;
            MemcpyDtoH [cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds] (dst: *mut c_void, src: u64, n: usize) : CopyD2h, D2h => memcpy_dtoh(..);
            MemcpyDtoHAsync [cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz] (dst: *mut c_void, src: u64, n: usize, stream: Handle) : CopyD2h, D2h => memcpy_dtoh_async;
            MemcpyDtoD [cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds] (dst: u64, src: u64, n: usize) : CopyD2d, D2d => memcpy_dtod(..);
            MemcpyDtoDAsync [cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz] (dst: u64 = dst, src: u64 = src, n: usize = bytes, stream: Handle = stream) : CopyD2d, D2d;
            Memcpy [cuMemcpy, cuMemcpy_ptds] (dst: u64, src: u64, n: usize) : CopyAny, Copy => memcpy;
            MemcpyAsync [cuMemcpyAsync, cuMemcpyAsync_ptsz] (dst: u64, src: u64, n: usize, stream: Handle) : CopyAny, Copy => memcpy_async;
            MemsetD8 [cuMemsetD8_v2, cuMemsetD8_v2_ptds] (dst: u64, v: c_uchar, n: usize) : Memset, Memset => memset(..);
            MemsetD16 [cuMemsetD16_v2] (dst: u64, v: c_ushort, n: usize) : Memset, Memset => memset(..);
            MemsetD32 [cuMemsetD32_v2, cuMemsetD32_v2_ptds] (dst: u64, v: c_uint, n: usize) : Memset, Memset => memset(..);
            MemsetD8Async [cuMemsetD8Async, cuMemsetD8Async_ptsz] (dst: u64, v: c_uchar, n: usize, stream: Handle) : Memset, Memset => memset_async(..);
            MemsetD16Async [cuMemsetD16Async] (dst: u64, v: c_ushort, n: usize, stream: Handle) : Memset, Memset => memset_async(..);
            MemsetD32Async [cuMemsetD32Async, cuMemsetD32Async_ptsz] (dst: u64, v: c_uint, n: usize, stream: Handle) : Memset, Memset => memset_async(..);
            ModuleLoad [cuModuleLoad] (m: *mut Handle, fname: *const c_char) : ModuleLoad, Load, ordered => module_load;
            ModuleLoadData [cuModuleLoadData] (m: *mut Handle, image: *const c_void) : ModuleLoad, Load, ordered => module_load_data(..);
            ModuleLoadDataEx [cuModuleLoadDataEx] (m: *mut Handle, image: *const c_void, n: c_uint, opts: *mut c_int, vals: *mut *mut c_void) : ModuleLoad, Load, ordered => module_load_data_ex;
            ModuleLoadFatBinary [cuModuleLoadFatBinary] (m: *mut Handle, image: *const c_void) : ModuleLoad, Load, ordered => module_load_data(..);
            ModuleUnload [cuModuleUnload] (m: Handle = module) : Module, Unload, ordered => unload(..);
            ModuleGetFunction [cuModuleGetFunction] (f: *mut Handle, m: Handle, name: *const c_char) : ModuleGetFunction, Lookup, ordered after module_get_function;
            ModuleGetGlobal [cuModuleGetGlobal_v2] (dptr: *mut u64, bytes: *mut usize, m: Handle, name: *const c_char) : Global, Lookup, ordered => get_global(..);
            LibraryLoadData [cuLibraryLoadData] (lib: *mut Handle, code: *const c_void, jo: *mut c_int, jv: *mut *mut c_void, njo: c_uint, lo: *mut c_int, lv: *mut *mut c_void, nlo: c_uint) : LibraryLoad, Load, ordered => library_load_data;
            LibraryLoadFromFile [cuLibraryLoadFromFile] (lib: *mut Handle, fname: *const c_char, jo: *mut c_int, jv: *mut *mut c_void, njo: c_uint, lo: *mut c_int, lv: *mut *mut c_void, nlo: c_uint) : LibraryLoad, Load, ordered => library_load_from_file;
            LibraryUnload [cuLibraryUnload] (lib: Handle = library) : Library, Unload, ordered => unload(..);
            LibraryGetKernel [cuLibraryGetKernel] (k: *mut Handle, lib: Handle, name: *const c_char) : LibraryGetKernel, Lookup, ordered after library_get_kernel;
            LibraryGetModule [cuLibraryGetModule] (m: *mut Handle, lib: Handle) : LibraryGetModule, Lookup, ordered after library_get_module;
            LibraryGetGlobal [cuLibraryGetGlobal] (dptr: *mut u64, bytes: *mut usize, lib: Handle, name: *const c_char) : Global, Lookup, ordered => get_global(..);
            KernelGetFunction [cuKernelGetFunction] (f: *mut Handle, k: Handle) : KernelGetFunction, Lookup, ordered after kernel_get_function;
            FuncSetAttribute [cuFuncSetAttribute] (f: Handle, attrib: c_int, value: c_int) : FuncSetAttribute, Attribute after func_set_attribute;
            KernelSetAttribute [cuKernelSetAttribute] (attrib: c_int = attrib, value: c_int = value, k: Handle = kernel, dev: c_int = device) : KernelSetAttribute, Attribute;
            FuncSetCacheConfig [cuFuncSetCacheConfig] (f: Handle, config: c_int) : FuncSetCacheConfig, Attribute after func_set_cache_config;
            LaunchKernel [cuLaunchKernel, cuLaunchKernel_ptsz] (f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, stream: Handle, params: *mut *mut c_void, extra: *mut *mut c_void) : Launch, Launch => launch_kernel;
            LaunchKernelEx [cuLaunchKernelEx, cuLaunchKernelEx_ptsz] (config: *const LaunchConfig, f: Handle, params: *mut *mut c_void, extra: *mut *mut c_void) : Launch, Launch => launch_kernel_ex;
            LaunchCooperativeKernel [cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz] (f: Handle, gx: c_uint, gy: c_uint, gz: c_uint, bx: c_uint, by: c_uint, bz: c_uint, shmem: c_uint, stream: Handle, params: *mut *mut c_void) : Launch, Launch => launch_cooperative;
            StreamCreate [cuStreamCreate] (s: *mut Handle => stream, flags: c_uint = flags) : StreamCreate, Stream, ordered;
            StreamCreateWithPriority [cuStreamCreateWithPriority] (s: *mut Handle => stream, flags: c_uint = flags, prio: c_int = priority) : StreamCreatePriority, Stream, ordered;
            StreamDestroy [cuStreamDestroy_v2] (s: Handle = stream) : Stream, Stream, ordered => stream_destroy;
            StreamSynchronize [cuStreamSynchronize, cuStreamSynchronize_ptsz] (s: Handle = stream) : Stream, Sync => stream_synchronize;
            StreamWaitEvent [cuStreamWaitEvent, cuStreamWaitEvent_ptsz] (s: Handle = stream, e: Handle = event, flags: c_uint = flags) : StreamWaitEvent, Event;
            EventCreate [cuEventCreate] (e: *mut Handle => event, flags: c_uint = flags) : EventCreate, Event, ordered;
            EventRecord [cuEventRecord, cuEventRecord_ptsz] (e: Handle = event, s: Handle = stream) : EventRecord, Event => event_record(..);
            EventRecordWithFlags [cuEventRecordWithFlags, cuEventRecordWithFlags_ptsz] (e: Handle = event, s: Handle = stream, flags: c_uint = flags) : EventRecordFlags, Event => event_record_with_flags(..);
            EventSynchronize [cuEventSynchronize] (e: Handle = event) : Event, Sync;
            EventDestroy [cuEventDestroy_v2] (e: Handle = event) : Event, Event, ordered;
            StreamBeginCapture [cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz] (s: Handle, mode: c_int) : BeginCapture, Capture after stream_begin_capture;
            StreamEndCapture [cuStreamEndCapture, cuStreamEndCapture_ptsz] (s: Handle, g: *mut Handle) : EndCapture, Capture => stream_end_capture;
            GraphInstantiateWithFlags [cuGraphInstantiateWithFlags] (exec: *mut Handle, g: Handle, flags: u64) : GraphInstantiate, Graph, ordered after graph_instantiate;
            GraphLaunch [cuGraphLaunch, cuGraphLaunch_ptsz] (exec: Handle, s: Handle) : GraphLaunch, GraphLaunch => graph_launch;
            GraphDestroy [cuGraphDestroy] (g: Handle = graph) : Graph, Graph, ordered => graph_destroy(..);
            GraphExecDestroy [cuGraphExecDestroy] (g: Handle = graph) : Graph, Graph, ordered => graph_destroy(..);
            LaunchHostFunc [cuLaunchHostFunc, cuLaunchHostFunc_ptsz] (s: Handle, func: *mut c_void, data: *mut c_void) : HostFunc, HostFunc => launch_host_func;
            GraphInstantiate [cuGraphInstantiate_v2] (exec: *mut Handle, g: Handle, err_node: *mut Handle, log: *mut c_char, log_size: usize) : GraphInstantiate, Graph, ordered after graph_instantiate_v2;
            GraphInstantiateWithParams [cuGraphInstantiateWithParams, cuGraphInstantiateWithParams_ptsz] (exec: *mut Handle, g: Handle, params: *mut InstantiateParams) : GraphInstantiateParams, Graph, ordered after graph_instantiate_params;
            CtxSetLimit [cuCtxSetLimit] (limit: c_int = limit, value: usize = value) : CtxLimit, Context;
            CtxSetCacheConfig [cuCtxSetCacheConfig] (config: c_int = config) : CacheConfig, Attribute;
            // Function and kernel handles reached by other paths: the module of a function (capture
            // also records it for a launched function it never saw looked up, e.g. one a library
            // got through a private export table), and enumerations of a module or library.
            FuncGetModule [cuFuncGetModule] (m: *mut Handle, f: Handle) : FuncGetModule, Lookup, ordered after func_get_module;
            ModuleEnumerateFunctions [cuModuleEnumerateFunctions] (fns: *mut Handle, n: c_uint, m: Handle) : Enumerated, Lookup, ordered => enumerate_functions(..);
            LibraryEnumerateKernels [cuLibraryEnumerateKernels] (ks: *mut Handle, n: c_uint, lib: Handle) : Enumerated, Lookup, ordered => enumerate_functions(..);
            // Explicit CUDA graphs (wt-graphs): construction node by node, parameter updates,
            // and two record types no export makes (`hrrGraphHost*`: what `cuGraphLaunch`'s
            // memcpy nodes read from and wrote to host memory, recorded by its custom function).
            GraphCreate [cuGraphCreate] (g: *mut Handle, flags: c_uint) : GraphCreate, Graph, ordered after graph_create;
            GraphAddKernelNode [cuGraphAddKernelNode, cuGraphAddKernelNode_v2] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const u8) : GraphNode, Graph, ordered after graph_add_kernel_node;
            GraphAddMemcpyNode [cuGraphAddMemcpyNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const u8, ctx: Handle) : GraphNode, Graph, ordered => graph_add_memcpy_node;
            GraphAddMemsetNode [cuGraphAddMemsetNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const u8, ctx: Handle) : GraphNode, Graph, ordered => graph_add_memset_node;
            GraphAddHostNode [cuGraphAddHostNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *const u8) : GraphNode, Graph, ordered => graph_add_host_node;
            GraphAddEmptyNode [cuGraphAddEmptyNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize) : GraphNode, Graph, ordered => graph_add_empty_node;
            GraphAddEventRecordNode [cuGraphAddEventRecordNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, e: Handle) : GraphNode, Graph, ordered => graph_add_event_node(..);
            GraphAddEventWaitNode [cuGraphAddEventWaitNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, e: Handle) : GraphNode, Graph, ordered => graph_add_event_node(..);
            GraphAddChildGraphNode [cuGraphAddChildGraphNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, child: Handle) : GraphNode, Graph, ordered => graph_add_child_graph_node;
            GraphAddNode [cuGraphAddNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *mut u8) : GraphNode, Graph, ordered => graph_add_node;
            GraphAddNodeV2 [cuGraphAddNode_v2] (node: *mut Handle, g: Handle, deps: *const Handle, edges: *const u8, n: usize, p: *mut u8) : GraphNode, Graph, ordered after graph_add_node_v2;
            GraphAddDependencies [cuGraphAddDependencies] (g: Handle, from: *const Handle, to: *const Handle, n: usize) : GraphEdges, Graph, ordered after graph_add_dependencies;
            GraphAddDependenciesV2 [cuGraphAddDependencies_v2] (g: Handle, from: *const Handle, to: *const Handle, edges: *const u8, n: usize) : GraphEdges, Graph, ordered after graph_add_dependencies_v2;
            GraphKernelNodeSetParams [cuGraphKernelNodeSetParams, cuGraphKernelNodeSetParams_v2] (node: Handle, p: *const u8) : GraphNode, Graph, ordered after graph_kernel_node_set_params;
            GraphMemcpyNodeSetParams [cuGraphMemcpyNodeSetParams] (node: Handle, p: *const u8) : GraphNode, Graph, ordered after graph_memcpy_node_set_params;
            GraphMemsetNodeSetParams [cuGraphMemsetNodeSetParams] (node: Handle, p: *const u8) : GraphNode, Graph, ordered after graph_memset_node_set_params;
            GraphHostNodeSetParams [cuGraphHostNodeSetParams] (node: Handle, p: *const u8) : GraphNode, Graph, ordered after graph_host_node_set_params;
            GraphExecKernelNodeSetParams [cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2] (exec: Handle, node: Handle, p: *const u8) : GraphNode, Graph, ordered after graph_exec_kernel_node_set_params;
            GraphExecMemcpyNodeSetParams [cuGraphExecMemcpyNodeSetParams] (exec: Handle, node: Handle, p: *const u8, ctx: Handle) : GraphNode, Graph, ordered after graph_exec_memcpy_node_set_params;
            GraphExecMemsetNodeSetParams [cuGraphExecMemsetNodeSetParams] (exec: Handle, node: Handle, p: *const u8, ctx: Handle) : GraphNode, Graph, ordered after graph_exec_memset_node_set_params;
            GraphExecHostNodeSetParams [cuGraphExecHostNodeSetParams] (exec: Handle, node: Handle, p: *const u8) : GraphNode, Graph, ordered after graph_exec_host_node_set_params;
            GraphExecChildGraphNodeSetParams [cuGraphExecChildGraphNodeSetParams] (exec: Handle, node: Handle, child: Handle) : GraphNode, Graph, ordered after graph_exec_child_graph_node_set_params;
            GraphExecUpdate [cuGraphExecUpdate_v2] (exec: Handle, g: Handle, info: *mut u8) : GraphExecUpdate, Graph, ordered after graph_exec_update;
            GraphUpload [cuGraphUpload, cuGraphUpload_ptsz] (exec: Handle = exec, s: Handle = stream) : GraphLaunch, Graph;
            GraphClone [cuGraphClone] (clone: *mut Handle, g: Handle) : GraphClone, Graph, ordered after graph_clone;
            GraphDestroyNode [cuGraphDestroyNode] (node: Handle = node) : GraphNodeHandle, Graph, ordered;
            GraphConditionalHandleCreate [cuGraphConditionalHandleCreate] (h: *mut u64 => handle, g: Handle = graph, ctx: Handle = ctx, default_value: c_uint = default_value, flags: c_uint = flags) : ConditionalHandle, Graph, ordered;
            GraphHostSource [hrrGraphHostSource] (exec: Handle, host: u64, n: u64) : GraphHostSource, H2d => graph_host_record(..);
            GraphHostResult [hrrGraphHostResult] (exec: Handle, host: u64, n: u64) : GraphHostResult, D2h => graph_host_record(..);
            // 2D/3D copies, arrays, texture and surface objects (wt-copies).
            Memcpy2D [cuMemcpy2D_v2, cuMemcpy2D_v2_ptds] (p: *const CudaMemcpy2D) : CopyPitched, Copy => memcpy_2d(..);
            Memcpy2DUnaligned [cuMemcpy2DUnaligned_v2, cuMemcpy2DUnaligned_v2_ptds] (p: *const CudaMemcpy2D) : CopyPitched, Copy => memcpy_2d(..);
            Memcpy2DAsync [cuMemcpy2DAsync_v2, cuMemcpy2DAsync_v2_ptsz] (p: *const CudaMemcpy2D, stream: Handle) : CopyPitched, Copy => memcpy_2d_async;
            Memcpy3D [cuMemcpy3D_v2, cuMemcpy3D_v2_ptds] (p: *const CudaMemcpy3D) : CopyPitched, Copy => memcpy_3d;
            Memcpy3DAsync [cuMemcpy3DAsync_v2, cuMemcpy3DAsync_v2_ptsz] (p: *const CudaMemcpy3D, stream: Handle) : CopyPitched, Copy => memcpy_3d_async;
            MemcpyHtoA [cuMemcpyHtoA_v2, cuMemcpyHtoA_v2_ptds] (dst: Handle, off: usize, src: *const c_void, n: usize) : CopyPitched, H2d => memcpy_htoa;
            MemcpyHtoAAsync [cuMemcpyHtoAAsync_v2, cuMemcpyHtoAAsync_v2_ptsz] (dst: Handle, off: usize, src: *const c_void, n: usize, stream: Handle) : CopyPitched, H2d => memcpy_htoa_async;
            MemcpyAtoH [cuMemcpyAtoH_v2, cuMemcpyAtoH_v2_ptds] (dst: *mut c_void, src: Handle, off: usize, n: usize) : CopyPitched, D2h => memcpy_atoh;
            MemcpyAtoHAsync [cuMemcpyAtoHAsync_v2, cuMemcpyAtoHAsync_v2_ptsz] (dst: *mut c_void, src: Handle, off: usize, n: usize, stream: Handle) : CopyPitched, D2h => memcpy_atoh_async;
            MemcpyAtoD [cuMemcpyAtoD_v2, cuMemcpyAtoD_v2_ptds] (dst: u64, src: Handle, off: usize, n: usize) : CopyPitched, D2d => memcpy_atod;
            MemcpyDtoA [cuMemcpyDtoA_v2, cuMemcpyDtoA_v2_ptds] (dst: Handle, off: usize, src: u64, n: usize) : CopyPitched, D2d => memcpy_dtoa;
            MemcpyAtoA [cuMemcpyAtoA_v2, cuMemcpyAtoA_v2_ptds] (dst: Handle, doff: usize, src: Handle, soff: usize, n: usize) : CopyPitched, D2d => memcpy_atoa;
            ArrayCreate [cuArrayCreate_v2] (a: *mut Handle, d: *const ArrayDescriptor) : ArrayCreate, Array, ordered after array_create;
            Array3DCreate [cuArray3DCreate_v2] (a: *mut Handle, d: *const Array3dDescriptor) : ArrayCreate, Array, ordered after array_3d_create;
            ArrayDestroy [cuArrayDestroy] (a: Handle = array) : Array, Array, ordered;
            MipmappedArrayCreate [cuMipmappedArrayCreate] (a: *mut Handle, d: *const Array3dDescriptor, levels: c_uint) : ArrayCreate, Array, ordered after mipmapped_array_create;
            MipmappedArrayGetLevel [cuMipmappedArrayGetLevel] (a: *mut Handle => array, m: Handle = mipmap, level: c_uint = level) : MipmapLevel, Array, ordered;
            MipmappedArrayDestroy [cuMipmappedArrayDestroy] (m: Handle = array) : Array, Array, ordered;
            TexObjectCreate [cuTexObjectCreate] (o: *mut u64, res: *const u8, tex: *const u8, view: *const u8) : ObjectCreate, Array, ordered after tex_object_create;
            TexObjectDestroy [cuTexObjectDestroy] (o: u64 = object) : Object, Array, ordered;
            SurfObjectCreate [cuSurfObjectCreate] (o: *mut u64, res: *const u8) : ObjectCreate, Array, ordered after surf_object_create;
            SurfObjectDestroy [cuSurfObjectDestroy] (o: u64 = object) : Object, Array, ordered;
            // Host-visible memory (pseudo-calls: no driver export; capture records them itself)
            // and stream-ordered memory pools (hostmem).
            HostMemWrite [hrrHostMemWrite] () -> () : HostMemWrite, HostWrite => pseudo_call(..);
            HostMemCheck [hrrHostMemCheck] () -> () : HostMemCheck, HostCheck => pseudo_call(..);
            MemPoolCreate [cuMemPoolCreate] (pool: *mut Handle, props: *const u8) : PoolCreate, Pool, ordered after mem_pool_create;
            MemPoolDestroy [cuMemPoolDestroy] (pool: Handle = pool) : Pool, Pool, ordered;
            MemPoolSetAttribute [cuMemPoolSetAttribute] (pool: Handle, attr: c_int, value: *mut c_void) : PoolAttribute, Pool => mem_pool_attribute(..);
            MemPoolGetAttribute [cuMemPoolGetAttribute] (pool: Handle, attr: c_int, value: *mut c_void) : PoolAttribute, Query => mem_pool_attribute(..);
            MemPoolTrimTo [cuMemPoolTrimTo] (pool: Handle = pool, keep: usize = bytes) : PoolTrim, Pool;
            MemPoolSetAccess [cuMemPoolSetAccess] (pool: Handle, desc: *const u8, count: usize) : PoolSetAccess, Pool after mem_pool_set_access;
            DeviceGetDefaultMemPool [cuDeviceGetDefaultMemPool] (pool: *mut Handle => pool, dev: c_int = device) : DevicePool, Pool;
            DeviceGetMemPool [cuDeviceGetMemPool] (pool: *mut Handle => pool, dev: c_int = device) : DevicePool, Pool;
            DeviceSetMemPool [cuDeviceSetMemPool] (dev: c_int = device, pool: Handle = pool) : DevicePool, Pool;
            // Asynchronous D2H results (async copies). A pseudo-row: `hrrMemcpyResult` is no
            // driver entry point (its wrapper never finds a real function and is never handed
            // out); capture records it from the host function it enqueues behind an async D2H
            // copy (`cuMemcpyDtoHAsync`, `cuMemcpyAsync` to host), when the copy has completed.
            MemcpyResult [hrrMemcpyResult] (copy: u64, dst: u64, n: usize, stream: Handle) : CopyResult, D2hResult => memcpy_result;
            // Graph memory nodes (graphMemoryNodes): the allocation's address and size in
            // `GraphNode.args` (node_type::MEM_ALLOC / MEM_FREE).
            GraphAddMemAllocNode [cuGraphAddMemAllocNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, p: *mut u8) : GraphNode, Graph, ordered => graph_add_mem_alloc_node;
            GraphAddMemFreeNode [cuGraphAddMemFreeNode] (node: *mut Handle, g: Handle, deps: *const Handle, n: usize, dptr: u64) : GraphNode, Graph, ordered => graph_add_mem_free_node;
            // Several devices in one process (issue 19): peer access and peer copies.
            CtxEnablePeerAccess [cuCtxEnablePeerAccess] (peer: Handle = ctx, flags: c_uint = flags) : PeerAccess, Context;
            CtxDisablePeerAccess [cuCtxDisablePeerAccess] (peer: Handle = ctx) : Ctx, Context;
            MemcpyPeer [cuMemcpyPeer, cuMemcpyPeer_ptds] (dst: u64 = dst, dst_ctx: Handle = dst_ctx, src: u64 = src, src_ctx: Handle = src_ctx, n: usize = bytes) : CopyPeer, D2d;
            MemcpyPeerAsync [cuMemcpyPeerAsync, cuMemcpyPeerAsync_ptsz] (dst: u64 = dst, dst_ctx: Handle = dst_ctx, src: u64 = src, src_ctx: Handle = src_ctx, n: usize = bytes, stream: Handle = stream) : CopyPeerAsync, D2d;
            // Stream capture into a graph of the program's (a conditional node's body, say).
            // The graph and nodes of a capture, used to add nodes to it by hand (conditional nodes).
            StreamGetCaptureInfo [cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3_ptsz] (s: Handle, status: *mut c_int, id: *mut u64, g: *mut Handle, deps: *mut *const Handle, edges: *mut *const u8, n: *mut usize) : CaptureInfo, Capture after stream_get_capture_info_v3;
            StreamGetCaptureInfoV2 [cuStreamGetCaptureInfo_v2, cuStreamGetCaptureInfo_v2_ptsz] (s: Handle, status: *mut c_int, id: *mut u64, g: *mut Handle, deps: *mut *const Handle, n: *mut usize) : CaptureInfo, Capture after stream_get_capture_info_v2;
            StreamUpdateCaptureDependencies [cuStreamUpdateCaptureDependencies, cuStreamUpdateCaptureDependencies_ptsz] (s: Handle, deps: *const Handle, n: usize, flags: c_uint) : CaptureDeps, Capture after stream_update_capture_dependencies;
            StreamUpdateCaptureDependenciesV2 [cuStreamUpdateCaptureDependencies_v2, cuStreamUpdateCaptureDependencies_v2_ptsz] (s: Handle, deps: *const Handle, edges: *const u8, n: usize, flags: c_uint) : CaptureDeps, Capture after stream_update_capture_dependencies_v2;
            // Not recorded: a query that says work is done lets async D2H results be recorded first.
            EventQuery [cuEventQuery] (e: Handle) : Event, Query => query_done(..);
            StreamQuery [cuStreamQuery, cuStreamQuery_ptsz] (s: Handle) : Stream, Query => query_done(..);
            // Pseudo-call (no driver export): the source bytes of the async H2D copy of event
            // `copy` from page-locked memory, read after the call returned.
            MemcpySource [hrrMemcpySource] (copy: u64, src: u64, n: usize, stream: Handle) : CopySource, H2dSource => memcpy_source;
            StreamBeginCaptureToGraph [cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph_ptsz] (s: Handle, g: Handle, deps: *const Handle, edges: *const u8, n: usize, mode: c_int) : BeginCaptureToGraph, Capture after stream_begin_capture_to_graph;
            // Several processes (issue 19): memory and events shared through IPC handles.
            IpcGetMemHandle [cuIpcGetMemHandle] (handle: *mut IpcHandle => handle, dptr: u64 = dptr) : IpcMemHandle, Ipc;
            IpcOpenMemHandle [cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle] (dptr: *mut u64, handle: IpcHandle, flags: c_uint) : IpcOpenMem, Ipc, ordered after ipc_open_mem_handle;
            IpcCloseMemHandle [cuIpcCloseMemHandle] (dptr: u64 = dptr) : DevicePtr, Ipc, ordered;
            IpcGetEventHandle [cuIpcGetEventHandle] (handle: *mut IpcHandle => handle, event: Handle = event) : IpcEventHandle, Ipc;
            IpcOpenEventHandle [cuIpcOpenEventHandle] (event: *mut Handle => event, handle: IpcHandle = handle) : IpcEventHandle, Ipc, ordered;
            MemExportToShareableHandle [cuMemExportToShareableHandle] (out: *mut c_void, handle: u64, kind: c_int, flags: u64) : Shareable, Ipc after mem_export_to_shareable_handle;
            MemImportFromShareableHandle [cuMemImportFromShareableHandle] (handle: *mut u64, os: *mut c_void, kind: c_int) : Shareable, Ipc, ordered => mem_import_from_shareable_handle;
            // Stream memory operations: a value written to device memory in stream order, and a
            // stream waiting until a word of device memory compares to a value.
            StreamWriteValue32 [cuStreamWriteValue32_v2, cuStreamWriteValue32_v2_ptsz, cuStreamWriteValue32, cuStreamWriteValue32_ptsz] (s: Handle = stream, addr: u64 = addr, value: c_uint = value, flags: c_uint = flags) : StreamValue, Memset;
            StreamWriteValue64 [cuStreamWriteValue64_v2, cuStreamWriteValue64_v2_ptsz, cuStreamWriteValue64, cuStreamWriteValue64_ptsz] (s: Handle = stream, addr: u64 = addr, value: u64 = value, flags: c_uint = flags) : StreamValue, Memset;
            StreamWaitValue32 [cuStreamWaitValue32_v2, cuStreamWaitValue32_v2_ptsz, cuStreamWaitValue32, cuStreamWaitValue32_ptsz] (s: Handle = stream, addr: u64 = addr, value: c_uint = value, flags: c_uint = flags) : StreamValue, Event;
            StreamWaitValue64 [cuStreamWaitValue64_v2, cuStreamWaitValue64_v2_ptsz, cuStreamWaitValue64, cuStreamWaitValue64_ptsz] (s: Handle = stream, addr: u64 = addr, value: u64 = value, flags: c_uint = flags) : StreamValue, Event;
            // Hopper TMA descriptors (host-only calls): kernels take the 128 bytes by value or
            // read them from device memory; replay encodes them again at the translated address.
            TensorMapEncodeTiled [cuTensorMapEncodeTiled] (map: *mut u8, dtype: c_int, rank: c_uint, addr: *mut c_void, dims: *const u64, strides: *const u64, box_dim: *const c_uint, elem_strides: *const c_uint, interleave: c_int, swizzle: c_int, l2: c_int, oob: c_int) : TensorMapEncode, Array, ordered after tensor_map_encode_tiled;
            TensorMapEncodeIm2col [cuTensorMapEncodeIm2col] (map: *mut u8, dtype: c_int, rank: c_uint, addr: *mut c_void, dims: *const u64, strides: *const u64, lower: *const c_int, upper: *const c_int, channels: c_uint, pixels: c_uint, elem_strides: *const c_uint, interleave: c_int, swizzle: c_int, l2: c_int, oob: c_int) : TensorMapEncode, Array, ordered after tensor_map_encode_im2col;
            TensorMapReplaceAddress [cuTensorMapReplaceAddress] (map: *mut u8, addr: *mut c_void) : TensorMapReplace, Array, ordered => tensor_map_replace_address;
            // Pseudo-call (no driver export): what a device allocation held when the program
            // freed it, in a process that had copied no result back (capture's `freecheck`).
            FreeCheck [hrrFreeCheck] () -> () : FreeCheck, FreeCheck => pseudo_call(..);
            // 2D memsets (`cudaMemset2D*`; cuBLAS zeroes a matrix with them when alpha and
            // beta are 0), replayed as the async call of their element width.
            MemsetD2D8 [cuMemsetD2D8_v2, cuMemsetD2D8_v2_ptds] (dst: u64, pitch: usize, v: c_uchar, w: usize, h: usize) : Memset2d, Memset => memset_2d(..);
            MemsetD2D16 [cuMemsetD2D16_v2, cuMemsetD2D16_v2_ptds] (dst: u64, pitch: usize, v: c_ushort, w: usize, h: usize) : Memset2d, Memset => memset_2d(..);
            MemsetD2D32 [cuMemsetD2D32_v2, cuMemsetD2D32_v2_ptds] (dst: u64, pitch: usize, v: c_uint, w: usize, h: usize) : Memset2d, Memset => memset_2d(..);
            MemsetD2D8Async [cuMemsetD2D8Async, cuMemsetD2D8Async_ptsz] (dst: u64, pitch: usize, v: c_uchar, w: usize, h: usize, stream: Handle) : Memset2d, Memset => memset_2d_async(..);
            MemsetD2D16Async [cuMemsetD2D16Async, cuMemsetD2D16Async_ptsz] (dst: u64, pitch: usize, v: c_ushort, w: usize, h: usize, stream: Handle) : Memset2d, Memset => memset_2d_async(..);
            MemsetD2D32Async [cuMemsetD2D32Async, cuMemsetD2D32Async_ptsz] (dst: u64, pitch: usize, v: c_uint, w: usize, h: usize, stream: Handle) : Memset2d, Memset => memset_2d_async(..);
            // `cudaStreamAddCallback`: a host function by its older name (program code behind
            // the stream's work: pending async D2H results are recorded before it).
            StreamAddCallback [cuStreamAddCallback, cuStreamAddCallback_ptsz] (s: Handle, cb: *mut c_void, data: *mut c_void, flags: c_uint) : HostFunc, HostFunc => stream_add_callback;
        }
    };
}
