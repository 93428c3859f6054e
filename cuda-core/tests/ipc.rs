//! Memory and events shared between processes: a parent process and children of this test
//! binary (started on the same test, in a role: see `common::child_command`), talking over a
//! Unix socket. Pools travel as file descriptors (`SharedPoolHandle::send`), everything else
//! as framed bytes. The stand-in tests check the calls each operation makes, and the refusals
//! made before the driver.

use crate::common;
use crate::common::standin;
use crate::common::stream;

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::process::Child;
use std::sync::Arc;
use std::time::Duration;

use cuda_core::{
    ipc::{BufferDescriptor, ImportedPool, IpcEventHandle, IpcMemHandle, SharedPoolHandle},
    memory::{PinnedMemoryPool, PinnedMemoryPoolOptions, SyncMemoryResource},
    Allocate, Buffer, Device, DeviceMemoryResource, DeviceMemoryResourceOptions, Error, Event,
    EventOptions, MemoryResource, Stream, StreamOptions,
};

const MIB: usize = 1 << 20;
/// The socket's path, for a child.
const SOCKET: &str = "CUDA_CORE_TEST_IPC_SOCKET";
/// How long any one message may take to come.
const PATIENCE: Duration = Duration::from_secs(120);

/// One end of a parent-child socket: framed byte messages, and shared pools.
struct Channel(UnixStream);

impl Channel {
    fn send(&mut self, bytes: &[u8]) {
        let len = u32::try_from(bytes.len()).unwrap().to_le_bytes();
        self.0.write_all(&len).expect("sending a length");
        self.0.write_all(bytes).expect("sending a message");
    }

    fn try_recv(&mut self) -> std::io::Result<Vec<u8>> {
        let mut len = [0u8; 4];
        self.0.read_exact(&mut len)?;
        let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
        self.0.read_exact(&mut bytes)?;
        Ok(bytes)
    }

    fn recv(&mut self) -> Vec<u8> {
        self.try_recv().expect("a message from the other process")
    }

    fn say(&mut self, word: &str) {
        self.send(word.as_bytes());
    }

    fn expect(&mut self, word: &str) {
        let got = self.recv();
        assert_eq!(String::from_utf8_lossy(&got), word);
    }

    fn send_pool(&mut self, handle: &SharedPoolHandle) {
        handle.send(&self.0).expect("sending the pool");
    }

    fn recv_pool(&mut self) -> SharedPoolHandle {
        SharedPoolHandle::recv(&self.0).expect("receiving the pool")
    }
}

/// How long a whole test may take: the parent's watchdog ends it then. A child's ends it a
/// little sooner, so that a child stuck in the driver does not outlive its parent.
const TEST_LIMIT: Duration = Duration::from_secs(300);

/// A child process whose output is read as it comes, so that a child writing much never
/// blocks on a full pipe while the parent waits for its next message; shown when it ends.
struct Running {
    child: Child,
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

impl Running {
    fn start(command: &mut std::process::Command) -> Running {
        fn drain(
            pipe: Option<impl Read + Send + 'static>,
        ) -> Option<std::thread::JoinHandle<Vec<u8>>> {
            pipe.map(|mut pipe| {
                std::thread::spawn(move || {
                    let mut bytes = Vec::new();
                    let _ = pipe.read_to_end(&mut bytes);
                    bytes
                })
            })
        }
        let mut child = command.spawn().expect("a child starts");
        let stdout = drain(child.stdout.take());
        let stderr = drain(child.stderr.take());
        Running {
            child,
            stdout,
            stderr,
        }
    }

    fn has_ended(&mut self) -> bool {
        self.child.try_wait().ok().flatten().is_some()
    }

    /// Waits for the child (killed first where `kill`), shows its output, and returns how it
    /// ended and its standard output.
    fn finish(mut self, kill: bool) -> (Option<std::process::ExitStatus>, String) {
        if kill {
            let _ = self.child.kill();
        }
        let status = self.child.wait().ok();
        let read = |pipe: Option<std::thread::JoinHandle<Vec<u8>>>| {
            pipe.and_then(|thread| thread.join().ok())
                .unwrap_or_default()
        };
        let stdout = String::from_utf8_lossy(&read(self.stdout.take())).into_owned();
        let stderr = read(self.stderr.take());
        print!("{stdout}");
        eprint!("{}", String::from_utf8_lossy(&stderr));
        (status, stdout)
    }

    /// Waits for the child, which must pass and have run its body (printed `marker`).
    fn wait(self, test: &str, marker: &str) {
        let (status, stdout) = self.finish(false);
        let status = status.expect("waiting for the child");
        assert!(
            status.success(),
            "{test} failed in its own process ({status})"
        );
        assert!(
            stdout.contains(marker),
            "{test} did not run its body in its own process (no {marker:?} in its output)"
        );
    }
}

/// The parent's view of its children: a channel to each, in the order of their roles. A
/// child still running when this drops (the parent's side failed) is killed, its output
/// shown, so that no child outlives the test holding the GPU.
struct Children {
    test: String,
    marker: String,
    channels: Vec<Channel>,
    processes: Vec<Option<Running>>,
}

impl Children {
    /// A message from child `i`; should none come, that child's output is shown first (it is
    /// killed if it is still running after `PATIENCE`) and the test fails.
    fn recv(&mut self, i: usize) -> Vec<u8> {
        match self.channels[i].try_recv() {
            Ok(bytes) => bytes,
            Err(e) => {
                let silent = matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                );
                let ended = self.processes[i].take().map(|child| child.finish(silent).0);
                panic!("child {i} sent nothing more ({e}); it ended: {ended:?}");
            }
        }
    }

    fn expect(&mut self, i: usize, word: &str) {
        let got = self.recv(i);
        assert_eq!(String::from_utf8_lossy(&got), word, "child {i}");
    }

    /// Waits for every child: each must pass and have run its body.
    fn wait_all(&mut self) {
        for process in &mut self.processes {
            if let Some(child) = process.take() {
                child.wait(&self.test, &self.marker);
            }
        }
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for (i, process) in self.processes.iter_mut().enumerate() {
            if let Some(child) = process.take() {
                eprintln!(
                    "ending child {i} of {}, which the parent did not wait for",
                    self.test
                );
                child.finish(true);
            }
        }
    }
}

