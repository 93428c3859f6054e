//! All-reduce through cuda-core against the raw `ncclAllReduce`, on the same communicators,
//! buffers and streams (feature `nccl`: `cargo bench -p benches --features nccl --bench nccl`).
//!
//! | case | one iteration |
//! | --- | --- |
//! | `all_reduce_4B`, `all_reduce_1MiB`, `all_reduce_256MiB` | an out-of-place sum of that many bytes of `f32` on every device of this process (one communicator each, `Communicator::init_all`), queued back to back; the clock stops once every stream is synchronised after the last |
//!
//! Variants: `raw` calls the loaded NCCL's `ncclAllReduce` (in `ncclGroupStart` and
//! `ncclGroupEnd` where there are several devices) with the communicators' raw handles
//! (`Communicator::as_raw`), the buffers' addresses and the streams' handles; `cuda-core` calls
//! `Communicator::all_reduce` (`nccl::group` with several devices), which checks the arguments
//! and orders the buffers (on their own streams here: nothing to order).
//!
//! After the criterion groups, each size is timed once more as nccl-tests times it (5 warm-up
//! operations, then `n` back to back and one synchronisation), and printed with its algorithm
//! bandwidth (bytes / time) and its bus bandwidth, as nccl-tests computes it for an all-reduce:
//! `algbw × 2 (ranks − 1) / ranks` (0 with one rank: nothing crosses a link).
//!
//! Then each size below 64 MiB is queued alone, as the two variants' host cost: 15 interleaved
//! rounds of 100 calls each, timed without the synchronisation that follows, printed as the
//! medians per call and cuda-core/raw by round, with a third variant, `raw+get-current`: the
//! raw call after the driver's `cuCtxGetCurrent`, the context read cuda-core makes before it.
//!
//! Without a GPU or NCCL the suite prints one line saying so and exits with status 0.

mod common;

use std::cell::RefCell;
use std::ffi::c_void;
use std::time::{Duration, Instant};

use common::Case;
use cuda_core::nccl::{self, group, Communicator, ReduceOp};
use cuda_core::{Allocate, Buffer, Device, Stream, StreamOptions};

/// `ncclAllReduce`, as `nccl.h` declares it (`ncclFloat32` is 7, `ncclSum` 0).
type AllReduce = unsafe extern "C" fn(
    *const c_void,
    *mut c_void,
    usize,
    i32,
    i32,
    *mut c_void,
    *mut c_void,
) -> i32;
/// `ncclGroupStart` and `ncclGroupEnd`.
type GroupCall = unsafe extern "C" fn() -> i32;

/// `cuCtxGetCurrent`.
type GetCurrent = unsafe extern "C" fn(*mut *mut c_void) -> i32;

/// The loaded NCCL's functions, by their exported names, and the driver's `cuCtxGetCurrent`
/// (for the queueing's `raw+get-current`: the context read cuda-core makes before each call).
struct RawNccl {
    all_reduce: AllReduce,
    group_start: GroupCall,
    group_end: GroupCall,
    get_current: Option<GetCurrent>,
    _library: libloading::Library,
    _driver: Option<libloading::Library>,
}

impl RawNccl {
    /// The library cuda-core loaded (the loader hands back the same one).
    fn load() -> Result<RawNccl, String> {
        let path = nccl::library_path().map_err(|e| e.to_string())?;
        // SAFETY: the NCCL cuda-core has loaded already; loading it again runs nothing new.
        let library = unsafe { libloading::Library::new(&path) }.map_err(|e| e.to_string())?;
        // SAFETY: each symbol has the signature nccl.h gives it, and the library is kept.
        unsafe {
            let all_reduce = *library
                .get::<AllReduce>(b"ncclAllReduce\0")
                .map_err(|e| e.to_string())?;
            let group_start = *library
                .get::<GroupCall>(b"ncclGroupStart\0")
                .map_err(|e| e.to_string())?;
            let group_end = *library
                .get::<GroupCall>(b"ncclGroupEnd\0")
                .map_err(|e| e.to_string())?;
            // The driver cuda-core loaded: loading it again runs nothing new.
            let driver = libloading::Library::new("libcuda.so.1").ok();
            let get_current = driver
                .as_ref()
                .and_then(|d| d.get::<GetCurrent>(b"cuCtxGetCurrent\0").ok())
                .map(|f| *f);
            Ok(RawNccl {
                all_reduce,
                group_start,
                group_end,
                get_current,
                _library: library,
                _driver: driver,
            })
        }
    }
}

/// One rank's stream and buffers (its communicator is the same rank of `init_all`'s).
struct Rank {
    stream: Stream,
    send: Buffer,
    recv: Buffer,
}

