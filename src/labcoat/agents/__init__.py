"""Agents: the oracle and noop used to validate tasks, the research agent, external CLIs,
and a person (`human`)."""

from labcoat.agents._external import external_agent
from labcoat.agents._noop import noop_agent
from labcoat.agents._select import (
    AGENT_NAMES,
    WITHOUT_MODEL,
    FamilyTools,
    agent_solver,
    check_agent_name,
    works_in_sandbox,
)

__all__ = [
    "AGENT_NAMES",
    "WITHOUT_MODEL",
    "FamilyTools",
    "agent_solver",
    "check_agent_name",
    "external_agent",
    "noop_agent",
    "works_in_sandbox",
]
