//! The SSRF guard: which addresses a webhook may reach. One parser for every place that looks at a
//! webhook URL (registration, delivery, the HTTP client itself): the WHATWG URL parser of the `url`
//! crate, which is what `reqwest` connects with, so `http://127.0.0.1.:8080/`, `http://0x7f.1/` and
//! `http://2130706433/` are all the IP address 127.0.0.1 here as they are on the wire. Refused,
//! unless allow-listed: every block of the IANA IPv4 and IPv6 special-purpose address registries
//! that is not globally reachable (loopback, private, link-local with the cloud metadata endpoints,
//! CGNAT, benchmarking, documentation, reserved, multicast, discard, ...); for IPv6, everything
//! that is not global unicast (`2000::/3`, less its special-purpose blocks), except addresses that
//! carry an IPv4 address (IPv4-mapped, NAT64, 6to4), which are judged by that address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use a2a_protocol::error::{A2aError, Result};

/// Longest webhook URL accepted.
pub const MAX_URL_LEN: usize = 2048;

/// What the operator lets webhooks reach although the guard would refuse it: networks refused by
/// default (e.g. `127.0.0.1/32` in development), and host names trusted at registration without
/// resolving them (e.g. a name that only resolves inside the delivery network, or any name when the
/// registering host has no DNS). A trusted name is still resolved and its addresses checked at
/// delivery, so naming a host never opens an address the networks do not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowList {
    nets: Vec<(IpAddr, u8)>,
    names: Vec<String>,
}

impl AllowList {
    /// Parses `entry,entry,...`: a CIDR (a bare address is a /32 or /128) or a host name.
    pub fn parse(spec: &str) -> Result<Self> {
        let mut list = Self::default();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let bad = |why: &str| A2aError::invalid_params(format!("webhook allow-list: {why} in {item:?}"));
            let (addr, len) = item.split_once('/').unwrap_or((item, ""));
            let Ok(addr) = addr.parse::<IpAddr>() else {
                if !len.is_empty() || !is_host_name(item) {
                    return Err(bad("not an IP, CIDR or host name"));
                }
                list.names.push(item.trim_end_matches('.').to_ascii_lowercase());
                continue;
            };
            let max = if addr.is_ipv4() { 32 } else { 128 };
            let len = if len.is_empty() { max } else { len.parse().map_err(|_| bad("bad prefix"))? };
            if len > max {
                return Err(bad("prefix too long"));
            }
            list.nets.push((addr, len));
        }
        Ok(list)
    }

    /// This list with `other`'s networks and names added.
    pub fn and(mut self, other: &AllowList) -> Self {
        self.nets.extend(other.nets.iter().copied());
        self.names.extend(other.names.iter().cloned());
        self
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|(net, len)| in_net(ip, *net, *len))
    }

    /// Whether registration may accept `name` (lower case, no trailing dot) without resolving it.
    pub fn trusts_name(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }
}

/// A DNS name as an allow-list entry: dot-separated labels of letters, digits and hyphens.
fn is_host_name(s: &str) -> bool {
    let s = s.trim_end_matches('.');
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && !s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

fn in_net(ip: IpAddr, net: IpAddr, len: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => in_v4(a, b, len),
        (IpAddr::V6(a), IpAddr::V6(b)) => in_v6(a, b, len),
        (IpAddr::V6(a), IpAddr::V4(_)) => a.to_ipv4_mapped().is_some_and(|v4| in_net(IpAddr::V4(v4), net, len)),
        _ => false,
    }
}

fn in_v4(ip: Ipv4Addr, net: Ipv4Addr, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len.min(32))) };
    u32::from(ip) & mask == u32::from(net) & mask
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len.min(128))) };
    u128::from(ip) & mask == u128::from(net) & mask
}

