//! `Program`, `ProgramOptions`, `ObjectCode`, `Kernel` and the kernel's `KernelAttributes`
//! and `KernelOccupancy`.

use std::path::PathBuf;
use std::sync::Arc;

use crate::device::PyDevice;
use crate::errors::*;
use crate::launch::PyLaunchConfig;
use cuda_core::{CodeType, KernelAttribute};
use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};

// ---- helpers ---------------------------------------------------------------------------------

/// A named tuple type made once (`ParamInfo`, `MaxPotential`).
fn named_tuple<'py>(
    py: Python<'py>,
    cell: &'static GILOnceCell<PyObject>,
    name: &str,
    fields: &[&str],
) -> PyResult<&'py Bound<'py, PyAny>> {
    cell.get_or_try_init(py, || {
        let made = py
            .import("collections")?
            .getattr("namedtuple")?
            .call1((name, fields.to_vec()))?;
        made.setattr("__module__", "cudacore_rs")?;
        Ok::<_, PyErr>(made.unbind())
    })
    .map(|t| t.bind(py))
}

/// The device an optional `device_id` argument names: a `Device`, an ordinal, or None for the
/// calling thread's current device.
pub(crate) fn device_arg(
    py: Python<'_>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<cuda_core::Device> {
    let Some(device) = device.filter(|d| !d.is_none()) else {
        return cuda_core::Device::current().or_py(py);
    };
    if let Ok(device) = device.downcast::<PyDevice>() {
        return Ok(device.get().device);
    }
    if device.is_instance_of::<PyBool>() || !device.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "device_id takes a Device, an int or None, not {}",
            device.get_type().name()?
        )));
    }
    let count = cuda_core::Device::count().or_py(py)?;
    match device.extract::<usize>() {
        Ok(ordinal) if ordinal < count => cuda_core::Device::new(ordinal).or_py(py),
        _ => Err(PyValueError::new_err(format!(
            "device_id must be within [0, {count}), got {device}"
        ))),
    }
}

/// A non-negative int argument that fits a `u32`, else `ValueError`.
fn count_arg(value: i64, what: &str) -> PyResult<u32> {
    u32::try_from(value).map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be within [0, {}], got {value}",
            u32::MAX
        ))
    })
}

/// Bytes from bytes, bytearray or any buffer-protocol object.
fn bytes_of(value: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    if let Ok(bytes) = value.downcast::<PyBytes>() {
        return Ok(bytes.as_bytes().to_vec());
    }
    if let Ok(array) = value.downcast::<PyByteArray>() {
        return Ok(array.to_vec());
    }
    let view = pyo3::types::PyMemoryView::from(value).map_err(|_| {
        PyTypeError::new_err(format!(
            "expected bytes, bytearray or a buffer-protocol object, not {}",
            value
                .get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    })?;
    Ok(view
        .call_method0("tobytes")?
        .downcast::<PyBytes>()?
        .as_bytes()
        .to_vec())
}

fn code_type_name(code_type: CodeType) -> &'static str {
    match code_type {
        CodeType::Ptx => "ptx",
        CodeType::Cubin => "cubin",
        CodeType::Fatbin => "fatbin",
        CodeType::LtoIr => "ltoir",
        CodeType::Library => "library",
        _ => "unknown",
    }
}

// ---- ProgramOptions ---------------------------------------------------------------------------

/// cuda.core's `ProgramOptions` fields, in its order (positional arguments follow it).
const FIELDS: &[&str] = &[
    "name",
    "arch",
    "relocatable_device_code",
    "extensible_whole_program",
    "debug",
    "lineinfo",
    "device_code_optimize",
    "ptxas_options",
    "max_register_count",
    "ftz",
    "prec_sqrt",
    "prec_div",
    "fma",
    "use_fast_math",
    "extra_device_vectorization",
    "link_time_optimization",
    "gen_opt_lto",
    "define_macro",
    "undefine_macro",
    "include_path",
    "use_bundled_headers",
    "pre_include",
    "no_source_include",
    "std",
    "builtin_move_forward",
    "builtin_initializer_list",
    "disable_warnings",
    "restrict",
    "device_as_default_execution_space",
    "device_int128",
    "optimization_info",
    "no_display_error_number",
    "diag_error",
    "diag_suppress",
    "diag_warn",
    "brief_diagnostics",
    "time",
    "split_compile",
    "fdevice_syntax_only",
    "minimal",
    "no_cache",
    "fdevice_time_trace",
    "device_float128",
    "frandom_seed",
    "ofast_compile",
    "pch",
    "create_pch",
    "use_pch",
    "pch_dir",
    "pch_verbose",
    "pch_messages",
    "instantiate_templates_in_pch",
    "extra_sources",
    "use_libdevice",
    "numba_debug",
];

/// The fields this package cannot honour: setting one (to anything but None or False)
/// raises `NotImplementedError`.
const UNSUPPORTED: &[(&str, &str)] = &[(
    "fdevice_syntax_only",
    "a syntax-only compile gives no code to return",
)];

fn flag(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    value.is_truthy()
}

fn string(value: &Bound<'_, PyAny>, field: &str) -> PyResult<String> {
    value.extract::<String>().map_err(|_| {
        PyTypeError::new_err(format!(
            "ProgramOptions.{field} takes a str, not {}",
            value
                .get_type()
                .name()
                .map_or_else(|_| "?".to_owned(), |n| n.to_string())
        ))
    })
}

fn path(value: &Bound<'_, PyAny>, field: &str) -> PyResult<PathBuf> {
    value.extract::<PathBuf>().map_err(|_| {
        PyTypeError::new_err(format!(
            "ProgramOptions.{field} takes a path (str or os.PathLike)"
        ))
    })
}

/// A str, or a list or tuple of them.
fn strings(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<String>> {
    if value.is_instance_of::<PyString>() {
        return Ok(vec![string(value, field)?]);
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value
            .try_iter()?
            .map(|item| string(&item?, field))
            .collect();
    }
    Err(PyTypeError::new_err(format!(
        "ProgramOptions.{field} takes a str or a list or tuple of str"
    )))
}

/// An int, or a list or tuple of them (diagnostic numbers).
fn numbers(value: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<u32>> {
    let one = |item: &Bound<'_, PyAny>| -> PyResult<u32> {
        item.extract::<u32>().map_err(|_| {
            PyTypeError::new_err(format!(
                "ProgramOptions.{field} takes non-negative ints, got {item}"
            ))
        })
    };
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value.try_iter()?.map(|item| one(&item?)).collect();
    }
    Ok(vec![one(value)?])
}

/// `define_macro`: a name, a `(name, value)` pair, or a list or tuple of those.
fn defines(value: &Bound<'_, PyAny>) -> PyResult<Vec<(String, Option<String>)>> {
    let one = |item: &Bound<'_, PyAny>| -> PyResult<(String, Option<String>)> {
        if item.is_instance_of::<PyString>() {
            return Ok((string(item, "define_macro")?, None));
        }
        if let Ok((name, value)) = item.extract::<(String, String)>() {
            return Ok((name, Some(value)));
        }
        Err(PyTypeError::new_err(
            "ProgramOptions.define_macro takes names and (name, value) pairs of str",
        ))
    };
    if value.is_instance_of::<PyString>() {
        return Ok(vec![one(value)?]);
    }
    if let Ok(tuple) = value.downcast::<PyTuple>() {
        // One (name, value) pair, or a tuple of definitions.
        if tuple.len() == 2 && tuple.iter().all(|i| i.is_instance_of::<PyString>()) {
            return Ok(vec![one(value)?]);
        }
    }
    if value.is_instance_of::<PyList>() || value.is_instance_of::<PyTuple>() {
        return value.try_iter()?.map(|item| one(&item?)).collect();
    }
    Err(PyTypeError::new_err(
        "ProgramOptions.define_macro takes a str, a (name, value) pair, or a list of them",
    ))
}