/// Runs a test as a parent and `roles.len()` children of it. In a child, `child` runs with
/// its role and its channel; in the parent, `parent` with the children (waited for at the end,
/// or earlier by `Children::wait_all`).
fn processes(
    function: &str,
    roles: &[&str],
    parent: impl FnOnce(&mut Children),
    child: impl FnOnce(&str, Channel),
) {
    let test = common::test_name(module_path!(), function);
    let marker = format!("ipc child: {test} done");
    if let Some(role) = common::child_role(&test) {
        let _watchdog = common::Watchdog::new(
            TEST_LIMIT - Duration::from_secs(20),
            &format!("{test} as {role}"),
        );
        let path = std::env::var(SOCKET).expect("the socket's path");
        let socket = UnixStream::connect(path).expect("connecting to the parent");
        socket.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut channel = Channel(socket);
        channel.say(&role);
        child(&role, channel);
        println!("{marker}");
        return;
    }
    let _watchdog = common::Watchdog::new(TEST_LIMIT, &test);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("socket");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let mut children = Children {
        processes: roles
            .iter()
            .map(|role| {
                Some(Running::start(
                    common::child_command(&test, role).env(SOCKET, &path),
                ))
            })
            .collect(),
        test,
        marker,
        channels: Vec::new(),
    };
    // Each child connects and names its role; one that ends first fails the test with its
    // output.
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut accepted: Vec<(String, Channel)> = Vec::new();
    while accepted.len() < roles.len() {
        match listener.accept() {
            Ok((socket, _)) => {
                socket.set_nonblocking(false).unwrap();
                socket.set_read_timeout(Some(PATIENCE)).unwrap();
                let mut channel = Channel(socket);
                let role = String::from_utf8(channel.recv()).unwrap();
                accepted.push((role, channel));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                for process in &mut children.processes {
                    if process.as_mut().is_some_and(Running::has_ended) {
                        let (status, _) = process.take().unwrap().finish(false);
                        panic!("a child ended ({status:?}) before it connected");
                    }
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "the children did not all connect within {PATIENCE:?}"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accepting a child: {e}"),
        }
    }
    children.channels = roles
        .iter()
        .map(|role| {
            let at = accepted
                .iter()
                .position(|(r, _)| r == role)
                .expect("each role connected once");
            accepted.swap_remove(at).1
        })
        .collect();
    parent(&mut children);
    children.wait_all();
}

fn shareable_pool(device: Device) -> Arc<DeviceMemoryResource> {
    DeviceMemoryResource::new(
        device,
        DeviceMemoryResourceOptions::default().with_shareable(true),
    )
    .expect("a shareable pool")
}

fn ipc_event(device: Device) -> Event {
    device
        .create_event(EventOptions::default().with_interprocess(true))
        .expect("an interprocess event")
}

/// The child's side of the exchange both kinds of memory share: checks the parent's pattern,
/// then, with its stream held at a gate, queues a fill of 0xB0 bytes and a record of the
/// parent's event, says so, and opens the gate when told.
fn child_writes_behind_the_event(buffer: &mut Buffer, stream: &Stream, channel: &mut Channel) {
    let device = stream.device();
    let expected = common::random_u32(1, MIB / 4);
    assert_eq!(buffer.to_vec::<u32>(stream).unwrap(), expected);
    let event_handle = IpcEventHandle::from_bytes(&channel.recv()).unwrap();
    // SAFETY: the parent keeps the event until this child has said "done".
    let event = unsafe { Event::open_ipc(&event_handle, device) }.expect("opening the event");
    // Closed until the parent says "go", however slowly a full test run gets there: a gate
    // that opened by itself after a minute let the fill run before the parent's check (the
    // test failed once so, under the 12 ABI, after running past 60 s among the others). The
    // child's watchdog ends a hang.
    let gate = common::Gate::close_for(stream, TEST_LIMIT);
    buffer.fill(0xB0u8, stream).unwrap();
    stream.record(&event).unwrap();
    channel.say("recorded");
    channel.expect("go");
    gate.open();
    stream.sync().unwrap();
    drop(event);
}

/// The parent's side: its stream waits for the child's record of `event`, then copies the
/// shared buffer into a buffer of its own. Until the child opens its gate the wait holds the
/// copy back; after, the copy sees the child's fill.
fn parent_waits_for_the_child(
    shared: &Buffer,
    stream: &Stream,
    event: &Event,
    children: &mut Children,
) {
    let device = stream.device();
    children.expect(0, "recorded");
    let mut snapshot = device
        .memory_resource()
        .unwrap()
        .allocate(MIB, stream)
        .unwrap();
    snapshot.fill(0u8, stream).unwrap();
    stream.sync().unwrap();
    stream.wait(event).unwrap();
    snapshot.copy_from(shared, stream).unwrap();
    assert!(
        !stream.is_done().unwrap(),
        "the stream ran past the wait for the other process's event"
    );
    children.channels[0].say("go");
    stream.sync().unwrap();
    assert!(
        snapshot
            .to_vec::<u8>(stream)
            .unwrap()
            .iter()
            .all(|&b| b == 0xB0),
        "the copy ordered after the other process's event missed its fill"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_child_imports_the_parents_pool_buffer_and_orders_its_writes_with_an_ipc_event() {
    processes(
        "a_child_imports_the_parents_pool_buffer_and_orders_its_writes_with_an_ipc_event",
        &["child"],
        |children| {
            let device = common::device();
            let stream = stream(device);
            let pool = shareable_pool(device);
            assert!(pool.is_shareable());
            let mut buffer = pool.allocate(MIB, &stream).unwrap();
            buffer
                .copy_from_host(&common::random_u32(1, MIB / 4), &stream)
                .unwrap();
            stream.sync().unwrap();
            let event = ipc_event(device);
            let shared = pool.share().unwrap();
            assert!(
                common::close_on_exec(shared.as_fd()),
                "the shared pool's descriptor"
            );
            children.channels[0].send_pool(&shared);
            children.channels[0].send(&pool.export_buffer(&buffer).unwrap().to_bytes());
            children.channels[0].send(&event.ipc_handle().unwrap().to_bytes());
            parent_waits_for_the_child(&buffer, &stream, &event, children);
            children.expect(0, "done");
            children.wait_all();
            // The child's release of its import freed nothing of the parent's: the memory is
            // in use and holds the child's bytes.
            assert!(pool.usage().unwrap().used_current >= MIB as u64);
            assert!(buffer
                .to_vec::<u8>(&stream)
                .unwrap()
                .iter()
                .all(|&b| b == 0xB0));
            buffer.fill(3u8, &stream).unwrap();
            assert!(buffer
                .to_vec::<u8>(&stream)
                .unwrap()
                .iter()
                .all(|&b| b == 3));
            drop(buffer);
            stream.sync().unwrap();
            assert_eq!(pool.usage().unwrap().used_current, 0);
        },
        |_, mut channel| {
            let device = common::device();
            let stream = stream(device);
            let handle = channel.recv_pool();
            assert_eq!(handle.gpu(), Some(device.uuid().unwrap()));
            let pool = ImportedPool::import(device, handle).expect("importing the pool");
            let descriptor = BufferDescriptor::from_bytes(&channel.recv()).unwrap();
            assert_eq!(descriptor.size(), MIB);
            let mut buffer = pool.import_buffer(&descriptor, &stream).expect("importing");
            assert_eq!(pool.imported_buffers(), 1);
            assert_eq!(buffer.size(), MIB);
            assert_eq!(buffer.device(), Some(device));
            child_writes_behind_the_event(&mut buffer, &stream, &mut channel);
            drop(buffer);
            stream.sync().unwrap();
            assert_eq!(pool.imported_buffers(), 0);
            channel.say("done");
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_child_opens_the_parents_cumemalloc_buffer_by_a_legacy_ipc_handle() {
    processes(
        "a_child_opens_the_parents_cumemalloc_buffer_by_a_legacy_ipc_handle",
        &["child"],
        |children| {
            let device = common::device();
            let stream = stream(device);
            let memory = SyncMemoryResource::new(device).unwrap();
            let mut buffer = memory.allocate(MIB, &stream).unwrap();
            buffer
                .copy_from_host(&common::random_u32(1, MIB / 4), &stream)
                .unwrap();
            // SAFETY: `buffer` lives until the child has said "done", after closing its
            // mapping.
            let handle = unsafe { memory.export_buffer(&buffer) }.unwrap();
            assert_eq!(handle.size(), MIB);
            assert_eq!(handle.gpu(), device.uuid().unwrap());
            let event = ipc_event(device);
            children.channels[0].send(&handle.to_bytes());
            children.channels[0].send(&event.ipc_handle().unwrap().to_bytes());
            parent_waits_for_the_child(&buffer, &stream, &event, children);
            children.expect(0, "done");
            children.wait_all();
            assert!(buffer
                .to_vec::<u8>(&stream)
                .unwrap()
                .iter()
                .all(|&b| b == 0xB0));
        },
        |_, mut channel| {
            let device = common::device();
            let stream = stream(device);
            let handle = IpcMemHandle::from_bytes(&channel.recv()).unwrap();
            // SAFETY: the parent keeps the memory until this child says "done".
            let mut buffer = unsafe { handle.open(&stream) }.expect("opening the handle");
            assert_eq!(buffer.size(), MIB);
            child_writes_behind_the_event(&mut buffer, &stream, &mut channel);
            // Closed before the parent hears "done" (the close waits for the stream first).
            buffer.close(None).unwrap();
            channel.say("done");
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn eight_children_import_the_same_buffers_at_once() {
    const CHILDREN: usize = 8;
    let roles: Vec<String> = (0..CHILDREN).map(|i| format!("child-{i}")).collect();
    let roles: Vec<&str> = roles.iter().map(String::as_str).collect();
    processes(
        "eight_children_import_the_same_buffers_at_once",
        &roles,
        |children| {
            let device = common::device();
            let stream = stream(device);
            let pool = shareable_pool(device);
            let buffers: Vec<Buffer> = (0..CHILDREN)
                .map(|i| {
                    let mut b = pool.allocate(MIB, &stream).unwrap();
                    b.copy_from_host(&common::random_u32(i as u64 + 1, MIB / 4), &stream)
                        .unwrap();
                    b
                })
                .collect();
            stream.sync().unwrap();
            let handle = pool.share().unwrap();
            for i in 0..CHILDREN {
                children.channels[i].send_pool(&handle);
                for buffer in &buffers {
                    children.channels[i].send(&pool.export_buffer(buffer).unwrap().to_bytes());
                }
            }
            // Every child has imported and checked every buffer, all at once, before any
            // writes.
            for i in 0..CHILDREN {
                children.expect(i, "checked");
            }
            for i in 0..CHILDREN {
                children.channels[i].say("write");
            }
            for i in 0..CHILDREN {
                children.expect(i, "done");
            }
            children.wait_all();
            for (i, buffer) in buffers.iter().enumerate() {
                let expected = 0x0101_0101u32 * (i as u32 + 100);
                assert!(
                    buffer
                        .to_vec::<u32>(&stream)
                        .unwrap()
                        .iter()
                        .all(|&x| x == expected),
                    "buffer {i} lacks child {i}'s fill"
                );
            }
            drop(buffers);
            stream.sync().unwrap();
            assert_eq!(pool.usage().unwrap().used_current, 0);
        },
        |role, mut channel| {
            let me: usize = role.trim_start_matches("child-").parse().unwrap();
            let device = common::device();
            let stream = stream(device);
            let pool = ImportedPool::import(device, channel.recv_pool()).unwrap();
            let mut buffers: Vec<Buffer> = (0..CHILDREN)
                .map(|_| {
                    let descriptor = BufferDescriptor::from_bytes(&channel.recv()).unwrap();
                    pool.import_buffer(&descriptor, &stream).unwrap()
                })
                .collect();
            assert_eq!(pool.imported_buffers(), CHILDREN);
            for (i, buffer) in buffers.iter().enumerate() {
                assert_eq!(
                    buffer.to_vec::<u32>(&stream).unwrap(),
                    common::random_u32(i as u64 + 1, MIB / 4),
                    "child {me}, buffer {i}"
                );
            }
            channel.say("checked");
            channel.expect("write");
            buffers[me].fill((me as u8) + 100, &stream).unwrap();
            stream.sync().unwrap();
            drop(buffers);
            stream.sync().unwrap();
            channel.say("done");
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_child_that_exits_without_releasing_leaves_the_parents_pool_intact() {
    processes(
        "a_child_that_exits_without_releasing_leaves_the_parents_pool_intact",
        &["quitter", "second"],
        |children| {
            let device = common::device();
            let stream = stream(device);
            let pool = shareable_pool(device);
            let mut buffer = pool.allocate(MIB, &stream).unwrap();
            buffer.fill(0x11u8, &stream).unwrap();
            stream.sync().unwrap();
            let handle = pool.share().unwrap();
            let descriptor = pool.export_buffer(&buffer).unwrap().to_bytes();
            children.channels[0].send_pool(&handle);
            children.channels[0].send(&descriptor);
            children.expect(0, "imported");
            // The quitter is gone (its exit, without a drop, is its end of the socket).
            assert!(children.channels[0].try_recv().is_err());
            // The parent's buffer and pool work on: the memory keeps its bytes, takes new
            // ones, the pool allocates and frees.
            assert!(buffer
                .to_vec::<u8>(&stream)
                .unwrap()
                .iter()
                .all(|&b| b == 0x11));
            buffer.fill(0x22u8, &stream).unwrap();
            let more = pool.allocate(4 * MIB, &stream).unwrap();
            drop(more);
            stream.sync().unwrap();
            // And it is still shared: another child imports the same buffer.
            children.channels[1].send_pool(&handle);
            children.channels[1].send(&descriptor);
            children.expect(1, "read");
            children.wait_all();
            drop(buffer);
            stream.sync().unwrap();
            assert_eq!(pool.usage().unwrap().used_current, 0);
        },
        |role, mut channel| {
            let device = common::device();
            let stream = stream(device);
            let pool = ImportedPool::import(device, channel.recv_pool()).unwrap();
            let descriptor = BufferDescriptor::from_bytes(&channel.recv()).unwrap();
            let buffer = pool.import_buffer(&descriptor, &stream).unwrap();
            if role == "quitter" {
                channel.say("imported");
                // No drop runs: the buffer, the pool and the socket end with the process.
                println!(
                    "ipc child: {} done",
                    common::test_name(
                        module_path!(),
                        "a_child_that_exits_without_releasing_leaves_the_parents_pool_intact"
                    )
                );
                std::process::exit(0);
            }
            assert!(buffer
                .to_vec::<u8>(&stream)
                .unwrap()
                .iter()
                .all(|&b| b == 0x22));
            channel.say("read");
        },
    );
}

/// The ways a child can misuse what it was sent: each a clear error, and the pool usable
/// after.
#[test]
#[ignore = "needs a CUDA GPU"]
fn bad_imports_are_clear_errors() {
    processes(
        "bad_imports_are_clear_errors",
        &["child"],
        |children| {
            let device = common::device();
            let stream = stream(device);
            let pool = shareable_pool(device);
            let other = shareable_pool(device);
            let kept = pool.allocate(MIB, &stream).unwrap();
            // Large enough for memory of its own, which the trim below gives back: while the
            // pool keeps a freed buffer's memory, the 580 driver imports it without complaint
            // (seen on the H200).
            let freed = pool.allocate(32 * MIB, &stream).unwrap();
            let foreign = other.allocate(MIB, &stream).unwrap();
            stream.sync().unwrap();
            let freed_descriptor = pool.export_buffer(&freed).unwrap();
            freed.close(Some(&stream)).unwrap();
            stream.sync().unwrap();
            pool.trim_to(0).unwrap();
            // The exporting side's own refusals.
            let plain =
                DeviceMemoryResource::new(device, DeviceMemoryResourceOptions::default()).unwrap();
            let plain_buffer = plain.allocate(1024, &stream).unwrap();
            assert!(matches!(
                plain.share(),
                Err(Error::InvalidArgument { name: "self", .. })
            ));
            assert!(matches!(
                plain.export_buffer(&plain_buffer),
                Err(Error::InvalidArgument { name: "self", .. })
            ));
            assert!(matches!(
                pool.export_buffer(&foreign),
                Err(Error::InvalidArgument { name: "buffer", .. })
            ));
            let channel = &mut children.channels[0];
            channel.send_pool(&pool.share().unwrap());
            channel.send(&pool.export_buffer(&kept).unwrap().to_bytes());
            channel.send(&freed_descriptor.to_bytes());
            channel.send(&other.export_buffer(&foreign).unwrap().to_bytes());
            children.expect(0, "done");
            children.wait_all();
            drop((kept, foreign, plain_buffer));
            stream.sync().unwrap();
            assert_eq!(pool.usage().unwrap().used_current, 0);
        },
        |_, mut channel| {
            let device = common::device();
            let stream = stream(device);
            let handle = channel.recv_pool();
            // A handle that claims another GPU, one this process does not see.
            let mut parts = handle.try_clone().unwrap().into_parts();
            parts.info[28..44].copy_from_slice(&[0xee; 16]);
            let elsewhere =
                SharedPoolHandle::from_parts(parts.pool, parts.liveness, &parts.info).unwrap();
            let err = ImportedPool::import(device, elsewhere).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "device", reason } if reason.contains("does not see")),
                "{err}"
            );
            // Through another device of this process, where there is one.
            if let Ok(second) = Device::new(1) {
                let err = ImportedPool::import(second, handle.try_clone().unwrap()).unwrap_err();
                assert!(
                    matches!(&err, Error::InvalidArgument { name: "device", reason } if reason.contains("device 0")),
                    "{err}"
                );
            }
            let pool = ImportedPool::import(device, handle).unwrap();
            let kept = BufferDescriptor::from_bytes(&channel.recv()).unwrap();
            let freed = BufferDescriptor::from_bytes(&channel.recv()).unwrap();
            let foreign = BufferDescriptor::from_bytes(&channel.recv()).unwrap();
            // An imported pool allocates nothing.
            let err = pool.allocate(1024, &stream).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { name: "self", .. }),
                "{err}"
            );
            // A buffer of another pool.
            let err = pool.import_buffer(&foreign, &stream).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "descriptor", reason } if reason.contains("another pool")),
                "{err}"
            );
            // A buffer its exporter freed.
            let err = pool.import_buffer(&freed, &stream).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "descriptor", reason } if reason.contains("freed")),
                "{err}"
            );
            // A size beyond the allocation.
            let mut bytes = kept.to_bytes();
            bytes[24..32].copy_from_slice(&(64 * MIB as u64).to_le_bytes());
            let oversized = BufferDescriptor::from_bytes(&bytes).unwrap();
            let err = pool.import_buffer(&oversized, &stream).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "descriptor", reason } if reason.contains("exceeds")),
                "{err}"
            );
            // Twice at once; after the first is released, again.
            let first = pool.import_buffer(&kept, &stream).unwrap();
            let err = pool.import_buffer(&kept, &stream).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "descriptor", reason } if reason.contains("already")),
                "{err}"
            );
            drop(first);
            let again = pool.import_buffer(&kept, &stream).unwrap();
            assert_eq!(again.to_vec::<u8>(&stream).unwrap().len(), MIB);
            drop(again);
            stream.sync().unwrap();
            assert_eq!(pool.imported_buffers(), 0);
            channel.say("done");
        },
    );
}

