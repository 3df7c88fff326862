//! Code: module and library loads (images stored as code objects), function, kernel and global
//! look-ups (remembered in the state), enumerations, and the binding of a launched function
//! capture never saw looked up (through its module, [`bind_unseen_function`]).

#![allow(clippy::missing_safety_doc)]

use super::Call;
use crate::api::cuda::calls::args;
use std::ffi::{c_char, c_uint, c_void, CStr};

use hrr_archive::{CodeKind, ObjectId};
use hrr_calls::cuda::ffi::{CUresult, Handle};
use hrr_calls::shapes::*;

use super::rec;
use crate::api::cuda::calls::real_fn;
use crate::api::cuda::calls::Export;
use crate::api::cuda::loader::driver_fn;
use crate::api::cuda::param_info;
use crate::api::cuda::state::{self, KernelInfo};
use crate::api::cuda::API;
use crate::hook::args::{cstr, file_at, out_addr};
use crate::recorder::{self};

/// Images this large or larger are stored (hashed and queued) beside the driver's load of
/// them ([`load_image`], `hook::common::alongside`): on a waiting thread of the hashing pool.
const STORE_BESIDE_MIN: usize = 16 << 10;

/// Make a module or library load (`call`) of the image at `image`, stored as a code object,
/// and record it. An image is stored while the driver loads it, on a thread of the pool of
/// hashing threads (or, where none runs, a thread of its own): the runtime
/// loads a program's module at its first kernel launch, often inside the program's own timed
/// region (cudaTensorCoreGemm's: hashing its image there cost the kernel's figure 0.4 ms
/// before; starting a thread for it, 48 µs of the 70 µs capture still added there, H100), and
/// the driver takes as long to load it as capture to hash it.
unsafe fn load_image(
    h: Export,
    m: *mut Handle,
    image: *const c_void,
    library: bool,
    call: impl Call,
) -> CUresult {
    let img = if recorder::active() {
        crate::api::cuda::image::identify(image as *const u8)
    } else {
        None
    };
    let Some(img) = img else {
        return load(h, m, Stored::default(), library, call);
    };
    // SAFETY: `identify` measured the image there; the driver only reads it meanwhile.
    let bytes = std::slice::from_raw_parts(img.ptr, img.len);
    let store = move || Some(Stored::new(bytes, img.kind));
    if bytes.len() < STORE_BESIDE_MIN {
        return load(h, m, Stored::new(bytes, img.kind), library, call);
    }
    let (stored, r) = crate::hook::common::alongside(store, call);
    record_load(h, m, stored.unwrap_or_default(), library, r)
}

/// An image stored as a code object, with the parameter layouts its code declares.
#[derive(Default)]
struct Stored {
    code: Option<ObjectId>,
    layouts: param_info::Layouts,
}

impl Stored {
    fn new(bytes: &[u8], kind: CodeKind) -> Stored {
        let code = recorder::put_code(&API, bytes, kind);
        let layouts = match code {
            Some(_) if crate::hook::profile::layouts_from_code() => {
                param_info::layouts(bytes, kind)
            }
            _ => Default::default(),
        };
        Stored { code, layouts }
    }
}

/// Store the image file at `fname` as a code object (with its declared layouts).
unsafe fn store_image_file(fname: *const c_char) -> Stored {
    if !recorder::active() {
        return Stored::default();
    }
    let Some(mut bytes) = file_at(fname) else {
        return Stored::default();
    };
    let kind = match bytes.get(..4) {
        Some([0x7f, b'E', b'L', b'F']) => CodeKind::Cubin,
        Some(m) if m == crate::api::cuda::image::FATBIN_MAGIC.to_le_bytes() => CodeKind::Fatbin,
        _ => {
            if bytes.last() != Some(&0) {
                bytes.push(0);
            }
            CodeKind::Ptx
        }
    };
    Stored::new(&bytes, kind)
}

/// Make a module or library load (`call`) of `code` (stored before it) and record that it
/// produced `*m`.
unsafe fn load(
    h: Export,
    m: *mut Handle,
    code: Stored,
    library: bool,
    call: impl Call,
) -> CUresult {
    record_load(h, m, code, library, call())
}

/// Record that a module or library load of `stored` returned `r` and produced `*m`.
unsafe fn record_load(
    h: Export,
    m: *mut Handle,
    stored: Stored,
    library: bool,
    r: CUresult,
) -> CUresult {
    let handle = out_addr(m);
    let Stored { code, layouts } = stored;
    let remember = move || {
        state::with(|st| {
            st.modules.insert(handle, code);
            if let (Some(id), false) = (code, layouts.is_empty()) {
                st.code_layouts.entry(id).or_insert_with(|| layouts.into());
            }
        })
    };
    if library {
        rec(h, r, |_| {
            remember();
            LibraryLoad {
                library: handle,
                code,
            }
        });
    } else {
        rec(h, r, |_| {
            remember();
            ModuleLoad {
                module: handle,
                code,
            }
        });
    }
    r
}