/// The sizes timed, in bytes.
const SIZES: [(&str, usize); 3] = [
    ("all_reduce_4B", 4),
    ("all_reduce_1MiB", 1 << 20),
    ("all_reduce_256MiB", 256 << 20),
];

fn main() {
    if common::gpu_or_skip("nccl").is_none() {
        return;
    }
    if let Err(e) = nccl::version() {
        println!("nccl: no NCCL ({e}); skipped");
        return;
    }
    let raw = match RawNccl::load() {
        Ok(raw) => raw,
        Err(why) => {
            println!("nccl: NCCL's symbols ({why}); skipped");
            return;
        }
    };
    let devices = Device::all().expect("the devices");
    let comms = Communicator::init_all(&devices).expect("one communicator per device");
    // The first device's context current, as an NCCL program sets its device before its
    // calls: cuda-core queues each call with its stream's context current, and would otherwise
    // push and pop it around every call (NCCL sets the device itself, through the runtime).
    devices[0]
        .set_current()
        .expect("making the first device current");
    let mut c = common::criterion();
    let mut report = Vec::new();
    let mut queued = Vec::new();
    for (name, bytes) in SIZES {
        let ranks = RefCell::new(ranks_of(&devices, bytes));
        Case::new(name)
            .variant("raw", |b| {
                b.iter_custom(|iters| time_raw(&raw, &comms, &ranks.borrow(), iters))
            })
            .variant("cuda-core", |b| {
                b.iter_custom(|iters| time_core(&comms, &mut ranks.borrow_mut(), iters))
            })
            .run(&mut c);
        let mut ranks = ranks.into_inner();
        let iters = if bytes >= 64 << 20 { 20 } else { 1000 };
        time_raw(&raw, &comms, &ranks, 5);
        let raw_time = time_raw(&raw, &comms, &ranks, iters) / iters as u32;
        time_core(&comms, &mut ranks, 5);
        let core_time = time_core(&comms, &mut ranks, iters) / iters as u32;
        if bytes < 64 << 20 {
            queued.push((name, queue_times(&raw, &comms, &mut ranks)));
        }
        report.push((name, bytes, raw_time, core_time));
    }
    c.final_summary();
    println!(
        "queueing alone (the GPU's work left out): median time per call, cuda-core/raw by round"
    );
    for (name, q) in queued {
        let [low, high] = q.spread;
        let (raw_ns, core_ns) = (q.raw.as_secs_f64() * 1e9, q.core.as_secs_f64() * 1e9);
        println!(
            "{name:>18}: raw {raw_ns:>8.1} ns  cuda-core {core_ns:>8.1} ns  ({:+.1} ns, {:.2}; \
             {low:.2}-{high:.2})",
            core_ns - raw_ns,
            core_ns / raw_ns,
        );
        if let Some(read) = q.raw_get_current {
            let read_ns = read.as_secs_f64() * 1e9;
            println!(
                "{name:>18}: raw+get-current {read_ns:>8.1} ns ({:+.1} ns over raw)",
                read_ns - raw_ns
            );
        }
    }
    let n = devices.len();
    println!("all-reduce of f32 (sum, out of place), {n} rank(s), one per device; bus bandwidth as nccl-tests: algbw x 2(n-1)/n");
    for (name, bytes, raw_time, core_time) in report {
        for (variant, time) in [("raw", raw_time), ("cuda-core", core_time)] {
            let algbw = bytes as f64 / time.as_secs_f64() / 1e9;
            let busbw = algbw * 2.0 * (n as f64 - 1.0) / n as f64;
            println!(
                "{name:>18} {variant:>9}: {:>10.2} us  algbw {algbw:>8.2} GB/s  busbw {busbw:>8.2} GB/s",
                time.as_secs_f64() * 1e6
            );
        }
    }
}

/// Each device's stream and two buffers of `bytes` (the one sent holds 1.0s).
fn ranks_of(devices: &[Device], bytes: usize) -> Vec<Rank> {
    devices
        .iter()
        .map(|&device| {
            let stream = device
                .create_stream(StreamOptions::default())
                .expect("a stream");
            let memory = device.memory_resource().expect("the default resource");
            let mut send = memory.allocate(bytes, &stream).expect("a buffer");
            send.fill(0x3f80_0000u32, &stream).expect("a fill");
            let recv = memory.allocate(bytes, &stream).expect("a buffer");
            stream.sync().expect("the fill");
            Rank { stream, send, recv }
        })
        .collect()
}

/// Syncs every rank's stream.
fn sync(ranks: &[Rank]) {
    for rank in ranks {
        rank.stream.sync().expect("the all-reduce");
    }
}

