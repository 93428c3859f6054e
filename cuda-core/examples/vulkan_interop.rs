//! Vulkan and CUDA working on one buffer, ordered by one timeline semaphore, with no copy and
//! no host wait between them.
//!
//! Vulkan allocates a storage buffer of 2^20 `u32`s and a timeline semaphore, both exportable
//! as opaque file descriptors; CUDA imports them (`ExternalMemory::import_fd`,
//! `ExternalSemaphore::import_fd`) and sees the buffer as an ordinary `Buffer`. Then, all
//! queued before the host waits for anything:
//!
//! 1. a CUDA kernel writes `x[i] = 3i + 1`, and the stream signals the semaphore to 1;
//! 2. a Vulkan compute dispatch (a WGSL shader compiled to SPIR-V at run time by naga) waits
//!    for 1, computes `x[i] = 2 x[i] + 7`, and signals 2;
//! 3. the CUDA stream waits for 2, a second kernel computes `x[i] ^= 0x5a5a5a5a`, and the buffer
//!    is read back and checked, element by element, against the CPU.
//!
//! ```text
//! cargo run -p cuda-core --release --example vulkan_interop
//! ```
//!
//! It needs a Vulkan driver for the same GPU as CUDA device 0 (the Vulkan device is picked by
//! its UUID); no display or window system is used. Where there is no Vulkan loader, no Vulkan
//! driver, or no Vulkan device with that UUID, it prints `not run: <why>` and
//! succeeds, unless `CUDA_CORE_TEST_REQUIRE` (comma-separated words) names `vulkan`: then not
//! running is a failure.

mod common;

use std::error::Error;
use std::fmt;
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::ExitCode;
use std::time::Duration;

use ash::vk;
use cuda_core::interop::{ExternalMemory, ExternalSemaphore, SemaphoreKind};
use cuda_core::{
    launch, CodeType, Device, LaunchConfig, Program, ProgramOptions, StreamOptions, Uuid,
};

type BoxError = Box<dyn Error>;

/// Elements of the shared buffer.
const N: usize = 1 << 20;
/// The shared buffer's size in bytes (what the shader and the kernels see).
const BYTES: u64 = (N * std::mem::size_of::<u32>()) as u64;
/// Threads of a CUDA block and of a Vulkan workgroup (the shader's `@workgroup_size`).
const GROUP: u32 = 256;
/// The constant the second CUDA kernel XORs in.
const MASK: u32 = 0x5a5a_5a5a;
/// How long the host waits for the GPU work before calling it lost.
const PATIENCE: Duration = Duration::from_secs(60);

/// The timeline's values: CUDA's first kernel is done, then Vulkan's dispatch is.
const CUDA_WROTE: u64 = 1;
const VULKAN_WROTE: u64 = 2;

/// CUDA's two kernels (NVRTC); unsigned arithmetic wraps, as the CPU check's does.
const KERNELS: &str = r#"
extern "C" __global__ void fill(unsigned* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = i * 3u + 1u;
}

extern "C" __global__ void scramble(unsigned* x, unsigned mask, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] ^= mask;
}
"#;

/// Vulkan's compute shader (WGSL, compiled to SPIR-V by naga); u32 arithmetic wraps in WGSL.
const SHADER: &str = r#"
@group(0) @binding(0) var<storage, read_write> data: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i < arrayLength(&data)) {
        data[i] = data[i] * 2u + 7u;
    }
}
"#;

/// What element `i` holds after the three passes.
fn expected(i: u32) -> u32 {
    let cuda = i.wrapping_mul(3).wrapping_add(1);
    let vulkan = cuda.wrapping_mul(2).wrapping_add(7);
    vulkan ^ MASK
}

/// Why the example cannot run here (no Vulkan loader, driver, or matching device): not a
/// failure unless `CUDA_CORE_TEST_REQUIRE` names `vulkan`.
#[derive(Debug)]
struct NotRun(String);

impl fmt::Display for NotRun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for NotRun {}

/// `Err(NotRun)`, boxed, for `?`.
fn not_run<T>(why: impl Into<String>) -> Result<T, BoxError> {
    Err(Box::new(NotRun(why.into())))
}

/// Maps a failed Vulkan call to an error that names it.
fn failed(call: &'static str) -> impl FnOnce(vk::Result) -> BoxError {
    move |result| format!("{call} failed: {result:?} ({result})").into()
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => match error.downcast::<NotRun>() {
            Ok(why) => common::not_run("vulkan_interop", "vulkan", &why.0),
            Err(error) => common::main_with("vulkan_interop", || Err(error)),
        },
    }
}