pub unsafe fn module_load(h: Export, a: args::ModuleLoad, call: impl Call) -> CUresult {
    let args::ModuleLoad { m, fname } = a;
    load(h, m, store_image_file(fname), false, call)
}

pub unsafe fn module_load_data(
    h: Export,
    m: *mut Handle,
    image: *const c_void,
    call: impl Call,
) -> CUresult {
    load_image(h, m, image, false, call)
}

pub unsafe fn module_load_data_ex(
    h: Export,
    a: args::ModuleLoadDataEx,
    call: impl Call,
) -> CUresult {
    let args::ModuleLoadDataEx { m, image, .. } = a;
    module_load_data(h, m, image, call)
}

pub unsafe fn library_load_data(h: Export, a: args::LibraryLoadData, call: impl Call) -> CUresult {
    let args::LibraryLoadData { lib, code, .. } = a;
    load_image(h, lib, code, true, call)
}

pub unsafe fn library_load_from_file(
    h: Export,
    a: args::LibraryLoadFromFile,
    call: impl Call,
) -> CUresult {
    let args::LibraryLoadFromFile { lib, fname, .. } = a;
    load(h, lib, store_image_file(fname), true, call)
}

/// Remember what a looked-up function or kernel handle is.
fn define_kernel(handle: u64, owner: u64, name: &str, is_library_kernel: bool) {
    state::with(|st| {
        let code = st.code_of(owner);
        st.define_kernel(
            handle,
            KernelInfo {
                name: name.into(),
                code,
                is_library_kernel,
                owner,
            },
        );
    });
}

/// A look-up by name that made handle `*out` in `owner` (`library`: a `CUkernel` of a
/// library): recorded as `shape(handle, owner, name)` and, when it succeeded, remembered.
unsafe fn looked_up<S: hrr_calls::Shape>(
    h: Export,
    r: CUresult,
    (out, owner, name): (*mut Handle, Handle, *const c_char),
    library: bool,
    shape: impl FnOnce(u64, u64, String) -> S,
) {
    rec(h, r, |_| {
        let (handle, name) = (out_addr(out), cstr(name));
        if r == 0 {
            define_kernel(handle, owner as u64, &name, library);
        }
        shape(handle, owner as u64, name)
    });
}

pub unsafe fn module_get_function(h: Export, a: args::ModuleGetFunction, r: CUresult) {
    let args::ModuleGetFunction { f, m, name } = a;
    looked_up(h, r, (f, m, name), false, |function, module, name| {
        ModuleGetFunction {
            function,
            module,
            name,
        }
    });
}

pub unsafe fn library_get_kernel(h: Export, a: args::LibraryGetKernel, r: CUresult) {
    let args::LibraryGetKernel { k, lib, name } = a;
    looked_up(h, r, (k, lib, name), true, |kernel, library, name| {
        LibraryGetKernel {
            kernel,
            library,
            name,
        }
    });
}

pub unsafe fn library_get_module(h: Export, a: args::LibraryGetModule, r: CUresult) {
    let args::LibraryGetModule { m, lib } = a;
    rec(h, r, |_| {
        let module = out_addr(m);
        state::with(|st| {
            let code = st.code_of(lib as u64);
            st.modules.insert(module, code);
            let modules = st.library_modules.entry(lib as u64).or_default();
            if !modules.contains(&module) {
                modules.push(module);
            }
        });
        LibraryGetModule {
            module,
            library: lib as u64,
        }
    });
}

pub unsafe fn kernel_get_function(h: Export, a: args::KernelGetFunction, r: CUresult) {
    let args::KernelGetFunction { f, k } = a;
    rec(h, r, |_| {
        let function = out_addr(f);
        state::with(|st| {
            if let Some(info) = st.kernels.get(&(k as u64)).cloned() {
                st.define_kernel(
                    function,
                    KernelInfo {
                        is_library_kernel: false,
                        ..info
                    },
                );
            }
        });
        KernelGetFunction {
            function,
            kernel: k as u64,
        }
    });
}

/// Name of function or kernel `f`, asked of the driver's `get_name` (`cuFuncGetName`,
/// `cuKernelGetName`).
unsafe fn driver_name(get_name: &CStr, f: Handle) -> Option<String> {
    type GetName = unsafe extern "C" fn(*mut *const c_char, Handle) -> CUresult;
    let g = driver_fn::<GetName>(get_name)?;
    let mut name = std::ptr::null();
    (g(&mut name, f) == 0 && !name.is_null()).then(|| cstr(name))
}

/// Name of a function, asked of the driver.
pub(super) unsafe fn driver_func_name(f: Handle) -> Option<String> {
    driver_name(c"cuFuncGetName", f)
}

/// Name of a library kernel, asked of the driver.
unsafe fn driver_kernel_name(k: Handle) -> Option<String> {
    driver_name(c"cuKernelGetName", k)
}

pub unsafe fn func_get_module(h: Export, a: args::FuncGetModule, r: CUresult) {
    let args::FuncGetModule { m, f } = a;
    rec(h, r, |_| FuncGetModule {
        module: out_addr(m),
        function: f as u64,
        name: driver_func_name(f).unwrap_or_default(),
    });
}