/// The number of this process's open file descriptors.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn ten_thousand_imports_and_releases_leak_nothing() {
    // Buffer imports and pool imports. compute-sanitizer (seen on the H200 under memcheck)
    // slows them past the parent's patience: a twentieth of each then, which still shows a
    // descriptor kept per pool import (20 against the 16 allowed).
    let (cycles, pool_imports) = match common::standin::under_sanitizer() {
        Some(_) => (500, 20),
        None => (10_000, 200),
    };
    processes(
        "ten_thousand_imports_and_releases_leak_nothing",
        &["child"],
        |children| {
            let device = common::device();
            let stream = stream(device);
            let pool = shareable_pool(device);
            let buffer = pool.allocate(4 * MIB, &stream).unwrap();
            stream.sync().unwrap();
            let handle = pool.share().unwrap();
            let channel = &mut children.channels[0];
            channel.send(&pool.export_buffer(&buffer).unwrap().to_bytes());
            // One for the first import, one per pool cycle, one for the buffer cycles.
            for _ in 0..pool_imports + 2 {
                channel.send_pool(&handle);
            }
            children.expect(0, "done");
            children.wait_all();
        },
        |_, mut channel| {
            if let Some(sign) = common::standin::under_sanitizer() {
                common::not_run(
                    "ipc-stress",
                    &format!(
                        "10,000 imports, under compute-sanitizer ({sign}): {cycles} buffer and \
                         {pool_imports} pool imports instead"
                    ),
                );
            }
            let device = common::device();
            let stream = stream(device);
            let descriptor = BufferDescriptor::from_bytes(&channel.recv()).unwrap();
            // Imports of the pool, each dropped: no file descriptor or pool stays behind.
            // The first import, of the pool and a buffer, before counting: the driver opens
            // descriptors of its own on first use (10 more over the first imports on the 580
            // driver).
            let first = ImportedPool::import(device, channel.recv_pool()).unwrap();
            drop(first.import_buffer(&descriptor, &stream).unwrap());
            drop(first);
            stream.sync().unwrap();
            let fds = open_fds();
            let (free_before, _) = device.memory_info().unwrap();
            #[cfg(feature = "nvml")]
            let used_before = common::own_gpu_memory(device);
            for _ in 0..pool_imports {
                let pool = ImportedPool::import(device, channel.recv_pool()).unwrap();
                drop(pool.import_buffer(&descriptor, &stream).unwrap());
                drop(pool);
                stream.sync().unwrap();
            }
            // A descriptor kept per import would be 200; the driver's own few are allowed for.
            let left = open_fds().saturating_sub(fds);
            assert!(
                left < 16,
                "{left} file descriptors left open by {pool_imports} pool imports"
            );
            // The pool again, for the buffer cycles (the imports above are all gone).
            let pool = ImportedPool::import(device, channel.recv_pool()).unwrap();
            for _ in 0..cycles {
                let buffer = pool.import_buffer(&descriptor, &stream).unwrap();
                assert_eq!(buffer.size(), 4 * MIB);
                drop(buffer);
            }
            stream.sync().unwrap();
            assert_eq!(pool.imported_buffers(), 0);
            drop(pool);
            let (free_after, _) = device.memory_info().unwrap();
            // Device-wide, so other tests of the parent's binary allocating meanwhile move it
            // too: the margin is theirs. A leak of one 2 MiB mapping per import would be 20 GB,
            // one of 64 KiB 640 MB.
            assert!(
                free_after + 512 * MIB >= free_before,
                "device free memory fell from {free_before} to {free_after} bytes over \
                 {cycles} imports"
            );
            #[cfg(feature = "nvml")]
            match (common::own_gpu_memory(device), used_before) {
                (Some(after), Some(before)) => assert!(
                    after <= before + 2 * MIB as u64,
                    "this process's device memory grew from {before} to {after} bytes over \
                     {cycles} imports"
                ),
                _ => common::not_run(
                    "host-pids",
                    "NVML does not report this process's memory (its process ids are not this \
                     PID namespace's)",
                ),
            }
            channel.say("done");
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_child_reads_and_writes_the_parents_pinned_pool_memory_from_the_host() {
    processes(
        "a_child_reads_and_writes_the_parents_pinned_pool_memory_from_the_host",
        &["child"],
        |children| {
            let device = common::device();
            let stream = stream(device);
            if !device
                .properties()
                .host_numa_memory_pools_supported()
                .unwrap_or(false)
            {
                children.channels[0].say("skip");
                common::not_run("host-pools", "the device has no host NUMA memory pools");
                return;
            }
            let pool = PinnedMemoryPool::new(
                device,
                PinnedMemoryPoolOptions::default()
                    .with_numa_node(0)
                    .with_shareable(true),
            )
            .unwrap();
            let mut buffer = pool.allocate(MIB, &stream).unwrap();
            stream.sync().unwrap();
            // SAFETY: the allocation is done (synchronised); nothing else uses the buffer yet.
            unsafe { buffer.as_mut_slice::<u32>() }
                .unwrap()
                .copy_from_slice(&common::random_u32(5, MIB / 4));
            children.channels[0].say("go");
            children.channels[0].send_pool(&pool.share().unwrap());
            children.channels[0].send(&pool.export_buffer(&buffer).unwrap().to_bytes());
            children.expect(0, "written");
            children.wait_all();
            // SAFETY: the child has finished with the memory and exited.
            let view = unsafe { buffer.as_slice::<u32>() }.unwrap();
            assert_eq!(view, &common::random_u32(6, MIB / 4)[..]);
        },
        |_, mut channel| {
            if channel.recv() == b"skip" {
                return;
            }
            let device = common::device();
            let stream = stream(device);
            let handle = channel.recv_pool();
            assert_eq!(handle.numa_node(), Some(0));
            assert_eq!(handle.gpu(), None);
            let pool = ImportedPool::import(device, handle).unwrap();
            assert!(pool.is_host_memory());
            let descriptor = BufferDescriptor::from_bytes(&channel.recv()).unwrap();
            let mut buffer = pool.import_buffer(&descriptor, &stream).unwrap();
            assert!(buffer.is_host_accessible());
            assert_eq!(buffer.device(), None);
            // Through a copy and through the host.
            assert_eq!(
                buffer.to_vec::<u32>(&stream).unwrap(),
                common::random_u32(5, MIB / 4)
            );
            // SAFETY: the parent does not touch the memory until it hears "written".
            unsafe { buffer.as_mut_slice::<u32>() }
                .unwrap()
                .copy_from_slice(&common::random_u32(6, MIB / 4));
            drop(buffer);
            stream.sync().unwrap();
            channel.say("written");
        },
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn interprocess_events_refuse_what_the_driver_cannot_do() {
    let device = common::device();
    let err = device
        .create_event(EventOptions::timing().with_interprocess(true))
        .unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                name: "options",
                ..
            }
        ),
        "{err}"
    );
    let plain = device.create_event(EventOptions::default()).unwrap();
    assert!(matches!(
        plain.ipc_handle(),
        Err(Error::InvalidArgument { name: "self", .. })
    ));
    let event = ipc_event(device);
    assert!(event.options().interprocess);
    let handle = event.ipc_handle().unwrap();
    assert_eq!(handle.gpu(), device.uuid().unwrap());
    // Recorded and synchronised in this process, as any event.
    let stream = stream(device);
    stream.record(&event).unwrap();
    event.sync().unwrap();
    assert!(event.is_done().unwrap());
    // A handle that names another GPU than the device asked for.
    let mut bytes = handle.to_bytes();
    bytes[8..24].copy_from_slice(&[0xee; 16]);
    let elsewhere = IpcEventHandle::from_bytes(&bytes).unwrap();
    // SAFETY: refused before the driver opens anything.
    let err = unsafe { Event::open_ipc(&elsewhere, device) }.unwrap_err();
    assert!(
        matches!(err, Error::InvalidArgument { name: "device", .. }),
        "{err}"
    );
}

/// What the driver does when a process imports its own pool and buffer is not documented: a
/// refusal, or an import of its own. Either way the exporter's buffer keeps its memory and
/// the pool works on; an import at the exporter's own address is refused (its release would
/// free the exporter's memory). In a process of its own, should the driver do worse.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_process_importing_its_own_pool_never_frees_the_exporters_memory() {
    common::alone(
        module_path!(),
        "a_process_importing_its_own_pool_never_frees_the_exporters_memory",
        || {
            let device = common::device();
            let stream = stream(device);
            let pool = shareable_pool(device);
            let mut buffer = pool.allocate(MIB, &stream).unwrap();
            buffer.fill(5u8, &stream).unwrap();
            stream.sync().unwrap();
            let descriptor = pool.export_buffer(&buffer).unwrap();
            match ImportedPool::import(device, pool.share().unwrap()) {
                Ok(imported) => {
                    assert_ne!(imported.as_raw(), pool.as_raw(), "an import of its own");
                    match imported.import_buffer(&descriptor, &stream) {
                        Ok(import) => {
                            assert_ne!(
                                import.ptr(),
                                buffer.ptr(),
                                "an import at the exporter's address was handed out"
                            );
                            assert!(import
                                .to_vec::<u8>(&stream)
                                .unwrap()
                                .iter()
                                .all(|&b| b == 5));
                            drop(import);
                            stream.sync().unwrap();
                            println!("the driver imported this process's own buffer");
                        }
                        Err(e) => println!("the import of its own buffer was refused: {e}"),
                    }
                }
                Err(e) => println!("the import of its own pool was refused: {e}"),
            }
            // The exporter's buffer kept its memory; the pool allocates and frees on.
            assert!(buffer
                .to_vec::<u8>(&stream)
                .unwrap()
                .iter()
                .all(|&b| b == 5));
            let mut other = pool.allocate(MIB, &stream).unwrap();
            other.fill(7u8, &stream).unwrap();
            buffer.fill(6u8, &stream).unwrap();
            assert!(buffer
                .to_vec::<u8>(&stream)
                .unwrap()
                .iter()
                .all(|&b| b == 6));
            assert!(other.to_vec::<u8>(&stream).unwrap().iter().all(|&b| b == 7));
            drop((buffer, other));
            stream.sync().unwrap();
            assert_eq!(pool.usage().unwrap().used_current, 0);
        },
    );
}