fn run() -> Result<(), BoxError> {
    // CUDA first: its device's UUID is how the Vulkan device is found.
    let device = Device::new(0)?;
    device.set_current()?;
    let uuid = device.uuid()?;
    println!(
        "CUDA device 0: {} (sm_{}, UUID {uuid})",
        device.name()?,
        device.arch()?
    );
    let code = Program::new(KERNELS, ProgramOptions::default())
        .with_name("vulkan_interop.cu")
        .compile(CodeType::Cubin, &[])?;
    let fill = code.get_kernel("fill")?;
    let scramble = code.get_kernel("scramble")?;
    let stream = device.create_stream(StreamOptions::default())?;

    // Vulkan: the device of the same UUID, the shared buffer and semaphore, and the compute
    // pass, recorded once. Dropping `vulkan` destroys all of it.
    let spirv = compile_shader()?;
    let mut vulkan = Vulkan::new(&uuid, &spirv)?;
    println!(
        "Vulkan device: {} (UUID {uuid}, the same GPU), queue family {}",
        vulkan.name, vulkan.family
    );

    // CUDA imports both. The imports own the descriptors; Vulkan keeps its own references.
    let memory_fd = vulkan.export_memory()?;
    let semaphore_fd = vulkan.export_semaphore()?;
    // SAFETY: `memory_fd` is the opaque descriptor of `vulkan.memory`, a dedicated allocation
    // of `allocation_size` bytes on this GPU (matched by UUID), which `vulkan` keeps allocated
    // until after the import is dropped. Vulkan touches it only in the dispatch below, between
    // the semaphore's values 1 and 2, which the CUDA stream signals and waits for.
    let memory =
        unsafe { ExternalMemory::import_fd(device, memory_fd, vulkan.allocation_size, true)? };
    // SAFETY: `semaphore_fd` is the opaque descriptor of `vulkan.semaphore`, a timeline
    // semaphore of this GPU; the values signalled and waited for below are in increasing order.
    let timeline =
        unsafe { ExternalSemaphore::import_fd(device, semaphore_fd, SemaphoreKind::Timeline)? };
    let shared = memory.buffer(0, N * std::mem::size_of::<u32>(), &stream)?;

    // All the work, queued without a host wait: CUDA writes, Vulkan updates, CUDA updates.
    let count = N as u32;
    let config = LaunchConfig::for_elements(N as u64, GROUP);
    // SAFETY: `shared` holds N u32s; the kernel writes x[i] for i < N only. Vulkan does not
    // touch the buffer before the semaphore reaches 1, signalled after this kernel.
    unsafe { launch(&stream, &config, &fill, &[&shared, &count])? };
    stream.signal_semaphore(&timeline, CUDA_WROTE)?;
    vulkan.submit(CUDA_WROTE, VULKAN_WROTE)?;
    stream.wait_semaphore(&timeline, VULKAN_WROTE)?;
    // SAFETY: as above, reading and writing x[i] for i < N; it runs once Vulkan's dispatch has
    // signalled 2, and Vulkan does nothing more with the buffer.
    unsafe { launch(&stream, &config, &scramble, &[&shared, &MASK, &count])? };

    // One bounded wait for all of it, so that a lost signal is an error rather than a hang.
    match stream.sync_timeout(PATIENCE) {
        Ok(()) => {}
        Err(error @ cuda_core::Error::Timeout { .. }) => {
            let reached = vulkan
                .timeline_value()
                .map_or_else(|e| format!("unknown ({e:?})"), |v| v.to_string());
            // The stream may wait for good, and dropping these waits for the stream: keep them
            // (the process ends soon after). `vulkan` gives up on its own wait in its drop.
            std::mem::forget(shared);
            std::mem::forget(timeline);
            std::mem::forget(memory);
            return Err(format!(
                "{error}: the timeline semaphore is at {reached} (1: CUDA's signal reached \
                 Vulkan; 2: Vulkan's dispatch signalled)"
            )
            .into());
        }
        Err(error) => return Err(error.into()),
    }
    let out = shared.to_vec::<u32>(&stream)?;

    if out.len() != N {
        return Err(format!("read back {} elements, not {N}", out.len()).into());
    }
    let wrong: Vec<usize> = (0..N).filter(|&i| out[i] != expected(i as u32)).collect();
    println!(
        "checked {} elements against the CPU: {} mismatches",
        out.len(),
        wrong.len()
    );

    // Tidy up in order: both sides are idle, CUDA lets go of the memory and the semaphore,
    // then Vulkan destroys its objects.
    stream.sync()?;
    vulkan.wait_idle()?;
    drop(shared);
    drop(timeline);
    drop(memory);
    drop(vulkan);

    if let Some(&first) = wrong.first() {
        return Err(format!(
            "{} of {N} elements differ from the CPU's; the first, x[{first}], is {:#010x}, \
             not {:#010x}",
            wrong.len(),
            out[first],
            expected(first as u32)
        )
        .into());
    }
    println!("all {N} elements match: CUDA -> Vulkan -> CUDA on one buffer, no copies");
    Ok(())
}

