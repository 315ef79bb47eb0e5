"""Which solver runs a sample: `--agent oracle|noop|research|human|claude-code|codex|cli:<cmd>`."""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai.solver import Solver
from inspect_ai.tool import Tool

from labcoat._errors import LabcoatError
from labcoat.agents._external import CLI_PRESETS, external_agent
from labcoat.agents._noop import noop_agent

AGENT_NAMES = ("oracle", "noop", "research", "human", *CLI_PRESETS, "cli:<command>")
WITHOUT_MODEL = ("oracle", "noop", "human")
"""Agents that call no model (their runs use Inspect's `none/none`)."""

FamilyTools = Callable[[dict], list[Tool]]
"""Extra tools a family gives the agent, built from the sample's metadata."""


def works_in_sandbox(name: str) -> bool:
    """The agent acts only through a sandbox's shell (a person, an external CLI agent): a
    sample without one gives it nothing to work in."""
    return name == "human" or name in CLI_PRESETS or name.startswith("cli:")


def check_agent_name(name: str) -> str:
    if name in AGENT_NAMES[:-1] or (name.startswith("cli:") and name[4:].strip()):
        return name
    raise LabcoatError(f"unknown agent '{name}' (choose from {', '.join(AGENT_NAMES)})")


def agent_solver(name: str, *, oracle: Callable[[], Solver], family_tools: FamilyTools) -> Solver:
    check_agent_name(name)
    if name == "oracle":
        return oracle()
    if name == "noop":
        return noop_agent()
    if name == "human":
        from labcoat.agents.human import human_agent

        return human_agent(family_tools=family_tools)
    if name == "research":
        from labcoat.agents.research import research_agent

        return research_agent(family_tools=family_tools)
    return external_agent(name)
