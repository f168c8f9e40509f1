//! One record of the write-ahead log: a batch of inserts into and removes
//! from the shared trees, numbered and checksummed; its on-disk format.

use crate::error::{Error, Result};

/// Bytes before a record's ops: length, checksum, sequence number, the
/// last record durable when it was sealed.
const HEADER: usize = 24;

/// The layout of the records of a segment, named in its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// `len | crc32 | lsn | ops`, written by hookd before storage layout 10.
    V1,
    /// `len | crc32 | lsn | synced | ops`.
    V2,
}

impl Format {
    /// Bytes before a record's ops.
    pub(super) fn header(self) -> usize {
        match self {
            Format::V1 => 16,
            Format::V2 => HEADER,
        }
    }
}

/// The longest record the log accepts back (a batch of the largest bodies
/// hookd takes is far below it): a longer length field is damage.
const MAX_RECORD: usize = 1 << 30;

/// The bit of an op's tree byte that makes it a remove.
const REMOVE: u8 = 0x80;

/// The bit of an op's tree byte that makes it a change to one record of
/// a queue entry.
const RECORDS: u8 = 0x40;

/// A batch of inserts and removes being built, in its on-disk form.
///
/// On disk a record is `len: u32 | crc32: u32 | lsn: u64 | synced: u64 |
/// ops`, little endian, where `len` counts the bytes after the crc and the
/// crc covers the same bytes, and `synced` is the last record known durable
/// when this one was sealed: a whole record after a damaged one tells
/// recovery whether the damaged one had been synced (so acknowledged) or
/// was torn by the crash ([`super::recover`]). Format 1 had no `synced`,
/// and is still read. Each op is `tree: u8 | key_len: u32 | value_len: u32
/// | key | value`, a remove marked by [`REMOVE`] in the tree byte (and no
/// value). [`RECORDS`] in the tree byte makes an insert the records added
/// to a queue entry and a remove the id of the record taken out of one
/// ([`super::super::entry`]). A record is built in place ([`Batch`]), so
/// the buffer the committer fills is the one the log writes, and read back
/// by [`ops`] for the live apply and for the replay after a crash alike.
#[derive(Debug)]
pub struct Batch {
    buf: Vec<u8>,
}

impl Default for Batch {
    fn default() -> Self {
        Batch {
            buf: vec![0; HEADER],
        }
    }
}

impl Batch {
    /// Records an insert of `value` under `key` into shared tree `tree`.
    pub fn insert(&mut self, tree: u8, key: &[u8], value: &[u8]) {
        debug_assert!(tree & REMOVE == 0, "tree {tree} out of range");
        self.push(tree, key, value);
    }

    /// Records a remove of `key` from shared tree `tree`.
    pub fn remove(&mut self, tree: u8, key: &[u8]) {
        debug_assert!(tree & REMOVE == 0, "tree {tree} out of range");
        self.push(tree | REMOVE, key, &[]);
    }

    /// Records `records` added to the queue entry `key` of shared tree `tree`.
    pub fn add_records(&mut self, tree: u8, key: &[u8], records: &[u8]) {
        debug_assert!(tree & (REMOVE | RECORDS) == 0, "tree {tree} out of range");
        self.push(tree | RECORDS, key, records);
    }

    /// Records the record of delivery `id` taken out of the queue entry
    /// `key` of shared tree `tree`.
    pub fn take_record(&mut self, tree: u8, key: &[u8], id: &[u8]) {
        debug_assert!(tree & (REMOVE | RECORDS) == 0, "tree {tree} out of range");
        self.push(tree | REMOVE | RECORDS, key, id);
    }

    fn push(&mut self, tree: u8, key: &[u8], value: &[u8]) {
        self.buf.reserve(9 + key.len() + value.len());
        self.buf.push(tree);
        self.buf.extend_from_slice(&len32(key).to_le_bytes());
        self.buf.extend_from_slice(&len32(value).to_le_bytes());
        self.buf.extend_from_slice(key);
        self.buf.extend_from_slice(value);
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.buf.len() == HEADER
    }

