//! `LaunchConfig` and `launch`, with the conversion of Python values into kernel arguments.
//!
//! The conversion reads each argument against the kernel's own parameter sizes
//! (`cuKernelGetParamInfo`, read once per kernel by cuda-core): a Python int becomes an integer
//! of the parameter's width, a float an `f32` or `f64`, a `Buffer` its device address (passed
//! as cuda-core's `&Buffer`, so that the launch keeps the buffer in stream order), and anything
//! with the buffer protocol (NumPy scalars, ctypes values, bytes) its bytes. Up to
//! [`INLINE`] arguments take no heap allocation.

use std::sync::MutexGuard;

use crate::errors::*;
use crate::memory::PyBuffer;
use crate::program::PyKernel;
use crate::stream::PyStream;
use cuda_core::KernelArg;
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyMemoryView, PyTuple};

/// Arguments converted without a heap allocation (the same bound as cuda-core's launch).
const INLINE: usize = 16;

/// The largest parameter taken as raw bytes (a NumPy structured scalar, a ctypes struct).
const MAX_BYTES: usize = 64;

/// Reads `grid`, `block` or `cluster`: an int or a tuple of 1 to 3 ints, each at least 1;
/// missing dimensions are 1.
fn dims(value: &Bound<'_, PyAny>, what: &str) -> PyResult<[u32; 3]> {
    let one = |item: &Bound<'_, PyAny>| -> PyResult<u32> {
        if item.is_instance_of::<PyBool>() || !item.is_instance_of::<PyInt>() {
            return Err(PyTypeError::new_err(format!(
                "LaunchConfig.{what} takes ints (or a tuple of 1 to 3 ints), got {}",
                item.get_type().name()?
            )));
        }
        match item.extract::<i64>() {
            Ok(v) if (1..=i64::from(u32::MAX)).contains(&v) => Ok(v as u32),
            _ => Err(PyValueError::new_err(format!(
                "LaunchConfig.{what} dimensions must be within [1, {}], got {item}",
                u32::MAX
            ))),
        }
    };
    if let Ok(tuple) = value.downcast::<PyTuple>() {
        if tuple.is_empty() || tuple.len() > 3 {
            return Err(PyValueError::new_err(format!(
                "LaunchConfig.{what} takes 1 to 3 dimensions, got {}",
                tuple.len()
            )));
        }
        let mut out = [1u32; 3];
        for (slot, item) in out.iter_mut().zip(tuple.iter()) {
            *slot = one(&item)?;
        }
        return Ok(out);
    }
    Ok([one(value)?, 1, 1])
}

/// How a kernel is launched, as cuda.core's `LaunchConfig`: `grid` and `block` (an int or a
/// tuple of 1 to 3 ints, each at least 1), an optional thread-block `cluster` (compute
/// capability 9.0 and newer), `shmem_size` bytes of dynamic shared memory per block, and
/// whether the launch is cooperative (`cooperative_launch`, also accepted as
/// `is_cooperative`).
///
/// As in cuda.core, when `cluster` is given, `grid` counts clusters, not blocks: the launch
/// has `grid[i] * cluster[i]` blocks along each dimension. Bad values raise `TypeError` or
/// `ValueError` here, before any driver call. The object is immutable.
#[pyclass(name = "LaunchConfig", module = "cudacore_rs", frozen)]
pub(crate) struct PyLaunchConfig {
    /// As given (clusters where `cluster` is set), for the getters.
    grid: [u32; 3],
    block: [u32; 3],
    cluster: Option<[u32; 3]>,
    shmem_size: u32,
    cooperative: bool,
    /// cuda-core's configuration: its grid counts blocks.
    pub(crate) config: cuda_core::LaunchConfig,
}

