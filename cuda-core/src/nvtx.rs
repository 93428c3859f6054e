//! NVTX annotations for Nsight Systems (feature `nvtx`): ranges, marks, and names for threads,
//! devices, contexts, streams and events.
//!
//! NVTX (NVIDIA Tools Extension) calls do nothing until a tool is attached: a profiler names
//! its library in `NVTX_INJECTION64_PATH` (`nsys profile` does), and the process's first NVTX
//! call loads it. Without one, each call is a check of a function slot, and no string is made.
//! With one, Nsight Systems shows the ranges and marks on each thread's NVTX row, and the names
//! in place of the handles on its CUDA rows.
//!
//! ```no_run
//! use cuda_core::{nvtx, Device, StreamOptions};
//!
//! let device = Device::new(0)?;
//! let stream = device.create_stream(StreamOptions::default())?;
//! nvtx::name_current_thread("loader");
//! nvtx::name_stream(&stream, "uploads");
//! {
//!     let _step = nvtx::Range::push("step 1"); // pushed here, popped at the end of the scope
//!     let _copy = nvtx::Range::push_with(
//!         "copy",
//!         nvtx::Attributes::default().with_color(0xFF76_B900),
//!     );
//!     // ... queue work on `stream` ...
//! }
//! nvtx::mark("step 1 queued");
//! // A range that another thread ends:
//! let wait = nvtx::ProcessRange::start("wait for the results");
//! std::thread::spawn(move || {
//!     // ... wait ...
//!     wait.end();
//! });
//! # Ok::<(), cuda_core::Error>(())
//! ```
//!
//! Messages and names are `&str`, sent as NVTX's `A` (char) strings, which Nsight reads as
//! UTF-8. A C string cannot hold a NUL byte: any NUL in one is left out, and nothing fails.
//! Annotations never fail: without a tool, or with one that does not take a call, a call does
//! nothing.
//!
//! Naming a [`Stream`] or an [`Event`] keeps its handle out of the crate's recycling (the
//! handle is destroyed when the object drops, not reused), so that a later stream or event is
//! never shown under an earlier one's name. Tools keep names by handle, so a handle the driver
//! hands out again after its destruction may still show the old name until named anew.
//!
//! The tool is looked for once per process, at the first call, as NVTX's own headers do; a
//! library that does not load, or lacks `InitializeInjectionNvtx2`, or whose initialisation
//! fails, is logged through the `log` crate and left out.

use std::marker::PhantomData;

use crate::context::Context;
use crate::device::Device;
use crate::driver::nvtx::{self as raw, DomainHandle, Look};
use crate::event::Event;
use crate::stream::Stream;

/// What a range or mark shows besides its message (`nvtxEventAttributes_t`'s color and
/// category): for [`Range::push_with`], [`ProcessRange::start_with`], [`mark_with`] and the
/// [`Domain`] calls.
///
/// ```
/// use cuda_core::nvtx::{self, Attributes};
///
/// const IO: u32 = 1;
/// nvtx::name_category(IO, "I/O");
/// let read = Attributes::default().with_color(0xFF00_80FF).with_category(IO);
/// let _range = nvtx::Range::push_with("read the batch", read);
/// ```
#[doc(alias = "nvtxEventAttributes_t")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Attributes {
    /// The color, as `0xAARRGGBB` (`NVTX_COLOR_ARGB`); `None`, the default, leaves it to the
    /// tool.
    pub color: Option<u32>,
    /// The category, named by [`name_category`]; 0, the default, is none.
    pub category: u32,
}

crate::options::chainers!(Attributes {
    with_color(color: u32) => some;
    with_category(category: u32);
});

impl Attributes {
    fn look(self) -> Look {
        Look {
            color: self.color,
            category: self.category,
        }
    }
}

/// A range of the calling thread: pushed when made (`nvtxRangePushA`), popped when dropped
/// (`nvtxRangePop`), unwinding included. The ranges of one thread nest, so drop them in the
/// reverse order of their making, as scopes do; a range stays on its thread (it is not
/// [`Send`]). For a range that another thread ends, see [`ProcessRange`].
///
/// ```
/// use cuda_core::nvtx::Range;
///
/// let _outer = Range::push("epoch");
/// for batch in 0..3 {
///     let _inner = Range::push(&format!("batch {batch}"));
///     // ... work ...
/// } // each batch's range pops here, inside the epoch's
/// ```
#[doc(alias = "nvtxRangePushA")]
#[doc(alias = "nvtxRangePop")]
#[derive(Debug)]
#[must_use = "the range pops when the guard is dropped: bind it (`let _range = ...`)"]
pub struct Range {
    domain: Option<DomainHandle>,
    /// Popped on the thread that pushed it.
    _thread: PhantomData<*const ()>,
}