/// The harness the GPU tests above use, without a GPU: two children, each told apart by its
/// role, exchange messages with the parent, and a pool handle (here of a plain file, built
/// from its parts) crosses to each with its file descriptor. Each child writes more output
/// than a pipe holds before it answers: the parent reads it meanwhile (else the child would
/// block on its output while the parent waits for its answer).
#[test]
fn the_parent_and_its_children_talk_and_pass_file_descriptors() {
    processes(
        "the_parent_and_its_children_talk_and_pass_file_descriptors",
        &["left", "right"],
        |children| {
            let mut file = tempfile::tempfile().unwrap();
            file.write_all(b"shared").unwrap();
            let mut record = tempfile::tempfile().unwrap();
            record.write_all(b"record").unwrap();
            let info = {
                // Bytes of a shared pool's form (a pinned pool of NUMA node 2).
                let mut info = [0u8; SharedPoolHandle::INFO_BYTES];
                info[..5].copy_from_slice(b"CCPL\x01");
                info[24] = 2;
                info[44] = 2;
                info
            };
            let handle = SharedPoolHandle::from_parts(file.into(), record.into(), &info).unwrap();
            for (i, name) in ["left", "right"].iter().enumerate() {
                children.channels[i].say(name);
                children.channels[i].send_pool(&handle);
            }
            children.expect(0, "left: shared on node 2");
            children.expect(1, "right: shared on node 2");
        },
        |role, mut channel| {
            use std::os::unix::fs::FileExt;
            channel.expect(role);
            let handle = channel.recv_pool();
            let node = handle.numa_node().unwrap();
            let parts = handle.into_parts();
            // Read at an offset: both children's descriptors share one file position. Each
            // descriptor arrives as its own (catches the two swapped or one sent twice).
            let mut text = [0u8; 6];
            std::fs::File::from(parts.pool)
                .read_exact_at(&mut text, 0)
                .unwrap();
            let mut record = [0u8; 6];
            std::fs::File::from(parts.liveness)
                .read_exact_at(&mut record, 0)
                .unwrap();
            assert_eq!(&record, b"record");
            let text = String::from_utf8_lossy(&text);
            let line = "x".repeat(1023);
            for _ in 0..256 {
                println!("{line}");
            }
            channel.say(&format!("{role}: {text} on node {node}"));
        },
    );
}