fn tuple3(py: Python<'_>, d: [u32; 3]) -> PyResult<Bound<'_, PyTuple>> {
    PyTuple::new(py, d)
}

#[pymethods]
impl PyLaunchConfig {
    #[new]
    #[pyo3(signature = (grid = None, cluster = None, block = None, shmem_size = None,
                        cooperative_launch = None, *, is_cooperative = None))]
    pub(crate) fn new(
        grid: Option<&Bound<'_, PyAny>>,
        cluster: Option<&Bound<'_, PyAny>>,
        block: Option<&Bound<'_, PyAny>>,
        shmem_size: Option<&Bound<'_, PyAny>>,
        cooperative_launch: Option<bool>,
        is_cooperative: Option<bool>,
    ) -> PyResult<Self> {
        let required = |v: Option<&Bound<'_, PyAny>>, what: &str| -> PyResult<[u32; 3]> {
            match v.filter(|v| !v.is_none()) {
                Some(v) => dims(v, what),
                None => Err(PyValueError::new_err(format!(
                    "LaunchConfig needs {what}= (an int or a tuple of 1 to 3 ints)"
                ))),
            }
        };
        let grid = required(grid, "grid")?;
        let block = required(block, "block")?;
        let cluster = match cluster.filter(|c| !c.is_none()) {
            Some(c) => Some(dims(c, "cluster")?),
            None => None,
        };
        let shmem_size = match shmem_size.filter(|s| !s.is_none()) {
            None => 0,
            Some(s) if s.is_instance_of::<PyInt>() && !s.is_instance_of::<PyBool>() => {
                s.extract::<u32>().map_err(|_| {
                    PyValueError::new_err(format!(
                        "LaunchConfig.shmem_size must be within [0, {}] bytes, got {s}",
                        u32::MAX
                    ))
                })?
            }
            Some(s) => {
                return Err(PyTypeError::new_err(format!(
                    "LaunchConfig.shmem_size takes an int, got {}",
                    s.get_type().name()?
                )))
            }
        };
        let cooperative =
            match (cooperative_launch, is_cooperative) {
                (Some(a), Some(b)) if a != b => return Err(PyValueError::new_err(
                    "LaunchConfig got cooperative_launch and is_cooperative with different values",
                )),
                (a, b) => a.or(b).unwrap_or(false),
            };
        // cuda-core counts blocks: a grid of clusters becomes grid * cluster blocks.
        let blocks = match cluster {
            None => grid,
            Some(c) => {
                let mut blocks = [0u32; 3];
                for i in 0..3 {
                    blocks[i] = grid[i].checked_mul(c[i]).ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "LaunchConfig: grid {grid:?} of clusters {c:?} is more than {} \
                             blocks along a dimension",
                            u32::MAX
                        ))
                    })?;
                }
                blocks
            }
        };
        let mut config = cuda_core::LaunchConfig::new(blocks, block);
        config.cluster = cluster;
        config.shared_memory_bytes = shmem_size;
        config.cooperative = cooperative;
        Ok(PyLaunchConfig {
            grid,
            block,
            cluster,
            shmem_size,
            cooperative,
            config,
        })
    }

    /// The grid, a 3-tuple: blocks, or clusters where `cluster` is set.
    #[getter]
    fn grid<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        tuple3(py, self.grid)
    }

    /// The block's threads, a 3-tuple.
    #[getter]
    fn block<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        tuple3(py, self.block)
    }

    /// The cluster's blocks, a 3-tuple, or None.
    #[getter]
    fn cluster<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        self.cluster.map(|c| tuple3(py, c)).transpose()
    }

    /// Dynamic shared memory per block, in bytes.
    #[getter]
    fn shmem_size(&self) -> u32 {
        self.shmem_size
    }

    /// Whether the launch is cooperative.
    #[getter]
    fn cooperative_launch(&self) -> bool {
        self.cooperative
    }

    /// Whether the launch is cooperative (the same as `cooperative_launch`).
    #[getter]
    fn is_cooperative(&self) -> bool {
        self.cooperative
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<PyLaunchConfig>()
            .is_ok_and(|o| o.get().config == self.config && o.get().grid == self.grid)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (self.grid, self.config).hash(&mut h);
        h.finish()
    }

    fn __repr__(&self) -> String {
        let t = |d: [u32; 3]| format!("({}, {}, {})", d[0], d[1], d[2]);
        format!(
            "LaunchConfig(grid={}, cluster={}, block={}, shmem_size={}, cooperative_launch={})",
            t(self.grid),
            self.cluster.map_or_else(|| "None".to_owned(), t),
            t(self.block),
            self.shmem_size,
            crate::options::py_bool(self.cooperative)
        )
    }
}

/// One argument, converted: the value itself, or the buffer it names.
#[derive(Clone, Copy)]
enum Arg<'a> {
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    /// Raw bytes (the first `len` of them), from the buffer protocol.
    Bytes([u8; MAX_BYTES], u8),
    /// A buffer: the launch passes cuda-core's `&Buffer` (its address, in stream order).
    Buffer(&'a PyBuffer),
}

const EMPTY: Arg<'static> = Arg::U8(0);

fn wrong(index: usize, message: String) -> PyErr {
    PyTypeError::new_err(format!("launch(): argument {index}: {message}"))
}

