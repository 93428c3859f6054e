//! Handing a [`UniqueId`] from rank 0 to the other ranks over TCP, as a launcher's
//! `MASTER_ADDR`, `MASTER_PORT`, `RANK` and `WORLD_SIZE` describe the job (torchrun's
//! variables), so that ranks on several machines form one communicator.
//!
//! Rank 0 listens ([`UniqueIdServer`], whose documentation gives the protocol) and answers
//! each other rank's request with the id's bytes; the others connect
//! ([`TcpBootstrap::fetch`]), retrying until rank 0 listens or their deadline passes.

use std::collections::BTreeSet;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::UniqueId;
use crate::error::{Cause, Error, Result};

/// The first bytes of a request.
const REQUEST_MAGIC: [u8; 8] = *b"cuNCCLrq";
/// The first bytes of a reply.
const REPLY_MAGIC: [u8; 8] = *b"cuNCCLid";
/// The protocol's version, in both requests and replies.
const VERSION: u32 = 1;
/// A request's size: magic, version, rank, world size.
const REQUEST_BYTES: usize = 20;
/// A reply's head: magic, version, status.
const REPLY_HEAD_BYTES: usize = 16;
/// A reply's status: the id follows.
const SERVED: u32 = 0;
/// A reply's status: a reason follows.
const REFUSED: u32 = 1;
/// The longest reason a refusal carries (longer ones are cut).
const MAX_REASON_BYTES: usize = 1024;
/// The longest a server waits for one connection's request, so that a silent stray connection
/// holds the others up no longer.
const PER_CONNECTION: Duration = Duration::from_secs(5);
/// The longest one connection attempt of a fetching rank takes before it tries again.
const PER_ATTEMPT: Duration = Duration::from_secs(5);

/// One rank's place in a job whose ranks meet over TCP: rank 0's address (`MASTER_ADDR` and
/// the port), this rank and the number of ranks, and how long to wait for the others.
///
/// [`unique_id`](TcpBootstrap::unique_id) is the whole of it: rank 0 makes the id and serves
/// it until every other rank has it; the others fetch it. Then each passes it to
/// [`Communicator::init_rank`](super::Communicator::init_rank).
///
/// ```no_run
/// use cuda_core::nccl::{Communicator, TcpBootstrap};
/// use cuda_core::Device;
///
/// // torchrun --nnodes 2 --nproc-per-node 8 --master-addr 10.0.0.1 ... sets these.
/// let bootstrap = TcpBootstrap::from_env()?;
/// let id = bootstrap.unique_id()?; // rank 0 serves it, the others fetch it
/// let local_rank = std::env::var("LOCAL_RANK").ok().and_then(|r| r.parse().ok()).unwrap_or(0);
/// let comm = Communicator::init_rank(
///     &id,
///     bootstrap.world_size(),
///     bootstrap.rank(),
///     Device::new(local_rank)?,
/// )?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpBootstrap {
    host: String,
    port: u16,
    rank: usize,
    world_size: usize,
    timeout: Duration,
}

impl TcpBootstrap {
    /// How long rank 0 serves, and the others try to reach it, unless
    /// [`with_timeout`](TcpBootstrap::with_timeout) says otherwise: five minutes, as the
    /// machines of one job may start minutes apart.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    /// Rank `rank` of `world_size`, whose rank 0 listens on port `port` of `host` (a name or
    /// an address, as the other ranks reach rank 0's machine; an IPv6 address with or
    /// without brackets). Rank 0 itself listens on every interface of its machine, on `port`.
    ///
    /// Refused ([`Error::InvalidArgument`]) when `host` is empty, `port` is 0, `world_size` is
    /// 0 or past NCCL's `int`, or `rank` is not below `world_size`.
    ///
    /// ```
    /// use cuda_core::nccl::TcpBootstrap;
    ///
    /// let bootstrap = TcpBootstrap::new("10.0.0.1", 29500, 3, 16)?;
    /// assert_eq!(bootstrap.address(), "10.0.0.1:29500");
    /// assert_eq!((bootstrap.rank(), bootstrap.world_size()), (3, 16));
    /// assert_eq!(TcpBootstrap::new("::1", 29500, 0, 2)?.address(), "[::1]:29500");
    /// assert!(TcpBootstrap::new("10.0.0.1", 29500, 16, 16).is_err());
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn new(
        host: impl Into<String>,
        port: u16,
        rank: usize,
        world_size: usize,
    ) -> Result<TcpBootstrap> {
        let host = host.into();
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(&host)
            .to_owned();
        let refuse = |name, reason: String| Err(Error::InvalidArgument { name, reason });
        if host.is_empty() {
            return refuse(
                "host",
                "empty: rank 0's machine's name or address".to_owned(),
            );
        }
        if port == 0 {
            return refuse("port", "0: the other ranks need rank 0's port".to_owned());
        }
        if world_size == 0 || world_size > i32::MAX as usize {
            return refuse(
                "world_size",
                format!("{world_size}: NCCL takes 1 to {} ranks", i32::MAX),
            );
        }
        if rank >= world_size {
            return refuse(
                "rank",
                format!(
                    "{rank} is not a rank of {world_size} (0 to {})",
                    world_size - 1
                ),
            );
        }
        Ok(TcpBootstrap {
            host,
            port,
            rank,
            world_size,
            timeout: TcpBootstrap::DEFAULT_TIMEOUT,
        })
    }

