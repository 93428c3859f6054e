//! Contexts and green contexts: `Context`, `ContextOptions`, `DeviceResources`, `SMResource`,
//! `SMResourceOptions`; and the pieces of `Device` and `Stream` that take contexts or foreign
//! streams (`Device.set_current(ctx)`, `Device.create_context`, `Stream.from_handle`).

use std::cell::RefCell;

use crate::device::PyDevice;
use crate::errors::*;
use crate::options::{PyEventOptions, PyStreamOptions};
use crate::stream::{PyEvent, PyStream};
use pyo3::exceptions::{PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyInt, PySequence, PyString, PyTuple};

// ---- SMResourceOptions -------------------------------------------------------------------------

/// Options for `SMResource.split()`, with cuda.core's fields.
///
/// count: the SMs of each group, as an int (one group), a sequence of ints (one group each), or
/// None (one group, "discovery": the smallest group the device can split off). A count of 0 is
/// discovery too. The driver rounds each group up to its granularity (8 SMs on compute
/// capability 9.0), so ask for multiples of `SMResource.min_partition_size`.
/// coscheduled_sm_count, preferred_coscheduled_sm_count: accepted for cuda.core's signature;
/// anything but None raises NotImplementedError (cuda-core splits with
/// cuDevSmResourceSplitByCount, which has no such constraint). A sequence must have count's
/// length.
/// backfill: a bool, or one per group: let the group ignore the SM co-scheduling granularity
/// (CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING), for finer groups (default False).
#[pyclass(name = "SMResourceOptions", module = "cudacore_rs")]
pub(crate) struct PySMResourceOptions {
    /// SMs per group: int, sequence of ints, or None (discovery).
    #[pyo3(get, set)]
    count: PyObject,
    /// Not supported by cuda-core's split: must be None.
    #[pyo3(get, set)]
    coscheduled_sm_count: PyObject,
    /// Not supported by cuda-core's split: must be None.
    #[pyo3(get, set)]
    preferred_coscheduled_sm_count: PyObject,
    /// Whether groups may ignore the co-scheduling granularity: a bool or one per group.
    #[pyo3(get, set)]
    backfill: PyObject,
}

#[pymethods]
impl PySMResourceOptions {
    #[new]
    #[pyo3(signature = (count = None, coscheduled_sm_count = None, preferred_coscheduled_sm_count = None, backfill = None))]
    fn new(
        py: Python<'_>,
        count: Option<PyObject>,
        coscheduled_sm_count: Option<PyObject>,
        preferred_coscheduled_sm_count: Option<PyObject>,
        backfill: Option<PyObject>,
    ) -> Self {
        PySMResourceOptions {
            count: count.unwrap_or_else(|| py.None()),
            coscheduled_sm_count: coscheduled_sm_count.unwrap_or_else(|| py.None()),
            preferred_coscheduled_sm_count: preferred_coscheduled_sm_count
                .unwrap_or_else(|| py.None()),
            backfill: backfill
                .unwrap_or_else(|| PyBool::new(py, false).to_owned().into_any().unbind()),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "SMResourceOptions(count={}, coscheduled_sm_count={}, \
             preferred_coscheduled_sm_count={}, backfill={})",
            self.count.bind(py).repr()?,
            self.coscheduled_sm_count.bind(py).repr()?,
            self.preferred_coscheduled_sm_count.bind(py).repr()?,
            self.backfill.bind(py).repr()?
        ))
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(other) = other.downcast::<PySMResourceOptions>() else {
            return Ok(false);
        };
        let other = other.borrow();
        Ok(self.count.bind(py).eq(other.count.bind(py))?
            && self
                .coscheduled_sm_count
                .bind(py)
                .eq(other.coscheduled_sm_count.bind(py))?
            && self
                .preferred_coscheduled_sm_count
                .bind(py)
                .eq(other.preferred_coscheduled_sm_count.bind(py))?
            && self.backfill.bind(py).eq(other.backfill.bind(py))?)
    }
}

/// Whether `value` is a sequence in cuda.core's sense (a list, a tuple...; not a string).
fn as_sequence<'a, 'py>(value: &'a Bound<'py, PyAny>) -> Option<&'a Bound<'py, PySequence>> {
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>() {
        return None;
    }
    value.downcast::<PySequence>().ok()
}

