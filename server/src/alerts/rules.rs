//! The rule each alert type runs with for a tenant: the operator's default
//! (`[alerts.rules]`) or the tenant's own override of it.

use hookd_control::model::AlertRuleView;
use hookd_proto::domain::AlertType;
use serde::{Deserialize, Serialize};

use super::signals::index;
use crate::{
    config::{check_rule, AlertsConfig, TenantRuleConfig},
    error::InvalidSetting,
};

/// What counts as a failing route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailingMode {
    /// The last `threshold` attempts all failed; open until one delivers.
    InARow,
    /// Any failed attempt.
    FirstFailure,
    /// A delivery dead-lettered (its last attempt failed).
    LastAttempt,
}

impl FailingMode {
    fn parse(mode: Option<&str>) -> Option<FailingMode> {
        match mode {
            Some("consecutive") => Some(FailingMode::InARow),
            Some("first_failure") => Some(FailingMode::FirstFailure),
            Some("last_attempt") => Some(FailingMode::LastAttempt),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            FailingMode::InARow => "consecutive",
            FailingMode::FirstFailure => "first_failure",
            FailingMode::LastAttempt => "last_attempt",
        }
    }
}

/// One type's rule, in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// `false`: never opens.
    pub enabled: bool,
    /// Occurrences (or a depth, or seconds) that open it.
    pub threshold: u64,
    /// The counting window and the debounce, ms.
    pub window_ms: i64,
    /// `route.failing`'s mode.
    pub mode: FailingMode,
}

/// A tenant's override as it is stored (and as the API gives it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleOverride {
    /// The type's name.
    pub alert_type: String,
    /// `false`: never opens.
    pub enabled: bool,
    /// 0: the default's.
    pub threshold: u64,
    /// 0: the default's.
    pub window_secs: f64,
    /// `route.failing` only; `None`: the default's.
    pub mode: Option<String>,
}

impl From<&TenantRuleConfig> for RuleOverride {
    fn from(rule: &TenantRuleConfig) -> Self {
        RuleOverride {
            alert_type: rule.alert_type.clone(),
            enabled: rule.enabled,
            threshold: rule.threshold,
            window_secs: rule.window_secs,
            mode: rule.mode.clone(),
        }
    }
}

impl From<&AlertRuleView> for RuleOverride {
    fn from(rule: &AlertRuleView) -> Self {
        RuleOverride {
            alert_type: rule.alert_type.clone(),
            enabled: rule.enabled,
            threshold: rule.threshold,
            window_secs: rule.window_secs,
            mode: rule.mode.clone().filter(|m| !m.is_empty()),
        }
    }
}

/// Every type's rule, in catalogue order, and which of them the tenant
/// overrides.
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    rules: [Rule; AlertType::ALL.len()],
    overridden: [bool; AlertType::ALL.len()],
}

impl Rules {
    /// The operator's defaults (`[alerts.rules]`, already validated).
    pub fn defaults(config: &AlertsConfig) -> Rules {
        let rules = AlertType::ALL.map(|kind| {
            let rule = &config.rules[kind.as_str()];
            Rule {
                enabled: rule.enabled,
                threshold: rule.threshold,
                window_ms: (rule.window_secs * 1000.0).round() as i64,
                mode: FailingMode::parse(rule.mode.as_deref()).unwrap_or(FailingMode::InARow),
            }
        });
        Rules {
            rules,
            overridden: [false; AlertType::ALL.len()],
        }
    }

    /// The rule of `kind`.
    pub fn get(&self, kind: AlertType) -> Rule {
        self.rules[index(kind)]
    }

    /// These rules with `overrides` over them, each checked (the error
    /// names `rules[i].field`); at most one override per type.
    pub fn overridden(&self, overrides: &[RuleOverride]) -> Result<Rules, InvalidSetting> {
        let mut rules = self.clone();
        let mut seen = Vec::new();
        for (i, o) in overrides.iter().enumerate() {
            let key = format!("rules[{i}]");
            let kind: AlertType =
                o.alert_type
                    .parse()
                    .map_err(|e: hookd_proto::domain::UnknownAlertType| {
                        InvalidSetting::new(format!("{key}.type"), e)
                    })?;
            if seen.contains(&kind) {
                return Err(InvalidSetting::new(
                    format!("{key}.type"),
                    format!("{kind} has a rule already"),
                ));
            }
            seen.push(kind);
            let base = self.get(kind);
            let threshold = if o.threshold == 0 {
                base.threshold
            } else {
                o.threshold
            };
            let window_secs = if o.window_secs == 0.0 {
                base.window_ms as f64 / 1000.0
            } else {
                o.window_secs
            };
            check_rule(&key, kind, threshold, window_secs, o.mode.as_deref())?;
            rules.overridden[index(kind)] = true;
            rules.rules[index(kind)] = Rule {
                enabled: o.enabled,
                threshold,
                window_ms: (window_secs * 1000.0).round() as i64,
                mode: FailingMode::parse(o.mode.as_deref()).unwrap_or(base.mode),
            };
        }
        Ok(rules)
    }

    /// Every rule as the control plane shows it.
    pub fn views(&self) -> Vec<AlertRuleView> {
        AlertType::ALL
            .iter()
            .map(|kind| {
                let rule = self.get(*kind);
                AlertRuleView {
                    overridden: self.overridden[index(*kind)],
                    alert_type: kind.as_str().to_owned(),
                    enabled: rule.enabled,
                    threshold: rule.threshold,
                    window_secs: rule.window_ms as f64 / 1000.0,
                    mode: (*kind == AlertType::RouteFailing).then(|| rule.mode.as_str().to_owned()),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn defaults() -> Rules {
        Rules::defaults(&Config::with_defaults(std::path::Path::new("/tmp")).alerts)
    }

    #[test]
    fn an_override_replaces_only_what_it_sets_and_a_bad_one_names_its_field() {
        let rules = defaults();
        let spike = AlertType::VerificationFailureSpike;
        let o = RuleOverride {
            alert_type: spike.as_str().into(),
            enabled: true,
            threshold: 3,
            window_secs: 0.0,
            mode: None,
        };
        let got = rules.overridden(std::slice::from_ref(&o)).unwrap();
        assert_eq!(got.get(spike).threshold, 3);
        assert_eq!(got.get(spike).window_ms, rules.get(spike).window_ms);
        let bad = RuleOverride {
            window_secs: 90_000.0,
            ..o.clone()
        };
        let e = rules.overridden(&[o.clone(), bad]).unwrap_err().to_string();
        assert!(e.starts_with("rules[1].type"), "{e}");
        let bad = RuleOverride {
            window_secs: 90_000.0,
            ..o
        };
        let e = rules.overridden(&[bad]).unwrap_err().to_string();
        assert!(e.starts_with("rules[0].window_secs"), "{e}");
    }
}
