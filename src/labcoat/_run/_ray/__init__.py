"""`--ray`: every sample of a run as a Ray task on a cluster, one log dir (docs/scale.md)."""

from labcoat._run._ray._driver import run_on_ray

__all__ = ["run_on_ray"]
