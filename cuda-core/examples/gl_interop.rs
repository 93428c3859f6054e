//! OpenGL and CUDA sharing a buffer object and a texture, with no copy between them, each
//! step checked against the CPU.
//!
//! A headless OpenGL 4.3 core context comes from EGL (the EGL device platform, no window
//! system, no surface). Then:
//!
//! - a buffer object of 2^20 `u32` that OpenGL filled is registered with CUDA
//!   ([`GlBuffer`]) and mapped on a stream as a `Buffer`; CUDA reads what OpenGL wrote, a
//!   kernel updates it in place, and once the mapping is dropped (which unmaps it) OpenGL reads
//!   the kernel's result back with `glGetBufferSubData`;
//! - a 256x128 `GL_R32UI` texture that OpenGL filled is registered ([`GlImage`]) and mapped as
//!   a CUDA array; CUDA reads OpenGL's texels, writes new ones, and after the unmap OpenGL reads
//!   CUDA's texels with `glGetTexImage`.
//!
//! ```text
//! cargo run -p cuda-core --release --example gl_interop
//! ```
//!
//! It needs NVIDIA's EGL driver (`libEGL.so.1`, through glvnd) for the same GPU as the CUDA
//! device it uses: the EGL device that reports CUDA device 0 (`EGL_NV_device_cuda`) is tried
//! first, and CUDA uses the device the chosen EGL device reports (0 where it reports none).
//! Where EGL cannot be loaded or no OpenGL context on an NVIDIA GPU can be made, it prints
//! `not run: <why>` and exits successfully, unless `CUDA_CORE_TEST_REQUIRE` (words
//! separated by commas) names `gl`: then that is a failure.
//!
//! EGL and OpenGL are loaded at run time with `libloading`; the few functions and constants
//! used are declared here, as the Khronos headers give them.

mod common;

use std::ffi::{c_char, c_void, CStr};
use std::process::ExitCode;
use std::ptr::{null, null_mut};

use cuda_core::interop::{GlBuffer, GlImage, GlRegisterFlags};
use cuda_core::texture::ArrayFormat;
use cuda_core::{launch, CodeType, Device, LaunchConfig, Program, ProgramOptions, StreamOptions};
use libloading::Library;

/// Elements of the shared buffer object.
const N: usize = 1 << 20;
/// The shared texture's width and height, in texels.
const WIDTH: usize = 256;
const HEIGHT: usize = 128;

/// The kernel CUDA runs on the mapped buffer object (unsigned arithmetic wraps).
const KERNEL: &str = r#"
extern "C" __global__ void scale_add(unsigned* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 7u + 11u;
}
"#;

// ----- EGL (EGL/egl.h, EGL/eglext.h) ---------------------------------------------------------

type EglDisplay = *mut c_void;
type EglConfig = *mut c_void;
type EglContext = *mut c_void;
type EglSurface = *mut c_void;
type EglDevice = *mut c_void;
type EglInt = i32;
type EglBoolean = u32;
type EglEnum = u32;
type EglAttrib = isize;

const EGL_FALSE: EglBoolean = 0;
const EGL_SUCCESS: EglInt = 0x3000;
const EGL_NONE: EglInt = 0x3038;
const EGL_VENDOR: EglInt = 0x3053;
const EGL_EXTENSIONS: EglInt = 0x3055;
const EGL_SURFACE_TYPE: EglInt = 0x3033;
const EGL_PBUFFER_BIT: EglInt = 0x0001;
const EGL_RENDERABLE_TYPE: EglInt = 0x3040;
const EGL_OPENGL_BIT: EglInt = 0x0008;
const EGL_OPENGL_API: EglEnum = 0x30A2;
const EGL_WIDTH: EglInt = 0x3057;
const EGL_HEIGHT: EglInt = 0x3056;
const EGL_CONTEXT_MAJOR_VERSION: EglInt = 0x3098;
const EGL_CONTEXT_MINOR_VERSION: EglInt = 0x30FB;
const EGL_CONTEXT_OPENGL_PROFILE_MASK: EglInt = 0x30FD;
const EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT: EglInt = 0x0001;
/// `EGL_EXT_platform_device`.
const EGL_PLATFORM_DEVICE_EXT: EglEnum = 0x313F;
/// `EGL_EXT_device_drm`: the device's DRM node, as a string.
const EGL_DRM_DEVICE_FILE_EXT: EglInt = 0x3233;
/// `EGL_NV_device_cuda`: the CUDA device ordinal of an EGL device.
const EGL_CUDA_DEVICE_NV: EglInt = 0x323A;

// ----- OpenGL (GL/glcorearb.h) --------------------------------------------------------------

type GlEnum = u32;
type GlUint = u32;
type GlInt = i32;
type GlSizei = i32;
type GlSizeiptr = isize;
type GlIntptr = isize;

