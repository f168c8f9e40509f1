//! Receipts: a delivery pending since its event was received, kept as a record
//! in a queue entry with no state record of its own.

use serde::{Deserialize, Serialize};
use sled::IVec;

use super::{abort, Tally, TenantTrees, TxKeyspace, TxResult};
use crate::{
    error::Result,
    ids::{DeliveryId, EventId},
    records::{decode, encode as json, queue_key, DeliveryState, DeliveryStatus, RouteOutcome},
    sled::{entry, Keyspace},
};

/// What a receipt holds of its delivery's state. The rest is the same for
/// every delivery pending since receipt: no attempt yet, due when
/// received, queued under the key its id names ([`state_of`] makes it
/// again). Receipts of storage layout 7 held the whole state; read as
/// this, they give the same state, since they held nothing else.
///
/// A delivery pending since its event was received (the default route's,
/// or a route's copy) is a record in a queue entry and no state record: its
/// id names the entry ([`DeliveryId::queue_slot`]), and its record holds
/// the id, a newline and what its state holds beyond that of every delivery
/// pending since receipt ([`Held`]). Copies whose ids share a place
/// ([`DeliveryId::sharing`]) are records of one entry ([`entry`]), each
/// taken out of it alone ([`take`]). The acknowledging commit then writes
/// one insert per route instead of two, and for the copies of a route
/// one per batch. Whatever changes the delivery (its
/// first attempt, a pull, an ack, a copy's holder handing it the event)
/// writes its state record, and the state record is its state from then
/// on; every queue entry made after that holds only the id. Reading a
/// delivery's state reads its state record, else the receipt its id names.
#[derive(Serialize)]
struct Held<'a> {
    event_id: &'a EventId,
    received_at_ms: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_in: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    routes: &'a [RouteOutcome],
    #[serde(skip_serializing_if = "Option::is_none")]
    event_type: Option<&'a str>,
}

/// [`Held`] as read back.
#[derive(Deserialize)]
struct Read {
    event_id: EventId,
    received_at_ms: i64,
    #[serde(default)]
    event_in: Option<String>,
    #[serde(default)]
    routes: Vec<RouteOutcome>,
    #[serde(default)]
    event_type: Option<String>,
}

/// The state of the delivery a receipt under `key` holds `read` of.
fn state_of(read: Read, key: &[u8; 16]) -> DeliveryState {
    let mut state = DeliveryState::pending(read.event_id, read.received_at_ms);
    state.queue_key = Some(hex::encode(key));
    state.event_in = read.event_in;
    state.routes = read.routes;
    state.event_type = read.event_type;
    state
}

/// Whether `state`, of a delivery queued under `key`, is all a receipt
/// keeps: pending since receipt, nothing about it that [`Held`] leaves
/// out. A delivery whose state is not is written with a state record.
pub(in crate::sled) fn holds(state: &DeliveryState, key: &[u8; 16]) -> bool {
    let mut queued = [0u8; 16];
    let under_key = state
        .queue_key
        .as_deref()
        .is_some_and(|hex| hex::decode_to_slice(hex, &mut queued).is_ok() && queued == *key);
    under_key
        && state.status == DeliveryStatus::Pending
        && state.attempts == 0
        && state.next_attempt_at_ms == Some(state.received_at_ms)
        && state.last_error.is_none()
        && state.last_status.is_none()
        && state.finished_at_ms.is_none()
        && state.redelivery_of.is_none()
        && state.redelivered_as.is_none()
}

/// The queue key a delivery filed as a receipt is under.
pub(in crate::sled) fn key_of(delivery_id: &DeliveryId) -> Option<[u8; 16]> {
    let (due_ms, seq) = delivery_id.queue_slot()?;
    Some(queue_key(due_ms, seq))
}

/// The queue entry of `delivery_id` filed as a receipt of `state` (which
/// [`holds`] all of).
pub(in crate::sled) fn encode(delivery_id: &DeliveryId, state: &DeliveryState) -> Vec<u8> {
    let held = json(&Held {
        event_id: &state.event_id,
        received_at_ms: state.received_at_ms,
        event_in: state.event_in.as_deref(),
        routes: &state.routes,
        event_type: state.event_type.as_deref(),
    });
    [delivery_id.as_str().as_bytes(), b"\n", &held].concat()
}

fn id_of(id: &[u8]) -> DeliveryId {
    DeliveryId::new(String::from_utf8_lossy(id).into_owned())
}

/// The deliveries of a queue entry filed as receipts (none for an entry
/// naming a delivery whose state record holds its state).
pub(in crate::sled) fn filed_ids(value: &[u8]) -> impl Iterator<Item = IVec> + '_ {
    entry::records(value).filter_map(|record| match entry::parts(record) {
        (id, Some(_)) => Some(IVec::from(id)),
        (_, None) => None,
    })
}

