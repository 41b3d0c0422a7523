//! Which network interface (and address) hcomm listens on: `HCOMM_SOCKET_IFNAME`.
//!
//! The grammar is NCCL's (`NCCL_SOCKET_IFNAME`): a comma-separated list of interface names,
//! matched as prefixes (`eth` matches `eth0` and `eth1`); a leading `^` turns the list into an
//! exclusion list (`^docker,lo`: anything but those); a leading `=` (after the `^`, if any)
//! makes the names exact (`=eth0` matches `eth0` only, not `eth01`).
//!
//! Without the variable: the first interface that is up, is not loopback and is not a Docker
//! bridge (`docker*`, as NCCL does), else loopback. Among matching interfaces an IPv4 address
//! is preferred over an IPv6 one (link-local IPv6 addresses are skipped: they need a scope).
//! The same address serves the TCP transport's listener and `file://` rendezvous. Listeners
//! bind to that address only, never to every interface unless `HCOMM_LISTEN_ANY=1` ([`bind_ip`]),
//! and to loopback when the rendezvous says every rank is on this host ([`listen_address_for`]).

use std::ffi::CStr;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::{Class, Error, Result};

/// A parsed `HCOMM_SOCKET_IFNAME`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IfSpec {
    /// `^`: the names are the ones *not* to use.
    pub exclude: bool,
    /// `=`: whole names, not prefixes.
    pub exact: bool,
    pub names: Vec<String>,
}

impl IfSpec {
    pub fn parse(s: &str) -> IfSpec {
        let mut s = s.trim();
        let exclude = s.starts_with('^');
        if exclude {
            s = &s[1..];
        }
        let exact = s.starts_with('=');
        if exact {
            s = &s[1..];
        }
        let names = s
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(String::from)
            .collect();
        IfSpec {
            exclude,
            exact,
            names,
        }
    }

    /// Whether interface `name` may be used.
    pub fn matches(&self, name: &str) -> bool {
        let listed = self.names.iter().any(|n| {
            if self.exact {
                name == n
            } else {
                name.starts_with(n.as_str())
            }
        });
        listed != self.exclude
    }
}

/// One address of one interface.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iface {
    pub name: String,
    pub addr: IpAddr,
    pub up: bool,
    pub loopback: bool,
}

/// Every IPv4/IPv6 address of every interface, in the kernel's order (`getifaddrs`).
pub fn interfaces() -> Result<Vec<Iface>> {
    let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we free below with freeifaddrs.
    if unsafe { libc::getifaddrs(&mut head) } != 0 {
        return Err(Error::os("getifaddrs"));
    }
    let mut out = Vec::new();
    let mut p = head;
    while !p.is_null() {
        // SAFETY: p is a node of the list getifaddrs returned, valid until freeifaddrs.
        let ifa = unsafe { &*p };
        p = ifa.ifa_next;
        if ifa.ifa_addr.is_null() || ifa.ifa_name.is_null() {
            continue;
        }
        // SAFETY: ifa_addr points to a sockaddr whose family field tells its real type.
        let family = unsafe { (*ifa.ifa_addr).sa_family } as i32;
        let addr = match family {
            libc::AF_INET => {
                // SAFETY: family AF_INET: the address is a sockaddr_in.
                let sin = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in) };
                IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
            }
            libc::AF_INET6 => {
                // SAFETY: family AF_INET6: the address is a sockaddr_in6.
                let sin6 = unsafe { &*(ifa.ifa_addr as *const libc::sockaddr_in6) };
                IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
            }
            _ => continue,
        };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let name = unsafe { CStr::from_ptr(ifa.ifa_name) }
            .to_string_lossy()
            .into_owned();
        let flags = ifa.ifa_flags as i32;
        out.push(Iface {
            name,
            addr,
            up: flags & libc::IFF_UP != 0,
            loopback: flags & libc::IFF_LOOPBACK != 0,
        });
    }
    // SAFETY: head came from getifaddrs and is freed once; no reference into it survives.
    unsafe { libc::freeifaddrs(head) };
    Ok(out)
}

fn usable(i: &Iface) -> bool {
    let link_local_v6 = matches!(i.addr, IpAddr::V6(a) if (a.segments()[0] & 0xffc0) == 0xfe80);
    i.up && !link_local_v6
}

/// First IPv4 address among `it`, else the first IPv6 one.
fn prefer_v4<'a>(it: impl Iterator<Item = &'a Iface> + Clone) -> Option<&'a Iface> {
    it.clone()
        .find(|i| i.addr.is_ipv4())
        .or_else(|| it.clone().next())
}

/// The interface to listen on, from `ifaces` and an optional `HCOMM_SOCKET_IFNAME`.
pub fn choose<'a>(ifaces: &'a [Iface], spec: Option<&IfSpec>) -> Option<&'a Iface> {
    let up = ifaces.iter().filter(|i| usable(i));
    match spec {
        Some(spec) => prefer_v4(up.filter(|i| spec.matches(&i.name))),
        None => prefer_v4(
            up.clone()
                .filter(|i| !i.loopback && !i.name.starts_with("docker")),
        )
        .or_else(|| prefer_v4(up.filter(|i| i.loopback))),
    }
}