/// The calls behind sharing a pool, against the stand-in: the pool is made with POSIX handles,
/// imports map the exporter's buffer at the import's own address, a release frees only that,
/// a second import is refused before the driver, the size is checked, and every refusal here
/// comes before the driver.
/// A buffer of a pool that was never shared yet: the pool is exported once first (the 580
/// driver refuses `cuMemPoolExportPointer` before, as the stand-in does), its descriptor
/// closed, and not again for the next buffer or after `share`.
#[test]
fn a_buffer_exported_before_its_pool_was_shared_exports_the_pool_first_once() {
    standin::run(
        module_path!(),
        "a_buffer_exported_before_its_pool_was_shared_exports_the_pool_first_once",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let pool = shareable_pool(device);
            let a = pool.allocate(4096, &stream).unwrap();
            let b = pool.allocate(4096, &stream).unwrap();
            let fds = open_fds();
            standin::clear_log();
            // Without the pool's export first, the stand-in refuses this call.
            pool.export_buffer(&a).unwrap();
            let log = standin::log();
            let pool_at = log.find("cuMemPoolExportToShareableHandle");
            let pointer_at = log.find("cuMemPoolExportPointer");
            assert!(
                matches!((pool_at, pointer_at), (Some(p), Some(q)) if p < q),
                "the pool is exported before its buffer: {log}"
            );
            // The pool's descriptor was closed; the pool's record of its exported buffers
            // (one file) stays open as long as the pool.
            assert_eq!(open_fds(), fds + 1, "the pool's descriptor was closed");
            // Once is enough: neither the next buffer nor a share export it a second time
            // for the buffer's sake.
            pool.export_buffer(&b).unwrap();
            let _handle = pool.share().unwrap();
            pool.export_buffer(&a).unwrap();
            assert_eq!(
                standin::calls("cuMemPoolExportToShareableHandle").len(),
                2,
                "{}",
                standin::log()
            );
            assert_eq!(standin::calls("cuMemPoolExportPointer").len(), 3);
            drop((a, b, _handle));
            stream.sync().unwrap();
            drop(pool);
            assert_eq!(open_fds(), fds, "the pool's record outlived the pool");
        },
    );
}

