//! NCCL through cuda-core (feature `nccl`).
//!
//! Without a GPU:
//! - loading: a missing override, the loader and the wheels' folders named in the error (each
//!   in a child process: the library is loaded once per process); the installed NCCL's version
//!   and unique ids, where one is installed (`not run` otherwise, which fails where
//!   `CUDA_CORE_TEST_REQUIRE` names `nccl`);
//! - against the stand-in driver and the stand-in NCCL (`tests/standin/libnccl_standin.c`,
//!   which writes its calls into the driver's log): every check made before NCCL, what NCCL
//!   gets for each call, the buffers' stream order around a call and a group, groups that end
//!   on an error and a panic, non-blocking communicators, a failed peer, NCCL's memory and
//!   registrations, split and finalize, a library too old or lacking a function;
//! - the TCP bootstrap of a unique id over loopback (`bootstrap`: made-up ids, no NCCL).
//!
//! On a GPU (`#[ignore = "needs a CUDA GPU"]`): every collective of every device of this
//! process checked against the CPU, one rank from a unique id (blocking and not, split,
//! finalize), NCCL's memory and a registration, bad inputs, and several ranks on one GPU in
//! child processes (run, or `not run` with NCCL's refusal). With two GPUs
//! (`#[ignore = "needs two CUDA GPUs"]`): two processes' all-reduce and split, and a peer
//! process that dies while the survivor waits.

// The GPU tests walk ranks by number, each indexing several per-rank vectors at once.
#![allow(clippy::needless_range_loop)]

mod bootstrap;

use std::io::{Read, Write};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::common::{self, standin};
use cuda_core::memory::{PinnedMemoryPool, PinnedMemoryPoolOptions, PinnedMemoryResource};
use cuda_core::nccl::{
    self, group, CommConfig, Communicator, DataType, NcclMemoryResource, ReduceOp, UniqueId,
};
use cuda_core::{Allocate, Buffer, Device, Error, Stream, StreamOptions};

// ---- helpers ------------------------------------------------------------------------------

/// Runs `body` in a child process of this test binary with `env` set (`None`: removed), for
/// what must load NCCL afresh. A test that makes several children names each by `role`.
fn in_child(function: &str, role: &str, env: &[(&str, Option<&str>)], body: impl FnOnce()) {
    let test = common::test_name(module_path!(), function);
    let marker = format!("child: {test} {role} done");
    if let Some(running) = common::child_role(&test) {
        if running == role {
            body();
            println!("{marker}");
        }
        return;
    }
    let mut child = common::child_command(&test, role);
    for (name, value) in env {
        match value {
            Some(value) => child.env(name, value),
            None => child.env_remove(name),
        };
    }
    common::wait_child(child.spawn().expect("a child starts"), &test, &marker);
}

/// The argument an [`Error::InvalidArgument`] names, and why.
fn refused(result: cuda_core::Result<impl std::fmt::Debug>) -> (&'static str, String) {
    match result {
        Err(Error::InvalidArgument { name, reason }) => (name, reason),
        other => panic!("expected an invalid argument, got {other:?}"),
    }
}

/// The stand-in's name of `stream` in the driver's log (`s3`).
fn name_of(stream: &Stream) -> String {
    stream.sync().unwrap();
    let line = standin::last_call("cuStreamSynchronize");
    line.rsplit(' ').next().unwrap().to_owned()
}

/// The index of the first line at or after `from` that contains every one of `needles`.
fn find(log: &[&str], from: usize, needles: &[&str]) -> usize {
    (from..log.len())
        .find(|&i| needles.iter().all(|n| log[i].contains(n)))
        .unwrap_or_else(|| {
            panic!(
                "no line with {needles:?} after line {from} in:\n{}",
                log.join("\n")
            )
        })
}

/// The lines NCCL's stand-in logged since the log was cleared.
fn nccl_lines() -> Vec<String> {
    standin::calls("## ")
}

/// `%p` as glibc prints it.
fn p(address: u64) -> String {
    if address == 0 {
        "(nil)".to_owned()
    } else {
        format!("{address:#x}")
    }
}

/// A stream of `device`.
fn stream(device: Device) -> Stream {
    device.create_stream(StreamOptions::default()).unwrap()
}

/// `bytes` of `device`'s default resource on `stream`.
fn buffer(device: Device, stream: &Stream, bytes: usize) -> Buffer {
    device
        .memory_resource()
        .unwrap()
        .allocate(bytes, stream)
        .unwrap()
}

/// NCCL's version, or `None` after saying why not (for tests that need the real library).
fn real_nccl() -> Option<(u32, u32, u32)> {
    match nccl::version() {
        Ok(version) => Some(version),
        Err(e) => {
            common::not_run("nccl", &format!("no NCCL library: {e}"));
            None
        }
    }
}

// ---- loading ------------------------------------------------------------------------------

#[test]
fn a_missing_override_is_the_one_place_tried_and_named() {
    in_child(
        "a_missing_override_is_the_one_place_tried_and_named",
        "absolute",
        &[(
            "CUDA_CORE_NCCL_PATH",
            Some("/nonexistent/nccl/libnccl.so.2"),
        )],
        || {
            for error in [
                nccl::version().map(|_| ()).unwrap_err(),
                UniqueId::new().map(|_| ()).unwrap_err(),
                nccl::library_path().map(|_| ()).unwrap_err(),
            ] {
                let Error::NcclNotFound { reason, .. } = &error else {
                    panic!("expected NcclNotFound, got {error:?}");
                };
                assert!(
                    reason.contains("/nonexistent/nccl/libnccl.so.2: no such file"),
                    "{reason}"
                );
                assert!(reason.contains("nothing else is tried"), "{reason}");
                assert!(!reason.contains("loader search path"), "{reason}");
            }
        },
    );
    // A relative path would name a file of the working directory: refused as such.
    in_child(
        "a_missing_override_is_the_one_place_tried_and_named",
        "relative",
        &[("CUDA_CORE_NCCL_PATH", Some("lib/libnccl.so.2"))],
        || {
            let reason = nccl::version().unwrap_err().to_string();
            assert!(reason.contains("not an absolute path"), "{reason}");
        },
    );
}

#[test]
fn without_an_override_the_loader_and_the_wheels_folders_are_named() {
    const VENV: &str = "CUDA_CORE_TEST_NCCL_VENV";
    let test = "without_an_override_the_loader_and_the_wheels_folders_are_named";
    let dir = tempfile::tempdir().unwrap();
    let venv = match std::env::var(VENV) {
        Ok(venv) => std::path::PathBuf::from(venv),
        Err(_) => {
            // A wheel's folder holding a file that is no library.
            let lib = dir
                .path()
                .join("lib/python3.11/site-packages/nvidia/nccl/lib");
            std::fs::create_dir_all(&lib).unwrap();
            std::fs::write(lib.join("libnccl.so.2"), "not a library").unwrap();
            dir.path().to_path_buf()
        }
    };
    let venv_text = venv.display().to_string();
    in_child(
        test,
        "child",
        &[
            ("CUDA_CORE_NCCL_PATH", None),
            ("VIRTUAL_ENV", Some(&venv_text)),
            (VENV, Some(&venv_text)),
            ("CONDA_PREFIX", None),
            // No python3 to ask, and no folder the loader would search but its own.
            ("PATH", Some("/nonexistent")),
            ("LD_LIBRARY_PATH", None),
        ],
        || {
            let venv = std::path::PathBuf::from(std::env::var(VENV).unwrap());
            let wheel = venv.join("lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2");
            match nccl::version() {
                Ok(version) => println!(
                    "this machine's loader finds NCCL {version:?} ({:?}) before any wheel",
                    nccl::library_path()
                ),
                Err(Error::NcclNotFound { reason, .. }) => {
                    assert!(
                        reason.contains("libnccl.so.2 (loader search path): "),
                        "{reason}"
                    );
                    assert!(
                        reason.contains(&format!("{}: ", wheel.display())),
                        "the wheel's file is named with the loader's reason: {reason}"
                    );
                    assert!(reason.contains("pip install nvidia-nccl-cu12"), "{reason}");
                }
                Err(other) => panic!("expected NcclNotFound, got {other:?}"),
            }
        },
    );
}

#[test]
fn the_installed_nccl_reports_its_version_and_makes_unique_ids() {
    in_child(
        "the_installed_nccl_reports_its_version_and_makes_unique_ids",
        "child",
        &[],
        || {
            let Some((major, minor, patch)) = real_nccl() else {
                return;
            };
            println!(
                "NCCL {major}.{minor}.{patch} from {}",
                nccl::library_path().unwrap().display()
            );
            assert_eq!(major, 2);
            assert!(minor >= 19, "{major}.{minor}.{patch}");
            // An id needs no GPU: NCCL starts its bootstrap listener in this process.
            let (a, b) = (UniqueId::new().unwrap(), UniqueId::new().unwrap());
            assert_ne!(a, b, "two ids name two listeners");
            assert!(a.as_bytes().iter().any(|&byte| byte != 0));
            assert_eq!(UniqueId::from_bytes(a.as_bytes()).unwrap(), a);
        },
    );
}

#[test]
fn unique_ids_go_through_their_bytes_and_nothing_else() {
    let bytes: [u8; 128] = std::array::from_fn(|i| (i * 7) as u8);
    let id = UniqueId::from_bytes(&bytes).unwrap();
    assert_eq!(id.as_bytes(), &bytes);
    assert_eq!(UniqueId::from(bytes), id);
    assert_eq!(UniqueId::BYTES, 128);
    for length in [0, 64, 127, 129, 256] {
        let (name, reason) = refused(UniqueId::from_bytes(&vec![1; length]));
        assert_eq!(name, "bytes");
        assert!(reason.starts_with(&format!("{length} bytes")), "{reason}");
    }
}

// ---- the stand-in: checks before NCCL ------------------------------------------------------