    /// Numbers the batch `lsn` and seals it: the bytes to append. `synced`
    /// is the last record durable now (every one numbered up to it is on
    /// disk, in the log or in sled).
    pub fn seal(mut self, lsn: u64, synced: u64) -> Sealed {
        self.buf[8..16].copy_from_slice(&lsn.to_le_bytes());
        self.buf[16..24].copy_from_slice(&synced.to_le_bytes());
        let len = len32(&self.buf[8..]);
        let crc = crc32fast::hash(&self.buf[8..]);
        self.buf[0..4].copy_from_slice(&len.to_le_bytes());
        self.buf[4..8].copy_from_slice(&crc.to_le_bytes());
        Sealed { lsn, buf: self.buf }
    }
}

fn len32(bytes: &[u8]) -> u32 {
    u32::try_from(bytes.len()).expect("a key, value or record under 4 GiB")
}

/// A numbered, checksummed record, ready to append.
#[derive(Debug)]
pub struct Sealed {
    lsn: u64,
    buf: Vec<u8>,
}

impl Sealed {
    /// Its sequence number.
    pub fn lsn(&self) -> u64 {
        self.lsn
    }

    /// The whole record, as written.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// What reading a record at the start of `bytes` found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Read<'a> {
    /// A whole record: its number, the last record durable when it was
    /// sealed (format 2), its ops and its length on disk.
    Record {
        lsn: u64,
        synced: Option<u64>,
        ops: &'a [u8],
        len: usize,
    },
    /// No record starts here: the end of what was written (zeros or nothing).
    End,
    /// A record cut short or whose checksum fails: a write the crash tore.
    Torn,
}

/// Reads the record of `format` at the start of `bytes`.
pub(super) fn read(bytes: &[u8], format: Format) -> Read<'_> {
    if bytes.len() < 8 || bytes[..8] == [0; 8] {
        return Read::End;
    }
    let len = u32::from_le_bytes(bytes[0..4].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    if !(format.header() - 8..=MAX_RECORD).contains(&len) || bytes.len() < 8 + len {
        return Read::Torn;
    }
    let body = &bytes[8..8 + len];
    if crc32fast::hash(body) != crc {
        return Read::Torn;
    }
    let word = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().expect("8 bytes"));
    Read::Record {
        lsn: word(0),
        synced: (format == Format::V2).then(|| word(8)),
        ops: &body[format.header() - 8..],
        len: 8 + len,
    }
}

/// The number of the record that would start at `bytes` (of either
/// format), if it were whole: a cheap look before [`read`] checks its
/// checksum.
pub(super) fn number_at(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?))
}

/// One op of a record.
#[derive(Debug, PartialEq, Eq)]
pub enum Op<'a> {
    /// The tree's index, the key and the value.
    Insert(u8, &'a [u8], &'a [u8]),
    /// The tree's index and the key.
    Remove(u8, &'a [u8]),
    /// The tree's index, a queue entry's key and the records added to it.
    AddRecords(u8, &'a [u8], &'a [u8]),
    /// The tree's index, a queue entry's key and the id of the delivery
    /// whose record was taken out of it.
    TakeRecord(u8, &'a [u8], &'a [u8]),
}

/// The ops of a record, in the order they were recorded; an
/// error names ops that do not parse (a record whose checksum held was
/// written by a hookd that laid ops out otherwise).
pub fn ops(mut bytes: &[u8]) -> impl Iterator<Item = Result<Op<'_>>> {
    std::iter::from_fn(move || {
        if bytes.is_empty() {
            return None;
        }
        let parsed = split_op(bytes);
        match parsed {
            Some((op, rest)) => {
                bytes = rest;
                Some(Ok(op))
            }
            None => {
                bytes = &[];
                Some(Err(Error::storage(
                    "a write-ahead log record holds an op that does not parse".to_string(),
                    None,
                )))
            }
        }
    })
}

