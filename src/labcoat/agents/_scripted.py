"""`labcoat/scripted`: an offline model that plays a script, for demos and tests.

Nothing is downloaded and no key is needed: every turn carries its own token usage
(Inspect's `mockllm` would count tokens with tiktoken, which fetches an encoding).

Without a script it behaves like a careful do-nothing agent: it looks around with
`bash`, asks the `score` tool when the task has one, and submits. With `-M script=FILE`
(a YAML or JSON list) it plays the given turns, then submits:

```yaml
- tool: bash
  arguments: {cmd: "python3 solution.py"}
- text: "a plain answer (a turn without a tool call)"
```
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from labcoat._errors import LabcoatError
from labcoat._util.yaml_file import read_yaml

PROVIDER = "labcoat"
MODELS = ("scripted",)
CHARS_PER_TOKEN = 4  # a rough count: scripted runs need a usage figure, not a tokenizer
DONE = "labcoat/scripted: the script is over; submitting without changes."


def _tokens(text: str) -> int:
    return max(1, len(text) // CHARS_PER_TOKEN)


def _message_text(message: ChatMessage) -> str:
    text = message.text
    calls = getattr(message, "tool_calls", None) or []
    return text + "".join(json.dumps(c.arguments) for c in calls)


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """The turns of a script file; a malformed turn is one line naming file and turn."""
    data = read_yaml(Path(path))
    if not isinstance(data, list):
        raise LabcoatError(f"{path}: a scripted model's script is a list of turns")
    for i, turn in enumerate(data):
        ok = isinstance(turn, dict) and (
            ("text" in turn and isinstance(turn["text"], str))
            or (isinstance(turn.get("tool"), str) and isinstance(turn.get("arguments", {}), dict))
        )
        if not ok:
            expected = "{text: STR} or {tool: NAME, arguments: {...}}"
            raise LabcoatError(f"{path}: turn {i + 1}: expected {expected}")
    return data


def default_script(tools: list[ToolInfo]) -> list[dict[str, Any]]:
    names = {t.name for t in tools}
    turns: list[dict[str, Any]] = []
    if "bash" in names:
        turns.append({"tool": "bash", "arguments": {"cmd": "pwd && ls -la"}})
    if "score" in names:
        turns.append({"tool": "score", "arguments": {}})
    return turns


class ScriptedModel(ModelAPI):
    """Plays a script turn by turn; which turn is next follows from the conversation."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - Inspect's own signature
        script: str | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config)
        if model_name not in MODELS:
            raise LabcoatError(
                f"unknown model {PROVIDER}/{model_name} (known: "
                + ", ".join(f"{PROVIDER}/{m}" for m in MODELS)
                + ")"
            )
        if model_args:
            raise LabcoatError(
                f"{PROVIDER}/{model_name} takes only the model argument `script`, not "
                + ", ".join(sorted(model_args))
            )
        self.script = load_script(script) if script else None

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        turn = sum(isinstance(m, ChatMessageAssistant) for m in input)
        script = self.script if self.script is not None else default_script(tools)
        output = self._turn(script, turn, tools)
        prompt = "".join(_message_text(m) for m in input)
        reply = _message_text(output.message)
        output.usage = ModelUsage(
            input_tokens=_tokens(prompt),
            output_tokens=_tokens(reply),
            total_tokens=_tokens(prompt) + _tokens(reply),
        )
        return output

    def _turn(self, script: list[dict[str, Any]], turn: int, tools: list[ToolInfo]) -> ModelOutput:
        model = f"{PROVIDER}/{self.model_name}"
        if turn < len(script):
            step = script[turn]
            if "text" in step:
                return ModelOutput.from_content(model, step["text"])
            return ModelOutput.for_tool_call(model, step["tool"], step.get("arguments") or {})
        if "submit" in {t.name for t in tools}:
            return ModelOutput.for_tool_call(model, "submit", {"answer": DONE})
        return ModelOutput.from_content(model, DONE)

    async def count_text_tokens(self, text: str) -> int:
        return _tokens(text)  # Inspect's default would fetch a tiktoken encoding


@modelapi(name=PROVIDER)
def labcoat_models() -> type[ModelAPI]:
    return ScriptedModel