    /// This rank's place as a launcher's environment gives it: `MASTER_ADDR` (rank 0's
    /// machine), `MASTER_PORT`, `RANK` and `WORLD_SIZE`, as torchrun sets them for each
    /// process it starts (and as a script of `srun` or `mpirun` can).
    ///
    /// The port is `CUDA_CORE_NCCL_BOOTSTRAP_PORT` where it is set. Otherwise it is
    /// `MASTER_PORT`, except under torchrun, whose agent on the first machine already listens
    /// on `MASTER_PORT` for the job's own store (torchrun tells its processes so with
    /// `TORCHELASTIC_USE_AGENT_STORE=True`): there it is `MASTER_PORT + 1`. Every rank of a job
    /// sees the same variables, so they all pick the same port.
    ///
    /// A variable that is missing or cannot be used is [`Error::Config`], naming it and
    /// saying why (an empty value stands for a missing one).
    ///
    /// ```no_run
    /// use cuda_core::nccl::TcpBootstrap;
    ///
    /// match TcpBootstrap::from_env() {
    ///     Ok(b) => println!("rank {} of {}, rank 0 at {}", b.rank(), b.world_size(), b.address()),
    ///     Err(e) => println!("not started by a launcher: {e}"),
    /// }
    /// ```
    pub fn from_env() -> Result<TcpBootstrap> {
        TcpBootstrap::from_lookup(|name| {
            std::env::var_os(name).map(|value| value.to_string_lossy().into_owned())
        })
    }