/// An int as an integer of `size` bytes: within the signed or the unsigned range of that
/// width (two's complement), else `OverflowError`.
fn int_arg(value: &Bound<'_, PyAny>, size: usize, index: usize) -> PyResult<Arg<'static>> {
    let bits = size * 8;
    let fits = |v: i128| -> bool {
        let min = -(1i128 << (bits - 1));
        let max = (1i128 << bits) - 1;
        (min..=max).contains(&v)
    };
    let v: i128 = match value.extract::<i64>() {
        Ok(v) => i128::from(v),
        Err(_) => match value.extract::<u64>() {
            Ok(v) => i128::from(v),
            Err(_) => i128::MAX,
        },
    };
    if !matches!(size, 1 | 2 | 4 | 8) {
        return Err(wrong(
            index,
            format!("an int cannot fill a parameter of {size} bytes (1, 2, 4 or 8)"),
        ));
    }
    if !fits(v) {
        return Err(PyOverflowError::new_err(format!(
            "launch(): argument {index}: {value} does not fit the kernel's {size}-byte integer \
             parameter"
        )));
    }
    // Truncation keeps the two's-complement bits of a negative value.
    Ok(match size {
        1 => Arg::U8(v as u8),
        2 => Arg::U16(v as u16),
        4 => Arg::U32(v as u32),
        _ => Arg::U64(v as u64),
    })
}

/// Converts argument `index` for a parameter of `size` bytes (`None`: the driver cannot say,
/// so the value's natural size: 8 bytes for an int or a float, as cuda.core passes them).
fn convert<'a>(
    py: Python<'_>,
    value: &'a Bound<'_, PyAny>,
    size: Option<usize>,
    index: usize,
) -> PyResult<Arg<'a>> {
    if let Ok(buffer) = value.downcast::<PyBuffer>() {
        if let Some(size) = size.filter(|&s| s != 8) {
            return Err(wrong(
                index,
                format!("a Buffer is an 8-byte address; the kernel's parameter is {size} bytes"),
            ));
        }
        return Ok(Arg::Buffer(buffer.get()));
    }
    if value.is_instance_of::<PyInt>() {
        // bool is an int: 0 or 1, at the parameter's width.
        return int_arg(value, size.unwrap_or(8), index);
    }
    if value.is_exact_instance_of::<PyFloat>() || value.is_instance_of::<PyFloat>() {
        let v: f64 = value.extract()?;
        return match size.unwrap_or(8) {
            // As C's float conversion: rounded to the nearest f32.
            4 => Ok(Arg::F32(v as f32)),
            8 => Ok(Arg::F64(v)),
            size => Err(wrong(
                index,
                format!("a float fills a 4- or 8-byte parameter, not one of {size} bytes"),
            )),
        };
    }
    // Anything with the buffer protocol: its bytes, as they are.
    let view =
        PyMemoryView::from(value).map_err(|_| {
            wrong(
                index,
                format!(
                "{} is not a kernel argument (a Buffer, an int, a float, or an object with the \
                 buffer protocol such as a NumPy scalar or a ctypes value)",
                value.get_type().name().map_or_else(|_| "?".to_owned(), |n| n.to_string())
            ),
            )
        })?;
    let bytes = view.call_method0(pyo3::intern!(py, "tobytes"))?;
    let bytes = bytes.downcast::<PyBytes>()?.as_bytes();
    if let Some(size) = size {
        if bytes.len() != size {
            return Err(wrong(
                index,
                format!(
                    "{} bytes ({}); the kernel's parameter is {size} bytes",
                    bytes.len(),
                    value.get_type().name()?
                ),
            ));
        }
    }
    if bytes.is_empty() || bytes.len() > MAX_BYTES {
        return Err(wrong(
            index,
            format!(
                "{} bytes: arguments of 1 to {MAX_BYTES} bytes are supported",
                bytes.len()
            ),
        ));
    }
    let mut data = [0u8; MAX_BYTES];
    data[..bytes.len()].copy_from_slice(bytes);
    Ok(Arg::Bytes(data, bytes.len() as u8))
}

/// `data[..len]` as a kernel argument of exactly `len` bytes (a `[u8; len]`).
fn bytes_arg(data: &[u8; MAX_BYTES], len: u8) -> Option<&dyn KernelArg> {
    macro_rules! sizes {
        ($($n:literal)*) => {
            match len {
                $($n => <&[u8; $n]>::try_from(&data[..$n]).ok().map(|a| a as &dyn KernelArg),)*
                _ => None,
            }
        };
    }
    sizes!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
           32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59
           60 61 62 63 64)
}

type Guard<'a> = MutexGuard<'a, Option<std::sync::Arc<cuda_core::Buffer>>>;