/// What the options give: cuda-core's options and what only an NVVM program uses.
#[derive(Clone, Default)]
pub(crate) struct Resolved {
    pub(crate) options: cuda_core::ProgramOptions,
    pub(crate) name: String,
    pub(crate) extra_sources: Vec<(String, Vec<u8>)>,
    pub(crate) use_libdevice: bool,
}

/// Applies one field's value (never None) to `out`.
fn apply(field: &str, value: &Bound<'_, PyAny>, out: &mut Resolved) -> PyResult<()> {
    let o = &mut out.options;
    match field {
        "name" => out.name = string(value, field)?,
        "arch" => {
            let arch = string(value, field)?;
            // cuda.core spells it "sm_90"; cuda-core takes "90" and picks the prefix by target.
            let bare = arch
                .strip_prefix("sm_")
                .or_else(|| arch.strip_prefix("compute_"))
                .unwrap_or(&arch);
            o.arch = Some(bare.to_owned());
        }
        "relocatable_device_code" => o.relocatable_device_code = flag(value)?,
        "extensible_whole_program" => o.extensible_whole_program = flag(value)?,
        "debug" => o.debug = flag(value)?,
        "lineinfo" => o.line_info = flag(value)?,
        "device_code_optimize" => o.device_code_optimize = flag(value)?,
        "ptxas_options" => o.ptxas_options = strings(value, field)?,
        "max_register_count" => {
            o.max_register_count = Some(value.extract::<u32>().map_err(|_| {
                PyValueError::new_err(format!(
                    "ProgramOptions.max_register_count takes a non-negative int, got {value}"
                ))
            })?)
        }
        "ftz" => o.ftz = Some(flag(value)?),
        "prec_sqrt" => o.prec_sqrt = Some(flag(value)?),
        "prec_div" => o.prec_div = Some(flag(value)?),
        "fma" => o.fmad = Some(flag(value)?),
        "use_fast_math" => o.fast_math = flag(value)?,
        "extra_device_vectorization" => o.extra_device_vectorization = flag(value)?,
        "link_time_optimization" => {
            if flag(value)? {
                o.extra.push("-dlto".to_owned());
            }
        }
        "gen_opt_lto" => o.gen_opt_lto = flag(value)?,
        "define_macro" => o.defines = defines(value)?,
        "undefine_macro" => o.undefines = strings(value, field)?,
        "include_path" => {
            o.include_paths = strings(value, field)?
                .into_iter()
                .map(PathBuf::from)
                .collect()
        }
        "use_bundled_headers" => o.toolkit_includes = flag(value)?,
        "pre_include" => o.pre_includes = strings(value, field)?,
        "no_source_include" => o.no_source_include = flag(value)?,
        "std" => o.std = Some(string(value, field)?),
        "builtin_move_forward" => o.builtin_move_forward = Some(flag(value)?),
        "builtin_initializer_list" => o.builtin_initializer_list = Some(flag(value)?),
        "disable_warnings" => o.disable_warnings = flag(value)?,
        "restrict" => o.restrict = flag(value)?,
        "device_as_default_execution_space" => o.device_as_default_execution_space = flag(value)?,
        "device_int128" => o.device_int128 = flag(value)?,
        "optimization_info" => o.optimization_info = Some(string(value, field)?),
        "no_display_error_number" => o.no_display_error_number = flag(value)?,
        "diag_error" => o.diag_error = numbers(value, field)?,
        "diag_suppress" => o.diag_suppress = numbers(value, field)?,
        "diag_warn" => o.diag_warn = numbers(value, field)?,
        "brief_diagnostics" => o
            .extra
            .push(format!("--brief-diagnostics={}", flag(value)?)),
        "time" => o.time = Some(path(value, field)?),
        "split_compile" => {
            o.split_compile = Some(value.extract::<u32>().map_err(|_| {
                PyValueError::new_err(format!(
                    "ProgramOptions.split_compile takes a non-negative int, got {value}"
                ))
            })?)
        }
        "minimal" => o.minimal = flag(value)?,
        "no_cache" => o.no_cache = flag(value)?,
        "fdevice_time_trace" => o.device_time_trace = Some(path(value, field)?),
        "device_float128" => {
            if flag(value)? {
                o.extra.push("-device-float128".to_owned());
            }
        }
        "frandom_seed" => o.random_seed = Some(string(value, field)?),
        "ofast_compile" => {
            let level = string(value, field)?;
            o.fast_compile = Some(match level.as_str() {
                "max" => cuda_core::FastCompile::Max,
                "mid" => cuda_core::FastCompile::Mid,
                "min" => cuda_core::FastCompile::Min,
                "0" => cuda_core::FastCompile::Off,
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "ProgramOptions.ofast_compile takes \"max\", \"mid\", \"min\" or \"0\", \
                         got {level:?}"
                    )))
                }
            });
        }
        "pch" => o.pch = flag(value)?,
        "create_pch" => o.create_pch = Some(path(value, field)?),
        "use_pch" => o.use_pch = Some(path(value, field)?),
        "pch_dir" => o.pch_dir = Some(path(value, field)?),
        "pch_verbose" => o.pch_verbose = Some(flag(value)?),
        "pch_messages" => o.pch_messages = Some(flag(value)?),
        "instantiate_templates_in_pch" => o.instantiate_templates_in_pch = Some(flag(value)?),
        "extra_sources" => {
            let mut sources = Vec::new();
            for item in value.try_iter()? {
                let item = item?;
                let (name, code): (String, Bound<'_, PyAny>) = item.extract().map_err(|_| {
                    PyTypeError::new_err(
                        "ProgramOptions.extra_sources takes (name, code) pairs, the code a str \
                         or bytes",
                    )
                })?;
                let code = match code.downcast::<PyString>() {
                    Ok(text) => text.to_cow()?.as_bytes().to_vec(),
                    Err(_) => bytes_of(&code)?,
                };
                sources.push((name, code));
            }
            out.extra_sources = sources;
        }
        "use_libdevice" => out.use_libdevice = flag(value)?,
        "numba_debug" => {
            if flag(value)? {
                o.extra.push("-numba-debug".to_owned());
            }
        }
        _ => {
            return Err(PyTypeError::new_err(format!(
                "ProgramOptions got an unexpected keyword argument '{field}'"
            )))
        }
    }
    Ok(())
}

