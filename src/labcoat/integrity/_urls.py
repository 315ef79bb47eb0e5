"""One canonical form for URLs and host names, so that a blocklist matches every spelling.

A URL can name the same page in many ways: `HTTPS://ArXiv.org./abs/1909%2E01520`,
`http://arxiv.org:80/abs/./1909.01520`, `http://xn--...` for a Unicode host, `0x7f.1`
for 127.0.0.1. Matching on the text as written lets every one of those through; matching
on `canonical_url` does not. The canonical form is for matching only, never for fetching.
"""

from __future__ import annotations

import contextlib
import functools
import ipaddress
import posixpath
import re
import socket
from dataclasses import dataclass
from urllib.parse import unquote

DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21}
_SCHEME = re.compile(r"^([a-z][a-z0-9+.-]*):(?://|\\\\)")
_CONTROL = re.compile(r"[\x00-\x20\x7f]")
_MAX_DECODE = 4


@dataclass(frozen=True)
class CanonicalUrl:
    """A URL reduced to what decides where it leads: host, port and path (with query)."""

    host: str
    """Lower case, IDNA (punycode) form, no trailing dot, no `www.`; IP addresses in
    their standard notation (dotted IPv4, compressed IPv6, IPv4-mapped IPv6 as IPv4)."""
    port: int | None
    """The port, the scheme's default when none is written; None when neither says."""
    path: str
    """Percent-decoded, lower case, dot segments resolved, `?query` kept, no trailing `/`."""

    @property
    def bare(self) -> str:
        """`host[:port]/path`, the text patterns are matched against."""
        port = f":{self.port}" if self.port not in (None, *DEFAULT_PORTS.values()) else ""
        return f"{self.host}{port}{self.path}"

    def same_port(self, other: CanonicalUrl) -> bool:
        """Whether two ports agree, an unknown port agreeing with any."""
        return self.port is None or other.port is None or self.port == other.port


def decode(text: str) -> str:
    """Percent-decoding repeated until nothing changes (`%252E` is `.` as well)."""
    for _ in range(_MAX_DECODE):
        decoded = unquote(text, errors="replace")
        if decoded == text:
            break
        text = decoded
    return text


def canonical_ip(host: str) -> str | None:
    """The standard notation of an IP address in any spelling the C library accepts
    (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`, `[::ffff:7f00:1]`), else None."""
    text = host.strip("[]")
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        if not re.fullmatch(r"[0-9a-fx.]+", text) or not re.search(r"\d", text):
            return None
        try:  # inet_aton knows the historical forms: decimal, hex, octal, short
            address = ipaddress.ip_address(socket.inet_ntoa(socket.inet_aton(text)))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return str(address)


def canonical_host(host: str) -> str:
    """A host name or address in the form `CanonicalUrl.host` describes."""
    host = decode(host).strip().lower().replace("\u3002", ".").rstrip(".")
    ip = canonical_ip(host)
    if ip is not None:
        return ip
    with contextlib.suppress(UnicodeError):  # not a valid IDNA name: keep its text
        host = host.encode("idna").decode("ascii")
    host = host.rstrip(".")
    return host.removeprefix("www.")


def _split_authority(authority: str) -> tuple[str, int | None]:
    authority = authority.rsplit("@", 1)[-1]
    if authority.startswith("["):
        host, _, rest = authority[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, _, port_text = authority.partition(":")
    port = int(port_text) if port_text.isdigit() else None
    return host, port


def _clean_path(path: str) -> str:
    path, sep, query = path.partition("?")
    path = re.sub(r"/{2,}", "/", path)
    if path:
        trailing = path.endswith("/")
        path = posixpath.normpath("/" + path.lstrip("/"))
        path = "" if path == "/" else path
        if trailing and path:
            path += "/"
    out = path + (sep + query if sep else "")
    return out.rstrip("/") if out != "/" else ""


@functools.lru_cache(maxsize=8192)
def canonical_url(url: str) -> CanonicalUrl:
    """The canonical form of a URL, or of a scheme-less `host/path` blocklist entry."""
    text = _CONTROL.sub("", url).replace("\\", "/")
    text = text.split("#", 1)[0]
    text = decode(text).split("#", 1)[0].lower()
    scheme = None
    match = _SCHEME.match(text)
    if match:
        scheme = match.group(1)
        text = text[match.end() :]
    text = text.lstrip("/")
    cut = min((i for i in (text.find("/"), text.find("?")) if i >= 0), default=len(text))
    authority, path = text[:cut], text[cut:]
    host, port = _split_authority(authority)
    if port is None and scheme is not None:
        port = DEFAULT_PORTS.get(scheme)
    if path.startswith("?"):
        path = "/" + path
    return CanonicalUrl(canonical_host(host) if host else "", port, _clean_path(path))
