//! The CUDA driver, loaded at run time with libloading (no link-time CUDA dependency): a table of
//! the entry points replay uses, each optional so a missing one is an error at its first use,
//! and the [`cu!`] macro that calls one. A new entry point is added to the table here.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::Path;

use anyhow::{Context, Result};
use hrr_calls::cuda::ffi::{
    Array3dDescriptor, ArrayDescriptor, CudaMemcpy2D, CudaMemcpy3D, IpcHandle, LaunchConfig,
};

use crate::replay::backend::shared::loaded_from;
pub use crate::replay::backend::shared::H;

/// `CUresult`.
pub type CUresult = c_int;

macro_rules! driver_api {
    ($( $name:ident : fn($($t:ty),*); )*) => {
        /// Entry points of the driver replay uses.
        #[allow(non_snake_case)]
        pub struct Api {
            $( pub $name: Option<unsafe extern "C" fn($($t),*) -> CUresult>, )*
            _lib: libloading::Library,
            /// Where the library was loaded from.
            pub path: String,
        }

        impl Api {
            /// Load the driver library `name` (default `libcuda.so.1`).
            pub fn load(name: Option<&Path>) -> Result<Self> {
                let name = name.map(|p| p.as_os_str().to_owned()).unwrap_or_else(|| "libcuda.so.1".into());
                // SAFETY: loading the GPU driver, whose initialisers are its own.
                let lib = unsafe { libloading::Library::new(&name) }
                    .with_context(|| format!("cannot load the CUDA driver {}", name.to_string_lossy()))?;
                // SAFETY: each symbol is cast to its documented signature.
                unsafe {
                    let api = Api {
                        $( $name: lib.get::<unsafe extern "C" fn($($t),*) -> CUresult>(concat!(stringify!($name), "\0").as_bytes()).ok().map(|s| *s), )*
                        path: String::new(),
                        _lib: lib,
                    };
                    let path = api.cuInit.map(|f| loaded_from(f as *const c_void, "libcuda.so.1")).unwrap_or_else(|| name.to_string_lossy().into_owned());
                    Ok(Api { path, ..api })
                }
            }
        }
    };
}