/// Compiles the WGSL shader to SPIR-V words with naga.
fn compile_shader() -> Result<Vec<u32>, BoxError> {
    let module = naga::front::wgsl::parse_str(SHADER)
        .map_err(|e| format!("parsing the WGSL shader: {}", e.emit_to_string(SHADER)))?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::default(),
    )
    .validate(&module)
    .map_err(|e| format!("validating the shader: {}", e.emit_to_string(SHADER)))?;
    // SPIR-V 1.0 (the default), which every Vulkan version takes.
    let options = naga::back::spv::Options::default();
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".into(),
    };
    let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
        .map_err(|e| format!("writing the shader's SPIR-V: {e}"))?;
    Ok(words)
}

/// The Vulkan loader and an instance, destroyed on drop.
struct Instance {
    /// Keeps the loader library loaded while the instance lives.
    _entry: ash::Entry,
    raw: ash::Instance,
}

impl Instance {
    /// Loads the Vulkan loader and makes a Vulkan 1.2 instance with no layers and no
    /// extensions (no surface: the example draws nothing). `NotRun` where there is no loader
    /// or no driver.
    fn new() -> Result<Instance, BoxError> {
        // SAFETY: loading `libvulkan.so.1` runs the system Vulkan loader's initialisers, which
        // is what using Vulkan at all takes.
        let entry = match unsafe { ash::Entry::load() } {
            Ok(entry) => entry,
            Err(e) => return not_run(format!("no Vulkan loader (libvulkan.so.1): {e}")),
        };
        // SAFETY: a loaded entry; the call takes nothing of ours.
        let version = unsafe { entry.try_enumerate_instance_version() }
            .map_err(failed("vkEnumerateInstanceVersion"))?
            .unwrap_or(vk::API_VERSION_1_0);
        if version < vk::API_VERSION_1_2 {
            return not_run(format!(
                "the Vulkan loader is version {}.{}; 1.2 is needed",
                vk::api_version_major(version),
                vk::api_version_minor(version)
            ));
        }
        let app = vk::ApplicationInfo::default()
            .application_name(c"vulkan_interop")
            .api_version(vk::API_VERSION_1_2);
        let info = vk::InstanceCreateInfo::default().application_info(&app);
        // SAFETY: `info` and the application info it points to live for the call.
        let raw = match unsafe { entry.create_instance(&info, None) } {
            Ok(raw) => raw,
            Err(
                e @ (vk::Result::ERROR_INCOMPATIBLE_DRIVER
                | vk::Result::ERROR_INITIALIZATION_FAILED),
            ) => return not_run(format!("no usable Vulkan driver (vkCreateInstance: {e:?})")),
            Err(e) => return Err(failed("vkCreateInstance")(e)),
        };
        Ok(Instance { _entry: entry, raw })
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        // SAFETY: every object made from the instance (the device) was destroyed first:
        // `Vulkan` destroys its device before dropping its instance.
        unsafe { self.raw.destroy_instance(None) };
    }
}

/// The Vulkan device chosen, with what the example needs of it.
struct Chosen {
    physical: vk::PhysicalDevice,
    name: String,
    /// A queue family with compute.
    family: u32,
}

/// The physical device whose `deviceUUID` is CUDA's: `NotRun` where there is none.
fn pick_device(instance: &ash::Instance, uuid: &Uuid) -> Result<Chosen, BoxError> {
    // SAFETY: a live instance.
    let physicals = match unsafe { instance.enumerate_physical_devices() } {
        Ok(physicals) => physicals,
        // A driver that is installed but cannot reach its GPU (a container without it, say).
        Err(e @ vk::Result::ERROR_INITIALIZATION_FAILED) => {
            return not_run(format!(
                "no usable Vulkan driver (vkEnumeratePhysicalDevices: {e:?})"
            ))
        }
        Err(e) => return Err(failed("vkEnumeratePhysicalDevices")(e)),
    };
    if physicals.is_empty() {
        return not_run("Vulkan lists no device (no Vulkan driver for this GPU?)");
    }
    let mut seen = Vec::new();
    for physical in physicals {
        // SAFETY: a device the instance listed.
        let basic = unsafe { instance.get_physical_device_properties(physical) };
        let name = basic.device_name_as_c_str().map_or_else(
            |_| "(unnamed)".to_owned(),
            |name| name.to_string_lossy().into_owned(),
        );
        if basic.api_version < vk::API_VERSION_1_2 {
            seen.push(format!(
                "{name} (Vulkan {}.{}, under 1.2)",
                vk::api_version_major(basic.api_version),
                vk::api_version_minor(basic.api_version)
            ));
            continue;
        }
        let mut id = vk::PhysicalDeviceIDProperties::default();
        let mut properties = vk::PhysicalDeviceProperties2::default().push_next(&mut id);
        // SAFETY: a Vulkan 1.2 device, whose properties query takes the ID properties (core
        // since 1.1); the chain lives for the call.
        unsafe { instance.get_physical_device_properties2(physical, &mut properties) };
        if id.device_uuid != uuid.0 {
            seen.push(format!("{name} (UUID {})", Uuid(id.device_uuid)));
            continue;
        }
        // SAFETY: as above.
        let families = unsafe { instance.get_physical_device_queue_family_properties(physical) };
        let family = families
            .iter()
            .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE) && f.queue_count > 0)
            .ok_or_else(|| format!("the Vulkan device {name} has no compute queue"))?;
        return Ok(Chosen {
            physical,
            name,
            family: family as u32,
        });
    }
    not_run(format!(
        "no Vulkan device is CUDA device 0 (UUID {uuid}); Vulkan lists {}",
        seen.join(", ")
    ))
}

