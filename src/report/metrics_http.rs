//! The HTTP side of `--metrics`: serves one page (`GET /metrics`) so that
//! no client, idle, slow or hostile, can delay another client's scrape.
//!
//! Promises, all on one thread of its own (`tqfwd-metrics`, never an
//! lcore's):
//! - every connection is served concurrently: a client that connects and
//!   sends nothing, or trickles its request, holds only its own
//!   connection;
//! - at most [`Limits::max_connections`] are open: the next one accepted
//!   closes the oldest (most likely an idle one; a client whose connection
//!   was closed that way reconnects);
//! - a request head must arrive within [`Limits::head_deadline`] of the
//!   connection's start or of the previous answer (then the connection
//!   closes), and may be at most [`Limits::max_head`] bytes: a larger one
//!   is answered `431 Request Header Fields Too Large` and closed;
//! - HTTP/1.1 keep-alive as Prometheus uses it: several scrapes on one
//!   connection, `Connection: close` honoured;
//! - `GET` and `HEAD` of `/metrics` only (404 for another path, 405 for
//!   another method); the page is rendered per request by the caller's
//!   function, on this thread;
//! - out of file descriptors, the accept loop closes the oldest
//!   connection and goes on; stopping ([`HttpServer`]'s drop) closes
//!   every connection and joins the thread.
//!
//! Why hyper on a one-thread tokio runtime: the hand-written server it
//! replaces answered one connection at a time, so one idle client stalled
//! every scrape behind it (> 20 s with 200 idle connections). hyper
//! (maintained, the HTTP stack under most Rust servers) brings a correct
//! HTTP/1.1 parser, keep-alive, the head deadline and the head size limit
//! with its 431; tokio multiplexes every connection on this one thread
//! (epoll), so connections cost a small task each and no thread. tiny_http
//! was the lighter candidate and was read first: it starts a thread per
//! connection without bound, has no read deadline, reads a header line
//! without a size limit, and its accept thread exits for good on the first
//! accept error (out of file descriptors), which is the stall this module
//! exists to remove. The cost: a longer clean build and 0.8 MB of
//! stripped binary (2.8 to 3.6 MB); the datapath never calls into it.

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;

/// What one client may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once; one more closes the oldest.
    pub max_connections: usize,
    /// Time for a request head to arrive (from the connection's start or
    /// the previous answer): also how long an idle keep-alive connection
    /// stays open.
    pub head_deadline: Duration,
    /// Bytes of a request head (request line and headers); at least 8192
    /// (hyper's least buffer).
    pub max_head: usize,
}

impl Default for Limits {
    /// 256 connections, 20 s for a head (longer than the 15 s scrape
    /// interval most Prometheus setups use, so their keep-alive
    /// connection is reused), 16 KiB heads (Prometheus sends ~300 bytes).
    fn default() -> Self {
        Limits {
            max_connections: 256,
            head_deadline: Duration::from_secs(20),
            max_head: 16 * 1024,
        }
    }
}

/// The page: its content type and a function that renders its body
/// (`Err` is answered 500 with the text).
pub struct Page {
    pub path: &'static str,
    pub content_type: &'static str,
    pub render: Box<dyn Fn() -> Result<String, String> + Send + Sync>,
}

/// The running server: dropping it stops the accept loop, closes every
/// connection and joins the thread.
pub struct HttpServer {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves `page` on `listener` (bound and non-blocking) on the thread
/// `thread_name` until the returned server is dropped; `page` is dropped
/// on that thread before it ends.
pub fn serve(
    listener: std::net::TcpListener,
    limits: Limits,
    page: Page,
    thread_name: &str,
) -> std::io::Result<HttpServer> {
    listener.set_nonblocking(true)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()?;
    let (stop, stopped) = oneshot::channel();
    let page = Arc::new(page);
    let thread = std::thread::Builder::new()
        .name(thread_name.into())
        .spawn(move || {
            runtime.block_on(async move {
                // tokio leaves `net` out under `--cfg loom` (the queue's
                // model checks, scripts/loom.sh): no server there.
                #[cfg(not(loom))]
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(l) => accept_loop(l, limits, page, stopped).await,
                    Err(e) => log::warn!("metrics: cannot serve: {e}"),
                };
                #[cfg(loom)]
                drop((listener, limits, page, stopped));
            });
            // Dropping the runtime drops every connection's task (and its
            // hold on the page) here, before the join returns.
            drop(runtime);
        })?;
    Ok(HttpServer {
        stop: Some(stop),
        thread: Some(thread),
    })
}

#[cfg(not(loom))]
async fn accept_loop(
    listener: tokio::net::TcpListener,
    limits: Limits,
    page: Arc<Page>,
    mut stopped: oneshot::Receiver<()>,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.head_deadline)
        .max_buf_size(limits.max_head.max(8192))
        // `Content-Type`, as the server before this one wrote it: clients
        // that match header names by case keep working.
        .title_case_headers(true)
        .keep_alive(true);
    // Open connections, oldest first.
    let mut open: VecDeque<AbortHandle> = VecDeque::new();
    let mut warned = false;
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            a = listener.accept() => a,
        };
        open.retain(|c| !c.is_finished());
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: make room, go on.
                if !warned {
                    log::warn!("metrics: accept: {e}; closing the oldest connection");
                    warned = true;
                }
                if let Some(c) = open.pop_front() {
                    c.abort();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        while open.len() >= limits.max_connections.max(1) {
            if let Some(c) = open.pop_front() {
                c.abort();
            }
        }
        let _ = stream.set_nodelay(true);
        let page = page.clone();
        let conn = http.serve_connection(
            TokioIo::new(stream),
            hyper::service::service_fn(move |req| {
                std::future::ready(Ok::<_, Infallible>(answer(&req, &page)))
            }),
        );
        let task = tokio::spawn(async move {
            if let Err(e) = conn.await {
                log::debug!("metrics: {peer}: {e}");
            }
        });
        open.push_back(task.abort_handle());
    }
}

