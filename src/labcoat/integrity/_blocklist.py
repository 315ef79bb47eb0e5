"""URL blocklists — ResearchGym's `blocked_urls.yaml`, PaperBench's `blacklist.txt` — and
finding blocked URLs in transcripts. One set of rules serves the network proxy, the
agent's web search and the transcript scan.

Upstream's file has two lists: `urls` (host and path, no scheme, e.g.
`arxiv.org/abs/2501.13198`) and `patterns` (shell-style globs such as `*2501.13198*`).
A URL is blocked when, in canonical form (`labcoat.integrity.canonical_url`: scheme,
`www.`, case, percent-encoding, trailing dots, IDNA, default ports and dot segments make
no difference),
- its host is an entry's host or a subdomain of it, its port the entry's (when the entry
  names one), and its path starts with the entry's path (so `arxiv.org/abs/X` also
  blocks `export.arxiv.org/abs/Xv2` and `ARXIV.org./abs/X%2E`), or
- it matches a pattern (against `host/path` in canonical form, or the decoded URL).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from labcoat._util.yaml_file import load_model
from labcoat.integrity._urls import canonical_url, decode


class Blocklist(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    urls: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()

    @field_validator("urls", "patterns", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return () if value is None else value

    @field_validator("urls", "patterns")
    @classmethod
    def _clean(cls, values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v.strip() for v in values if v and v.strip()))

    def __bool__(self) -> bool:
        return bool(self.urls or self.patterns)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Blocklist:
        return cls.model_validate(data or {})

    def to_json(self) -> dict[str, list[str]]:
        return {"urls": list(self.urls), "patterns": list(self.patterns)}

    def blocks(self, url: str) -> bool:
        return self.rule_for(url) is not None

    def hits_in_text(self, text: str) -> list[str]:
        """Blocked URLs mentioned anywhere in a text (a transcript, a tool output)."""
        return sorted({url for url in extract_urls(text) if self.blocks(url)})

    def rule_for(self, url: str) -> str | None:
        """The entry or pattern that blocks `url`, or None."""
        target = canonical_url(url)
        if not target.host:
            return None
        for entry in self.urls:
            rule = canonical_url(entry)
            host_matches = target.host == rule.host or target.host.endswith("." + rule.host)
            if host_matches and target.same_port(rule) and target.path.startswith(rule.path):
                return entry
        texts = (target.bare, decode(url).strip().lower())
        for pattern in self.patterns:
            p = pattern.lower()
            if any(fnmatch.fnmatchcase(text, p) for text in texts):
                return pattern
        return None


def load_blocklist(path: Path) -> Blocklist:
    """The task's blocklist; an empty one when the file is absent."""
    return load_model(Blocklist, path) if path.is_file() else Blocklist()


# URLs with a scheme; host/path without one; bare hosts only with a common TLD, since
# names like `model.pt` or `train.py` look like hosts too.
_COMMON_TLDS = "com|org|net|io|ai|edu|gov|dev|cc|co|me|info|app|xyz|site|page"
_URL = re.compile(
    r"(?:\b[a-z][a-z0-9+.-]*://[^\s'\"<>`]+)"
    r"|(?:\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z]{2,}\.?(?::\d+)?/[^\s'\"<>`]*)"
    rf"|(?:\b(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+(?:{_COMMON_TLDS})\b)",
    re.IGNORECASE,
)
_TRAILING = ".,;:!?)]}>*"


def extract_urls(text: str) -> list[str]:
    found = []
    text = text.replace("\\/", "/")  # JSON's escaped slashes
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(_TRAILING)
        if url.lower().startswith(("file://", "mailto:")):
            continue
        found.append(url)
    return found


@dataclass(frozen=True)
class BlocklistHit:
    url: str
    rule: str
    message: int
    """Index of the message in the sample's transcript."""
    role: str
    where: str
    """`tool call <function>` (the agent asked for it), `tool output <function>` (a tool
    showed it to the agent) or `text` (the agent wrote it)."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _strings(v)


def _texts(message: Any) -> Iterator[tuple[str, str]]:
    """(where, text) pairs of one Inspect ChatMessage."""
    role = getattr(message, "role", "")
    function = getattr(message, "function", None) or ""
    text = getattr(message, "text", "") or ""
    if text:
        yield (f"tool output {function}".strip() if role == "tool" else "text"), text
    for call in getattr(message, "tool_calls", None) or []:
        for value in _strings(call.arguments):
            yield f"tool call {call.function}", value


def scan_messages(
    messages: Sequence[Any], blocklist: Blocklist, roles: Iterable[str] = ("assistant", "tool")
) -> list[BlocklistHit]:
    """Blocked URLs the agent requested, wrote or was shown.

    Only the agent's messages and tool results are scanned: the instructions may cite
    sources on purpose.
    """
    if not blocklist:
        return []
    wanted = set(roles)
    hits: list[BlocklistHit] = []
    seen: set[tuple[int, str, str]] = set()
    for index, message in enumerate(messages):
        role = getattr(message, "role", "")
        if role not in wanted:
            continue
        for where, text in _texts(message):
            for url in extract_urls(text):
                rule = blocklist.rule_for(url)
                if rule is not None and (index, where, url) not in seen:
                    seen.add((index, where, url))
                    hits.append(BlocklistHit(url, rule, index, role, where))
    return hits