/// Checks that the chosen device can export the buffer's memory and a timeline semaphore as
/// opaque file descriptors: a clear error rather than a failed call later.
fn check_support(instance: &ash::Instance, chosen: &Chosen) -> Result<(), BoxError> {
    let name = &chosen.name;
    // SAFETY: a device the instance listed.
    let extensions = unsafe { instance.enumerate_device_extension_properties(chosen.physical) }
        .map_err(failed("vkEnumerateDeviceExtensionProperties"))?;
    for wanted in [
        ash::khr::external_memory_fd::NAME,
        ash::khr::external_semaphore_fd::NAME,
    ] {
        if !extensions
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(wanted))
        {
            return Err(format!("the Vulkan device {name} lacks {wanted:?}").into());
        }
    }

    let mut vulkan12 = vk::PhysicalDeviceVulkan12Features::default();
    let mut features = vk::PhysicalDeviceFeatures2::default().push_next(&mut vulkan12);
    // SAFETY: a Vulkan 1.2 device, which takes the 1.2 features structure; the chain lives
    // for the call.
    unsafe { instance.get_physical_device_features2(chosen.physical, &mut features) };
    if vulkan12.timeline_semaphore == vk::FALSE {
        return Err(format!("the Vulkan device {name} has no timeline semaphores").into());
    }

    let buffer_info = vk::PhysicalDeviceExternalBufferInfo::default()
        .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
        .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
    let mut buffer_properties = vk::ExternalBufferProperties::default();
    // SAFETY: valid structures that live for the call.
    unsafe {
        instance.get_physical_device_external_buffer_properties(
            chosen.physical,
            &buffer_info,
            &mut buffer_properties,
        )
    };
    let memory_features = buffer_properties
        .external_memory_properties
        .external_memory_features;
    if !memory_features.contains(vk::ExternalMemoryFeatureFlags::EXPORTABLE) {
        return Err(format!(
            "the Vulkan device {name} cannot export a storage buffer's memory as an opaque \
             file descriptor"
        )
        .into());
    }

    let mut timeline = vk::SemaphoreTypeCreateInfo::default()
        .semaphore_type(vk::SemaphoreType::TIMELINE)
        .initial_value(0);
    let semaphore_info = vk::PhysicalDeviceExternalSemaphoreInfo::default()
        .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD)
        .push_next(&mut timeline);
    let mut semaphore_properties = vk::ExternalSemaphoreProperties::default();
    // SAFETY: valid structures (the timeline type chained, as Vulkan 1.2 allows) that live for
    // the call.
    unsafe {
        instance.get_physical_device_external_semaphore_properties(
            chosen.physical,
            &semaphore_info,
            &mut semaphore_properties,
        )
    };
    if !semaphore_properties
        .external_semaphore_features
        .contains(vk::ExternalSemaphoreFeatureFlags::EXPORTABLE)
    {
        return Err(format!(
            "the Vulkan device {name} cannot export a timeline semaphore as an opaque file \
             descriptor"
        )
        .into());
    }
    Ok(())
}

/// The Vulkan side: a device of CUDA's GPU, the shared buffer, its memory and the timeline
/// semaphore (both exportable), and a compute pipeline whose one command buffer runs the
/// shader over the buffer.
///
/// Objects are made one after the other into this value, so that a failure half-way destroys
/// what was made (destroying a null handle does nothing); drop waits for submitted work first.
struct Vulkan {
    device: ash::Device,
    memory_fd: ash::khr::external_memory_fd::Device,
    semaphore_fd: ash::khr::external_semaphore_fd::Device,
    name: String,
    family: u32,
    queue: vk::Queue,
    memory_properties: vk::PhysicalDeviceMemoryProperties,

    buffer: vk::Buffer,
    memory: vk::DeviceMemory,
    /// The memory's `allocationSize` (the buffer's memory requirements), which CUDA's import
    /// must repeat.
    allocation_size: u64,
    semaphore: vk::Semaphore,
    set_layout: vk::DescriptorSetLayout,
    descriptor_pool: vk::DescriptorPool,
    /// Freed with its pool.
    descriptor_set: vk::DescriptorSet,
    shader: vk::ShaderModule,
    pipeline_layout: vk::PipelineLayout,
    pipeline: vk::Pipeline,
    command_pool: vk::CommandPool,
    /// Freed with its pool.
    commands: vk::CommandBuffer,
    /// The timeline value the last submission signals, until the host has seen it.
    pending: Option<u64>,

