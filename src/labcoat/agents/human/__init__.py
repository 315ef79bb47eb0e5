"""A person as the agent (`--agent human`) and the terminal they attach with."""

from labcoat.agents.human._agent import human_agent

__all__ = ["human_agent"]
