"""What the inspector reads of one run, and what it reports about it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from labcoat._util.store_keys import DISK_KEY, NETWORK_KEY
from labcoat.integrity._blocklist import Blocklist

INSPECT_PREFIX = "inspect: "
"""Integrity flags the inspector wrote start with this; a grader's never do."""
FINDINGS_KEY = "integrity_findings"


@dataclass(frozen=True)
class Finding:
    """One suspicion about a run, with the evidence for it."""

    detector: str
    """`network`, `blocked-url`, `protected-path`, `tampering`, `fabricated-results`,
    `escape`, `grader`, `resources`, `score` or `llm`."""
    summary: str
    evidence: tuple[str, ...] = ()
    """Quotes from the run, each saying where it is (`message 12, tool call bash: ...`)."""
    flag: bool = True
    """True: the run is flagged (an integrity flag, marked in every table). False: a note
    for the reviewer that does not flag the run."""

    @property
    def line(self) -> str:
        return f"{INSPECT_PREFIX}{self.detector}: {self.summary}"

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "evidence": list(self.evidence)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Finding:
        return cls(
            str(data["detector"]),
            str(data["summary"]),
            tuple(str(e) for e in data.get("evidence") or ()),
            bool(data.get("flag", True)),
        )


@dataclass(frozen=True)
class Action:
    """A text the agent produced: a tool call's argument, or its own words."""

    message: int
    where: str
    """`tool call bash`, `tool call write_file (content)`, `text`."""
    text: str
    path: str | None = None
    """For file writes: the file written."""

    def quote(self, start: int = 0, end: int | None = None, width: int = 160) -> str:
        end = len(self.text) if end is None else end
        lo = max(0, start - width // 3)
        snippet = self.text[lo : max(end, lo) + width // 2].replace("\n", "⏎ ")
        return f"message {self.message}, {self.where}: {snippet[:width]}"


@dataclass
class RunView:
    """The parts of one Inspect sample the detectors read."""

    sample_id: str
    epoch: int
    family: str
    task_id: str
    actions: list[Action] = field(default_factory=list)
    outputs: list[Action] = field(default_factory=list)
    """Tool results the agent was shown."""
    messages: list[Any] = field(default_factory=list)
    network: list[dict[str, Any]] = field(default_factory=list)
    disk: dict[str, Any] | None = None
    score_metadata: dict[str, Any] = field(default_factory=dict)
    score_value: dict[str, Any] = field(default_factory=dict)
    sample_metadata: dict[str, Any] = field(default_factory=dict)
    blocklist: Blocklist = field(default_factory=Blocklist)
    store: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, sample: Any, family: str) -> RunView:
        meta = sample.metadata or {}
        score = next(iter((sample.scores or {}).values()), None)
        score_meta = dict(score.metadata or {}) if score is not None else {}
        value = score.value if score is not None and isinstance(score.value, dict) else {}
        view = cls(
            sample_id=str(sample.id),
            epoch=int(sample.epoch),
            family=family,
            task_id=str(meta.get("task_id", sample.id)),
            messages=list(sample.messages or []),
            network=list((sample.store or {}).get(NETWORK_KEY) or []),
            disk=(sample.store or {}).get(DISK_KEY),
            score_metadata=score_meta,
            score_value=dict(value),
            sample_metadata=dict(meta),
            blocklist=Blocklist.from_json(meta.get("blocklist")),
            store=dict(sample.store or {}),
        )
        view._read_messages()
        return view

    def _read_messages(self) -> None:
        for index, message in enumerate(self.messages):
            role = getattr(message, "role", "")
            if role == "assistant":
                if message.text:
                    self.actions.append(Action(index, "text", message.text))
                for call in message.tool_calls or []:
                    args = call.arguments or {}
                    path = next(
                        (
                            str(args[k])
                            for k in ("path", "file", "file_path", "filename")
                            if k in args
                        ),
                        None,
                    )
                    for key, value in args.items():
                        text = value if isinstance(value, str) else json.dumps(value)
                        where = f"tool call {call.function}" + (f" ({key})" if key else "")
                        self.actions.append(Action(index, where, text, path))
            elif role == "tool":
                text = message.text or ""
                if text:
                    function = getattr(message, "function", "") or ""
                    self.outputs.append(Action(index, f"tool output {function}".strip(), text))
