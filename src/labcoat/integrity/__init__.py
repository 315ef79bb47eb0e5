"""Integrity: blocklists, canonical URLs, transcript scans and the run inspector."""

from labcoat.integrity._blocklist import (
    Blocklist,
    BlocklistHit,
    extract_urls,
    load_blocklist,
    scan_messages,
)
from labcoat.integrity._urls import CanonicalUrl, canonical_host, canonical_ip, canonical_url

__all__ = [
    "Blocklist",
    "BlocklistHit",
    "CanonicalUrl",
    "canonical_host",
    "canonical_ip",
    "canonical_url",
    "extract_urls",
    "load_blocklist",
    "scan_messages",
]