/// Compiler options for a `Program`, as cuda.core's `ProgramOptions`: the same field names,
/// given as keywords (or positionally in cuda.core's order), each None by default.
///
/// `name` (default `"default_program"`) names the program and its code; `arch` is
/// `"sm_90"`-style (None: the current device's). Every cuda.core field is mapped onto
/// cuda-core's NVRTC options, but for `fdevice_syntax_only`, which raises
/// `NotImplementedError`: a syntax-only compile has no code to return. `extra_sources` and
/// `use_libdevice` apply to NVVM programs. The options are checked, and refused with
/// `TypeError` or `ValueError`, when the object is made; it is immutable afterwards.
#[pyclass(name = "ProgramOptions", module = "cudacore_rs", frozen)]
pub(crate) struct PyProgramOptions {
    /// The fields given (not None), by index in `FIELDS`.
    values: Vec<(usize, PyObject)>,
    pub(crate) resolved: Resolved,
}

impl PyProgramOptions {
    fn build(py: Python<'_>, values: Vec<(usize, PyObject)>) -> PyResult<PyProgramOptions> {
        let mut resolved = Resolved {
            name: "default_program".to_owned(),
            ..Resolved::default()
        };
        for (index, value) in &values {
            let field = FIELDS[*index];
            let value = value.bind(py);
            if let Some((_, why)) = UNSUPPORTED.iter().find(|(f, _)| *f == field) {
                if flag(value)? {
                    return Err(PyNotImplementedError::new_err(format!(
                        "ProgramOptions.{field} is not supported: {why}"
                    )));
                }
                continue;
            }
            apply(field, value, &mut resolved)?;
        }
        Ok(PyProgramOptions { values, resolved })
    }
}

#[pymethods]
impl PyProgramOptions {
    #[new]
    #[pyo3(signature = (*args, **kwargs))]
    fn new(
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        if args.len() > FIELDS.len() {
            return Err(PyTypeError::new_err(format!(
                "ProgramOptions takes at most {} positional arguments",
                FIELDS.len()
            )));
        }
        let mut values: Vec<(usize, PyObject)> = Vec::new();
        for (index, value) in args.iter().enumerate() {
            if !value.is_none() {
                values.push((index, value.unbind()));
            }
        }
        if let Some(kwargs) = kwargs {
            for (key, value) in kwargs.iter() {
                let key: String = key.extract()?;
                let Some(index) = FIELDS.iter().position(|f| *f == key) else {
                    return Err(PyTypeError::new_err(format!(
                        "ProgramOptions got an unexpected keyword argument '{key}'"
                    )));
                };
                if index < args.len() {
                    return Err(PyTypeError::new_err(format!(
                        "ProgramOptions got multiple values for argument '{key}'"
                    )));
                }
                if !value.is_none() {
                    values.push((index, value.unbind()));
                }
            }
        }
        values.sort_by_key(|(index, _)| *index);
        PyProgramOptions::build(py, values)
    }