const GL_NO_ERROR: GlEnum = 0;
const GL_VENDOR: GlEnum = 0x1F00;
const GL_RENDERER: GlEnum = 0x1F01;
const GL_VERSION: GlEnum = 0x1F02;
const GL_ARRAY_BUFFER: GlEnum = 0x8892;
const GL_DYNAMIC_DRAW: GlEnum = 0x88E8;
const GL_TEXTURE_2D: GlEnum = 0x0DE1;
const GL_TEXTURE_MAG_FILTER: GlEnum = 0x2800;
const GL_TEXTURE_MIN_FILTER: GlEnum = 0x2801;
const GL_NEAREST: GlInt = 0x2600;
const GL_R32UI: GlEnum = 0x8236;
const GL_RED_INTEGER: GlEnum = 0x8D94;
const GL_UNSIGNED_INT: GlEnum = 0x1405;
const GL_PACK_ALIGNMENT: GlEnum = 0x0D05;
const GL_UNPACK_ALIGNMENT: GlEnum = 0x0CF5;

/// A table of C functions looked up by name, with the prototypes the Khronos headers give
/// (`EGLAPIENTRY` and `APIENTRY` are the C convention on Linux).
macro_rules! function_table {
    (
        $(#[$meta:meta])*
        struct $table:ident {
            $($field:ident = $name:literal: fn($($arg:ty),* $(,)?) $(-> $ret:ty)?;)*
        }
    ) => {
        $(#[$meta])*
        struct $table {
            $($field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
        }

        impl $table {
            /// Looks every function up with `lookup`; names the first one missing.
            ///
            /// # Safety
            ///
            /// For each name, `lookup` gives that C function (of the prototype the table
            /// declares), or nothing; the functions stay loaded for as long as the table is used.
            // A function of no arguments and no result keeps its pointer type as it is.
            #[allow(clippy::useless_transmute)]
            unsafe fn load(
                lookup: impl Fn(&CStr) -> Option<unsafe extern "C" fn()>,
            ) -> Result<$table, String> {
                Ok($table {
                    $($field: {
                        let name: &CStr = $name;
                        let f = lookup(name)
                            .ok_or_else(|| format!("{} is missing", name.to_string_lossy()))?;
                        // SAFETY: the caller's promise: `f` is the function named, whose
                        // prototype is the one declared; only the pointer's type changes.
                        unsafe {
                            std::mem::transmute::<
                                unsafe extern "C" fn(),
                                unsafe extern "C" fn($($arg),*) $(-> $ret)?,
                            >(f)
                        }
                    },)*
                })
            }
        }
    };
}

function_table! {
    /// The EGL 1.5 functions used, from `libEGL.so.1`.
    #[derive(Clone, Copy)]
    struct EglFns {
        get_error = c"eglGetError": fn() -> EglInt;
        get_display = c"eglGetDisplay": fn(*mut c_void) -> EglDisplay;
        initialize = c"eglInitialize": fn(EglDisplay, *mut EglInt, *mut EglInt) -> EglBoolean;
        terminate = c"eglTerminate": fn(EglDisplay) -> EglBoolean;
        query_string = c"eglQueryString": fn(EglDisplay, EglInt) -> *const c_char;
        bind_api = c"eglBindAPI": fn(EglEnum) -> EglBoolean;
        choose_config = c"eglChooseConfig":
            fn(EglDisplay, *const EglInt, *mut EglConfig, EglInt, *mut EglInt) -> EglBoolean;
        create_context = c"eglCreateContext":
            fn(EglDisplay, EglConfig, EglContext, *const EglInt) -> EglContext;
        destroy_context = c"eglDestroyContext": fn(EglDisplay, EglContext) -> EglBoolean;
        make_current = c"eglMakeCurrent":
            fn(EglDisplay, EglSurface, EglSurface, EglContext) -> EglBoolean;
        create_pbuffer_surface = c"eglCreatePbufferSurface":
            fn(EglDisplay, EglConfig, *const EglInt) -> EglSurface;
        destroy_surface = c"eglDestroySurface": fn(EglDisplay, EglSurface) -> EglBoolean;
        release_thread = c"eglReleaseThread": fn() -> EglBoolean;
        get_proc_address = c"eglGetProcAddress":
            fn(*const c_char) -> Option<unsafe extern "C" fn()>;
    }
}

function_table! {
    /// `EGL_EXT_device_enumeration` and `EGL_EXT_platform_base` (with `EGL_EXT_platform_device`).
    #[derive(Clone, Copy)]
    struct EglDeviceFns {
        query_devices = c"eglQueryDevicesEXT": fn(EglInt, *mut EglDevice, *mut EglInt) -> EglBoolean;
        get_platform_display = c"eglGetPlatformDisplayEXT":
            fn(EglEnum, *mut c_void, *const EglInt) -> EglDisplay;
    }
}

function_table! {
    /// `EGL_EXT_device_query`: what a device is (only printed and used to order the devices).
    #[derive(Clone, Copy)]
    struct EglDeviceQueryFns {
        query_device_string = c"eglQueryDeviceStringEXT": fn(EglDevice, EglInt) -> *const c_char;
        query_device_attrib = c"eglQueryDeviceAttribEXT":
            fn(EglDevice, EglInt, *mut EglAttrib) -> EglBoolean;
    }
}

function_table! {
    /// The OpenGL functions used (core since 4.2 at the latest).
    struct GlFns {
        get_error = c"glGetError": fn() -> GlEnum;
        get_string = c"glGetString": fn(GlEnum) -> *const u8;
        finish = c"glFinish": fn();
        pixel_store_i = c"glPixelStorei": fn(GlEnum, GlInt);
        gen_buffers = c"glGenBuffers": fn(GlSizei, *mut GlUint);
        bind_buffer = c"glBindBuffer": fn(GlEnum, GlUint);
        buffer_data = c"glBufferData": fn(GlEnum, GlSizeiptr, *const c_void, GlEnum);
        get_buffer_sub_data = c"glGetBufferSubData":
            fn(GlEnum, GlIntptr, GlSizeiptr, *mut c_void);
        delete_buffers = c"glDeleteBuffers": fn(GlSizei, *const GlUint);
        gen_textures = c"glGenTextures": fn(GlSizei, *mut GlUint);
        bind_texture = c"glBindTexture": fn(GlEnum, GlUint);
        tex_storage_2d = c"glTexStorage2D": fn(GlEnum, GlSizei, GlEnum, GlSizei, GlSizei);
        tex_parameter_i = c"glTexParameteri": fn(GlEnum, GlEnum, GlInt);
        tex_sub_image_2d = c"glTexSubImage2D": fn(
            GlEnum, GlInt, GlInt, GlInt, GlSizei, GlSizei, GlEnum, GlEnum, *const c_void
        );
        get_tex_image = c"glGetTexImage": fn(GlEnum, GlInt, GlEnum, GlEnum, *mut c_void);
        delete_textures = c"glDeleteTextures": fn(GlSizei, *const GlUint);
    }
}

/// Loads a library for the rest of the process: the function pointers taken from it stay
/// valid, and the driver behind it is never unloaded under its own threads.
fn load_library(name: &str) -> Result<&'static Library, String> {
    // SAFETY: a system EGL or OpenGL loader (glvnd); its initialisers have no preconditions.
    let library = unsafe { Library::new(name) }.map_err(|e| format!("cannot load {name}: {e}"))?;
    Ok(Box::leak(Box::new(library)))
}

/// Looks `name` up in `library` as a C function of unknown prototype.
fn symbol(library: &Library, name: &CStr) -> Option<unsafe extern "C" fn()> {
    // SAFETY: the symbol is only taken as a function pointer here; whoever calls it through
    // a function table declares its prototype (`function_table!`'s `load` contract).
    unsafe { library.get::<unsafe extern "C" fn()>(name.to_bytes_with_nul()) }
        .ok()
        .map(|f| *f)
}

/// A C string from EGL or OpenGL, or `?` where there is none.
///
/// # Safety
///
/// `s` is null or a NUL-terminated string that lives for the call.
unsafe fn c_string(s: *const c_char) -> String {
    if s.is_null() {
        return "?".to_owned();
    }
    // SAFETY: the caller's promise.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// Whether the space-separated extension list `list` names `extension`.
fn has_extension(list: &str, extension: &str) -> bool {
    list.split_ascii_whitespace().any(|e| e == extension)
}

/// EGL's last error on this thread, named (and cleared).
fn egl_error(egl: &EglFns) -> String {
    // SAFETY: eglGetError has no preconditions.
    let code = unsafe { (egl.get_error)() };
    let name = match code {
        EGL_SUCCESS => "EGL_SUCCESS",
        0x3001 => "EGL_NOT_INITIALIZED",
        0x3002 => "EGL_BAD_ACCESS",
        0x3003 => "EGL_BAD_ALLOC",
        0x3004 => "EGL_BAD_ATTRIBUTE",
        0x3005 => "EGL_BAD_CONFIG",
        0x3006 => "EGL_BAD_CONTEXT",
        0x3007 => "EGL_BAD_CURRENT_SURFACE",
        0x3008 => "EGL_BAD_DISPLAY",
        0x3009 => "EGL_BAD_MATCH",
        0x300C => "EGL_BAD_PARAMETER",
        0x300D => "EGL_BAD_SURFACE",
        0x300E => "EGL_CONTEXT_LOST",
        0x322B => "EGL_BAD_DEVICE_EXT",
        _ => "an EGL error",
    };
    format!("{name}, {code:#x}")
}

/// A display to try: an EGL device's, or the default display.
struct Candidate {
    /// What it is, for messages.
    name: String,
    /// The display; not yet initialised.
    display: EglDisplay,
    /// The CUDA device ordinal the EGL device reports (`EGL_NV_device_cuda`).
    cuda_device: Option<usize>,
}

/// The displays of the EGL devices (`EGL_EXT_device_enumeration`, `EGL_EXT_platform_device`),
/// the one reporting CUDA device 0 first, then the others in EGL's order.
fn device_candidates(egl: &EglFns) -> Result<Vec<Candidate>, String> {
    // SAFETY: EGL_NO_DISPLAY with EGL_EXTENSIONS asks for the client extensions (EGL 1.5);
    // the string, or null, is EGL's for the process.
    let client = unsafe { c_string((egl.query_string)(null_mut(), EGL_EXTENSIONS)) };
    // EGL_EXT_device_base is EGL_EXT_device_enumeration and EGL_EXT_device_query together.
    let enumeration = has_extension(&client, "EGL_EXT_device_enumeration")
        || has_extension(&client, "EGL_EXT_device_base");
    for (present, needed) in [
        (enumeration, "EGL_EXT_device_enumeration"),
        (
            has_extension(&client, "EGL_EXT_platform_device"),
            "EGL_EXT_platform_device",
        ),
    ] {
        if !present {
            return Err(format!("EGL lacks {needed} (client extensions: {client})"));
        }
    }
    let lookup = |name: &CStr| {
        // SAFETY: eglGetProcAddress takes any NUL-terminated name.
        unsafe { (egl.get_proc_address)(name.as_ptr()) }
    };
    // SAFETY: eglGetProcAddress gives the EGL function of each name, with the prototypes of
    // EGL/eglext.h; libEGL is never unloaded.
    let devices_fns = unsafe { EglDeviceFns::load(lookup) }?;
    // SAFETY: as above; this extension is optional.
    let query_fns = unsafe { EglDeviceQueryFns::load(lookup) }.ok();

    let mut devices = [null_mut::<c_void>(); 32];
    let mut count: EglInt = 0;
    // SAFETY: `devices` has room for the 32 handles asked for; `count` is written.
    let ok = unsafe { (devices_fns.query_devices)(32, devices.as_mut_ptr(), &mut count) };
    if ok == EGL_FALSE {
        return Err(format!("eglQueryDevicesEXT failed ({})", egl_error(egl)));
    }
    let count = count.clamp(0, 32) as usize;
    if count == 0 {
        return Err("eglQueryDevicesEXT found no device".to_owned());
    }
    let mut candidates = Vec::new();
    for (index, &device) in devices[..count].iter().enumerate() {
        let (mut drm, mut cuda_device) = (None, None);
        if let Some(query) = query_fns {
            // SAFETY: `device` is one eglQueryDevicesEXT gave; the strings (or null) are
            // EGL's for the device's life, the process's.
            let extensions =
                unsafe { c_string((query.query_device_string)(device, EGL_EXTENSIONS)) };
            if has_extension(&extensions, "EGL_EXT_device_drm") {
                // SAFETY: as above.
                let file = unsafe { (query.query_device_string)(device, EGL_DRM_DEVICE_FILE_EXT) };
                // SAFETY: as above.
                drm = (!file.is_null()).then(|| unsafe { c_string(file) });
            }
            if has_extension(&extensions, "EGL_NV_device_cuda") {
                let mut ordinal: EglAttrib = -1;
                // SAFETY: `device` as above; `ordinal` is written on success.
                let ok = unsafe {
                    (query.query_device_attrib)(device, EGL_CUDA_DEVICE_NV, &mut ordinal)
                };
                if ok != EGL_FALSE && ordinal >= 0 {
                    cuda_device = Some(ordinal as usize);
                }
            }
            // Whatever failed above is only left out of the message.
            let _ = egl_error(egl);
        }
        let name = format!(
            "EGL device {index} of {count} ({}, {})",
            drm.as_deref().unwrap_or("no DRM node reported"),
            cuda_device.map_or("no CUDA device reported".to_owned(), |c| format!(
                "CUDA device {c}"
            ))
        );
        // SAFETY: `device` is one eglQueryDevicesEXT gave, the native display of the device
        // platform; no attributes.
        let display =
            unsafe { (devices_fns.get_platform_display)(EGL_PLATFORM_DEVICE_EXT, device, null()) };
        if display.is_null() {
            println!("{name}: no display ({})", egl_error(egl));
            continue;
        }
        candidates.push(Candidate {
            name,
            display,
            cuda_device,
        });
    }
    // Stable: CUDA device 0's EGL device first, the rest in EGL's order.
    candidates.sort_by_key(|c| c.cuda_device != Some(0));
    Ok(candidates)
}

/// An initialised EGL display with, once made, a context and a surface; dropping it releases
/// the context from this thread, destroys both and terminates the display.
struct EglSetup {
    egl: EglFns,
    display: EglDisplay,
    context: EglContext,
    /// The 1x1 pbuffer; null while the context is current with no surface.
    surface: EglSurface,
}

impl EglSetup {
    /// Undoes what was made; once done, does nothing more.
    fn teardown(&mut self) -> Result<(), String> {
        if self.display.is_null() {
            return Ok(());
        }
        let egl = self.egl;
        let mut problems = Vec::new();
        // SAFETY: the display is initialised; releasing the current context (EGL_NO_CONTEXT,
        // no surfaces) is valid whether or not one is current. CUDA's registrations of this
        // context's objects are gone by now (the caller drops them before this value).
        if unsafe { (egl.make_current)(self.display, null_mut(), null_mut(), null_mut()) }
            == EGL_FALSE
        {
            problems.push(format!(
                "eglMakeCurrent(EGL_NO_CONTEXT): {}",
                egl_error(&egl)
            ));
        }
        if !self.surface.is_null() {
            // SAFETY: the surface was made on this display and is no longer current.
            if unsafe { (egl.destroy_surface)(self.display, self.surface) } == EGL_FALSE {
                problems.push(format!("eglDestroySurface: {}", egl_error(&egl)));
            }
        }
        if !self.context.is_null() {
            // SAFETY: the context was made on this display and is no longer current.
            if unsafe { (egl.destroy_context)(self.display, self.context) } == EGL_FALSE {
                problems.push(format!("eglDestroyContext: {}", egl_error(&egl)));
            }
        }
        // SAFETY: the display is initialised and nothing of it is used from here on.
        if unsafe { (egl.terminate)(self.display) } == EGL_FALSE {
            problems.push(format!("eglTerminate: {}", egl_error(&egl)));
        }
        // SAFETY: no preconditions; frees this thread's EGL state.
        unsafe { (egl.release_thread)() };
        self.display = null_mut();
        self.context = null_mut();
        self.surface = null_mut();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        }
    }
}

impl Drop for EglSetup {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("gl_interop: tearing EGL down: {e}");
        }
    }
}

