//! Launching kernels: the configuration, the arguments, and the launch.

use std::ffi::c_void;

use crate::context::Context;
use crate::driver::LaunchParams;
use crate::error::{Error, Result};
use crate::event::Event;
use crate::kernel::{Kernel, ParamInfo};
use crate::stream::Stream;

mod config;

pub use self::config::{
    AccessPolicyWindow, AccessProperty, ClusterSchedulingPolicy, EventTrigger, LaunchAttributes,
    LaunchConfig, MemorySyncDomain,
};

use crate::args::is_wrapper_size;
use crate::args::sealed::ArgBytes;
pub(crate) use crate::args::KernelArg;

/// An argument's bytes and their count. A [`DeviceRepr`](crate::DeviceRepr) value is its own
/// bytes, so where the trait object's size (read from its vtable, no call) is the parameter's,
/// its address is the answer; a wrapper (whose own size is not its argument's: see
/// [`is_wrapper_size`]) and anything else ask through the trait object.
#[inline(always)]
pub(crate) fn arg_bytes(arg: &dyn KernelArg, wanted: Option<usize>) -> ArgBytes<'_> {
    let own = std::mem::size_of_val(arg);
    if wanted == Some(own) && !is_wrapper_size(own) {
        // Only DeviceRepr values have any other size (KernelArg is sealed, and every wrapper's
        // size is checked to be in the list where it is made one), and their bytes are
        // themselves.
        ArgBytes {
            ptr: (arg as *const dyn KernelArg).cast(),
            size: own,
            home: None,
        }
    } else {
        arg.arg()
    }
}

/// Launches `kernel` on `stream` with `config` and `args`.
///
/// Before any driver call, it checks what the driver would fault on or silently misread: zero
/// dimensions, a block larger than the kernel allows on the stream's device, more dynamic
/// shared memory than allowed, a cluster on a device older than compute capability 9.0 or not
/// dividing the grid, a cooperative grid larger than can be resident, and the number and size
/// of the arguments against the kernel's parameters (read once from the driver, CUDA 12.4+).
/// Each is [`Error::InvalidArgument`] naming the problem.
///
/// A plain launch is one `cuLaunchKernel`; clusters and cooperative launches use
/// `cuLaunchKernelEx`. Up to 16 arguments make no heap allocation.
///
/// Buffers passed as arguments are kept in stream order by the launch itself: where a buffer's
/// deallocation stream is another stream than the launch's, the launch waits for the work
/// queued there so far (its allocation among it) and that stream then waits for the launch, so
/// the buffer's free cannot overtake the kernel. On the same stream this costs nothing.
///
/// # Safety
///
/// The kernel runs with the arguments given: it must only access memory that they make valid
/// for it (indices in bounds of the buffers passed, raw [`DevicePtr`](crate::DevicePtr) arguments to memory that
/// stays allocated until the kernel is done), and nothing on the host may use memory the
/// kernel writes until the stream has passed it. A [`StridedView`](crate::StridedView) is its first element's
/// address: the kernel reads it as the view's element type, within the view's elements (and
/// writes it only if not [read-only](crate::StridedView::is_read_only)); a view not of a buffer (of a
/// DLPack tensor, or a foreign pointer) is kept until the kernel is done, as a raw address.
///
/// On drivers older than 12.4 the driver cannot describe a kernel's parameters
/// (`cuKernelGetParamInfo`), so the number and sizes of the arguments go unchecked there: the
/// caller must then pass exactly one argument per parameter, each of the parameter's size and
/// type (a [`Buffer`](crate::Buffer) or [`DevicePtr`](crate::DevicePtr) for a pointer, the Rust type of the same layout for a
/// value).
///
/// ```no_run
/// use cuda_core::{launch, Allocate, CodeType, Device, LaunchConfig, Program, ProgramOptions, StreamOptions};
///
/// let device = Device::new(0)?;
/// let stream = device.create_stream(StreamOptions::default())?;
/// let code = Program::new(
///     r#"extern "C" __global__ void fill(float* x, float v, unsigned n) {
///         unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
///         if (i < n) x[i] = v;
///     }"#,
///     ProgramOptions::default(),
/// )
/// .compile(CodeType::Cubin, &[])?;
/// let kernel = code.get_kernel("fill")?;
/// let n = 1u32 << 20;
/// let buffer = device.memory_resource()?.allocate(4 * n as usize, &stream)?;
/// // SAFETY: the kernel writes `n` floats into a buffer of `n` floats.
/// unsafe { launch(&stream, &LaunchConfig::for_elements(n.into(), 256), &kernel, &[&buffer, &2.5f32, &n])? };
/// assert!(buffer.to_vec::<f32>(&stream)?.iter().all(|&x| x == 2.5));
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[inline]
#[doc(alias("cuLaunchKernel", "cuLaunchKernelEx"))]
pub unsafe fn launch(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { launch_with(stream, config, kernel, args, None) }
}