driver_api! {
    cuInit: fn(c_uint);
    cuDriverGetVersion: fn(*mut c_int);
    cuDeviceGet: fn(*mut c_int, c_int);
    cuDeviceGetCount: fn(*mut c_int);
    cuDeviceGetName: fn(*mut c_char, c_int, c_int);
    cuDeviceGetAttribute: fn(*mut c_int, c_int, c_int);
    cuDevicePrimaryCtxRetain: fn(*mut H, c_int);
    cuCtxSetCurrent: fn(H);
    cuCtxSynchronize: fn();
    cuCtxSetLimit: fn(c_int, usize);
    cuCtxSetCacheConfig: fn(c_int);
    cuGetErrorName: fn(c_int, *mut *const c_char);
    cuMemAlloc_v2: fn(*mut u64, usize);
    cuMemFree_v2: fn(u64);
    cuMemAllocManaged: fn(*mut u64, usize, c_uint);
    cuMemHostAlloc: fn(*mut *mut c_void, usize, c_uint);
    cuMemAddressReserve: fn(*mut u64, usize, usize, u64, u64);
    cuMemAddressFree: fn(u64, usize);
    cuMemCreate: fn(*mut u64, usize, *const u8, u64);
    cuMemRelease: fn(u64);
    cuMemMap: fn(u64, usize, usize, u64, u64);
    cuMemUnmap: fn(u64, usize);
    cuMemSetAccess: fn(u64, usize, *const u8, usize);
    cuMemGetAllocationGranularity: fn(*mut usize, *const u8, c_int);
    cuMemcpyHtoDAsync_v2: fn(u64, *const c_void, usize, H);
    cuMemcpyDtoHAsync_v2: fn(*mut c_void, u64, usize, H);
    cuMemcpyDtoDAsync_v2: fn(u64, u64, usize, H);
    cuMemsetD8Async: fn(u64, u8, usize, H);
    cuMemsetD16Async: fn(u64, u16, usize, H);
    cuMemsetD32Async: fn(u64, u32, usize, H);
    cuMemsetD2D8Async: fn(u64, usize, u8, usize, usize, H);
    cuMemsetD2D16Async: fn(u64, usize, u16, usize, usize, H);
    cuMemsetD2D32Async: fn(u64, usize, u32, usize, usize, H);
    cuModuleLoadData: fn(*mut H, *const c_void);
    cuModuleGetFunction: fn(*mut H, H, *const c_char);
    cuModuleGetGlobal_v2: fn(*mut u64, *mut usize, H, *const c_char);
    cuLibraryLoadData: fn(*mut H, *const c_void, *mut c_int, *mut *mut c_void, c_uint, *mut c_int, *mut *mut c_void, c_uint);
    cuLibraryGetKernel: fn(*mut H, H, *const c_char);
    cuLibraryGetModule: fn(*mut H, H);
    cuLibraryGetGlobal: fn(*mut u64, *mut usize, H, *const c_char);
    cuKernelGetFunction: fn(*mut H, H);
    cuFuncGetModule: fn(*mut H, H);
    cuFuncSetAttribute: fn(H, c_int, c_int);
    cuKernelSetAttribute: fn(c_int, c_int, H, c_int);
    cuFuncSetCacheConfig: fn(H, c_int);
    cuFuncGetParamInfo: fn(H, usize, *mut usize, *mut usize);
    cuLaunchKernel: fn(H, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, H, *mut *mut c_void, *mut *mut c_void);
    cuLaunchKernelEx: fn(*const LaunchConfig, H, *mut *mut c_void, *mut *mut c_void);
    cuLaunchCooperativeKernel: fn(H, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, H, *mut *mut c_void);
    cuStreamCreate: fn(*mut H, c_uint);
    cuStreamCreateWithPriority: fn(*mut H, c_uint, c_int);
    cuStreamDestroy_v2: fn(H);
    cuStreamSynchronize: fn(H);
    cuStreamWaitEvent: fn(H, H, c_uint);
    cuStreamWriteValue32_v2: fn(H, u64, u32, c_uint);
    cuStreamWriteValue64_v2: fn(H, u64, u64, c_uint);
    cuStreamWaitValue32_v2: fn(H, u64, u32, c_uint);
    cuStreamWaitValue64_v2: fn(H, u64, u64, c_uint);
    cuEventCreate: fn(*mut H, c_uint);
    cuEventRecord: fn(H, H);
    cuEventSynchronize: fn(H);
    cuEventElapsedTime: fn(*mut f32, H, H);
    cuEventQuery: fn(H);
    cuEventDestroy_v2: fn(H);
    cuStreamBeginCapture_v2: fn(H, c_int);
    cuStreamBeginCaptureToGraph: fn(H, H, *const H, *const c_void, usize, c_int);
    cuStreamGetCaptureInfo_v3: fn(H, *mut c_int, *mut u64, *mut H, *mut *const H, *mut *const c_void, *mut usize);
    cuStreamUpdateCaptureDependencies_v2: fn(H, *const H, *const c_void, usize, c_uint);
    cuStreamEndCapture: fn(H, *mut H);
    cuStreamIsCapturing: fn(H, *mut c_int);
    cuGraphInstantiateWithFlags: fn(*mut H, H, u64);
    cuGraphLaunch: fn(H, H);
    cuGraphDestroy: fn(H);
    cuGraphExecDestroy: fn(H);
    // Explicit graphs (graphs.rs).
    cuCtxGetCurrent: fn(*mut H);
    cuCtxEnablePeerAccess: fn(H, c_uint);
    cuIpcGetMemHandle: fn(*mut IpcHandle, u64);
    cuIpcOpenMemHandle_v2: fn(*mut u64, IpcHandle, c_uint);
    cuIpcCloseMemHandle: fn(u64);
    cuIpcGetEventHandle: fn(*mut IpcHandle, H);
    cuIpcOpenEventHandle: fn(*mut H, IpcHandle);
    cuMemExportToShareableHandle: fn(*mut c_void, u64, c_int, u64);
    cuMemImportFromShareableHandle: fn(*mut u64, *mut c_void, c_int);
    cuCtxDisablePeerAccess: fn(H);
    cuMemAllocHost_v2: fn(*mut *mut c_void, usize);
    cuGraphCreate: fn(*mut H, c_uint);
    cuGraphAddKernelNode_v2: fn(*mut H, H, *const H, usize, *const KernelNodeParams);
    cuGraphAddMemcpyNode: fn(*mut H, H, *const H, usize, *const u8, H);
    cuGraphAddMemsetNode: fn(*mut H, H, *const H, usize, *const u8, H);
    cuGraphAddHostNode: fn(*mut H, H, *const H, usize, *const HostNodeParams);
    cuGraphAddEmptyNode: fn(*mut H, H, *const H, usize);
    cuGraphAddNode_v2: fn(*mut H, H, *const H, *const u8, usize, *mut u8);
    cuGraphConditionalHandleCreate: fn(*mut u64, H, H, c_uint, c_uint);
    cuGraphAddEventRecordNode: fn(*mut H, H, *const H, usize, H);
    cuGraphAddEventWaitNode: fn(*mut H, H, *const H, usize, H);
    cuGraphAddChildGraphNode: fn(*mut H, H, *const H, usize, H);
    cuGraphAddDependencies: fn(H, *const H, *const H, usize);
    cuGraphKernelNodeSetParams_v2: fn(H, *const KernelNodeParams);
    cuGraphMemcpyNodeSetParams: fn(H, *const u8);
    cuGraphMemsetNodeSetParams: fn(H, *const u8);
    cuGraphHostNodeSetParams: fn(H, *const HostNodeParams);
    cuGraphExecKernelNodeSetParams_v2: fn(H, H, *const KernelNodeParams);
    cuGraphExecMemcpyNodeSetParams: fn(H, H, *const u8, H);
    cuGraphExecMemsetNodeSetParams: fn(H, H, *const u8, H);
    cuGraphExecHostNodeSetParams: fn(H, H, *const HostNodeParams);
    cuGraphExecChildGraphNodeSetParams: fn(H, H, H);
    cuGraphExecUpdate_v2: fn(H, H, *mut u8);
    cuGraphUpload: fn(H, H);
    cuGraphClone: fn(*mut H, H);
    cuGraphDestroyNode: fn(H);
    // 2D/3D copies, arrays, texture and surface objects (wt-copies).
    cuMemcpy2DAsync_v2: fn(*const CudaMemcpy2D, H);
    cuMemcpy2DUnaligned_v2: fn(*const CudaMemcpy2D);
    cuMemcpy3DAsync_v2: fn(*const CudaMemcpy3D, H);
    cuMemcpyHtoAAsync_v2: fn(H, usize, *const c_void, usize, H);
    cuMemcpyAtoHAsync_v2: fn(*mut c_void, H, usize, usize, H);
    cuMemcpyAtoD_v2: fn(u64, H, usize, usize);
    cuMemcpyDtoA_v2: fn(H, usize, u64, usize);
    cuMemcpyAtoA_v2: fn(H, usize, H, usize, usize);
    cuArrayCreate_v2: fn(*mut H, *const ArrayDescriptor);
    cuArray3DCreate_v2: fn(*mut H, *const Array3dDescriptor);
    cuArrayDestroy: fn(H);
    cuMipmappedArrayCreate: fn(*mut H, *const Array3dDescriptor, c_uint);
    cuMipmappedArrayGetLevel: fn(*mut H, H, c_uint);
    cuMipmappedArrayDestroy: fn(H);
    cuTexObjectCreate: fn(*mut u64, *const u8, *const u8, *const u8);
    cuTexObjectDestroy: fn(u64);
    cuSurfObjectCreate: fn(*mut u64, *const u8);
    cuSurfObjectDestroy: fn(u64);
    // Tensor maps (tensor_maps.rs).
    cuTensorMapEncodeTiled: fn(*mut u8, c_int, c_uint, *mut c_void, *const u64, *const u64, *const c_uint, *const c_uint, c_int, c_int, c_int, c_int);
    cuTensorMapEncodeIm2col: fn(*mut u8, c_int, c_uint, *mut c_void, *const u64, *const u64, *const c_int, *const c_int, c_uint, c_uint, *const c_uint, c_int, c_int, c_int, c_int);
    cuTensorMapReplaceAddress: fn(*mut u8, *mut c_void);
    // Host-visible memory and pools (hostmem.rs, pools.rs).
    cuMemHostRegister_v2: fn(*mut c_void, usize, c_uint);
    cuMemHostUnregister: fn(*mut c_void);
    cuMemHostGetDevicePointer_v2: fn(*mut u64, *mut c_void, c_uint);
    cuMemFreeHost: fn(*mut c_void);
    cuMemPoolCreate: fn(*mut H, *const u8);
    cuMemPoolDestroy: fn(H);
    cuMemPoolSetAttribute: fn(H, c_int, *mut c_void);
    cuMemPoolTrimTo: fn(H, usize);
    cuMemPoolSetAccess: fn(H, *const u8, usize);
    cuDeviceGetDefaultMemPool: fn(*mut H, c_int);
    cuDeviceGetMemPool: fn(*mut H, c_int);
    cuDeviceSetMemPool: fn(c_int, H);
}