/// An OpenGL context current on this thread, on an NVIDIA GPU, with its functions.
struct GlContext {
    setup: EglSetup,
    gl: GlFns,
    /// The CUDA device ordinal of its EGL device, where EGL reports one.
    cuda_device: Option<usize>,
    /// Which display it is on, and how it was made.
    description: String,
}

impl GlContext {
    /// Makes an OpenGL context current on this thread: on the EGL devices' displays, the one
    /// of CUDA device 0 first, then on the default display. The error says why none worked.
    fn open() -> Result<GlContext, String> {
        let egl_library = load_library("libEGL.so.1")?;
        // SAFETY: each name is that EGL 1.5 function of libEGL, with the prototype of
        // EGL/egl.h; the library is never unloaded.
        let egl = unsafe { EglFns::load(|name| symbol(egl_library, name)) }
            .map_err(|e| format!("libEGL.so.1: {e}"))?;
        // OpenGL's own exports, where eglGetProcAddress gives nothing.
        let gl_library = load_library("libOpenGL.so.0").ok();

        let mut failures = Vec::new();
        match device_candidates(&egl) {
            Ok(candidates) => {
                for candidate in candidates {
                    match GlContext::on(egl, gl_library, &candidate) {
                        Ok(context) => return Ok(context),
                        Err(e) => failures.push(format!("{}: {e}", candidate.name)),
                    }
                }
            }
            Err(e) => failures.push(format!("EGL device platform: {e}")),
        }
        // SAFETY: EGL_DEFAULT_DISPLAY (null) is a valid native display for eglGetDisplay.
        let display = unsafe { (egl.get_display)(null_mut()) };
        let default = Candidate {
            name: "eglGetDisplay(EGL_DEFAULT_DISPLAY)".to_owned(),
            display,
            cuda_device: None,
        };
        if display.is_null() {
            failures.push(format!(
                "{}: no display ({})",
                default.name,
                egl_error(&egl)
            ));
        } else {
            match GlContext::on(egl, gl_library, &default) {
                Ok(context) => return Ok(context),
                Err(e) => failures.push(format!("{}: {e}", default.name)),
            }
        }
        Err(format!(
            "no OpenGL context on an NVIDIA GPU: {}",
            failures.join("; ")
        ))
    }

