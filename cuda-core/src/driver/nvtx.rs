//! The glue to an NVTX tool (feature `nvtx`): NVIDIA's tools-extension loader, written here
//! from the facts of NVTX 3's headers (`nvToolsExt.h`, `nvtxDetail/nvtxTypes.h`,
//! `nvtxDetail/nvtxInit.h`), so that the feature links and builds nothing.
//!
//! NVTX is a protocol between a program and a tool. The program keeps, per module of the API
//! (core, CUDA, ...), a table of function-pointer slots, all empty. On its first NVTX call it
//! reads `NVTX_INJECTION64_PATH`; where that names a library (Nsight Systems, Nsight Compute and
//! compute-sanitizer set it), it loads the library and calls its `InitializeInjectionNvtx2`
//! with a function that hands out two export tables: the callbacks table, whose
//! `GetModuleFunctionTable` gives the tool each module's slots to fill with its own functions,
//! and the version table. Each call then runs the function in its slot, or nothing where the
//! slot is empty: without a tool, or for calls the tool does not take. A tool whose
//! initialisation fails (returns 0) is unloaded and every slot emptied, as NVTX does.
//!
//! What is left out of NVTX's loader: the static injection (a tool linked into the executable
//! through the weak symbol `InitializeInjectionNvtx2_fnptr`) and Android's package folder.
//!
//! Above this file the `nvtx` module speaks `&str` and neutral handles; each call here looks at
//! its slot first and makes the message's C string only when a tool took the call.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Once, OnceLock};

use super::{ContextHandle, DeviceHandle, EventHandle, StreamHandle};

/// `NVTX_VERSION` of the headers this loader follows; tools read it in the version table and
/// in each attributes structure.
pub(crate) const NVTX_VERSION: u16 = 3;

/// The variable that names the tool (`NVTX_INJECTION64_PATH`; 64-bit processes only).
const INJECTION_PATH: &str = "NVTX_INJECTION64_PATH";

/// The tool's entry point.
const INITIALIZE: &[u8] = b"InitializeInjectionNvtx2\0";

/// `NvtxGetExportTableFunc_t`.
type GetExportTable = unsafe extern "C" fn(export_table_id: u32) -> *const c_void;
/// `NvtxInitializeInjectionNvtxFunc_t`.
type InitializeInjection = unsafe extern "C" fn(get_export_table: GetExportTable) -> c_int;

/// `NvtxExportTableID`.
const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;

/// `NvtxCallbackModule`, as each module's slots (a slot per callback id, `NVTX_CBID_*`, from
/// 0, which is never used, to the last: `NVTX_CBID_<module>_SIZE` slots).
const MODULE_CORE: u32 = 1;
const MODULE_CUDA: u32 = 2;
const MODULE_OPENCL: u32 = 3;
const MODULE_CUDART: u32 = 4;
const MODULE_CORE2: u32 = 5;
const MODULE_SYNC: u32 = 6;

/// `NvtxCallbackIdCore`.
mod core_id {
    pub(super) const MARK_EX: usize = 1;
    pub(super) const MARK_A: usize = 2;
    pub(super) const RANGE_START_EX: usize = 4;
    pub(super) const RANGE_START_A: usize = 5;
    pub(super) const RANGE_END: usize = 7;
    pub(super) const RANGE_PUSH_EX: usize = 8;
    pub(super) const RANGE_PUSH_A: usize = 9;
    pub(super) const RANGE_POP: usize = 11;
    pub(super) const NAME_CATEGORY_A: usize = 12;
    pub(super) const NAME_OS_THREAD_A: usize = 14;
    pub(super) const SIZE: usize = 16;
}

/// `NvtxCallbackIdCuda`.
mod cuda_id {
    pub(super) const NAME_CU_DEVICE_A: usize = 1;
    pub(super) const NAME_CU_CONTEXT_A: usize = 3;
    pub(super) const NAME_CU_STREAM_A: usize = 5;
    pub(super) const NAME_CU_EVENT_A: usize = 7;
    pub(super) const SIZE: usize = 9;
}

