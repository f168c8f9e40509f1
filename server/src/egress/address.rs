//! The destination address policy: which addresses a destination set over
//! the control plane may reach.

use std::{
    fmt,
    net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr},
    sync::Arc,
};

use ipnet::IpNet;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why an address is denied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10/8, 172.16/12, 192.168/16, fc00::/7, fec0::/10.
    Private,
    /// 169.254/16 (cloud metadata lives here), fe80::/10.
    LinkLocal,
    /// 100.64/10, shared by carrier-grade NAT.
    CarrierGradeNat,
    /// 224/4, ff00::/8.
    Multicast,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// 255.255.255.255.
    Broadcast,
    /// Other ranges that are not globally reachable (documentation,
    /// benchmarking, 240/4, protocol assignments, Teredo, discard).
    Reserved,
}

impl Rule {
    /// The rule's name in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Loopback => "loopback",
            Rule::Private => "private",
            Rule::LinkLocal => "link-local",
            Rule::CarrierGradeNat => "carrier-grade NAT (shared address space)",
            Rule::Multicast => "multicast",
            Rule::Unspecified => "unspecified",
            Rule::Broadcast => "broadcast",
            Rule::Reserved => "reserved (not globally reachable)",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rule that denies `ip` by default, if any.
pub fn classify(ip: IpAddr) -> Option<Rule> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Rule> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => Rule::Unspecified,
        (127, _, _) => Rule::Loopback,
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => Rule::Private,
        (169, 254, _) => Rule::LinkLocal,
        (100, 64..=127, _) => Rule::CarrierGradeNat,
        (224..=239, _, _) => Rule::Multicast,
        _ if ip == Ipv4Addr::BROADCAST => Rule::Broadcast,
        (240..=255, _, _)
        | (192, 0, 0)
        | (192, 0, 2)
        | (192, 88, 99)
        | (198, 18..=19, _)
        | (198, 51, 100)
        | (203, 0, 113) => Rule::Reserved,
        _ => return None,
    })
}

fn classify_v6(ip: Ipv6Addr) -> Option<Rule> {
    if ip.is_unspecified() {
        return Some(Rule::Unspecified);
    }
    if ip.is_loopback() {
        return Some(Rule::Loopback);
    }
    if let Some(v4) = embedded_v4(ip) {
        return classify_v4(v4);
    }
    let s = ip.segments();
    Some(match s[0] {
        0xfc00..=0xfdff | 0xfec0..=0xfeff => Rule::Private,
        0xfe80..=0xfebf => Rule::LinkLocal,
        0xff00..=0xffff => Rule::Multicast,
        // Local-use NAT64 (64:ff9b:1::/48), discard-only (100::/64).
        0x0064 if s[1] == 0xff9b => Rule::Reserved,
        0x0100 if s[1..4] == [0, 0, 0] => Rule::Reserved,
        // Teredo (2001::/32), protocol assignments and ORCHID (2001::/23
        // below 2001:200::), documentation (2001:db8::/32).
        0x2001 if s[1] < 0x0200 || s[1] == 0x0db8 => Rule::Reserved,
        // Other addresses embedding IPv4 in the first /96.
        0 => Rule::Reserved,
        _ => return None,
    })
}

/// The IPv4 address an IPv6 address stands for: IPv4-mapped
/// (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible
/// (::a.b.c.d), well-known NAT64 (64:ff9b::a.b.c.d) and 6to4 (2002:aabb:ccdd::).
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _]
        | [0, 0, 0, 0, 0xffff, 0, _, _]
        | [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        [0, 0, 0, 0, 0, 0, _, _] if !ip.is_unspecified() && !ip.is_loopback() => Some(tail),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

/// An address the policy refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeniedAddress {
    /// The name that resolved to it, when the URL held a name.
    pub host: Option<String>,
    /// The address.
    pub ip: IpAddr,
    /// Why.
    pub rule: Rule,
}

impl DeniedAddress {
    /// The control plane's answer for a literal address in a destination URL.
    pub fn refusal(&self) -> String {
        format!(
            "destination address {} is {}; allow it with [forward] allow_networks",
            self.ip, self.rule
        )
    }
}

/// What the sender of a request sees (an attempt's error, a Redirect's
/// outcome): for a name, only that it is not allowed, never what it resolves
/// to inside hookd's network; the operator's log has the address
/// ([`DeniedAddress::log`]).
impl fmt::Display for DeniedAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Some(host) => write!(
                f,
                "destination address not allowed ({host} resolves to an address the destination address policy denies)"
            ),
            None => write!(
                f,
                "destination address not allowed ({} is {})",
                self.ip, self.rule
            ),
        }
    }
}

impl std::error::Error for DeniedAddress {}

impl DeniedAddress {
    /// Logs the refusal with the address and the rule, for the operator.
    pub fn log(&self) {
        tracing::warn!(
            host = self.host.as_deref().unwrap_or_default(),
            ip = %self.ip,
            rule = %self.rule,
            "destination refused by the destination address policy"
        );
    }
}