#[test]
fn a_communicator_is_made_with_its_device_current_and_destroyed_on_drop() {
    standin::run_with_nccl(
        module_path!(),
        "a_communicator_is_made_with_its_device_current_and_destroyed_on_drop",
        &[],
        &[],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let id = UniqueId::new().unwrap();
            standin::clear_log();
            let comm = Communicator::init_rank(&id, 4, 2, d1).unwrap();
            assert_eq!((comm.rank(), comm.size(), comm.device()), (2, 4, d1));
            assert!(comm.is_blocking() && comm.is_ready().unwrap());
            let made = standin::last_call("## ncclCommInitRank");
            let prefix = format!("id={:02x}{:02x}", id.as_bytes()[0], id.as_bytes()[1]);
            assert!(
                made.contains("nranks=4 rank=2 dev=1") && made.contains(&prefix),
                "{made}"
            );
            assert!(!comm.as_raw().is_null());
            drop(comm);
            let destroyed = standin::last_call("## ncclCommDestroy");
            assert!(
                destroyed.contains("rank=2 finalized=0 dev=1"),
                "{destroyed}"
            );

            // One process, several devices: rank i on devices[i].
            let comms = Communicator::init_all(&[d1, d0]).unwrap();
            let all = standin::last_call("## ncclCommInitAll");
            assert!(all.contains("ndev=2 devices=1,0"), "{all}");
            let shape: Vec<_> = comms
                .iter()
                .map(|c| (c.rank(), c.size(), c.device()))
                .collect();
            assert_eq!(shape, [(0, 2, d1), (1, 2, d0)]);
            drop(comms);
            assert_eq!(standin::calls("## ncclCommDestroy").len(), 3);
            assert!(standin::calls("MISUSE").is_empty(), "{}", standin::log());
        },
    );
}

#[test]
fn every_argument_is_checked_before_nccl() {
    standin::run_with_nccl(
        module_path!(),
        "every_argument_is_checked_before_nccl",
        &[],
        &[],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let (s0, s1) = (stream(d0), stream(d1));
            let id = UniqueId::new().unwrap();
            let comm = Communicator::init_rank(&id, 2, 0, d0).unwrap();
            let other = Communicator::init_rank(&id, 2, 1, d0).unwrap();
            let a = buffer(d0, &s0, 4096); // 1024 f32
            let mut b = buffer(d0, &s0, 4096);
            let mut half = buffer(d0, &s0, 2048);
            let mut elsewhere = buffer(d1, &s1, 4096);
            let host_memory =
                PinnedMemoryPool::new(d0, PinnedMemoryPoolOptions::default()).unwrap();
            let mut host = host_memory.allocate(4096, &s0).unwrap();
            let shared = Arc::new(buffer(d0, &s0, 8192));
            let first = shared.shared_slice(0..4096).unwrap();
            let straddling = shared.shared_slice(2048..6144).unwrap();
            let twelve = shared.shared_slice(0..12).unwrap(); // 3 f32: not 2 even parts
            let doubles = comm.pre_mul_sum(0.5f64).unwrap();
            let theirs = other.pre_mul_sum(0.5f32).unwrap();
            standin::clear_log();

            let mut count = 0;
            let mut check = |result: cuda_core::Result<()>, name: &str, words: &str| {
                count += 1;
                let (refused_name, reason) = refused(result);
                assert_eq!(refused_name, name, "{reason}");
                assert!(reason.contains(words), "{name}: {reason:?} lacks {words:?}");
            };
            check(
                comm.all_reduce::<f32>(&a, &mut b, ReduceOp::Sum, &s1),
                "stream",
                "device 1",
            );
            check(
                comm.all_reduce::<f32>(&elsewhere, &mut b, ReduceOp::Sum, &s0),
                "send",
                "device 1",
            );
            check(
                comm.all_reduce::<f32>(&a, &mut host, ReduceOp::Sum, &s0),
                "recv",
                "host memory",
            );
            check(
                comm.all_reduce::<f32>(a.slice(0..4094).unwrap(), &mut b, ReduceOp::Sum, &s0),
                "send",
                "whole number",
            );
            check(
                comm.all_reduce::<f32>(a.slice(2..2050).unwrap(), &mut half, ReduceOp::Sum, &s0),
                "send",
                "not aligned",
            );
            check(
                comm.all_reduce::<f32>(&a, &mut half, ReduceOp::Sum, &s0),
                "recv",
                "holds 512",
            );
            check(
                comm.all_reduce::<f32>(&first, &straddling, ReduceOp::Sum, &s0),
                "recv",
                "overlap",
            );
            check(
                comm.all_reduce::<f32>(&a, &mut b, ReduceOp::PreMulSum(&doubles), &s0),
                "op",
                "made for ncclFloat64",
            );
            check(
                comm.all_reduce::<f32>(&a, &mut b, ReduceOp::PreMulSum(&theirs), &s0),
                "op",
                "another communicator",
            );
            check(comm.broadcast::<f32>(&a, &mut b, 2, &s0), "root", "rank 2");
            check(
                comm.reduce_to_root::<f32>(&a, ReduceOp::Sum, 0, &s0),
                "root",
                "this rank",
            );
            check(
                comm.reduce::<f32>(&a, &mut half, ReduceOp::Max, 1, &s0),
                "recv",
                "holds 512",
            );
            check(
                comm.all_gather::<f32>(&a, &mut b, &s0),
                "recv",
                "writes 2048",
            );
            check(
                comm.reduce_scatter::<f32>(&a, &mut b, ReduceOp::Sum, &s0),
                "send",
                "reads 2048",
            );
            check(
                comm.all_gather_in_place::<f32>(&twelve, &s0),
                "buf",
                "split evenly",
            );
            check(
                comm.reduce_scatter_in_place::<f32>(&twelve, ReduceOp::Sum, &s0),
                "buf",
                "split evenly",
            );
            check(
                comm.all_reduce_in_place::<f64>(&twelve, ReduceOp::Sum, &s0),
                "buf",
                "whole number",
            );
            check(comm.send::<u8>(&a, 2, &s0), "peer", "rank 2");
            check(comm.recv::<u8>(&mut elsewhere, 7, &s0), "peer", "rank 7");
            check(
                comm.register(&Arc::new(buffer(d1, &s1, 64))).map(|_| ()),
                "buffer",
                "device 1",
            );
            check(
                Communicator::init_rank(&id, 0, 0, d0).map(|_| ()),
                "size",
                "0 ranks",
            );
            check(
                Communicator::init_rank(&id, 2, 2, d0).map(|_| ()),
                "rank",
                "rank 2 of",
            );
            check(
                Communicator::init_all(&[d0, d1, d0]).map(|_| ()),
                "devices",
                "appears twice",
            );
            check(
                Communicator::init_all(&[]).map(|_| ()),
                "devices",
                "no devices",
            );
            check(
                comm.split(Some(u32::MAX), 0).map(|_| ()),
                "color",
                "past NCCL's colors",
            );
            check(
                Communicator::init_rank_with(
                    &id,
                    2,
                    0,
                    d0,
                    &CommConfig::default().with_net_name("IB\0"),
                )
                .map(|_| ()),
                "config",
                "NUL",
            );
            check(
                Communicator::init_rank_with(
                    &id,
                    2,
                    0,
                    d0,
                    &CommConfig::default().with_max_ctas(u32::MAX),
                )
                .map(|_| ()),
                "config",
                "max_ctas",
            );
            // All-to-all, gather and scatter (rank 0 of 2).
            let whole = shared.shared_slice(..).unwrap(); // 2048 f32: 2 parts of 1024
            let other_twelve = shared.shared_slice(4096..4108).unwrap();
            check(
                comm.all_to_all::<f32>(&a, &mut half, &s0),
                "recv",
                "an all-to-all",
            );
            check(
                comm.all_to_all::<f32>(&twelve, &other_twelve, &s0),
                "send",
                "split evenly",
            );
            check(
                comm.all_to_all::<f32>(&first, &straddling, &s0),
                "recv",
                "none documented",
            );
            check(
                comm.gather::<f32>(&a, &mut b, 0, &s0),
                "recv",
                "a gather of 1024 from each of 2 ranks writes 2048",
            );
            check(
                comm.gather::<f32>(&first, &whole, 0, &s0),
                "recv",
                "none documented",
            );
            check(comm.gather_to_root::<f32>(&a, 0, &s0), "root", "receives");
            check(comm.gather::<f32>(&a, &whole, 2, &s0), "root", "");
            check(
                comm.scatter::<f32>(&a, &mut b, 1, &s0),
                "send",
                "a scatter of 1024 to each of 2 ranks reads 2048",
            );
            check(
                comm.scatter_from_root::<f32>(&mut b, 0, &s0),
                "root",
                "sends",
            );
            // Inside a group: the communicator's own calls, and another group.
            check(
                group(|_| comm.all_reduce::<f32>(&a, &mut b, ReduceOp::Sum, &s0)),
                "self",
                "inside nccl::group",
            );
            check(
                group(|_| comm.split(Some(0), 0).map(|_| ())),
                "self",
                "inside nccl::group",
            );
            check(group(|_| group(|_| Ok(()))), "body", "already open");
            // Nothing of it reached NCCL: only the groups' starts and ends.
            let reached: Vec<String> = nccl_lines()
                .into_iter()
                .filter(|l| !l.contains("ncclGroupStart") && !l.contains("ncclGroupEnd"))
                .collect();
            assert_eq!(count, 39);
            assert!(
                reached.is_empty(),
                "refused calls reached NCCL: {reached:#?}"
            );

            // The same call, right, does.
            comm.all_reduce::<f32>(&a, &mut b, ReduceOp::Sum, &s0)
                .unwrap();
            let line = standin::last_call("## ncclAllReduce");
            let want = format!(
                "send={} recv={} count=1024 type=7 op=0",
                p(a.ptr().0),
                p(b.ptr().0)
            );
            assert!(line.contains(&want), "{line}");
            assert!(standin::calls("MISUSE").is_empty(), "{}", standin::log());
        },
    );
}

// ---- the stand-in: what NCCL gets ----------------------------------------------------------

