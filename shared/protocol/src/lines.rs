//! [`LineBuffer`]: cuts a byte stream into `\n`-terminated lines as its chunks arrive, in time linear
//! in the bytes received. The NDJSON answers of agents over HTTP and every SSE stream
//! ([`crate::sse::SseDecoder`]) are read with it.
//!
//! Why it exists: a peer decides how its bytes are cut. Searching the whole unfinished line again
//! for each new chunk makes one large event sent in small chunks cost the square of its size (a
//! 15 MiB event in 8 KiB chunks was ~14 GB of scanning); here each byte is searched once, because
//! the search resumes where the previous one stopped.

use bytes::BytesMut;

/// Bytes waiting to become lines.
#[derive(Debug, Default)]
pub struct LineBuffer {
    buf: BytesMut,
    /// How much of `buf` is known to hold no `\n` (where the next search starts).
    searched: usize,
    /// Bytes searched since the start: the cost of splitting, which tests hold to the size of the
    /// input.
    work: u64,
}

impl LineBuffer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a chunk as received.
    pub fn extend(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete line, its `\n` (and any `\r` before it) included; `None` until one is.
    pub fn next_line(&mut self) -> Option<BytesMut> {
        let from = self.searched;
        let found = self.buf[from..].iter().position(|b| *b == b'\n');
        match found {
            Some(i) => {
                self.work += (i + 1) as u64;
                self.searched = 0;
                Some(self.buf.split_to(from + i + 1))
            }
            None => {
                self.work += (self.buf.len() - from) as u64;
                self.searched = self.buf.len();
                None
            }
        }
    }

    /// The unfinished line (what arrived after the last `\n`).
    pub fn pending(&self) -> &[u8] {
        &self.buf
    }

    /// Bytes searched for line ends so far (each received byte once).
    pub fn bytes_scanned(&self) -> u64 {
        self.work
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(buf: &mut LineBuffer) -> Vec<String> {
        std::iter::from_fn(|| buf.next_line()).map(|l| String::from_utf8(l.to_vec()).unwrap()).collect()
    }

    #[test]
    fn lines_whatever_the_cuts() {
        let text = "a\r\nbc\n\nd\r\n";
        for cut in 0..=text.len() {
            for second in cut..=text.len() {
                let mut buf = LineBuffer::new();
                let mut got = Vec::new();
                for piece in [&text[..cut], &text[cut..second], &text[second..]] {
                    buf.extend(piece.as_bytes());
                    got.extend(lines(&mut buf));
                }
                assert_eq!(got, ["a\r\n", "bc\n", "\n", "d\r\n"], "cuts at {cut} and {second}");
                assert!(buf.pending().is_empty());
            }
        }
    }

    #[test]
    fn a_large_line_in_small_chunks_is_scanned_once() {
        let size = 4 << 20;
        let mut buf = LineBuffer::new();
        let chunk = [b'x'; 1024];
        for fed in 1..=size / chunk.len() {
            buf.extend(&chunk);
            assert!(buf.next_line().is_none());
            assert_eq!(buf.bytes_scanned(), (fed * chunk.len()) as u64);
        }
        buf.extend(b"\nrest");
        assert_eq!(buf.next_line().map(|l| l.len()), Some(size + 1));
        assert!(buf.next_line().is_none());
        assert_eq!(buf.pending(), b"rest");
        // Each byte once (the rescanning version searched ~8 GB here).
        assert_eq!(buf.bytes_scanned(), (size + 1 + 4) as u64);
    }
}