impl Range {
    /// Pushes a range with `message` (`nvtxRangePushA`).
    #[doc(alias = "nvtxRangePushA")]
    #[inline]
    pub fn push(message: &str) -> Range {
        raw::range_push(None, message, None);
        Range::pushed(None)
    }

    /// Pushes a range with `message` and `attributes` (`nvtxRangePushEx`).
    #[doc(alias = "nvtxRangePushEx")]
    #[inline]
    pub fn push_with(message: &str, attributes: Attributes) -> Range {
        raw::range_push(None, message, Some(attributes.look()));
        Range::pushed(None)
    }

    fn pushed(domain: Option<DomainHandle>) -> Range {
        Range {
            domain,
            _thread: PhantomData,
        }
    }
}

impl Drop for Range {
    #[inline]
    fn drop(&mut self) {
        raw::range_pop(self.domain);
    }
}

/// A range that may end on another thread than the one that started it: started when made
/// (`nvtxRangeStartA`), ended by [`ProcessRange::end`] or when dropped (`nvtxRangeEnd`, with
/// the id the start gave). Process ranges need not nest.
///
/// ```
/// use cuda_core::nvtx::ProcessRange;
///
/// let request = ProcessRange::start("request 7");
/// let worker = std::thread::spawn(move || {
///     // ... serve it ...
///     request.end();
/// });
/// worker.join().unwrap();
/// ```
#[doc(alias = "nvtxRangeStartA")]
#[doc(alias = "nvtxRangeEnd")]
#[derive(Debug)]
#[must_use = "the range ends when dropped: keep it until the work it covers is done"]
pub struct ProcessRange {
    domain: Option<DomainHandle>,
    /// `nvtxRangeId_t`.
    id: u64,
}

impl ProcessRange {
    /// Starts a range with `message` (`nvtxRangeStartA`).
    #[doc(alias = "nvtxRangeStartA")]
    #[inline]
    pub fn start(message: &str) -> ProcessRange {
        ProcessRange {
            domain: None,
            id: raw::range_start(None, message, None),
        }
    }

    /// Starts a range with `message` and `attributes` (`nvtxRangeStartEx`).
    #[doc(alias = "nvtxRangeStartEx")]
    #[inline]
    pub fn start_with(message: &str, attributes: Attributes) -> ProcessRange {
        ProcessRange {
            domain: None,
            id: raw::range_start(None, message, Some(attributes.look())),
        }
    }

    /// Ends the range (`nvtxRangeEnd`), on the calling thread; as dropping it does.
    #[doc(alias = "nvtxRangeEnd")]
    #[inline]
    pub fn end(self) {}
}

impl Drop for ProcessRange {
    #[inline]
    fn drop(&mut self) {
        raw::range_end(self.domain, self.id);
    }
}

/// Marks an instant with `message` (`nvtxMarkA`).
///
/// ```
/// cuda_core::nvtx::mark("checkpoint written");
/// ```
#[doc(alias = "nvtxMarkA")]
#[inline]
pub fn mark(message: &str) {
    raw::mark(None, message, None);
}

/// Marks an instant with `message` and `attributes` (`nvtxMarkEx`).
#[doc(alias = "nvtxMarkEx")]
#[inline]
pub fn mark_with(message: &str, attributes: Attributes) {
    raw::mark(None, message, Some(attributes.look()));
}

/// Names a category, for the [`Attributes::category`] of ranges and marks
/// (`nvtxNameCategoryA`).
#[doc(alias = "nvtxNameCategoryA")]
pub fn name_category(category: u32, name: &str) {
    raw::name_category(None, category, name);
}

/// Names the calling OS thread (`nvtxNameOsThreadA`, with its Linux thread id): Nsight
/// Systems shows the name on the thread's rows. The name is NVTX's only: the thread's own
/// name (`std::thread::Builder::name`, `/proc/.../comm`) is unchanged.
///
/// ```
/// std::thread::spawn(|| {
///     cuda_core::nvtx::name_current_thread("uploader");
///     // ...
/// });
/// ```
#[doc(alias = "nvtxNameOsThreadA")]
pub fn name_current_thread(name: &str) {
    let tid = rustix::thread::gettid().as_raw_nonzero().get();
    raw::name_os_thread(tid as u32, name);
}

