"""Loaded by Inspect through the `inspect_ai` entry point: registers labcoat's tasks and sandbox."""

from labcoat.agents._scripted import labcoat_models  # noqa: F401  (registers labcoat/scripted)
from labcoat.families import family_module, family_names
from labcoat.sandbox import BwrapSandboxEnvironment  # noqa: F401  (registers "bwrap")

# importing a family's package registers its @task (`labcoat/rebench`, ...) with Inspect
for _name in family_names():
    family_module(_name)
