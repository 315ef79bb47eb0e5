"""The pieces of `--ray` that need no cluster: resources, addresses, env, slots, placement."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import anyio
import pytest
from cli_runner import run_cli_captured
from inspect_ai import Task
from inspect_ai.dataset import Sample

from labcoat._errors import LabcoatError
from labcoat._run._ray._cluster import check_address, forwarded_env
from labcoat._run._ray._coordinator import Coordinator
from labcoat._run._ray._driver import _displace, _ended, _fits, _free, _InFlight, admit
from labcoat._run._ray._merge import read_shard
from labcoat._run._ray._plan import Resources, SampleJob, sample_resources, shard_name
from labcoat._run._ray._slots import ClusterSlotsRegistry, model_of
from labcoat._run._ray._worker import write_end
from labcoat.grading import (
    Reservation,
    grader_placement,
    pack_tree,
    sample_reservation,
    unpack_tree,
)
from labcoat.sandbox import BwrapConfig


def test_resources_come_from_the_declaration_then_the_sandbox() -> None:
    declared = Sample(input="x", metadata={"resources": {"cpus": 2, "memory_gb": 8, "gpus": 2}})
    assert sample_resources(declared, Task()) == Resources(2.0, 8192, 2.0)
    sandboxed = Sample(input="x", sandbox=("bwrap", BwrapConfig(cpus=3, memory_mb=1024, gpus=True)))
    assert sample_resources(sandboxed, Task()) == Resources(3.0, 1024, 1.0)
    assert sample_resources(Sample(input="x"), Task()) == Resources(1.0, 4096, 0.0)
    task_level = Task(sandbox=("bwrap", BwrapConfig(memory_mb=2048)))
    assert sample_resources(Sample(input="x"), task_level).memory_mb == 2048
    assert Resources(1, 1024, 1).ray_options() == {
        "num_cpus": 1,
        "num_gpus": 1,
        "memory": 1024 * 1024 * 1024,
    }


def test_a_sample_no_node_can_hold_is_found_before_it_is_submitted() -> None:
    job = SampleJob("g", "rebench", "oracle", "t", "t", 1, Resources(1, 1024, 2), "/x")
    one_gpu = [{"CPU": 8, "GPU": 1, "memory": 64 * 2**30}, {"CPU": 2, "memory": 2**31}]
    assert not _fits(job, one_gpu)
    assert _fits(job, [*one_gpu, {"CPU": 1, "GPU": 4, "memory": 2**31}])


def test_shard_names_are_safe_and_unique() -> None:
    a, b = shard_name("p/a b", 1), shard_name("p/a_b", 1)
    assert a != b and "/" not in a and " " not in a
    assert shard_name("x", 1) != shard_name("x", 2)


def test_addresses() -> None:
    for ok in ("local", "auto", "ray://head:10001", "10.0.0.5:6379", "head.cluster:6379"):
        assert check_address(ok) == ok
    with pytest.raises(LabcoatError, match="give TARGET before --ray"):
        check_address("mini")


def test_a_bad_address_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli_captured(capsys, "eval", "mini", "--agent", "noop", "--ray", "nope")
    assert code == 2 and "--ray 'nope'" in err and "Traceback" not in err


def test_model_settings_travel_and_nothing_else() -> None:
    env = {
        "OPENAI_API_KEY": "k1",
        "LOCALSTUB_BASE_URL": "http://127.0.0.1:1/v1",
        "ANTHROPIC_API_KEY": "k2",
        "HOME": "/root",
        "AWS_SECRET_ACCESS_KEY": "s",
        "MY_TOKEN": "t",
        "LABCOAT_RAY_ENV": "MY_TOKEN",
    }
    assert forwarded_env(env) == {
        "OPENAI_API_KEY": "k1",
        "LOCALSTUB_BASE_URL": "http://127.0.0.1:1/v1",
        "ANTHROPIC_API_KEY": "k2",
        "MY_TOKEN": "t",
    }
    assert "HOME" not in forwarded_env(dict(os.environ))


async def test_model_slots_hold_the_limit_and_survive_cancellation_and_lost_nodes() -> None:
    slots = Coordinator({"openai/gpt": 2})
    await slots.acquire("openai/gpt", "node-a", "r1")
    await slots.acquire("openai/gpt", "node-b", "r2")
    waiting = asyncio.ensure_future(slots.acquire("openai/gpt", "node-a", "r3"))
    await asyncio.sleep(0.01)
    assert not waiting.done() and slots.slots()["openai/gpt"]["waiting"] == 1
    slots.release("openai/gpt", "r1")
    await asyncio.wait_for(waiting, 1)
    # a request withdrawn while waiting takes nothing
    withdrawn = asyncio.ensure_future(slots.acquire("openai/gpt", "node-a", "r4"))
    await asyncio.sleep(0.01)
    slots.release("openai/gpt", "r4")
    assert slots.slots()["openai/gpt"] == {"limit": 2, "in_use": 2, "peak": 2, "waiting": 0}
    withdrawn.cancel()
    # node-b is lost: its slot comes back
    assert slots.release_holder("node-b") == 1
    await asyncio.wait_for(slots.acquire("openai/gpt", "node-c", "r5"), 1)
    assert slots.slots()["openai/gpt"]["in_use"] == 2
    await slots.acquire("other/model", "node-a", "r6")  # no limit: no wait


class _Remote:
    def __init__(self, fn):  # type: ignore[no-untyped-def]
        self._fn = fn

    def remote(self, *args):  # type: ignore[no-untyped-def]
        return self._fn(*args)


class _CoordinatorHandle:
    """Calls the coordinator in-process, as a Ray actor handle's methods would."""

    def __init__(self, coordinator: Coordinator) -> None:
        async def release(*args):  # type: ignore[no-untyped-def]
            coordinator.release(*args)

        self.acquire = _Remote(coordinator.acquire)
        self.release = _Remote(release)