/// The deliveries a queue entry under `key` names, each with the entry
/// the store hands out for it: the key, and for a receipt the key and its
/// id (receipts share entries, [`entry`]), sorted.
pub(in crate::sled) fn listed(key: &[u8], value: &[u8]) -> Vec<(Vec<u8>, DeliveryId)> {
    let mut listed: Vec<(Vec<u8>, DeliveryId)> = entry::records(value)
        .map(|record| match entry::parts(record) {
            (id, Some(_)) => ([key, id].concat(), id_of(id)),
            (id, None) => (key.to_vec(), id_of(id)),
        })
        .collect();
    listed.sort();
    listed
}

/// The queue key of an entry as the store hands it out ([`listed`]).
pub(in crate::sled) fn place(entry: &[u8]) -> &[u8] {
    &entry[..entry.len().min(QUEUE_KEY_LEN)]
}

/// The length of a queue key: due time and sequence number.
const QUEUE_KEY_LEN: usize = 16;

/// The record of `delivery_id` in a queue entry: what it holds, `None`
/// for an entry naming it by its id alone.
fn record_of<'v>(value: &'v [u8], delivery_id: &DeliveryId) -> Option<Option<&'v [u8]>> {
    let id = delivery_id.as_str().as_bytes();
    entry::records(value).find_map(|record| match entry::parts(record) {
        (named, held) if named == id => Some(held),
        _ => None,
    })
}

/// Whether a queue entry names `delivery_id`.
pub(super) fn names(value: &[u8], delivery_id: &DeliveryId) -> bool {
    record_of(value, delivery_id).is_some()
}

/// Takes `delivery_id` out of the queue entry under `key` (counted in
/// `tally`): its record alone from an entry of receipts, which others may
/// share, else the whole entry, which names one delivery alone. An entry
/// of receipts that holds none of `delivery_id` is left as it is.
pub(super) fn take(
    queue: TxKeyspace<'_>,
    key: &[u8],
    delivery_id: &DeliveryId,
    tally: &Tally,
) -> TxResult<()> {
    let key = place(key);
    let Some(value) = queue.get(key)? else {
        return Ok(());
    };
    let receipts = entry::records(&value).any(|record| entry::parts(record).1.is_some());
    match (record_of(&value, delivery_id), receipts) {
        (Some(Some(_)), _) => {
            let taken = queue.take_record(key, delivery_id.as_str().as_bytes())?;
            tally.queue_taken(delivery_id.as_str(), taken);
        }
        (_, true) => {}
        (_, false) => tally.queue_removed(queue.remove(key)?),
    }
    Ok(())
}

/// The state a receipt of `delivery_id` holds, if `value` holds one.
fn state_in(value: &[u8], delivery_id: &DeliveryId) -> Result<Option<DeliveryState>> {
    let (Some(key), Some(Some(held))) = (key_of(delivery_id), record_of(value, delivery_id)) else {
        return Ok(None);
    };
    Ok(Some(state_of(decode(held)?, &key)))
}

/// The state of `delivery_id` filed as a receipt in `queue`, if it is.
pub(super) fn load(queue: &Keyspace, delivery_id: &DeliveryId) -> Result<Option<DeliveryState>> {
    let Some(key) = key_of(delivery_id) else {
        return Ok(None);
    };
    match queue.get(key)? {
        Some(value) => state_in(&value, delivery_id),
        None => Ok(None),
    }
}

/// [`load`] inside a transaction.
pub(super) fn tx_load(
    queue: TxKeyspace<'_>,
    delivery_id: &DeliveryId,
) -> TxResult<Option<DeliveryState>> {
    let Some(key) = key_of(delivery_id) else {
        return Ok(None);
    };
    match queue.get(key)? {
        Some(value) => state_in(&value, delivery_id).or_else(abort),
        None => Ok(None),
    }
}

/// The deliveries of `trees` filed as receipts with no state record, newest
/// first, with ids below `before`. Receipts are keyed by their ids' time
/// and random part, so the queue holds them in id order; the other entries
/// (retries, pulls hidden for a while) are passed over.
pub(in crate::sled) fn newest_first<'a>(
    trees: &'a TenantTrees,
    before: Option<&'a DeliveryId>,
) -> impl Iterator<Item = Result<(DeliveryId, DeliveryState)>> + 'a {
    let below = before
        .and_then(DeliveryId::time_ms)
        .map(|ms| queue_key(ms + 1, 0));
    trees
        .queue
        .range(None, below.as_ref().map(|k| &k[..]))
        .rev()
        .flat_map(move |entry| match receipts_in(trees, entry, before) {
            Ok(receipts) => receipts.into_iter().map(Ok).collect(),
            Err(e) => vec![Err(e)],
        })
}

