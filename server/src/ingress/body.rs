//! The body of one request, read into a buffer that grows with the bytes
//! that actually arrived, never with what `Content-Length` promised.

use actix_web::web::{Bytes, BytesMut};

/// The most reserved before any byte arrives, whatever `Content-Length`
/// promises; beyond it the buffer grows (doubling) with the bytes received.
const INITIAL_CAPACITY: usize = 8 * 1024;

/// Returned when the body would cross the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooLarge;

/// A body being read, bounded by `limit`.
pub struct BodyBuffer {
    bytes: BytesMut,
    limit: usize,
}

impl BodyBuffer {
    /// An empty buffer for a body of at most `limit` bytes; `declared` is
    /// the request's `Content-Length`, already checked against `limit`.
    pub fn new(declared: Option<usize>, limit: usize) -> Self {
        BodyBuffer {
            bytes: BytesMut::with_capacity(
                declared
                    .unwrap_or(INITIAL_CAPACITY)
                    .min(INITIAL_CAPACITY)
                    .min(limit),
            ),
            limit,
        }
    }

    /// Appends a chunk, or rejects it when the body would cross the limit.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), TooLarge> {
        if self.bytes.len() + chunk.len() > self.limit {
            return Err(TooLarge);
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// Bytes reserved so far.
    #[cfg(test)]
    pub fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// The whole body.
    pub fn finish(self) -> Bytes {
        self.bytes.freeze()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1024 * 1024;

    #[test]
    fn a_declared_mebibyte_with_ten_bytes_sent_reserves_little() {
        let mut body = BodyBuffer::new(Some(MIB), MIB);
        body.push(b"0123456789").unwrap();
        assert!(
            body.capacity() <= 16 * 1024,
            "{} bytes reserved for a 10-byte body",
            body.capacity()
        );
        assert_eq!(&body.finish()[..], b"0123456789");
    }

    #[test]
    fn grows_with_what_arrives_up_to_the_limit() {
        let mut body = BodyBuffer::new(None, 100_000);
        let chunk = [7u8; 10_000];
        for _ in 0..10 {
            body.push(&chunk).unwrap();
        }
        assert_eq!(body.push(b"x"), Err(TooLarge));
        let bytes = body.finish();
        assert_eq!(bytes.len(), 100_000);
        assert!(bytes.iter().all(|b| *b == 7));
    }
}
