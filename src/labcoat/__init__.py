"""labcoat: measure how well AI agents do real AI research.

Public API lives in the subpackages (`labcoat.families`, `labcoat.sandbox`,
`labcoat.agents`, ...); this module re-exports the few names most users need.

Packages, in layers, top to bottom. A package imports only from its own layer (without
a circle) or from those below it, every import counted (inside functions and under
`TYPE_CHECKING` too); tests/test_import_layers.py holds every package to this list, and a
new package joins it here:

    cli        __main__ _cli _registry
    report     report
    analysis   analysis
    runs       _run regrade
    families   families
    agents     agents
    grading    grading
    sandbox    sandbox
    base       integrity suites _providers
    core       _util _unavailable _version _errors __init__

- cli: the commands, and the entry point that registers labcoat's tasks with Inspect.
- report, analysis: what runs' logs say (tables, the HTML report, the results card).
- runs: running tasks (locally or on Ray) and grading kept workspaces again (regrade).
- families: the benchmarks, each a package with a `FamilySpec` (`families/_spec.py`).
- agents: the research agent, the human agent, the scripted and external agents.
- grading: protected grader sandboxes, kept workspaces, the grader version.
- sandbox: the bwrap sandbox (its own layers: `labcoat/sandbox/__init__.py`).
- base, core: integrity's vocabulary, the bundled suites, providers, shared helpers
  and errors (`__init__` is this module).
"""

from labcoat._errors import LabcoatError, TaskDataError
from labcoat._version import __version__

__all__ = ["LabcoatError", "TaskDataError", "__version__"]