/// One count: None (0, discovery) or a non-negative int that fits an unsigned int.
fn one_count(value: &Bound<'_, PyAny>) -> PyResult<u32> {
    if value.is_none() {
        return Ok(0);
    }
    if !value.is_instance_of::<PyInt>() || value.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "count must be an int, a sequence of ints, or None, not {}",
            value.get_type().name()?
        )));
    }
    let wide: i128 = value.extract()?;
    if wide < 0 {
        return Err(PyValueError::new_err(format!(
            "count must be non-negative, got {wide}"
        )));
    }
    u32::try_from(wide).map_err(|_| PyValueError::new_err(format!("count {wide} is too large")))
}

/// What a split asks for, read from the options and checked before any driver call: each
/// group's SM count (0: discovery) and backfill flag.
struct Plan {
    counts: Vec<u32>,
    backfill: Vec<bool>,
}

fn plan(options: &PySMResourceOptions, py: Python<'_>) -> PyResult<Plan> {
    let count = options.count.bind(py);
    let (counts, scalar) = match as_sequence(count) {
        Some(sequence) if !count.is_instance_of::<PyInt>() => {
            let counts = sequence
                .try_iter()?
                .map(|item| one_count(&item?))
                .collect::<PyResult<Vec<u32>>>()?;
            if counts.is_empty() {
                return Err(PyValueError::new_err("count sequence must not be empty"));
            }
            (counts, false)
        }
        _ => (vec![one_count(count)?], true),
    };
    let groups = counts.len();
    let check_length = |field: &Bound<'_, PyAny>, name: &str| -> PyResult<Option<usize>> {
        let Some(sequence) = as_sequence(field) else {
            return Ok(None);
        };
        let len = sequence.len()?;
        if scalar {
            return Err(PyValueError::new_err(format!(
                "{name} is a sequence but count is not: count must be a sequence to ask for \
                 several groups"
            )));
        }
        if len != groups {
            return Err(PyValueError::new_err(format!(
                "{name} has length {len}, expected {groups} (the length of count)"
            )));
        }
        Ok(Some(len))
    };
    for (field, name) in [
        (&options.coscheduled_sm_count, "coscheduled_sm_count"),
        (
            &options.preferred_coscheduled_sm_count,
            "preferred_coscheduled_sm_count",
        ),
    ] {
        let field = field.bind(py);
        let given = match check_length(field, name)? {
            Some(_) => as_sequence(field)
                .map(|s| -> PyResult<bool> {
                    for item in s.try_iter()? {
                        if !item?.is_none() {
                            return Ok(true);
                        }
                    }
                    Ok(false)
                })
                .transpose()?
                .unwrap_or(false),
            None => !field.is_none(),
        };
        if given {
            return Err(PyNotImplementedError::new_err(format!(
                "SMResourceOptions.{name} is not supported: cuda-core splits SMs with \
                 cuDevSmResourceSplitByCount, which takes no co-scheduling constraint"
            )));
        }
    }
    let backfill_field = options.backfill.bind(py);
    let one_flag = |value: &Bound<'_, PyAny>| -> PyResult<bool> {
        if value.is_none() {
            return Ok(false);
        }
        value
            .downcast::<PyBool>()
            .map(|b| b.is_true())
            .map_err(|_| PyTypeError::new_err("backfill must be a bool or a sequence of bools"))
    };
    let backfill = match check_length(backfill_field, "backfill")? {
        Some(_) => match as_sequence(backfill_field) {
            Some(sequence) => sequence
                .try_iter()?
                .map(|item| one_flag(&item?))
                .collect::<PyResult<Vec<bool>>>()?,
            None => vec![false; groups],
        },
        None => vec![one_flag(backfill_field)?; groups],
    };
    Ok(Plan { counts, backfill })
}

// ---- SMResource ----------------------------------------------------------------------------------

/// A set of SMs of one device: all of them (`Device.resources.sm`), those of a context
/// (`Context.resources.sm`), or a group split from them (`SMResource.split`). Cannot be made
/// directly.
#[pyclass(name = "SMResource", module = "cudacore_rs", frozen)]
pub(crate) struct PySMResource {
    sm: cuda_core::SmResource,
    /// False for the results of a dry run, which cannot make a context.
    usable: bool,
}

