//! The TCP bootstrap of a unique id (`nccl::TcpBootstrap`, `nccl::UniqueIdServer`) over
//! loopback, on the CPU: no GPU and no NCCL (the ids are made-up bytes). Every server binds port
//! 0 (a free one); the tests that need a port nobody listens on yet take a free one and let it
//! go.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::common;
use cuda_core::nccl::{TcpBootstrap, UniqueId, UniqueIdServer};
use cuda_core::Error;

/// An id of made-up bytes, all different, so that a shifted or cut copy differs.
fn made_up_id() -> UniqueId {
    UniqueId::from(std::array::from_fn(|i| {
        (i as u8).wrapping_mul(7).wrapping_add(3)
    }))
}

/// A port that nothing listens on (taken free, then let go).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Rank 0 serving `id` on a thread, for a job of `world_size`: its port, and its outcome.
fn serve(world_size: usize, id: &UniqueId, timeout: Duration) -> (u16, RankZero) {
    let server = UniqueIdServer::bind("127.0.0.1:0", world_size).unwrap();
    let port = server.local_addr().port();
    (port, RankZero::start(server, id, timeout))
}

/// Rank 0 serving on a thread.
struct RankZero(mpsc::Receiver<cuda_core::Result<()>>);

impl RankZero {
    fn start(server: UniqueIdServer, id: &UniqueId, timeout: Duration) -> RankZero {
        let (id, (send, receive)) = (id.clone(), mpsc::channel());
        thread::spawn(move || send.send(server.serve(&id, timeout)));
        RankZero(receive)
    }

    /// What `serve` returned, which it must within 20 s: a test of a server that never stops
    /// fails here rather than hang.
    fn outcome(self) -> cuda_core::Result<()> {
        self.0
            .recv_timeout(Duration::from_secs(20))
            .expect("rank 0 stops serving within 20 s")
    }
}

/// Rank `rank` of `world_size` fetching from rank 0 on `port` of loopback.
fn fetcher(port: u16, rank: usize, world_size: usize, timeout: Duration) -> TcpBootstrap {
    TcpBootstrap::new("127.0.0.1", port, rank, world_size)
        .unwrap()
        .with_timeout(timeout)
}

/// The message of an `Error::Socket`, with its operation.
fn socket_message(result: cuda_core::Result<impl std::fmt::Debug>) -> String {
    match result {
        Err(e @ Error::Socket { .. }) => e.to_string(),
        other => panic!("expected a socket error, got {other:?}"),
    }
}