/// The address this process listens on, chosen by `HCOMM_SOCKET_IFNAME` (or the default);
/// loopback when there is no interface at all. Returns the address and the interface name.
pub fn listen_address() -> Result<(IpAddr, String)> {
    listen_address_for(false)
}

/// As [`listen_address`]; with `loopback_only` (every rank is known to be on this host) and no
/// `HCOMM_SOCKET_IFNAME`, loopback: nothing off the host can then reach the port.
pub fn listen_address_for(loopback_only: bool) -> Result<(IpAddr, String)> {
    let spec_text = crate::param::socket_ifname();
    if loopback_only && spec_text.is_none() {
        return Ok((IpAddr::V4(Ipv4Addr::LOCALHOST), "lo".into()));
    }
    let all = interfaces()?;
    let spec = spec_text.as_deref().map(IfSpec::parse);
    match choose(&all, spec.as_ref()) {
        Some(i) => Ok((i.addr, i.name.clone())),
        None if spec.is_none() => Ok((IpAddr::V4(Ipv4Addr::LOCALHOST), "lo".into())),
        None => {
            let seen: Vec<String> = all
                .iter()
                .map(|i| format!("{} {}{}", i.name, i.addr, if i.up { "" } else { " (down)" }))
                .collect();
            Err(Error::new(
                Class::Arg,
                format!(
                    "HCOMM_SOCKET_IFNAME={:?} matches no interface that is up (interfaces: {})",
                    spec_text.unwrap_or_default(),
                    seen.join(", ")
                ),
            ))
        }
    }
}

/// The address to bind to when listening for `ip`: `ip` itself, or every interface
/// (`0.0.0.0` / `::`) when `HCOMM_LISTEN_ANY=1` asks for it (e.g. behind NAT, where the address a
/// peer dials is not one of ours). Peers are still told `ip`.
pub fn bind_ip(ip: IpAddr) -> IpAddr {
    if !crate::param::listen_any() {
        return ip;
    }
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(name: &str, addr: &str, up: bool) -> Iface {
        Iface {
            name: name.into(),
            addr: addr.parse().unwrap(),
            up,
            loopback: name == "lo",
        }
    }

    #[test]
    fn grammar() {
        let s = IfSpec::parse("eth");
        assert!(!s.exclude && !s.exact);
        assert!(s.matches("eth0") && s.matches("eth1") && !s.matches("ib0"));

        let s = IfSpec::parse("^docker,lo");
        assert!(s.exclude && !s.exact);
        assert_eq!(s.names, vec!["docker", "lo"]);
        assert!(!s.matches("docker0") && !s.matches("lo") && s.matches("eth0"));

        let s = IfSpec::parse("=eth0");
        assert!(!s.exclude && s.exact);
        assert!(s.matches("eth0") && !s.matches("eth01") && !s.matches("eth"));

        let s = IfSpec::parse("^=eth0, ib0 ");
        assert!(s.exclude && s.exact);
        assert_eq!(s.names, vec!["eth0", "ib0"]);
        assert!(!s.matches("eth0") && s.matches("eth01") && !s.matches("ib0"));

        // An empty list matches nothing; an empty exclusion list excludes nothing.
        assert!(!IfSpec::parse("").matches("eth0"));
        assert!(IfSpec::parse("^").matches("eth0"));
    }

    #[test]
    fn default_choice() {
        let ifs = vec![
            iface("lo", "127.0.0.1", true),
            iface("docker0", "172.17.0.1", true),
            iface("eth0", "fe80::1", true),
            iface("eth0", "fd00::2", true),
            iface("eth0", "192.0.2.2", true),
            iface("eth1", "10.0.0.1", true),
        ];
        // The first non-loopback, non-docker interface; IPv4 preferred.
        assert_eq!(choose(&ifs, None).unwrap().addr.to_string(), "192.0.2.2");
        // Only loopback (and a down interface): loopback.
        let lo_only = vec![
            iface("eth0", "10.1.1.1", false),
            iface("lo", "127.0.0.1", true),
        ];
        assert_eq!(choose(&lo_only, None).unwrap().name, "lo");
        // IPv6 only: a global IPv6 address, never a link-local one.
        let v6 = vec![
            iface("eth0", "fe80::1", true),
            iface("eth0", "fd00::2", true),
        ];
        assert_eq!(choose(&v6, None).unwrap().addr.to_string(), "fd00::2");
        assert!(choose(&[], None).is_none());
    }

    #[test]
    fn spec_choice() {
        let ifs = vec![
            iface("lo", "127.0.0.1", true),
            iface("eth0", "192.0.2.2", true),
            iface("eth1", "10.0.0.1", true),
            iface("ib0", "10.9.0.1", false),
        ];
        let pick = |s: &str| choose(&ifs, Some(&IfSpec::parse(s))).map(|i| i.name.clone());
        assert_eq!(pick("eth1").as_deref(), Some("eth1"));
        assert_eq!(pick("lo").as_deref(), Some("lo"));
        assert_eq!(pick("^eth0,lo").as_deref(), Some("eth1"));
        assert_eq!(pick("=eth").as_deref(), None);
        assert_eq!(
            pick("ib").as_deref(),
            None,
            "a down interface is never chosen"
        );
    }

    #[test]
    fn this_host_has_an_address() {
        let all = interfaces().unwrap();
        assert!(all.iter().any(|i| i.loopback), "{all:?}");
    }
}