/// IANA IPv4 Special-Purpose Address Registry: the blocks that are not globally reachable (and
/// 192.88.99.0/24, the deprecated 6to4 relay anycast). Also the limited broadcast address.
const V4_REFUSED: &[([u8; 4], u8)] = &[
    ([0, 0, 0, 0], 8),       // "this network"
    ([10, 0, 0, 0], 8),      // private
    ([100, 64, 0, 0], 10),   // shared address space (CGNAT)
    ([127, 0, 0, 0], 8),     // loopback
    ([169, 254, 0, 0], 16),  // link-local (cloud metadata: 169.254.169.254)
    ([172, 16, 0, 0], 12),   // private
    ([192, 0, 0, 0], 24),    // IETF protocol assignments
    ([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    ([192, 31, 196, 0], 24), // AS112-v4
    ([192, 52, 193, 0], 24), // AMT
    ([192, 88, 99, 0], 24),  // deprecated 6to4 relay anycast
    ([192, 168, 0, 0], 16),  // private
    ([192, 175, 48, 0], 24), // direct delegation AS112
    ([198, 18, 0, 0], 15),   // benchmarking
    ([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    ([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    ([224, 0, 0, 0], 4),     // multicast
    ([240, 0, 0, 0], 4),     // reserved (and 255.255.255.255, limited broadcast)
];

/// IPv6 webhooks may reach global unicast addresses only (`2000::/3`, RFC 4291): everything else —
/// unspecified, loopback, IPv4-translated (`::ffff:0:a.b.c.d`), discard-only, local-use NAT64,
/// segment routing, unique local (`fd00:ec2::254`: the EC2 metadata endpoint), link-local,
/// site-local, multicast, and whatever IANA assigns outside `2000::/3` later — is refused, except
/// where an IPv4 address is carried (see [`embedded_v4`]).
const V6_GLOBAL_UNICAST: ([u16; 8], u8) = ([0x2000, 0, 0, 0, 0, 0, 0, 0], 3);

/// The blocks of `2000::/3` that the IANA IPv6 Special-Purpose Address Registry does not mark
/// globally reachable (6to4, `2002::/16`, is judged by the IPv4 address it carries).
const V6_REFUSED_IN_GLOBAL: &[([u16; 8], u8)] = &[
    ([0x2001, 0, 0, 0, 0, 0, 0, 0], 23), // IETF protocol assignments (Teredo, benchmarking, ORCHID...)
    ([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
    ([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20), // documentation
];

/// The IPv4 address an IPv6 address carries, where connecting to it reaches that IPv4 address:
/// IPv4-mapped (`::ffff:a.b.c.d`), the NAT64 well-known prefix (`64:ff9b::a.b.c.d`) and 6to4
/// (`2002:AABB:CCDD::`). (IPv4-compatible `::a.b.c.d` is deprecated and not global unicast: refused
/// as such.)
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(low),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(low),
        [0x2002, a, b, ..] => Some(Ipv4Addr::new((a >> 8) as u8, a as u8, (b >> 8) as u8, b as u8)),
        _ => None,
    }
}

/// True for addresses no webhook may reach unless allow-listed.
pub fn is_forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => V4_REFUSED.iter().any(|(net, len)| in_v4(v4, Ipv4Addr::from(*net), *len)),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => is_forbidden(IpAddr::V4(v4)),
            None => {
                let (global, len) = V6_GLOBAL_UNICAST;
                !in_v6(v6, Ipv6Addr::from(global), len)
                    || V6_REFUSED_IN_GLOBAL.iter().any(|(net, len)| in_v6(v6, Ipv6Addr::from(*net), *len))
            }
        },
    }
}

/// Checks one address against the guard.
pub fn check_ip(ip: IpAddr, allow: &AllowList) -> Result<()> {
    if is_forbidden(ip) && !allow.allows(ip) {
        Err(A2aError::invalid_field(
            "url",
            format!("webhook address {ip} is a special-purpose address (loopback, private, link-local, metadata, reserved, ...); not allowed"),
        ))
    } else {
        Ok(())
    }
}

/// Where a webhook URL points, as the HTTP client will see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookHost {
    Ip(IpAddr),
    /// A name (lower-case, without a trailing dot), to be resolved.
    Name(String),
}

/// A parsed webhook URL.
#[derive(Debug, Clone)]
pub struct WebhookTarget {
    /// The URL as the HTTP client parses it (deliver this, not the raw string).
    pub url: url::Url,
    pub host: WebhookHost,
    pub port: u16,
}

/// Parses a webhook URL: absolute `http` or `https`, a host, no credentials, at most
/// [`MAX_URL_LEN`] bytes. Errors name `url`.
pub fn parse_target(raw: &str) -> Result<WebhookTarget> {
    let bad = |why: String| A2aError::invalid_field("url", why);
    if raw.len() > MAX_URL_LEN {
        return Err(bad(format!("is {} bytes long; the limit is {MAX_URL_LEN}", raw.len())));
    }
    let url = url::Url::parse(raw).map_err(|e| bad(format!("{raw:?} is not a valid URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad(format!("{raw:?} must be an absolute http(s) URL")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not carry credentials; use the config's authentication".into()));
    }
    let host = match url.host() {
        Some(url::Host::Ipv4(ip)) => WebhookHost::Ip(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => WebhookHost::Ip(IpAddr::V6(ip)),
        Some(url::Host::Domain(name)) if !name.is_empty() => {
            WebhookHost::Name(name.trim_end_matches('.').to_ascii_lowercase())
        }
        _ => return Err(bad(format!("{raw:?} has no host"))),
    };
    let port = url.port_or_known_default().unwrap_or(80);
    Ok(WebhookTarget { url, host, port })
}

/// The checks that need no resolver: the URL's shape, and its host when it is an address (or a
/// name that is loopback by definition, `localhost` and `*.localhost`).
pub fn check_literal(raw: &str, allow: &AllowList) -> Result<WebhookTarget> {
    let target = parse_target(raw)?;
    match &target.host {
        WebhookHost::Ip(ip) => check_ip(*ip, allow)?,
        WebhookHost::Name(name) if name == "localhost" || name.ends_with(".localhost") => {
            check_ip(IpAddr::V4(Ipv4Addr::LOCALHOST), allow)?;
        }
        WebhookHost::Name(_) => {}
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_special_purpose_registries_are_refused() {
        for bad in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "192.0.0.8",
            "192.0.2.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::1",
            "2002:7f00:1::",
            "2002:a00:1::1",
            "2001::1",
            "2001:2::1",
            "2001:db8::1",
            "3fff::1",
            "fd00:ec2::254",
            "fc00::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "100::1",
            // Not global unicast, or carrying a refused IPv4 address (the forms of issue 11).
            "::ffff:0:7f00:1",
            "::ffff:0:a00:1",
            "::ffff:0:808:808",
            "::8.8.8.8",
            "::0.0.0.2",
            "64:ff9b::a00:1",
            "64:ff9b::c0a8:101",
            "64:ff9b:1::808:808",
            "2002:c0a8:101::1",
            "2002:a9fe:a9fe::",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:db8:85a3::8a2e:370:7334",
            "3fff:fff::1",
            "fd12:3456:789a::1",
            "febf::1",
            "ff0e::1",
            "100::ffff:1",
            "5f00::1",
            "4000::1",
            "8000::1",
            "e000::1",
            "1fff:ffff::1",
        ] {
            assert!(is_forbidden(bad.parse().unwrap()), "{bad}");
        }
        for good in [
            "93.184.216.34",
            "8.8.8.8",
            "1.1.1.1",
            "2606:2800:220:1:248:1893:25c8:1946",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "2a00:1450:4001:80b::200e",
            "2001:4860:4860::8888",
        ] {
            assert!(!is_forbidden(good.parse().unwrap()), "{good}");
        }
    }

    #[test]
    fn allow_lists() {
        let allow = AllowList::parse("127.0.0.0/8, ::1").unwrap();
        assert!(check_ip("127.0.0.5".parse().unwrap(), &allow).is_ok());
        assert!(check_ip("::1".parse().unwrap(), &allow).is_ok());
        assert!(check_ip("::ffff:127.0.0.1".parse().unwrap(), &allow).is_ok());
        assert!(check_ip("10.0.0.1".parse().unwrap(), &allow).is_err());
        assert!(AllowList::parse("10.0.0.0/33").is_err());
        assert!(AllowList::parse("nope/8").is_err());
        assert!(AllowList::parse("bad_name").is_err());
        assert!(AllowList::parse("1.2.3").is_err());
        let named = AllowList::parse("Hooks.Example.COM., 10.0.0.0/8").unwrap();
        assert!(named.trusts_name("hooks.example.com"));
        assert!(!named.trusts_name("example.com"));
        assert!(named.allows("10.1.1.1".parse().unwrap()));
    }

    #[test]
    fn urls_are_read_as_the_http_client_reads_them() {
        let none = AllowList::default();
        for bad in [
            "http://127.0.0.1.:8080/x",
            "http://0x7f.1/x",
            "http://2130706433/x",
            "http://0177.0.0.1/x",
            "http://127.1/x",
            "http://[::1]/x",
            "http://[::ffff:7f00:1]/x",
            "http://[64:ff9b::7f00:1]/x",
            "http://[::ffff:0:7f00:1]/x",
            "http://[fd00:ec2::254]/latest/meta-data",
            "http://169.254.169.254./latest/meta-data",
            "http://LOCALHOST./x",
            "http://api.localhost/x",
        ] {
            let err = check_literal(bad, &none).unwrap_err();
            assert_eq!(err.metadata.get("field").map(String::as_str), Some("url"), "{bad}");
        }
        for bad in ["ftp://example.com/x", "/relative", "http://user:pw@example.com/x", "not a url"] {
            assert!(parse_target(bad).is_err(), "{bad}");
        }
        assert!(parse_target(&format!("https://example.com/{}", "a".repeat(MAX_URL_LEN))).is_err());
        let t = parse_target("https://Hooks.Example.COM./cb").unwrap();
        assert_eq!((t.host, t.port), (WebhookHost::Name("hooks.example.com".into()), 443));
        let allow = AllowList::parse("127.0.0.1").unwrap();
        assert!(check_literal("http://127.0.0.1.:9/x", &allow).is_ok());
    }
}
