//! The connection wrapper of the embedded server: it fails writes that wait longer than the write
//! deadline (a client that stopped reading), and on HTTP/1.1 it reads along with hyper to find
//! request heads that carry both `Content-Length` and `Transfer-Encoding` (hyper drops one of the
//! two before the request reaches us, so the raw head is the only place to see it). Heads are
//! counted in order; `serve_one` asks whether the n-th request of its connection was such a head.

use std::collections::BTreeSet;
use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Heads longer than this are left to hyper (which refuses them).
const MAX_HEAD: usize = 64 * 1024;

/// What the watcher learned about a connection's requests, shared with the request handler.
#[derive(Debug, Default)]
pub struct Framing {
    /// Indices (0-based, in arrival order) of request heads with both length headers.
    smuggling: Mutex<BTreeSet<u64>>,
    /// Requests the handler has seen on this connection.
    served: Mutex<u64>,
}

impl Framing {
    /// Called once per request, in order: whether this request's head carried both headers.
    pub fn next_request_has_both_lengths(&self) -> bool {
        let mut served = self.served.lock();
        let index = *served;
        *served += 1;
        self.smuggling.lock().remove(&index)
    }
}

enum State {
    /// Collecting a request head.
    Head(Vec<u8>),
    /// Skipping `n` more body bytes.
    Body(u64),
    /// Inside a chunked body: the line buffer of the next chunk-size or trailer line.
    ChunkLine { line: Vec<u8>, trailers: bool },
    /// Skipping chunk data (`n` bytes, then CRLF).
    ChunkData(u64),
    /// Something this watcher does not follow (hyper judges it): stop watching.
    Lost,
}

/// Follows the request byte stream the way HTTP/1.1 frames it.
struct Watch {
    state: State,
    heads: u64,
    framing: Arc<Framing>,
}