/// A launched function capture never saw looked up: a library that reached the driver through
/// a private export table (cuFFT does), or a handle obtained before capture began. Its name
/// comes from the driver; when its module is one capture recorded, a `cuFuncGetModule` event
/// (the program made no such call) lets replay look it up by name there. Else replay cannot
/// bind it, and says so at the launch.
pub(super) unsafe fn bind_unseen_function(f: Handle) {
    // Capture's state forgets a function only when its module or library is unloaded (a
    // handle redefined is still known), so a thread remembers the last ones it found known,
    // with the forgetting generation they were found in, without asking the state again.
    thread_local! {
        static KNOWN: [std::cell::Cell<u64>; KNOWN_SLOTS] =
            const { [const { std::cell::Cell::new(0) }; KNOWN_SLOTS] };
        static KNOWN_GENERATION: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    }
    let key = f as u64;
    let slot = (key >> 4) as usize % KNOWN_SLOTS;
    let generation = state::forgotten_generation();
    if KNOWN_GENERATION.with(|g| g.replace(generation)) != generation {
        KNOWN.with(|k| k.iter().for_each(|c| c.set(0)));
    }
    if key != 0 && KNOWN.with(|k| k[slot].get()) == key {
        return;
    }
    let remember = || KNOWN.with(|k| k[slot].set(key));
    if state::with(|st| st.kernels.contains_key(&key)) {
        remember();
        return;
    }
    let name = driver_func_name(f).unwrap_or_default();
    type GetModule = unsafe extern "C" fn(*mut Handle, Handle) -> CUresult;
    let mut module: Handle = std::ptr::null_mut();
    let r = real_fn::<GetModule>(Export::cuFuncGetModule).map_or(-1, |g| g(&mut module, f));
    let module = module as u64;
    if r == 0 && state::with(|st| st.modules.contains_key(&module)) {
        define_kernel(f as u64, module, &name, false);
        rec(Export::cuFuncGetModule, r, |_| FuncGetModule {
            module,
            function: f as u64,
            name,
        });
    } else {
        state::with(|st| {
            st.define_kernel(
                f as u64,
                KernelInfo {
                    name,
                    code: None,
                    is_library_kernel: false,
                    owner: 0,
                },
            )
        });
    }
    remember();
}

/// Functions a thread remembers as known ([`bind_unseen_function`]).
const KNOWN_SLOTS: usize = 64;

/// `cuModuleEnumerateFunctions` and `cuLibraryEnumerateKernels` (one row each, same
/// arguments): an enumeration of `owner`'s functions (or, for a library, its kernels) into `out`.
pub unsafe fn enumerate_functions(
    h: Export,
    out: *mut Handle,
    n: c_uint,
    owner: Handle,
    call: impl Call,
) -> CUresult {
    let library = h == Export::cuLibraryEnumerateKernels;
    let r = call();
    rec(h, r, |_| {
        let handles: Vec<u64> = if r == 0 && !out.is_null() {
            (0..n as usize).map(|i| *out.add(i) as u64).collect()
        } else {
            Vec::new()
        };
        let names: Vec<String> = handles
            .iter()
            .map(|&k| {
                let name = if library {
                    driver_kernel_name(k as Handle)
                } else {
                    driver_func_name(k as Handle)
                };
                let name = name.unwrap_or_default();
                define_kernel(k, owner as u64, &name, library);
                name
            })
            .collect();
        Enumerated {
            owner: owner as u64,
            handles,
            names: names.join("\n"),
        }
    });
    r
}

/// `cuModuleUnload` / `cuLibraryUnload` (one row each, same shape): once it succeeded, what
/// capture knew of the module or library and of its functions and kernels is forgotten
/// ([`state::State::forget_owner`]). The row is ordered, as the loads are: no load on another
/// thread comes between the unload and the forgetting (a failed unload forgets nothing).
pub unsafe fn unload(h: Export, owner: Handle, call: impl Call) -> CUresult {
    let r = call();
    let owner = owner as u64;
    if r == 0 {
        state::with(|st| st.forget_owner(owner));
    }
    if h == Export::cuLibraryUnload {
        rec(h, r, |_| Library { library: owner });
    } else {
        rec(h, r, |_| Module { module: owner });
    }
    r
}

/// `cuFuncSetAttribute`: a function capture never saw looked up is bound first (cuFFT sets
/// attributes of the functions it got through its private path before launching them).
pub unsafe fn func_set_attribute(h: Export, a: args::FuncSetAttribute, r: CUresult) {
    let args::FuncSetAttribute { f, attrib, value } = a;
    bind_unseen_function(f);
    rec(h, r, |_| FuncSetAttribute {
        function: f as u64,
        attrib,
        value,
    });
}

/// `cuFuncSetCacheConfig`, binding the function first like [`func_set_attribute`].
pub unsafe fn func_set_cache_config(h: Export, a: args::FuncSetCacheConfig, r: CUresult) {
    let args::FuncSetCacheConfig { f, config } = a;
    bind_unseen_function(f);
    rec(h, r, |_| FuncSetCacheConfig {
        function: f as u64,
        config,
    });
}