impl PySMResource {
    /// The smallest group the device can split off: what the driver reports (13 ABI), else
    /// cuda.core's granularity for the 12 ABI (8 SMs from compute capability 9.0, else 2).
    fn granularity(&self, py: Python<'_>, reported: Option<u32>) -> PyResult<u32> {
        match reported.filter(|&v| v != 0) {
            Some(value) => Ok(value),
            None => {
                let (major, _) = self.sm.device().compute_capability().or_py(py)?;
                Ok(if major >= 9 { 8 } else { 2 })
            }
        }
    }
}

#[pymethods]
impl PySMResource {
    #[new]
    fn py_new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "SMResource cannot be made directly: use Device.resources.sm or SMResource.split()",
        ))
    }

    /// How many SMs.
    #[getter]
    fn sm_count(&self) -> u32 {
        self.sm.sm_count()
    }

    /// The smallest number of SMs a group split from this resource can have.
    #[getter]
    fn min_partition_size(&self, py: Python<'_>) -> PyResult<u32> {
        self.granularity(py, self.sm.min_partition_size())
    }

    /// The number of SMs groups are aligned to, so that they are co-scheduled.
    #[getter]
    fn coscheduled_alignment(&self, py: Python<'_>) -> PyResult<u32> {
        self.granularity(py, self.sm.coscheduled_alignment())
    }

    /// Splits these SMs into groups: returns `(groups, remainder)`, a list of `SMResource`
    /// (one per count asked for) and the SMs left in none. `options` is an
    /// `SMResourceOptions` or a dict of its fields; it is checked (TypeError, ValueError,
    /// NotImplementedError) before any driver call. Asking for more SMs than there are raises
    /// ValueError. With `dry_run=True` the groups show the split's sizes but cannot make a
    /// context.
    #[pyo3(signature = (options, *, dry_run = false))]
    fn split(
        &self,
        py: Python<'_>,
        options: &Bound<'_, PyAny>,
        dry_run: bool,
    ) -> PyResult<(Vec<PySMResource>, PySMResource)> {
        let plan = if let Ok(dict) = options.downcast::<PyDict>() {
            let made = py
                .get_type::<PySMResourceOptions>()
                .call((), Some(dict))?
                .downcast_into::<PySMResourceOptions>()?;
            let borrowed = made.borrow();
            plan(&borrowed, py)?
        } else if let Ok(options) = options.downcast::<PySMResourceOptions>() {
            plan(&options.borrow(), py)?
        } else {
            return Err(PyTypeError::new_err(format!(
                "options must be an SMResourceOptions or a dict of its fields, not {}",
                options.get_type().name()?
            )));
        };
        let discovery = self.min_partition_size(py)?;
        let counts: Vec<u32> = plan
            .counts
            .iter()
            .map(|&c| if c == 0 { discovery } else { c })
            .collect();
        let sm = self.sm.clone();
        let uniform = counts.windows(2).all(|w| w[0] == w[1])
            && plan.backfill.windows(2).all(|w| w[0] == w[1]);
        let split = py.allow_threads(move || -> cuda_core::Result<_> {
            let (Some(&first), Some(&backfill)) = (counts.first(), plan.backfill.first()) else {
                return Err(cuda_core::Error::InvalidArgument {
                    name: "options.count",
                    reason: "no group asked for".to_owned(),
                });
            };
            if uniform {
                let options = cuda_core::SmSplitOptions::groups_of(first)
                    .with_groups(counts.len() as u32)
                    .with_ignore_coscheduling(backfill);
                let split = sm.split(options)?;
                return Ok((split.groups, split.remainder));
            }
            // Groups of different sizes: one split each, from what the last one left.
            let mut groups = Vec::with_capacity(counts.len());
            let mut rest = sm;
            for (&count, &backfill) in counts.iter().zip(&plan.backfill) {
                let options = cuda_core::SmSplitOptions::groups_of(count)
                    .with_groups(1)
                    .with_ignore_coscheduling(backfill);
                let split = rest.split(options)?;
                groups.extend(split.groups);
                rest = split.remainder;
            }
            Ok((groups, rest))
        });
        let (groups, remainder) = split.or_py(py)?;
        let usable = !dry_run;
        Ok((
            groups
                .into_iter()
                .map(|sm| PySMResource { sm, usable })
                .collect(),
            PySMResource {
                sm: remainder,
                usable,
            },
        ))
    }

    fn __repr__(&self) -> String {
        format!(
            "<SMResource sm_count={} of device {}{}>",
            self.sm.sm_count(),
            self.sm.device().ordinal(),
            if self.usable { "" } else { " (dry run)" }
        )
    }
}