impl Watch {
    fn feed(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            match &mut self.state {
                State::Lost => return,
                State::Head(buf) => {
                    let start = buf.len().saturating_sub(3);
                    buf.extend_from_slice(data);
                    let Some(end) = find(&buf[start..], b"\r\n\r\n").map(|i| start + i + 4) else {
                        if buf.len() > MAX_HEAD {
                            self.state = State::Lost;
                        }
                        return;
                    };
                    let rest = buf.split_off(end);
                    let head = std::mem::take(buf);
                    self.state = self.after_head(&head);
                    // Re-feed what followed the head (kept in `rest`).
                    self.feed(&rest);
                    return;
                }
                State::Body(n) => {
                    let take = (*n).min(data.len() as u64);
                    *n -= take;
                    data = &data[take as usize..];
                    if *n == 0 {
                        self.state = State::Head(Vec::new());
                    }
                }
                State::ChunkData(n) => {
                    let take = (*n).min(data.len() as u64);
                    *n -= take;
                    data = &data[take as usize..];
                    if *n == 0 {
                        self.state = State::ChunkLine { line: Vec::new(), trailers: false };
                        // The CRLF after the data arrives as an empty line, skipped below.
                    }
                }
                State::ChunkLine { line, trailers } => {
                    let Some(i) = data.iter().position(|b| *b == b'\n') else {
                        line.extend_from_slice(data);
                        if line.len() > MAX_HEAD {
                            self.state = State::Lost;
                        }
                        return;
                    };
                    line.extend_from_slice(&data[..i]);
                    data = &data[i + 1..];
                    let text = String::from_utf8_lossy(line).trim().to_string();
                    let trailers = *trailers;
                    self.state = if trailers {
                        if text.is_empty() {
                            State::Head(Vec::new())
                        } else {
                            State::ChunkLine { line: Vec::new(), trailers: true }
                        }
                    } else if text.is_empty() {
                        State::ChunkLine { line: Vec::new(), trailers: false }
                    } else {
                        let size = text.split(';').next().unwrap_or_default().trim();
                        match u64::from_str_radix(size, 16) {
                            Ok(0) => State::ChunkLine { line: Vec::new(), trailers: true },
                            Ok(n) => State::ChunkData(n),
                            Err(_) => State::Lost,
                        }
                    };
                }
            }
        }
    }

    /// Flags the head if it has both length headers, and says how its body is framed.
    fn after_head(&mut self, head: &[u8]) -> State {
        let index = self.heads;
        self.heads += 1;
        let mut headers = [httparse::EMPTY_HEADER; 128];
        let mut req = httparse::Request::new(&mut headers);
        if !matches!(req.parse(head), Ok(httparse::Status::Complete(_))) {
            return State::Lost;
        }
        let find_all = |name: &str| req.headers.iter().filter(|h| h.name.eq_ignore_ascii_case(name)).count();
        let (cl, te) = (find_all("content-length"), find_all("transfer-encoding"));
        if cl > 0 && te > 0 {
            self.framing.smuggling.lock().insert(index);
            // hyper answers it and closes the connection; nothing after it is read.
            return State::Lost;
        }
        if te > 0 {
            return State::ChunkLine { line: Vec::new(), trailers: false };
        }
        let length = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse::<u64>().ok());
        match length {
            Some(n) if n > 0 => State::Body(n),
            _ => State::Head(Vec::new()),
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The server's view of one client connection.
pub struct Guarded<T> {
    inner: T,
    write_timeout: Duration,
    waiting: Option<Pin<Box<tokio::time::Sleep>>>,
    /// HTTP/1.1 only (HTTP/2 frames its messages itself).
    watch: Option<Watch>,
}

impl<T> Guarded<T> {
    /// An HTTP/1.1 connection: write deadline and framing watch.
    pub fn new(inner: T, write_timeout: Duration) -> (Self, Arc<Framing>) {
        let framing = Arc::new(Framing::default());
        let watch = Watch { state: State::Head(Vec::new()), heads: 0, framing: framing.clone() };
        (Self { inner, write_timeout, waiting: None, watch: Some(watch) }, framing)
    }

    /// An HTTP/2 connection: the write deadline only.
    pub fn plain(inner: T, write_timeout: Duration) -> Self {
        Self { inner, write_timeout, waiting: None, watch: None }
    }

    fn pending<R>(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<R>> {
        let timeout = self.write_timeout;
        let sleep = self.waiting.get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match sleep.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client did not read its response in time",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Guarded<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            let Self { watch, .. } = &mut *self;
            if let Some(watch) = watch {
                watch.feed(&buf.filled()[before..]);
            }
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Guarded<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write(cx, buf) {
            Poll::Pending => self.pending(cx),
            done => {
                self.waiting = None;
                done
            }
        }
    }

    /// Vectored writes go through as such: without them hyper flattens every response into its own
    /// buffer first (a copy of every large answer).
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match Pin::new(&mut self.inner).poll_write_vectored(cx, bufs) {
            Poll::Pending => self.pending(cx),
            done => {
                self.waiting = None;
                done
            }
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match Pin::new(&mut self.inner).poll_flush(cx) {
            Poll::Pending => self.pending(cx),
            done => {
                self.waiting = None;
                done
            }
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch() -> (Watch, Arc<Framing>) {
        let framing = Arc::new(Framing::default());
        (Watch { state: State::Head(Vec::new()), heads: 0, framing: framing.clone() }, framing)
    }

    #[test]
    fn follows_pipelined_requests_and_flags_the_one_with_both_lengths() {
        let (mut w, framing) = watch();
        let stream = b"POST / HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello\
POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n\
GET /x HTTP/1.1\r\nHost: y\r\n\r\n\
POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        // Byte by byte, as a slow client would send it.
        for b in stream.iter() {
            w.feed(&[*b]);
        }
        assert!(!framing.next_request_has_both_lengths());
        assert!(!framing.next_request_has_both_lengths());
        assert!(!framing.next_request_has_both_lengths());
        assert!(framing.next_request_has_both_lengths());
    }

    #[test]
    fn a_body_that_looks_like_a_head_is_skipped() {
        let (mut w, framing) = watch();
        let body = b"X\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n";
        let head = format!("POST / HTTP/1.1\r\nContent-Length: {}\r\n\r\n", body.len());
        w.feed(head.as_bytes());
        w.feed(body);
        w.feed(b"GET / HTTP/1.1\r\n\r\n");
        assert!(!framing.next_request_has_both_lengths());
        assert!(!framing.next_request_has_both_lengths());
    }
}
