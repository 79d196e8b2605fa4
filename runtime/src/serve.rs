//! The small web servers edgert starts on an address a flag names (`monitor --prometheus`,
//! `--preview`): the address checked as the flag's, loopback unless the caller allows more, bound;
//! then one request per connection, at a bounded cost per client. One thread waits on every
//! connection still sending its request (`poll`), up to `MAX_PENDING` of them (the oldest is
//! dropped for a newcomer), each given `READ_WITHIN` and `MAX_HEAD` bytes; a whole request is
//! answered on a thread of its own, at most `MAX_ANSWERING` at once (more are told 503), each
//! write done within `WRITE_WITHIN`, then the connection closed. So a client that floods, sends
//! slowly, holds connections half-open or does not read costs a socket or one thread for
//! seconds at most, and never holds up the others.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::Error;

/// Connections still sending their request, waited on together.
pub const MAX_PENDING: usize = 256;
/// Requests answered at once, viewers of a stream included.
pub const MAX_ANSWERING: usize = 64;
/// The most a request's line and headers may take.
pub const MAX_HEAD: usize = 8 * 1024;
/// How long a client has to send its request, however slowly it sends.
pub const READ_WITHIN: Duration = Duration::from_secs(2);
/// How long one write may wait on a client that does not read.
pub const WRITE_WITHIN: Duration = Duration::from_secs(2);
/// How long the waiting thread sleeps without news before it looks whether the server is closed.
const POLL_MS: i32 = 20;

/// A bound listening socket.
pub struct Server {
    listener: TcpListener,
}

/// Binds `flag`'s `address` (like `example`; port 0 picks a free one): the server and the address
/// it listens on. `off_loopback` is what to do instead of a non-loopback address, or `None` where
/// one is allowed.
pub fn listen(
    flag: &str,
    address: &str,
    example: &str,
    off_loopback: Option<&str>,
) -> Result<(Server, SocketAddr), Error> {
    let wanted: SocketAddr = address
        .parse()
        .map_err(|_| Error::Usage(format!("{flag} {address}: not an address like {example}")))?;
    if let Some(instead) = off_loopback.filter(|_| !wanted.ip().is_loopback()) {
        return Err(Error::Usage(format!("{flag} {address}: not a loopback address; {instead}")));
    }
    let fail = |e: std::io::Error| Error::Serve { address: address.into(), reason: e.to_string() };
    let listener = TcpListener::bind(wanted).map_err(fail)?;
    // Accepts without blocking, so that the accepting thread sees the server closed.
    listener.set_nonblocking(true).map_err(fail)?;
    let bound = listener.local_addr().map_err(fail)?;
    Ok((Server { listener }, bound))
}

impl Server {
    /// Serves until `closed` says so, each whole request answered by `handle` on a thread of its
    /// own. Returns once no new request will be taken; answers under way end by themselves,
    /// within their deadlines.
    pub fn serve(self, closed: impl Fn() -> bool, handle: impl Fn(Request) + Send + Sync + 'static) {
        let handle = Arc::new(handle);
        let answering = Arc::new(AtomicUsize::new(0));
        let mut pending: Vec<Pending> = Vec::new();
        while !closed() {
            let mut fds: Vec<libc::pollfd> = std::iter::once(self.listener.as_raw_fd())
                .chain(pending.iter().map(|p| p.stream.as_raw_fd()))
                .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
                .collect();
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd structs for the call's duration.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, POLL_MS) };
            let now = Instant::now();
            let mut kept = Vec::with_capacity(pending.len());
            for (mut p, fd) in pending.into_iter().zip(&fds[1..]) {
                match if fd.revents != 0 { p.read() } else { Arrived::More } {
                    Arrived::Whole => {
                        if let Some(request) = Request::parse(&p.head, p.stream) {
                            answer(request, &handle, &answering);
                        }
                    }
                    Arrived::More if now.duration_since(p.since) < READ_WITHIN => kept.push(p),
                    Arrived::More | Arrived::Gone => {}
                }
            }
            pending = kept;
            while let Ok((stream, _)) = self.listener.accept() {
                if stream.set_nonblocking(true).is_err() {
                    continue;
                }
                if pending.len() >= MAX_PENDING {
                    pending.remove(0);
                }
                pending.push(Pending { stream, head: Vec::new(), since: now });
            }
        }
    }
}