// ---- DeviceResources -----------------------------------------------------------------------------

enum Source {
    Device(cuda_core::Device),
    Context(cuda_core::Context),
}

/// The hardware resources of a device (`Device.resources`: all of them) or of a context
/// (`Context.resources`: those it was made with). Cannot be made directly.
#[pyclass(name = "DeviceResources", module = "cudacore_rs", frozen)]
pub(crate) struct PyDeviceResources {
    source: Source,
}

impl PyDeviceResources {
    pub(crate) fn of_device(device: cuda_core::Device) -> Self {
        PyDeviceResources {
            source: Source::Device(device),
        }
    }
}

#[pymethods]
impl PyDeviceResources {
    #[new]
    fn py_new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "DeviceResources cannot be made directly: use Device.resources or Context.resources",
        ))
    }

    /// The SMs: all of the device's, or those of the context (`cuDeviceGetDevResource`,
    /// `cuCtxGetDevResource`).
    #[getter]
    fn sm(&self, py: Python<'_>) -> PyResult<PySMResource> {
        let sm = match &self.source {
            Source::Device(device) => device.resources().sm(),
            Source::Context(context) if context.is_green() => context.sm_resource(),
            Source::Context(context) => context.device().resources().sm(),
        }
        .or_py(py)?;
        Ok(PySMResource { sm, usable: true })
    }

    fn __repr__(&self) -> String {
        match &self.source {
            Source::Device(device) => format!("<DeviceResources of device {}>", device.ordinal()),
            Source::Context(context) => format!(
                "<DeviceResources of context {:#x}>",
                context.as_raw() as usize
            ),
        }
    }
}

// ---- ContextOptions ------------------------------------------------------------------------------

/// Options for `Device.create_context()`.
///
/// resources: the SM groups (`SMResource` objects, from `SMResource.split()`) the green
/// context runs on: a sequence of at least one.
#[pyclass(name = "ContextOptions", module = "cudacore_rs")]
pub(crate) struct PyContextOptions {
    /// The SM groups of the context: a sequence of `SMResource`.
    #[pyo3(get, set)]
    resources: PyObject,
}

#[pymethods]
impl PyContextOptions {
    #[new]
    fn new(resources: PyObject) -> Self {
        PyContextOptions { resources }
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "ContextOptions(resources={})",
            self.resources.bind(py).repr()?
        ))
    }
}

/// The SM groups an options argument names, checked before any driver call.
fn resources_of(
    py: Python<'_>,
    options: &Bound<'_, PyAny>,
) -> PyResult<Vec<cuda_core::SmResource>> {
    let resources = if let Ok(dict) = options.downcast::<PyDict>() {
        let made = py
            .get_type::<PyContextOptions>()
            .call((), Some(dict))?
            .downcast_into::<PyContextOptions>()?;
        let resources = made.borrow().resources.clone_ref(py);
        resources
    } else if let Ok(options) = options.downcast::<PyContextOptions>() {
        options.borrow().resources.clone_ref(py)
    } else {
        return Err(PyTypeError::new_err(format!(
            "options must be a ContextOptions or a dict of its fields, not {}",
            options.get_type().name()?
        )));
    };
    let resources = resources.bind(py);
    let Some(sequence) = as_sequence(resources) else {
        return Err(PyTypeError::new_err(format!(
            "ContextOptions.resources must be a sequence of SMResource, not {}",
            resources.get_type().name()?
        )));
    };
    let mut out = Vec::new();
    for item in sequence.try_iter()? {
        let item = item?;
        let Ok(sm) = item.downcast::<PySMResource>() else {
            return Err(PyTypeError::new_err(format!(
                "ContextOptions.resources must hold SMResource objects, not {}",
                item.get_type().name()?
            )));
        };
        let sm = sm.get();
        if !sm.usable {
            return Err(PyValueError::new_err(
                "an SMResource from a dry-run split cannot make a context: split again \
                 without dry_run",
            ));
        }
        out.push(sm.sm.clone());
    }
    if out.is_empty() {
        return Err(PyValueError::new_err(
            "ContextOptions.resources is empty: a green context needs at least one SM group",
        ));
    }
    Ok(out)
}