/// [`launch`], recording `event` from the kernel (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT`):
/// the event may fire once every block has triggered it (see [`EventTrigger`]), before the
/// kernel ends, so that work on another stream that waits for it ([`Stream::wait`]) may
/// start early. The driver allows this overlap but does not promise it: it may fire the
/// event only when the kernel ends (the H200 with driver 580 did, outside graphs). So work
/// that waits for the event must not rely on this kernel's writes being done unless the
/// kernel triggers only after making them; the host sees the event complete no earlier
/// than the trigger, and possibly only once the kernel has ended.
///
/// Checked before the driver, besides [`launch`]'s rules: the event is of the stream's
/// context, made without timing ([`EventOptions::timing`](crate::EventOptions::timing)
/// false), and the device is of compute capability 9.0 or newer.
///
/// # Safety
///
/// As for [`launch`].
///
/// ```no_run
/// use cuda_core::{launch_recording, Allocate, CodeType, Device, EventOptions, EventTrigger};
/// use cuda_core::LaunchConfig;
/// use cuda_core::{Program, ProgramOptions, StreamOptions};
///
/// let device = Device::new(0)?;
/// let code = Program::new(
///     r#"extern "C" __global__ void first(int* x) {
///            asm volatile("griddepcontrol.launch_dependents;");
///            x[threadIdx.x] = 1;
///        }"#,
///     ProgramOptions::default(),
/// )
/// .compile(CodeType::Cubin, &[])?;
/// let (a, b) = (
///     device.create_stream(StreamOptions::default())?,
///     device.create_stream(StreamOptions::default())?,
/// );
/// let early = device.create_event(EventOptions::default())?;
/// let x = device.memory_resource()?.allocate(128, &a)?;
/// // SAFETY: 32 threads write 32 ints of a 128-byte buffer.
/// unsafe {
///     launch_recording(&a, &LaunchConfig::new([1, 1, 1], [32, 1, 1]), &code.get_kernel("first")?,
///                      &[&x], &early, EventTrigger::LaunchDependents)?;
/// }
/// b.wait(&early)?; // work queued on `b` now may start before `first` ends
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[doc(alias = "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT")]
pub unsafe fn launch_recording(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
    event: &Event,
    trigger: EventTrigger,
) -> Result<()> {
    check_event(stream, event)?;
    // SAFETY: the caller's promise.
    unsafe { launch_with(stream, config, kernel, args, Some((event, trigger))) }?;
    event.note_record();
    Ok(())
}

#[cold]
fn check_event(stream: &Stream, event: &Event) -> Result<()> {
    if event.context().handle() != stream.context().handle() {
        return Err(invalid(
            "event",
            "the event is of another context than the stream".to_owned(),
        ));
    }
    if event.options().timing {
        return Err(invalid(
            "event",
            "a programmatic event must be made without timing (EventOptions::timing false)"
                .to_owned(),
        ));
    }
    needs_hopper(stream.device(), "event", "programmatic events need")
}

