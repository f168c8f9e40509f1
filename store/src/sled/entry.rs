//! A queue entry's bytes: one delivery's id, or the records of one or more
//! deliveries filed as receipts.

/// Between two records of one entry: JSON escapes every control
/// character and ids are ASCII, so no record holds it.
pub(super) const SEPARATOR: u8 = 0x1e;

/// The records of an entry, in the order they were filed.
///
/// An entry names one delivery by its id (a retry, a pulled delivery hidden
/// for a while, a redelivery), or holds the records of one or more
/// deliveries filed as receipts ([`super::deliveries::receipt`]): each
/// record is a delivery id, a newline and what its state holds, and records
/// are separated by [`SEPARATOR`]. Deliveries whose ids share a place
/// ([`crate::ids::DeliveryId::sharing`]) and are written in one batch are
/// one entry, one insert for them all; one written later is added to it,
/// and each is taken out of it alone. The write-ahead log records those two
/// changes as what they add and take ([`super::wal::record::Op`]), so a
/// replay never overwrites a record another change took or left.
pub(super) fn records(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value.split(|b| *b == SEPARATOR)
}

/// A record's two parts: the delivery id, and what a receipt holds
/// (`None` for an entry naming a delivery by its id alone).
pub(super) fn parts(record: &[u8]) -> (&[u8], Option<&[u8]>) {
    match record.iter().position(|b| *b == b'\n') {
        Some(end) => (&record[..end], Some(&record[end + 1..])),
        None => (record, None),
    }
}

/// `value` (if any) with the records `added` after its own; a record
/// `value` already holds for the same delivery is not added twice.
pub(super) fn joined(value: Option<&[u8]>, added: &[u8]) -> Vec<u8> {
    let Some(value) = value.filter(|v| !v.is_empty()) else {
        return added.to_vec();
    };
    let mut out = value.to_vec();
    for record in records(added) {
        let id = parts(record).0;
        if records(value).any(|held| parts(held).0 == id) {
            continue;
        }
        out.push(SEPARATOR);
        out.extend_from_slice(record);
    }
    out
}

/// `value` without the record of delivery `id`: `None` when no record
/// names it, `Some(None)` when it was the only one.
pub(super) fn without(value: &[u8], id: &[u8]) -> Option<Option<Vec<u8>>> {
    if !records(value).any(|record| parts(record).0 == id) {
        return None;
    }
    let kept: Vec<&[u8]> = records(value)
        .filter(|record| parts(record).0 != id)
        .collect();
    Some((!kept.is_empty()).then(|| kept.join(&SEPARATOR)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_join_and_come_out_one_by_one() {
        let one = b"dlv_1\n{}".as_slice();
        assert_eq!(joined(None, one), one);
        let two = joined(Some(one), b"dlv_2\n{\"a\":1}");
        assert_eq!(two, b"dlv_1\n{}\x1edlv_2\n{\"a\":1}");
        assert_eq!(
            joined(Some(&two), b"dlv_2\n{}"),
            two,
            "one record a delivery"
        );
        let three = joined(Some(&two), b"dlv_3\n{}\x1edlv_1\n{}");
        let ids: Vec<&[u8]> = records(&three).map(|r| parts(r).0).collect();
        assert_eq!(ids, [&b"dlv_1"[..], b"dlv_2", b"dlv_3"]);
        assert_eq!(parts(b"dlv_9"), (&b"dlv_9"[..], None));

        let rest = without(&three, b"dlv_2").unwrap().unwrap();
        assert_eq!(rest, b"dlv_1\n{}\x1edlv_3\n{}");
        assert_eq!(without(&rest, b"dlv_2"), None);
        assert_eq!(without(&rest, b"dlv_"), None, "a whole id only");
        let last = without(&rest, b"dlv_1").unwrap().unwrap();
        assert_eq!(without(&last, b"dlv_3"), Some(None));
        assert_eq!(without(b"dlv_9", b"dlv_9"), Some(None));
    }
}