// ---- Context -------------------------------------------------------------------------------------

/// A CUDA context: a green context made by `Device.create_context()` on a share of the
/// device's SMs, or a device's primary context (`Device.context`, or what
/// `Device.set_current(ctx)` returns). Cannot be made directly.
///
/// `close()` releases this object's hold on the context (the green context is destroyed once
/// no stream or event made in it is left either: streams made before keep working). It may be
/// called more than once; after it, `handle` is None, `is_green` False and the other uses raise
/// RuntimeError. Closing a context that is current on the calling thread raises RuntimeError,
/// as in cuda.core: make another current first. A `with` block closes it at its end.
#[pyclass(name = "Context", module = "cudacore_rs", frozen)]
pub(crate) struct PyContext {
    context: Slot<cuda_core::Context>,
    ordinal: usize,
}

impl PyContext {
    pub(crate) fn wrap(context: cuda_core::Context) -> PyContext {
        PyContext {
            ordinal: context.device().ordinal(),
            context: Slot::new("Context", context),
        }
    }
}

#[pymethods]
impl PyContext {
    #[new]
    fn py_new() -> PyResult<Self> {
        Err(PyRuntimeError::new_err(
            "Context objects cannot be made directly: use Device.create_context() or \
             Device.context",
        ))
    }

    /// The raw `CUcontext`, as an int; None once closed.
    #[getter]
    fn handle(&self) -> Option<usize> {
        self.context.lock().as_ref().map(|c| c.as_raw() as usize)
    }

    /// Whether `close()` was called.
    #[getter]
    fn is_closed(&self) -> bool {
        self.context.is_closed()
    }

    /// Whether this is a green context (made from device resources); False once closed.
    #[getter]
    fn is_green(&self) -> bool {
        self.context.lock().as_ref().is_some_and(|c| c.is_green())
    }

    /// The device the context belongs to.
    #[getter]
    fn device(&self, py: Python<'_>) -> PyResult<Py<PyDevice>> {
        PyDevice::new(py, i64::try_from(self.ordinal).ok())
    }

    /// The resources of the context: for a green context the SMs it was made with, for a
    /// primary one the device's. RuntimeError once closed.
    #[getter]
    fn resources(&self) -> PyResult<PyDeviceResources> {
        Ok(PyDeviceResources {
            source: Source::Context(self.context.get()?),
        })
    }