/// Answers `request` on a thread of its own, or tells it 503 where `MAX_ANSWERING` are under way.
fn answer(
    request: Request,
    handle: &Arc<impl Fn(Request) + Send + Sync + 'static>,
    answering: &Arc<AtomicUsize>,
) {
    if answering.fetch_add(1, Ordering::SeqCst) >= MAX_ANSWERING {
        answering.fetch_sub(1, Ordering::SeqCst);
        return request.respond(503, "text/plain", b"busy; ask again\n");
    }
    let (handle, counted) = (handle.clone(), Counted(answering.clone()));
    // Without a thread to be had, the closure drops the connection, and the count with it.
    let _ = std::thread::Builder::new().name("edgert-http".into()).spawn(move || {
        let _counted = counted;
        handle(request);
    });
}

/// What a read of a connection still sending its request found.
enum Arrived {
    /// The request line and headers, whole.
    Whole,
    /// Part of them, more to come.
    More,
    /// The client went away, or sent too much (told 431).
    Gone,
}

/// A connection still sending its request.
struct Pending {
    stream: TcpStream,
    head: Vec<u8>,
    since: Instant,
}

impl Pending {
    /// Reads what has come, without waiting.
    fn read(&mut self) -> Arrived {
        let mut buffer = [0u8; 1024];
        loop {
            match (&self.stream).read(&mut buffer) {
                Ok(0) => return Arrived::Gone,
                Ok(n) => self.head.extend_from_slice(&buffer[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Arrived::More,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return Arrived::Gone,
            }
            if self.head.len() > MAX_HEAD {
                if answerable(&self.stream).is_ok() {
                    respond(&self.stream, 431, "text/plain", b"request header fields too large\n");
                }
                return Arrived::Gone;
            }
            if self.head.windows(4).any(|w| w == b"\r\n\r\n") {
                return Arrived::Whole;
            }
        }
    }
}

/// Takes one off the requests being answered however the answering thread ends.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One request: its path and query, and the connection to answer it on.
pub struct Request {
    pub path: String,
    pub query: String,
    stream: TcpStream,
}

impl Request {
    /// The request in `head` (a whole request line and headers), to answer on `stream`; `None`
    /// where it is not one edgert serves (the client is told 400).
    fn parse(head: &[u8], stream: TcpStream) -> Option<Request> {
        answerable(&stream).ok()?;
        let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
        let mut words = std::str::from_utf8(line).unwrap_or_default().split(' ');
        let target = match (words.next(), words.next(), words.next(), words.next()) {
            (Some("GET" | "HEAD"), Some(target), Some(version), None) if version.starts_with("HTTP/1.") => {
                target
            }
            _ => {
                respond(&stream, 400, "text/plain", b"bad request\n");
                return None;
            }
        };
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Some(Request { path: path.into(), query: query.into(), stream })
    }

    /// The value of `name` in the query, or "".
    pub fn query_value(&self, name: &str) -> &str {
        self.query.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('=')).unwrap_or("")
    }

    /// Answers with `status` and `body` of type `kind`, then closes the connection.
    pub fn respond(self, status: u16, kind: &str, body: &[u8]) {
        respond(&self.stream, status, kind, body);
    }

    /// The connection, for a reply written as it comes (an MJPEG stream); each write waits at
    /// most `WRITE_WITHIN` on a client that does not read, then fails.
    pub fn into_stream(self) -> TcpStream {
        self.stream
    }
}

/// `stream` made ready for an answer: blocking, each write waiting at most `WRITE_WITHIN`.
fn answerable(stream: &TcpStream) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(WRITE_WITHIN))
}