#[test]
fn sharing_a_pool_makes_the_calls_it_names() {
    standin::run(
        module_path!(),
        "sharing_a_pool_makes_the_calls_it_names",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            standin::clear_log();
            let pool = shareable_pool(device);
            let created = standin::calls("cuMemPoolCreate");
            assert_eq!(created.len(), 1, "{}", standin::log());
            assert!(created[0].contains("handles=1 location=1:0"), "{created:?}");
            let buffer = pool.allocate(4096, &stream).unwrap();
            let exporter_ptr = buffer.ptr();
            let handle = pool.share().unwrap();
            assert_eq!(standin::calls("cuMemPoolExportToShareableHandle").len(), 1);
            // The stand-in's descriptor is not close-on-exec; the handle's is, so that a
            // program this process starts does not inherit the pool.
            assert!(
                common::close_on_exec(handle.as_fd()),
                "the shared pool's descriptor"
            );
            let descriptor = pool.export_buffer(&buffer).unwrap();
            assert_eq!(descriptor.size(), 4096);

            // Two devices of two GPUs: the pool imports through its own only.
            let other = Device::new(1).unwrap();
            let err = ImportedPool::import(other, handle.try_clone().unwrap()).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { name: "device", .. }),
                "{err}"
            );
            assert!(standin::calls("cuMemPoolImportFromShareableHandle").is_empty());

            let imported = ImportedPool::import(device, handle.try_clone().unwrap()).unwrap();
            // The import's name in the log (P<n>), for its destroy below.
            let import_name = standin::calls("cuMemPoolImportFromShareableHandle")[0]
                .split_whitespace()
                .nth(1)
                .unwrap()
                .to_owned();
            // Imported again while alive: the same import, no second driver import.
            let again = ImportedPool::import(device, handle).unwrap();
            assert!(Arc::ptr_eq(&imported, &again));
            assert_eq!(
                standin::calls("cuMemPoolImportFromShareableHandle").len(),
                1
            );
            drop(again);

            standin::clear_log();
            let first = imported.import_buffer(&descriptor, &stream).unwrap();
            let import_ptr = first.ptr();
            assert_eq!(import_ptr.0, exporter_ptr.0 + (1 << 32));
            assert_eq!(standin::calls("cuPointerGetAttributes").len(), 1);
            // A second import at once: refused, without asking the driver.
            standin::clear_log();
            let err = imported.import_buffer(&descriptor, &stream).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidArgument {
                        name: "descriptor",
                        ..
                    }
                ),
                "{err}"
            );
            assert_eq!(standin::log(), "");
            // The release frees the import's address only.
            drop(first);
            let frees = standin::calls("cuMemFreeAsync");
            assert_eq!(frees.len(), 1);
            assert!(
                frees[0].contains(&format!("{:#x}", import_ptr.0)),
                "{frees:?}"
            );
            // Imported again after the release: the release is waited for first.
            standin::clear_log();
            let second = imported.import_buffer(&descriptor, &stream).unwrap();
            let log = standin::log();
            let synced = log
                .find("cuStreamSynchronize")
                .expect("the release waited for");
            let mapped = log.find("cuMemPoolImportPointer").expect("an import");
            assert!(synced < mapped, "{log}");
            assert_eq!(imported.imported_buffers(), 1);
            // An imported pool allocates nothing.
            standin::clear_log();
            let err = imported.allocate(64, &stream).unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { name: "self", .. }),
                "{err}"
            );
            assert_eq!(standin::log(), "");
            // The exporter's pool is destroyed only after its buffer; the import after its.
            drop(imported);
            assert!(
                standin::calls("cuMemPoolDestroy").is_empty(),
                "{}",
                standin::log()
            );
            drop(second);
            assert_eq!(
                standin::calls("cuMemPoolDestroy"),
                [format!("cuMemPoolDestroy {import_name}")],
                "the import is destroyed, not the exporter's pool"
            );
            drop(buffer);
            drop(pool);
            assert_eq!(standin::calls("cuMemPoolDestroy").len(), 2);
        },
    );
}

/// What the driver says of an imported buffer's memory must be what the pool's handle named
/// (its bytes came from another process): device memory of the device imported through, or
/// host memory for a pinned pool. Otherwise the import is refused, and released.
#[test]
fn an_import_of_other_memory_than_the_pool_handle_named_is_refused() {
    const TEST: &str = "an_import_of_other_memory_than_the_pool_handle_named_is_refused";
    type Exported = (
        Arc<dyn MemoryResource>,
        Buffer,
        SharedPoolHandle,
        BufferDescriptor,
    );
    /// Imports a buffer of `pool` through device 0, expecting `refusal` (or success).
    fn import_one(pool: &dyn Fn() -> Exported, refusal: Option<&str>) {
        let device = Device::new(0).unwrap();
        let stream = device.create_stream(StreamOptions::default()).unwrap();
        // The exporter's pool and buffer live while the import is tried.
        let (_pool, _buffer, handle, descriptor) = pool();
        let imported = ImportedPool::import(device, handle).unwrap();
        standin::clear_log();
        match (imported.import_buffer(&descriptor, &stream), refusal) {
            (Ok(buffer), None) => drop(buffer),
            (Err(err), Some(found)) => {
                assert!(
                    matches!(&err, Error::InvalidArgument { name: "self", reason } if reason.contains(found)),
                    "{err}"
                );
                assert_eq!(standin::calls("cuMemFreeAsync").len(), 1, "released");
                assert_eq!(imported.imported_buffers(), 0);
            }
            (got, _) => panic!("{got:?}, where {refusal:?} was expected"),
        }
    }
    let device_pool = || {
        let device = Device::new(0).unwrap();
        let stream = device.create_stream(StreamOptions::default()).unwrap();
        let pool = shareable_pool(device);
        let buffer = pool.allocate(4096, &stream).unwrap();
        let descriptor = pool.export_buffer(&buffer).unwrap();
        let handle = pool.share().unwrap();
        (pool as Arc<dyn MemoryResource>, buffer, handle, descriptor)
    };
    let pinned_pool = || {
        let device = Device::new(0).unwrap();
        let stream = device.create_stream(StreamOptions::default()).unwrap();
        let pool = PinnedMemoryPool::new(
            device,
            PinnedMemoryPoolOptions::default()
                .with_numa_node(0)
                .with_shareable(true),
        )
        .unwrap();
        let buffer = pool.allocate(4096, &stream).unwrap();
        let descriptor = pool.export_buffer(&buffer).unwrap();
        let handle = pool.share().unwrap();
        (pool as Arc<dyn MemoryResource>, buffer, handle, descriptor)
    };
    // Device memory of another device than the one the handle named.
    standin::run(
        module_path!(),
        TEST,
        &[],
        &[("STANDIN_POINTER_DEVICE", "1")],
        || {
            import_one(&device_pool, Some("device memory of device 1"));
        },
    );
    // Host memory where the handle named device memory.
    standin::run(
        module_path!(),
        TEST,
        &[],
        &[("STANDIN_POINTER_TYPE", "1")],
        || {
            import_one(&device_pool, Some("memory of type 1"));
            import_one(&pinned_pool, None);
        },
    );
    // Device memory where the handle named pinned host memory.
    standin::run(
        module_path!(),
        TEST,
        &[],
        &[("STANDIN_POINTER_TYPE", "2")],
        || {
            import_one(&pinned_pool, Some("device memory of device 0"));
            import_one(&device_pool, None);
        },
    );
}