#[test]
fn each_call_reaches_nccl_with_its_addresses_count_type_operation_and_stream() {
    standin::run_with_nccl(
        module_path!(),
        "each_call_reaches_nccl_with_its_addresses_count_type_operation_and_stream",
        &[],
        &[],
        || {
            let d0 = Device::new(0).unwrap();
            let s = stream(d0);
            let on = name_of(&s);
            let id = UniqueId::new().unwrap();
            // Rank 1 of 4: its part of an in-place all-gather or reduce-scatter is the second.
            let comm = Communicator::init_rank(&id, 4, 1, d0).unwrap();
            let x = buffer(d0, &s, 4096);
            let mut y = buffer(d0, &s, 4096);
            let mut big = buffer(d0, &s, 16384);
            let (xp, yp, bp) = (x.ptr().0, y.ptr().0, big.ptr().0);
            let expect = |call: &str, fields: &str| {
                let line = standin::last_call(&format!("## {call} "));
                let tail = format!("rank=1 stream={on} dev=0 group=0");
                assert!(
                    line.contains(fields) && line.ends_with(&tail),
                    "{line}\nwants {fields} ... {tail}"
                );
            };

            comm.all_reduce::<f32>(&x, &mut y, ReduceOp::Sum, &s)
                .unwrap();
            expect(
                "ncclAllReduce",
                &format!(
                    "send={} recv={} count=1024 type=7 op=0 root=-1",
                    p(xp),
                    p(yp)
                ),
            );
            comm.all_reduce_in_place::<f64>(&mut y, ReduceOp::Prod, &s)
                .unwrap();
            expect(
                "ncclAllReduce",
                &format!("send={0} recv={0} count=512 type=8 op=1", p(yp)),
            );
            comm.all_reduce::<u8>(
                x.slice(16..48).unwrap(),
                y.slice_mut(32..64).unwrap(),
                ReduceOp::Max,
                &s,
            )
            .unwrap();
            expect(
                "ncclAllReduce",
                &format!(
                    "send={} recv={} count=32 type=1 op=2",
                    p(xp + 16),
                    p(yp + 32)
                ),
            );
            comm.all_reduce_in_place::<i8>(&mut y, ReduceOp::Min, &s)
                .unwrap();
            expect("ncclAllReduce", "count=4096 type=0 op=3");
            comm.all_reduce_in_place::<i32>(&mut y, ReduceOp::Avg, &s)
                .unwrap();
            expect("ncclAllReduce", "count=1024 type=2 op=4");
            comm.all_reduce_in_place::<u32>(&mut y, ReduceOp::Sum, &s)
                .unwrap();
            expect("ncclAllReduce", "count=1024 type=3 op=0");
            comm.all_reduce_in_place::<i64>(&mut y, ReduceOp::Sum, &s)
                .unwrap();
            expect("ncclAllReduce", "count=512 type=4 op=0");
            comm.all_reduce_in_place::<u64>(&mut y, ReduceOp::Sum, &s)
                .unwrap();
            expect("ncclAllReduce", "count=512 type=5 op=0");
            #[cfg(feature = "half")]
            {
                comm.all_reduce_in_place::<half::f16>(&mut y, ReduceOp::Sum, &s)
                    .unwrap();
                expect("ncclAllReduce", "count=2048 type=6 op=0");
                comm.all_reduce_in_place::<half::bf16>(&mut y, ReduceOp::Sum, &s)
                    .unwrap();
                expect("ncclAllReduce", "count=2048 type=9 op=0");
            }
            // Bugs caught: FP8 passed as another NCCL type, or counted as wider than a byte.
            #[cfg(feature = "float8")]
            {
                comm.all_reduce_in_place::<float8::F8E4M3>(&mut y, ReduceOp::Max, &s)
                    .unwrap();
                expect("ncclAllReduce", "count=4096 type=10 op=2");
                comm.all_reduce_in_place::<float8::F8E5M2>(&mut y, ReduceOp::Sum, &s)
                    .unwrap();
                expect("ncclAllReduce", "count=4096 type=11 op=0");
            }

            // A custom operation: made with its factor's bytes, used by its code, destroyed on drop.
            let scaled = comm.pre_mul_sum(0.5f32).unwrap();
            assert_eq!(scaled.data_type(), DataType::Float32);
            let made = standin::last_call("## ncclRedOpCreatePreMulSum");
            assert!(
                made.contains("op=5 scalar=0000003f type=7 residence=1"),
                "{made}"
            );
            comm.all_reduce::<f32>(&x, &mut y, ReduceOp::PreMulSum(&scaled), &s)
                .unwrap();
            expect("ncclAllReduce", "count=1024 type=7 op=5");
            drop(scaled);
            assert!(standin::last_call("## ncclRedOpDestroy").contains("op=5"));

            comm.broadcast::<f32>(&x, &mut y, 3, &s).unwrap();
            expect(
                "ncclBroadcast",
                &format!(
                    "send={} recv={} count=1024 type=7 op=-1 root=3",
                    p(xp),
                    p(yp)
                ),
            );
            comm.broadcast_in_place::<u32>(&mut y, 0, &s).unwrap();
            expect(
                "ncclBroadcast",
                &format!("send={0} recv={0} count=1024 type=3 op=-1 root=0", p(yp)),
            );
            comm.reduce::<f32>(&x, &mut y, ReduceOp::Sum, 1, &s)
                .unwrap();
            expect(
                "ncclReduce",
                &format!(
                    "send={} recv={} count=1024 type=7 op=0 root=1",
                    p(xp),
                    p(yp)
                ),
            );
            comm.reduce_to_root::<f32>(&x, ReduceOp::Max, 2, &s)
                .unwrap();
            expect(
                "ncclReduce",
                &format!("send={} recv=(nil) count=1024 type=7 op=2 root=2", p(xp)),
            );
            comm.reduce_in_place::<f32>(&mut y, ReduceOp::Sum, 0, &s)
                .unwrap();
            expect(
                "ncclReduce",
                &format!("send={0} recv={0} count=1024 type=7 op=0 root=0", p(yp)),
            );

            // All-gather: 1024 from each of 4 ranks into 4096; in place, rank 1's part is the second.
            comm.all_gather::<f32>(&x, &mut big, &s).unwrap();
            expect(
                "ncclAllGather",
                &format!("send={} recv={} count=1024 type=7", p(xp), p(bp)),
            );
            comm.all_gather_in_place::<f32>(&mut big, &s).unwrap();
            expect(
                "ncclAllGather",
                &format!("send={} recv={} count=1024", p(bp + 4096), p(bp)),
            );
            // Reduce-scatter: 4096 from each rank, 1024 to each; in place, rank 1's part is the second.
            comm.reduce_scatter::<f32>(&big, &mut y, ReduceOp::Sum, &s)
                .unwrap();
            expect(
                "ncclReduceScatter",
                &format!("send={} recv={} count=1024 type=7 op=0", p(bp), p(yp)),
            );
            comm.reduce_scatter_in_place::<f32>(&mut big, ReduceOp::Min, &s)
                .unwrap();
            expect(
                "ncclReduceScatter",
                &format!(
                    "send={} recv={} count=1024 type=7 op=3",
                    p(bp),
                    p(bp + 4096)
                ),
            );

            // All-to-all: 4096 values each way, 1024 to and from each of the 4 ranks.
            let mut big2 = buffer(d0, &s, 16384);
            let b2p = big2.ptr().0;
            comm.all_to_all::<f32>(&big, &mut big2, &s).unwrap();
            expect(
                "ncclAlltoAll",
                &format!("send={} recv={} count=1024 type=7", p(bp), p(b2p)),
            );
            // Gather: 1024 from each rank into the root's 4096; a rank that is not the root
            // gives no buffer (null).
            comm.gather::<f32>(&x, &mut big2, 2, &s).unwrap();
            expect(
                "ncclGather",
                &format!(
                    "send={} recv={} count=1024 type=7 op=-1 root=2",
                    p(xp),
                    p(b2p)
                ),
            );
            comm.gather_to_root::<f32>(&x, 3, &s).unwrap();
            expect(
                "ncclGather",
                &format!("send={} recv=(nil) count=1024 type=7 op=-1 root=3", p(xp)),
            );
            // Scatter: the root's 4096, 1024 to each rank.
            comm.scatter::<f32>(&big, &mut y, 0, &s).unwrap();
            expect(
                "ncclScatter",
                &format!(
                    "send={} recv={} count=1024 type=7 op=-1 root=0",
                    p(bp),
                    p(yp)
                ),
            );
            comm.scatter_from_root::<f32>(&mut y, 2, &s).unwrap();
            expect(
                "ncclScatter",
                &format!("send=(nil) recv={} count=1024 type=7 op=-1 root=2", p(yp)),
            );

            comm.send::<f64>(&x, 3, &s).unwrap();
            expect(
                "ncclSend",
                &format!("send={} recv=(nil) count=512 type=8 op=-1 root=3", p(xp)),
            );
            comm.recv::<f64>(&mut y, 0, &s).unwrap();
            expect(
                "ncclRecv",
                &format!("send=(nil) recv={} count=512 type=8 op=-1 root=0", p(yp)),
            );
            assert!(standin::calls("MISUSE").is_empty(), "{}", standin::log());
        },
    );
}

#[test]
fn the_in_place_forms_nccl_takes_are_accepted_through_two_arguments() {
    standin::run_with_nccl(
        module_path!(),
        "the_in_place_forms_nccl_takes_are_accepted_through_two_arguments",
        &[],
        &[],
        || {
            let d0 = Device::new(0).unwrap();
            let s = stream(d0);
            let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 2, 1, d0).unwrap();
            let all = Arc::new(buffer(d0, &s, 8192));
            let whole = all.shared_slice(..).unwrap();
            let (front, back) = (
                all.shared_slice(..4096).unwrap(),
                all.shared_slice(4096..).unwrap(),
            );
            // The same memory twice is in place; this rank's part of the whole, too.
            comm.all_reduce::<f32>(&whole, &whole, ReduceOp::Sum, &s)
                .unwrap();
            comm.all_gather::<f32>(&back, &whole, &s).unwrap();
            comm.reduce_scatter::<f32>(&whole, &back, ReduceOp::Sum, &s)
                .unwrap();
            // Another rank's part overlaps in no form NCCL takes.
            for (name, reason) in [
                refused(comm.all_gather::<f32>(&front, &whole, &s)),
                refused(comm.reduce_scatter::<f32>(&whole, &front, ReduceOp::Sum, &s)),
                refused(comm.broadcast::<f32>(
                    &front,
                    &all.shared_slice(2048..6144).unwrap(),
                    0,
                    &s,
                )),
            ] {
                assert_eq!(name, "recv");
                assert!(reason.contains("in-place form"), "{reason}");
            }
            assert_eq!(standin::calls("## ncclAllGather").len(), 1);
        },
    );
}

