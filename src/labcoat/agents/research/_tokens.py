"""Counting tokens on this machine, offline, for model calls whose response has no usage.

Never downloads: tiktoken's `o200k_base` encoding is used only when it is already in
tiktoken's cache (and its checksum matches, so tiktoken will not fetch it again).
Otherwise tokens are estimated at one per 3 bytes of UTF-8 text, which overcounts
typical English and code (about 4 bytes a token) so that budgets stop early rather
than late. Which of the two is in use is said in the log (`method`).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ModelOutput, ModelUsage
from inspect_ai.tool import Tool, ToolDef, ToolInfo

ENCODING = "o200k_base"
ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
ENCODING_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
BYTES_PER_TOKEN = 3
MESSAGE_OVERHEAD = 4  # role and separators, as chat formats add per message


@dataclass(frozen=True)
class TokenCounter:
    method: str
    """`tiktoken o200k_base (cached)` or `estimate: 1 token per 3 bytes`."""
    count_text: Callable[[str], int]

    def count_messages(self, messages: Sequence[ChatMessage]) -> int:
        return sum(self._count_message(m) for m in messages)

    def _count_message(self, message: ChatMessage) -> int:
        tokens = MESSAGE_OVERHEAD + self.count_text(message.text)
        if isinstance(message, ChatMessageAssistant):
            for call in message.tool_calls or []:
                tokens += self.count_text(call.function + json.dumps(call.arguments))
        return tokens

    def count_tools(self, tools: Sequence[Tool | ToolDef | ToolInfo]) -> int:
        infos = [t if isinstance(t, ToolInfo) else _info(t) for t in tools]
        return sum(self.count_text(i.model_dump_json(exclude_none=True)) for i in infos)

    def usage(
        self,
        messages: Sequence[ChatMessage],
        tools: Sequence[Tool | ToolDef | ToolInfo],
        output: ModelOutput,
    ) -> ModelUsage:
        """What the call would have reported: the whole request in, the reply out."""
        input_tokens = self.count_messages(messages) + self.count_tools(tools)
        output_tokens = self.count_messages([output.message]) if output.choices else 0
        return ModelUsage(
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            total_tokens=input_tokens + output_tokens,
        )


def _info(tool: Tool | ToolDef) -> ToolInfo:
    tool_def = tool if isinstance(tool, ToolDef) else ToolDef(tool)
    return ToolInfo(
        name=tool_def.name, description=tool_def.description, parameters=tool_def.parameters
    )


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text.encode("utf-8", errors="replace")) / BYTES_PER_TOKEN)


def cached_encoding_path() -> Path | None:
    """Where tiktoken keeps `o200k_base` once downloaded, if it is there and intact."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            directory = os.environ[variable]
            break
    else:
        directory = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not directory:
        return None  # caching disabled: tiktoken would download every time
    path = Path(directory) / hashlib.sha1(ENCODING_URL.encode()).hexdigest()
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return path if hashlib.sha256(data).hexdigest() == ENCODING_SHA256 else None


@cache
def local_counter() -> TokenCounter:
    if cached_encoding_path() is not None:
        try:
            import tiktoken

            encoding = tiktoken.get_encoding(ENCODING)  # reads the verified cache
            return TokenCounter(
                f"tiktoken {ENCODING} (cached)",
                lambda text: len(encoding.encode(text, disallowed_special=())),
            )
        except Exception:  # an unusable tiktoken install: estimate instead
            pass
    return TokenCounter(f"estimate: 1 token per {BYTES_PER_TOKEN} bytes", estimate_tokens)