async def test_inspect_model_semaphores_take_a_cluster_slot() -> None:
    from inspect_ai.util._concurrency import _AnyIOSemaphoreRegistry

    coordinator = Coordinator({"openai/gpt": 1})
    registry = ClusterSlotsRegistry(
        _AnyIOSemaphoreRegistry(), _CoordinatorHandle(coordinator), {"openai/gpt"}, "node-a"
    )
    sandbox_sem = await registry.get_or_create("sandboxes/bwrap", 4, None, False)
    model_sem = await registry.get_or_create("openai/gpt", 10, "openai/gpt", True)
    assert type(sandbox_sem).__name__ != "_ClusterSemaphore"
    held = 0
    peak = 0

    async def call() -> None:
        nonlocal held, peak
        async with model_sem.semaphore:
            held += 1
            peak = max(peak, held)
            await anyio.sleep(0.02)
            held -= 1

    async with anyio.create_task_group() as tg:
        for _ in range(5):
            tg.start_soon(call)
    assert peak == 1  # local limit 10, cluster limit 1
    assert coordinator.slots()["openai/gpt"]["in_use"] == 0
    assert model_of("gpt", {"openai/gpt"}) == "openai/gpt"
    assert model_of("anthropic/claude", {"openai/gpt"}) is None


def test_graders_run_in_place_unless_they_need_gpus_the_sample_lacks() -> None:
    assert grader_placement(1) is None  # not under Ray
    with sample_reservation(Reservation(cpus=1, memory_mb=1024, gpus=0)):
        assert grader_placement(0) is None
        assert grader_placement(1) == {"num_gpus": 1, "num_cpus": 0}
    with sample_reservation(Reservation(cpus=1, memory_mb=1024, gpus=1)):
        assert grader_placement(1) is None  # the sample's own GPU


def test_trees_travel_whole(tmp_path: Path) -> None:
    source = tmp_path / "a"
    (source / "sub").mkdir(parents=True)
    (source / "sub" / "run.sh").write_text("echo hi\n")
    (source / "sub" / "run.sh").chmod(0o755)
    (source / "link").symlink_to("sub/run.sh")
    unpack_tree(pack_tree(source), tmp_path / "b")
    copy = tmp_path / "b"
    assert (copy / "sub" / "run.sh").read_text() == "echo hi\n"
    assert (copy / "sub" / "run.sh").stat().st_mode & 0o777 == 0o755
    assert os.readlink(copy / "link") == "sub/run.sh"


def _job(sample: str, epoch: int = 1, gpus: float = 0, memory_gb: float = 1) -> SampleJob:
    resources = Resources(1, int(memory_gb * 1024), gpus)
    return SampleJob("g", "rebench", "oracle", sample, sample, epoch, resources, f"/x/{sample}")


def _node(cpus: float, memory_gb: float, gpus: float = 0) -> dict[str, float]:
    return {"CPU": cpus, "memory": memory_gb * 2**30, "GPU": gpus}


