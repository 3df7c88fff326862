//! The HIP runtime, loaded at run time with libloading (no link-time ROCm dependency): a table
//! of the entry points replay uses, each optional so a missing one is an error at its first use.
//! The library is `--runtime PATH`, else the first of `libamdhip64.so`, `.so.7`, `.so.6`, `.so.5`
//! and `/opt/rocm/lib/libamdhip64.so` that loads. The [`hip!`] macro calls an entry point; a new
//! entry point is added to the table here.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::path::Path;

use anyhow::{bail, Result};

use crate::replay::backend::shared::loaded_from;
pub use crate::replay::backend::shared::H;

/// `hipError_t`.
pub type HipError = c_int;

/// `hipErrorNotReady`.
pub const HIP_ERROR_NOT_READY: HipError = 600;
/// `hipMemcpyKind` values.
pub mod kind {
    /// Host to device.
    pub const H2D: i32 = 1;
    /// Device to host.
    pub const D2H: i32 = 2;
    /// Device to device.
    pub const D2D: i32 = 3;
}

/// Library names tried when `--runtime` is not given.
pub const CANDIDATES: [&str; 5] = [
    "libamdhip64.so",
    "libamdhip64.so.7",
    "libamdhip64.so.6",
    "libamdhip64.so.5",
    "/opt/rocm/lib/libamdhip64.so",
];

macro_rules! hip_api {
    ($( $name:ident : fn($($t:ty),*); )*) => {
        /// Entry points of the runtime replay uses.
        #[allow(non_snake_case)]
        pub struct HipApi {
            $( pub $name: Option<unsafe extern "C" fn($($t),*) -> HipError>, )*
            /// `hipGetErrorName`.
            pub hipGetErrorName: Option<unsafe extern "C" fn(HipError) -> *const c_char>,
            _lib: libloading::Library,
            /// Where the library was loaded from.
            pub path: String,
        }

        impl HipApi {
            fn from_library(lib: libloading::Library, name: &str) -> Self {
                // SAFETY: each symbol is cast to its documented signature.
                unsafe {
                    let api = HipApi {
                        $( $name: lib.get::<unsafe extern "C" fn($($t),*) -> HipError>(concat!(stringify!($name), "\0").as_bytes()).ok().map(|s| *s), )*
                        hipGetErrorName: lib.get::<unsafe extern "C" fn(HipError) -> *const c_char>(b"hipGetErrorName\0").ok().map(|s| *s),
                        path: String::new(),
                        _lib: lib,
                    };
                    let path = api.hipInit.map(|f| loaded_from(f as *const c_void, "libamdhip64.so")).unwrap_or_else(|| name.to_string());
                    HipApi { path, ..api }
                }
            }
        }
    };
}

hip_api! {
    hipInit: fn(c_uint);
    hipRuntimeGetVersion: fn(*mut c_int);
    hipGetDeviceCount: fn(*mut c_int);
    hipSetDevice: fn(c_int);
    hipDeviceGetName: fn(*mut c_char, c_int, c_int);
    hipGetDeviceProperties: fn(*mut u8, c_int);
    hipGetDevicePropertiesR0600: fn(*mut u8, c_int);
    hipDeviceSynchronize: fn();
    hipMalloc: fn(*mut u64, usize);
    hipFree: fn(u64);
    hipMallocManaged: fn(*mut u64, usize, c_uint);
    hipHostMalloc: fn(*mut u64, usize, c_uint);
    hipHostFree: fn(u64);
    hipMemGetAllocationGranularity: fn(*mut usize, *const u8, c_int);
    hipMemAddressReserve: fn(*mut u64, usize, usize, u64, u64);
    hipMemAddressFree: fn(u64, usize);
    hipMemCreate: fn(*mut u64, usize, *const u8, u64);
    hipMemRelease: fn(u64);
    hipMemMap: fn(u64, usize, usize, u64, u64);
    hipMemUnmap: fn(u64, usize);
    hipMemSetAccess: fn(u64, usize, *const u8, usize);
    hipMemcpyAsync: fn(u64, u64, usize, c_int, H);
    hipMemcpy2DAsync: fn(u64, usize, u64, usize, usize, usize, c_int, H);
    hipMemsetD8Async: fn(u64, u8, usize, H);
    hipMemsetD16Async: fn(u64, u16, usize, H);
    hipMemsetD32Async: fn(u64, c_int, usize, H);
    hipMemset2DAsync: fn(u64, usize, c_int, usize, usize, H);
    hipModuleLoadData: fn(*mut H, *const c_void);
    hipModuleGetFunction: fn(*mut H, H, *const c_char);
    hipModuleGetGlobal: fn(*mut u64, *mut usize, H, *const c_char);
    hipModuleLaunchKernel: fn(H, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, H, *mut *mut c_void, *mut *mut c_void);
    hipModuleLaunchCooperativeKernel: fn(H, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, H, *mut *mut c_void);
    hipStreamCreateWithFlags: fn(*mut H, c_uint);
    hipStreamCreateWithPriority: fn(*mut H, c_uint, c_int);
    hipStreamDestroy: fn(H);
    hipStreamSynchronize: fn(H);
    hipStreamWaitEvent: fn(H, H, c_uint);
    hipEventCreateWithFlags: fn(*mut H, c_uint);
    hipEventRecord: fn(H, H);
    hipEventSynchronize: fn(H);
    hipEventQuery: fn(H);
    hipEventDestroy: fn(H);
    hipEventElapsedTime: fn(*mut f32, H, H);
    // Stream capture and graphs (graphs.rs).
    hipStreamBeginCapture: fn(H, c_int);
    hipStreamEndCapture: fn(H, *mut H);
    hipGraphInstantiate: fn(*mut H, H, *mut H, *mut c_char, usize);
    hipGraphLaunch: fn(H, H);
    hipGraphExecDestroy: fn(H);
    hipGraphDestroy: fn(H);
}

impl HipApi {
    /// Load the runtime: `name` when given, else the first of [`CANDIDATES`] that loads.
    pub fn load(name: Option<&Path>) -> Result<Self> {
        let names: Vec<String> = match name {
            Some(p) => vec![p.display().to_string()],
            None => CANDIDATES.iter().map(|s| s.to_string()).collect(),
        };
        let mut errors = Vec::new();
        for n in &names {
            // SAFETY: loading the GPU runtime, whose initialisers are its own.
            match unsafe { libloading::Library::new(n) } {
                Ok(lib) => return Ok(Self::from_library(lib, n)),
                Err(e) => errors.push(format!("{n}: {e}")),
            }
        }
        bail!(
            "cannot load the HIP runtime (tried {}); install ROCm or name it with --runtime",
            errors.join("; ")
        )
    }

    /// The runtime's name for an error code.
    pub fn error_name(&self, code: HipError) -> String {
        if let Some(f) = self.hipGetErrorName {
            // SAFETY: returns a static string or null.
            let p = unsafe { f(code) };
            if !p.is_null() {
                // SAFETY: a NUL-terminated static string.
                return unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned();
            }
        }
        format!("HIP error {code}")
    }
}

/// Call a runtime entry point, turning a missing symbol or a non-zero result into an error.
macro_rules! hip {
    ($api:expr, $name:ident ( $($arg:expr),* )) => {
        $crate::replay::backend::shared::entry_call!("the HIP runtime has no ", $api, $name($($arg),*))
    };
}
pub(crate) use hip;
