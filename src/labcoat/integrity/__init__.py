"""Integrity: flag vocabulary, blocklists, canonical URLs, transcript scans, run inspector."""

from labcoat.integrity._blocklist import (
    Blocklist,
    BlocklistHit,
    extract_urls,
    load_blocklist,
    scan_messages,
)
from labcoat.integrity._detectors import DETECTORS, detect
from labcoat.integrity._findings import Finding, RunView
from labcoat.integrity._flags import INSPECT_KEY, INTEGRITY_FLAGS, flags_of, run_flags
from labcoat.integrity._inspector import Inspection, RunFindings, inspect_log, inspect_logs
from labcoat.integrity._urls import CanonicalUrl, canonical_host, canonical_ip, canonical_url

__all__ = [
    "DETECTORS",
    "INSPECT_KEY",
    "INTEGRITY_FLAGS",
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
    "flags_of",
    "inspect_log",
    "inspect_logs",
    "load_blocklist",
    "run_flags",
    "scan_messages",
]
