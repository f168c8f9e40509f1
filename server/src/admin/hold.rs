//! PauseRoute and ResumeRoute: an operator's hold on a route, stored in the
//! catalog and put in force on the route here at once (other replicas
//! follow the catalog).

use hookd_control::{
    model::{RouteHold, RouteView, DEFAULT_ROUTE},
    Error as ApiError, Result as ApiResult,
};

use super::{api, deliveries::named_route, Backend};
use crate::routes::hold::HoldRecord;

impl Backend {
    /// Pauses route `name` of `tenant_id` (`ramp_ms` `None`), or resumes
    /// it with that ramp; a route already so is left as it is. Durable
    /// once the caller's barrier passes.
    pub(super) fn hold_route(
        &self,
        tenant_id: &str,
        name: &str,
        ramp_ms: Option<i64>,
    ) -> ApiResult<RouteView> {
        let handle = self.tenant(tenant_id)?;
        let route = named_route(&handle, Some(name))?;
        let settings = handle.settings();
        let forwards = match name {
            DEFAULT_ROUTE => settings.forward.is_some(),
            _ => settings
                .routes
                .iter()
                .any(|r| r.name == name && r.forward.is_some()),
        };
        let pause = ramp_ms.is_none();
        if pause && !forwards {
            return Err(ApiError::FailedPrecondition(format!(
                "route {name} of tenant {tenant_id} is pulled: nothing is sent to pause; stop pulling instead"
            )));
        }
        if route.hold.is_paused() != pause {
            let record = HoldRecord {
                paused: pause,
                changed_at_ms: self.now_ms(),
                ramp_ms: ramp_ms.unwrap_or_default(),
            };
            let rows = self.services.store.catalog_rows().map_err(api)?;
            rows.apply(&[record.put(tenant_id, name)]).map_err(api)?;
            handle.hold_route(name, record);
            let change = if pause { "paused" } else { "resumed" };
            tracing::info!(tenant = %tenant_id, route = %name, change, ramp_ms = record.ramp_ms, "route held by an operator");
        }
        self.route(tenant_id, name)
    }
}

/// A route's hold as the control plane shows it at `now_ms`.
pub(super) fn hold_view(record: Option<HoldRecord>, now_ms: i64) -> RouteHold {
    let Some(record) = record else {
        return RouteHold::default();
    };
    RouteHold {
        paused: record.paused,
        changed_at_ms: Some(record.changed_at_ms),
        ramp_ends_at_ms: record.ramp_ends_ms().filter(|ends| *ends > now_ms),
    }
}