    /// A new stream in this green context, whose work runs on the context's SMs (it is
    /// always non-blocking). `options` is a `StreamOptions`, a dict of its fields, or None.
    /// A primary context raises RuntimeError, as in cuda.core: use `Device.create_stream()`.
    #[pyo3(signature = (options = None))]
    fn create_stream(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyStream> {
        let context = self.context.get()?;
        if !context.is_green() {
            return Err(PyRuntimeError::new_err(
                "Context.create_stream() is only supported on green contexts: use \
                 Device.create_stream() for a primary context",
            ));
        }
        let options: PyStreamOptions = options_of(py, options)?;
        let stream = context.create_stream(options.to_rust()).or_py(py)?;
        Ok(PyStream::wrap(stream))
    }

    /// A new event in this context. `options` is an `EventOptions`, a dict of its fields, or
    /// None.
    #[pyo3(signature = (options = None))]
    fn create_event(
        &self,
        py: Python<'_>,
        options: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyEvent> {
        let context = self.context.get()?;
        let options: PyEventOptions = options_of(py, options)?;
        let event = context.create_event(options.to_rust()?).or_py(py)?;
        Ok(PyEvent::wrap(event))
    }

    /// Waits until all work in the context is done, without holding the GIL.
    fn sync(&self, py: Python<'_>) -> PyResult<()> {
        let context = self.context.get()?;
        py.allow_threads(|| context.sync()).or_py(py)
    }

    /// Releases this object's hold on the context. Closing twice is harmless; closing a
    /// context current on the calling thread raises RuntimeError.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let mut slot = self.context.lock();
        if let Some(context) = slot.as_ref() {
            if context.is_current().or_py(py)? {
                return Err(PyRuntimeError::new_err(
                    "cannot close a context while it is current: make another context current \
                     first (Device.set_current())",
                ));
            }
        }
        let taken = slot.take();
        drop(slot);
        // Dropped after the lock: the last reference destroys a green context.
        drop(taken);
        Ok(())
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        let Ok(other) = other.downcast::<PyContext>() else {
            return false;
        };
        match (self.context.get(), other.get().context.get()) {
            (Ok(a), Ok(b)) => a == b,
            _ => std::ptr::eq(self, other.get()),
        }
    }

    fn __hash__(&self) -> usize {
        self.handle().unwrap_or(self as *const PyContext as usize)
    }

    fn __repr__(&self) -> String {
        match &*self.context.lock() {
            Some(context) => format!(
                "<Context handle={:#x} device={}{}>",
                context.as_raw() as usize,
                self.ordinal,
                if context.is_green() {
                    " green"
                } else {
                    " primary"
                }
            ),
            None => format!("<Context (closed) device={}>", self.ordinal),
        }
    }
}

// ---- what Device and Stream call -----------------------------------------------------------------

/// What this thread last made current through `Device.set_current()`: to answer
/// `set_current(ctx)` with the context it replaces, without asking the driver for a raw
/// handle it could not wrap safely.
enum LastSet {
    Primary(cuda_core::Device),
    Context(Py<PyContext>),
}

thread_local! {
    static LAST_SET: RefCell<Option<LastSet>> = const { RefCell::new(None) };
}

/// Records that `Device.set_current()` made a device's primary context current.
pub(crate) fn note_primary_set(device: cuda_core::Device) {
    LAST_SET.with(|last| {
        let mut last = last.borrow_mut();
        if !matches!(&*last, Some(LastSet::Primary(d)) if *d == device) {
            *last = Some(LastSet::Primary(device));
        }
    });
}

/// The context this thread made current last through `Device.set_current()`, if it still is.
fn previous(py: Python<'_>) -> PyResult<Option<Py<PyContext>>> {
    let last = LAST_SET.with(|last| match &*last.borrow() {
        Some(LastSet::Primary(device)) => Some(LastSet::Primary(*device)),
        Some(LastSet::Context(context)) => Some(LastSet::Context(context.clone_ref(py))),
        None => None,
    });
    match last {
        Some(LastSet::Primary(device)) => {
            let primary = device.primary_context().or_py(py)?;
            if primary.is_current().or_py(py)? {
                return Ok(Some(Py::new(py, PyContext::wrap(primary))?));
            }
            Ok(None)
        }
        Some(LastSet::Context(context)) => {
            let current = match context.get().context.get() {
                Ok(inner) => inner.is_current().or_py(py)?,
                Err(_) => false,
            };
            Ok(current.then_some(context))
        }
        None => Ok(None),
    }
}

/// `Device.set_current(ctx)`: makes `ctx` (a `Context` of `device`) current on the calling
/// thread and returns the context it replaced (as cuda.core pops and returns it), or None
/// where that is not one this package made current.
pub(crate) fn set_current(
    py: Python<'_>,
    device: &cuda_core::Device,
    ctx: &Bound<'_, PyAny>,
) -> PyResult<Option<Py<PyContext>>> {
    let Ok(wrapped) = ctx.downcast::<PyContext>() else {
        return Err(PyTypeError::new_err(format!(
            "set_current(ctx) takes a Context (or None for the primary context), not {}",
            ctx.get_type().name()?
        )));
    };
    let context = wrapped.get().context.get()?;
    if context.device() != *device {
        return Err(PyValueError::new_err(format!(
            "the context belongs to device {}, not to device {}",
            context.device().ordinal(),
            device.ordinal()
        )));
    }
    let previous = previous(py)?;
    context.set_current().or_py(py)?;
    let unbound = wrapped.clone().unbind();
    LAST_SET.with(|last| *last.borrow_mut() = Some(LastSet::Context(unbound)));
    Ok(previous)
}

/// `Device.create_context(options)`: a green context on the SM groups the options name.
pub(crate) fn create_context(
    py: Python<'_>,
    device: &cuda_core::Device,
    options: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyContext> {
    let Some(options) = options.filter(|o| !o.is_none()) else {
        return Err(PyValueError::new_err(
            "create_context needs ContextOptions naming at least one SM group \
             (ContextOptions([group])): cuda-core makes green contexts only",
        ));
    };
    let resources = resources_of(py, options)?;
    let device = *device;
    let context = py
        .allow_threads(move || {
            device.create_context(cuda_core::ContextOptions::default().with_resources(resources))
        })
        .or_py(py)?;
    Ok(PyContext::wrap(context))
}

/// `Device.context`: the device's primary context.
pub(crate) fn primary_context(py: Python<'_>, device: &cuda_core::Device) -> PyResult<PyContext> {
    Ok(PyContext::wrap(device.primary_context().or_py(py)?))
}

/// `Device.resources`.
pub(crate) fn device_resources(device: &cuda_core::Device) -> PyDeviceResources {
    PyDeviceResources::of_device(*device)
}

/// A raw stream handle from Python: an int that fits a pointer.
fn raw_handle(handle: &Bound<'_, PyAny>) -> PyResult<usize> {
    if !handle.is_instance_of::<PyInt>() || handle.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "a stream handle must be an int, not {}",
            handle.get_type().name()?
        )));
    }
    let wide: i128 = handle.extract()?;
    usize::try_from(wide)
        .map_err(|_| PyValueError::new_err(format!("{wide:#x} is not a stream handle")))
}