/// [`launch`] and [`launch_recording`].
#[inline(always)]
unsafe fn launch_with(
    stream: &Stream,
    config: &LaunchConfig,
    kernel: &Kernel,
    args: &[&dyn KernelArg],
    event: Option<(&Event, EventTrigger)>,
) -> Result<()> {
    let params = validate(stream.context(), config, kernel, args.len())?;
    let mut inline = [std::ptr::null_mut::<c_void>(); 16];
    let mut spilled = Vec::new();
    let pointers: &mut [*mut c_void] = if args.len() <= inline.len() {
        &mut inline[..args.len()]
    } else {
        spilled.resize(args.len(), std::ptr::null_mut());
        &mut spilled
    };
    // One pass: each argument's address, and its size against the parameter's; and whether a
    // buffer is ordered on another stream than the launch's (or the stream captures, in a
    // capture begun there: that path notes its buffers for the graph).
    let mut across = stream.began_capture();
    for (index, (slot, arg)) in pointers.iter_mut().zip(args).enumerate() {
        let wanted = params.map(|params| params[index].size);
        let bytes = arg_bytes(*arg, wanted);
        if let Some(wanted) = wanted {
            if wanted != bytes.size {
                return Err(wrong_size(kernel, index, bytes.size, wanted));
            }
        }
        if let Some(home) = bytes.home {
            across |= !home.same_as(stream);
        }
        *slot = bytes.ptr.cast_mut();
    }
    let extended = config.cluster.is_some()
        || config.cooperative
        || config.attributes.any()
        || event.is_some();
    let mut queue = move || {
        stream.queue(|driver, handle| {
            let mut params = LaunchParams {
                grid: config.grid,
                block: config.block,
                shared_mem_bytes: config.shared_memory_bytes,
                stream: handle,
                cluster: config.cluster,
                cooperative: config.cooperative,
                extras: crate::driver::LaunchExtras::default(),
            };
            let argv = pointers.as_mut_ptr();
            // SAFETY: `argv` holds one pointer per kernel parameter (count and sizes checked in
            // `validate`, or vouched for by the caller where the driver cannot describe them),
            // each to bytes borrowed for this call; the caller vouches for what the kernel does
            // with them.
            unsafe {
                if extended {
                    params.extras = config.attributes.extras();
                    params.extras.programmatic_event = event.map(|(event, trigger)| {
                        (event.handle(), trigger == EventTrigger::BlockStart)
                    });
                    driver.launch_kernel_ex(kernel.handle(), &params, argv)
                } else {
                    driver.launch_kernel(kernel.handle(), &params, argv)
                }
            }
        })
    };
    if across {
        return launch_across(stream, args, queue);
    }
    queue()
}

/// A launch that uses buffers ordered on other streams than its own (see
/// [`in_stream_order`](crate::order::in_stream_order)), or on a stream in a capture begun
/// there, whose buffers are noted for the graph the capture ends in.
#[cold]
#[inline(never)]
fn launch_across(
    stream: &Stream,
    args: &[&dyn KernelArg],
    queue: impl FnOnce() -> Result<()>,
) -> Result<()> {
    let mut homes: Vec<&Stream> = Vec::new();
    let mut own = false;
    for arg in args {
        if let Some(home) = arg.arg().home {
            if home.same_as(stream) {
                own = true;
            } else if !homes.iter().any(|h| h.same_as(home)) {
                homes.push(home);
            }
        }
    }
    if own {
        // Captured over a buffer of its own stream: noted for the graph the capture ends in.
        stream.note_own_home();
    }
    crate::order::in_stream_order(&homes, stream, queue)
}

fn invalid(name: &'static str, reason: String) -> Error {
    Error::InvalidArgument { name, reason }
}

/// The checks of [`launch`], before any driver call, but for the argument sizes, which
/// [`launch`] checks as it reads the arguments against the parameters returned here (`None`
/// where the driver cannot describe them).
#[inline]
fn validate<'k>(
    context: &Context,
    config: &LaunchConfig,
    kernel: &'k Kernel,
    args: usize,
) -> Result<Option<&'k [ParamInfo]>> {
    if config.grid.contains(&0) {
        return Err(invalid(
            "config.grid",
            format!("{:?} has a zero dimension", config.grid),
        ));
    }
    if config.block.contains(&0) {
        return Err(invalid(
            "config.block",
            format!("{:?} has a zero dimension", config.block),
        ));
    }
    let device = context.device();
    let limit = kernel.max_threads_per_block(device)?;
    let threads = config.threads_per_block().unwrap_or(u64::MAX);
    if threads > u64::from(limit) {
        return Err(invalid(
            "config.block",
            format!(
                "{:?} is {} threads; {} allows at most {limit} per block on device {}",
                config.block,
                config
                    .threads_per_block()
                    .map_or("more than 2^64".to_owned(), |t| t.to_string()),
                kernel.name(),
                device.ordinal()
            ),
        ));
    }
    if config.shared_memory_bytes > 0 {
        let allowed = kernel.max_dynamic_shared(device)?;
        if config.shared_memory_bytes > allowed {
            return Err(invalid(
                "config.shared_memory_bytes",
                format!(
                    "{} bytes of dynamic shared memory; {} allows {allowed} (raise it with \
                     Kernel::set_max_dynamic_shared_memory)",
                    config.shared_memory_bytes,
                    kernel.name()
                ),
            ));
        }
    }
    if let Some(cluster) = config.cluster {
        check_cluster(config, cluster, device)?;
    }
    if config.attributes.any() {
        check_attributes(config, device)?;
    }
    if config.cooperative {
        check_residency(context, config, kernel, threads)?;
    }
    check_arg_count(kernel, args, device)
}