/// `CUDA_KERNEL_NODE_PARAMS_v2`.
#[repr(C)]
pub struct KernelNodeParams {
    /// Function.
    pub func: H,
    /// Grid.
    pub grid: [c_uint; 3],
    /// Block.
    pub block: [c_uint; 3],
    /// Dynamic shared memory.
    pub shared_mem: c_uint,
    /// Argument pointers.
    pub params: *mut *mut c_void,
    /// Packed arguments.
    pub extra: *mut *mut c_void,
    /// Library kernel (when `func` is null).
    pub kern: H,
    /// Context (null: the current one).
    pub ctx: H,
}

impl KernelNodeParams {
    /// The kernel node of launch `l` (grid, block, dynamic shared memory) running `f` (a
    /// library's kernel where `library`: the driver reads `kern` when `func` is null), its
    /// arguments passed by `extra` ([`packed_args_extra`]).
    pub fn of_launch(
        l: &hrr_calls::shapes::Launch,
        f: H,
        library: bool,
        extra: &mut [*mut c_void; 5],
    ) -> Self {
        let (func, kern) = match library {
            false => (f, std::ptr::null_mut()),
            true => (std::ptr::null_mut(), f),
        };
        KernelNodeParams {
            func,
            grid: [l.grid_x, l.grid_y, l.grid_z],
            block: [l.block_x, l.block_y, l.block_z],
            shared_mem: l.shared_mem,
            params: std::ptr::null_mut(),
            extra: extra.as_mut_ptr(),
            kern,
            ctx: std::ptr::null_mut(),
        }
    }
}

