"""Cluster-wide model concurrency inside Inspect, on a node.

Inspect bounds each model's connections per process through a pluggable semaphore
registry. On a node, the run's registry is wrapped so that holding a model's slot also
holds one of the coordinator's cluster-wide slots for that model: a call waits for both,
and the local limit still applies. It is installed by an Inspect hook at the start of the
node's eval (Inspect resets the registry when an eval starts); the node registers that hook
when it starts a sample.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from inspect_ai.hooks import Hooks, RunStart, hooks
from inspect_ai.util import _concurrency

from labcoat._run._ray._spec import RunSpec


class _ClusterHold:
    """One hold of a model slot: the local semaphore, then a cluster slot."""

    def __init__(self, local: Any, coordinator: Any, model: str, holder: str) -> None:
        self._local = local
        self._coordinator = coordinator
        self._model = model
        self._holder = holder
        self._request = ""

    async def __aenter__(self) -> None:
        await self._local.__aenter__()
        self._request = uuid.uuid4().hex
        try:
            await self._coordinator.acquire.remote(self._model, self._holder, self._request)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._coordinator.release.remote(self._model, self._request)
                await self._local.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc: object) -> None:
        try:
            with anyio.CancelScope(shield=True):
                await self._coordinator.release.remote(self._model, self._request)
        finally:
            await self._local.__aexit__(*exc)


class _ClusterSemaphore:
    """Inspect's semaphore for one model, with a fresh cluster hold per use."""

    def __init__(self, inner: Any, coordinator: Any, model: str, holder: str) -> None:
        self._inner = inner
        self._coordinator = coordinator
        self._model = model
        self._holder = holder
        self.name = inner.name
        self.visible = inner.visible

    @property
    def semaphore(self) -> _ClusterHold:
        return _ClusterHold(self._inner.semaphore, self._coordinator, self._model, self._holder)

    @property
    def concurrency(self) -> int:
        return int(self._inner.concurrency)

    @property
    def value(self) -> int:
        return int(self._inner.value)

    @property
    def in_use(self) -> int:
        return int(self._inner.in_use)


class ClusterSlotsRegistry:
    """Inspect's ConcurrencySemaphoreRegistry, with cluster slots for the run's models."""

    def __init__(self, inner: Any, coordinator: Any, models: set[str], holder: str) -> None:
        self._inner = inner
        self._coordinator = coordinator
        self._models = models
        self._holder = holder
        self._wrapped: dict[int, _ClusterSemaphore] = {}

    async def get_or_create(
        self,
        name: str,
        concurrency: int,
        key: str | None,
        visible: bool,
        adaptive: Any = None,
        resizable: bool = False,
    ) -> Any:
        extra: dict[str, Any] = {}
        if adaptive is not None:
            extra["adaptive"] = adaptive
        if resizable:
            extra["resizable"] = True
        inner = await self._inner.get_or_create(name, concurrency, key, visible, **extra)
        model = model_of(name, self._models)
        if model is None:
            return inner
        wrapped = self._wrapped.get(id(inner))
        if wrapped is None:
            wrapped = _ClusterSemaphore(inner, self._coordinator, model, self._holder)
            self._wrapped[id(inner)] = wrapped
        return wrapped

    def values(self) -> Iterable[Any]:
        return self._inner.values()


def model_of(name: str, models: set[str]) -> str | None:
    """The run's model that an Inspect semaphore name stands for (its `provider/model`)."""
    if name in models:
        return name
    return next((m for m in models if m.split("/", 1)[-1] == name), None)


_active: ClusterSlotsRegistry | None = None
_hook_registered = False


class ClusterModelSlots(Hooks):
    """Puts the cluster registry in place when a node's eval starts (only on nodes)."""

    def enabled(self) -> bool:
        return _active is not None

    async def on_run_start(self, data: RunStart) -> None:
        if _active is not None:
            _active._inner = _concurrency._concurrency_registry
            _concurrency._concurrency_registry = _active


def register_hook() -> None:
    """Registers `ClusterModelSlots` with Inspect, once per process, as a node starts a sample.

    Not at import: the launcher imports this module too (through the worker), and Inspect
    announces every registered hook on the console when a process creates its first model.
    """
    global _hook_registered
    if not _hook_registered:
        hooks(name="labcoat_cluster_model_slots", description="labcoat --ray: cluster model slots")(
            ClusterModelSlots
        )
        _hook_registered = True


@contextmanager
def cluster_slots(spec: RunSpec, holder: str) -> Iterator[None]:
    """While a node's eval runs: its model calls hold cluster-wide slots."""
    global _active
    models = spec.models
    if spec.coordinator is None or not models:
        yield
        return
    _active = ClusterSlotsRegistry(None, spec.coordinator, models, holder)
    try:
        yield
    finally:
        _active = None