/// The default deny list plus the networks the operator allows.
///
/// Loopback, private, link-local (cloud metadata), shared (CGNAT),
/// multicast, unspecified, broadcast and other non-global ranges are
/// denied, also when written as IPv4-mapped, NAT64, IPv4-compatible or 6to4
/// IPv6 addresses; the operator widens the policy with `[forward]
/// allow_networks`. The check runs on the address actually connected to:
/// [`GuardedResolver`] for names (so DNS rebinding cannot get around it)
/// and [`AddressPolicy::check_url`] for literal addresses, which never
/// reach a resolver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddressPolicy {
    allow: Vec<IpNet>,
}

impl AddressPolicy {
    /// The default policy widened by `allow` (`[forward] allow_networks`).
    pub fn new(allow: Vec<IpNet>) -> Self {
        AddressPolicy { allow }
    }

    /// Whether a destination may connect to `ip`.
    pub fn check(&self, ip: IpAddr) -> Result<(), DeniedAddress> {
        let ip = canonical(ip);
        let Some(rule) = classify(ip) else {
            return Ok(());
        };
        let v4 = match ip {
            IpAddr::V6(v6) => embedded_v4(v6).map(IpAddr::V4),
            IpAddr::V4(_) => None,
        };
        let allowed = self
            .allow
            .iter()
            .any(|net| net.contains(&ip) || v4.is_some_and(|v4| net.contains(&v4)));
        if allowed {
            return Ok(());
        }
        Err(DeniedAddress {
            host: None,
            ip,
            rule,
        })
    }

    /// Checks the host of `url` when it is a literal address (names are
    /// checked by [`GuardedResolver`] when they are resolved).
    pub fn check_url(&self, url: &reqwest::Url) -> Result<(), DeniedAddress> {
        // The URL parser has already turned every IPv4 spelling (decimal,
        // octal, hex, short forms) into dotted quads; IPv6 comes bracketed.
        let host = url.host_str().unwrap_or_default();
        match host.trim_start_matches('[').trim_end_matches(']').parse() {
            Ok(ip) => self.check(ip),
            Err(_) => Ok(()),
        }
    }
}

/// IPv4-mapped addresses as the IPv4 address they are; everything else as is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// Resolves destination names with the system resolver and refuses the
/// whole answer when any address in it is denied, so a name cannot smuggle a
/// denied address in beside an allowed one.
#[derive(Debug, Clone)]
pub struct GuardedResolver {
    policy: Arc<AddressPolicy>,
}

impl GuardedResolver {
    /// A resolver enforcing `policy`.
    pub fn new(policy: Arc<AddressPolicy>) -> Self {
        GuardedResolver { policy }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            for addr in &addrs {
                policy.check(addr.ip()).map_err(|denied| DeniedAddress {
                    host: Some(host.clone()),
                    ..denied
                })?;
            }
            Ok::<Addrs, Box<dyn std::error::Error + Send + Sync>>(Box::new(addrs.into_iter()))
        })
    }
}