/// The checks of [`launch`] for a graph's kernel node in `context` whose arguments are of
/// `sizes` bytes each. The launch options a node does not take (clusters, cooperative
/// launches, launch attributes) are refused by name.
pub(crate) fn validate_node(
    context: &Context,
    config: &LaunchConfig,
    kernel: &Kernel,
    sizes: &[usize],
) -> Result<()> {
    let refused = if config.cluster.is_some() {
        Some("config.cluster")
    } else if config.cooperative {
        Some("config.cooperative")
    } else if config.attributes.any() {
        Some("config.attributes")
    } else {
        None
    };
    if let Some(name) = refused {
        return Err(invalid(
            name,
            "graph kernel nodes are made without clusters, cooperative launches or launch \
             attributes here; capture a launch that has them (Stream::begin_capture) instead"
                .to_owned(),
        ));
    }
    if let Some(params) = validate(context, config, kernel, sizes.len())? {
        for (index, (param, &size)) in params.iter().zip(sizes).enumerate() {
            if param.size != size {
                return Err(wrong_size(kernel, index, size, param.size));
            }
        }
    }
    Ok(())
}

/// A cooperative launch's blocks must all be resident at once: at most the blocks per SM
/// times the SMs the stream's context may use (a green context's own, not the device's).
#[cold]
fn check_residency(
    context: &Context,
    config: &LaunchConfig,
    kernel: &Kernel,
    threads: u64,
) -> Result<()> {
    let device = context.device();
    // At most the kernel's limit, checked above: it fits a u32.
    let threads = u32::try_from(threads).unwrap_or(u32::MAX);
    let per_sm =
        kernel.max_active_blocks_per_sm(device, threads, config.shared_memory_bytes as usize)?;
    let sms = context.sm_count()?;
    let resident = u64::from(per_sm) * u64::from(sms);
    let blocks = config.blocks();
    if blocks.is_none_or(|blocks| blocks > resident) {
        let where_ = if context.is_green() {
            format!(
                "the green context's {sms} SMs of device {}",
                device.ordinal()
            )
        } else {
            format!("device {}'s {sms} SMs", device.ordinal())
        };
        return Err(invalid(
            "config.grid",
            format!(
                "a cooperative launch of {} blocks cannot be resident at once: {where_} hold \
                 {resident} such blocks ({per_sm} per SM)",
                blocks.map_or("more than 2^64".to_owned(), |b| b.to_string()),
            ),
        ));
    }
    Ok(())
}

/// The product of three dimensions, `None` past `u64`.
fn product(dims: [u32; 3]) -> Option<u64> {
    dims.iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(u64::from(d)))
}

#[cold]
fn check_cluster(config: &LaunchConfig, cluster: [u32; 3], device: crate::Device) -> Result<()> {
    if cluster.contains(&0) {
        return Err(invalid(
            "config.cluster",
            format!("{cluster:?} has a zero dimension"),
        ));
    }
    needs_hopper(device, "config.cluster", "thread-block clusters need")?;
    if config.grid.iter().zip(cluster).any(|(g, c)| g % c != 0) {
        return Err(invalid(
            "config.cluster",
            format!(
                "the grid {:?} is not a whole number of {cluster:?} clusters",
                config.grid
            ),
        ));
    }
    Ok(())
}

