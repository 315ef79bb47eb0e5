"""Loaded by Inspect through the `inspect_ai` entry point: registers labcoat's tasks and sandbox."""

from labcoat.agents._scripted import labcoat_models  # noqa: F401  (registers labcoat/scripted)
from labcoat.families.paperbench import paperbench  # noqa: F401
from labcoat.families.rebench import rebench  # noqa: F401  (registers labcoat/rebench)
from labcoat.families.researchcodebench import researchcodebench  # noqa: F401
from labcoat.families.researchgym import researchgym  # noqa: F401
from labcoat.sandbox import BwrapSandboxEnvironment  # noqa: F401  (registers "bwrap")