    /// Destroyed last, by hand, after the device (and never where the device is left alive).
    instance: ManuallyDrop<Instance>,
}

impl Vulkan {
    /// The device of CUDA's `uuid`, with everything made and the command buffer recorded.
    fn new(uuid: &Uuid, spirv: &[u32]) -> Result<Vulkan, BoxError> {
        let instance = Instance::new()?;
        let chosen = pick_device(&instance.raw, uuid)?;
        check_support(&instance.raw, &chosen)?;

        let priorities = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(chosen.family)
            .queue_priorities(&priorities)];
        let extensions = [
            ash::khr::external_memory_fd::NAME.as_ptr(),
            ash::khr::external_semaphore_fd::NAME.as_ptr(),
        ];
        let mut vulkan12 = vk::PhysicalDeviceVulkan12Features::default().timeline_semaphore(true);
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&extensions)
            .push_next(&mut vulkan12);
        // SAFETY: a device the instance listed, with a compute queue family, both extensions
        // and the timeline feature checked above; `info` and all it points to live for the call.
        let device = unsafe { instance.raw.create_device(chosen.physical, &info, None) }
            .map_err(failed("vkCreateDevice"))?;
        // SAFETY: queue 0 of the family the device was made with one queue of.
        let queue = unsafe { device.get_device_queue(chosen.family, 0) };
        // SAFETY: a device of the instance.
        let memory_properties = unsafe {
            instance
                .raw
                .get_physical_device_memory_properties(chosen.physical)
        };

        let mut vulkan = Vulkan {
            memory_fd: ash::khr::external_memory_fd::Device::new(&instance.raw, &device),
            semaphore_fd: ash::khr::external_semaphore_fd::Device::new(&instance.raw, &device),
            device,
            name: chosen.name,
            family: chosen.family,
            queue,
            memory_properties,
            buffer: vk::Buffer::null(),
            memory: vk::DeviceMemory::null(),
            allocation_size: 0,
            semaphore: vk::Semaphore::null(),
            set_layout: vk::DescriptorSetLayout::null(),
            descriptor_pool: vk::DescriptorPool::null(),
            descriptor_set: vk::DescriptorSet::null(),
            shader: vk::ShaderModule::null(),
            pipeline_layout: vk::PipelineLayout::null(),
            pipeline: vk::Pipeline::null(),
            command_pool: vk::CommandPool::null(),
            commands: vk::CommandBuffer::null(),
            pending: None,
            instance: ManuallyDrop::new(instance),
        };
        vulkan.make_buffer()?;
        vulkan.make_semaphore()?;
        vulkan.make_pipeline(spirv)?;
        vulkan.record()?;
        Ok(vulkan)
    }

    /// The shared storage buffer, bound to a dedicated device-local allocation exportable as
    /// an opaque file descriptor.
    fn make_buffer(&mut self) -> Result<(), BoxError> {
        let opaque_fd = vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD;
        let mut external = vk::ExternalMemoryBufferCreateInfo::default().handle_types(opaque_fd);
        let info = vk::BufferCreateInfo::default()
            .size(BYTES)
            .usage(vk::BufferUsageFlags::STORAGE_BUFFER)
            .sharing_mode(vk::SharingMode::EXCLUSIVE)
            .push_next(&mut external);
        // SAFETY: a valid create info whose chain lives for the call.
        self.buffer =
            unsafe { self.device.create_buffer(&info, None) }.map_err(failed("vkCreateBuffer"))?;
        // SAFETY: a live buffer of this device.
        let requirements = unsafe { self.device.get_buffer_memory_requirements(self.buffer) };
        let type_index = self
            .device_local_type(requirements.memory_type_bits)
            .ok_or("no device-local memory type takes the exportable storage buffer")?;

        let mut dedicated = vk::MemoryDedicatedAllocateInfo::default().buffer(self.buffer);
        let mut export = vk::ExportMemoryAllocateInfo::default().handle_types(opaque_fd);
        let info = vk::MemoryAllocateInfo::default()
            .allocation_size(requirements.size)
            .memory_type_index(type_index)
            .push_next(&mut export)
            .push_next(&mut dedicated);
        // SAFETY: a valid allocate info (a memory type the buffer takes, its required size,
        // dedicated to the live buffer) whose chain lives for the call.
        self.memory = unsafe { self.device.allocate_memory(&info, None) }
            .map_err(failed("vkAllocateMemory"))?;
        self.allocation_size = requirements.size;
        // SAFETY: the allocation is dedicated to this buffer and as large as it requires; the
        // buffer has no memory bound yet.
        unsafe { self.device.bind_buffer_memory(self.buffer, self.memory, 0) }
            .map_err(failed("vkBindBufferMemory"))?;
        Ok(())
    }

    /// The first memory type of `allowed` that is device-local, preferring one the host
    /// cannot map (plain video memory over the BAR-mapped kind).
    fn device_local_type(&self, allowed: u32) -> Option<u32> {
        let types = self.memory_properties.memory_types_as_slice();
        let candidates = || {
            (0..types.len()).filter(move |&i| {
                allowed & (1 << i) != 0
                    && types[i]
                        .property_flags
                        .contains(vk::MemoryPropertyFlags::DEVICE_LOCAL)
            })
        };
        let host_visible = |i: usize| {
            types[i]
                .property_flags
                .contains(vk::MemoryPropertyFlags::HOST_VISIBLE)
        };
        candidates()
            .find(|&i| !host_visible(i))
            .or_else(|| candidates().next())
            .map(|i| i as u32)
    }

    /// The timeline semaphore, at 0, exportable as an opaque file descriptor.
    fn make_semaphore(&mut self) -> Result<(), BoxError> {
        let mut timeline = vk::SemaphoreTypeCreateInfo::default()
            .semaphore_type(vk::SemaphoreType::TIMELINE)
            .initial_value(0);
        let mut export = vk::ExportSemaphoreCreateInfo::default()
            .handle_types(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        let info = vk::SemaphoreCreateInfo::default()
            .push_next(&mut timeline)
            .push_next(&mut export);
        // SAFETY: a valid create info whose chain lives for the call; timeline semaphores are
        // enabled on the device.
        self.semaphore = unsafe { self.device.create_semaphore(&info, None) }
            .map_err(failed("vkCreateSemaphore"))?;
        Ok(())
    }

    /// The descriptor set layout (binding 0: one storage buffer), the pipeline layout, the
    /// shader module, the compute pipeline, and a descriptor set pointing at the buffer.
    fn make_pipeline(&mut self, spirv: &[u32]) -> Result<(), BoxError> {
        let bindings = [vk::DescriptorSetLayoutBinding::default()
            .binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .descriptor_count(1)
            .stage_flags(vk::ShaderStageFlags::COMPUTE)];
        let info = vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings);
        // SAFETY: a valid create info; `bindings` lives for the call.
        self.set_layout = unsafe { self.device.create_descriptor_set_layout(&info, None) }
            .map_err(failed("vkCreateDescriptorSetLayout"))?;

        let set_layouts = [self.set_layout];
        let info = vk::PipelineLayoutCreateInfo::default().set_layouts(&set_layouts);
        // SAFETY: a valid create info naming a live set layout.
        self.pipeline_layout = unsafe { self.device.create_pipeline_layout(&info, None) }
            .map_err(failed("vkCreatePipelineLayout"))?;

        let info = vk::ShaderModuleCreateInfo::default().code(spirv);
        // SAFETY: `spirv` is naga's output for a validated module: SPIR-V words, starting with
        // the magic number, which live for the call.
        self.shader = unsafe { self.device.create_shader_module(&info, None) }
            .map_err(failed("vkCreateShaderModule"))?;

        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(self.shader)
            .name(c"main");
        let infos = [vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(self.pipeline_layout)];
        // SAFETY: the module has a compute entry point `main` whose one resource (set 0,
        // binding 0, a storage buffer) the layout declares; everything lives for the call.
        let pipelines = unsafe {
            self.device
                .create_compute_pipelines(vk::PipelineCache::null(), &infos, None)
        }
        .map_err(|(_, result)| failed("vkCreateComputePipelines")(result))?;
        self.pipeline = pipelines
            .first()
            .copied()
            .ok_or("vkCreateComputePipelines returned no pipeline")?;

        let sizes = [vk::DescriptorPoolSize {
            ty: vk::DescriptorType::STORAGE_BUFFER,
            descriptor_count: 1,
        }];
        let info = vk::DescriptorPoolCreateInfo::default()
            .max_sets(1)
            .pool_sizes(&sizes);
        // SAFETY: a valid create info; `sizes` lives for the call.
        self.descriptor_pool = unsafe { self.device.create_descriptor_pool(&info, None) }
            .map_err(failed("vkCreateDescriptorPool"))?;
        let info = vk::DescriptorSetAllocateInfo::default()
            .descriptor_pool(self.descriptor_pool)
            .set_layouts(&set_layouts);
        // SAFETY: one set of a live layout from a pool made for exactly one such set.
        let sets = unsafe { self.device.allocate_descriptor_sets(&info) }
            .map_err(failed("vkAllocateDescriptorSets"))?;
        self.descriptor_set = sets
            .first()
            .copied()
            .ok_or("vkAllocateDescriptorSets returned no set")?;

        // The whole buffer, so that `arrayLength(&data)` is N.
        let buffers = [vk::DescriptorBufferInfo::default()
            .buffer(self.buffer)
            .offset(0)
            .range(BYTES)];
        let writes = [vk::WriteDescriptorSet::default()
            .dst_set(self.descriptor_set)
            .dst_binding(0)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .buffer_info(&buffers)];
        // SAFETY: the set is live and not in use by any command buffer yet; the buffer is a
        // live storage buffer with memory bound; the arrays live for the call.
        unsafe { self.device.update_descriptor_sets(&writes, &[]) };
        Ok(())
    }

    /// Records the command buffer: take the buffer over from outside Vulkan (CUDA), run the
    /// shader over all N elements, hand the buffer back.
    fn record(&mut self) -> Result<(), BoxError> {
        let info = vk::CommandPoolCreateInfo::default().queue_family_index(self.family);
        // SAFETY: a valid create info for the device's queue family.
        self.command_pool = unsafe { self.device.create_command_pool(&info, None) }
            .map_err(failed("vkCreateCommandPool"))?;
        let info = vk::CommandBufferAllocateInfo::default()
            .command_pool(self.command_pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: one primary command buffer from a live pool.
        let buffers = unsafe { self.device.allocate_command_buffers(&info) }
            .map_err(failed("vkAllocateCommandBuffers"))?;
        self.commands = buffers
            .first()
            .copied()
            .ok_or("vkAllocateCommandBuffers returned no command buffer")?;
        let commands = self.commands;

        // Memory written outside Vulkan is acquired from `VK_QUEUE_FAMILY_EXTERNAL` before
        // the queue uses it, and released back after, as the specification asks of external
        // memory. The semaphore wait (at the compute stage) orders CUDA's writes before the
        // acquire; the signal after the batch orders the release before CUDA's later work.
        let whole = |barrier: vk::BufferMemoryBarrier<'static>| {
            barrier.buffer(self.buffer).offset(0).size(vk::WHOLE_SIZE)
        };
        let acquire = [whole(
            vk::BufferMemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::empty())
                .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)
                .src_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL)
                .dst_queue_family_index(self.family),
        )];
        let release = [whole(
            vk::BufferMemoryBarrier::default()
                .src_access_mask(vk::AccessFlags::SHADER_WRITE)
                .dst_access_mask(vk::AccessFlags::empty())
                .src_queue_family_index(self.family)
                .dst_queue_family_index(vk::QUEUE_FAMILY_EXTERNAL),
        )];
        let groups = (N as u32).div_ceil(GROUP);
        let begin = vk::CommandBufferBeginInfo::default()
            .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
        // SAFETY: a fresh command buffer of this device, recorded once here, with live
        // objects: the pipeline, its layout, the set (binding the buffer) made for that layout,
        // and barriers over the live buffer. 4096 groups of 256 are within every device's
        // limits (at least 65535 groups in x).
        unsafe {
            let device = &self.device;
            device
                .begin_command_buffer(commands, &begin)
                .map_err(failed("vkBeginCommandBuffer"))?;
            device.cmd_pipeline_barrier(
                commands,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &[],
                &acquire,
                &[],
            );
            device.cmd_bind_pipeline(commands, vk::PipelineBindPoint::COMPUTE, self.pipeline);
            device.cmd_bind_descriptor_sets(
                commands,
                vk::PipelineBindPoint::COMPUTE,
                self.pipeline_layout,
                0,
                &[self.descriptor_set],
                &[],
            );
            device.cmd_dispatch(commands, groups, 1, 1);
            device.cmd_pipeline_barrier(
                commands,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                vk::DependencyFlags::empty(),
                &[],
                &release,
                &[],
            );
            device
                .end_command_buffer(commands)
                .map_err(failed("vkEndCommandBuffer"))?;
        }
        Ok(())
    }

    /// An opaque file descriptor of the buffer's memory (`vkGetMemoryFdKHR`), a new reference
    /// to it that the caller owns.
    fn export_memory(&self) -> Result<OwnedFd, BoxError> {
        let info = vk::MemoryGetFdInfoKHR::default()
            .memory(self.memory)
            .handle_type(vk::ExternalMemoryHandleTypeFlags::OPAQUE_FD);
        // SAFETY: the memory is live and was allocated exportable as an opaque descriptor.
        let fd =
            unsafe { self.memory_fd.get_memory_fd(&info) }.map_err(failed("vkGetMemoryFdKHR"))?;
        // SAFETY: on success vkGetMemoryFdKHR returns a new, open descriptor that belongs to
        // the caller alone (Vulkan keeps none): it is owned once, here.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// An opaque file descriptor of the timeline semaphore (`vkGetSemaphoreFdKHR`), owned by
    /// the caller.
    fn export_semaphore(&self) -> Result<OwnedFd, BoxError> {
        let info = vk::SemaphoreGetFdInfoKHR::default()
            .semaphore(self.semaphore)
            .handle_type(vk::ExternalSemaphoreHandleTypeFlags::OPAQUE_FD);
        // SAFETY: the semaphore is live and was made exportable as an opaque descriptor
        // (which, unlike a sync descriptor, needs no pending signal).
        let fd = unsafe { self.semaphore_fd.get_semaphore_fd(&info) }
            .map_err(failed("vkGetSemaphoreFdKHR"))?;
        // SAFETY: on success vkGetSemaphoreFdKHR returns a new, open descriptor that belongs
        // to the caller alone: it is owned once, here.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Submits the recorded pass: it waits (at the compute stage) for the timeline to reach
    /// `wait` and raises it to `signal` when done.
    fn submit(&mut self, wait: u64, signal: u64) -> Result<(), BoxError> {
        let semaphores = [self.semaphore];
        let stages = [vk::PipelineStageFlags::COMPUTE_SHADER];
        let commands = [self.commands];
        let wait_values = [wait];
        let signal_values = [signal];
        let mut timeline = vk::TimelineSemaphoreSubmitInfo::default()
            .wait_semaphore_values(&wait_values)
            .signal_semaphore_values(&signal_values);
        let submit = vk::SubmitInfo::default()
            .wait_semaphores(&semaphores)
            .wait_dst_stage_mask(&stages)
            .command_buffers(&commands)
            .signal_semaphores(&semaphores)
            .push_next(&mut timeline);
        // SAFETY: the command buffer is recorded, submitted once (one-time submit), and kept
        // until the host has seen `signal` (drop waits for it); the timeline semaphore is
        // waited for and signalled with one value each, `signal` above any value signalled
        // before; the arrays live for the call. Waiting for a value that CUDA signals later is
        // allowed for a timeline semaphore.
        unsafe {
            self.device
                .queue_submit(self.queue, &[submit], vk::Fence::null())
        }
        .map_err(failed("vkQueueSubmit"))?;
        self.pending = Some(signal);
        Ok(())
    }

    /// The timeline semaphore's current value.
    fn timeline_value(&self) -> Result<u64, vk::Result> {
        // SAFETY: a live timeline semaphore of this device.
        unsafe { self.device.get_semaphore_counter_value(self.semaphore) }
    }

    /// Waits (at most `timeout`) for the timeline to reach `value`.
    fn wait_for(&self, value: u64, timeout: Duration) -> Result<(), vk::Result> {
        let semaphores = [self.semaphore];
        let values = [value];
        let info = vk::SemaphoreWaitInfo::default()
            .semaphores(&semaphores)
            .values(&values);
        let nanos = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        // SAFETY: a live timeline semaphore of this device; the arrays live for the call.
        unsafe { self.device.wait_semaphores(&info, nanos) }
    }

    /// Waits until the queue's work is done (`vkQueueWaitIdle`).
    fn wait_idle(&mut self) -> Result<(), BoxError> {
        // SAFETY: a queue of this device, used by this thread only.
        unsafe { self.device.queue_wait_idle(self.queue) }.map_err(failed("vkQueueWaitIdle"))?;
        self.pending = None;
        Ok(())
    }
}

impl Drop for Vulkan {
    fn drop(&mut self) {
        // Submitted work still uses the objects: wait for it, bounded, since it waits for
        // CUDA's signal, which a failed CUDA stream never gives. Where it does not finish,
        // everything is left alive (the process ends soon after) rather than destroyed in use.
        if let Some(value) = self.pending.take() {
            if let Err(result) = self.wait_for(value, PATIENCE) {
                eprintln!(
                    "vulkan_interop: Vulkan's dispatch did not finish ({result:?}); its objects \
                     are left alive"
                );
                return;
            }
        }
        // SAFETY: no work of the device is pending (waited for above, or never submitted);
        // each object is destroyed once, children before their parents, the device before
        // its instance; null handles (objects never made) are ignored by Vulkan. CUDA's
        // imports hold their own references to the memory and the semaphore.
        unsafe {
            let device = &self.device;
            if let Err(result) = device.device_wait_idle() {
                eprintln!("vulkan_interop: vkDeviceWaitIdle failed: {result:?}");
            }
            device.destroy_command_pool(self.command_pool, None);
            device.destroy_pipeline(self.pipeline, None);
            device.destroy_shader_module(self.shader, None);
            device.destroy_pipeline_layout(self.pipeline_layout, None);
            device.destroy_descriptor_pool(self.descriptor_pool, None);
            device.destroy_descriptor_set_layout(self.set_layout, None);
            device.destroy_semaphore(self.semaphore, None);
            device.destroy_buffer(self.buffer, None);
            device.free_memory(self.memory, None);
            device.destroy_device(None);
            ManuallyDrop::drop(&mut self.instance);
        }
    }
}