/// A driver that answers a process's import of its own pool's buffer with the buffer's own
/// allocation: the import is refused and nothing is freed (a release would free the
/// exporter's memory under its buffer).
#[test]
fn importing_its_own_allocation_is_refused_and_frees_nothing() {
    standin::run(
        module_path!(),
        "importing_its_own_allocation_is_refused_and_frees_nothing",
        &[],
        &[("STANDIN_POINTER_POOL_EXPORTED", "1")],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let pool = shareable_pool(device);
            let buffer = pool.allocate(4096, &stream).unwrap();
            let descriptor = pool.export_buffer(&buffer).unwrap();
            let imported = ImportedPool::import(device, pool.share().unwrap()).unwrap();
            standin::clear_log();
            let err = imported.import_buffer(&descriptor, &stream).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "descriptor", reason } if reason.contains("this process made")),
                "{err}"
            );
            assert!(
                standin::calls("cuMemFreeAsync").is_empty(),
                "{}",
                standin::log()
            );
            assert_eq!(imported.imported_buffers(), 0);
            // The exporter's buffer is freed once, by its own drop.
            let ptr = buffer.ptr();
            drop(buffer);
            let frees = standin::calls("cuMemFreeAsync");
            assert_eq!(frees.len(), 1);
            assert!(frees[0].contains(&format!("{:#x}", ptr.0)), "{frees:?}");
        },
    );
}

/// An imported pool's memory is accessible from the device it was imported through, and from
/// no other: a pinned pool's import grants access to that device only.
#[test]
fn an_imported_pool_is_accessible_from_its_own_device_only() {
    standin::run(
        module_path!(),
        "an_imported_pool_is_accessible_from_its_own_device_only",
        &[],
        &[],
        || {
            let (d0, d1) = (Device::new(0).unwrap(), Device::new(1).unwrap());
            let pinned = PinnedMemoryPool::new(
                d0,
                PinnedMemoryPoolOptions::default()
                    .with_numa_node(0)
                    .with_shareable(true),
            )
            .unwrap();
            standin::clear_log();
            let imported = ImportedPool::import(d1, pinned.share().unwrap()).unwrap();
            assert!(imported.is_host_memory());
            let access = standin::calls("cuMemPoolSetAccess");
            assert_eq!(access.len(), 1, "{access:?}");
            assert!(access[0].ends_with("location=1:1 flags=3"), "{access:?}");
            assert_eq!(imported.device(), d1);
            assert_eq!(MemoryResource::device(&*imported), None);
            assert!(imported.is_accessible_from(d1).unwrap());
            assert!(
                !imported.is_accessible_from(d0).unwrap(),
                "device 0 was granted no access to the import"
            );
            let device_pool = shareable_pool(d0);
            let imported = ImportedPool::import(d0, device_pool.share().unwrap()).unwrap();
            assert!(imported.is_accessible_from(d0).unwrap());
            assert!(!imported.is_accessible_from(d1).unwrap());
        },
    );
}

/// A driver that answers this process's import of its own pool with that pool's handle: the
/// import is refused and destroys nothing, so the pool is destroyed once, by its owner.
#[test]
fn importing_its_own_pool_as_the_same_handle_is_refused_and_destroys_nothing() {
    standin::run(
        module_path!(),
        "importing_its_own_pool_as_the_same_handle_is_refused_and_destroys_nothing",
        &[],
        &[("STANDIN_IMPORT_OWN", "1")],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let pinned = PinnedMemoryPool::new(
                device,
                PinnedMemoryPoolOptions::default()
                    .with_numa_node(0)
                    .with_shareable(true),
            )
            .unwrap();
            let pool = shareable_pool(device);
            for share in [pool.share().unwrap(), pinned.share().unwrap()] {
                standin::clear_log();
                let err = ImportedPool::import(device, share).unwrap_err();
                assert!(
                    matches!(&err, Error::InvalidArgument { name: "handle", reason } if reason.contains("made")),
                    "{err}"
                );
                assert_eq!(
                    standin::calls("cuMemPoolImportFromShareableHandle").len(),
                    1
                );
                assert!(
                    standin::calls("cuMemPoolDestroy").is_empty(),
                    "{}",
                    standin::log()
                );
            }
            // Both pools work on, and each is destroyed once, by its own drop.
            drop(pool.allocate(64, &stream).unwrap());
            drop(pinned.allocate(64, &stream).unwrap());
            standin::clear_log();
            drop((pool, pinned));
            assert_eq!(standin::calls("cuMemPoolDestroy").len(), 2);
        },
    );
}

/// The 580 driver answers a pinned host import's range with its size and a start of 0: the
/// size is still checked, from the import's own address.
#[test]
fn a_range_without_its_start_still_bounds_the_import() {
    standin::run(
        module_path!(),
        "a_range_without_its_start_still_bounds_the_import",
        &[],
        &[
            ("STANDIN_RANGE_SIZE", "8192"),
            ("STANDIN_RANGE_START_ZERO", "1"),
        ],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let pool = shareable_pool(device);
            let buffer = pool.allocate(8192, &stream).unwrap();
            let imported = ImportedPool::import(device, pool.share().unwrap()).unwrap();
            let descriptor = pool.export_buffer(&buffer).unwrap();
            let mut bytes = descriptor.to_bytes();
            bytes[24..32].copy_from_slice(&8193u64.to_le_bytes());
            let oversized = BufferDescriptor::from_bytes(&bytes).unwrap();
            let err = imported.import_buffer(&oversized, &stream).unwrap_err();
            assert!(err.to_string().contains("exceeds"), "{err}");
            // The whole allocation fits (a start of 0 taken as the range's would refuse it).
            let fits = imported.import_buffer(&descriptor, &stream).unwrap();
            assert_eq!(fits.size(), 8192);
            drop(fits);
            stream.sync().unwrap();
        },
    );
}

#[test]
fn a_descriptor_the_driver_refuses_or_too_large_is_a_clear_error() {
    standin::run(
        module_path!(),
        "a_descriptor_the_driver_refuses_or_too_large_is_a_clear_error",
        &[],
        &[("STANDIN_RANGE_SIZE", "8192")],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let pool = shareable_pool(device);
            let other = shareable_pool(device);
            let buffer = pool.allocate(4096, &stream).unwrap();
            let imported = ImportedPool::import(device, pool.share().unwrap()).unwrap();
            let descriptor = pool.export_buffer(&buffer).unwrap();
            // Of another pool: refused before the driver.
            let foreign = other.allocate(4096, &stream).unwrap();
            let foreign = other.export_buffer(&foreign).unwrap();
            standin::clear_log();
            let err = imported.import_buffer(&foreign, &stream).unwrap_err();
            assert!(err.to_string().contains("another pool"), "{err}");
            assert_eq!(standin::log(), "");
            // The driver's refusal (the stand-in refuses export data whose byte 40 is not
            // 0x5a, as the driver refuses a freed buffer's), named.
            let mut bytes = descriptor.to_bytes();
            bytes[40] = 0;
            let stale = BufferDescriptor::from_bytes(&bytes).unwrap();
            let err = imported.import_buffer(&stale, &stream).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "descriptor", reason } if reason.contains("freed") && reason.contains("CUDA_ERROR_INVALID_VALUE")),
                "{err}"
            );
            // Larger than the allocation (8 KiB here): refused, and the import released.
            let mut bytes = descriptor.to_bytes();
            bytes[24..32].copy_from_slice(&8193u64.to_le_bytes());
            let oversized = BufferDescriptor::from_bytes(&bytes).unwrap();
            standin::clear_log();
            let err = imported.import_buffer(&oversized, &stream).unwrap_err();
            assert!(err.to_string().contains("exceeds"), "{err}");
            assert_eq!(
                standin::calls("cuMemFreeAsync").len(),
                1,
                "{}",
                standin::log()
            );
            assert_eq!(imported.imported_buffers(), 0);
            // The right size imports (after the refused import's release).
            let fits = imported.import_buffer(&descriptor, &stream).unwrap();
            assert_eq!(fits.size(), 4096);
            // A zero size is refused before the driver.
            let mut bytes = descriptor.to_bytes();
            bytes[24..32].copy_from_slice(&0u64.to_le_bytes());
            let empty = BufferDescriptor::from_bytes(&bytes).unwrap();
            assert!(matches!(
                imported.import_buffer(&empty, &stream),
                Err(Error::InvalidArgument { name: "size", .. })
            ));
            // A stream of another device.
            let elsewhere = Device::new(1)
                .unwrap()
                .create_stream(StreamOptions::default())
                .unwrap();
            drop(fits);
            assert!(matches!(
                imported.import_buffer(&descriptor, &elsewhere),
                Err(Error::InvalidArgument { name: "stream", .. })
            ));
        },
    );
}

