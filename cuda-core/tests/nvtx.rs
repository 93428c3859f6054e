//! NVTX annotations (feature `nvtx`), as a tool sees them.
//!
//! NVTX needs no GPU: a stand-in tool (`tests/standin/libnvtx_tool.c`, built with the C
//! compiler) takes every call of the core, CUDA and domain modules and logs it, as a profiler
//! would take them. Each test runs in a child process of this binary with
//! `NVTX_INJECTION64_PATH` naming the tool (NVTX attaches a tool once per process, at its first
//! call), then reads the tool's log back and matches it line by line:
//!
//! - ranges, marks, categories, thread names and domains: what each call sends, in order, on
//!   which thread;
//! - the crate's objects named with their own handles, on the stand-in driver, and named
//!   streams and events kept out of recycling;
//! - a tool whose initialisation fails is left out, and without a tool every call returns.
//!
//! On a GPU (`#[ignore = "needs a CUDA GPU"]`): the same tool sees a real driver's device,
//! context, stream and event by their handles, and a range around real work.

use std::collections::HashMap;
use std::ffi::{c_char, CStr};
use std::path::PathBuf;

use crate::common::{self, standin};
use cuda_core::nvtx::{self, Attributes, Domain, ProcessRange, Range};
use cuda_core::{Allocate, Device, EventOptions, StreamOptions};

// ---- the stand-in tool ---------------------------------------------------------------------

const TOOL_FILE: &str = "libnvtx_tool.so";

/// The stand-in tool, built once per process; `None` (said as not run, which fails where
/// `CUDA_CORE_TEST_REQUIRE` names `cc`) without a C compiler.
fn build_tool() -> Option<PathBuf> {
    let dir = standin::build_library(
        "libnvtx_tool.c",
        include_str!("standin/libnvtx_tool.c"),
        TOOL_FILE,
        &[],
        &[],
    )?;
    Some(dir.join(TOOL_FILE))
}

/// The tool as the child sees it: the library `NVTX_INJECTION64_PATH` names, opened by the test
/// too (the same library NVTX loads; opened first, it stays loaded when a failed tool is
/// unloaded), for its log.
struct Tool(libloading::Library);

impl Tool {
    fn open() -> Tool {
        let path = std::env::var_os("NVTX_INJECTION64_PATH").expect("the child names the tool");
        // SAFETY: the stand-in tool, whose initialisers only set up its log.
        Tool(unsafe { libloading::Library::new(path) }.expect("the stand-in tool loads"))
    }

    /// The calls logged so far, one per line.
    fn lines(&self) -> Vec<String> {
        // SAFETY: the tool's own functions, without arguments.
        let (log, full) = unsafe {
            let log = self
                .0
                .get::<unsafe extern "C" fn() -> *const c_char>(b"nvtx_tool_log\0")
                .unwrap();
            let full = self
                .0
                .get::<unsafe extern "C" fn() -> i32>(b"nvtx_tool_log_full\0")
                .unwrap();
            // SAFETY: a NUL-terminated static buffer.
            (CStr::from_ptr(log()).to_string_lossy().into_owned(), full())
        };
        assert_eq!(full, 0, "the tool's log is full");
        log.lines().map(str::to_owned).collect()
    }

    fn clear(&self) {
        // SAFETY: the tool's own function, without arguments.
        unsafe {
            self.0
                .get::<unsafe extern "C" fn()>(b"nvtx_tool_log_clear\0")
                .unwrap()()
        }
    }
}

/// Which driver the child runs against.
#[derive(Clone, Copy, PartialEq)]
enum Driver {
    /// None is loaded (the body makes no driver call).
    Unused,
    /// The stand-in driver (`tests/standin/libcuda_standin.c`).
    Standin,
    /// The machine's.
    Real,
}