    /// Each field: its value as given, or None (`name`: `"default_program"`).
    fn __getattr__(&self, py: Python<'_>, name: &str) -> PyResult<PyObject> {
        let Some(index) = FIELDS.iter().position(|f| *f == name) else {
            return Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "'ProgramOptions' object has no attribute {name:?}"
            )));
        };
        match self.values.iter().find(|(i, _)| *i == index) {
            Some((_, value)) => Ok(value.clone_ref(py)),
            None if name == "name" => Ok(self
                .resolved
                .name
                .clone()
                .into_pyobject(py)?
                .into_any()
                .unbind()),
            None => Ok(py.None()),
        }
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(other) = other.downcast::<PyProgramOptions>() else {
            return Ok(false);
        };
        let (a, b) = (&self.resolved, &other.get().resolved);
        Ok(a.options == b.options
            && a.name == b.name
            && a.extra_sources == b.extra_sources
            && a.use_libdevice == b.use_libdevice)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let mut parts = vec![format!("name={:?}", self.resolved.name)];
        for (index, value) in &self.values {
            if FIELDS[*index] != "name" {
                parts.push(format!("{}={}", FIELDS[*index], value.bind(py).repr()?));
            }
        }
        Ok(format!("ProgramOptions({})", parts.join(", ")))
    }
}

/// The options argument of `Program`: a `ProgramOptions`, a dict of its fields, or None.
fn options_arg(py: Python<'_>, options: Option<&Bound<'_, PyAny>>) -> PyResult<Resolved> {
    let Some(options) = options.filter(|o| !o.is_none()) else {
        return PyProgramOptions::build(py, Vec::new()).map(|o| o.resolved);
    };
    if let Ok(options) = options.downcast::<PyProgramOptions>() {
        return Ok(options.get().resolved.clone());
    }
    if let Ok(dict) = options.downcast::<PyDict>() {
        let made = py.get_type::<PyProgramOptions>().call((), Some(dict))?;
        return Ok(made.downcast::<PyProgramOptions>()?.get().resolved.clone());
    }
    Err(PyTypeError::new_err(format!(
        "options must be a ProgramOptions or a dict of its fields, not {}",
        options.get_type().name()?
    )))
}

// ---- Program ----------------------------------------------------------------------------------

/// A program to compile, as cuda.core's `Program(code, code_type, options=None)`:
/// `code_type` `"c++"` (CUDA C++ for NVRTC), `"ptx"` (PTX for the linker: nvJitLink, else the
/// driver's) or `"nvvm"` (NVVM IR for libNVVM; `code` may then be bytes).
///
/// `compile(target_type)` gives an `ObjectCode`: `"ptx"`, `"cubin"` or `"ltoir"` from C++,
/// `"cubin"` or `"ptx"` from PTX, `"ptx"`, `"cubin"` or `"ltoir"` from NVVM IR. The compiler
/// runs without the GIL; a failed compile raises `CUDAError` with the compiler's whole log in
/// its message. The compilers are found at run time (NVRTC: `CUDA_CORE_NVRTC_PATH`, the
/// loader's path, a toolkit, or the `nvidia-cuda-nvrtc` wheels). `close()` releases the
/// program; compiling a closed one raises `RuntimeError`.
#[pyclass(name = "Program", module = "cudacore_rs", frozen)]
pub(crate) struct PyProgram {
    program: Slot<Arc<cuda_core::Program>>,
    kind: cuda_core::ProgramKind,
    name: String,
}