/// Locks the distinct buffers among `args`, in address order (so that two launches naming the
/// same buffers in another order cannot deadlock; a buffer named twice is locked once), into
/// `guards`, and returns how many it locked. A closed buffer is `RuntimeError`.
fn lock_buffers<'a>(
    args: &[Arg<'a>],
    order: &mut [Option<&'a PyBuffer>],
    guards: &mut [Option<(&'a PyBuffer, Guard<'a>)>],
) -> PyResult<usize> {
    let mut count = 0;
    for arg in args {
        if let Arg::Buffer(b) = arg {
            if !order[..count]
                .iter()
                .flatten()
                .any(|o| std::ptr::eq(*o, *b))
            {
                order[count] = Some(*b);
                count += 1;
            }
        }
    }
    let order = &mut order[..count];
    order.sort_unstable_by_key(|b| b.map_or(0, |b| b as *const PyBuffer as usize));
    for (slot, buffer) in guards.iter_mut().zip(order.iter().flatten()) {
        let guard = buffer.buffer.lock();
        if guard.is_none() {
            return Err(buffer.buffer.closed_error());
        }
        *slot = Some((*buffer, guard));
    }
    Ok(count)
}

/// The kernel arguments of `args`, each a reference into `args` or into a locked buffer.
fn fill_refs<'r>(
    args: &'r [Arg<'_>],
    guards: &'r [Option<(&PyBuffer, Guard<'_>)>],
    refs: &mut [&'r dyn KernelArg],
) -> PyResult<()> {
    for (index, (slot, arg)) in refs.iter_mut().zip(args).enumerate() {
        *slot = match arg {
            Arg::U8(v) => v,
            Arg::U16(v) => v,
            Arg::U32(v) => v,
            Arg::U64(v) => v,
            Arg::F32(v) => v,
            Arg::F64(v) => v,
            Arg::Bytes(data, len) => bytes_arg(data, *len)
                .ok_or_else(|| wrong(index, format!("{len} bytes is not a supported size")))?,
            Arg::Buffer(b) => guards
                .iter()
                .flatten()
                .find(|(held, _)| std::ptr::eq(*held, *b))
                .and_then(|(_, guard)| guard.as_ref())
                .map(|buffer| &**buffer as &dyn KernelArg)
                .ok_or_else(|| b.buffer.closed_error())?,
        };
    }
    Ok(())
}

