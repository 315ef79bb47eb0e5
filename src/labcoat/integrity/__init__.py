"""Integrity: blocklists, canonical URLs, transcript scans and the run inspector."""

from labcoat.integrity._blocklist import (
    Blocklist,
    BlocklistHit,
    extract_urls,
    load_blocklist,
    scan_messages,
)
from labcoat.integrity._detectors import DETECTORS, detect
from labcoat.integrity._findings import Finding, RunView
from labcoat.integrity._inspector import Inspection, RunFindings, inspect_log, inspect_logs
from labcoat.integrity._urls import CanonicalUrl, canonical_host, canonical_ip, canonical_url

__all__ = [
    "DETECTORS",
    "Blocklist",
    "BlocklistHit",
    "CanonicalUrl",
    "Finding",
    "Inspection",
    "RunFindings",
    "RunView",
    "canonical_host",
    "canonical_ip",
    "canonical_url",
    "detect",
    "extract_urls",
    "inspect_log",
    "inspect_logs",
    "load_blocklist",
    "scan_messages",
]