#[pymethods]
impl PyProgram {
    #[new]
    #[pyo3(signature = (code, code_type, options = None))]
    fn new(
        py: Python<'_>,
        code: &Bound<'_, PyAny>,
        code_type: &str,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let kind = match code_type.to_ascii_lowercase().as_str() {
            "c++" => cuda_core::ProgramKind::Cxx,
            "ptx" => cuda_core::ProgramKind::Ptx,
            "nvvm" => cuda_core::ProgramKind::NvvmIr,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "code_type must be \"c++\", \"ptx\" or \"nvvm\", got {code_type:?}"
                )))
            }
        };
        let resolved = options_arg(py, options)?;
        let text = |what: &str| -> PyResult<String> {
            code.extract::<String>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "a {what} Program takes its code as a str, not {}",
                    code.get_type()
                        .name()
                        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
                ))
            })
        };
        if kind != cuda_core::ProgramKind::NvvmIr
            && (!resolved.extra_sources.is_empty() || resolved.use_libdevice)
        {
            return Err(PyValueError::new_err(
                "ProgramOptions.extra_sources and use_libdevice apply to \"nvvm\" programs only",
            ));
        }
        let program = match kind {
            cuda_core::ProgramKind::Cxx => cuda_core::Program::new(text("C++")?, resolved.options),
            cuda_core::ProgramKind::Ptx => {
                cuda_core::Program::from_ptx(text("PTX")?, resolved.options)
            }
            _ => {
                let ir = match code.downcast::<PyString>() {
                    Ok(s) => s.to_cow()?.as_bytes().to_vec(),
                    Err(_) => bytes_of(code)?,
                };
                let mut modules = vec![cuda_core::NvvmModule::new(resolved.name.clone(), ir)];
                for (name, ir) in &resolved.extra_sources {
                    modules.push(cuda_core::NvvmModule::new(name.clone(), ir.clone()));
                }
                if resolved.use_libdevice {
                    modules.push(cuda_core::NvvmModule::libdevice().or_py(py)?);
                }
                cuda_core::Program::from_nvvm(modules, resolved.options)
            }
        }
        .with_name(resolved.name.clone());
        Ok(PyProgram {
            program: Slot::new("Program", Arc::new(program)),
            kind,
            name: resolved.name,
        })
    }

    /// Compiles to `target_type` (`"ptx"`, `"cubin"` or `"ltoir"`) and returns the
    /// `ObjectCode`. `name_expressions` (a list or tuple of str, such as `"axpy<float>"`) are
    /// instantiated, and `get_kernel` then finds each kernel by its expression; `logs`, an
    /// object with a `write` method, receives the compiler's log where it wrote one. Runs
    /// without the GIL.
    #[pyo3(signature = (target_type, name_expressions = None, logs = None))]
    fn compile(
        &self,
        py: Python<'_>,
        target_type: &str,
        name_expressions: Option<&Bound<'_, PyAny>>,
        logs: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObjectCode> {
        let target = match target_type {
            "ptx" => CodeType::Ptx,
            "cubin" => CodeType::Cubin,
            "ltoir" => CodeType::LtoIr,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "target_type must be \"ptx\", \"cubin\" or \"ltoir\", got {target_type:?}"
                )))
            }
        };
        let expressions: Vec<String> = match name_expressions.filter(|n| !n.is_none()) {
            None => Vec::new(),
            Some(n) if n.is_instance_of::<PyList>() || n.is_instance_of::<PyTuple>() => n
                .try_iter()?
                .map(|e| {
                    e?.extract::<String>().map_err(|_| {
                        PyTypeError::new_err("name_expressions takes a list or tuple of str")
                    })
                })
                .collect::<PyResult<_>>()?,
            Some(_) => {
                return Err(PyTypeError::new_err(
                    "name_expressions takes a list or tuple of str",
                ))
            }
        };
        if let Some(logs) = logs.filter(|l| !l.is_none()) {
            if !logs.hasattr("write")? {
                return Err(PyTypeError::new_err(
                    "logs takes an object with a write method",
                ));
            }
        }
        let program = self.program.get()?;
        let code = py
            .allow_threads(|| {
                let refs: Vec<&str> = expressions.iter().map(String::as_str).collect();
                program.compile(target, &refs)
            })
            .or_py(py)?;
        if let Some(logs) = logs.filter(|l| !l.is_none()) {
            if !code.compile_log().is_empty() {
                logs.call_method1("write", (code.compile_log(),))?;
            }
        }
        Ok(PyObjectCode::wrap(code, self.name.clone(), None))
    }

    /// The compiler behind the program: `"NVRTC"`, `"NVVM"`, or for PTX the linker
    /// (`"nvJitLink"`, else `"driver"`).
    #[getter]
    fn backend(&self) -> &'static str {
        match self.kind {
            cuda_core::ProgramKind::Cxx => "NVRTC",
            cuda_core::ProgramKind::NvvmIr => "NVVM",
            _ => {
                if cuda_core::nvjitlink_version().is_ok() {
                    "nvJitLink"
                } else {
                    "driver"
                }
            }
        }
    }

    /// Releases the program. Closing twice is harmless.
    fn close(&self) {
        drop(self.program.take());
    }

    /// Whether the program is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.program.is_closed()
    }

    fn __repr__(&self) -> String {
        let kind = match self.kind {
            cuda_core::ProgramKind::Cxx => "c++",
            cuda_core::ProgramKind::Ptx => "ptx",
            _ => "nvvm",
        };
        if self.program.is_closed() {
            format!("<Program {:?} ({kind}, closed)>", self.name)
        } else {
            format!("<Program {:?} ({kind})>", self.name)
        }
    }
}

// ---- ObjectCode -------------------------------------------------------------------------------

/// Code to load on the device, as cuda.core's `ObjectCode`: made by `Program.compile` or by
/// `ObjectCode.from_cubin` / `from_ptx` / `from_fatbin` / `from_ltoir` / `from_library`, each
/// taking bytes (or any buffer-protocol object), a path (str), or another `ObjectCode`.
///
/// The code is loaded (`cuLibraryLoadData`) on the first `get_kernel`, and unloaded when the
/// object and every kernel taken from it are gone.
#[pyclass(name = "ObjectCode", module = "cudacore_rs", frozen)]
pub(crate) struct PyObjectCode {
    pub(crate) code: cuda_core::ObjectCode,
    /// The path it was read from, which `code` returns as cuda.core does.
    path: Option<String>,
    name: String,
    symbol_mapping: Vec<(String, String)>,
}

impl PyObjectCode {
    fn wrap(code: cuda_core::ObjectCode, name: String, path: Option<String>) -> PyObjectCode {
        let symbol_mapping = code.name_expressions().to_vec();
        PyObjectCode {
            code,
            path,
            name,
            symbol_mapping,
        }
    }