/// Runs `body` in a child process of this test binary against `driver`, with
/// `NVTX_INJECTION64_PATH` naming the stand-in tool (`tool`), or removed, and `env` set.
fn in_child(function: &str, driver: Driver, tool: bool, env: &[(&str, &str)], body: impl FnOnce()) {
    let test = common::test_name(module_path!(), function);
    let role = format!("nvtx tool={tool}");
    let marker = format!("nvtx child: {test} done");
    if let Some(running) = common::child_role(&test) {
        if running == role {
            body();
            println!("{marker}");
        }
        return;
    }
    if driver == Driver::Real {
        if let Some(sign) = standin::under_sanitizer() {
            // compute-sanitizer attaches an NVTX tool of its own, which this one would replace.
            return common::not_run(
                "nvtx",
                &format!("the stand-in NVTX tool, under compute-sanitizer ({sign})"),
            );
        }
    }
    let mut child = match driver {
        Driver::Standin => match standin::child(&test, &role, &[]) {
            Some(child) => child,
            None => return,
        },
        Driver::Unused | Driver::Real => common::child_command(&test, &role),
    };
    if tool {
        let Some(path) = build_tool() else { return };
        child.env("NVTX_INJECTION64_PATH", path);
    } else {
        child.env_remove("NVTX_INJECTION64_PATH");
    }
    for (name, value) in env {
        child.env(name, value);
    }
    common::wait_child(child.spawn().expect("a child starts"), &test, &marker);
}

/// Matches the tool's log against `expected`, line by line, word by word. A word `$NAME`
/// matches any word and binds it: the same name must match the same word throughout. Returns
/// the bindings.
fn matches(log: &[String], expected: &[String]) -> HashMap<String, String> {
    let shown = log.join("\n");
    assert_eq!(
        log.len(),
        expected.len(),
        "the tool's log:\n{shown}\n\nexpected:\n{}",
        expected.join("\n")
    );
    let mut bound = HashMap::new();
    for (line, want) in log.iter().zip(expected) {
        let words: Vec<&str> = line.split(' ').collect();
        let wants: Vec<&str> = want.split(' ').collect();
        let fits = words.len() == wants.len()
            && words
                .iter()
                .zip(&wants)
                .all(|(word, want)| match want.strip_prefix('$') {
                    Some(name) => word == bound.entry(name.to_owned()).or_insert(word.to_string()),
                    None => word == want,
                });
        assert!(
            fits,
            "the tool logged {line:?} where {want:?} was expected; its log:\n{shown}"
        );
    }
    bound
}