/// A launch's `extra` array handing it the packed argument buffer `args` of `*size` bytes
/// (`CU_LAUNCH_PARAM_BUFFER_POINTER`, `CU_LAUNCH_PARAM_BUFFER_SIZE`, end).
pub fn packed_args_extra(args: *const u8, size: &mut usize) -> [*mut c_void; 5] {
    [
        std::ptr::without_provenance_mut(1),
        args as *mut c_void,
        std::ptr::without_provenance_mut(2),
        size as *mut usize as *mut c_void,
        std::ptr::null_mut(),
    ]
}

/// `CUDA_HOST_NODE_PARAMS`.
#[repr(C)]
pub struct HostNodeParams {
    /// The host function.
    pub func: Option<unsafe extern "C" fn(*mut c_void)>,
    /// Its argument.
    pub data: *mut c_void,
}

/// `cuGetErrorName`'s signature.
pub type ErrorNameFn = unsafe extern "C" fn(CUresult, *mut *const c_char) -> CUresult;

/// The name `get` (the driver's `cuGetErrorName`, when it has one) gives error `code`, else
/// `CUDA error N`. A free function so that a wait run on another thread names its error too.
pub fn error_name_with(get: Option<ErrorNameFn>, code: CUresult) -> String {
    let mut p: *const c_char = std::ptr::null();
    if let Some(f) = get {
        // SAFETY: out-pointer to a local.
        if unsafe { f(code, &mut p) } == 0 && !p.is_null() {
            // SAFETY: the driver returns a static string.
            return unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
        }
    }
    format!("CUDA error {code}")
}

impl Api {
    /// The driver's name for an error code.
    pub fn error_name(&self, code: CUresult) -> String {
        error_name_with(self.cuGetErrorName, code)
    }
}

/// Call a driver entry point, turning a missing symbol or a non-zero result into an error.
macro_rules! cu {
    ($api:expr, $name:ident ( $($arg:expr),* )) => {
        $crate::replay::backend::shared::entry_call!("the driver has no ", $api, $name($($arg),*))
    };
}
pub(crate) use cu;