/// `NvtxCallbackIdCore2` (domains).
mod core2_id {
    pub(super) const DOMAIN_MARK_EX: usize = 1;
    pub(super) const DOMAIN_RANGE_START_EX: usize = 2;
    pub(super) const DOMAIN_RANGE_END: usize = 3;
    pub(super) const DOMAIN_RANGE_PUSH_EX: usize = 4;
    pub(super) const DOMAIN_RANGE_POP: usize = 5;
    pub(super) const DOMAIN_NAME_CATEGORY_A: usize = 8;
    pub(super) const DOMAIN_CREATE_A: usize = 12;
    pub(super) const SIZE: usize = 16;
}

/// The sizes of the modules this crate never calls, whose slots a tool fills all the same.
const OPENCL_SIZE: usize = 15;
const CUDART_SIZE: usize = 7;
const SYNC_SIZE: usize = 7;

/// A module's slots: each holds the tool's function for its callback id, or null.
type Slots<const N: usize> = [AtomicPtr<c_void>; N];

static CORE: Slots<{ core_id::SIZE }> = [const { AtomicPtr::new(null_mut()) }; core_id::SIZE];
static CUDA: Slots<{ cuda_id::SIZE }> = [const { AtomicPtr::new(null_mut()) }; cuda_id::SIZE];
static CORE2: Slots<{ core2_id::SIZE }> = [const { AtomicPtr::new(null_mut()) }; core2_id::SIZE];
static OPENCL: Slots<OPENCL_SIZE> = [const { AtomicPtr::new(null_mut()) }; OPENCL_SIZE];
static CUDART: Slots<CUDART_SIZE> = [const { AtomicPtr::new(null_mut()) }; CUDART_SIZE];
static SYNC: Slots<SYNC_SIZE> = [const { AtomicPtr::new(null_mut()) }; SYNC_SIZE];

/// Every module's slots, by module id.
fn module(id: u32) -> Option<&'static [AtomicPtr<c_void>]> {
    Some(match id {
        MODULE_CORE => &CORE,
        MODULE_CUDA => &CUDA,
        MODULE_OPENCL => &OPENCL,
        MODULE_CUDART => &CUDART,
        MODULE_CORE2 => &CORE2,
        MODULE_SYNC => &SYNC,
        _ => return None,
    })
}

/// A module's `NvtxFunctionTable` as the tool reads it: a pointer to each slot by callback id
/// (null at 0, which no callback has), then a null after the last.
struct FunctionTable(Box<[*mut AtomicPtr<c_void>]>);

// SAFETY: the pointers are to the statics above, which any thread may write (atomics); the
// table itself is never written after it is made.
unsafe impl Send for FunctionTable {}
// SAFETY: as above.
unsafe impl Sync for FunctionTable {}

/// The tables, made before the tool is called, by module id (index 0 unused).
static TABLES: OnceLock<Vec<FunctionTable>> = OnceLock::new();

fn tables() -> Vec<FunctionTable> {
    (0..=MODULE_SYNC)
        .map(|id| {
            let slots = module(id).unwrap_or(&[]);
            let table = slots
                .iter()
                .enumerate()
                .map(|(i, slot)| {
                    if i == 0 {
                        null_mut()
                    } else {
                        std::ptr::from_ref(slot).cast_mut()
                    }
                })
                .chain(std::iter::once(null_mut()))
                .collect();
            FunctionTable(table)
        })
        .collect()
}

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: unsafe extern "C" fn(
        module: u32,
        out_table: *mut *mut *mut AtomicPtr<c_void>,
        out_size: *mut c_uint,
    ) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "C" fn(version: u32),
}

static CALLBACKS: ExportTableCallbacks = ExportTableCallbacks {
    struct_size: std::mem::size_of::<ExportTableCallbacks>(),
    get_module_function_table,
};

static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
    struct_size: std::mem::size_of::<ExportTableVersionInfo>(),
    version: NVTX_VERSION as u32,
    reserved0: 0,
    set_injection_nvtx_version,
};

/// `nvtxGetExportTable`: the tables a tool asks for by id, null for others.
unsafe extern "C" fn get_export_table(export_table_id: u32) -> *const c_void {
    match export_table_id {
        ETID_CALLBACKS => std::ptr::from_ref(&CALLBACKS).cast(),
        ETID_VERSIONINFO => std::ptr::from_ref(&VERSION_INFO).cast(),
        _ => std::ptr::null(),
    }
}