fn respond(mut stream: &TcpStream, status: u16, kind: &str, body: &[u8]) {
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n",
        reason(status),
        body.len()
    );
    let _ =
        stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body)).and_then(|()| stream.flush());
    let _ = stream.shutdown(Shutdown::Write);
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Flag = Arc<std::sync::atomic::AtomicBool>;

    fn flag(value: bool) -> Flag {
        Arc::new(std::sync::atomic::AtomicBool::new(value))
    }

    /// A server answering with the path and token, until `closed`; `/hold` is answered only once
    /// `released`.
    fn start_holding(closed: Flag, released: Flag) -> (SocketAddr, std::thread::JoinHandle<()>) {
        let (server, bound) = listen("--test", "127.0.0.1:0", "127.0.0.1:1", Some("no")).unwrap();
        let serving = std::thread::spawn(move || {
            server.serve(
                move || closed.load(Ordering::SeqCst),
                move |request| {
                    while request.path == "/hold" && !released.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    let body = format!("{} {}", request.path, request.query_value("token"));
                    request.respond(200, "text/plain", body.as_bytes());
                },
            )
        });
        (bound, serving)
    }

    fn start(closed: Flag) -> (SocketAddr, std::thread::JoinHandle<()>) {
        start_holding(closed, flag(true))
    }

    fn get(address: SocketAddr, text: &[u8]) -> String {
        let mut stream = TcpStream::connect(address).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        stream.write_all(text).unwrap();
        let mut reply = String::new();
        let _ = stream.read_to_string(&mut reply);
        reply
    }

    #[test]
    fn one_request_a_connection_answered_then_closed_and_garbage_refused() {
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (address, serving) = start(closed.clone());
        let reply = get(address, b"GET /stats.json?a=1&token=abc HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            reply.starts_with("HTTP/1.1 200 OK\r\n") && reply.ends_with("\r\n\r\n/stats.json abc"),
            "{reply}"
        );
        assert!(
            reply.contains("Connection: close\r\n") && reply.contains("Content-Length: 15\r\n"),
            "{reply}"
        );
        // Pipelined requests: the first is answered, the rest go with the connection.
        let two = get(address, b"GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n");
        assert_eq!(two.matches("HTTP/1.1 200").count(), 1, "{two}");
        for garbage in [&b"POST / HTTP/1.1\r\n\r\n"[..], b"\x00\xff\r\n\r\n", b"GET /\r\n\r\n"] {
            assert!(get(address, garbage).starts_with("HTTP/1.1 400 Bad Request"), "{garbage:?}");
        }
        let long = [b"GET /".as_slice(), &[b'a'; MAX_HEAD], b" HTTP/1.1\r\n\r\n"].concat();
        assert!(get(address, &long).starts_with("HTTP/1.1 431"));
        closed.store(true, Ordering::SeqCst);
        serving.join().unwrap();
    }

    #[test]
    fn a_client_that_never_finishes_its_request_is_dropped_and_holds_nothing_up() {
        let closed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (address, serving) = start(closed.clone());
        let mut slow = TcpStream::connect(address).unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\n").unwrap();
        // Served meanwhile.
        assert!(get(address, b"GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
        let started = Instant::now();
        let mut rest = Vec::new();
        slow.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let _ = slow.read_to_end(&mut rest);
        assert!(rest.is_empty() && started.elapsed() < READ_WITHIN + Duration::from_secs(2));
        closed.store(true, Ordering::SeqCst);
        serving.join().unwrap();
    }

    #[test]
    fn past_the_requests_answered_at_once_a_newcomer_is_told_busy_and_served_after() {
        let (closed, released) = (flag(false), flag(false));
        let (address, serving) = start_holding(closed.clone(), released.clone());
        let held: Vec<TcpStream> = (0..MAX_ANSWERING)
            .map(|_| {
                let mut c = TcpStream::connect(address).unwrap();
                c.write_all(b"GET /hold HTTP/1.1\r\n\r\n").unwrap();
                c
            })
            .collect();
        let started = Instant::now();
        let busy = loop {
            let reply = get(address, b"GET /x HTTP/1.1\r\n\r\n");
            if reply.starts_with("HTTP/1.1 503") || started.elapsed() > Duration::from_secs(20) {
                break reply;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(
            busy.starts_with("HTTP/1.1 503 Service Unavailable") && busy.ends_with("busy; ask again\n"),
            "{busy}"
        );
        released.store(true, Ordering::SeqCst);
        for mut c in held {
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut reply = String::new();
            c.read_to_string(&mut reply).unwrap();
            assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        }
        assert!(get(address, b"GET /x HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
        closed.store(true, Ordering::SeqCst);
        serving.join().unwrap();
    }

    #[test]
    fn past_the_connections_waited_on_the_oldest_is_dropped_for_a_newcomer() {
        let closed = flag(false);
        let (address, serving) = start(closed.clone());
        let unfinished = |_| {
            let mut c = TcpStream::connect(address).unwrap();
            c.write_all(b"GET / HTTP/1.1\r\n").unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c
        };
        let oldest_since = Instant::now();
        let mut oldest = unfinished(0);
        let rest: Vec<TcpStream> = (1..MAX_PENDING).map(unfinished).collect();
        std::thread::sleep(Duration::from_millis(200));
        let newest = get(address, b"GET /x HTTP/1.1\r\n\r\n");
        assert!(newest.starts_with("HTTP/1.1 200"), "{newest}");
        // Closed unanswered, and before its own deadline would have closed it.
        assert_eq!(oldest.read_to_end(&mut Vec::new()).unwrap_or(0), 0);
        assert!(oldest_since.elapsed() < READ_WITHIN, "dropped after {:?}", oldest_since.elapsed());
        drop(rest);
        closed.store(true, Ordering::SeqCst);
        serving.join().unwrap();
    }
}