// ---- the stand-in: stream order and groups -------------------------------------------------

/// Runs a stand-in NCCL test under both driver ABIs (the stand-in driver reports 13.0).
fn under_both_abis(function: &str, body: fn()) {
    for abi in ["12", "13"] {
        standin::run_with_nccl(
            module_path!(),
            function,
            &[],
            &[("CUDA_CORE_DRIVER_ABI", abi)],
            body,
        );
    }
}

#[test]
fn buffers_of_another_stream_are_ordered_before_and_after_the_call() {
    under_both_abis(
        "buffers_of_another_stream_are_ordered_before_and_after_the_call",
        || {
            let d0 = Device::new(0).unwrap();
            let (home, work) = (stream(d0), stream(d0));
            let (home_name, work_name) = (name_of(&home), name_of(&work));
            let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 2, 0, d0).unwrap();
            let x = buffer(d0, &home, 4096);
            let mut y = buffer(d0, &home, 4096);
            standin::clear_log();
            comm.all_reduce::<f32>(&x, &mut y, ReduceOp::Sum, &work)
                .unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let before = find(
                &log,
                0,
                &["cuStreamWaitEvent", &format!("{work_name} waits for")],
            );
            let call = find(
                &log,
                before,
                &["## ncclAllReduce", &format!("stream={work_name}")],
            );
            let record = find(&log, call, &["cuEventRecord", &format!("on {work_name}")]);
            let after = find(
                &log,
                record,
                &["cuStreamWaitEvent", &format!("{home_name} waits for")],
            );
            // The two buffers share one home: waited for once each way.
            assert_eq!(standin::calls("cuStreamWaitEvent").len(), 2, "{text}");
            assert!(after > record);

            // On the buffers' own stream: the call alone.
            standin::clear_log();
            comm.all_reduce::<f32>(&x, &mut y, ReduceOp::Sum, &home)
                .unwrap();
            assert!(
                standin::calls("cuStreamWaitEvent").is_empty(),
                "{}",
                standin::log()
            );
            assert!(
                standin::calls("cuEventRecord").is_empty(),
                "{}",
                standin::log()
            );
        },
    );
}

#[test]
fn a_group_launches_at_its_end_and_orders_its_buffers_after_it() {
    under_both_abis(
        "a_group_launches_at_its_end_and_orders_its_buffers_after_it",
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let comms = Communicator::init_all(&[d0, d1]).unwrap();
            let spare = Communicator::init_rank(&UniqueId::new().unwrap(), 1, 0, d0).unwrap();
            let homes = [stream(d0), stream(d1)];
            let works = [stream(d0), stream(d1)];
            let names: Vec<(String, String)> = homes
                .iter()
                .zip(&works)
                .map(|(h, w)| (name_of(h), name_of(w)))
                .collect();
            let mut buffers = [buffer(d0, &homes[0], 4096), buffer(d1, &homes[1], 4096)];
            let scaled = comms[1].pre_mul_sum(2.0f32).unwrap();
            standin::clear_log();
            let value = group(|g| {
                for (i, ((comm, buf), work)) in
                    comms.iter().zip(&mut buffers).zip(&works).enumerate()
                {
                    let op = if i == 1 {
                        ReduceOp::PreMulSum(&scaled)
                    } else {
                        ReduceOp::Sum
                    };
                    g.all_reduce_in_place::<f32>(comm, buf, op, work)?;
                }
                drop(spare); // released at the group's end
                Ok(7)
            })
            .unwrap();
            assert_eq!(value, 7);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let start = find(&log, 0, &["## ncclGroupStart depth=1"]);
            let mut at = start;
            for (i, (_, work)) in names.iter().enumerate() {
                at = find(
                    &log,
                    at,
                    &[
                        "## ncclAllReduce",
                        &format!("rank={i} stream={work}"),
                        "group=1",
                    ],
                );
            }
            // Each call's stream waits for its buffer's stream at the group's end, after what
            // the body queued there, just before NCCL queues the calls.
            for (home, work) in &names {
                let record = find(&log, at, &["cuEventRecord", &format!("on {home}")]);
                at = find(
                    &log,
                    record,
                    &["cuStreamWaitEvent", &format!("{work} waits for")],
                );
            }
            // NCCL switches devices itself: the first communicator's context is current at the end.
            let end = find(&log, at, &["## ncclGroupEnd depth=1 dev=0"]);
            for (home, work) in &names {
                let record = find(&log, end, &["cuEventRecord", &format!("on {work}")]);
                find(
                    &log,
                    record,
                    &["cuStreamWaitEvent", &format!("{home} waits for")],
                );
            }
            find(&log, end, &["## ncclCommDestroy rank=0"]);
            assert!(standin::calls("MISUSE").is_empty(), "{text}");
            drop(scaled);
        },
    );
}

/// W3: a write of a group call's send buffer, through `&Arc<Buffer>` on the buffer's own
/// stream, queued in the group's body after the call: the call's stream waits for the
/// buffer's stream after that write (at the group's end, before NCCL queues the call), so the
/// collective reads what the body wrote, in one order. Bug caught: the call's stream waited
/// for the buffer's stream when the call was added, before the write, and the buffer's stream
/// waited for the call only at the end: the write was ordered neither before nor after the
/// collective.
#[test]
fn a_write_in_a_groups_body_is_ordered_before_its_collective() {
    under_both_abis(
        "a_write_in_a_groups_body_is_ordered_before_its_collective",
        || {
            let d0 = Device::new(0).unwrap();
            let (home, work) = (stream(d0), stream(d0));
            let (home_name, work_name) = (name_of(&home), name_of(&work));
            let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 1, 0, d0).unwrap();
            let send = Arc::new(buffer(d0, &home, 4096));
            let mut recv = buffer(d0, &work, 4096);
            let twos = buffer(d0, &home, 4096);
            home.sync().unwrap();
            standin::clear_log();
            group(|g| {
                g.all_reduce::<f32>(&comm, &send, &mut recv, ReduceOp::Sum, &work)?;
                twos.copy_to(&send, &home)
            })
            .unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let write = find(&log, 0, &["cuMemcpyAsync", &format!("on {home_name}")]);
            // Catches the wait recorded before the write: the record the call's stream waits for
            // comes after it, before NCCL's end.
            let record = find(&log, write, &["cuEventRecord", &format!("on {home_name}")]);
            let wait = find(
                &log,
                record,
                &["cuStreamWaitEvent", &format!("{work_name} waits for")],
            );
            let end = find(&log, wait, &["## ncclGroupEnd"]);
            // And the buffer's stream waits for the call after it.
            find(
                &log,
                end,
                &["cuStreamWaitEvent", &format!("{home_name} waits for")],
            );
        },
    );
}

#[test]
fn a_group_ends_when_its_body_fails_or_panics() {
    standin::run_with_nccl(
        module_path!(),
        "a_group_ends_when_its_body_fails_or_panics",
        &[],
        &[],
        || {
            let depth: unsafe extern "C" fn() -> i32 = {
                let path = std::env::var("CUDA_CORE_NCCL_PATH").unwrap();
                // SAFETY: the stand-in NCCL, loaded by cuda-core already, kept for the process.
                let library =
                    Box::leak(Box::new(unsafe { libloading::Library::new(path) }.unwrap()));
                // SAFETY: the stand-in's function of this type.
                *unsafe { library.get(b"standin_nccl_group_depth\0") }.unwrap()
            };
            let d0 = Device::new(0).unwrap();
            let s = stream(d0);
            let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 1, 0, d0).unwrap();
            let mut x = buffer(d0, &s, 64);
            standin::clear_log();
            let failed = group(|g| {
                g.all_reduce_in_place::<f32>(&comm, &mut x, ReduceOp::Sum, &s)?;
                Err::<(), _>(Error::InvalidArgument {
                    name: "mine",
                    reason: String::new(),
                })
            });
            assert!(matches!(
                failed,
                Err(Error::InvalidArgument { name: "mine", .. })
            ));
            // SAFETY: the stand-in's function, without arguments.
            assert_eq!(unsafe { depth() }, 0, "the group was left open");
            // The call queued before the error is launched all the same.
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let call = find(&log, 0, &["## ncclAllReduce", "group=1"]);
            find(&log, call, &["## ncclGroupEnd"]);

            fn boom() -> cuda_core::Result<()> {
                panic!("in the body")
            }
            let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = group(|g| {
                    g.all_reduce_in_place::<f32>(&comm, &mut x, ReduceOp::Sum, &s)?;
                    boom()
                });
            }));
            assert!(panicked.is_err());
            // SAFETY: as above.
            assert_eq!(unsafe { depth() }, 0, "a panic left the group open");
            // The communicator was let go: its own calls work again.
            comm.all_reduce_in_place::<f32>(&mut x, ReduceOp::Sum, &s)
                .unwrap();
            assert_eq!(standin::calls("## ncclAllReduce").len(), 3);
            assert!(standin::calls("MISUSE").is_empty(), "{}", standin::log());
        },
    );
}

// ---- the stand-in: non-blocking communicators and failures --------------------------------

