//! Turns the server's broadcast of delivery events into a watcher's
//! [`EventStream`], and counts open watches per token ([`WatchSlots`]).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use futures_util::{future::BoxFuture, FutureExt, StreamExt};
use tokio::sync::broadcast::{self, error::RecvError};

use crate::{backend::EventStream, error::Error, model::DeliveryEventView};

/// How a watch ends besides falling behind.
pub struct Ends {
    /// Resolves, with the error to end on, once the watcher may no longer
    /// watch (its token revoked, its tenant deleted).
    pub revoked: BoxFuture<'static, Error>,
    /// What a closed feed means: hookd stopping, or the tenant deleted.
    pub closed: Error,
}

impl Ends {
    /// A watch that ends only with its feed, which closes when hookd stops.
    pub fn never() -> Ends {
        Ends {
            revoked: futures_util::future::pending().boxed(),
            closed: Error::Unavailable(
                "the event feed closed because hookd is stopping; reconnect".into(),
            ),
        }
    }
}

/// An [`EventStream`] over `receiver`. `view` converts each event, returning
/// `None` for those this watcher must not see (another tenant's). A lagged
/// receiver ends the stream with [`Error::Unavailable`] (the watcher should
/// reconnect and catch up with ListDeliveries); a closed one, or `ends`
/// resolving first, with the error `ends` names.
///
/// Turns the server's broadcast of delivery events into a watcher's
/// [`EventStream`], ending it with UNAVAILABLE when the watcher falls behind
/// rather than letting a slow client hold the broadcast back, and with the
/// error its [`Ends`] resolves to once the watcher may no longer watch; and
/// [`WatchSlots`], the count of open watches per token.
pub fn from_broadcast<T, F>(receiver: broadcast::Receiver<T>, view: F, ends: Ends) -> EventStream
where
    T: Clone + Send + 'static,
    F: FnMut(T) -> Option<DeliveryEventView> + Send + 'static,
{
    futures_util::stream::unfold(Some((receiver, view, ends)), |state| async move {
        let (mut receiver, mut view, mut ends) = state?;
        loop {
            let received = tokio::select! {
                received = receiver.recv() => received,
                error = &mut ends.revoked => return Some((Err(error), None)),
            };
            match received {
                Ok(event) => {
                    if let Some(event) = view(event) {
                        return Some((Ok(event), Some((receiver, view, ends))));
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    let message = format!(
                        "watcher fell behind and missed {missed} events; reconnect and catch up with ListDeliveries"
                    );
                    return Some((Err(Error::Unavailable(message)), None));
                }
                Err(RecvError::Closed) => return Some((Err(ends.closed), None)),
            }
        }
    })
    .boxed()
}

/// Open watches by token ([`crate::model::Grant::key`]), each at most
/// `cap`. Cheap to clone; clones share the count.
#[derive(Clone)]
pub struct WatchSlots {
    open: Arc<Mutex<HashMap<String, usize>>>,
    cap: usize,
}

/// One open watch's place; dropping it frees the place.
pub struct WatchSlot {
    slots: WatchSlots,
    key: String,
}

impl WatchSlots {
    /// At most `cap` open watches per token.
    pub fn new(cap: usize) -> WatchSlots {
        WatchSlots {
            open: Arc::default(),
            cap,
        }
    }

    /// A place for one more watch of `key`, or RESOURCE_EXHAUSTED when it
    /// holds `cap` already.
    pub fn take(&self, key: &str) -> Result<WatchSlot, Error> {
        let mut open = self.open.lock().expect("watch slots lock");
        let held = open.entry(key.to_owned()).or_default();
        if *held >= self.cap {
            return Err(Error::ResourceExhausted(format!(
                "this token already holds {} open WatchDeliveries streams, the most one token may; close one first",
                self.cap
            )));
        }
        *held += 1;
        Ok(WatchSlot {
            slots: self.clone(),
            key: key.to_owned(),
        })
    }
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().expect("watch slots lock");
        if let Some(held) = open.get_mut(&self.key) {
            *held -= 1;
            if *held == 0 {
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::DeliveryEventKind;

    fn event(tenant: &str, n: u32) -> DeliveryEventView {
        DeliveryEventView {
            kind: DeliveryEventKind::Accepted,
            tenant_id: tenant.into(),
            delivery_id: format!("dlv_{n}"),
            event_id: format!("evt_{n}"),
            at_ms: i64::from(n),
            attempt: None,
            status_code: None,
            reason: None,
            redelivered_as: None,
            next_attempt_at_ms: None,
        }
    }

    #[tokio::test]
    async fn skips_what_view_filters_out() {
        let (tx, rx) = broadcast::channel(8);
        let mut stream = from_broadcast(
            rx,
            |e: DeliveryEventView| (e.tenant_id == "acme").then_some(e),
            Ends::never(),
        );
        tx.send(event("other", 1)).unwrap();
        tx.send(event("acme", 2)).unwrap();
        let got = stream.next().await.unwrap().unwrap();
        assert_eq!(got.delivery_id, "dlv_2");
    }

    #[tokio::test]
    async fn a_lagged_watcher_gets_unavailable_and_then_the_end() {
        let (tx, rx) = broadcast::channel(2);
        let mut stream = from_broadcast(rx, Some, Ends::never());
        for n in 0..5 {
            tx.send(event("acme", n)).unwrap();
        }
        match stream.next().await {
            Some(Err(Error::Unavailable(message))) => assert!(message.contains("missed 3")),
            other => panic!("expected Unavailable, got {other:?}"),
        }
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn a_closed_feed_ends_with_unavailable() {
        let (tx, rx) = broadcast::channel::<DeliveryEventView>(2);
        let mut stream = from_broadcast(rx, Some, Ends::never());
        drop(tx);
        assert!(matches!(
            stream.next().await,
            Some(Err(Error::Unavailable(_)))
        ));
        assert!(stream.next().await.is_none());
    }

    #[tokio::test]
    async fn a_revoked_watch_ends_with_the_error_it_was_given() {
        let (_tx, rx) = broadcast::channel::<DeliveryEventView>(2);
        let (revoke, revoked) = tokio::sync::oneshot::channel::<()>();
        let ends = Ends {
            revoked: async move {
                let _ = revoked.await;
                Error::Unauthenticated("revoked".into())
            }
            .boxed(),
            closed: Error::NotFound("tenant".into()),
        };
        let mut stream = from_broadcast(rx, Some, ends);
        revoke.send(()).unwrap();
        assert!(matches!(
            stream.next().await,
            Some(Err(Error::Unauthenticated(_)))
        ));
        assert!(stream.next().await.is_none());
    }

    #[test]
    fn a_token_holds_at_most_its_cap_of_slots_and_a_dropped_one_frees_its_place() {
        let slots = WatchSlots::new(2);
        let a = slots.take("tok_a").unwrap();
        let _b = slots.take("tok_a").unwrap();
        assert!(matches!(
            slots.take("tok_a"),
            Err(Error::ResourceExhausted(_))
        ));
        let _other = slots.take("admin").unwrap();
        drop(a);
        slots.take("tok_a").unwrap();
    }
}
