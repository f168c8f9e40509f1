//! One contract for both control-plane backends: the same scenarios, over
//! the same gRPC client, run against the in-memory `FakeBackend` that the
//! control plane's, the SDK's and hookctl's tests use, and against hookd's
//! own backend. Where the two disagree, the fake is wrong: it is made to
//! answer as hookd does (`docs/error-codes.md`, `docs/rest.md`).

mod deliveries;
mod routes;
mod subject;
mod tenants;

use hookd_sdk::client::{ClientError, Code};

use self::subject::Subject;

/// The gRPC code of a call that must fail, and its message.
fn refused<T: std::fmt::Debug>(answer: Result<T, ClientError>) -> (Code, String) {
    let e = answer.expect_err("the call must be refused");
    (e.code(), e.to_string())
}

/// Runs each scenario once on the fake (`fake::…`) and once on hookd's
/// backend (`real::…`).
macro_rules! contract {
    ($($scenario:path => $name:ident),* $(,)?) => {
        mod fake {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    $scenario(Subject::fake().await).await;
                }
            )*
        }
        mod real {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    $scenario(Subject::real().await).await;
                }
            )*
        }
    };
}

contract! {
    tenants::created_tenant_is_read_listed_changed_and_deleted => tenant_lifecycle,
    tenants::a_taken_or_malformed_tenant_id_is_refused => tenant_refusals,
    tenants::an_unknown_tenant_is_not_found_everywhere => unknown_tenant,
    tenants::a_rotation_keeps_the_previous_secret_until_revoked => secret_rotation,
    tenants::tokens_are_listed_and_an_unknown_one_is_not_found => tokens,
    routes::a_route_is_created_read_changed_and_deleted => route_lifecycle,
    routes::the_default_route_is_the_tenants_destination => default_route,
    routes::route_refusals_name_their_codes => route_refusals,
    deliveries::a_new_tenant_has_no_deliveries_dead_letters_or_rejections => empty_history,
    deliveries::a_dead_letter_is_redelivered_once => redelivery,
    deliveries::pulling_is_for_tenants_without_a_destination => pull_mode,
    deliveries::a_new_tenant_has_no_contracts => contracts,
}
