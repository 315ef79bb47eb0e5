"""A person as the agent (`--agent human`) and the terminal they attach with."""

from labcoat.agents.human._agent import human_agent
from labcoat.agents.human._record import RECORDING_KEY, SUMMARY_KEY

__all__ = ["RECORDING_KEY", "SUMMARY_KEY", "human_agent"]
