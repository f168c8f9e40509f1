//! A tenant's set of contracts as it is put in force: its config file's, then
//! those saved over the control plane.

use std::sync::Arc;

use super::contracts::ContractRecord;
use crate::{
    contracts::{ConfigContracts, Contract, ContractSource, ContractSpec, TenantContracts},
    ids::TenantId,
};

/// The set of `tenant` from `config` and its `saved` contracts, reusing
/// what `previous` compiled and `fresh` (the contract just saved, compiled
/// to check it). A saved contract that no longer compiles is logged and
/// left out; one the config file declares is ignored.
///
/// A tenant's set as it is put in force: its config file's contracts, then
/// those saved over the control plane. A saved contract already compiled
/// and unchanged is kept as it is, so a save compiles only what it saved;
/// the others are compiled without their example check (it passed when
/// they were saved), under today's cost bounds.
pub fn assemble(
    tenant: &TenantId,
    config: &ConfigContracts,
    saved: Vec<ContractRecord>,
    previous: &TenantContracts,
    fresh: Option<Contract>,
) -> TenantContracts {
    let mut fresh = fresh;
    let saved: Vec<Arc<Contract>> = saved
        .into_iter()
        .filter(|record| {
            let key = (record.event_type.as_str(), record.version.as_deref());
            !config.contracts.iter().any(|c| c.key() == key)
        })
        .filter_map(|record| compiled(tenant, record, previous, &mut fresh))
        .collect();
    TenantContracts::new(
        config.policy.clone(),
        config.contracts.iter().cloned().chain(saved),
    )
}

fn compiled(
    tenant: &TenantId,
    record: ContractRecord,
    previous: &TenantContracts,
    fresh: &mut Option<Contract>,
) -> Option<Arc<Contract>> {
    let source = ContractSource::Api {
        revision: record.revision,
        updated_at_ms: record.updated_at_ms,
    };
    let spec = ContractSpec {
        event_type: record.event_type,
        version: record.version,
        schema: record.schema,
        example: record.example,
    };
    let same = |c: &Contract| c.spec() == &spec;
    if let Some(kept) = previous
        .find_exact(&spec.event_type, spec.version.as_deref())
        .filter(|c| c.source() == source && same(c))
    {
        return Some(kept.clone());
    }
    if fresh.as_ref().is_some_and(same) {
        return fresh.take().map(|c| Arc::new(c.with_source(source)));
    }
    let event_type = spec.event_type.clone();
    Contract::load(spec, source)
        .inspect_err(|e| tracing::error!(tenant = %tenant, event_type = %event_type, error = %e, "saved contract does not compile and is not in force"))
        .ok()
        .map(Arc::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(event_type: &str, revision: u64) -> ContractRecord {
        ContractRecord {
            event_type: event_type.into(),
            version: None,
            schema: r#"{"type":"object"}"#.into(),
            example: format!(r#"{{"type":"{event_type}"}}"#),
            revision,
            updated_at_ms: 7,
        }
    }

    #[test]
    fn a_save_compiles_only_the_contract_saved() {
        let tenant = TenantId::try_from("acme").unwrap();
        let config = ConfigContracts::default();
        let first = assemble(
            &tenant,
            &config,
            vec![record("a", 1), record("b", 1)],
            &TenantContracts::default(),
            None,
        );
        let a = first.find_exact("a", None).unwrap().clone();
        let b = first.find_exact("b", None).unwrap().clone();
        let saved = record("b", 2);
        let spec = ContractSpec {
            event_type: saved.event_type.clone(),
            version: None,
            schema: saved.schema.clone(),
            example: saved.example.clone(),
        };
        let fresh = Contract::load(spec, ContractSource::Config).unwrap();
        let second = assemble(
            &tenant,
            &config,
            vec![record("a", 1), saved],
            &first,
            Some(fresh),
        );
        assert!(
            Arc::ptr_eq(second.find_exact("a", None).unwrap(), &a),
            "a is reused"
        );
        let b2 = second.find_exact("b", None).unwrap();
        assert!(!Arc::ptr_eq(b2, &b));
        assert_eq!(
            b2.source(),
            ContractSource::Api {
                revision: 2,
                updated_at_ms: 7
            }
        );
        let third = assemble(&tenant, &config, vec![record("a", 1)], &second, None);
        assert!(Arc::ptr_eq(third.find_exact("a", None).unwrap(), &a));
        assert_eq!(third.len(), 1, "a deleted contract leaves the set");
    }
}