/// Launches `kernel` on `stream` with `config` and the arguments, as cuda.core's `launch`.
///
/// `stream` is a `Stream`; `config` a `LaunchConfig`; `kernel` a `Kernel` (from
/// `ObjectCode.get_kernel`). Each argument is converted for the kernel's own parameter of the
/// same position, whose sizes the driver gives (CUDA 12.4 and newer):
///
/// - a `Buffer`: its device address (an 8-byte pointer parameter); the launch keeps the
///   buffer in stream order (where it is freed on another stream, that stream waits for the
///   kernel);
/// - an int: an integer of the parameter's width (1, 2, 4 or 8 bytes), within its signed or
///   unsigned range (`OverflowError` otherwise); a bool is 0 or 1;
/// - a float: a C `float` for a 4-byte parameter, a `double` for an 8-byte one;
/// - anything with the buffer protocol (a NumPy scalar, a ctypes value, bytes): its bytes,
///   which must be as many as the parameter's (1 to 64).
///
/// A wrong number of arguments, or one that does not fit its parameter, raises `TypeError`
/// naming the argument, before any driver call. Where the driver cannot describe the
/// parameters (older than 12.4), each value goes at its natural size, as cuda.core passes it:
/// an int or a bool as 8 bytes, a float as a `double`, buffer-protocol objects as their bytes;
/// the caller must then match the kernel's parameters exactly.
///
/// Unsafe in the CUDA sense, as in cuda.core: an int passed for a pointer parameter is used as
/// a raw device address, and the kernel may read or write any memory its arguments let it
/// reach. A kernel that faults raises `CUDAError` (at this launch or a later call on the
/// context), never a crash of the interpreter; the memory it reaches is the caller's
/// responsibility.
#[pyfunction]
#[pyo3(signature = (stream, config, kernel, *args))]
pub(crate) fn launch(
    py: Python<'_>,
    stream: &Bound<'_, PyAny>,
    config: &Bound<'_, PyAny>,
    kernel: &Bound<'_, PyAny>,
    args: &Bound<'_, PyTuple>,
) -> PyResult<()> {
    let stream = match stream.downcast::<PyStream>() {
        Ok(stream) => stream.get().get()?,
        Err(_) => {
            return Err(PyTypeError::new_err(format!(
                "launch() takes a Stream first, not {}",
                stream.get_type().name()?
            )))
        }
    };
    let config = config.downcast::<PyLaunchConfig>().map_err(|_| {
        PyTypeError::new_err("launch() takes a LaunchConfig second (LaunchConfig(grid=, block=))")
    })?;
    let kernel = kernel.downcast::<PyKernel>().map_err(|_| {
        PyTypeError::new_err("launch() takes a Kernel third (ObjectCode.get_kernel)")
    })?;
    let kernel = &kernel.get().kernel;
    let params = match kernel.params() {
        Ok(params) => Some(params),
        // Drivers before 12.4 cannot describe parameters: natural sizes, unchecked.
        Err(cuda_core::Error::NotSupported { .. }) => None,
        Err(e) => return Err(to_py(py, e)),
    };
    let count = args.len();
    if let Some(params) = params {
        if params.len() != count {
            return Err(PyTypeError::new_err(format!(
                "launch(): {} takes {} argument(s), {count} given",
                kernel.name(),
                params.len()
            )));
        }
    }
    if count <= INLINE {
        let mut items: [Option<Bound<'_, PyAny>>; INLINE] = Default::default();
        for (slot, item) in items.iter_mut().zip(args.iter()) {
            *slot = Some(item);
        }
        run_inline(py, &stream, config.get(), kernel, params, &items[..count])
    } else {
        let items: Vec<Bound<'_, PyAny>> = args.iter().collect();
        run_spilled(py, &stream, config.get(), kernel, params, &items)
    }
}

/// The launch of up to [`INLINE`] arguments, on the stack.
fn run_inline(
    py: Python<'_>,
    stream: &cuda_core::Stream,
    config: &PyLaunchConfig,
    kernel: &cuda_core::Kernel,
    params: Option<&[cuda_core::ParamInfo]>,
    items: &[Option<Bound<'_, PyAny>>],
) -> PyResult<()> {
    let mut args = [EMPTY; INLINE];
    for (index, (slot, item)) in args.iter_mut().zip(items).enumerate() {
        if let Some(item) = item {
            *slot = convert(py, item, params.map(|p| p[index].size), index)?;
        }
    }
    let args = &args[..items.len()];
    let mut order: [Option<&PyBuffer>; INLINE] = [None; INLINE];
    let mut guards: [Option<(&PyBuffer, Guard<'_>)>; INLINE] = Default::default();
    let locked = lock_buffers(args, &mut order, &mut guards)?;
    let mut refs: [&dyn KernelArg; INLINE] = [&0u8; INLINE];
    fill_refs(args, &guards[..locked], &mut refs)?;
    queue(py, stream, config, kernel, &refs[..args.len()])
}

/// The launch of more arguments, on the heap.
fn run_spilled(
    py: Python<'_>,
    stream: &cuda_core::Stream,
    config: &PyLaunchConfig,
    kernel: &cuda_core::Kernel,
    params: Option<&[cuda_core::ParamInfo]>,
    items: &[Bound<'_, PyAny>],
) -> PyResult<()> {
    let mut args = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        args.push(convert(py, item, params.map(|p| p[index].size), index)?);
    }
    let mut order: Vec<Option<&PyBuffer>> = vec![None; args.len()];
    let mut guards: Vec<Option<(&PyBuffer, Guard<'_>)>> = (0..args.len()).map(|_| None).collect();
    let locked = lock_buffers(&args, &mut order, &mut guards)?;
    let mut refs: Vec<&dyn KernelArg> = vec![&0u8; args.len()];
    fill_refs(&args, &guards[..locked], &mut refs)?;
    queue(py, stream, config, kernel, &refs)
}

fn queue(
    py: Python<'_>,
    stream: &cuda_core::Stream,
    config: &PyLaunchConfig,
    kernel: &cuda_core::Kernel,
    args: &[&dyn KernelArg],
) -> PyResult<()> {
    // SAFETY: cuda-core's contract is that the arguments are valid for the kernel. Each one
    // here was converted to exactly its parameter's size (the driver's own sizes, checked
    // again by cuda-core) or, on drivers that cannot say, to the natural size cuda.core uses;
    // buffers are open and locked for the call, and passed as `&Buffer` so that the launch
    // orders them. What memory the kernel then reaches through those values (raw addresses,
    // indices) is the Python caller's responsibility, exactly as with cuda.core's `launch`,
    // which exposes the same raw power; a kernel fault is a CUDA error, not memory unsafety
    // in this process.
    unsafe { cuda_core::launch(stream, &config.config, kernel, args) }.or_py(py)
}

/// Adds `LaunchConfig` and `launch` to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyLaunchConfig>()?;
    module.add_function(wrap_pyfunction!(launch, module)?)?;
    Ok(())
}