/// The lines the tool logs when it starts: the export tables' version and sizes, each module's
/// number of callback ids (`NVTX_CBID_<module>_SIZE`), and a module id past the last refused.
fn start_lines() -> Vec<String> {
    [
        "init version=3 callbacks=16 version_info=24",
        "module 1 size 16",
        "module 2 size 9",
        "module 5 size 16",
        "module 3 size 15",
        "module 4 size 7",
        "module 6 size 7",
        "module 7 refused",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The attributes words of `nvtxEventAttributes_t` version 3 (48 bytes), an ASCII message and
/// no payload, with `category` and `color` (`None`: `NVTX_COLOR_UNKNOWN`).
fn attributes(category: u32, color: Option<u32>) -> String {
    let (color_type, color) = match color {
        Some(argb) => (1, argb),
        None => (0, 0),
    };
    format!(
        "version=3 size=48 category={category} colortype={color_type} color={color:#010x} \
         payloadtype=0 msgtype=1"
    )
}

// ---- without a GPU -------------------------------------------------------------------------

/// Nested ranges arrive as push, push, pop, pop with their messages on this thread, a guard
/// pops on unwinding, a process range ended on another thread carries its start's id (above 32
/// bits: not truncated), and marks, categories, thread names and domains carry what was given.
#[test]
fn ranges_marks_names_and_domains_reach_the_tool() {
    in_child(
        "ranges_marks_names_and_domains_reach_the_tool",
        Driver::Unused,
        true,
        &[],
        || {
            let tool = Tool::open();
            {
                let _outer = Range::push("outer");
                let _inner = Range::push("inner");
                nvtx::mark("inside");
            }
            let unwound = std::panic::catch_unwind(|| {
                let _range = Range::push("unwound");
                // Unwinds without the panic hook's message.
                std::panic::resume_unwind(Box::new("on purpose"));
            });
            assert!(unwound.is_err());

            nvtx::name_category(7, "seven things");
            let look = Attributes::default()
                .with_color(0xFF76_B900)
                .with_category(7);
            drop(Range::push_with("colored", look));
            drop(Range::push_with("plain", Attributes::default()));

            let across = ProcessRange::start("across");
            std::thread::spawn(move || across.end()).join().unwrap();
            drop(ProcessRange::start_with("dropped", look));

            nvtx::mark("a\0b");
            let long = "x".repeat(1000);
            nvtx::mark(&long);
            nvtx::mark_with("tinted", Attributes::default().with_color(0x8000_00FF));

            nvtx::name_current_thread("main thread");
            std::thread::spawn(|| nvtx::name_current_thread("worker"))
                .join()
                .unwrap();

            let domain = Domain::new("solver");
            drop(domain.push("solve", look));
            domain.start("iterate", Attributes::default()).end();
            domain.mark("converged", look);
            domain.name_category(3, "three");

            let mut expected = start_lines();
            let tinted = attributes(0, Some(0x8000_00FF));
            let look = attributes(7, Some(0xFF76_B900));
            let plain = attributes(0, None);
            expected.extend(
                [
                    "push $T outer",
                    "push $T inner",
                    "mark $T inside",
                    "pop $T",
                    "pop $T",
                    "push $T unwound",
                    "pop $T",
                    "category 7 seven things",
                    &format!("pushEx $T {look} colored"),
                    "pop $T",
                    &format!("pushEx $T {plain} plain"),
                    "pop $T",
                    "start $T $ACROSS across",
                    "end $W $ACROSS",
                    &format!("startEx $T $DROPPED {look} dropped"),
                    "end $T $DROPPED",
                    "mark $T ab",
                    &format!("mark $T {long}"),
                    &format!("markEx $T {tinted} tinted"),
                    "thread $T $T main thread",
                    "thread $W2 $W2 worker",
                    "domain $D solver",
                    &format!("dpush $D $T {look} solve"),
                    "dpop $D $T",
                    &format!("dstart $D $T $ITERATE {plain} iterate"),
                    "dend $D $T $ITERATE",
                    &format!("dmark $D $T {look} converged"),
                    "dcategory $D 3 three",
                ]
                .map(str::to_owned),
            );
            let bound = matches(&tool.lines(), &expected);
            assert_ne!(bound["W"], bound["T"], "the range ended on another thread");
            assert_ne!(bound["W2"], bound["T"], "the worker named itself");
            for id in ["ACROSS", "DROPPED", "ITERATE"] {
                let id: u64 = bound[id].parse().unwrap();
                assert!(
                    id > u64::from(u32::MAX),
                    "the tool's 64-bit id came back whole"
                );
            }
            assert_ne!(bound["ACROSS"], bound["DROPPED"]);
        },
    );
}

/// A device, a context, a stream and an event of the stand-in driver reach the tool by their
/// own handles (the handles `as_raw` gives); a named stream and a named event are destroyed
/// when dropped, not recycled, where unnamed ones are kept for reuse.
#[test]
fn objects_are_named_by_their_own_handles() {
    in_child(
        "objects_are_named_by_their_own_handles",
        Driver::Standin,
        true,
        &[],
        || {
            let tool = Tool::open();
            let device = Device::new(0).unwrap();
            let context = device.primary_context().unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let event = device.create_event(EventOptions::default()).unwrap();
            nvtx::name_device(device, "gpu zero");
            nvtx::name_context(&context, "primary");
            nvtx::name_stream(&stream, "uploads");
            nvtx::name_event(&event, "uploaded");
            let mut expected = start_lines();
            expected.extend([
                "device 0 gpu zero".to_owned(),
                format!("context {:p} primary", context.as_raw()),
                format!("stream {:p} uploads", stream.as_raw()),
                format!("event {:p} uploaded", event.as_raw()),
            ]);
            matches(&tool.lines(), &expected);

            // Unnamed: kept for reuse. Named (without `as_raw`, which would keep it out
            // too): destroyed.
            standin::clear_log();
            drop(device.create_stream(StreamOptions::default()).unwrap());
            drop(device.create_event(EventOptions::default()).unwrap());
            assert_eq!(standin::calls("cuStreamDestroy").len(), 0);
            assert_eq!(standin::calls("cuEventDestroy").len(), 0);
            let named = device.create_stream(StreamOptions::default()).unwrap();
            nvtx::name_stream(&named, "short-lived");
            drop(named);
            assert_eq!(
                standin::calls("cuStreamDestroy").len(),
                1,
                "{}",
                standin::log()
            );
            let named = device.create_event(EventOptions::default()).unwrap();
            nvtx::name_event(&named, "short-lived");
            drop(named);
            assert_eq!(
                standin::calls("cuEventDestroy").len(),
                1,
                "{}",
                standin::log()
            );
            drop((stream, event));
        },
    );
}

/// A tool whose `InitializeInjectionNvtx2` returns 0 after filling its slots is left out: no
/// call reaches it (NVTX empties the slots before it unloads the library).
#[test]
fn a_tool_that_fails_to_start_is_left_out() {
    in_child(
        "a_tool_that_fails_to_start_is_left_out",
        Driver::Unused,
        true,
        &[("NVTX_TOOL_FAIL", "1")],
        || {
            let tool = Tool::open();
            drop(Range::push("range"));
            nvtx::mark("mark");
            ProcessRange::start("process range").end();
            nvtx::name_current_thread("thread");
            Domain::new("domain").mark("mark", Attributes::default());
            let mut expected = start_lines();
            expected.push("init fails on purpose".to_owned());
            matches(&tool.lines(), &expected);
            tool.clear();
        },
    );
}

/// Without a tool every call returns and does nothing, the names of the stand-in's objects
/// included.
#[test]
fn without_a_tool_every_call_returns() {
    in_child(
        "without_a_tool_every_call_returns",
        Driver::Standin,
        false,
        &[],
        || {
            assert!(std::env::var_os("NVTX_INJECTION64_PATH").is_none());
            {
                let _outer = Range::push("outer");
                let _inner = Range::push_with("inner", Attributes::default().with_color(1));
                nvtx::mark("mark");
                nvtx::mark_with("mark", Attributes::default().with_category(2));
            }
            let range = ProcessRange::start("across");
            std::thread::spawn(move || range.end()).join().unwrap();
            drop(ProcessRange::start_with("dropped", Attributes::default()));
            nvtx::name_category(1, "one");
            nvtx::name_current_thread("main");
            let domain = Domain::new("domain");
            drop(domain.push("push", Attributes::default()));
            domain.start("start", Attributes::default()).end();
            domain.mark("mark", Attributes::default());
            domain.name_category(1, "one");
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let event = stream.record_new(EventOptions::default()).unwrap();
            nvtx::name_device(device, "device");
            nvtx::name_context(&device.primary_context().unwrap(), "context");
            nvtx::name_stream(&stream, "stream");
            nvtx::name_event(&event, "event");
            stream.sync().unwrap();
        },
    );
}

// ---- on a GPU ------------------------------------------------------------------------------

/// The real driver's device, primary context, stream and event reach the tool by their own
/// handles, and a range around a copy and a synchronisation arrives whole.
#[test]
#[ignore = "needs a CUDA GPU"]
fn real_objects_are_named_by_their_own_handles() {
    in_child(
        "real_objects_are_named_by_their_own_handles",
        Driver::Real,
        true,
        &[],
        || {
            let tool = Tool::open();
            let device = common::device();
            let context = device.primary_context().unwrap();
            let stream = common::stream(device);
            let event = device.create_event(EventOptions::default()).unwrap();
            nvtx::name_device(device, "gpu");
            nvtx::name_context(&context, "primary");
            nvtx::name_stream(&stream, "work");
            nvtx::name_event(&event, "done");
            {
                let _range = Range::push("copy and wait");
                let mut buffer = device
                    .memory_resource()
                    .unwrap()
                    .allocate(12, &stream)
                    .unwrap();
                buffer.copy_from_host(&[1u32, 2, 3], &stream).unwrap();
                stream.record(&event).unwrap();
                event.sync().unwrap();
                assert_eq!(buffer.to_vec::<u32>(&stream).unwrap(), [1, 2, 3]);
            }
            let mut expected = start_lines();
            expected.extend([
                format!("device {} gpu", device.ordinal()),
                format!("context {:p} primary", context.as_raw()),
                format!("stream {:p} work", stream.as_raw()),
                format!("event {:p} done", event.as_raw()),
                "push $T copy and wait".to_owned(),
                "pop $T".to_owned(),
            ]);
            matches(&tool.lines(), &expected);
        },
    );
}