    /// Initialises `candidate`'s display and makes an OpenGL context on it current.
    fn on(
        egl: EglFns,
        gl_library: Option<&'static Library>,
        candidate: &Candidate,
    ) -> Result<GlContext, String> {
        let display = candidate.display;
        let (mut major, mut minor) = (0, 0);
        // SAFETY: `display` is a display EGL gave; both outputs are written.
        if unsafe { (egl.initialize)(display, &mut major, &mut minor) } == EGL_FALSE {
            return Err(format!("eglInitialize failed ({})", egl_error(&egl)));
        }
        // From here on, an error drops `setup`, which undoes what was made.
        let mut setup = EglSetup {
            egl,
            display,
            context: null_mut(),
            surface: null_mut(),
        };
        // SAFETY: the display is initialised; the string (or null) lives as long as it.
        let vendor = unsafe { c_string((egl.query_string)(display, EGL_VENDOR)) };
        // SAFETY: as above.
        let extensions = unsafe { c_string((egl.query_string)(display, EGL_EXTENSIONS)) };

        // SAFETY: EGL_OPENGL_API is a valid API; it applies to this thread.
        if unsafe { (egl.bind_api)(EGL_OPENGL_API) } == EGL_FALSE {
            return Err(format!(
                "eglBindAPI(EGL_OPENGL_API) failed ({})",
                egl_error(&egl)
            ));
        }
        let config_attributes = [
            EGL_SURFACE_TYPE,
            EGL_PBUFFER_BIT,
            EGL_RENDERABLE_TYPE,
            EGL_OPENGL_BIT,
            EGL_NONE,
        ];
        let mut config: EglConfig = null_mut();
        let mut configs: EglInt = 0;
        // SAFETY: the attribute list ends with EGL_NONE; room for the 1 config asked for.
        let ok = unsafe {
            (egl.choose_config)(
                display,
                config_attributes.as_ptr(),
                &mut config,
                1,
                &mut configs,
            )
        };
        if ok == EGL_FALSE || configs < 1 {
            return Err(format!(
                "no EGL config for OpenGL with pbuffers ({})",
                egl_error(&egl)
            ));
        }

        let core_4_3 = [
            EGL_CONTEXT_MAJOR_VERSION,
            4,
            EGL_CONTEXT_MINOR_VERSION,
            3,
            EGL_CONTEXT_OPENGL_PROFILE_MASK,
            EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT,
            EGL_NONE,
        ];
        // SAFETY: `config` is of this display; no shared context; the list ends with EGL_NONE.
        setup.context =
            unsafe { (egl.create_context)(display, config, null_mut(), core_4_3.as_ptr()) };
        if setup.context.is_null() {
            return Err(format!(
                "eglCreateContext for OpenGL 4.3 core failed ({})",
                egl_error(&egl)
            ));
        }
        // Surfaceless (EGL_KHR_surfaceless_context) where EGL allows it, else a 1x1 pbuffer.
        let mut surfaceless = false;
        if has_extension(&extensions, "EGL_KHR_surfaceless_context") {
            // SAFETY: the context is of this display; no surfaces, as the extension allows.
            let ok = unsafe { (egl.make_current)(display, null_mut(), null_mut(), setup.context) };
            surfaceless = ok != EGL_FALSE;
            if !surfaceless {
                println!(
                    "{}: surfaceless eglMakeCurrent failed ({}); trying a pbuffer",
                    candidate.name,
                    egl_error(&egl)
                );
            }
        }
        if !surfaceless {
            let pbuffer_attributes = [EGL_WIDTH, 1, EGL_HEIGHT, 1, EGL_NONE];
            // SAFETY: `config` supports pbuffers; the list ends with EGL_NONE.
            setup.surface = unsafe {
                (egl.create_pbuffer_surface)(display, config, pbuffer_attributes.as_ptr())
            };
            if setup.surface.is_null() {
                return Err(format!(
                    "eglCreatePbufferSurface failed ({})",
                    egl_error(&egl)
                ));
            }
            // SAFETY: surface and context are of this display and config.
            let ok =
                unsafe { (egl.make_current)(display, setup.surface, setup.surface, setup.context) };
            if ok == EGL_FALSE {
                return Err(format!("eglMakeCurrent failed ({})", egl_error(&egl)));
            }
        }

        let lookup = |name: &CStr| {
            // SAFETY: eglGetProcAddress takes any NUL-terminated name (EGL 1.5: core OpenGL
            // functions too).
            let f = unsafe { (egl.get_proc_address)(name.as_ptr()) };
            f.or_else(|| gl_library.and_then(|library| symbol(library, name)))
        };
        // SAFETY: each name is that OpenGL function, with the prototype of GL/glcorearb.h, of
        // libraries never unloaded; a 4.3 core context has all of them.
        let gl = unsafe { GlFns::load(lookup) }?;
        let context = GlContext {
            setup,
            gl,
            cuda_device: candidate.cuda_device,
            description: format!(
                "{}; EGL {major}.{minor} ({vendor}); OpenGL 4.3 core context, {}",
                candidate.name,
                if surfaceless {
                    "surfaceless"
                } else {
                    "on a 1x1 pbuffer"
                }
            ),
        };
        let gl_vendor = context.string(GL_VENDOR);
        if !gl_vendor.contains("NVIDIA") {
            return Err(format!(
                "its OpenGL is {gl_vendor}'s ({}), not NVIDIA's: CUDA cannot register its objects",
                context.string(GL_RENDERER)
            ));
        }
        Ok(context)
    }