def test_a_lost_samples_retry_goes_to_ray_before_any_new_work() -> None:
    new = [_job(f"n{i}") for i in range(4)]
    retry = _job("lost", gpus=1)
    # one CPU free on a CPU node, nothing on the GPU node: new work fits, the retry not yet
    free = [_node(1, 4), _node(0, 2, 1)]
    # nothing passes a retry that waits for room, though new work would fit
    assert admit([retry, *new], {retry.key}, [dict(n) for n in free], None) == []
    # room for the retry: it goes first, then what else fits
    free = [_node(1, 4), _node(1, 2, 1)]
    assert admit([retry, *new], {retry.key}, free, None) == [retry, new[0]]
    # new work that does not fit yet waits in the launcher's queue, not in Ray's;
    # what fits behind it goes, within --max-samples
    big = _job("big", memory_gb=3)
    assert admit([big, *new], set(), [_node(2, 2), _node(1, 1)], None) == new[:3]
    assert admit(new, set(), [_node(8, 64)], 3) == new[:3]


def test_a_waiting_retry_cancels_only_queued_jobs_that_have_not_started() -> None:
    class FakeRay:
        def __init__(self) -> None:
            self.cancelled: list[str] = []

        def cancel(self, ref: str, force: bool) -> None:
            assert not force  # a job that began as it was cancelled ends cleanly
            self.cancelled.append(ref)

    in_flight = {
        "running": _InFlight(_job("running"), "a1"),
        "queued-started": _InFlight(_job("qs"), "a2", queued=True),
        "queued": _InFlight(_job("q"), "a3", queued=True),
    }
    ray = FakeRay()
    placed = {_job("qs").key: "node"}  # "running" was just handed to Ray, not queued
    _displace(ray, in_flight, placed)
    _displace(ray, in_flight, placed)  # once is enough
    assert ray.cancelled == ["queued"] and in_flight["queued"].displaced


def test_free_resources_count_the_launchers_running_jobs_where_they_run() -> None:
    nodes = {"a": {"Resources": _node(2, 4)}, "b": {"Resources": _node(1, 2, 1)}}
    running = [(_job("r1", gpus=1), "b"), (_job("r2"), None)]
    free = _free(nodes, running)
    assert free == [_node(1, 3), _node(0, 1, 0)]
    assert admit([_job("gpu", gpus=1)], set(), free, None) == []


def test_how_an_attempt_ended_is_told_apart() -> None:
    from ray.exceptions import NodeDiedError, RayTaskError, WorkerCrashedError

    alive = {"node-b"}
    assert _ended(NodeDiedError("gone"), "node-a", alive)[0] == "node_lost"
    # a worker's death on a node that died too is the node's loss
    assert _ended(WorkerCrashedError(), "node-a", alive)[0] == "node_lost"
    assert _ended(WorkerCrashedError(), "node-b", alive) == ("worker_crashed", "WorkerCrashedError")
    flaky = RayTaskError("run_sample", "Traceback ...", OSError("stale NFS handle"))
    assert _ended(flaky, "node-b", alive) == ("raised", "OSError: stale NFS handle")
    # the sample's own error is in its log: not an end to record, not retried
    assert _ended(RayTaskError("run_sample", "tb", ValueError("bad")), "node-b", alive) == (
        None,
        "",
    )


def test_a_cut_attempt_says_what_cut_it(tmp_path: Path) -> None:
    import json

    job = SampleJob("g", "rebench", "oracle", "t", "t", 1, Resources(), str(tmp_path))

    def marker(attempt: str, started: str, launch: str | None = "L1") -> None:
        record = {"attempt": attempt, "started": started, "node_id": "ab" * 20, "host": "h"}
        if launch:
            record["launch"] = launch
        (tmp_path / f"{started}-{attempt}.attempt").write_text(json.dumps(record))

    marker("a1", "20260101T000001Z")
    write_end(str(tmp_path), "a1", "node_lost", "node abababababab")
    marker("a2", "20260101T000002Z")
    write_end(str(tmp_path), "a2", "worker_crashed", "WorkerCrashedError")
    marker("a3", "20260101T000003Z")
    write_end(str(tmp_path), "a3", "launcher_interrupted")
    marker("a4", "20260101T000004Z")  # no end record: no launcher saw it end
    marker("a5", "20260101T000005Z", launch=None)  # before launches were recorded
    reasons = [a.reason() for a in read_shard(job).attempts]
    assert all("stopped without finishing" in r for r in reasons)
    assert "its node was lost (node abababababab)" in reasons[0]
    assert "its worker process died while its node stayed up" in reasons[1]
    assert "the launcher was interrupted" in reasons[2]
    assert "the launcher stopped (killed" in reasons[3]
    assert "the node or its worker was lost" in reasons[4]