    fn from_module(
        py: Python<'_>,
        code_type: CodeType,
        module: &Bound<'_, PyAny>,
        name: Option<String>,
        symbol_mapping: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObjectCode> {
        let mapping: Vec<(String, String)> = match symbol_mapping {
            Some(map) => map
                .extract::<std::collections::HashMap<String, String>>()?
                .into_iter()
                .collect(),
            None => Vec::new(),
        };
        let (code, path, default_name) = if let Ok(other) = module.downcast::<PyObjectCode>() {
            let other = other.get();
            if other.code.code_type() != code_type {
                return Err(PyValueError::new_err(format!(
                    "this ObjectCode holds {}, not {}",
                    code_type_name(other.code.code_type()),
                    code_type_name(code_type)
                )));
            }
            (other.code.clone(), other.path.clone(), other.name.clone())
        } else if let Ok(path) = module.downcast::<PyString>() {
            let path = path.to_cow()?.into_owned();
            let bytes = py
                .allow_threads(|| std::fs::read(&path))
                .map_err(PyErr::from)?;
            let code = cuda_core::ObjectCode::from_bytes(code_type, bytes);
            (code, Some(path), String::new())
        } else {
            (
                cuda_core::ObjectCode::from_bytes(code_type, bytes_of(module)?),
                None,
                String::new(),
            )
        };
        let mut made = PyObjectCode::wrap(code, name.unwrap_or(default_name), path);
        if !mapping.is_empty() {
            made.symbol_mapping = mapping;
        }
        Ok(made)
    }
}

macro_rules! from_code {
    ($($fn_name:ident => $code_type:expr, $doc:literal;)*) => {
        #[pymethods]
        impl PyObjectCode {
            #[new]
            fn new() -> PyResult<Self> {
                Err(PyRuntimeError::new_err(
                    "ObjectCode objects cannot be made directly: use ObjectCode.from_cubin (or \
                     from_ptx, ...) or Program.compile",
                ))
            }

            $(
                #[doc = $doc]
                #[staticmethod]
                #[pyo3(signature = (module, *, name = None, symbol_mapping = None))]
                fn $fn_name(
                    py: Python<'_>,
                    module: &Bound<'_, PyAny>,
                    name: Option<String>,
                    symbol_mapping: Option<&Bound<'_, PyDict>>,
                ) -> PyResult<PyObjectCode> {
                    PyObjectCode::from_module(py, $code_type, module, name, symbol_mapping)
                }
            )*

            /// The kernel of this name: its symbol (an `extern "C"` name or a mangled one), a
            /// name expression given to `Program.compile`, or a key of `symbol_mapping`. A
            /// name the code does not have raises (`ValueError` where the driver lists the
            /// code's kernels, before any lookup; else `CUDAError`).
            fn get_kernel(&self, py: Python<'_>, name: &Bound<'_, PyAny>) -> PyResult<PyKernel> {
                let name: String = match name.downcast::<PyBytes>() {
                    Ok(bytes) => String::from_utf8(bytes.as_bytes().to_vec())
                        .map_err(|_| PyValueError::new_err("a kernel name must be UTF-8"))?,
                    Err(_) => name.extract().map_err(|_| {
                        PyTypeError::new_err("get_kernel() takes the kernel's name, a str")
                    })?,
                };
                let symbol = self
                    .symbol_mapping
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map_or(name.as_str(), |(_, v)| v.as_str());
                let kernel = self.code.get_kernel(symbol).or_py(py)?;
                Ok(PyKernel::wrap(kernel))
            }

            /// The code: the path it was read from where it was given one (as cuda.core),
            /// else its bytes.
            #[getter]
            fn code(&self, py: Python<'_>) -> PyResult<PyObject> {
                match &self.path {
                    Some(path) => Ok(path.clone().into_pyobject(py)?.into_any().unbind()),
                    None => Ok(PyBytes::new(py, self.code.code()).into_any().unbind()),
                }
            }

            /// The code type: `"cubin"`, `"ptx"`, `"fatbin"`, `"ltoir"` or `"library"`.
            #[getter]
            fn code_type(&self) -> &'static str {
                code_type_name(self.code.code_type())
            }

            /// The name: the program's for compiled code, else the one given (default "").
            #[getter]
            fn name(&self) -> &str {
                &self.name
            }

            /// Name expressions (or given names) and the symbols they stand for, a new dict.
            #[getter]
            fn symbol_mapping<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                let dict = PyDict::new(py);
                for (k, v) in &self.symbol_mapping {
                    dict.set_item(k, v)?;
                }
                Ok(dict)
            }

            fn __repr__(&self) -> String {
                format!(
                    "<ObjectCode {} {:?} ({} bytes)>",
                    code_type_name(self.code.code_type()),
                    self.name,
                    self.code.code().len()
                )
            }
        }
    };
}

from_code! {
    from_cubin => CodeType::Cubin,
        "An ObjectCode of a cubin: bytes, a path (str), or an ObjectCode of a cubin.";
    from_ptx => CodeType::Ptx,
        "An ObjectCode of PTX (compiled by the driver's JIT on load): bytes, a path (str), or an ObjectCode of PTX.";
    from_fatbin => CodeType::Fatbin,
        "An ObjectCode of a fat binary: bytes, a path (str), or an ObjectCode of a fatbin.";
    from_ltoir => CodeType::LtoIr,
        "An ObjectCode of LTO-IR (to link, not to load): bytes, a path (str), or an ObjectCode of LTO-IR.";
    from_library => CodeType::Library,
        "An ObjectCode of a static library (a linker input): bytes, a path (str), or an ObjectCode of one.";
}

// ---- Kernel -----------------------------------------------------------------------------------

/// A kernel of an `ObjectCode`, as cuda.core's `Kernel`: made by `ObjectCode.get_kernel`, and
/// launched with `launch`. It keeps its code loaded.
#[pyclass(name = "Kernel", module = "cudacore_rs", frozen)]
pub(crate) struct PyKernel {
    pub(crate) kernel: cuda_core::Kernel,
    attributes: GILOnceCell<Py<PyKernelAttributes>>,
    occupancy: GILOnceCell<Py<PyKernelOccupancy>>,
}

impl PyKernel {
    fn wrap(kernel: cuda_core::Kernel) -> PyKernel {
        PyKernel {
            kernel,
            attributes: GILOnceCell::new(),
            occupancy: GILOnceCell::new(),
        }
    }