/// `GetModuleFunctionTable`: a module's table and its number of callback ids; 0 for a module
/// this loader does not know.
unsafe extern "C" fn get_module_function_table(
    module: u32,
    out_table: *mut *mut *mut AtomicPtr<c_void>,
    out_size: *mut c_uint,
) -> c_int {
    let Some(table) = TABLES.get().and_then(|tables| tables.get(module as usize)) else {
        return 0;
    };
    if table.0.len() < 2 {
        return 0;
    }
    if !out_size.is_null() {
        // SAFETY: the tool passes a place for one `unsigned int`. The table's last entry is
        // the null after the slots.
        unsafe { *out_size = (table.0.len() - 1) as c_uint };
    }
    if !out_table.is_null() {
        // SAFETY: the tool passes a place for one table pointer; the table lives for good.
        unsafe { *out_table = table.0.as_ptr().cast_mut() };
    }
    1
}

/// `SetInjectionNvtxVersion`: NVTX ignores the tool's version, and so does this loader.
unsafe extern "C" fn set_injection_nvtx_version(_version: u32) {}

static ATTACH: Once = Once::new();

/// Loads the tool `NVTX_INJECTION64_PATH` names, once per process, and lets it fill the slots.
/// Without the variable, every slot stays empty.
fn attach() {
    let Some(path) = std::env::var_os(INJECTION_PATH).filter(|p| !p.is_empty()) else {
        return;
    };
    // SAFETY: the library is the profiling tool the process's environment names (as a
    // profiler sets it); loading it runs its initialisers, as NVTX's own loader would.
    let library = match unsafe { libloading::Library::new(&path) } {
        Ok(library) => library,
        Err(e) => {
            log::warn!("NVTX: the tool {INJECTION_PATH} names does not load: {e}");
            return;
        }
    };
    // SAFETY: NVTX's tools export `InitializeInjectionNvtx2` with this signature.
    let initialize = match unsafe { library.get::<InitializeInjection>(INITIALIZE) } {
        Ok(symbol) => *symbol,
        Err(e) => {
            log::warn!("NVTX: the tool {path:?} has no InitializeInjectionNvtx2: {e}");
            return;
        }
    };
    TABLES.get_or_init(tables);
    // SAFETY: the tool's entry point, given this process's export tables (statics); it fills
    // slots through the tables, which point at statics.
    let attached = unsafe { initialize(get_export_table) } != 0;
    if attached {
        // The slots point into the library for the rest of the process.
        std::mem::forget(library);
        return;
    }
    log::warn!("NVTX: the tool {path:?} did not start (its initialisation returned 0)");
    for id in MODULE_CORE..=MODULE_SYNC {
        for slot in module(id).unwrap_or(&[]) {
            slot.store(null_mut(), Ordering::Relaxed);
        }
    }
    // Every slot is empty before the library is unloaded (dropped here).
}

/// The tool's function in `slots[id]`, if it took that call: the process's first call attaches
/// the tool first.
///
/// # Safety
///
/// `F` is the function-pointer type NVTX's header gives the slot's callback.
#[inline]
unsafe fn tool<F: Copy>(slots: &[AtomicPtr<c_void>], id: usize) -> Option<F> {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    ATTACH.call_once(attach);
    let function = slots.get(id)?.load(Ordering::Relaxed);
    // SAFETY: a non-null slot holds the tool's function of the slot's type, `F` (the caller's).
    (!function.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&function) })
}

/// `text` as a C string for `f`: on the stack when short, NUL bytes (which a C string cannot
/// hold) left out.
fn with_c_text<R>(text: &str, f: impl FnOnce(&CStr) -> R) -> R {
    const STACK: usize = 256;
    let bytes = text.as_bytes();
    if bytes.len() < STACK && !bytes.contains(&0) {
        let mut buffer = [0u8; STACK];
        buffer[..bytes.len()].copy_from_slice(bytes);
        if let Ok(c) = CStr::from_bytes_until_nul(&buffer) {
            return f(c);
        }
    }
    let mut owned: Vec<u8> = bytes.iter().copied().filter(|&b| b != 0).collect();
    owned.push(0);
    f(CStr::from_bytes_until_nul(&owned).unwrap_or_default())
}