#[test]
fn a_non_blocking_communicator_is_refused_until_ready_and_waited_for() {
    standin::run_with_nccl(
        module_path!(),
        "a_non_blocking_communicator_is_refused_until_ready_and_waited_for",
        &[],
        &[("STANDIN_NCCL_INIT_POLLS", "3")],
        || {
            let d0 = Device::new(0).unwrap();
            let s = stream(d0);
            let config = CommConfig::default()
                .with_blocking(false)
                .with_max_ctas(8)
                .with_net_name("Socket")
                .with_comm_name("grads");
            let comm =
                Communicator::init_rank_with(&UniqueId::new().unwrap(), 2, 1, d0, &config).unwrap();
            let made = standin::last_call("## ncclCommInitRankConfig");
            assert!(
                made.contains("nranks=2 rank=1 dev=0")
                    && made.contains("blocking=0 maxCTAs=8 netName=Socket commName=grads")
                    && made.contains("magic=0xcafebeef version=23203"),
                "{made}"
            );
            assert!(!comm.is_blocking());
            assert!(!comm.is_ready().unwrap()); // 3 -> 2
            let mut x = buffer(d0, &s, 64);
            let early = comm.all_reduce_in_place::<f32>(&mut x, ReduceOp::Sum, &s); // 2 -> 1
            assert!(
                matches!(early, Err(Error::Nccl { code: 7, .. })),
                "{early:?}"
            );
            comm.wait_ready(Duration::from_secs(10)).unwrap();
            comm.all_reduce_in_place::<f32>(&mut x, ReduceOp::Sum, &s)
                .unwrap();
            assert_eq!(standin::calls("## ncclAllReduce").len(), 1);
            drop(comm);
            assert_eq!(standin::calls("## ncclCommDestroy").len(), 1);
            assert!(standin::calls("MISUSE").is_empty(), "{}", standin::log());
        },
    );
    standin::run_with_nccl(
        module_path!(),
        "a_non_blocking_communicator_is_refused_until_ready_and_waited_for",
        &[],
        &[("STANDIN_NCCL_INIT_POLLS", "1000000000")],
        || {
            let d0 = Device::new(0).unwrap();
            let config = CommConfig::default().with_blocking(false);
            let id = UniqueId::new().unwrap();
            let comm = Communicator::init_rank_with(&id, 2, 0, d0, &config).unwrap();
            let start = Instant::now();
            let late = comm.wait_ready(Duration::from_millis(50));
            assert!(matches!(late, Err(Error::Timeout { .. })), "{late:?}");
            assert!(start.elapsed() >= Duration::from_millis(50));
            comm.abort().unwrap();
            assert_eq!(standin::calls("## ncclCommAbort").len(), 1);
            // One dropped while still being made is aborted too, not destroyed (which would wait).
            drop(Communicator::init_rank_with(&id, 2, 0, d0, &config).unwrap());
            assert_eq!(standin::calls("## ncclCommAbort").len(), 2);
            assert!(standin::calls("## ncclCommDestroy").is_empty());
            assert!(standin::calls("MISUSE").is_empty(), "{}", standin::log());
        },
    );
}

#[test]
fn a_failed_peer_ends_the_wait_with_nccls_error_and_the_drop_aborts() {
    standin::run_with_nccl(
        module_path!(),
        "a_failed_peer_ends_the_wait_with_nccls_error_and_the_drop_aborts",
        &[],
        &[("STANDIN_NCCL_ASYNC_ERROR", "6")],
        || {
            let d0 = Device::new(0).unwrap();
            let s = stream(d0);
            let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 2, 0, d0).unwrap();
            let mut x = buffer(d0, &s, 64);
            comm.all_reduce_in_place::<f32>(&mut x, ReduceOp::Sum, &s)
                .unwrap();
            let start = Instant::now();
            let waited = comm.wait(&s, Duration::from_secs(30));
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "{:?}",
                start.elapsed()
            );
            match &waited {
                Err(Error::Nccl {
                    call,
                    code,
                    name,
                    message,
                }) => {
                    assert_eq!(
                        (*call, *code, *name),
                        ("ncclCommGetAsyncError", 6, "ncclRemoteError")
                    );
                    assert!(message.contains("peer rank 1 is gone"), "{message}");
                }
                other => panic!("expected NCCL's remote error, got {other:?}"),
            }
            assert_eq!(waited.unwrap_err().nccl_code(), Some(6));
            assert!(comm.check_async_error().is_err());
            drop(comm);
            assert_eq!(standin::calls("## ncclCommAbort").len(), 1);
            assert!(
                standin::calls("## ncclCommDestroy").is_empty(),
                "{}",
                standin::log()
            );
        },
    );
}

#[test]
fn a_wait_for_work_that_never_ends_times_out_within_its_deadline() {
    standin::run_with_nccl(
        module_path!(),
        "a_wait_for_work_that_never_ends_times_out_within_its_deadline",
        &[],
        &[("STANDIN_QUERY_STATUS", "600")],
        || {
            let d0 = Device::new(0).unwrap();
            let s = stream(d0);
            let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 2, 0, d0).unwrap();
            let start = Instant::now();
            let waited = comm.wait(&s, Duration::from_millis(50));
            let took = start.elapsed();
            assert!(
                matches!(waited, Err(Error::Timeout { after, .. }) if after == Duration::from_millis(50)),
                "{waited:?}"
            );
            assert!(
                took >= Duration::from_millis(50) && took < Duration::from_secs(2),
                "{took:?}"
            );
            comm.abort().unwrap();
        },
    );
}

// ---- the stand-in: memory, registrations, split, finalize, the library --------------------

#[test]
fn nccls_memory_is_allocated_on_its_device_and_freed_after_its_stream() {
    standin::run_with_nccl(
        module_path!(),
        "nccls_memory_is_allocated_on_its_device_and_freed_after_its_stream",
        &[],
        &[],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let s = stream(d1);
            let on = name_of(&s);
            let memory = NcclMemoryResource::new(d1).unwrap();
            assert!(format!("{memory:?}").contains("device 1"));
            standin::clear_log();
            let buf = memory.allocate(4096, &s).unwrap();
            let made = standin::last_call("## ncclMemAlloc");
            assert!(
                made.contains(&format!("{} size=4096 dev=1", p(buf.ptr().0))),
                "{made}"
            );
            assert_eq!(buf.device(), Some(d1));
            assert!(buf.is_device_accessible() && !buf.is_host_accessible());
            let address = buf.ptr().0;
            drop(buf);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let sync = find(&log, 0, &[&format!("cuStreamSynchronize {on}")]);
            find(
                &log,
                sync,
                &["## ncclMemFree", &format!("{} dev=1", p(address))],
            );
            let (name, _) = refused(memory.allocate(64, &stream(d0)));
            assert_eq!(name, "stream");
        },
    );
}

#[test]
fn a_registration_keeps_its_buffer_and_is_undone_after_its_work() {
    standin::run_with_nccl(
        module_path!(),
        "a_registration_keeps_its_buffer_and_is_undone_after_its_work",
        &[],
        &[],
        || {
            let d0 = Device::new(0).unwrap();
            let s = stream(d0);
            let on = name_of(&s);
            let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 2, 0, d0).unwrap();
            // Larger than the default pool's small buffers, which a stream keeps for reuse.
            let buf = Arc::new(buffer(d0, &s, 1 << 20));
            let address = buf.ptr().0;
            let registration = comm.register(&buf).unwrap();
            assert!(Arc::ptr_eq(registration.buffer(), &buf));
            let made = standin::last_call("## ncclCommRegister");
            assert!(
                made.contains(&format!("{} size=1048576 dev=0", p(address))),
                "{made}"
            );
            comm.all_reduce_in_place::<f32>(&buf, ReduceOp::Sum, &s)
                .unwrap();
            drop(buf); // the registration keeps it
            drop(comm); // and the communicator
            assert!(
                standin::calls("cuMemFreeAsync").is_empty(),
                "{}",
                standin::log()
            );
            assert!(standin::calls("## ncclCommDestroy").is_empty());
            standin::clear_log();
            drop(registration);
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let sync = find(&log, 0, &[&format!("cuStreamSynchronize {on}")]);
            let undone = find(&log, sync, &["## ncclCommDeregister", &p(address)]);
            find(&log, undone, &["## ncclCommDestroy"]);
            find(&log, undone, &[&format!("cuMemFreeAsync {}", p(address))]);
            assert!(standin::calls("MISUSE").is_empty(), "{text}");
        },
    );
}

#[test]
fn split_abort_and_finalize_reach_nccl_in_order() {
    standin::run_with_nccl(
        module_path!(),
        "split_abort_and_finalize_reach_nccl_in_order",
        &[],
        &[],
        || {
            let d0 = Device::new(0).unwrap();
            let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 4, 2, d0).unwrap();
            let part = comm
                .split(Some(3), 1)
                .unwrap()
                .expect("a color makes a communicator");
            assert!(
                standin::last_call("## ncclCommSplit").contains("rank=2 color=3 key=1 config=null")
            );
            assert_eq!((part.rank(), part.size(), part.device()), (1, 4, d0));
            assert!(comm.split(None, 0).unwrap().is_none());
            assert!(standin::last_call("## ncclCommSplit").contains("color=-1"));
            let configured = comm
                .split_with(Some(0), 0, &CommConfig::default().with_max_ctas(4))
                .unwrap()
                .unwrap();
            assert!(standin::last_call("## ncclCommSplit").contains("config=set"));
            standin::clear_log();
            part.finalize().unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let finalized = find(&log, 0, &["## ncclCommFinalize rank=1"]);
            find(&log, finalized, &["## ncclCommDestroy rank=1 finalized=1"]);
            configured.abort().unwrap();
            comm.abort().unwrap();
            assert_eq!(standin::calls("## ncclCommAbort").len(), 2);
            assert!(standin::calls("MISUSE").is_empty(), "{}", standin::log());
        },
    );
}

#[test]
fn an_abort_or_a_drop_inside_a_group_happens_at_its_end() {
    standin::run_with_nccl(
        module_path!(),
        "an_abort_or_a_drop_inside_a_group_happens_at_its_end",
        &[],
        &[],
        || {
            let d0 = Device::new(0).unwrap();
            let s = stream(d0);
            let id = UniqueId::new().unwrap();
            let (kept, left) = (
                Communicator::init_rank(&id, 2, 0, d0).unwrap(),
                Communicator::init_rank(&id, 2, 1, d0).unwrap(),
            );
            let scaled = kept.pre_mul_sum(3i32).unwrap();
            let mut x = buffer(d0, &s, 64);
            standin::clear_log();
            group(|g| {
                g.all_reduce_in_place::<f32>(&kept, &mut x, ReduceOp::Sum, &s)?;
                left.abort()?;
                drop(scaled); // of a communicator the group holds: released after its end
                Ok(())
            })
            .unwrap();
            let text = standin::log();
            let log: Vec<&str> = text.lines().collect();
            let end = find(&log, 0, &["## ncclGroupEnd"]);
            find(&log, end, &["## ncclCommAbort rank=1"]);
            find(&log, end, &["## ncclRedOpDestroy op=5 rank=0"]);
            assert!(standin::calls("MISUSE").is_empty(), "{text}");
        },
    );
}