/// The unwritten receipts a queue entry holds below `before`, newest first.
fn receipts_in(
    trees: &TenantTrees,
    entry: sled::Result<(IVec, IVec)>,
    before: Option<&DeliveryId>,
) -> Result<Vec<(DeliveryId, DeliveryState)>> {
    let (key, value) = entry?;
    let mut receipts = Vec::new();
    for record in entry::records(&value) {
        let (id, Some(held)) = entry::parts(record) else {
            continue;
        };
        let id = id_of(id);
        let Some(own) = key_of(&id).filter(|own| own[..] == key[..]) else {
            continue;
        };
        if before.is_some_and(|b| id >= *b) || trees.state.get(id.as_str())?.is_some() {
            continue;
        }
        receipts.push((id, state_of(decode(held)?, &own)));
    }
    receipts.sort_by(|a, b| b.0.cmp(&a.0));
    Ok(receipts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        api::{CommitOutcome, Storage},
        ids::TenantId,
        records::DeliveryStatus,
        sled::durability_tests::fanned_out,
        SledStore,
    };

    /// The acknowledging commit files a listed copy as one insert: no state
    /// record, and a queue entry under the key its id names holding its id
    /// and pending state. What changes the copy writes its state record.
    #[tokio::test]
    async fn a_copy_is_one_queue_entry_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 64, false).unwrap();
        let acme = TenantId::try_from("acme").unwrap();
        let item = fanned_out("evt_1", "{}".into(), &acme, &["audit"]);
        let (holder, copy) = (item.meta.delivery_id.clone(), item.copies[0].clone());
        let data = store.tenant(&acme).unwrap();
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
        assert!(data.state(&holder).unwrap().is_some());
        let audit = store.tenant_trees(&copy.scope).unwrap();
        let id = &copy.delivery_id;
        assert_eq!(audit.state.get(id.as_str()).unwrap(), None);
        let key = key_of(id).unwrap();
        let value = audit.queue.get(key).unwrap().unwrap();
        assert!(names(&value, id));
        let named: Vec<DeliveryId> = listed(&key, &value).into_iter().map(|(_, id)| id).collect();
        assert_eq!(named, std::slice::from_ref(id));
        let state = load(&audit.queue, id).unwrap().unwrap();
        assert_eq!(state.status, DeliveryStatus::Pending);
        assert_eq!(state.queue_key, Some(hex::encode(key)));
        assert_eq!(state.next_attempt_at_ms, Some(state.received_at_ms));
        assert!(state.event_in.is_some());
        // The entry holds what is the copy's own, not what every pending
        // delivery's state says.
        let held = std::str::from_utf8(&value).unwrap();
        for field in ["status", "attempts", "next_attempt_at_ms", "queue_key"] {
            assert!(!held.contains(field), "{field} in {held}");
        }

        let route = store.tenant(&copy.scope).unwrap();
        assert_eq!(route.ack(std::slice::from_ref(id), 5_000).unwrap(), 1);
        let recorded = audit.state.get(id.as_str()).unwrap().unwrap();
        let recorded: DeliveryState = decode(&recorded).unwrap();
        assert_eq!(recorded.status, DeliveryStatus::Delivered);
        assert_eq!(audit.queue.get(key).unwrap(), None);
    }

    /// A take takes a delivery's record alone out of an entry of receipts,
    /// leaves an entry of other deliveries' receipts as it is, and removes
    /// an entry naming a delivery by its id whole.
    #[test]
    fn a_take_leaves_other_deliveries_receipts_where_they_are() {
        use crate::sled::keyspace::{tenant_prefix, Layout};
        let db = sled::Config::new().temporary(true).open().unwrap();
        let prefix = tenant_prefix(&TenantId::try_from("t").unwrap());
        let queue = Keyspace::new(db.open_tree("q").unwrap(), prefix, Layout::TenantFirst);
        let take_out = |key: &[u8], id: &str| {
            let id = DeliveryId::new(id);
            let delta = queue
                .tree()
                .transaction(|view| {
                    let tally = Tally::default();
                    take(queue.tx(view), key, &id, &tally)?;
                    Ok(tally.delta())
                })
                .unwrap();
            delta.queued
        };
        let (shared, plain) = ([1u8; 16], [2u8; 16]);
        queue
            .insert(shared, &b"dlv_a\n{}\x1edlv_b\n{}"[..])
            .unwrap();
        queue.insert(plain, "dlv_c").unwrap();
        assert_eq!(take_out(&shared, "dlv_z"), 0, "holds none of it");
        assert_eq!(take_out(&shared, "dlv_a"), -1);
        assert_eq!(queue.get(shared).unwrap().unwrap(), &b"dlv_b\n{}"[..]);
        assert_eq!(take_out(&[&shared[..], b"dlv_b"].concat(), "dlv_b"), -1);
        assert_eq!(queue.get(shared).unwrap(), None);
        assert_eq!(take_out(&plain, "dlv_c"), -1);
        assert_eq!((queue.get(plain).unwrap(), queue.len()), (None, 0));
    }

    /// A delivery pending since receipt, as the acknowledging commit makes
    /// it, under the queue key its id names.
    fn pending(id: &DeliveryId) -> ([u8; 16], DeliveryState) {
        let key = key_of(id).unwrap();
        let mut state = DeliveryState::pending(EventId::new("evt_1"), id.time_ms().unwrap());
        state.queue_key = Some(hex::encode(key));
        state.event_in = Some("holder".into());
        state.routes = vec![RouteOutcome {
            route: "audit".into(),
            delivery_id: Some(DeliveryId::new("dlv_2")),
            filtered: false,
        }];
        (key, state)
    }

    /// What a receipt leaves out is made again on reading, so the state
    /// reads back whole; and a receipt of storage layout 7, which held the
    /// whole state, reads the same.
    #[test]
    fn a_receipt_reads_back_the_whole_state_and_so_does_a_layout_7_one() {
        let id = DeliveryId::due_at(1_700_000_000_000);
        let (key, state) = pending(&id);
        assert!(holds(&state, &key));
        let entry = encode(&id, &state);
        assert_eq!(state_in(&entry, &id).unwrap(), Some(state.clone()));
        let layout_7 = [id.as_str().as_bytes(), b"\n", &json(&state)].concat();
        assert!(
            entry.len() + 80 < layout_7.len(),
            "{} against {}",
            entry.len(),
            layout_7.len()
        );
        assert_eq!(state_in(&layout_7, &id).unwrap(), Some(state));
        assert!(state_in(&[id.as_str().as_bytes(), b"\n{}"].concat(), &id).is_err());
    }

    /// A state with anything a receipt leaves out is not filed as one.
    #[test]
    fn only_a_state_pending_since_receipt_under_its_own_key_is_held() {
        let id = DeliveryId::due_at(1_700_000_000_000);
        let (key, state) = pending(&id);
        let changed: [fn(&mut DeliveryState); 10] = [
            |s| s.status = DeliveryStatus::Delivered,
            |s| s.attempts = 1,
            |s| s.next_attempt_at_ms = Some(s.received_at_ms + 1),
            |s| s.last_error = Some("refused".into()),
            |s| s.last_status = Some(500),
            |s| s.finished_at_ms = Some(1),
            |s| s.redelivery_of = Some(DeliveryId::new("dlv_0")),
            |s| s.redelivered_as = Some(DeliveryId::new("dlv_3")),
            |s| s.queue_key = Some(hex::encode([0u8; 16])),
            |s| s.queue_key = None,
        ];
        for change in changed {
            let mut other = state.clone();
            change(&mut other);
            assert!(!holds(&other, &key), "{other:?}");
        }
        assert!(!holds(&state, &[0u8; 16]));
    }

    #[test]
    fn an_entry_names_its_own_id_only() {
        let id = DeliveryId::new("dlv_1");
        assert!(names(b"dlv_1", &id));
        assert!(names(b"dlv_1\n{\"status\":\"pending\"}", &id));
        assert!(!names(b"dlv_12", &id));
        assert!(!names(b"dlv_12\n{}", &id));
        let ids = |value: &[u8]| -> Vec<DeliveryId> {
            listed(&[0; 16], value)
                .into_iter()
                .map(|(_, id)| id)
                .collect()
        };
        assert_eq!(ids(b"dlv_1\n{}"), std::slice::from_ref(&id));
        assert_eq!(ids(b"dlv_1"), std::slice::from_ref(&id));
        let filed = |value: &[u8]| filed_ids(value).collect::<Vec<_>>();
        assert_eq!(filed(b"dlv_1\n{}"), [IVec::from("dlv_1")]);
        assert!(filed(b"dlv_1").is_empty());
        // An entry of several receipts names each of them.
        let shared = b"dlv_2\n{}\x1edlv_1\n{}";
        assert!(names(shared, &id) && names(shared, &DeliveryId::new("dlv_2")));
        assert!(!names(shared, &DeliveryId::new("dlv_3")));
        assert_eq!(filed(shared).len(), 2);
        let key = [7u8; 16];
        let several = listed(&key, shared);
        assert_eq!(several[0], ([&key[..], b"dlv_1"].concat(), id.clone()));
        assert_eq!(several[1].1, DeliveryId::new("dlv_2"));
        assert_eq!(
            place(&several[1].0),
            key,
            "each handed out under the entry's key"
        );
        assert_eq!(listed(&key, b"dlv_1"), [(key.to_vec(), id.clone())]);
        assert_eq!(state_in(b"dlv_1", &id).unwrap(), None);
        assert_eq!(state_in(b"dlv_12\n{}", &id).unwrap(), None);
    }
}