/// `iters` raw all-reduces, then the streams synchronised.
fn time_raw(raw: &RawNccl, comms: &[Communicator], ranks: &[Rank], iters: u64) -> Duration {
    let start = Instant::now();
    queue_raw(raw, comms, ranks, iters, None);
    sync(ranks);
    start.elapsed()
}

/// Queues `iters` raw all-reduces, each after a `get_current` where given.
fn queue_raw(
    raw: &RawNccl,
    comms: &[Communicator],
    ranks: &[Rank],
    iters: u64,
    get_current: Option<GetCurrent>,
) {
    let several = ranks.len() > 1;
    for _ in 0..iters {
        if several {
            // SAFETY: a group of this thread's, ended below.
            assert_eq!(unsafe { (raw.group_start)() }, 0);
        }
        for (comm, rank) in comms.iter().zip(ranks) {
            if let Some(get_current) = get_current {
                let mut context = std::ptr::null_mut();
                // SAFETY: a writable out-pointer.
                assert_eq!(unsafe { get_current(&mut context) }, 0, "cuCtxGetCurrent");
                std::hint::black_box(context);
            }
            let count = rank.send.size() / 4;
            // SAFETY: two buffers of `count` f32 of the communicator's device, alive until the
            // streams are synchronised; the communicator's and stream's raw handles.
            let result = unsafe {
                (raw.all_reduce)(
                    std::ptr::without_provenance(rank.send.ptr().0 as usize),
                    std::ptr::without_provenance_mut(rank.recv.ptr().0 as usize),
                    count,
                    7,
                    0,
                    comm.as_raw(),
                    rank.stream.as_raw(),
                )
            };
            assert_eq!(result, 0, "ncclAllReduce");
        }
        if several {
            // SAFETY: ends the group started above.
            assert_eq!(unsafe { (raw.group_end)() }, 0);
        }
    }
}

/// `iters` all-reduces through cuda-core, then the streams synchronised.
fn time_core(comms: &[Communicator], ranks: &mut [Rank], iters: u64) -> Duration {
    let start = Instant::now();
    queue_core(comms, ranks, iters);
    sync(ranks);
    start.elapsed()
}

/// Queues `iters` all-reduces through cuda-core.
fn queue_core(comms: &[Communicator], ranks: &mut [Rank], iters: u64) {
    for _ in 0..iters {
        if let ([comm], [rank]) = (comms, &mut *ranks) {
            comm.all_reduce::<f32>(&rank.send, &mut rank.recv, ReduceOp::Sum, &rank.stream)
                .expect("all_reduce");
        } else {
            group(|g| {
                for (comm, rank) in comms.iter().zip(ranks.iter_mut()) {
                    let Rank { stream, send, recv } = rank;
                    g.all_reduce::<f32>(comm, &*send, recv, ReduceOp::Sum, stream)?;
                }
                Ok(())
            })
            .expect("all_reduce in a group");
        }
    }
}

/// The time each variant takes to queue one all-reduce, the GPU's work left out: `ROUNDS`
/// interleaved rounds of `QUEUED` calls each (few enough that the queue never fills), the
/// streams synchronised between them outside the clock. The medians of `raw`, `cuda-core`
/// and `raw+get-current` (where the driver's `cuCtxGetCurrent` loaded), and cuda-core/raw's
/// spread by round.
fn queue_times(raw: &RawNccl, comms: &[Communicator], ranks: &mut [Rank]) -> Queued {
    const ROUNDS: usize = 15;
    const QUEUED: u64 = 100;
    let (mut raw_times, mut core_times, mut read_times) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let start = Instant::now();
        queue_raw(raw, comms, ranks, QUEUED, None);
        raw_times.push(start.elapsed() / QUEUED as u32);
        sync(ranks);
        let start = Instant::now();
        queue_core(comms, ranks, QUEUED);
        core_times.push(start.elapsed() / QUEUED as u32);
        sync(ranks);
        if raw.get_current.is_some() {
            let start = Instant::now();
            queue_raw(raw, comms, ranks, QUEUED, raw.get_current);
            read_times.push(start.elapsed() / QUEUED as u32);
            sync(ranks);
        }
    }
    let ratios: Vec<f64> = raw_times
        .iter()
        .zip(&core_times)
        .map(|(r, c)| c.as_secs_f64() / r.as_secs_f64())
        .collect();
    let spread = [
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
    ];
    let median = |mut times: Vec<Duration>| {
        times.sort();
        times.get(times.len() / 2).copied()
    };
    Queued {
        raw: median(raw_times).unwrap_or_default(),
        core: median(core_times).unwrap_or_default(),
        raw_get_current: median(read_times),
        spread,
    }
}

/// What [`queue_times`] measured.
struct Queued {
    raw: Duration,
    core: Duration,
    raw_get_current: Option<Duration>,
    spread: [f64; 2],
}