    fn params(&self, py: Python<'_>) -> PyResult<&[cuda_core::ParamInfo]> {
        match self.kernel.params() {
            Ok(params) => Ok(params),
            Err(cuda_core::Error::NotSupported { .. }) => Err(PyNotImplementedError::new_err(
                "the driver cannot describe kernel parameters: CUDA 12.4 or newer is needed",
            )),
            Err(e) => Err(to_py(py, e)),
        }
    }
}

#[pymethods]
impl PyKernel {
    #[new]
    fn new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "Kernel objects cannot be made directly: use ObjectCode.get_kernel()",
        ))
    }

    /// The kernel's attributes (`KernelAttributes`), the same object each time.
    #[getter]
    fn attributes(&self, py: Python<'_>) -> PyResult<Py<PyKernelAttributes>> {
        self.attributes
            .get_or_try_init(py, || {
                Py::new(
                    py,
                    PyKernelAttributes {
                        kernel: self.kernel.clone(),
                    },
                )
            })
            .map(|a| a.clone_ref(py))
    }

    /// The occupancy queries (`KernelOccupancy`), the same object each time.
    #[getter]
    fn occupancy(&self, py: Python<'_>) -> PyResult<Py<PyKernelOccupancy>> {
        self.occupancy
            .get_or_try_init(py, || {
                Py::new(
                    py,
                    PyKernelOccupancy {
                        kernel: self.kernel.clone(),
                    },
                )
            })
            .map(|a| a.clone_ref(py))
    }

    /// The number of the kernel's parameters (CUDA 12.4 and newer drivers; older ones raise
    /// `NotImplementedError`).
    #[getter]
    fn num_arguments(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.params(py)?.len())
    }

    /// Each parameter's `ParamInfo(offset, size)`, in order (CUDA 12.4 and newer drivers).
    #[getter]
    fn arguments_info<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        static PARAM_INFO: GILOnceCell<PyObject> = GILOnceCell::new();
        let params = self.params(py)?;
        let make = named_tuple(py, &PARAM_INFO, "ParamInfo", &["offset", "size"])?;
        params
            .iter()
            .map(|p| make.call1((p.offset, p.size)))
            .collect()
    }

    /// The raw `CUkernel` handle, as an int.
    #[getter]
    fn handle(&self) -> usize {
        self.kernel.as_raw() as usize
    }

    fn __repr__(&self) -> String {
        format!("<Kernel {}>", self.kernel.name())
    }
}

/// `CU_FUNC_ATTRIBUTE_*` values of a kernel, as cuda.core's `KernelAttributes`: each a method
/// taking an optional `device_id` (a `Device`, an ordinal, or None for the current device).
#[pyclass(name = "KernelAttributes", module = "cudacore_rs", frozen)]
pub(crate) struct PyKernelAttributes {
    kernel: cuda_core::Kernel,
}

impl PyKernelAttributes {
    fn read(
        &self,
        py: Python<'_>,
        device: Option<&Bound<'_, PyAny>>,
        attribute: KernelAttribute,
    ) -> PyResult<i32> {
        let device = device_arg(py, device)?;
        self.kernel.attribute(device, attribute).or_py(py)
    }
}

macro_rules! kernel_attributes {
    ($($name:ident: $attribute:ident -> $ty:ident, $doc:literal;)*) => {
        #[pymethods]
        impl PyKernelAttributes {
            #[new]
            fn new() -> PyResult<Self> {
                Err(PyRuntimeError::new_err(
                    "KernelAttributes cannot be made directly: use Kernel.attributes",
                ))
            }

            $(
                #[doc = $doc]
                #[pyo3(signature = (device_id = None))]
                fn $name(&self, py: Python<'_>, device_id: Option<&Bound<'_, PyAny>>) -> PyResult<$ty> {
                    let value = self.read(py, device_id, KernelAttribute::$attribute)?;
                    Ok(kernel_attributes!(@as $ty value))
                }
            )*

            fn __repr__(&self) -> String {
                format!("<KernelAttributes of {}>", self.kernel.name())
            }
        }
    };
    (@as i32 $v:ident) => { $v };
    (@as bool $v:ident) => { $v != 0 };
}

kernel_attributes! {
    max_threads_per_block: MaxThreadsPerBlock -> i32, "The most threads a block may have.";
    shared_size_bytes: SharedSizeBytes -> i32, "Static shared memory per block, in bytes.";
    const_size_bytes: ConstSizeBytes -> i32, "Constant memory, in bytes.";
    local_size_bytes: LocalSizeBytes -> i32, "Local memory per thread, in bytes.";
    num_regs: NumRegs -> i32, "Registers per thread.";
    ptx_version: PtxVersion -> i32, "The PTX virtual architecture, major * 10 + minor.";
    binary_version: BinaryVersion -> i32, "The binary architecture, major * 10 + minor.";
    cache_mode_ca: CacheModeCa -> bool, "Whether it was compiled with -Xptxas --dlcm=ca.";
    max_dynamic_shared_size_bytes: MaxDynamicSharedSizeBytes -> i32,
        "The dynamic shared memory a launch may ask for, in bytes.";
    preferred_shared_memory_carveout: PreferredSharedMemoryCarveout -> i32,
        "The preferred shared memory carveout, in percent (-1: none).";
    cluster_size_must_be_set: ClusterSizeMustBeSet -> bool,
        "Whether launches must give a cluster shape.";
    required_cluster_width: RequiredClusterWidth -> i32, "The required cluster width (0: none).";
    required_cluster_height: RequiredClusterHeight -> i32, "The required cluster height (0: none).";
    required_cluster_depth: RequiredClusterDepth -> i32, "The required cluster depth (0: none).";
    non_portable_cluster_size_allowed: NonPortableClusterSizeAllowed -> bool,
        "Whether clusters larger than the portable 8 blocks are allowed.";
    cluster_scheduling_policy_preference: ClusterSchedulingPolicyPreference -> i32,
        "The cluster scheduling policy preference.";
}