/// `nvtxEventAttributes_t` (version 3, `nvtxEventAttributes_v2`): what a range or mark shows,
/// with an ASCII message (NVTX's `A` strings are read as UTF-8 by Nsight) and no payload.
#[repr(C)]
pub(crate) struct EventAttributes {
    version: u16,
    size: u16,
    category: u32,
    color_type: i32,
    color: u32,
    payload_type: i32,
    reserved0: i32,
    /// The payload union (`ullValue`, `llValue`, `dValue`, ...): 8 bytes, unused.
    payload: u64,
    message_type: i32,
    /// The message union (`ascii`, `unicode`, `registered`): a pointer.
    message: *const c_char,
}

/// `NVTX_COLOR_UNKNOWN`, `NVTX_COLOR_ARGB`.
const COLOR_UNKNOWN: i32 = 0;
const COLOR_ARGB: i32 = 1;
/// `NVTX_MESSAGE_TYPE_ASCII`.
const MESSAGE_TYPE_ASCII: i32 = 1;
/// `NVTX_PAYLOAD_UNKNOWN`.
const PAYLOAD_UNKNOWN: i32 = 0;

/// What a range or mark shows besides its message: an ARGB color (`None`: the tool's own) and
/// a category (0: none).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Look {
    pub(crate) color: Option<u32>,
    pub(crate) category: u32,
}

/// Runs `f` with the attributes of `message` and `look`, the message as a C string.
fn with_attributes<R>(message: &str, look: Look, f: impl FnOnce(&EventAttributes) -> R) -> R {
    with_c_text(message, |text| {
        let attributes = EventAttributes {
            version: NVTX_VERSION,
            size: std::mem::size_of::<EventAttributes>() as u16,
            category: look.category,
            color_type: if look.color.is_some() {
                COLOR_ARGB
            } else {
                COLOR_UNKNOWN
            },
            color: look.color.unwrap_or(0),
            payload_type: PAYLOAD_UNKNOWN,
            reserved0: 0,
            payload: 0,
            message_type: MESSAGE_TYPE_ASCII,
            message: text.as_ptr(),
        };
        f(&attributes)
    })
}

/// An `nvtxDomainHandle_t`: null where no tool took domains (NVTX's own answer then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DomainHandle(pub(crate) *mut c_void);

// SAFETY: a domain handle is an identifier the tool gave, for any thread to pass back.
unsafe impl Send for DomainHandle {}
// SAFETY: as above.
unsafe impl Sync for DomainHandle {}

type TextFn = unsafe extern "C" fn(*const c_char);
type AttributesFn = unsafe extern "C" fn(*const EventAttributes);

/// `nvtxMarkA`, or `nvtxMarkEx` with a look; `nvtxDomainMarkEx` in a domain.
pub(crate) fn mark(domain: Option<DomainHandle>, message: &str, look: Option<Look>) {
    match (domain, look) {
        (Some(domain), look) => {
            type F = unsafe extern "C" fn(*mut c_void, *const EventAttributes);
            // SAFETY: the slot's type (`nvtxDomainMarkEx`).
            if let Some(f) = unsafe { tool::<F>(&CORE2, core2_id::DOMAIN_MARK_EX) } {
                with_attributes(message, look.unwrap_or_default(), |a| {
                    // SAFETY: the domain the tool gave, and attributes alive for the call.
                    unsafe { f(domain.0, a) }
                });
            }
        }
        (None, Some(look)) => {
            // SAFETY: the slot's type (`nvtxMarkEx`).
            if let Some(f) = unsafe { tool::<AttributesFn>(&CORE, core_id::MARK_EX) } {
                // SAFETY: attributes alive for the call.
                with_attributes(message, look, |a| unsafe { f(a) });
            }
        }
        (None, None) => {
            // SAFETY: the slot's type (`nvtxMarkA`).
            if let Some(f) = unsafe { tool::<TextFn>(&CORE, core_id::MARK_A) } {
                // SAFETY: a C string alive for the call.
                with_c_text(message, |text| unsafe { f(text.as_ptr()) });
            }
        }
    }
}