/// Names a device (`nvtxNameCuDeviceA`).
#[doc(alias = "nvtxNameCuDeviceA")]
pub fn name_device(device: Device, name: &str) {
    raw::name_cu_device(device.handle(), name);
}

/// Names a context (`nvtxNameCuContextA`): a primary context through
/// [`Device::primary_context`], or one of the crate's own.
#[doc(alias = "nvtxNameCuContextA")]
pub fn name_context(context: &Context, name: &str) {
    raw::name_cu_context(context.handle(), name);
}

/// Names a stream (`nvtxNameCuStreamA`): its handle, which the driver's activity on the
/// stream carries. The stream is then destroyed when it drops, not recycled (see the
/// [module](self) docs).
///
/// ```no_run
/// use cuda_core::{nvtx, Device, StreamOptions};
///
/// let device = Device::new(0)?;
/// let copies = device.create_stream(StreamOptions::default())?;
/// nvtx::name_stream(&copies, "host to device");
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "nvtxNameCuStreamA")]
pub fn name_stream(stream: &Stream, name: &str) {
    // `as_raw` marks the stream as one whose handle lives on: never recycled.
    raw::name_cu_stream(crate::driver::StreamHandle(stream.as_raw()), name);
}

/// Names an event (`nvtxNameCuEventA`). The event is then destroyed when it drops, not
/// recycled (see the [module](self) docs).
#[doc(alias = "nvtxNameCuEventA")]
pub fn name_event(event: &Event, name: &str) {
    raw::name_cu_event(event.handle_kept(), name);
}

/// An NVTX domain (`nvtxDomainCreateA`): a library's own group of ranges, marks and
/// categories, which Nsight Systems shows on rows of their own and can filter. Make one per
/// library or subsystem and keep it (a `static` `OnceLock`, say): each
/// [`new`](Domain::new) asks the tool for a domain.
///
/// A domain lasts as long as the process: ranges hold its handle without a reference count,
/// so it is never destroyed (`nvtxDomainDestroy` is not called). Without a tool, or with one
/// that takes no domains, its calls do nothing.
///
/// ```
/// use std::sync::OnceLock;
/// use cuda_core::nvtx::{Attributes, Domain};
///
/// fn domain() -> Domain {
///     static DOMAIN: OnceLock<Domain> = OnceLock::new();
///     *DOMAIN.get_or_init(|| Domain::new("my-solver"))
/// }
///
/// let _solve = domain().push("solve", Attributes::default());
/// domain().mark("converged", Attributes::default().with_color(0xFF00_C000));
/// ```
#[doc(alias = "nvtxDomainHandle_t")]
#[doc(alias = "nvtxDomainCreateA")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Domain {
    handle: DomainHandle,
}

impl Domain {
    /// Makes a domain named `name` (`nvtxDomainCreateA`).
    #[doc(alias = "nvtxDomainCreateA")]
    pub fn new(name: &str) -> Domain {
        Domain {
            handle: raw::domain_create(name),
        }
    }

    /// Pushes a range of the calling thread in this domain (`nvtxDomainRangePushEx`), popped
    /// when the guard drops (`nvtxDomainRangePop`), as [`Range::push`].
    #[doc(alias = "nvtxDomainRangePushEx")]
    #[doc(alias = "nvtxDomainRangePop")]
    pub fn push(&self, message: &str, attributes: Attributes) -> Range {
        raw::range_push(Some(self.handle), message, Some(attributes.look()));
        Range::pushed(Some(self.handle))
    }

    /// Starts a range in this domain that may end on another thread
    /// (`nvtxDomainRangeStartEx`, ended by `nvtxDomainRangeEnd`), as [`ProcessRange::start`].
    #[doc(alias = "nvtxDomainRangeStartEx")]
    #[doc(alias = "nvtxDomainRangeEnd")]
    pub fn start(&self, message: &str, attributes: Attributes) -> ProcessRange {
        ProcessRange {
            domain: Some(self.handle),
            id: raw::range_start(Some(self.handle), message, Some(attributes.look())),
        }
    }

    /// Marks an instant in this domain (`nvtxDomainMarkEx`).
    #[doc(alias = "nvtxDomainMarkEx")]
    pub fn mark(&self, message: &str, attributes: Attributes) {
        raw::mark(Some(self.handle), message, Some(attributes.look()));
    }

    /// Names a category of this domain (`nvtxDomainNameCategoryA`).
    #[doc(alias = "nvtxDomainNameCategoryA")]
    pub fn name_category(&self, category: u32, name: &str) {
        raw::name_category(Some(self.handle), category, name);
    }
}