/// Occupancy queries of a kernel, as cuda.core's `KernelOccupancy`, on the current device
/// (or, for the cluster queries, the stream's).
#[pyclass(name = "KernelOccupancy", module = "cudacore_rs", frozen)]
pub(crate) struct PyKernelOccupancy {
    kernel: cuda_core::Kernel,
}

/// The stream a cluster query names, or the current device's default stream.
fn stream_or_default(
    py: Python<'_>,
    stream: Option<&Bound<'_, PyAny>>,
) -> PyResult<cuda_core::Stream> {
    match stream.filter(|s| !s.is_none()) {
        Some(stream) => crate::memory::stream_arg(stream, "a cluster query"),
        None => cuda_core::Device::current()
            .and_then(|d| d.default_stream())
            .or_py(py),
    }
}

fn config_arg<'a>(config: &'a Bound<'_, PyAny>) -> PyResult<&'a PyLaunchConfig> {
    config
        .downcast::<PyLaunchConfig>()
        .map(|c| c.get())
        .map_err(|_| PyTypeError::new_err("config takes a LaunchConfig"))
}

#[pymethods]
impl PyKernelOccupancy {
    #[new]
    fn new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "KernelOccupancy cannot be made directly: use Kernel.occupancy",
        ))
    }

    /// How many blocks of `block_size` threads, each with `dynamic_shared_memory_size` bytes
    /// of dynamic shared memory, can be resident on one multiprocessor of the current device.
    fn max_active_blocks_per_multiprocessor(
        &self,
        py: Python<'_>,
        block_size: i64,
        dynamic_shared_memory_size: i64,
    ) -> PyResult<u32> {
        let block = count_arg(block_size, "block_size")?;
        let shared = count_arg(dynamic_shared_memory_size, "dynamic_shared_memory_size")?;
        let device = cuda_core::Device::current().or_py(py)?;
        self.kernel
            .max_active_blocks_per_sm(device, block, shared as usize)
            .or_py(py)
    }

    /// The block size that reaches the highest occupancy on the current device, and the least
    /// grid that reaches it: `MaxPotential(min_grid_size, max_block_size)`. Takes the dynamic
    /// shared memory per block as an int (a per-block-size callable is not supported) and a
    /// block size limit (0: none).
    fn max_potential_block_size<'py>(
        &self,
        py: Python<'py>,
        dynamic_shared_memory_needed: &Bound<'py, PyAny>,
        block_size_limit: i64,
    ) -> PyResult<Bound<'py, PyAny>> {
        static MAX_POTENTIAL: GILOnceCell<PyObject> = GILOnceCell::new();
        if dynamic_shared_memory_needed.is_instance_of::<PyBool>()
            || !dynamic_shared_memory_needed.is_instance_of::<PyInt>()
        {
            return Err(PyTypeError::new_err(
                "dynamic_shared_memory_needed takes an int (a callable is not supported)",
            ));
        }
        let shared = count_arg(
            dynamic_shared_memory_needed.extract()?,
            "dynamic_shared_memory_needed",
        )?;
        let limit = count_arg(block_size_limit, "block_size_limit")?;
        let device = cuda_core::Device::current().or_py(py)?;
        let (grid, block) = self
            .kernel
            .max_potential_block_size(device, shared as usize, limit)
            .or_py(py)?;
        let make = named_tuple(
            py,
            &MAX_POTENTIAL,
            "MaxPotential",
            &["min_grid_size", "max_block_size"],
        )?;
        make.call1((grid, block))
    }

    /// The dynamic shared memory each block can have when `num_blocks_per_multiprocessor`
    /// blocks of `block_size` threads share a multiprocessor of the current device.
    fn available_dynamic_shared_memory_per_block(
        &self,
        py: Python<'_>,
        num_blocks_per_multiprocessor: i64,
        block_size: i64,
    ) -> PyResult<usize> {
        let blocks = count_arg(
            num_blocks_per_multiprocessor,
            "num_blocks_per_multiprocessor",
        )?;
        let block = count_arg(block_size, "block_size")?;
        let device = cuda_core::Device::current().or_py(py)?;
        self.kernel
            .available_dynamic_shared_memory(device, blocks, block)
            .or_py(py)
    }

    /// The largest cluster a launch of `config` could use on `stream`'s device (the current
    /// device's when None); the cluster shape in `config` is not read.
    #[pyo3(signature = (config, stream = None))]
    fn max_potential_cluster_size(
        &self,
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u32> {
        let config = config_arg(config)?;
        let stream = stream_or_default(py, stream)?;
        self.kernel
            .max_potential_cluster_size(&config.config, &stream)
            .or_py(py)
    }

    /// How many clusters of `config`'s shape (which must have a cluster) can be resident at
    /// once on `stream`'s device (the current device's when None).
    #[pyo3(signature = (config, stream = None))]
    fn max_active_clusters(
        &self,
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        stream: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u32> {
        let config = config_arg(config)?;
        let stream = stream_or_default(py, stream)?;
        self.kernel
            .max_active_clusters(&config.config, &stream)
            .or_py(py)
    }

    fn __repr__(&self) -> String {
        format!("<KernelOccupancy of {}>", self.kernel.name())
    }
}

/// Adds the classes to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyProgramOptions>()?;
    module.add_class::<PyProgram>()?;
    module.add_class::<PyObjectCode>()?;
    module.add_class::<PyKernel>()?;
    module.add_class::<PyKernelAttributes>()?;
    module.add_class::<PyKernelOccupancy>()?;
    Ok(())
}