/// `nvtxRangePushA`, `nvtxRangePushEx` or `nvtxDomainRangePushEx`: the new range's level, or
/// a negative value (none where no tool took the call).
pub(crate) fn range_push(domain: Option<DomainHandle>, message: &str, look: Option<Look>) -> i32 {
    const NO_TOOL: i32 = -2; // NVTX_NO_PUSH_POP_TRACKING
    match (domain, look) {
        (Some(domain), look) => {
            type F = unsafe extern "C" fn(*mut c_void, *const EventAttributes) -> c_int;
            // SAFETY: the slot's type (`nvtxDomainRangePushEx`).
            match unsafe { tool::<F>(&CORE2, core2_id::DOMAIN_RANGE_PUSH_EX) } {
                Some(f) => with_attributes(message, look.unwrap_or_default(), |a| {
                    // SAFETY: the domain the tool gave, and attributes alive for the call.
                    unsafe { f(domain.0, a) }
                }),
                None => NO_TOOL,
            }
        }
        (None, Some(look)) => {
            type F = unsafe extern "C" fn(*const EventAttributes) -> c_int;
            // SAFETY: the slot's type (`nvtxRangePushEx`).
            match unsafe { tool::<F>(&CORE, core_id::RANGE_PUSH_EX) } {
                // SAFETY: attributes alive for the call.
                Some(f) => with_attributes(message, look, |a| unsafe { f(a) }),
                None => NO_TOOL,
            }
        }
        (None, None) => {
            type F = unsafe extern "C" fn(*const c_char) -> c_int;
            // SAFETY: the slot's type (`nvtxRangePushA`).
            match unsafe { tool::<F>(&CORE, core_id::RANGE_PUSH_A) } {
                // SAFETY: a C string alive for the call.
                Some(f) => with_c_text(message, |text| unsafe { f(text.as_ptr()) }),
                None => NO_TOOL,
            }
        }
    }
}

/// `nvtxRangePop` or `nvtxDomainRangePop`.
pub(crate) fn range_pop(domain: Option<DomainHandle>) {
    match domain {
        Some(domain) => {
            type F = unsafe extern "C" fn(*mut c_void) -> c_int;
            // SAFETY: the slot's type (`nvtxDomainRangePop`).
            if let Some(f) = unsafe { tool::<F>(&CORE2, core2_id::DOMAIN_RANGE_POP) } {
                // SAFETY: the domain the tool gave.
                unsafe { f(domain.0) };
            }
        }
        None => {
            type F = unsafe extern "C" fn() -> c_int;
            // SAFETY: the slot's type (`nvtxRangePop`).
            if let Some(f) = unsafe { tool::<F>(&CORE, core_id::RANGE_POP) } {
                // SAFETY: no arguments.
                unsafe { f() };
            }
        }
    }
}

/// `nvtxRangeStartA`, `nvtxRangeStartEx` or `nvtxDomainRangeStartEx`: the range's id (0 where
/// no tool took the call, as NVTX answers).
pub(crate) fn range_start(domain: Option<DomainHandle>, message: &str, look: Option<Look>) -> u64 {
    match (domain, look) {
        (Some(domain), look) => {
            type F = unsafe extern "C" fn(*mut c_void, *const EventAttributes) -> u64;
            // SAFETY: the slot's type (`nvtxDomainRangeStartEx`).
            match unsafe { tool::<F>(&CORE2, core2_id::DOMAIN_RANGE_START_EX) } {
                Some(f) => with_attributes(message, look.unwrap_or_default(), |a| {
                    // SAFETY: the domain the tool gave, and attributes alive for the call.
                    unsafe { f(domain.0, a) }
                }),
                None => 0,
            }
        }
        (None, Some(look)) => {
            type F = unsafe extern "C" fn(*const EventAttributes) -> u64;
            // SAFETY: the slot's type (`nvtxRangeStartEx`).
            match unsafe { tool::<F>(&CORE, core_id::RANGE_START_EX) } {
                // SAFETY: attributes alive for the call.
                Some(f) => with_attributes(message, look, |a| unsafe { f(a) }),
                None => 0,
            }
        }
        (None, None) => {
            type F = unsafe extern "C" fn(*const c_char) -> u64;
            // SAFETY: the slot's type (`nvtxRangeStartA`).
            match unsafe { tool::<F>(&CORE, core_id::RANGE_START_A) } {
                // SAFETY: a C string alive for the call.
                Some(f) => with_c_text(message, |text| unsafe { f(text.as_ptr()) }),
                None => 0,
            }
        }
    }
}

