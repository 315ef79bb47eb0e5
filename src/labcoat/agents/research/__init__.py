"""The research agent and its tools."""

from labcoat.agents.research._agent import base_tools, research_agent
from labcoat.agents.research._limits_left import AgentLimitsLeft
from labcoat.agents.research._model import DEFAULT_MODEL_TIMEOUT, ModelCallError, RetryPolicy

__all__ = [
    "DEFAULT_MODEL_TIMEOUT",
    "AgentLimitsLeft",
    "ModelCallError",
    "RetryPolicy",
    "base_tools",
    "research_agent",
]