#[test]
fn three_ranks_fetch_the_bytes_rank_0_serves_and_rank_0_then_stops() {
    let id = made_up_id();
    let start = Instant::now();
    let (port, rank_0) = serve(4, &id, Duration::from_secs(30));
    let ranks: Vec<_> = (1..4)
        .map(|rank| {
            let bootstrap = fetcher(port, rank, 4, Duration::from_secs(30));
            thread::spawn(move || bootstrap.fetch())
        })
        .collect();
    for (rank, handle) in (1..).zip(ranks) {
        // Catches: bytes cut, shifted or of another id (a rank then joins another communicator).
        assert_eq!(handle.join().unwrap().unwrap(), id, "rank {rank}");
    }
    // Catches: rank 0 stopping after its first peer (the others would time out above), or
    // waiting on past the last one (until its 30 s timeout, past `outcome`'s 20 s).
    rank_0.outcome().unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    // Catches: rank 0 still listening once every peer has the id.
    assert!(TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn a_rank_started_before_rank_0_tries_again_until_rank_0_listens() {
    let id = made_up_id();
    let port = free_port();
    let early = fetcher(port, 1, 2, Duration::from_secs(30));
    let rank_1 = thread::spawn(move || early.fetch());
    // Rank 1 finds nothing listening for a while (its connections are refused).
    thread::sleep(Duration::from_millis(500));
    let server = UniqueIdServer::bind(("127.0.0.1", port), 2).unwrap();
    let rank_0 = RankZero::start(server, &id, Duration::from_secs(30));
    // Catches: a fetch that gives up on its first refused connection.
    assert_eq!(rank_1.join().unwrap().unwrap(), id);
    rank_0.outcome().unwrap();
}

#[test]
fn a_rank_without_rank_0_fails_within_its_timeout_naming_the_address() {
    let port = free_port();
    let timeout = Duration::from_millis(800);
    let start = Instant::now();
    let message = socket_message(fetcher(port, 1, 2, timeout).fetch());
    let waited = start.elapsed();
    // Catches: giving up at the first refused connection instead of waiting for rank 0.
    assert!(waited >= timeout, "gave up after {waited:?}");
    // Catches: no deadline (a hang), or retries that overrun it by far.
    assert!(waited < timeout + Duration::from_secs(5), "{waited:?}");
    // Catches: an error that does not say who was absent, where, and for how long.
    let expected = format!("rank 0 absent at 127.0.0.1:{port} after 800ms");
    assert!(message.contains(&expected), "{message}");
}

#[test]
fn rank_0_without_all_its_ranks_fails_within_its_timeout_naming_them() {
    let id = made_up_id();
    let timeout = Duration::from_millis(800);
    let start = Instant::now();
    let (port, rank_0) = serve(3, &id, timeout);
    assert_eq!(
        fetcher(port, 2, 3, Duration::from_secs(10))
            .fetch()
            .unwrap(),
        id
    );
    let message = socket_message(rank_0.outcome());
    // Catches: rank 0 waiting forever for a rank that never comes.
    assert!(start.elapsed() < timeout + Duration::from_secs(5));
    // Catches: an error that does not name the rank that did not come (nor only it).
    assert!(
        message.contains("1 of the 2 other ranks had not come: rank(s) 1"),
        "{message}"
    );
}

#[test]
fn a_stray_connection_gets_nothing_and_is_not_counted_as_a_rank() {
    let id = made_up_id();
    let (port, rank_0) = serve(2, &id, Duration::from_secs(30));
    // A health check or a scanner: it writes something else, then waits for an answer.
    let mut stray = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stray
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    stray.shutdown(std::net::Shutdown::Write).unwrap();
    stray
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = Vec::new();
    let _ = stray.read_to_end(&mut answer);
    // Catches: the id handed to any connection, whatever it asked.
    assert!(answer.is_empty(), "the stray connection got {answer:?}");
    // Catches: the stray connection counted as rank 1 (rank 0 would have stopped, and rank 1
    // found nobody), or rank 0 failing on it instead of serving on.
    assert_eq!(
        fetcher(port, 1, 2, Duration::from_secs(10))
            .fetch()
            .unwrap(),
        id
    );
    rank_0.outcome().unwrap();
}

#[test]
fn rank_0_refuses_a_rank_of_another_job_or_version_with_the_reason() {
    let id = made_up_id();
    let (port, rank_0) = serve(2, &id, Duration::from_secs(30));
    let start = Instant::now();
    // Catches: a rank of a job of another size given the id (NCCL would then wait forever),
    // and a refusal that the rank sits out until its timeout instead of failing at once.
    let message = socket_message(fetcher(port, 1, 3, Duration::from_secs(20)).fetch());
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        message.contains(&format!("rank 0 at 127.0.0.1:{port} refused rank 1"))
            && message.contains("WORLD_SIZE is 3, and rank 0's is 2"),
        "{message}"
    );

    // A request of this protocol's magic but another version: refused with a reply that says
    // so, and no id. Catches: the version read and ignored.
    let mut other = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut request = b"cuNCCLrq".to_vec();
    for word in [7u32, 1, 2] {
        request.extend_from_slice(&word.to_le_bytes());
    }
    other.write_all(&request).unwrap();
    other
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut reply = Vec::new();
    let _ = other.read_to_end(&mut reply);
    assert_eq!(&reply[..8], b"cuNCCLid");
    assert_eq!(
        reply[12..16],
        1u32.to_le_bytes(),
        "not a refusal: {reply:?}"
    );
    let reason = String::from_utf8_lossy(&reply[20..]);
    assert!(reason.contains("protocol version is 7"), "{reason}");

    // Neither refusal counted: the real rank 1 still gets the id, and then rank 0 stops.
    assert_eq!(
        fetcher(port, 1, 2, Duration::from_secs(10))
            .fetch()
            .unwrap(),
        id
    );
    rank_0.outcome().unwrap();
}

#[test]
fn a_rank_that_reaches_another_service_fails_at_once_and_takes_no_id() {
    // Some other server on the port: it answers every connection with its own bytes.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let other = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        // (the request read first, so that closing with it unread resets no connection)
        let _ = stream.read_exact(&mut [0u8; 20]);
        let mut reply = b"HTTP/1.1 400 Bad Request\r\n\r\n".to_vec();
        reply.resize(400, b'x');
        let _ = stream.write_all(&reply);
    });
    let start = Instant::now();
    let message = socket_message(fetcher(port, 1, 2, Duration::from_secs(20)).fetch());
    // Catches: the first 128 bytes of any reply taken as the id, or a wrong reply retried
    // until the timeout instead of named at once.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
    assert!(
        message.contains(&format!("127.0.0.1:{port} answered, but not as rank 0's"))
            && message.contains("HTTP/1.1"),
        "{message}"
    );
    other.join().unwrap();
}

#[test]
fn rank_0s_port_held_by_another_process_is_named_with_the_cure() {
    let holder = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = holder.local_addr().unwrap().port();
    let e = UniqueIdServer::bind(("127.0.0.1", port), 2).unwrap_err();
    // Catches: a bare "address in use" that leaves a torchrun user guessing.
    assert!(
        e.to_string().contains("CUDA_CORE_NCCL_BOOTSTRAP_PORT"),
        "{e}"
    );
}

#[test]
fn from_env_reads_the_launchers_variables_and_names_a_missing_one() {
    // In a child process: the environment is the process's, shared by the test threads.
    let launcher = [
        ("MASTER_ADDR", Some("10.0.0.1")),
        ("MASTER_PORT", Some("29500")),
        ("RANK", Some("2")),
        ("WORLD_SIZE", Some("8")),
        ("TORCHELASTIC_USE_AGENT_STORE", None),
        ("CUDA_CORE_NCCL_BOOTSTRAP_PORT", None),
    ];
    in_child("set", &launcher, || {
        let b = TcpBootstrap::from_env().unwrap();
        assert_eq!(
            (b.address().as_str(), b.rank(), b.world_size()),
            ("10.0.0.1:29500", 2, 8)
        );
    });
    let mut missing = launcher;
    missing[0].1 = None;
    in_child("missing", &missing, || {
        // Catches: a missing MASTER_ADDR defaulted (to localhost, say) instead of named.
        let e = TcpBootstrap::from_env().unwrap_err();
        assert!(
            matches!(
                e,
                Error::Config {
                    variable: "MASTER_ADDR",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains("not set"), "{e}");
    });
}

/// Runs `body` in a child process of this test binary with `env` set (`None`: removed).
fn in_child(role: &str, env: &[(&str, Option<&str>)], body: impl FnOnce()) {
    let test = common::test_name(
        module_path!(),
        "from_env_reads_the_launchers_variables_and_names_a_missing_one",
    );
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
    common::wait_child(child.spawn().unwrap(), &test, &marker);
}
