//! Compressed request bodies (`Content-Encoding: gzip` or `deflate`), decoded
//! as their chunks arrive into a capped buffer.

use std::io::{self, Write};

use actix_web::{
    http::header::{HeaderMap, CONTENT_ENCODING},
    web::Bytes,
};
use flate2::write::{MultiGzDecoder, ZlibDecoder};

/// Decoded bytes a body may reach before the ratio is checked, so small
/// bodies that compress well (short JSON) are never refused for it.
const RATIO_FLOOR: usize = 64 * 1024;

/// Compressed bytes fed to the decoder at a time.
const RATIO_SLICE: usize = 1024;

/// A body's content coding, from its `Content-Encoding` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// No header, or `identity`.
    Identity,
    /// `gzip` (or `x-gzip`), one member or several (RFC 1952).
    Gzip,
    /// `deflate`: the zlib format (RFC 9110 section 8.4.1.2, RFC 1950).
    Deflate,
}

/// A `Content-Encoding` hookd does not decode, as sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub String);

impl Encoding {
    /// The coding's name as HTTP writes it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Identity => "identity",
            Encoding::Gzip => "gzip",
            Encoding::Deflate => "deflate",
        }
    }

    /// The coding `headers` declare; one coding on one line, or none.
    pub fn of(headers: &HeaderMap) -> Result<Encoding, Unsupported> {
        let mut values = headers.get_all(CONTENT_ENCODING);
        let value = match (values.next(), values.next()) {
            (None, _) => return Ok(Encoding::Identity),
            (Some(value), None) => value,
            (Some(_), Some(_)) => return Err(Unsupported("several Content-Encoding lines".into())),
        };
        let text = value
            .to_str()
            .map_err(|_| Unsupported("a value that is not text".into()))?
            .trim();
        match text.to_ascii_lowercase().as_str() {
            "" | "identity" => Ok(Encoding::Identity),
            "gzip" | "x-gzip" => Ok(Encoding::Gzip),
            "deflate" => Ok(Encoding::Deflate),
            _ => Err(Unsupported(text.to_owned())),
        }
    }
}

/// Why a compressed body was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Decoded, it is larger than the tenant's limit.
    TooLarge,
    /// It decodes to more than the allowed ratio of its compressed size.
    Ratio,
    /// It is not a complete, valid stream of its coding.
    Invalid(String),
}

/// Size of each piece the decoded bytes are kept in.
const PIECE: usize = 256 * 1024;

/// The decoded bytes, refusing any that would cross a cap. They are kept in
/// pieces of [`PIECE`] bytes rather than one buffer that doubles: a
/// doubling buffer reallocated up to the limit touches about twice the limit
/// (each old buffer and the new one), pieces touch the limit alone.
struct Capped {
    pieces: Vec<Vec<u8>>,
    len: usize,
    limit: usize,
    max_ratio: u64,
    /// Compressed bytes received so far.
    wire: usize,
    refused: Option<DecodeError>,
}