/// The driver imports a buffer its exporter freed (seen on the 580 driver, even after a
/// trim): the exporter's record, which came with the pool's handle, refuses it before the
/// driver, for good, while the pool's other buffers import.
#[test]
fn a_buffer_its_exporter_freed_is_refused_before_the_driver() {
    standin::run(
        module_path!(),
        "a_buffer_its_exporter_freed_is_refused_before_the_driver",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let pool = shareable_pool(device);
            let imported = ImportedPool::import(device, pool.share().unwrap()).unwrap();
            let first = pool.allocate(4096, &stream).unwrap();
            let descriptor = pool.export_buffer(&first).unwrap();
            // Exported twice, the same descriptor (catches a second record per export).
            assert_eq!(pool.export_buffer(&first).unwrap(), descriptor);
            let second = pool.allocate(4096, &stream).unwrap();
            let kept = pool.export_buffer(&second).unwrap();
            // Live: imports (catches a record that refuses everything).
            drop(imported.import_buffer(&descriptor, &stream).unwrap());
            stream.sync().unwrap();
            drop(first);
            stream.sync().unwrap();
            standin::clear_log();
            let err = imported.import_buffer(&descriptor, &stream).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument { name: "descriptor", reason } if reason.contains("freed")),
                "{err}"
            );
            assert!(
                standin::calls("cuMemPoolImportPointer").is_empty(),
                "{}",
                standin::log()
            );
            // The freed buffer's record goes to the next export, which imports; the freed
            // one's descriptor stays refused (catches a reused record that revives it).
            let third = pool.allocate(4096, &stream).unwrap();
            let third_descriptor = pool.export_buffer(&third).unwrap();
            assert!(imported.import_buffer(&descriptor, &stream).is_err());
            let a = imported.import_buffer(&third_descriptor, &stream).unwrap();
            let b = imported.import_buffer(&kept, &stream).unwrap();
            drop((a, b, second, third));
            stream.sync().unwrap();
            // Closed rather than dropped: the same.
            let fourth = pool.allocate(4096, &stream).unwrap();
            let fourth_descriptor = pool.export_buffer(&fourth).unwrap();
            fourth.close(Some(&stream)).unwrap();
            assert!(imported.import_buffer(&fourth_descriptor, &stream).is_err());
        },
    );
}

#[test]
fn interprocess_events_are_exported_opened_once_and_never_recycled() {
    standin::run(
        module_path!(),
        "interprocess_events_are_exported_opened_once_and_never_recycled",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            standin::clear_log();
            let event = ipc_event(device);
            let created = standin::calls("cuEventCreate");
            assert!(created[0].ends_with("flags=6"), "{created:?}");
            drop(event);
            assert_eq!(
                standin::calls("cuEventDestroy").len(),
                1,
                "destroyed, not kept"
            );
            // The next is made afresh (a recycled one would make no call).
            standin::clear_log();
            let event = ipc_event(device);
            assert_eq!(standin::calls("cuEventCreate").len(), 1);
            let handle = event.ipc_handle().unwrap();
            assert_eq!(standin::calls("cuIpcGetEventHandle").len(), 1);
            // SAFETY: the stand-in's events live as long as the process.
            let opened = unsafe { Event::open_ipc(&handle, device) }.unwrap();
            assert_eq!(standin::calls("cuIpcOpenEventHandle").len(), 1);
            assert!(opened.options().interprocess && !opened.options().timing);
            // SAFETY: as above; refused before the driver.
            let err = unsafe { Event::open_ipc(&handle, device) }.unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { name: "handle", .. }),
                "{err}"
            );
            assert_eq!(standin::calls("cuIpcOpenEventHandle").len(), 1);
            // Another device is another GPU.
            // SAFETY: refused before the driver.
            let err = unsafe { Event::open_ipc(&handle, Device::new(1).unwrap()) }.unwrap_err();
            assert!(
                matches!(err, Error::InvalidArgument { name: "device", .. }),
                "{err}"
            );
            standin::clear_log();
            drop(opened);
            assert_eq!(standin::calls("cuEventDestroy").len(), 1);
            // SAFETY: as above.
            let reopened = unsafe { Event::open_ipc(&handle, device) }.unwrap();
            drop(reopened);
            // Timing and an interprocess event do not go together; a plain event exports
            // nothing.
            standin::clear_log();
            let err = device
                .create_event(EventOptions::timing().with_interprocess(true))
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::InvalidArgument {
                        name: "options",
                        ..
                    }
                ),
                "{err}"
            );
            let plain = device.create_event(EventOptions::default()).unwrap();
            assert!(plain.ipc_handle().is_err());
            assert!(standin::calls("cuIpc").is_empty());
        },
    );
}

#[test]
fn legacy_ipc_opens_and_closes_what_it_names() {
    standin::run(
        module_path!(),
        "legacy_ipc_opens_and_closes_what_it_names",
        &[],
        &[],
        || {
            let device = Device::new(0).unwrap();
            let stream = device.create_stream(StreamOptions::default()).unwrap();
            let memory = SyncMemoryResource::new(device).unwrap();
            let buffer = memory.allocate(4096, &stream).unwrap();
            // SAFETY: the stand-in frees nothing.
            let handle = unsafe { memory.export_buffer(&buffer) }.unwrap();
            assert_eq!(standin::calls("cuIpcGetMemHandle").len(), 1);
            let bytes = handle.to_bytes();
            let back = IpcMemHandle::from_bytes(&bytes).unwrap();
            // A buffer of another resource is not this resource's to export.
            let pool_buffer = device
                .memory_resource()
                .unwrap()
                .allocate(4096, &stream)
                .unwrap();
            // SAFETY: refused before the driver.
            assert!(unsafe { memory.export_buffer(&pool_buffer) }.is_err());
            // Opened on device 1 (another GPU): refused before the driver.
            let elsewhere = Device::new(1)
                .unwrap()
                .create_stream(StreamOptions::default())
                .unwrap();
            // SAFETY: refused before the driver.
            let refused = unsafe { back.open(&elsewhere) };
            assert!(matches!(
                refused,
                Err(Error::InvalidArgument { name: "stream", .. })
            ));
            assert!(standin::calls("cuIpcOpenMemHandle").is_empty());
            // SAFETY: the stand-in frees nothing.
            let opened = unsafe { back.open(&stream) }.unwrap();
            let open = standin::calls("cuIpcOpenMemHandle");
            assert!(open[0].ends_with("flags=1"), "{open:?}");
            assert_eq!(opened.ptr().0, buffer.ptr().0 + (2 << 32));
            assert_eq!(opened.size(), 4096);
            assert!(opened.memory_resource().allocate(1, &stream).is_err());
            standin::clear_log();
            drop(opened);
            let log = standin::log();
            let synced = log
                .find("cuStreamSynchronize")
                .expect("the close waits for the stream");
            let closed = log.find("cuIpcCloseMemHandle").expect("a close");
            assert!(synced < closed, "{log}");
            assert!(standin::calls("cuMemFree ").is_empty(), "{log}");
        },
    );
}