fn text(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The answer to one request (hyper leaves the body out for `HEAD`).
fn answer(req: &Request<Incoming>, page: &Page) -> Response<Full<Bytes>> {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = text(
            StatusCode::METHOD_NOT_ALLOWED,
            &format!("only GET {}\n", page.path),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    if req.uri().path() != page.path {
        return text(
            StatusCode::NOT_FOUND,
            &format!("tqfwd serves {}\n", page.path),
        );
    }
    match (page.render)() {
        Ok(body) => {
            let mut r = Response::new(Full::new(Bytes::from(body)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(page.content_type));
            r
        }
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e}\n")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{ErrorKind, Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::time::Instant;

    fn start(limits: Limits) -> (HttpServer, SocketAddr) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let page = Page {
            path: "/metrics",
            content_type: "text/plain; version=0.0.4",
            render: Box::new(|| Ok("up 1\n".to_string())),
        };
        (serve(l, limits, page, "test-http").unwrap(), addr)
    }

    /// Reads one response (head and a Content-Length body) off `s`.
    fn response(s: &mut TcpStream) -> (String, String) {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            assert_eq!(s.read(&mut byte).unwrap(), 1, "closed mid-head: {buf:?}");
            buf.push(byte[0]);
        }
        let head = String::from_utf8(buf).unwrap();
        let len: usize = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(|v| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).unwrap();
        (head, String::from_utf8(body).unwrap())
    }

    /// True when the server closed `s` within `within`.
    fn closed_within(s: &mut TcpStream, within: Duration) -> bool {
        s.set_read_timeout(Some(within)).unwrap();
        let mut sink = Vec::new();
        match s.read_to_end(&mut sink) {
            Ok(_) => true,
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        }
    }

    #[test]
    fn keep_alive_methods_and_paths() {
        let (_srv, addr) = start(Limits::default());
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        for _ in 0..3 {
            write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
            let (head, body) = response(&mut s);
            assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
            assert!(
                head.contains("Content-Type: text/plain; version=0.0.4"),
                "{head}"
            );
            assert_eq!(body, "up 1\n");
        }
        write!(s, "HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            s.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 200 OK"));
        write!(
            s,
            "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        let (head, _) = response(&mut s);
        assert!(
            head.starts_with("HTTP/1.1 405") && head.contains("Allow: GET, HEAD"),
            "{head}"
        );
        write!(
            s,
            "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let (head, _) = response(&mut s);
        assert!(head.starts_with("HTTP/1.1 404"), "{head}");
        assert!(
            closed_within(&mut s, Duration::from_secs(2)),
            "Connection: close honoured"
        );
    }

    #[test]
    fn oversized_head_gets_431_and_a_close() {
        let (_srv, addr) = start(Limits::default());
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut head = b"GET /metrics HTTP/1.1\r\nX-Pad: ".to_vec();
        head.resize(64 * 1024, b'a');
        // The server may close before all of it is written.
        let _ = s.write_all(&head);
        let mut got = String::new();
        let _ = s.read_to_string(&mut got);
        assert!(got.starts_with("HTTP/1.1 431"), "{got:?}");
    }

    #[test]
    fn idle_connections_close_at_the_head_deadline() {
        let (_srv, addr) = start(Limits {
            head_deadline: Duration::from_millis(300),
            ..Limits::default()
        });
        let t = Instant::now();
        let mut idle = TcpStream::connect(addr).unwrap();
        assert!(closed_within(&mut idle, Duration::from_secs(5)));
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(3),
            "{took:?}"
        );
    }

    #[test]
    fn the_cap_closes_the_oldest_and_scrapes_go_on() {
        let (_srv, addr) = start(Limits {
            max_connections: 4,
            ..Limits::default()
        });
        let mut idle: Vec<TcpStream> = (0..6).map(|_| TcpStream::connect(addr).unwrap()).collect();
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let t = Instant::now();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let (head, _) = response(&mut s);
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(t.elapsed() < Duration::from_secs(1));
        // 7 accepted under a cap of 4: the 3 oldest were closed.
        for (i, c) in idle.iter_mut().enumerate() {
            let closed = closed_within(c, Duration::from_millis(if i < 3 { 2000 } else { 100 }));
            assert_eq!(closed, i < 3, "connection {i}");
        }
    }

    #[test]
    fn stop_closes_connections_and_joins() {
        let (srv, addr) = start(Limits::default());
        let mut idle = TcpStream::connect(addr).unwrap();
        // Let the server accept it.
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        response(&mut s);
        let t = Instant::now();
        drop(srv);
        assert!(t.elapsed() < Duration::from_secs(1));
        assert!(closed_within(&mut idle, Duration::from_secs(1)));
        assert!(TcpStream::connect(addr).is_err(), "the listener is closed");
    }
}
