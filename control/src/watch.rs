//! Turns the server's broadcast of delivery events into a watcher's
//! [`EventStream`], ending it with UNAVAILABLE when the watcher falls behind
//! rather than letting a slow client hold the broadcast back.

use futures_util::StreamExt;
use tokio::sync::broadcast::{self, error::RecvError};

use crate::{backend::EventStream, error::Error, model::DeliveryEventView};

/// An [`EventStream`] over `receiver`. `view` converts each event, returning
/// `None` for those this watcher must not see (another tenant's). A lagged
/// receiver ends the stream with [`Error::Unavailable`] (the watcher should
/// reconnect and catch up with ListDeliveries), and so does a closed one
/// (hookd is stopping).
pub fn from_broadcast<T, F>(receiver: broadcast::Receiver<T>, view: F) -> EventStream
where
    T: Clone + Send + 'static,
    F: FnMut(T) -> Option<DeliveryEventView> + Send + 'static,
{
    futures_util::stream::unfold(Some((receiver, view)), |state| async move {
        let (mut receiver, mut view) = state?;
        loop {
            match receiver.recv().await {
                Ok(event) => {
                    if let Some(event) = view(event) {
                        return Some((Ok(event), Some((receiver, view))));
                    }
                }
                Err(RecvError::Lagged(missed)) => {
                    let message = format!(
                        "watcher fell behind and missed {missed} events; reconnect and catch up with ListDeliveries"
                    );
                    return Some((Err(Error::Unavailable(message)), None));
                }
                Err(RecvError::Closed) => {
                    let message = "the event feed closed because hookd is stopping; reconnect";
                    return Some((Err(Error::Unavailable(message.into())), None));
                }
            }
        }
    })
    .boxed()
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
        let mut stream = from_broadcast(rx, |e: DeliveryEventView| {
            (e.tenant_id == "acme").then_some(e)
        });
        tx.send(event("other", 1)).unwrap();
        tx.send(event("acme", 2)).unwrap();
        let got = stream.next().await.unwrap().unwrap();
        assert_eq!(got.delivery_id, "dlv_2");
    }

    #[tokio::test]
    async fn a_lagged_watcher_gets_unavailable_and_then_the_end() {
        let (tx, rx) = broadcast::channel(2);
        let mut stream = from_broadcast(rx, Some);
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
        let mut stream = from_broadcast(rx, Some);
        drop(tx);
        assert!(matches!(
            stream.next().await,
            Some(Err(Error::Unavailable(_)))
        ));
        assert!(stream.next().await.is_none());
    }
}