impl Capped {
    /// The pieces as one body.
    fn joined(mut self) -> Bytes {
        if self.pieces.len() == 1 {
            return Bytes::from(self.pieces.pop().unwrap_or_default());
        }
        let mut body = Vec::with_capacity(self.len);
        for piece in self.pieces {
            body.extend_from_slice(&piece);
        }
        Bytes::from(body)
    }
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let len = self.len + buf.len();
        let refusal = if len > self.limit {
            Some(DecodeError::TooLarge)
        } else if len > RATIO_FLOOR && len as u64 > self.max_ratio.saturating_mul(self.wire as u64)
        {
            Some(DecodeError::Ratio)
        } else {
            None
        };
        if let Some(refusal) = refusal {
            self.refused = Some(refusal);
            return Err(io::Error::other("a decoding cap was reached"));
        }
        let mut rest = buf;
        while !rest.is_empty() {
            let piece = match self.pieces.last_mut() {
                Some(piece) if piece.len() < PIECE => piece,
                _ => {
                    self.pieces.push(Vec::with_capacity(PIECE));
                    self.pieces.last_mut().expect("a piece was just pushed")
                }
            };
            let taken = rest.len().min(PIECE - piece.len());
            piece.extend_from_slice(&rest[..taken]);
            rest = &rest[taken..];
        }
        self.len = len;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

enum Decoder {
    Gzip(MultiGzDecoder<Capped>),
    Zlib(ZlibDecoder<Capped>),
}

/// A compressed body being decoded, chunk by chunk.
///
/// Compressed request bodies (`Content-Encoding: gzip` or `deflate`):
/// decoded as their chunks arrive into a buffer capped at the tenant's body
/// limit and at `limits.max_decompression_ratio` times the bytes received,
/// so a bomb costs hookd at most the limit in memory, never its full size.
pub struct Inflater {
    decoder: Decoder,
    wire: usize,
}

impl Inflater {
    /// A decoder for `encoding` (none for identity) whose output may reach
    /// `limit` bytes and `max_ratio` times the compressed bytes received.
    pub fn new(encoding: Encoding, limit: usize, max_ratio: u64) -> Option<Inflater> {
        let sink = Capped {
            pieces: Vec::new(),
            len: 0,
            limit,
            max_ratio,
            wire: 0,
            refused: None,
        };
        let decoder = match encoding {
            Encoding::Identity => return None,
            Encoding::Gzip => Decoder::Gzip(MultiGzDecoder::new(sink)),
            Encoding::Deflate => Decoder::Zlib(ZlibDecoder::new(sink)),
        };
        Some(Inflater { decoder, wire: 0 })
    }

    fn sink(&mut self) -> &mut Capped {
        match &mut self.decoder {
            Decoder::Gzip(d) => d.get_mut(),
            Decoder::Zlib(d) => d.get_mut(),
        }
    }

    /// Decodes the next compressed chunk, a slice at a time, so the ratio
    /// is held to the bytes decoded so far, not to a whole chunk.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        for slice in chunk.chunks(RATIO_SLICE) {
            self.wire += slice.len();
            self.sink().wire = self.wire;
            let written = match &mut self.decoder {
                Decoder::Gzip(d) => d.write_all(slice),
                Decoder::Zlib(d) => d.write_all(slice),
            };
            written.map_err(|e| self.refusal(e))?;
        }
        Ok(())
    }

    /// The whole decoded body, once the stream ended where it should.
    pub fn finish(mut self) -> Result<Bytes, DecodeError> {
        let ended = match &mut self.decoder {
            Decoder::Gzip(d) => d.try_finish(),
            Decoder::Zlib(d) => d.try_finish().and_then(|()| {
                if zlib_ended(d) {
                    Ok(())
                } else {
                    Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the stream ends before its end marker",
                    ))
                }
            }),
        };
        ended.map_err(|e| self.refusal(e))?;
        let sink = match self.decoder {
            Decoder::Gzip(d) => d.finish(),
            Decoder::Zlib(d) => d.finish(),
        };
        sink.map(Capped::joined)
            .map_err(|e| DecodeError::Invalid(e.to_string()))
    }

    fn refusal(&mut self, error: io::Error) -> DecodeError {
        self.sink()
            .refused
            .take()
            .unwrap_or_else(|| DecodeError::Invalid(error.to_string()))
    }
}

/// Whether a zlib stream reached its end marker: past it, the decoder
/// takes no more input (before it, it takes the probe byte or fails).
fn zlib_ended(decoder: &mut ZlibDecoder<Capped>) -> bool {
    decoder.write(&[0]).is_ok_and(|taken| taken == 0)
}

#[cfg(test)]
mod tests {
    use flate2::{
        write::{GzEncoder, ZlibEncoder},
        Compression,
    };

    use super::*;

    const MIB: usize = 1024 * 1024;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    /// Decodes `wire` fed in chunks of `chunk` bytes.
    fn decode(
        encoding: Encoding,
        wire: &[u8],
        chunk: usize,
        limit: usize,
    ) -> Result<Bytes, DecodeError> {
        let mut inflater = Inflater::new(encoding, limit, 100).unwrap();
        for part in wire.chunks(chunk) {
            inflater.push(part)?;
        }
        inflater.finish()
    }