    /// [`from_env`](TcpBootstrap::from_env) with the variables `var` gives.
    fn from_lookup(var: impl Fn(&str) -> Option<String>) -> Result<TcpBootstrap> {
        let get = |variable: &'static str| -> Result<String> {
            match var(variable) {
                Some(value) if !value.trim().is_empty() => Ok(value.trim().to_owned()),
                value => Err(Error::Config {
                    variable,
                    value: value.unwrap_or_default(),
                    reason: "it is not set: a launcher (torchrun) sets MASTER_ADDR, MASTER_PORT, \
                             RANK and WORLD_SIZE for each rank"
                        .to_owned(),
                }),
            }
        };
        let number = |variable: &'static str, what: &str| -> Result<usize> {
            let value = get(variable)?;
            value.parse().map_err(|_| Error::Config {
                variable,
                value,
                reason: format!("not a whole number ({what})"),
            })
        };
        let port = |variable: &'static str, value: String| -> Result<u16> {
            match value.parse::<u16>() {
                Ok(port) if port != 0 => Ok(port),
                _ => Err(Error::Config {
                    variable,
                    value,
                    reason: "not a TCP port (1 to 65535)".to_owned(),
                }),
            }
        };
        let host = get("MASTER_ADDR")?;
        let world_size = number("WORLD_SIZE", "the number of ranks")?;
        if world_size == 0 || world_size > i32::MAX as usize {
            return Err(Error::Config {
                variable: "WORLD_SIZE",
                value: world_size.to_string(),
                reason: format!("NCCL takes 1 to {} ranks", i32::MAX),
            });
        }
        let rank = number("RANK", "this process's rank")?;
        if rank >= world_size {
            return Err(Error::Config {
                variable: "RANK",
                value: rank.to_string(),
                reason: format!("not below WORLD_SIZE={world_size}"),
            });
        }
        let master_port = port("MASTER_PORT", get("MASTER_PORT")?)?;
        let port = match var("CUDA_CORE_NCCL_BOOTSTRAP_PORT").filter(|v| !v.trim().is_empty()) {
            Some(value) => port("CUDA_CORE_NCCL_BOOTSTRAP_PORT", value.trim().to_owned())?,
            None if under_torchrun_agent_store(&var) => {
                master_port.checked_add(1).ok_or_else(|| Error::Config {
                    variable: "MASTER_PORT",
                    value: master_port.to_string(),
                    reason: "torchrun's store holds it, and the port after it (where the \
                             unique id is served) is past 65535: set \
                             CUDA_CORE_NCCL_BOOTSTRAP_PORT"
                        .to_owned(),
                })?
            }
            None => master_port,
        };
        TcpBootstrap::new(host, port, rank, world_size)
    }

    /// The same place, with `timeout` for rank 0 to serve every other rank, and for each of
    /// them to reach rank 0 and get the id.
    ///
    /// ```
    /// use std::time::Duration;
    /// use cuda_core::nccl::TcpBootstrap;
    ///
    /// let b = TcpBootstrap::new("node-0", 29500, 1, 2)?.with_timeout(Duration::from_secs(30));
    /// assert_eq!(b.timeout(), Duration::from_secs(30));
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn with_timeout(self, timeout: Duration) -> TcpBootstrap {
        TcpBootstrap { timeout, ..self }
    }

    /// This process's rank.
    ///
    /// ```
    /// # use cuda_core::nccl::TcpBootstrap;
    /// assert_eq!(TcpBootstrap::new("node-0", 29500, 5, 8)?.rank(), 5);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    ///
    /// ```
    /// # use cuda_core::nccl::TcpBootstrap;
    /// assert_eq!(TcpBootstrap::new("node-0", 29500, 5, 8)?.world_size(), 8);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn world_size(&self) -> usize {
        self.world_size
    }

    /// How long rank 0 serves, and the others wait for it.
    ///
    /// ```
    /// # use cuda_core::nccl::TcpBootstrap;
    /// let b = TcpBootstrap::new("node-0", 29500, 5, 8)?;
    /// assert_eq!(b.timeout(), TcpBootstrap::DEFAULT_TIMEOUT);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The port rank 0 listens on.
    ///
    /// ```
    /// # use cuda_core::nccl::TcpBootstrap;
    /// assert_eq!(TcpBootstrap::new("node-0", 29500, 5, 8)?.port(), 29500);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Rank 0's address as the other ranks reach it, `host:port` (`[host]:port` for an IPv6
    /// address), as errors name it.
    ///
    /// ```
    /// # use cuda_core::nccl::TcpBootstrap;
    /// assert_eq!(TcpBootstrap::new("[fe80::1]", 29500, 5, 8)?.address(), "[fe80::1]:29500");
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    /// The job's unique id: on rank 0 a new one ([`UniqueId::new`], which needs NCCL), served
    /// to every other rank before it is returned ([`serve`](TcpBootstrap::serve)); on the
    /// others the one rank 0 serves ([`fetch`](TcpBootstrap::fetch)). Each waits at most the
    /// timeout.
    ///
    /// ```no_run
    /// # use cuda_core::nccl::TcpBootstrap;
    /// let id = TcpBootstrap::from_env()?.unique_id()?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn unique_id(&self) -> Result<UniqueId> {
        if self.rank == 0 {
            let id = UniqueId::new()?;
            self.serve(&id)?;
            Ok(id)
        } else {
            self.fetch()
        }
    }

    /// Rank 0's part: listens on the port, on every interface, and serves `id` until each of
    /// the other ranks has it, or fails when the timeout passes first, naming the ranks that
    /// did not come. With one rank it returns at once.
    ///
    /// ```no_run
    /// use cuda_core::nccl::{TcpBootstrap, UniqueId};
    ///
    /// let bootstrap = TcpBootstrap::new("10.0.0.1", 29500, 0, 16)?;
    /// let id = UniqueId::new()?;
    /// bootstrap.serve(&id)?; // returns once ranks 1 to 15 have it
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn serve(&self, id: &UniqueId) -> Result<()> {
        if self.world_size == 1 {
            return Ok(());
        }
        let any: IpAddr = match self.host.parse::<IpAddr>() {
            Ok(IpAddr::V6(_)) => Ipv6Addr::UNSPECIFIED.into(),
            _ => Ipv4Addr::UNSPECIFIED.into(),
        };
        UniqueIdServer::bind(SocketAddr::new(any, self.port), self.world_size)?
            .serve(id, self.timeout)
    }

    /// The other ranks' part: connects to rank 0 and gets the id, trying again while rank 0
    /// does not listen yet (it may start after this rank, on another machine) until the
    /// timeout. Then it fails naming the address and the time waited
    /// (`rank 0 absent at 10.0.0.1:29500 after 300s`, with the last connection error). A refusal
    /// by rank 0 (another world size, another protocol version) and a reply that is not rank
    /// 0's (another service on the port) fail at once, saying so.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use cuda_core::nccl::TcpBootstrap;
    ///
    /// let bootstrap = TcpBootstrap::new("10.0.0.1", 29500, 5, 16)?;
    /// let id = bootstrap.with_timeout(Duration::from_secs(60)).fetch()?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn fetch(&self) -> Result<UniqueId> {
        let start = Instant::now();
        let deadline = start + self.timeout;
        let address = self.address();
        let request = encode_request(self.rank as u32, self.world_size as u32);
        let mut pause = Duration::from_millis(20);
        loop {
            let last = match self.attempt(&request, deadline) {
                Ok(Attempt::Served(id)) => return Ok(id),
                Ok(Attempt::Refused(reason)) => {
                    return Err(socket_error(
                        "fetching the NCCL unique id",
                        io::ErrorKind::PermissionDenied,
                        format!("rank 0 at {address} refused rank {}: {reason}", self.rank),
                    ))
                }
                Ok(Attempt::NotRankZero(what)) => {
                    return Err(socket_error(
                        "fetching the NCCL unique id",
                        io::ErrorKind::InvalidData,
                        format!(
                            "{address} answered, but not as rank 0's NCCL bootstrap of \
                             cuda-core ({what}): is another service listening on that port?"
                        ),
                    ))
                }
                Err(e) => e,
            };
            let now = Instant::now();
            if now >= deadline {
                return Err(socket_error(
                    "fetching the NCCL unique id",
                    io::ErrorKind::TimedOut,
                    format!(
                        "rank 0 absent at {address} after {:?} (the last attempt: {last})",
                        self.timeout
                    ),
                ));
            }
            // Rank 0 may not listen yet: try again soon, then less often.
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// One connection to rank 0: each of its addresses in turn until one answers.
    fn attempt(&self, request: &[u8; REQUEST_BYTES], deadline: Instant) -> io::Result<Attempt> {
        let addresses = (self.host.as_str(), self.port).to_socket_addrs()?;
        let mut last = io::Error::new(
            io::ErrorKind::NotFound,
            format!("{} resolves to no address", self.host),
        );
        for address in addresses {
            let Some(left) = left_until(deadline) else {
                break;
            };
            match TcpStream::connect_timeout(&address, left.min(PER_ATTEMPT)) {
                Ok(stream) => return exchange(stream, request, deadline),
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}

/// What one connection to rank 0 got.
enum Attempt {
    /// The id.
    Served(UniqueId),
    /// Rank 0's refusal, and why.
    Refused(String),
    /// A reply that is not rank 0's, and what is wrong with it.
    NotRankZero(String),
}

/// Sends the request on `stream` and reads the reply.
fn exchange(
    mut stream: TcpStream,
    request: &[u8; REQUEST_BYTES],
    deadline: Instant,
) -> io::Result<Attempt> {
    let left = left_until(deadline).ok_or(io::ErrorKind::TimedOut)?;
    stream.set_read_timeout(Some(left))?;
    stream.set_write_timeout(Some(left))?;
    stream.write_all(request)?;
    let mut head = [0u8; REPLY_HEAD_BYTES];
    stream.read_exact(&mut head)?;
    let status = match decode_reply_head(&head) {
        Ok(status) => status,
        Err(what) => return Ok(Attempt::NotRankZero(what)),
    };
    match status {
        SERVED => {
            let mut bytes = [0u8; UniqueId::BYTES];
            stream.read_exact(&mut bytes)?;
            Ok(Attempt::Served(UniqueId::from(bytes)))
        }
        REFUSED => {
            let mut length = [0u8; 4];
            stream.read_exact(&mut length)?;
            let length = u32::from_le_bytes(length) as usize;
            if length > MAX_REASON_BYTES {
                return Ok(Attempt::NotRankZero(format!(
                    "a refusal of {length} bytes, past {MAX_REASON_BYTES}"
                )));
            }
            let mut reason = vec![0u8; length];
            stream.read_exact(&mut reason)?;
            Ok(Attempt::Refused(
                String::from_utf8_lossy(&reason).into_owned(),
            ))
        }
        other => Ok(Attempt::NotRankZero(format!("status {other}"))),
    }
}

/// Rank 0's listener: serves a [`UniqueId`] to the other ranks of a job of a given size. Bind
/// it first, and the port is taken (port 0 takes a free one: [`local_addr`] tells which);
/// [`serve`] then answers the ranks. [`TcpBootstrap::serve`] does both.
///
/// [`local_addr`]: UniqueIdServer::local_addr
/// [`serve`]: UniqueIdServer::serve
///
/// # The protocol
///
/// Rank 0 answers each other rank's request with the id's bytes; the others connect
/// ([`TcpBootstrap::fetch`]), retrying until rank 0 listens or their deadline passes. Each
/// exchange is one small request and one reply, both opened by a magic and a protocol version,
/// so that a stray connection (a port scanner, a health check, a rank of another job) is
/// refused, never counted as a rank nor sent anything, and a rank that reaches some other
/// service on the port fails with an error saying so, never with a garbage id.
///
/// ```text
/// request (a rank to rank 0), 20 bytes:  "cuNCCLrq"  version: u32  rank: u32  world size: u32
/// reply (rank 0 to a rank):              "cuNCCLid"  version: u32  status: u32, then
///     status 0 (served):                 the id's 128 bytes
///     status 1 (refused):                length: u32 (at most 1024), then why, in UTF-8
/// ```
///
/// (integers little-endian). Rank 0 refuses a request of another protocol version, of another
/// world size than its own, or of a rank that is not one of its peers (`1..world_size`), with
/// the reason, which the refused rank's error gives.
///
/// The id is no secret ([`UniqueId`] says why): anyone who can reach rank 0's port while it
/// serves gets it, as anyone who can reach NCCL's own bootstrap port can join. Serve on a
/// network the job trusts.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use cuda_core::nccl::{TcpBootstrap, UniqueId, UniqueIdServer};
///
/// let server = UniqueIdServer::bind("127.0.0.1:0", 2)?;
/// let port = server.local_addr().port();
/// let id = UniqueId::from_bytes(&[42; UniqueId::BYTES])?; // rank 0: UniqueId::new()
/// let served = id.clone();
/// let rank_0 = std::thread::spawn(move || server.serve(&served, Duration::from_secs(30)));
/// let fetched = TcpBootstrap::new("127.0.0.1", port, 1, 2)?.fetch()?;
/// assert_eq!(fetched, id);
/// rank_0.join().expect("rank 0 serves")?;
/// # Ok::<(), cuda_core::Error>(())
/// ```
#[derive(Debug)]
pub struct UniqueIdServer {
    listener: TcpListener,
    local: SocketAddr,
    world_size: usize,
}

impl UniqueIdServer {
    /// Listens on `address` (`0.0.0.0:29500` for every interface; port 0 for a free one) for
    /// the `world_size - 1` other ranks of a job of `world_size`.
    ///
    /// A port that another process holds is [`Error::Socket`] saying so (under torchrun,
    /// `MASTER_PORT` is its agent's: see [`TcpBootstrap::from_env`]); `world_size` must be 1
    /// to NCCL's `int` ([`Error::InvalidArgument`]).
    ///
    /// ```
    /// # use cuda_core::nccl::UniqueIdServer;
    /// let server = UniqueIdServer::bind("127.0.0.1:0", 4)?;
    /// assert_ne!(server.local_addr().port(), 0);
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn bind(address: impl ToSocketAddrs, world_size: usize) -> Result<UniqueIdServer> {
        if world_size == 0 || world_size > i32::MAX as usize {
            return Err(Error::InvalidArgument {
                name: "world_size",
                reason: format!("{world_size}: NCCL takes 1 to {} ranks", i32::MAX),
            });
        }
        let listener = TcpListener::bind(address).map_err(|e| {
            let hint = if e.kind() == io::ErrorKind::AddrInUse {
                " (another process listens on that port; under torchrun its agent holds \
                 MASTER_PORT: set CUDA_CORE_NCCL_BOOTSTRAP_PORT to a free port)"
            } else {
                ""
            };
            socket_error(
                "listening for the other ranks",
                e.kind(),
                format!("rank 0 could not listen: {e}{hint}"),
            )
        })?;
        let local = listener
            .local_addr()
            .and_then(|local| listener.set_nonblocking(true).map(|()| local))
            .map_err(|e| Error::Socket {
                operation: "listening for the other ranks",
                source: Cause::new(e),
            })?;
        Ok(UniqueIdServer {
            listener,
            local,
            world_size,
        })
    }

    /// The address it listens on (with the port taken, where port 0 was asked for).
    ///
    /// ```
    /// # use cuda_core::nccl::UniqueIdServer;
    /// let server = UniqueIdServer::bind("127.0.0.1:0", 2)?;
    /// assert!(server.local_addr().ip().is_loopback());
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Serves `id` to each rank that asks, until every rank from 1 to `world_size - 1` has it,
    /// then stops listening. A connection that is not a rank of this job (no request, another
    /// protocol, version or world size, rank 0 or past the last) is refused, logged, and not
    /// counted. Fails ([`Error::Socket`]) when `timeout` passes first, naming the ranks that did
    /// not come and what was refused.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// use cuda_core::nccl::{UniqueId, UniqueIdServer};
    ///
    /// let server = UniqueIdServer::bind("0.0.0.0:29500", 16)?;
    /// server.serve(&UniqueId::new()?, Duration::from_secs(300))?;
    /// # Ok::<(), cuda_core::Error>(())
    /// ```
    pub fn serve(self, id: &UniqueId, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut served = BTreeSet::new();
        let mut refused = Vec::new();
        while served.len() + 1 < self.world_size {
            match self.listener.accept() {
                Ok((stream, peer)) => match self.answer(stream, id, deadline) {
                    Ok(rank) => {
                        log::debug!("NCCL bootstrap: rank {rank} at {peer} has the unique id");
                        served.insert(rank);
                    }
                    Err(why) => {
                        log::warn!("NCCL bootstrap: refused a connection from {peer}: {why}");
                        refused.push(format!("{peer}: {why}"));
                    }
                },
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let Some(left) = left_until(deadline) else {
                        return Err(self.timed_out(timeout, &served, &refused));
                    };
                    std::thread::sleep(left.min(Duration::from_millis(10)));
                }
                // A connection reset before it was accepted, or no descriptor left for now.
                Err(e) => {
                    log::warn!("NCCL bootstrap: accepting a connection failed: {e}");
                    if left_until(deadline).is_none() {
                        return Err(self.timed_out(timeout, &served, &refused));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        Ok(())
    }

    /// Reads one connection's request and answers it: the rank it served, or why it refused.
    fn answer(
        &self,
        mut stream: TcpStream,
        id: &UniqueId,
        deadline: Instant,
    ) -> Result<usize, String> {
        let left = left_until(deadline).unwrap_or(Duration::from_millis(1));
        let limit = Some(left.min(PER_CONNECTION));
        stream
            .set_nonblocking(false)
            .and_then(|()| stream.set_read_timeout(limit))
            .and_then(|()| stream.set_write_timeout(limit))
            .map_err(|e| e.to_string())?;
        let mut request = [0u8; REQUEST_BYTES];
        stream
            .read_exact(&mut request)
            .map_err(|e| format!("no whole request came ({e})"))?;
        let (version, rank, world_size) = decode_request(&request)?;
        let reason = if version != VERSION {
            Some(format!(
                "its protocol version is {version}, and rank 0's is {VERSION} (the ranks run \
                 different versions of cuda-core)"
            ))
        } else if world_size as usize != self.world_size {
            Some(format!(
                "its WORLD_SIZE is {world_size}, and rank 0's is {}",
                self.world_size
            ))
        } else if rank == 0 || rank as usize >= self.world_size {
            Some(format!(
                "rank {rank} is not one of rank 0's peers (1 to {})",
                self.world_size - 1
            ))
        } else {
            None
        };
        let reply = match &reason {
            None => encode_served(id),
            Some(reason) => encode_refusal(reason),
        };
        stream
            .write_all(&reply)
            .map_err(|e| format!("the reply could not be sent ({e})"))?;
        match reason {
            None => Ok(rank as usize),
            Some(reason) => Err(format!("rank {rank}: {reason}")),
        }
    }

    /// The error of a server whose timeout passed before every rank came.
    fn timed_out(&self, timeout: Duration, served: &BTreeSet<usize>, refused: &[String]) -> Error {
        let missing: Vec<usize> = (1..self.world_size)
            .filter(|rank| !served.contains(rank))
            .collect();
        let shown: Vec<String> = missing.iter().take(16).map(usize::to_string).collect();
        let more = if missing.len() > shown.len() {
            ", ..."
        } else {
            ""
        };
        let refusals = if refused.is_empty() {
            String::new()
        } else {
            format!(
                "; refused {} connection(s): {}",
                refused.len(),
                refused.join("; ")
            )
        };
        socket_error(
            "serving the NCCL unique id",
            io::ErrorKind::TimedOut,
            format!(
                "after {timeout:?} on {}, {} of the {} other ranks had not come: rank(s) {}{more}{refusals}",
                self.local,
                missing.len(),
                self.world_size - 1,
                shown.join(", ")
            ),
        )
    }
}

/// The time left until `deadline`, if any.
fn left_until(deadline: Instant) -> Option<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    (!left.is_zero()).then_some(left)
}

/// An [`Error::Socket`] of an I/O error of `kind` saying `message`.
fn socket_error(operation: &'static str, kind: io::ErrorKind, message: String) -> Error {
    Error::Socket {
        operation,
        source: Cause::new(io::Error::new(kind, message)),
    }
}

/// A rank's request.
fn encode_request(rank: u32, world_size: u32) -> [u8; REQUEST_BYTES] {
    let mut bytes = [0u8; REQUEST_BYTES];
    bytes[..8].copy_from_slice(&REQUEST_MAGIC);
    bytes[8..12].copy_from_slice(&VERSION.to_le_bytes());
    bytes[12..16].copy_from_slice(&rank.to_le_bytes());
    bytes[16..20].copy_from_slice(&world_size.to_le_bytes());
    bytes
}

/// A request's version, rank and world size; refused unless it opens with the magic.
fn decode_request(bytes: &[u8; REQUEST_BYTES]) -> Result<(u32, u32, u32), String> {
    if bytes[..8] != REQUEST_MAGIC {
        return Err(format!(
            "not a request for the NCCL unique id of cuda-core (it begins {:?})",
            String::from_utf8_lossy(&bytes[..8])
        ));
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Ok((word(8), word(12), word(16)))
}

/// The reply that serves `id`.
fn encode_served(id: &UniqueId) -> Vec<u8> {
    let mut bytes = reply_head(SERVED);
    bytes.extend_from_slice(id.as_bytes());
    bytes
}

/// The reply that refuses a request, and why (cut to [`MAX_REASON_BYTES`]).
fn encode_refusal(reason: &str) -> Vec<u8> {
    let mut end = reason.len().min(MAX_REASON_BYTES);
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    let mut bytes = reply_head(REFUSED);
    bytes.extend_from_slice(&(end as u32).to_le_bytes());
    bytes.extend_from_slice(&reason.as_bytes()[..end]);
    bytes
}

/// A reply's head: the magic, the version, `status`.
fn reply_head(status: u32) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(REPLY_HEAD_BYTES + UniqueId::BYTES);
    bytes.extend_from_slice(&REPLY_MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&status.to_le_bytes());
    bytes
}

/// A reply head's status; refused unless it opens with the magic and this version.
fn decode_reply_head(bytes: &[u8; REPLY_HEAD_BYTES]) -> Result<u32, String> {
    if bytes[..8] != REPLY_MAGIC {
        return Err(format!(
            "its reply begins {:?}",
            String::from_utf8_lossy(&bytes[..8])
        ));
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    match word(8) {
        VERSION => Ok(word(12)),
        version => Err(format!(
            "rank 0 speaks protocol version {version}, this rank {VERSION}: the ranks run \
             different versions of cuda-core"
        )),
    }
}

/// Whether torchrun's agent store holds `MASTER_PORT` (torchrun sets
/// `TORCHELASTIC_USE_AGENT_STORE` for the processes it starts).
fn under_torchrun_agent_store(var: &impl Fn(&str) -> Option<String>) -> bool {
    var("TORCHELASTIC_USE_AGENT_STORE").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `from_lookup` over `vars`.
    fn from(vars: &[(&str, &str)]) -> Result<TcpBootstrap> {
        TcpBootstrap::from_lookup(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    /// The variable a `Config` error names, and why.
    fn config_error(result: Result<TcpBootstrap>) -> (&'static str, String, String) {
        match result {
            Err(Error::Config {
                variable,
                value,
                reason,
            }) => (variable, value, reason),
            other => panic!("expected a Config error, got {other:?}"),
        }
    }

    const JOB: [(&str, &str); 4] = [
        ("MASTER_ADDR", "10.0.0.1"),
        ("MASTER_PORT", "29500"),
        ("RANK", "3"),
        ("WORLD_SIZE", "16"),
    ];

    /// `JOB` with `name` set to `value` (`None`: removed).
    fn job_with(
        name: &'static str,
        value: Option<&'static str>,
    ) -> Vec<(&'static str, &'static str)> {
        let mut vars: Vec<_> = JOB.iter().copied().filter(|(n, _)| *n != name).collect();
        if let Some(value) = value {
            vars.push((name, value));
        }
        vars
    }

    #[test]
    fn from_env_reads_torchruns_variables() {
        let b = from(&JOB).unwrap();
        assert_eq!(
            (b.address().as_str(), b.rank(), b.world_size(), b.timeout()),
            ("10.0.0.1:29500", 3, 16, TcpBootstrap::DEFAULT_TIMEOUT)
        );
        // Catches: under torchrun, binding MASTER_PORT, which torchrun's agent store holds.
        let mut torchrun = JOB.to_vec();
        torchrun.push(("TORCHELASTIC_USE_AGENT_STORE", "True"));
        assert_eq!(from(&torchrun).unwrap().port(), 29501);
        // Catches: the override ignored (or ignored only under torchrun).
        torchrun.push(("CUDA_CORE_NCCL_BOOTSTRAP_PORT", "40000"));
        assert_eq!(from(&torchrun).unwrap().port(), 40000);
        // Catches: values with the spaces a shell script leaves refused.
        let spaced = [
            ("MASTER_ADDR", " node-0 "),
            ("MASTER_PORT", "29500\n"),
            ("RANK", " 0"),
            ("WORLD_SIZE", "1 "),
        ];
        assert_eq!(from(&spaced).unwrap().address(), "node-0:29500");
    }

    #[test]
    fn from_env_names_each_missing_or_unusable_variable() {
        // Catches: a missing variable defaulted (rank 0, port 0) instead of refused by name.
        for name in ["MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE"] {
            for value in [None, Some(""), Some("  ")] {
                let (variable, _, reason) = config_error(from(&job_with(name, value)));
                assert_eq!(variable, name, "{value:?}");
                assert!(reason.contains("not set"), "{reason}");
            }
        }
        // Catches: garbage parsed as 0 or truncated, or an out-of-range value accepted.
        let cases = [
            ("MASTER_PORT", "http", "not a TCP port"),
            ("MASTER_PORT", "0", "not a TCP port"),
            ("MASTER_PORT", "65536", "not a TCP port"),
            ("RANK", "-1", "not a whole number"),
            ("RANK", "16", "not below WORLD_SIZE=16"),
            ("WORLD_SIZE", "two", "not a whole number"),
            ("WORLD_SIZE", "0", "NCCL takes 1 to"),
            ("WORLD_SIZE", "4294967296", "NCCL takes 1 to"),
        ];
        for (name, value, why) in cases {
            let (variable, shown, reason) = config_error(from(&job_with(name, Some(value))));
            assert_eq!((variable, shown.as_str()), (name, value));
            assert!(reason.contains(why), "{name}={value}: {reason}");
        }
        let mut vars = JOB.to_vec();
        vars.push(("CUDA_CORE_NCCL_BOOTSTRAP_PORT", "99999"));
        let (variable, _, _) = config_error(from(&vars));
        assert_eq!(variable, "CUDA_CORE_NCCL_BOOTSTRAP_PORT");
    }

    #[test]
    fn messages_round_trip_and_others_are_refused() {
        assert_eq!(decode_request(&encode_request(5, 16)), Ok((VERSION, 5, 16)));
        let mut stray = encode_request(5, 16);
        stray[..8].copy_from_slice(b"GET / HT");
        // Catches: a request read without its magic (a stray connection counted as a rank).
        assert!(decode_request(&stray).unwrap_err().contains("GET / HT"));

        let id = UniqueId::from([9; UniqueId::BYTES]);
        let served = encode_served(&id);
        assert_eq!(served.len(), REPLY_HEAD_BYTES + UniqueId::BYTES);
        let head: [u8; REPLY_HEAD_BYTES] = served[..REPLY_HEAD_BYTES].try_into().unwrap();
        assert_eq!(decode_reply_head(&head), Ok(SERVED));
        assert_eq!(&served[REPLY_HEAD_BYTES..], id.as_bytes());
        // Catches: a reply of another version taken as this one's.
        let mut newer = head;
        newer[8..12].copy_from_slice(&2u32.to_le_bytes());
        assert!(decode_reply_head(&newer).unwrap_err().contains("version 2"));
        // Catches: a reply without the magic taken as an id.
        assert!(decode_reply_head(b"HTTP/1.1 400 Bad").is_err());

        // Catches: a long reason sent whole (or cut inside a character).
        let refusal = encode_refusal(&format!("a{}", "é".repeat(MAX_REASON_BYTES)));
        let length = u32::from_le_bytes(refusal[16..20].try_into().unwrap()) as usize;
        assert_eq!(length, MAX_REASON_BYTES - 1);
        assert_eq!(refusal.len(), 20 + length);
        assert!(std::str::from_utf8(&refusal[20..]).is_ok());
    }
}