/// Launch attributes the driver would refuse, or ignore, refused first with the rule.
#[cold]
fn check_attributes(config: &LaunchConfig, device: crate::Device) -> Result<()> {
    let attributes = &config.attributes;
    if let Some(priority) = attributes.priority {
        let (least, greatest) = device.stream_priority_range()?;
        if priority > least || priority < greatest {
            return Err(invalid(
                "config.attributes.priority",
                format!(
                    "{priority} is outside device {}'s range {greatest} (highest) to {least} \
                     (lowest)",
                    device.ordinal()
                ),
            ));
        }
    }
    if attributes.cluster_scheduling_policy.is_some() && config.cluster.is_none() {
        return Err(invalid(
            "config.attributes.cluster_scheduling_policy",
            "a cluster scheduling policy needs a cluster shape (config.cluster)".to_owned(),
        ));
    }
    if let Some(preferred) = attributes.preferred_cluster {
        check_preferred_cluster(config, preferred)?;
    }
    if let Some(window) = attributes.access_policy_window {
        check_window(&window, device)?;
    }
    if attributes.programmatic_serialization {
        needs_hopper(
            device,
            "config.attributes.programmatic_serialization",
            "programmatic dependent launch needs",
        )?;
    }
    Ok(())
}

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR`.
const COMPUTE_CAPABILITY_MAJOR: i32 = 75;

/// Refuses argument `name` on a device older than compute capability 9.0; `needs` says what
/// needs it, with its verb ("thread-block clusters need").
#[inline]
fn needs_hopper(device: crate::Device, name: &'static str, needs: &str) -> Result<()> {
    // The major alone where the device has it (the launch's path); the minor for the message.
    if device.attribute(COMPUTE_CAPABILITY_MAJOR)? >= 9 {
        return Ok(());
    }
    too_old(device, name, needs)
}

#[cold]
fn too_old(device: crate::Device, name: &'static str, needs: &str) -> Result<()> {
    let (major, minor) = device.compute_capability()?;
    if major < 9 {
        return Err(invalid(
            name,
            format!(
                "{needs} compute capability 9.0; device {} is {major}.{minor}",
                device.ordinal()
            ),
        ));
    }
    Ok(())
}

#[cold]
fn check_preferred_cluster(config: &LaunchConfig, preferred: [u32; 3]) -> Result<()> {
    let name = "config.attributes.preferred_cluster";
    let Some(cluster) = config.cluster else {
        return Err(invalid(
            name,
            "a preferred cluster shape needs a regular one (config.cluster)".to_owned(),
        ));
    };
    if preferred.contains(&0) {
        return Err(invalid(name, format!("{preferred:?} has a zero dimension")));
    }
    if preferred.iter().zip(cluster).any(|(p, c)| p % c != 0) {
        return Err(invalid(
            name,
            format!("{preferred:?} is not a whole multiple of the cluster shape {cluster:?}"),
        ));
    }
    if config.grid.iter().zip(preferred).any(|(g, p)| g % p != 0) {
        return Err(invalid(
            name,
            format!(
                "the grid {:?} is not a whole number of {preferred:?} clusters",
                config.grid
            ),
        ));
    }
    Ok(())
}

#[cold]
fn check_window(window: &AccessPolicyWindow, device: crate::Device) -> Result<()> {
    let name = "config.attributes.access_policy_window";
    let largest = device.properties().max_access_policy_window_size()?;
    if window.bytes == 0 || window.bytes > largest as usize {
        return Err(invalid(
            name,
            format!(
                "{} bytes; device {} takes windows of 1 to {largest} bytes",
                window.bytes,
                device.ordinal()
            ),
        ));
    }
    if !(0.0..=1.0).contains(&window.hit_ratio) {
        return Err(invalid(
            name,
            format!("the hit ratio {} is outside 0 to 1", window.hit_ratio),
        ));
    }
    if window.miss == AccessProperty::Persisting {
        return Err(invalid(
            name,
            "misses cannot be persisting (normal or streaming)".to_owned(),
        ));
    }
    Ok(())
}

/// The kernel's parameters, where the driver describes them, checked against the number of
/// arguments.
#[inline]
fn check_arg_count(
    kernel: &Kernel,
    args: usize,
    device: crate::Device,
) -> Result<Option<&[ParamInfo]>> {
    let params = match kernel.params_on(device) {
        Ok(params) => params,
        // Drivers before 12.4 cannot describe parameters: nothing to check against.
        Err(Error::NotSupported { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    if params.len() != args {
        return Err(invalid(
            "args",
            format!(
                "{} takes {} argument(s), {args} given",
                kernel.name(),
                params.len(),
            ),
        ));
    }
    Ok(Some(params))
}

#[cold]
fn wrong_size(kernel: &Kernel, index: usize, size: usize, wanted: usize) -> Error {
    invalid(
        "args",
        format!(
            "argument {index} of {} is {size} bytes; the kernel's parameter is {wanted}",
            kernel.name()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DevicePtr;

    fn addr<T>(value: &T) -> *const c_void {
        (value as *const T).cast()
    }

    /// An argument's address and size, checking that a value names no stream.
    fn bytes(arg: ArgBytes<'_>) -> (*const c_void, usize) {
        assert!(arg.home.is_none(), "a value argument has no stream");
        (arg.ptr, arg.size)
    }

    /// Launch configurations compare and hash their access-policy window by every field, the
    /// ratio by its bits (so that a config can key a map, as `LaunchConfig` derives for).
    #[test]
    fn access_policy_windows_compare_and_hash_by_every_field() {
        use std::collections::hash_map::DefaultHasher;
        use std::hash::{Hash, Hasher};
        let hash = |w: &AccessPolicyWindow| {
            let mut h = DefaultHasher::new();
            w.hash(&mut h);
            h.finish()
        };
        let window = AccessPolicyWindow::persisting(DevicePtr(0x1000), 4096);
        let same = AccessPolicyWindow::persisting(DevicePtr(0x1000), 4096);
        assert_eq!(window, same);
        assert_eq!(hash(&window), hash(&same));
        let others = [
            AccessPolicyWindow {
                base: DevicePtr(0x2000),
                ..window
            },
            AccessPolicyWindow {
                bytes: 8192,
                ..window
            },
            AccessPolicyWindow {
                hit_ratio: 0.5,
                ..window
            },
            AccessPolicyWindow {
                hit: AccessProperty::Normal,
                ..window
            },
            AccessPolicyWindow {
                miss: AccessProperty::Normal,
                ..window
            },
        ];
        for other in others {
            assert_ne!(window, other, "{other:?}");
            assert_ne!(hash(&window), hash(&other), "{other:?}");
        }
    }

    #[test]
    fn launch_shapes_past_u64_are_none_not_wrapped() {
        let huge = LaunchConfig::new([1, 1, 1], [4_194_304; 3]);
        // 2^66 threads: wrapped, the product would be 0 and pass any limit.
        assert_eq!(huge.threads_per_block(), None);
        assert_eq!(LaunchConfig::new([u32::MAX; 3], [1, 1, 1]).blocks(), None);
        assert_eq!(
            LaunchConfig::new([2, 3, 4], [32, 8, 4]).threads_per_block(),
            Some(1024)
        );
        assert_eq!(LaunchConfig::new([2, 3, 4], [1, 1, 1]).blocks(), Some(24));
    }

    #[test]
    fn a_value_argument_is_its_own_bytes_whichever_way_it_is_read() {
        let n = 7i32;
        // The parameter's size matches: the address from the trait object itself.
        assert_eq!(bytes(arg_bytes(&n, Some(4))), (addr(&n), 4));
        // It does not, or no parameters are known: asked through the trait, same answer; the
        // caller then sees 4 against 8.
        assert_eq!(bytes(arg_bytes(&n, Some(8))), (addr(&n), 4));
        assert_eq!(bytes(arg_bytes(&n, None)), (addr(&n), 4));
        let d = DevicePtr(0x1000);
        assert_eq!(bytes(arg_bytes(&d, Some(8))), (addr(&d), 8));
        // A value as large as a wrapper goes through the trait, and still is itself.
        const SIZE: usize = {
            let mut size = std::mem::size_of::<u64>() + 1;
            while !is_wrapper_size(size) {
                size += 1;
            }
            size
        };
        let big = [3u8; SIZE];
        assert_eq!(bytes(arg_bytes(&big, Some(SIZE))), (addr(&big), SIZE));
    }
}