/// `nvtxRangeEnd` or `nvtxDomainRangeEnd`.
pub(crate) fn range_end(domain: Option<DomainHandle>, id: u64) {
    match domain {
        Some(domain) => {
            type F = unsafe extern "C" fn(*mut c_void, u64);
            // SAFETY: the slot's type (`nvtxDomainRangeEnd`).
            if let Some(f) = unsafe { tool::<F>(&CORE2, core2_id::DOMAIN_RANGE_END) } {
                // SAFETY: the domain the tool gave, and a plain id.
                unsafe { f(domain.0, id) };
            }
        }
        None => {
            type F = unsafe extern "C" fn(u64);
            // SAFETY: the slot's type (`nvtxRangeEnd`).
            if let Some(f) = unsafe { tool::<F>(&CORE, core_id::RANGE_END) } {
                // SAFETY: a plain id.
                unsafe { f(id) };
            }
        }
    }
}

/// `nvtxNameCategoryA`, or `nvtxDomainNameCategoryA` in a domain.
pub(crate) fn name_category(domain: Option<DomainHandle>, category: u32, name: &str) {
    match domain {
        Some(domain) => {
            type F = unsafe extern "C" fn(*mut c_void, u32, *const c_char);
            // SAFETY: the slot's type (`nvtxDomainNameCategoryA`).
            if let Some(f) = unsafe { tool::<F>(&CORE2, core2_id::DOMAIN_NAME_CATEGORY_A) } {
                // SAFETY: the domain the tool gave, and a C string alive for the call.
                with_c_text(name, |text| unsafe { f(domain.0, category, text.as_ptr()) });
            }
        }
        None => {
            type F = unsafe extern "C" fn(u32, *const c_char);
            // SAFETY: the slot's type (`nvtxNameCategoryA`).
            if let Some(f) = unsafe { tool::<F>(&CORE, core_id::NAME_CATEGORY_A) } {
                // SAFETY: a C string alive for the call.
                with_c_text(name, |text| unsafe { f(category, text.as_ptr()) });
            }
        }
    }
}

/// `nvtxDomainCreateA`: null where no tool took domains.
pub(crate) fn domain_create(name: &str) -> DomainHandle {
    type F = unsafe extern "C" fn(*const c_char) -> *mut c_void;
    // SAFETY: the slot's type (`nvtxDomainCreateA`).
    match unsafe { tool::<F>(&CORE2, core2_id::DOMAIN_CREATE_A) } {
        // SAFETY: a C string alive for the call.
        Some(f) => DomainHandle(with_c_text(name, |text| unsafe { f(text.as_ptr()) })),
        None => DomainHandle(null_mut()),
    }
}

/// `nvtxNameOsThreadA`: `thread` is the OS's id of a thread (Linux's `gettid`).
pub(crate) fn name_os_thread(thread: u32, name: &str) {
    type F = unsafe extern "C" fn(u32, *const c_char);
    // SAFETY: the slot's type (`nvtxNameOsThreadA`).
    if let Some(f) = unsafe { tool::<F>(&CORE, core_id::NAME_OS_THREAD_A) } {
        // SAFETY: a C string alive for the call.
        with_c_text(name, |text| unsafe { f(thread, text.as_ptr()) });
    }
}

/// `nvtxNameCuDeviceA` (a `CUdevice` is an `int`).
pub(crate) fn name_cu_device(device: DeviceHandle, name: &str) {
    type F = unsafe extern "C" fn(c_int, *const c_char);
    // SAFETY: the slot's type (`nvtxNameCuDeviceA`).
    if let Some(f) = unsafe { tool::<F>(&CUDA, cuda_id::NAME_CU_DEVICE_A) } {
        // SAFETY: a C string alive for the call.
        with_c_text(name, |text| unsafe { f(device, text.as_ptr()) });
    }
}

/// A `nvtxNameCu*A` call on a handle (`CUcontext`, `CUstream`, `CUevent`: pointers).
fn name_cu_handle(id: usize, handle: *mut c_void, name: &str) {
    type F = unsafe extern "C" fn(*mut c_void, *const c_char);
    // SAFETY: the slot's type, for each of the three ids the callers pass.
    if let Some(f) = unsafe { tool::<F>(&CUDA, id) } {
        // SAFETY: the handle is only named (the tool keeps it as a key), and the C string is
        // alive for the call.
        with_c_text(name, |text| unsafe { f(handle, text.as_ptr()) });
    }
}