#[test]
fn a_library_lacking_a_function_is_named_in_the_error() {
    standin::run_with_nccl(
        module_path!(),
        "a_library_lacking_a_function_is_named_in_the_error",
        &["STANDIN_NCCL_NO_SPLIT"],
        &[],
        || {
            let comm =
                Communicator::init_rank(&UniqueId::new().unwrap(), 2, 0, Device::new(0).unwrap())
                    .unwrap();
            let error = comm.split(Some(0), 0).unwrap_err();
            let path = std::env::var("CUDA_CORE_NCCL_PATH").unwrap();
            assert!(matches!(&error, Error::NcclNotFound { .. }), "{error:?}");
            let text = error.to_string();
            assert_eq!(
                text,
                format!("the NCCL 2.32.3 at {path} lacks ncclCommSplit")
            );
        },
    );
}

#[test]
fn an_nccl_older_than_2_19_is_refused_when_loaded() {
    standin::run_with_nccl(
        module_path!(),
        "an_nccl_older_than_2_19_is_refused_when_loaded",
        &[],
        &[("STANDIN_NCCL_VERSION", "21805")],
        || {
            let text = nccl::version().unwrap_err().to_string();
            let path = std::env::var("CUDA_CORE_NCCL_PATH").unwrap();
            assert!(
                text.contains(&format!("{path}: is NCCL 2.18.5, older than 2.19")),
                "{text}"
            );
        },
    );
}

// ---- on a GPU ------------------------------------------------------------------------------

/// Rank `rank`'s value `i`: small integers, so that sums and products of up to 8 ranks are
/// exact in every type (f16 and bf16 too, for the sums the test makes in them).
fn value(rank: usize, i: usize) -> i64 {
    ((i * 7 + rank * 13) % 9) as i64 - 4
}