    /// `glGetString(name)`.
    fn string(&self, name: GlEnum) -> String {
        // SAFETY: the context is current on this thread; the string (or null) is static.
        unsafe { c_string((self.gl.get_string)(name).cast()) }
    }

    /// Every OpenGL error raised since the last check, as an error naming `step`.
    fn check(&self, step: &str) -> Result<(), String> {
        let mut errors = Vec::new();
        // One flag a call until none is left; bounded, as a lost context may report
        // GL_CONTEXT_LOST on every call.
        for _ in 0..8 {
            // SAFETY: the context is current on this thread.
            let error = unsafe { (self.gl.get_error)() };
            if error == GL_NO_ERROR {
                break;
            }
            errors.push(match error {
                0x0500 => "GL_INVALID_ENUM".to_owned(),
                0x0501 => "GL_INVALID_VALUE".to_owned(),
                0x0502 => "GL_INVALID_OPERATION".to_owned(),
                0x0505 => "GL_OUT_OF_MEMORY".to_owned(),
                0x0506 => "GL_INVALID_FRAMEBUFFER_OPERATION".to_owned(),
                0x0507 => "GL_CONTEXT_LOST".to_owned(),
                other => format!("{other:#x}"),
            });
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(format!("OpenGL error {} after {step}", errors.join(", ")))
        }
    }

