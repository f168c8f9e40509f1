//! Pull-mode messages between `hookd.v1` and the domain, with Pull's limits.

use hookd_proto::v1 as pb;

use crate::{error::Error, model::PulledDelivery, Result};

const DEFAULT_PULL_MAX: u32 = 10;
const MAX_PULL_MAX: u32 = 100;
const DEFAULT_VISIBILITY_SECS: u32 = 30;
const MAX_VISIBILITY_SECS: u32 = 12 * 3600;

/// Pull's `max` (0 means 10, above 100 means 100) and visibility timeout
/// (0 means 30 s, above 12 h is refused).
pub(crate) fn pull_limits(max: u32, visibility_timeout_secs: u32) -> Result<(u32, u32)> {
    if visibility_timeout_secs > MAX_VISIBILITY_SECS {
        return Err(Error::InvalidArgument(format!(
            "visibility_timeout_secs {visibility_timeout_secs} is over the limit of {MAX_VISIBILITY_SECS} (12 h)"
        )));
    }
    let max = match max {
        0 => DEFAULT_PULL_MAX,
        n => n.min(MAX_PULL_MAX),
    };
    let visibility = match visibility_timeout_secs {
        0 => DEFAULT_VISIBILITY_SECS,
        n => n,
    };
    Ok((max, visibility))
}

impl From<PulledDelivery> for pb::PulledDelivery {
    fn from(p: PulledDelivery) -> Self {
        pb::PulledDelivery {
            delivery_id: p.delivery_id,
            event_id: p.event_id,
            body: p.body,
            headers: p
                .headers
                .into_iter()
                .map(|(name, value)| pb::Header { name, value })
                .collect(),
            received_at_unix_ms: p.received_at_ms,
            attempt: p.attempt,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_limits_follow_the_proto() {
        assert_eq!(pull_limits(0, 0).unwrap(), (10, 30));
        assert_eq!(pull_limits(500, 43_200).unwrap(), (100, 43_200));
        assert!(pull_limits(1, 43_201).is_err());
    }

    #[test]
    fn pulled_headers_keep_their_order_and_repeats() {
        let pulled = pb::PulledDelivery::from(PulledDelivery {
            delivery_id: "dlv_1".into(),
            event_id: "evt_1".into(),
            body: b"{\"a\":1}".to_vec(),
            headers: vec![
                ("x-b".into(), "1".into()),
                ("x-a".into(), "2".into()),
                ("x-b".into(), "3".into()),
            ],
            received_at_ms: 5,
            attempt: 2,
        });
        let headers: Vec<_> = pulled
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_str()))
            .collect();
        assert_eq!(headers, [("x-b", "1"), ("x-a", "2"), ("x-b", "3")]);
        assert_eq!(pulled.body, b"{\"a\":1}");
    }
}