/// The values of `n` elements of rank `rank` as `T`.
fn values<T: Copy>(rank: usize, n: usize, from: impl Fn(i64) -> T) -> Vec<T> {
    (0..n).map(|i| from(value(rank, i))).collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn every_collective_over_every_device_matches_the_cpu() {
    if real_nccl().is_none() {
        return;
    }
    let devices = Device::all().unwrap();
    let n = devices.len();
    let comms = Communicator::init_all(&devices).unwrap();
    let streams: Vec<Stream> = devices.iter().map(|&d| stream(d)).collect();
    let count = 4096;
    let alloc = |r: usize, bytes: usize| buffer(devices[r], &streams[r], bytes);
    let upload = |r: usize, data: &[f32]| {
        let mut b = alloc(r, 4 * data.len());
        b.copy_from_host(data, &streams[r]).unwrap();
        b
    };
    let inputs: Vec<Vec<f32>> = (0..n).map(|r| values(r, count, |v| v as f32)).collect();
    let reduce = |f: fn(f32, f32) -> f32| -> Vec<f32> {
        (0..count)
            .map(|i| (1..n).fold(inputs[0][i], |acc, r| f(acc, inputs[r][i])))
            .collect()
    };
    let read = |b: &Buffer, r: usize| b.to_vec::<f32>(&streams[r]).unwrap();

    // All-reduce, each operation, out of place and in place.
    for (op, f, name) in [
        (ReduceOp::Sum, (|a, b| a + b) as fn(f32, f32) -> f32, "sum"),
        (ReduceOp::Prod, |a, b| a * b, "prod"),
        (ReduceOp::Max, f32::max, "max"),
        (ReduceOp::Min, f32::min, "min"),
    ] {
        let sends: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r])).collect();
        let mut recvs: Vec<Buffer> = (0..n).map(|r| alloc(r, 4 * count)).collect();
        group(|g| {
            for (r, recv) in recvs.iter_mut().enumerate() {
                g.all_reduce::<f32>(&comms[r], &sends[r], recv, op, &streams[r])?;
            }
            Ok(())
        })
        .unwrap();
        let want = reduce(f);
        for r in 0..n {
            assert_eq!(read(&recvs[r], r), want, "all-reduce {name} on rank {r}");
        }
        let mut in_place: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r])).collect();
        group(|g| {
            for (r, b) in in_place.iter_mut().enumerate() {
                g.all_reduce_in_place::<f32>(&comms[r], b, op, &streams[r])?;
            }
            Ok(())
        })
        .unwrap();
        for r in 0..n {
            assert_eq!(
                read(&in_place[r], r),
                want,
                "in-place all-reduce {name} on rank {r}"
            );
        }
    }
    // Average, and the pre-multiplied sum (each rank's values times (rank + 1)).
    let sum = reduce(|a, b| a + b);
    let mut avg: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r])).collect();
    let scaled: Vec<_> = (0..n)
        .map(|r| comms[r].pre_mul_sum((r + 1) as f32).unwrap())
        .collect();
    let mut pre: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r])).collect();
    group(|g| {
        for (r, (avg, pre)) in avg.iter_mut().zip(&mut pre).enumerate() {
            g.all_reduce_in_place::<f32>(&comms[r], avg, ReduceOp::Avg, &streams[r])?;
            let op = ReduceOp::PreMulSum(&scaled[r]);
            g.all_reduce_in_place::<f32>(&comms[r], pre, op, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    let weighted: Vec<f32> = (0..count)
        .map(|i| (0..n).map(|r| inputs[r][i] * (r + 1) as f32).sum())
        .collect();
    for r in 0..n {
        let got = read(&avg[r], r);
        for i in 0..count {
            assert!(
                (got[i] - sum[i] / n as f32).abs() <= 1e-5,
                "avg {i} on rank {r}"
            );
        }
        assert_eq!(read(&pre[r], r), weighted, "pre-multiplied sum on rank {r}");
    }

    // Other element types, summed: exact for these small integers.
    fn typed<T: cuda_core::nccl::Element + Default + PartialEq + std::fmt::Debug>(
        comms: &[Communicator],
        streams: &[Stream],
        devices: &[Device],
        from: impl Fn(i64) -> T,
    ) {
        let n = comms.len();
        let count = 1000;
        let mut bufs: Vec<Buffer> = (0..n)
            .map(|r| {
                let mut b = buffer(devices[r], &streams[r], count * std::mem::size_of::<T>());
                b.copy_from_host(&values(r, count, &from), &streams[r])
                    .unwrap();
                b
            })
            .collect();
        group(|g| {
            for (r, b) in bufs.iter_mut().enumerate() {
                g.all_reduce_in_place::<T>(&comms[r], b, ReduceOp::Sum, &streams[r])?;
            }
            Ok(())
        })
        .unwrap();
        let want: Vec<T> = (0..count)
            .map(|i| from((0..n).map(|r| value(r, i)).sum()))
            .collect();
        for r in 0..n {
            assert_eq!(
                bufs[r].to_vec::<T>(&streams[r]).unwrap(),
                want,
                "{}",
                std::any::type_name::<T>()
            );
        }
    }
    typed(&comms, &streams, &devices, |v| v as f64);
    typed(&comms, &streams, &devices, |v| v as i32);
    typed(&comms, &streams, &devices, |v| v);
    typed(&comms, &streams, &devices, |v| v as i8);
    typed(&comms, &streams, &devices, |v| (v + 64) as u8);
    typed(&comms, &streams, &devices, |v| (v + 64) as u32);
    typed(&comms, &streams, &devices, |v| (v + 64) as u64);
    #[cfg(feature = "half")]
    {
        typed(&comms, &streams, &devices, |v| {
            half::f16::from_f32(v as f32)
        });
        typed(&comms, &streams, &devices, |v| {
            half::bf16::from_f32(v as f32)
        });
    }

    // Broadcast from the last rank, into slices 256 bytes into each buffer.
    let root = n - 1;
    let src = upload(root, &inputs[root]);
    let mut dsts: Vec<Buffer> = (0..n).map(|r| alloc(r, 4 * count + 256)).collect();
    group(|g| {
        for (r, d) in dsts.iter_mut().enumerate() {
            let into = d.slice_mut(256..).unwrap();
            if r == root {
                g.broadcast::<f32>(&comms[r], &src, into, root, &streams[r])?;
            } else {
                g.broadcast_in_place::<f32>(&comms[r], into, root, &streams[r])?;
            }
        }
        Ok(())
    })
    .unwrap();
    for r in 0..n {
        assert_eq!(
            dsts[r]
                .slice(256..)
                .unwrap()
                .to_vec::<f32>(&streams[r])
                .unwrap(),
            inputs[root]
        );
    }

    // Reduce (max) to rank 0; the others receive nothing.
    let sends: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r])).collect();
    let mut at_root = alloc(0, 4 * count);
    group(|g| {
        g.reduce::<f32>(
            &comms[0],
            &sends[0],
            &mut at_root,
            ReduceOp::Max,
            0,
            &streams[0],
        )?;
        for r in 1..n {
            g.reduce_to_root::<f32>(&comms[r], &sends[r], ReduceOp::Max, 0, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(read(&at_root, 0), reduce(f32::max));

    // All-gather, out of place and in place.
    let part = count / 8; // so that `part * n` fits in `count` for up to 8 devices
    let parts: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r][..part])).collect();
    let mut gathered: Vec<Buffer> = (0..n).map(|r| alloc(r, 4 * part * n)).collect();
    let mut gathered_here: Vec<Buffer> = (0..n)
        .map(|r| {
            let mut b = alloc(r, 4 * part * n);
            b.fill(0u32, &streams[r]).unwrap();
            b.slice_of_mut::<f32>(r * part..(r + 1) * part)
                .unwrap()
                .copy_from_host(&inputs[r][..part], &streams[r])
                .unwrap();
            b
        })
        .collect();
    group(|g| {
        for (r, recv) in gathered.iter_mut().enumerate() {
            g.all_gather::<f32>(&comms[r], &parts[r], recv, &streams[r])?;
        }
        for (r, b) in gathered_here.iter_mut().enumerate() {
            g.all_gather_in_place::<f32>(&comms[r], b, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    let all: Vec<f32> = (0..n).flat_map(|r| inputs[r][..part].to_vec()).collect();
    for r in 0..n {
        assert_eq!(read(&gathered[r], r), all, "all-gather on rank {r}");
        assert_eq!(
            read(&gathered_here[r], r),
            all,
            "in-place all-gather on rank {r}"
        );
    }

    // Reduce-scatter (sum): rank r gets part r of the sum.
    let whole = part * n;
    let fulls: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r][..whole])).collect();
    let mut mine: Vec<Buffer> = (0..n).map(|r| alloc(r, 4 * part)).collect();
    let mut mine_here: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r][..whole])).collect();
    group(|g| {
        for (r, recv) in mine.iter_mut().enumerate() {
            g.reduce_scatter::<f32>(&comms[r], &fulls[r], recv, ReduceOp::Sum, &streams[r])?;
        }
        for (r, b) in mine_here.iter_mut().enumerate() {
            g.reduce_scatter_in_place::<f32>(&comms[r], b, ReduceOp::Sum, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    for r in 0..n {
        let want = &sum[r * part..(r + 1) * part];
        assert_eq!(read(&mine[r], r), want, "reduce-scatter on rank {r}");
        let here = mine_here[r]
            .slice_of::<f32>(r * part..(r + 1) * part)
            .unwrap();
        assert_eq!(
            here.to_vec::<f32>(&streams[r]).unwrap(),
            want,
            "in place on rank {r}"
        );
    }

    // All-to-all, gather to the last rank and scatter from rank 0 (NCCL 2.28 and newer).
    let version = nccl::version().unwrap();
    if version < (2, 28, 0) {
        common::not_run(
            "nccl-2.28",
            &format!("all-to-all, gather and scatter: NCCL {version:?} is older than 2.28"),
        );
    } else {
        let root = n - 1;
        let sends: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r][..whole])).collect();
        let mut exchanged: Vec<Buffer> = (0..n).map(|r| alloc(r, 4 * whole)).collect();
        let mut gathered: Buffer = alloc(root, 4 * whole);
        let mut scattered: Vec<Buffer> = (0..n).map(|r| alloc(r, 4 * part)).collect();
        group(|g| {
            for (r, recv) in exchanged.iter_mut().enumerate() {
                g.all_to_all::<f32>(&comms[r], &sends[r], recv, &streams[r])?;
            }
            for r in (0..n).filter(|&r| r != root) {
                let mine = sends[r].slice(..4 * part)?;
                g.gather_to_root::<f32>(&comms[r], mine, root, &streams[r])?;
            }
            let mine = sends[root].slice(..4 * part)?;
            g.gather::<f32>(&comms[root], mine, &mut gathered, root, &streams[root])?;
            for (r, recv) in scattered.iter_mut().enumerate() {
                if r == 0 {
                    g.scatter::<f32>(&comms[r], &sends[0], recv, 0, &streams[r])?;
                } else {
                    g.scatter_from_root::<f32>(&comms[r], recv, 0, &streams[r])?;
                }
            }
            Ok(())
        })
        .unwrap();
        for r in 0..n {
            // Part i of rank r's result is part r of rank i's input.
            let want: Vec<f32> = (0..n)
                .flat_map(|i| inputs[i][r * part..(r + 1) * part].to_vec())
                .collect();
            assert_eq!(read(&exchanged[r], r), want, "all-to-all on rank {r}");
            assert_eq!(
                read(&scattered[r], r),
                inputs[0][r * part..(r + 1) * part],
                "scatter to rank {r}"
            );
        }
        let firsts: Vec<f32> = (0..n).flat_map(|i| inputs[i][..part].to_vec()).collect();
        assert_eq!(read(&gathered, root), firsts, "gather on rank {root}");
    }

    // A ring of sends and receives: rank r sends to r + 1 and receives from r - 1.
    let outs: Vec<Buffer> = (0..n).map(|r| upload(r, &inputs[r])).collect();
    let mut ins: Vec<Buffer> = (0..n).map(|r| alloc(r, 4 * count)).collect();
    group(|g| {
        for r in 0..n {
            g.send::<f32>(&comms[r], &outs[r], (r + 1) % n, &streams[r])?;
        }
        for (r, b) in ins.iter_mut().enumerate() {
            g.recv::<f32>(&comms[r], b, (r + n - 1) % n, &streams[r])?;
        }
        Ok(())
    })
    .unwrap();
    for r in 0..n {
        assert_eq!(
            read(&ins[r], r),
            inputs[(r + n - 1) % n],
            "ring on rank {r}"
        );
    }
    for (comm, s) in comms.iter().zip(&streams) {
        comm.wait(s, Duration::from_secs(30)).unwrap();
    }
    drop(scaled);
    for comm in comms {
        comm.finalize().unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn one_rank_of_a_unique_id_runs_blocking_and_not_splits_and_finalizes() {
    if real_nccl().is_none() {
        return;
    }
    let device = common::device();
    let s = stream(device);
    let id = UniqueId::new().unwrap();
    let comm = Communicator::init_rank(&id, 1, 0, device).unwrap();
    assert_eq!((comm.rank(), comm.size(), comm.device()), (0, 1, device));
    let mut x = buffer(device, &s, 4096);
    x.copy_from_host(&values(0, 1024, |v| v as f32), &s)
        .unwrap();
    comm.all_reduce_in_place::<f32>(&mut x, ReduceOp::Sum, &s)
        .unwrap();
    comm.wait(&s, Duration::from_secs(30)).unwrap();
    assert_eq!(x.to_vec::<f32>(&s).unwrap(), values(0, 1024, |v| v as f32));
    let part = comm.split(Some(0), 0).unwrap().unwrap();
    assert_eq!((part.rank(), part.size()), (0, 1));
    assert!(comm.split(None, 0).unwrap().is_none());
    part.all_reduce_in_place::<f32>(&mut x, ReduceOp::Prod, &s)
        .unwrap();
    part.wait(&s, Duration::from_secs(30)).unwrap();
    part.finalize().unwrap();
    comm.finalize().unwrap();

    // Non-blocking: made at once, ready within a deadline, its calls waited for.
    let config = CommConfig::default()
        .with_blocking(false)
        .with_timeout(Duration::from_secs(60));
    let id = UniqueId::new().unwrap();
    let comm = Communicator::init_rank_with(&id, 1, 0, device, &config).unwrap();
    comm.wait_ready(Duration::from_secs(60)).unwrap();
    comm.all_reduce_in_place::<f32>(&mut x, ReduceOp::Max, &s)
        .unwrap();
    comm.wait(&s, Duration::from_secs(30)).unwrap();
    assert_eq!(x.to_vec::<f32>(&s).unwrap(), values(0, 1024, |v| v as f32));
    comm.finalize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn nccls_memory_and_a_registration_carry_a_collective() {
    if real_nccl().is_none() {
        return;
    }
    let device = common::device();
    let s = stream(device);
    let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 1, 0, device).unwrap();
    let memory = NcclMemoryResource::new(device).unwrap();
    let data = values(0, 1 << 20, |v| v as f32);
    let mut x = memory.allocate(4 << 20, &s).unwrap();
    x.copy_from_host(&data, &s).unwrap();
    let x = Arc::new(x);
    let registration = comm.register(&x).unwrap();
    let mut y = memory.allocate(4 << 20, &s).unwrap();
    comm.all_reduce::<f32>(&x, &mut y, ReduceOp::Sum, &s)
        .unwrap();
    comm.wait(&s, Duration::from_secs(30)).unwrap();
    assert_eq!(y.to_vec::<f32>(&s).unwrap(), data);
    drop(registration);
    drop(x);
    comm.finalize().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_inputs_are_refused_before_nccl_or_reported_by_it() {
    if real_nccl().is_none() {
        return;
    }
    let device = common::device();
    let s = stream(device);
    let comm = Communicator::init_rank(&UniqueId::new().unwrap(), 1, 0, device).unwrap();
    let a = buffer(device, &s, 4096);
    let mut b = buffer(device, &s, 2048);
    assert_eq!(
        refused(comm.all_reduce::<f32>(&a, &mut b, ReduceOp::Sum, &s)).0,
        "recv"
    );
    assert_eq!(refused(comm.broadcast::<f32>(&a, &mut b, 1, &s)).0, "root");
    assert_eq!(
        refused(comm.all_reduce::<f64>(a.slice(8..20).unwrap(), &mut b, ReduceOp::Sum, &s)).0,
        "send"
    );
    let pinned = PinnedMemoryResource::new(device)
        .unwrap()
        .allocate(4096, &s)
        .unwrap();
    let mut c = buffer(device, &s, 4096);
    assert_eq!(
        refused(comm.all_reduce::<f32>(&pinned, &mut c, ReduceOp::Sum, &s)).0,
        "send"
    );
    // An id that names no listener: NCCL's error or the deadline, never a hang.
    let garbage = UniqueId::from_bytes(&[0xab; 128]).unwrap();
    let config = CommConfig::default().with_blocking(false);
    match Communicator::init_rank_with(&garbage, 2, 1, device, &config) {
        Err(e) => println!("NCCL refused a garbage id at once: {e}"),
        Ok(joining) => {
            let waited = joining.wait_ready(Duration::from_secs(10));
            assert!(waited.is_err(), "a garbage id made a communicator");
            println!("NCCL's answer to a garbage id: {}", waited.unwrap_err());
            joining.abort().unwrap();
        }
    }
    comm.all_reduce_in_place::<f32>(&mut b, ReduceOp::Sum, &s)
        .unwrap();
    comm.wait(&s, Duration::from_secs(30)).unwrap();
    comm.finalize().unwrap();
}

// ---- ranks in child processes --------------------------------------------------------------

/// What a rank of a multi-process test is told: its rank, the world's size, its device and the
/// unique id (hex), in `CUDA_CORE_TEST_NCCL_RANK`.
struct RankSpec {
    rank: usize,
    size: usize,
    device: usize,
    id: UniqueId,
}

const RANK_VAR: &str = "CUDA_CORE_TEST_NCCL_RANK";

impl RankSpec {
    fn to_env(&self) -> String {
        let hex: String = self
            .id
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{} {} {} {hex}", self.rank, self.size, self.device)
    }

    fn from_env() -> RankSpec {
        let text = std::env::var(RANK_VAR).expect("a rank's spec");
        let fields: Vec<&str> = text.split(' ').collect();
        let bytes: Vec<u8> = (0..fields[3].len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&fields[3][i..i + 2], 16).unwrap())
            .collect();
        RankSpec {
            rank: fields[0].parse().unwrap(),
            size: fields[1].parse().unwrap(),
            device: fields[2].parse().unwrap(),
            id: UniqueId::from_bytes(&bytes).unwrap(),
        }
    }
}

/// Starts the ranks of `test` as children of this binary, rank `r` on `devices[r]`, with an
/// id this process made (its bootstrap listener lives here until they have joined), and
/// stdin piped (a rank may wait for a line).
fn start_ranks(test: &str, devices: &[usize]) -> Vec<std::process::Child> {
    let id = UniqueId::new().unwrap();
    devices
        .iter()
        .enumerate()
        .map(|(rank, &device)| {
            let spec = RankSpec {
                rank,
                size: devices.len(),
                device,
                id: id.clone(),
            };
            common::child_command(test, "rank")
                .env(RANK_VAR, spec.to_env())
                .stdin(Stdio::piped())
                .spawn()
                .expect("a rank starts")
        })
        .collect()
}

/// Each child's exit and output.
fn outputs(children: Vec<std::process::Child>) -> Vec<(std::process::ExitStatus, String)> {
    children
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            (out.status, text)
        })
        .collect()
}