/// The [`DeniedAddress`] behind a failed request, if that is why it failed.
pub fn denied_cause(e: &reqwest::Error) -> Option<&DeniedAddress> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if let Some(denied) = err.downcast_ref::<DeniedAddress>() {
            return Some(denied);
        }
        source = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn classifies_a_table_of_addresses() {
        let table: &[(&str, Option<Rule>)] = &[
            ("127.0.0.1", Some(Rule::Loopback)),
            ("127.255.0.9", Some(Rule::Loopback)),
            ("::1", Some(Rule::Loopback)),
            ("::ffff:127.0.0.1", Some(Rule::Loopback)),
            ("::ffff:0:127.0.0.1", Some(Rule::Loopback)),
            ("::127.0.0.1", Some(Rule::Loopback)),
            ("64:ff9b::7f00:1", Some(Rule::Loopback)),
            ("2002:7f00:1::", Some(Rule::Loopback)),
            ("10.0.0.1", Some(Rule::Private)),
            ("172.16.0.1", Some(Rule::Private)),
            ("172.31.255.255", Some(Rule::Private)),
            ("192.168.1.1", Some(Rule::Private)),
            ("::ffff:10.1.2.3", Some(Rule::Private)),
            ("64:ff9b::192.168.0.1", Some(Rule::Private)),
            ("fc00::1", Some(Rule::Private)),
            ("fd12:3456::1", Some(Rule::Private)),
            ("fec0::1", Some(Rule::Private)),
            ("169.254.169.254", Some(Rule::LinkLocal)),
            ("::ffff:169.254.169.254", Some(Rule::LinkLocal)),
            ("fe80::1", Some(Rule::LinkLocal)),
            ("febf::1", Some(Rule::LinkLocal)),
            ("fd00:ec2::254", Some(Rule::Private)),
            ("100.64.0.1", Some(Rule::CarrierGradeNat)),
            ("100.127.255.254", Some(Rule::CarrierGradeNat)),
            ("224.0.0.1", Some(Rule::Multicast)),
            ("239.255.255.250", Some(Rule::Multicast)),
            ("ff02::1", Some(Rule::Multicast)),
            ("0.0.0.0", Some(Rule::Unspecified)),
            ("0.1.2.3", Some(Rule::Unspecified)),
            ("::", Some(Rule::Unspecified)),
            ("::ffff:0.0.0.0", Some(Rule::Unspecified)),
            ("255.255.255.255", Some(Rule::Broadcast)),
            ("240.0.0.1", Some(Rule::Reserved)),
            ("192.0.2.1", Some(Rule::Reserved)),
            ("198.18.0.1", Some(Rule::Reserved)),
            ("203.0.113.7", Some(Rule::Reserved)),
            ("2001:db8::1", Some(Rule::Reserved)),
            ("2001:0:4136:e378::1", Some(Rule::Reserved)),
            ("64:ff9b:1::1", Some(Rule::Reserved)),
            ("100::1", Some(Rule::Reserved)),
            ("::1:0:0:1", Some(Rule::Reserved)),
            // Globally reachable.
            ("1.1.1.1", None),
            ("8.8.8.8", None),
            ("100.63.255.255", None),
            ("100.128.0.1", None),
            ("172.15.255.255", None),
            ("172.32.0.1", None),
            ("169.253.0.1", None),
            ("::ffff:8.8.8.8", None),
            ("64:ff9b::808:808", None),
            ("2002:808:808::1", None),
            ("2606:4700:4700::1111", None),
            ("2001:4860:4860::8888", None),
        ];
        for (addr, want) in table {
            assert_eq!(classify(ip(addr)), *want, "{addr}");
            let policy = AddressPolicy::default();
            assert_eq!(policy.check(ip(addr)).is_ok(), want.is_none(), "{addr}");
        }
    }

    #[test]
    fn allow_networks_widen_only_what_they_name() {
        let policy = AddressPolicy::new(vec![
            "10.20.0.0/16".parse().unwrap(),
            "127.0.0.1/32".parse().unwrap(),
            "fd00::/8".parse().unwrap(),
        ]);
        for allowed in [
            "10.20.3.4",
            "127.0.0.1",
            "::ffff:127.0.0.1",
            "64:ff9b::a14:304",
            "fd00::5",
            "1.1.1.1",
        ] {
            assert!(policy.check(ip(allowed)).is_ok(), "{allowed}");
        }
        for denied in [
            "10.21.0.1",
            "127.0.0.2",
            "::1",
            "fc00::1",
            "169.254.169.254",
        ] {
            assert!(policy.check(ip(denied)).is_err(), "{denied}");
        }
    }

    #[test]
    fn literal_urls_are_checked_after_the_parser_normalises_them() {
        let policy = AddressPolicy::default();
        for url in [
            "http://127.0.0.1:9000/hooks",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "https://169.254.169.254/latest/meta-data/",
            "http://0/",
        ] {
            let parsed = reqwest::Url::parse(url).unwrap();
            assert!(policy.check_url(&parsed).is_err(), "{url} -> {parsed}");
        }
        let e = policy
            .check_url(&reqwest::Url::parse("http://[::ffff:127.0.0.1]:1/").unwrap())
            .unwrap_err();
        assert_eq!(
            e.refusal(),
            "destination address 127.0.0.1 is loopback; allow it with [forward] allow_networks"
        );
        assert!(
            reqwest::Url::parse("http://[fe80::1%25eth0]/").is_err(),
            "zone ids never parse, so they never reach a connect"
        );
        for url in [
            "https://example.com/hooks",
            "http://8.8.8.8/",
            "http://[2606:4700::1]/",
        ] {
            assert!(
                policy.check_url(&reqwest::Url::parse(url).unwrap()).is_ok(),
                "{url}"
            );
        }
    }

    #[tokio::test]
    async fn the_resolver_refuses_a_name_with_a_denied_address() {
        let guarded = GuardedResolver::new(Arc::new(AddressPolicy::default()));
        let err = guarded
            .resolve("localhost".parse().unwrap())
            .await
            .err()
            .expect("localhost is loopback");
        let denied = err.downcast_ref::<DeniedAddress>().unwrap();
        assert_eq!(denied.rule, Rule::Loopback);
        let shown = denied.to_string();
        assert!(
            shown.starts_with("destination address not allowed (localhost resolves to an address"),
            "{shown}"
        );
        assert!(
            !shown.contains("127.0.0.1") && !shown.contains("::1") && !shown.contains("loopback"),
            "{shown}"
        );
        let allowing = GuardedResolver::new(Arc::new(AddressPolicy::new(vec![
            "127.0.0.0/8".parse().unwrap(),
            "::1/128".parse().unwrap(),
        ])));
        let addrs: Vec<SocketAddr> = allowing
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(!addrs.is_empty());
    }
}