    /// Releases and destroys the context and terminates the display, reporting what failed.
    fn close(mut self) -> Result<(), String> {
        self.setup.teardown()
    }
}

/// The OpenGL objects made; dropping it deletes them. CUDA's registrations of them are
/// dropped before it.
struct GlObjects<'a> {
    context: &'a GlContext,
    buffer: GlUint,
    texture: GlUint,
}

impl GlObjects<'_> {
    fn delete_names(&mut self) {
        let gl = &self.context.gl;
        // SAFETY: the context is current on this thread; the names are its (0 is skipped by
        // glDelete*), and CUDA no longer has them registered.
        unsafe {
            (gl.delete_buffers)(1, &self.buffer);
            (gl.delete_textures)(1, &self.texture);
        }
        self.buffer = 0;
        self.texture = 0;
    }

    /// Deletes them, reporting an OpenGL error.
    fn delete(mut self) -> Result<(), String> {
        self.delete_names();
        self.context.check("deleting the buffer and the texture")
    }
}

impl Drop for GlObjects<'_> {
    fn drop(&mut self) {
        self.delete_names();
    }
}

/// Compares `got` with the CPU's `want`, naming the first difference.
fn compare(what: &str, got: &[u32], want: &[u32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "{what}: {} values, expected {}",
            got.len(),
            want.len()
        ));
    }
    let Some(first) = got.iter().zip(want).position(|(g, w)| g != w) else {
        return Ok(());
    };
    let wrong = got.iter().zip(want).filter(|(g, w)| g != w).count();
    Err(format!(
        "{what}: {wrong} of {} values differ from the CPU's (the first at index {first}: \
         {:#x}, expected {:#x})",
        want.len(),
        got[first],
        want[first]
    ))
}