/// A rank's part of a two-process all-reduce: joins (non-blocking, within a minute), sums
/// `rank + 1` over 1 MiB of f32 and checks, splits into one communicator per rank, finalizes.
/// Prints `refused: ...` where NCCL would not make the communicator.
fn all_reduce_rank() {
    let spec = RankSpec::from_env();
    let device = Device::new(spec.device).unwrap();
    let config = CommConfig::default()
        .with_blocking(false)
        .with_timeout(Duration::from_secs(60));
    let comm = match Communicator::init_rank_with(&spec.id, spec.size, spec.rank, device, &config)
        .and_then(|comm| comm.wait_ready(Duration::from_secs(60)).map(|()| comm))
    {
        Ok(comm) => comm,
        Err(e) => {
            println!("refused: {e}");
            return;
        }
    };
    let s = stream(device);
    let mut x = buffer(device, &s, 4 << 20);
    x.copy_from_host(&vec![(spec.rank + 1) as f32; 1 << 20], &s)
        .unwrap();
    comm.all_reduce_in_place::<f32>(&mut x, ReduceOp::Sum, &s)
        .unwrap();
    comm.wait(&s, Duration::from_secs(60)).unwrap();
    let want = (spec.size * (spec.size + 1) / 2) as f32;
    assert!(x.to_vec::<f32>(&s).unwrap().iter().all(|&v| v == want));
    let alone = comm.split(Some(spec.rank as u32), 0).unwrap().unwrap();
    assert_eq!(alone.size(), 1);
    alone.finalize().unwrap();
    comm.finalize().unwrap();
    println!("rank {} summed {want}", spec.rank);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn several_ranks_on_one_gpu_in_child_processes_run_or_say_why_not() {
    let test = common::test_name(
        module_path!(),
        "several_ranks_on_one_gpu_in_child_processes_run_or_say_why_not",
    );
    if common::child_role(&test).is_some() {
        all_reduce_rank();
        return;
    }
    if real_nccl().is_none() {
        return;
    }
    let _watchdog = common::Watchdog::new(Duration::from_secs(300), &test);
    let results = outputs(start_ranks(&test, &[0, 0]));
    for (status, text) in &results {
        print!("{text}");
        assert!(status.success(), "a rank failed ({status}):\n{text}");
    }
    if let Some((_, text)) = results.iter().find(|(_, t)| t.contains("refused: ")) {
        // The child's line may follow the test harness's "test ... " on the same line.
        let why = text
            .lines()
            .find_map(|l| l.find("refused: ").map(|at| &l[at..]))
            .unwrap_or("refused");
        common::not_run(
            "nccl-shared-device",
            &format!("NCCL takes no two ranks on one device here ({why})"),
        );
        return;
    }
    for (rank, (_, text)) in results.iter().enumerate() {
        assert!(text.contains(&format!("rank {rank} summed 3")), "{text}");
    }
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn two_processes_on_two_gpus_all_reduce_split_and_finalize() {
    let test = common::test_name(
        module_path!(),
        "two_processes_on_two_gpus_all_reduce_split_and_finalize",
    );
    if common::child_role(&test).is_some() {
        all_reduce_rank();
        return;
    }
    if real_nccl().is_none() {
        return;
    }
    let count = Device::count().unwrap_or(0);
    if count < 2 {
        common::not_run(
            "two-gpus",
            &format!("needs two CUDA devices (found {count})"),
        );
        return;
    }
    let _watchdog = common::Watchdog::new(Duration::from_secs(300), &test);
    for (rank, (status, text)) in outputs(start_ranks(&test, &[0, 1])).iter().enumerate() {
        print!("{text}");
        assert!(status.success(), "rank {rank} failed ({status}):\n{text}");
        assert!(text.contains(&format!("rank {rank} summed 3")), "{text}");
    }
}

/// Rank 1 joins, says so, and dies (SIGABRT, no clean-up); rank 0 joins, waits for its line on
/// stdin (sent once rank 1 is dead), queues an all-reduce and waits 20 s for it: the wait must
/// end in an error within that, then the abort must return.
fn dying_rank() {
    let spec = RankSpec::from_env();
    let device = Device::new(spec.device).unwrap();
    let config = CommConfig::default()
        .with_blocking(false)
        .with_timeout(Duration::from_secs(60));
    let comm = match Communicator::init_rank_with(&spec.id, spec.size, spec.rank, device, &config)
        .and_then(|comm| comm.wait_ready(Duration::from_secs(60)).map(|()| comm))
    {
        Ok(comm) => comm,
        Err(e) => {
            println!("refused: {e}");
            return;
        }
    };
    let s = stream(device);
    let mut x = buffer(device, &s, 4 << 20);
    x.fill(0u32, &s).unwrap();
    s.sync().unwrap();
    println!("joined");
    std::io::stdout().flush().unwrap();
    if spec.rank == 1 {
        std::process::abort();
    }
    let mut line = [0u8; 1];
    let _ = std::io::stdin().read(&mut line);
    let start = Instant::now();
    let queued = comm.all_reduce_in_place::<f32>(&mut x, ReduceOp::Sum, &s);
    let waited = queued.and_then(|()| comm.wait(&s, Duration::from_secs(20)));
    let took = start.elapsed();
    println!("survivor: {waited:?} after {took:?}");
    assert!(waited.is_err(), "the all-reduce with a dead peer finished");
    assert!(took < Duration::from_secs(25), "{took:?}");
    comm.abort().unwrap();
    println!("survivor: aborted after {:?}", start.elapsed());
}

#[test]
#[ignore = "needs two CUDA GPUs"]
fn a_peer_that_dies_ends_the_survivors_wait_within_its_timeout() {
    let test = common::test_name(
        module_path!(),
        "a_peer_that_dies_ends_the_survivors_wait_within_its_timeout",
    );
    if common::child_role(&test).is_some() {
        dying_rank();
        return;
    }
    if real_nccl().is_none() {
        return;
    }
    let _watchdog = common::Watchdog::new(Duration::from_secs(300), &test);
    // Two devices where there are; else one, where NCCL may refuse.
    let devices = if Device::count().unwrap_or(0) >= 2 {
        [0, 1]
    } else {
        [0, 0]
    };
    let mut children = start_ranks(&test, &devices);
    let mut dying = children.pop().unwrap();
    let mut rank1 = String::new();
    dying
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut rank1)
        .unwrap();
    let status = dying.wait().unwrap();
    let mut survivor = children.pop().unwrap();
    if rank1.contains("refused: ") {
        let _ = survivor.kill();
        let _ = survivor.wait();
        common::not_run(
            "two-gpus",
            &format!(
                "needs two CUDA devices: NCCL took no two ranks on one ({})",
                rank1.trim()
            ),
        );
        return;
    }
    assert!(
        rank1.contains("joined") && !status.success(),
        "rank 1: {status}\n{rank1}"
    );
    // Rank 1 is dead: let rank 0 go on.
    survivor.stdin.take().unwrap().write_all(b"\n").unwrap();
    let out = survivor.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    print!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the survivor failed ({})", out.status);
    assert!(text.contains("survivor: aborted"), "{text}");
}

// ---- the example ---------------------------------------------------------------------------

/// The `nccl_data_parallel` example's binary: beside this test's directory under cargo
/// (`target/*/examples`), or in an `examples/` folder beside the folder of a copied test
/// binary.
fn example() -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe
        .parent()?
        .parent()?
        .join("examples")
        .join("nccl_data_parallel");
    if path.is_file() {
        Some(path)
    } else {
        common::not_run("examples", &format!("{} was not built", path.display()));
        None
    }
}

#[test]
fn the_data_parallel_example_runs_or_says_why_not() {
    let Some(example) = example() else { return };
    let out = std::process::Command::new(example)
        .env_remove("CUDA_CORE_TEST_REQUIRE")
        .env_remove("RANK")
        .env_remove("WORLD_SIZE")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{}\n{stdout}{stderr}", out.status);
    assert!(!stderr.contains("panicked"), "{stderr}");
    if let Some(line) = stdout.lines().find(|l| l.starts_with("not run: ")) {
        println!("the example says: {line}");
    } else {
        assert!(stdout.contains("all-reduced and checked"), "{stdout}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn the_data_parallel_example_sums_on_every_gpu() {
    let Some(example) = example() else { return };
    let out = std::process::Command::new(example)
        .env("CUDA_CORE_TEST_REQUIRE", "gpu,nccl,nvrtc")
        .env_remove("RANK")
        .env_remove("WORLD_SIZE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    print!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    if stdout.contains("not run: no NCCL") {
        common::not_run("nccl", "the example found no NCCL");
        return;
    }
    assert!(out.status.success(), "{}", out.status);
    let devices = Device::count().unwrap();
    let checked = stdout
        .lines()
        .filter(|l| l.contains("all-reduced and checked"));
    assert_eq!(checked.count(), devices, "{stdout}");
}
