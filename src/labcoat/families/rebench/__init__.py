"""RE-Bench: METR task-standard families, run as METR's own runners run them, with
labcoat's optional sidecar (`labcoat.yaml`) for normalization and validation."""

from labcoat.families.rebench._family import (
    TaskFamilyDir,
    family_setup,
    find_families,
    run_operation,
)
from labcoat.families.rebench._manifest import Manifest, load_manifest
from labcoat.families.rebench._preflight import preflight
from labcoat.families.rebench._resources import TaskResources, task_resources
from labcoat.families.rebench._scoring import (
    normalize,
    rebench_scorer,
    score_log_tool,
    score_tool,
)
from labcoat.families.rebench._secrets import MissingSecretsError, use_secrets_file
from labcoat.families.rebench._sidecar import Sidecar, TaskSpec, load_sidecar
from labcoat.families.rebench._spec import SPEC
from labcoat.families.rebench._task import discover, rebench, without_image_builds

__all__ = [
    "SPEC",
    "Manifest",
    "MissingSecretsError",
    "Sidecar",
    "TaskFamilyDir",
    "TaskResources",
    "TaskSpec",
    "discover",
    "family_setup",
    "find_families",
    "load_manifest",
    "load_sidecar",
    "normalize",
    "preflight",
    "rebench",
    "rebench_scorer",
    "run_operation",
    "score_log_tool",
    "score_tool",
    "task_resources",
    "use_secrets_file",
    "without_image_builds",
]