fn main() -> ExitCode {
    let context = match GlContext::open() {
        Ok(context) => context,
        Err(why) => return common::not_run("gl_interop", "gl", &why),
    };
    common::main_with("gl_interop", move || run(context))
}

fn run(context: GlContext) -> Result<(), Box<dyn std::error::Error>> {
    println!("EGL: {}", context.description);
    println!(
        "OpenGL: {} / {} / {}",
        context.string(GL_VENDOR),
        context.string(GL_RENDERER),
        context.string(GL_VERSION)
    );
    context.check("making the context current")?;

    let ordinal = context.cuda_device.unwrap_or(0);
    let device = Device::new(ordinal)?;
    device.set_current()?;
    println!(
        "CUDA device {ordinal}: {} (sm_{}){}",
        device.name()?,
        device.arch()?,
        if context.cuda_device.is_some() {
            ", the EGL device's"
        } else {
            ", assumed to be the EGL device's (EGL does not say)"
        }
    );
    let stream = device.create_stream(StreamOptions::default())?;
    let code = Program::new(KERNEL, ProgramOptions::default())
        .with_name("gl_interop.cu")
        .compile(CodeType::Cubin, &[])?;
    let kernel = code.get_kernel("scale_add")?;

    let mut objects = GlObjects {
        context: &context,
        buffer: 0,
        texture: 0,
    };
    let gl = &context.gl;
    // Tightly packed rows (1024 bytes each here, so the default of 4 would do as well).
    // SAFETY: the context is current on this thread.
    unsafe {
        (gl.pixel_store_i)(GL_PACK_ALIGNMENT, 4);
        (gl.pixel_store_i)(GL_UNPACK_ALIGNMENT, 4);
    }

    // ----- A buffer object: OpenGL writes, CUDA reads and updates, OpenGL reads. -----
    let initial: Vec<u32> = (0..N as u32)
        .map(|i| i.wrapping_mul(5).wrapping_add(3))
        .collect();
    let bytes = std::mem::size_of_val(initial.as_slice());
    // SAFETY: the context is current on this thread; glBufferData reads `bytes` bytes of
    // `initial`, which holds them.
    unsafe {
        (gl.gen_buffers)(1, &mut objects.buffer);
        (gl.bind_buffer)(GL_ARRAY_BUFFER, objects.buffer);
        (gl.buffer_data)(
            GL_ARRAY_BUFFER,
            bytes as GlSizeiptr,
            initial.as_ptr().cast(),
            GL_DYNAMIC_DRAW,
        );
        (gl.finish)();
    }
    context.check("creating and filling the buffer object")?;
    {
        // SAFETY: the OpenGL context is current on this thread, on the GPU of `device` (the
        // EGL device's, as checked or assumed above); the buffer object has storage; the
        // context outlives this registration (dropped at the end of this block, before the
        // context is closed), and OpenGL does not use the buffer while it is mapped.
        let registered =
            unsafe { GlBuffer::register(device, objects.buffer, GlRegisterFlags::empty())? };
        let mapped = registered.map(&stream)?;
        if mapped.size() < bytes {
            return Err(format!(
                "the mapped buffer has {} bytes; OpenGL's has {bytes}",
                mapped.size()
            )
            .into());
        }
        let seen = mapped.to_vec::<u32>(&stream)?;
        compare(
            "CUDA reading the buffer object OpenGL filled",
            seen.get(..N).unwrap_or(&seen),
            &initial,
        )?;
        let n = N as u32;
        // SAFETY: the mapped buffer holds n u32; the kernel reads and writes within n.
        unsafe {
            launch(
                &stream,
                &LaunchConfig::for_elements(N as u64, 256),
                &kernel,
                &[&mapped, &n],
            )?
        };
        // Dropping the mapping unmaps the buffer object, after the kernel, on the stream.
        drop(mapped);
        stream.sync()?;
    }
    let mut read_back = vec![0u32; N];
    // SAFETY: the context is current; the buffer object is unmapped; `read_back` has room
    // for the `bytes` bytes read.
    unsafe {
        (gl.bind_buffer)(GL_ARRAY_BUFFER, objects.buffer);
        (gl.get_buffer_sub_data)(
            GL_ARRAY_BUFFER,
            0,
            bytes as GlSizeiptr,
            read_back.as_mut_ptr().cast(),
        );
        (gl.bind_buffer)(GL_ARRAY_BUFFER, 0);
    }
    context.check("glGetBufferSubData")?;
    let expected: Vec<u32> = initial
        .iter()
        .map(|x| x.wrapping_mul(7).wrapping_add(11))
        .collect();
    compare(
        "OpenGL reading the buffer object CUDA's kernel updated",
        &read_back,
        &expected,
    )?;
    println!(
        "buffer object of {N} u32: CUDA read OpenGL's values, and OpenGL read CUDA's kernel's \
         result (x * 7 + 11): all match the CPU"
    );

    // ----- A texture: OpenGL writes, CUDA reads and writes, OpenGL reads. -----
    let texels: Vec<u32> = (0..HEIGHT)
        .flat_map(|y| (0..WIDTH).map(move |x| (y * WIDTH + x) as u32))
        .collect();
    // SAFETY: the context is current; an immutable 1-level GL_R32UI texture of WIDTH x HEIGHT
    // (complete with NEAREST filters: no mipmaps, and integer textures cannot be filtered
    // linearly); glTexSubImage2D reads WIDTH * HEIGHT u32 of `texels`, which holds them.
    unsafe {
        (gl.gen_textures)(1, &mut objects.texture);
        (gl.bind_texture)(GL_TEXTURE_2D, objects.texture);
        (gl.tex_storage_2d)(
            GL_TEXTURE_2D,
            1,
            GL_R32UI,
            WIDTH as GlSizei,
            HEIGHT as GlSizei,
        );
        (gl.tex_parameter_i)(GL_TEXTURE_2D, GL_TEXTURE_MIN_FILTER, GL_NEAREST);
        (gl.tex_parameter_i)(GL_TEXTURE_2D, GL_TEXTURE_MAG_FILTER, GL_NEAREST);
        (gl.tex_sub_image_2d)(
            GL_TEXTURE_2D,
            0,
            0,
            0,
            WIDTH as GlSizei,
            HEIGHT as GlSizei,
            GL_RED_INTEGER,
            GL_UNSIGNED_INT,
            texels.as_ptr().cast(),
        );
        (gl.bind_texture)(GL_TEXTURE_2D, 0);
        (gl.finish)();
    }
    context.check("creating and filling the texture")?;
    let written: Vec<u32> = texels.iter().map(|t| t ^ 0x00ab_cdef).collect();
    {
        // SAFETY: as for the buffer object: a GL_TEXTURE_2D of this current context, with
        // storage, of a format CUDA maps (GL_R32UI); the registration is dropped at the end
        // of this block, and OpenGL does not use the texture while it is mapped.
        let registered = unsafe {
            GlImage::register(
                device,
                objects.texture,
                GL_TEXTURE_2D,
                GlRegisterFlags::empty(),
            )?
        };
        let mut array = registered.map(&stream, 0, 0)?;
        let options = array.options();
        if array.extent() != [WIDTH, HEIGHT, 1]
            || options.format != ArrayFormat::U32
            || options.channel_count() != 1
        {
            return Err(format!(
                "the mapped texture is {:?} of {:?} x {}; expected [{WIDTH}, {HEIGHT}, 1] of \
                 U32 x 1",
                array.extent(),
                options.format,
                options.channel_count()
            )
            .into());
        }
        compare(
            "CUDA reading the texture OpenGL filled",
            &array.to_vec::<u32>(&stream)?,
            &texels,
        )?;
        array.copy_from_host(&written, &stream)?;
        // Dropping the array unmaps the texture, after the copy, on the stream.
        drop(array);
        stream.sync()?;
    }
    let mut read_back = vec![0u32; WIDTH * HEIGHT];
    // SAFETY: the context is current; the texture is unmapped; level 0 as GL_RED_INTEGER /
    // GL_UNSIGNED_INT with rows packed (alignment 4) is WIDTH * HEIGHT u32, the room in
    // `read_back`; no pixel pack buffer is bound.
    unsafe {
        (gl.bind_texture)(GL_TEXTURE_2D, objects.texture);
        (gl.get_tex_image)(
            GL_TEXTURE_2D,
            0,
            GL_RED_INTEGER,
            GL_UNSIGNED_INT,
            read_back.as_mut_ptr().cast(),
        );
        (gl.bind_texture)(GL_TEXTURE_2D, 0);
    }
    context.check("glGetTexImage")?;
    compare(
        "OpenGL reading the texture CUDA wrote",
        &read_back,
        &written,
    )?;
    println!(
        "texture {WIDTH}x{HEIGHT} GL_R32UI: CUDA read OpenGL's texels through the mapped array, \
         and OpenGL read the texels CUDA copied in: all match the CPU"
    );

    // The registrations are gone (their blocks ended); then the OpenGL objects, then EGL.
    objects.delete()?;
    context.close()?;
    Ok(())
}