/// `nvtxNameCuContextA`.
pub(crate) fn name_cu_context(context: ContextHandle, name: &str) {
    name_cu_handle(cuda_id::NAME_CU_CONTEXT_A, context.0, name);
}

/// `nvtxNameCuStreamA`.
pub(crate) fn name_cu_stream(stream: StreamHandle, name: &str) {
    name_cu_handle(cuda_id::NAME_CU_STREAM_A, stream.0, name);
}

/// `nvtxNameCuEventA`.
pub(crate) fn name_cu_event(event: EventHandle, name: &str) {
    name_cu_handle(cuda_id::NAME_CU_EVENT_A, event.0, name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    /// `nvtxEventAttributes_v2`'s layout on 64-bit Linux, as the header's fields give it: a
    /// tool reads each field at its C offset, and `size` is what it checks first.
    #[test]
    fn event_attributes_have_the_header_layout() {
        assert_eq!(size_of::<EventAttributes>(), 48);
        assert_eq!(offset_of!(EventAttributes, size), 2);
        assert_eq!(offset_of!(EventAttributes, category), 4);
        assert_eq!(offset_of!(EventAttributes, color_type), 8);
        assert_eq!(offset_of!(EventAttributes, color), 12);
        assert_eq!(offset_of!(EventAttributes, payload_type), 16);
        assert_eq!(offset_of!(EventAttributes, payload), 24);
        assert_eq!(offset_of!(EventAttributes, message_type), 32);
        assert_eq!(offset_of!(EventAttributes, message), 40);
        assert_eq!(size_of::<ExportTableCallbacks>(), 16);
        assert_eq!(size_of::<ExportTableVersionInfo>(), 24);
    }

    /// Each module's table: null at 0, a pointer to each slot after, a null after the last;
    /// the size the tool is told is its number of callback ids.
    #[test]
    fn tables_point_at_each_slot() {
        let tables = TABLES.get_or_init(tables);
        for (id, size) in [
            (MODULE_CORE, 16),
            (MODULE_CUDA, 9),
            (MODULE_OPENCL, 15),
            (MODULE_CUDART, 7),
            (MODULE_CORE2, 16),
            (MODULE_SYNC, 7),
        ] {
            let mut table = null_mut();
            let mut n = 0;
            // SAFETY: places for the two answers.
            let found = unsafe { get_module_function_table(id, &mut table, &mut n) };
            assert_eq!(found, 1);
            assert_eq!(n, size, "module {id}");
            assert_eq!(table.cast_const(), tables[id as usize].0.as_ptr());
            let slots = module(id).unwrap();
            // SAFETY: the table has `n + 1` entries.
            let entries = unsafe { std::slice::from_raw_parts(table, n as usize + 1) };
            assert!(entries[0].is_null() && entries[n as usize].is_null());
            for i in 1..n as usize {
                assert_eq!(entries[i].cast_const(), std::ptr::from_ref(&slots[i]));
            }
        }
        for unknown in [0, 7, 0x7fff_ffff] {
            // SAFETY: the answers may be null.
            let found = unsafe { get_module_function_table(unknown, null_mut(), null_mut()) };
            assert_eq!(found, 0);
        }
        // SAFETY: the getter takes any id.
        unsafe {
            assert_eq!(get_export_table(1).cast(), std::ptr::from_ref(&CALLBACKS));
            assert_eq!(
                get_export_table(3).cast(),
                std::ptr::from_ref(&VERSION_INFO)
            );
            assert!(get_export_table(2).is_null());
        }
    }

    #[test]
    fn text_loses_only_its_nul_bytes() {
        let read = |text: &str| with_c_text(text, |c| c.to_bytes().to_vec());
        assert_eq!(read("range"), b"range");
        assert_eq!(read(""), b"");
        assert_eq!(read("a\0b\0"), b"ab");
        let long = "x".repeat(300);
        assert_eq!(read(&long), long.as_bytes());
        let edge = "y".repeat(255);
        assert_eq!(read(&edge), edge.as_bytes());
        let edge = "z".repeat(256);
        assert_eq!(read(&edge), edge.as_bytes());
    }
}