fn split_op(bytes: &[u8]) -> Option<(Op<'_>, &[u8])> {
    let (&tree, rest) = bytes.split_first()?;
    let key_len = u32::from_le_bytes(rest.get(0..4)?.try_into().ok()?) as usize;
    let value_len = u32::from_le_bytes(rest.get(4..8)?.try_into().ok()?) as usize;
    let rest = &rest[8..];
    let key = rest.get(..key_len)?;
    let value = rest.get(key_len..key_len + value_len)?;
    let index = tree & !(REMOVE | RECORDS);
    let op = match tree & (REMOVE | RECORDS) {
        0 => Op::Insert(index, key, value),
        REMOVE if value.is_empty() => Op::Remove(index, key),
        RECORDS => Op::AddRecords(index, key, value),
        flags if flags == REMOVE | RECORDS && !value.is_empty() => {
            Op::TakeRecord(index, key, value)
        }
        _ => return None,
    };
    Some((op, &rest[key_len + value_len..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed() -> Sealed {
        let mut batch = Batch::default();
        assert!(batch.is_empty());
        batch.insert(1, b"acme/dlv_1", b"event");
        batch.insert(0, b"acme/evt_1", b"");
        batch.remove(2, b"acme/q1");
        batch.add_records(2, b"acme/q2", b"dlv_2\n{}");
        batch.take_record(2, b"acme/q2", b"dlv_2");
        batch.seal(7, 5)
    }

    #[test]
    fn a_sealed_batch_reads_back_whole() {
        let sealed = sealed();
        let Read::Record {
            lsn,
            synced,
            ops: bytes,
            len,
        } = read(sealed.bytes(), Format::V2)
        else {
            panic!("a whole record");
        };
        assert_eq!((lsn, synced, len), (7, Some(5), sealed.bytes().len()));
        let ops: Vec<Op> = ops(bytes).collect::<Result<_>>().unwrap();
        assert_eq!(
            ops,
            vec![
                Op::Insert(1, &b"acme/dlv_1"[..], &b"event"[..]),
                Op::Insert(0, &b"acme/evt_1"[..], &b""[..]),
                Op::Remove(2, &b"acme/q1"[..]),
                Op::AddRecords(2, &b"acme/q2"[..], &b"dlv_2\n{}"[..]),
                Op::TakeRecord(2, &b"acme/q2"[..], &b"dlv_2"[..]),
            ]
        );
    }

    #[test]
    fn a_cut_or_flipped_record_is_torn_and_zeros_are_the_end() {
        let sealed = sealed();
        let bytes = sealed.bytes();
        for cut in [9, bytes.len() - 1] {
            assert_eq!(read(&bytes[..cut], Format::V2), Read::Torn, "cut at {cut}");
        }
        let mut flipped = bytes.to_vec();
        *flipped.last_mut().unwrap() ^= 1;
        assert_eq!(read(&flipped, Format::V2), Read::Torn);
        assert_eq!(read(&[0; 64], Format::V2), Read::End);
        assert_eq!(read(&[], Format::V2), Read::End);
    }

    /// A record of format 1 (no `synced`) reads back with its ops whole.
    #[test]
    fn a_format_1_record_reads_back() {
        let mut body = 9u64.to_le_bytes().to_vec();
        body.extend_from_slice(&[1, 1, 0, 0, 0, 1, 0, 0, 0, b'k', b'v']);
        let mut bytes = (body.len() as u32).to_le_bytes().to_vec();
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
        let Read::Record {
            lsn,
            synced,
            ops: found,
            len,
        } = read(&bytes, Format::V1)
        else {
            panic!("a whole record");
        };
        assert_eq!((lsn, synced, len), (9, None, bytes.len()));
        assert_eq!(
            ops(found).collect::<Result<Vec<_>>>().unwrap(),
            vec![Op::Insert(1, &b"k"[..], &b"v"[..])]
        );
    }

    #[test]
    fn ops_that_do_not_parse_are_an_error() {
        let broken = [1u8, 200, 0, 0, 0, 0, 0, 0, 0, b'k'];
        let first = ops(&broken).next().unwrap();
        assert!(first.is_err());
        let remove_with_a_value = [REMOVE | 1, 1, 0, 0, 0, 1, 0, 0, 0, b'k', b'v'];
        assert!(ops(&remove_with_a_value).next().unwrap().is_err());
        let take_of_no_id = [REMOVE | RECORDS | 1, 1, 0, 0, 0, 0, 0, 0, 0, b'k'];
        assert!(ops(&take_of_no_id).next().unwrap().is_err());
    }
}