/// Wraps a foreign `CUstream` (not owned: closing the result does not destroy it). The device
/// is the calling thread's current one, else the one whose context the stream belongs to.
/// `owner`, where given, is kept alive as long as the result.
pub(crate) fn foreign_stream(
    py: Python<'_>,
    handle: &Bound<'_, PyAny>,
    owner: Option<PyObject>,
) -> PyResult<PyStream> {
    let raw = raw_handle(handle)?;
    let first = cuda_core::Device::current().or_py(py)?;
    // SAFETY: cuda.core's Stream.from_handle has the same raw power, and the caller is told
    // (in the docstring) that the handle must be a valid CUstream and stay valid while the
    // result is used.
    let wrapped = unsafe { cuda_core::Stream::from_raw(raw as *mut std::ffi::c_void, first) };
    let stream = match wrapped {
        Ok(stream) => stream,
        Err(cuda_core::Error::InvalidArgument { .. }) => {
            // The stream belongs to another device's context: try the others.
            let mut found = None;
            for device in cuda_core::Device::all().or_py(py)? {
                if device == first {
                    continue;
                }
                // SAFETY: as above.
                let attempt =
                    unsafe { cuda_core::Stream::from_raw(raw as *mut std::ffi::c_void, device) };
                if let Ok(stream) = attempt {
                    found = Some(stream);
                    break;
                }
            }
            match found {
                Some(stream) => stream,
                None => {
                    return Err(PyValueError::new_err(format!(
                        "{raw:#x}: no device's context owns this stream"
                    )))
                }
            }
        }
        Err(e) => return Err(to_py(py, e)),
    };
    Ok(PyStream::wrap_foreign(stream, owner))
}

/// `Device.create_stream(obj)`: wraps an object with the `__cuda_stream__` protocol (it
/// returns `(version, handle)`), holding the object while the stream is used.
pub(crate) fn stream_of_object(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<PyStream> {
    if !obj.hasattr("__cuda_stream__")? {
        return Err(PyTypeError::new_err(format!(
            "create_stream(obj) takes an object with the __cuda_stream__ protocol, not {}",
            obj.get_type().name()?
        )));
    }
    let answer = obj.call_method0("__cuda_stream__")?;
    let pair = answer
        .downcast::<PyTuple>()
        .ok()
        .filter(|t| t.len() == 2)
        .ok_or_else(|| {
            PyTypeError::new_err("__cuda_stream__() must return a tuple (version, handle)")
        })?;
    let handle = pair.get_item(1)?;
    foreign_stream(py, &handle, Some(obj.clone().unbind()))
}

/// Adds the context classes to the module.
pub(crate) fn register(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<PyContext>()?;
    module.add_class::<PyContextOptions>()?;
    module.add_class::<PyDeviceResources>()?;
    module.add_class::<PySMResource>()?;
    module.add_class::<PySMResourceOptions>()?;
    Ok(())
}
