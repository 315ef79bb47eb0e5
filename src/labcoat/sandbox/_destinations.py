"""Where the network proxy may connect: public addresses of the internet, never the host.

A destination is resolved once; every address it resolves to must be public, and the
proxy then connects to the address it checked (a second lookup could answer
differently: DNS rebinding). "Public" means `ipaddress`'s `is_global`, after unwrapping
every IPv6 form that carries an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-
compatible `::a.b.c.d`, SIIT `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96` and the local-use
`64:ff9b:1::/48`, 6to4, Teredo); an IPv6 address outside global unicast (2000::/3) is
refused whatever it carries, and not one of the host's own addresses (its interfaces,
which on a cloud VM may be public) nor a model endpoint of the harness (an agent that
reached it would get completions outside Inspect's record and budget).

Refused: loopback, link-local, private (RFC 1918, ULA `fc00::/7`), shared (CGNAT),
unspecified, multicast, reserved, documentation ranges, the host's own addresses, the
harness's model endpoints; in every spelling the C library accepts (`2130706433`,
`0x7f.1`, `0177.0.0.1`, `[::ffff:7f00:1]`) and behind any DNS name.
"""

from __future__ import annotations

import contextlib
import ipaddress
import itertools
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from labcoat.integrity import canonical_host, canonical_ip

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOW_ENV = "LABCOAT_PROXY_ALLOW"
"""`ADDRESS:PORT,...` the proxy may reach although they are not public (tests serve
"the web" from the host's loopback). Set in the harness's environment only."""
REFUSE_ENV = "LABCOAT_PROXY_REFUSE"
"""Further host names or addresses the proxy refuses (e.g. a public model gateway)."""
_ENDPOINT_SUFFIXES = ("_BASE_URL", "_API_BASE")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated IPv4-compatible `::a.b.c.d`
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT `::ffff:0:a.b.c.d`
_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
"""The only IPv6 block the internet routes; everything else is refused outright."""
_CACHE_SECONDS = 30.0


def embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address carries (mapped, NAT64, 6to4, Teredo), if any."""
    if isinstance(address, ipaddress.IPv4Address) or address.is_loopback or address.is_unspecified:
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if any(address in net for net in (_NAT64, _LOCAL_NAT64, _COMPATIBLE, _TRANSLATED)):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def _local_ipv4() -> set[Address]:
    found: set[Address] = set()
    with contextlib.suppress(OSError):
        lines = Path("/proc/net/fib_trie").read_text().splitlines()
        for previous, line in itertools.pairwise(lines):
            if "/32 host LOCAL" in line:
                with contextlib.suppress(ValueError):
                    found.add(ipaddress.ip_address(previous.split()[-1]))
    return found


def _local_ipv6() -> set[Address]:
    found: set[Address] = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/if_inet6").read_text().splitlines():
            text = line.split()[0]
            with contextlib.suppress(ValueError, IndexError):
                found.add(ipaddress.ip_address(":".join(text[i : i + 4] for i in range(0, 32, 4))))
    return found


def _resolve(host: str) -> set[Address]:
    ip = canonical_ip(host)
    if ip is not None:
        return {ipaddress.ip_address(ip)}
    with contextlib.suppress(OSError, UnicodeError):
        return {
            # an IP family's address is text; str() only tells the type checker so
            ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        }
    return set()


def _endpoint_hosts() -> set[str]:
    """Hosts of the harness's model endpoints, from its `*_BASE_URL` variables."""
    hosts: set[str] = set()
    for name, value in os.environ.items():
        if name.endswith(_ENDPOINT_SUFFIXES) and "://" in value:
            with contextlib.suppress(ValueError):
                host = urlsplit(value.strip()).hostname
                if host:
                    hosts.add(canonical_host(host))
    extra = os.environ.get(REFUSE_ENV, "")
    hosts.update(canonical_host(h) for h in extra.split(",") if h.strip())
    return hosts


@dataclass
class _HostFacts:
    at: float
    own: set[Address]
    endpoint_hosts: set[str]
    endpoint_addresses: set[Address]


_facts: _HostFacts | None = None


def host_facts() -> _HostFacts:
    """The host's own addresses and its model endpoints (re-read every 30 s)."""
    global _facts
    if _facts is None or time.monotonic() - _facts.at > _CACHE_SECONDS:
        endpoints = _endpoint_hosts()
        addresses: set[Address] = set()
        for host in endpoints:
            addresses |= _resolve(host)
        _facts = _HostFacts(time.monotonic(), _local_ipv4() | _local_ipv6(), endpoints, addresses)
    return _facts


def _allowed_exceptions() -> set[tuple[str, int]]:
    pairs = set()
    for item in os.environ.get(ALLOW_ENV, "").split(","):
        host, _, port = item.strip().rpartition(":")
        ip = canonical_ip(host) if host else None
        if ip and port.isdigit():
            pairs.add((ip, int(port)))
    return pairs


def why_not_public(address: Address) -> str | None:
    """Why the proxy must not connect to `address`, or None when it is public."""
    inner = embedded_ipv4(address)
    # an IPv6 form that carries an IPv4 address is judged by that address; any other IPv6
    # address must be global unicast
    candidate = inner if inner is not None else address
    if candidate.is_loopback:
        return "loopback address"
    if candidate.is_link_local:
        return "link-local address"
    if candidate.is_unspecified:
        return "unspecified address"
    if candidate.is_multicast:
        return "multicast address"
    if candidate.is_private or candidate.is_reserved or not candidate.is_global:
        return "private or reserved address"
    if isinstance(candidate, ipaddress.IPv6Address) and candidate not in _GLOBAL_UNICAST:
        return "IPv6 address outside global unicast (2000::/3)"
    facts = host_facts()
    if address in facts.own or (inner is not None and inner in facts.own):
        return "one of the host's own addresses"
    if address in facts.endpoint_addresses or (inner and inner in facts.endpoint_addresses):
        return "a model endpoint of the harness"
    return None


@dataclass(frozen=True)
class Verdict:
    """Where a request may go: the checked address to connect to, or why not."""

    address: str | None
    refusal: str | None

    @property
    def allowed(self) -> bool:
        return self.refusal is None


def check_destination(host: str, port: int) -> Verdict:
    """Resolve `host` once and decide; every address it resolves to must be allowed."""
    if not host:
        return Verdict(None, "no destination host")
    name = canonical_host(host)
    if name in host_facts().endpoint_hosts:
        return Verdict(None, "a model endpoint of the harness")
    if name in ("localhost", "localhost.localdomain") or name.endswith(".localhost"):
        return Verdict(None, "loopback address")
    addresses = _resolve(host)
    if not addresses:
        return Verdict(None, f"cannot resolve {host}")
    exceptions = _allowed_exceptions()
    ordered = sorted(addresses, key=lambda a: (a.version, int(a)))
    for address in ordered:
        plain = embedded_ipv4(address) or address
        if (str(plain), port) in exceptions:
            continue
        reason = why_not_public(address)
        if reason is not None:
            return Verdict(None, f"{host} is {address}: {reason}")
    chosen = next((a for a in ordered if a.version == 4), ordered[0])
    return Verdict(str(embedded_ipv4(chosen) or chosen), None)