    #[test]
    fn decodes_gzip_members_and_zlib_in_any_chunking() {
        let body = br#"{"event_id":"e1","type":"t"}"#;
        for chunk in [1, 7, 4096] {
            assert_eq!(
                decode(Encoding::Gzip, &gzip(body), chunk, MIB).unwrap(),
                &body[..]
            );
            assert_eq!(
                decode(Encoding::Deflate, &zlib(body), chunk, MIB).unwrap(),
                &body[..]
            );
            let two = [gzip(b"ab"), gzip(b"cd")].concat();
            assert_eq!(
                decode(Encoding::Gzip, &two, chunk, MIB).unwrap(),
                &b"abcd"[..]
            );
        }
    }

    #[test]
    fn truncated_corrupt_or_trailing_streams_are_invalid() {
        let body = br#"{"event_id":"e1","type":"t"}"#;
        for (encoding, wire) in [
            (Encoding::Gzip, gzip(body)),
            (Encoding::Deflate, zlib(body)),
        ] {
            for cut in [1, 4, wire.len() / 2] {
                let result = decode(encoding, &wire[..wire.len() - cut], 5, MIB);
                assert!(
                    matches!(result, Err(DecodeError::Invalid(_))),
                    "{encoding:?} -{cut}: {result:?}"
                );
            }
            let trailing = [wire.as_slice(), b"junk"].concat();
            let result = decode(encoding, &trailing, 5, MIB);
            assert!(
                matches!(result, Err(DecodeError::Invalid(_))),
                "{encoding:?}: {result:?}"
            );
            let result = decode(encoding, body, 5, MIB);
            assert!(
                matches!(result, Err(DecodeError::Invalid(_))),
                "{encoding:?}: {result:?}"
            );
        }
    }

    #[test]
    fn caps_hold_while_decoding() {
        let zeros = gzip(&vec![0; 8 * MIB]);
        assert_eq!(
            decode(Encoding::Gzip, &zeros, 16 * 1024, 64 * MIB),
            Err(DecodeError::Ratio)
        );
        let mut inflater = Inflater::new(Encoding::Gzip, 64 * MIB, 100).unwrap();
        assert_eq!(inflater.push(&zeros), Err(DecodeError::Ratio));
        assert!(
            inflater.sink().len <= 100 * zeros.len(),
            "decoding stopped at the cap"
        );
        let noise: Vec<u8> = (0..100_000u32).flat_map(|n| n.to_le_bytes()).collect();
        let wire = gzip(&noise);
        assert_eq!(
            decode(Encoding::Gzip, &wire, 4096, 300_000),
            Err(DecodeError::TooLarge)
        );
        assert_eq!(
            decode(Encoding::Gzip, &wire, 4096, 400_000).unwrap().len(),
            400_000
        );
        let small = gzip(&vec![b' '; 60 * 1024]);
        assert_eq!(
            decode(Encoding::Gzip, &small, 4096, MIB).unwrap().len(),
            60 * 1024
        );
    }

    #[test]
    fn reads_the_header() {
        let of = |values: &[&str]| {
            let mut headers = HeaderMap::new();
            for value in values {
                headers.append(CONTENT_ENCODING, value.parse().unwrap());
            }
            Encoding::of(&headers)
        };
        assert_eq!(of(&[]), Ok(Encoding::Identity));
        assert_eq!(of(&["identity"]), Ok(Encoding::Identity));
        assert_eq!(of(&["GZIP"]), Ok(Encoding::Gzip));
        assert_eq!(of(&["x-gzip"]), Ok(Encoding::Gzip));
        assert_eq!(of(&["deflate"]), Ok(Encoding::Deflate));
        assert_eq!(of(&["br"]), Err(Unsupported("br".into())));
        assert_eq!(of(&["gzip, gzip"]), Err(Unsupported("gzip, gzip".into())));
        assert!(of(&["gzip", "gzip"]).is_err());
    }
}
