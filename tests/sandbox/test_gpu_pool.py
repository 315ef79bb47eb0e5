"""The GPU pool on a fake machine: each sample holds exactly the GPUs it asked for, no two
samples share one, the rest wait, and a sandbox sees only its own GPUs' device nodes.

The machine's GPUs come from a fake driver folder (/proc/driver/nvidia/gpus/<bus>/
information, as the NVIDIA driver writes it) and fake device nodes (regular files bound
where /dev/nvidiaN would be): what CI can have without a GPU.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from labcoat.sandbox import (
    BwrapConfig,
    BwrapSession,
    Gpu,
    GpuRequestError,
    _gpus,
    gpu_pool,
    gpu_shortfall,
    machine_gpus,
    usable_gpus,
)
from labcoat.sandbox._gpu_usage import GpuUsage
from labcoat.sandbox._gpus import is_model

pytestmark = pytest.mark.anyio


def test_the_driver_folder_describes_the_gpus(fake_gpus: Path) -> None:
    gpus = machine_gpus()
    assert [g.index for g in gpus] == [0, 1, 2, 3]  # PCI bus order, as NVML counts
    assert [g.minor for g in gpus] == [3, 2, 1, 0]
    assert [g.uuid for g in gpus] == [f"GPU-fake-{i}" for i in range(4)]
    assert {g.model for g in gpus} == {"NVIDIA H100 80GB HBM3"}


def test_cuda_visible_devices_limits_what_this_process_lends(
    fake_gpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,GPU-fake-0")  # as Ray sets it
    assert [g.index for g in usable_gpus()] == [2, 0]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert usable_gpus() == ()


def test_declared_gpus_without_a_driver(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(_gpus, "DRIVER_GPUS", tmp_path / "none")
    monkeypatch.setattr(_gpus, "DEVICES", tmp_path)
    monkeypatch.setenv("LABCOAT_GPUS", "3")
    machine_gpus.cache_clear()
    try:
        assert [(g.index, g.minor) for g in machine_gpus()] == [(0, None), (1, None), (2, None)]
    finally:
        machine_gpus.cache_clear()


async def test_leases_are_distinct_and_the_rest_wait(fake_gpus: Path) -> None:
    first = await gpu_pool.lease(3, "first")
    second = await gpu_pool.lease(1, "second")
    assert set(first.ids).isdisjoint(second.ids)
    assert len(first.ids) + len(second.ids) == 4
    order: list[str] = []

    async def third() -> None:
        lease = await gpu_pool.lease(2, "third")  # all-or-nothing: waits for two
        order.append("third got two")
        assert lease.waited_seconds > 0.2
        assert set(lease.ids) <= set(first.ids)
        lease.release()

    async with anyio.create_task_group() as group:
        group.start_soon(third)
        await anyio.sleep(0.3)
        assert gpu_pool.waiting == 1
        second.release()  # one free GPU is not enough
        await anyio.sleep(0.3)
        assert order == []
        order.append("first released")
        first.release()
    assert order == ["first released", "third got two"]
    assert gpu_pool.waiting == 0


async def test_more_gpus_than_the_machine_has_is_an_error(fake_gpus: Path) -> None:
    with pytest.raises(GpuRequestError, match=r"asks for 5 GPU.*this machine has 4"):
        await gpu_pool.lease(5, "greedy")


async def test_another_process_holding_a_gpu_is_waited_for(fake_gpus: Path) -> None:
    """Two labcoat processes on one machine share the pool (its locks are files)."""
    lock = Path(gpu_pool.lock_dir()) / "GPU-fake-0.lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import fcntl, os, sys, time
                fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)
                fcntl.flock(fd, fcntl.LOCK_EX)
                print("held", flush=True)
                time.sleep(1.0)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        others = [await gpu_pool.lease(1, f"other {i}") for i in range(3)]
        assert 0 not in {i for lease in others for i in lease.ids}
        started = time.monotonic()
        last = await gpu_pool.lease(1, "last")  # GPU 0 frees when the holder exits
        assert last.ids == [0]
        assert time.monotonic() - started > 0.3
        for lease in [*others, last]:
            lease.release()
    finally:
        holder.kill()
        holder.wait()


async def test_no_gpus_asked_none_held(fake_gpus: Path) -> None:
    lease = await gpu_pool.lease(0, "cpu only")
    assert lease.gpus == () and not lease.held


async def _seen(session: BwrapSession) -> tuple[list[str], str]:
    listing = await session.exec(["sh", "-c", "ls /dev | grep nvidia; echo $CUDA_VISIBLE_DEVICES"])
    assert listing.success, listing.stderr
    lines = listing.stdout.split()
    return sorted(lines[:-1]), lines[-1]


async def test_each_sandbox_sees_only_its_own_gpu(fake_gpus: Path) -> None:
    sessions = [await BwrapSession.create(BwrapConfig(gpus=1)) for _ in range(4)]
    try:
        seen = [await _seen(s) for s in sessions]
        nodes = [[n for n in nodes if n[len("nvidia") :].isdigit()] for nodes, _ in seen]
        assert all(len(n) == 1 for n in nodes)
        assert len({n[0] for n in nodes}) == 4  # four sandboxes, four distinct GPUs
        for (listing, cuda), session in zip(seen, sessions, strict=True):
            assert {"nvidiactl", "nvidia-uvm"} <= set(listing)
            (gpu,) = session.gpus
            assert cuda == gpu.uuid and listing.count(f"nvidia{gpu.minor}") == 1
            read = await session.exec(["cat", f"/dev/nvidia{gpu.minor}"])
            assert read.stdout == f"gpu minor {gpu.minor}\n"
        # a fifth waits until one closes; then it gets that one's GPU
        waiting = anyio.Event()

        async def fifth() -> None:
            session = await BwrapSession.create(BwrapConfig(gpus=1))
            try:
                assert session.gpus == sessions[0].gpus
                waiting.set()
            finally:
                await session.close()

        async with anyio.create_task_group() as group:
            group.start_soon(fifth)
            await anyio.sleep(0.5)
            assert not waiting.is_set() and gpu_pool.waiting == 1
            await sessions[0].close()
    finally:
        for session in sessions:
            await session.close()


async def test_a_grader_shares_its_samples_gpus(fake_gpus: Path) -> None:
    sample = await BwrapSession.create(BwrapConfig(gpus=4))
    try:
        with anyio.fail_after(10):  # the pool is empty: sharing must not wait for it
            grader = await BwrapSession.create(BwrapConfig(gpus=2), share_gpus=sample.gpu_lease)
        assert grader.gpus == sample.gpus[:2]
        await grader.close()
        assert sample.gpu_lease is not None and sample.gpu_lease.held  # still the sample's
    finally:
        await sample.close()
    assert not sample.gpu_lease.held


def test_a_task_s_gpu_model_is_checked(fake_gpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert gpu_shortfall(2, "h100") is None and gpu_shortfall(4, None) is None
    assert gpu_shortfall(5, "h100") == "needs 5 GPU(s) (h100); this machine has 4"
    wrong = gpu_shortfall(1, "a10")
    assert wrong is not None and "has 0 of that model (NVIDIA H100 80GB HBM3" in wrong
    assert is_model(Gpu(0, 0, model="NVIDIA A100-SXM4-80GB"), "a100")
    assert not is_model(Gpu(0, 0, model="NVIDIA A100-SXM4-80GB"), "a10")
    assert is_model(Gpu(0, 0, model="NVIDIA A100-SXM4-80GB"), "a100-80gb")
    assert is_model(Gpu(0, None), "h100") is None  # a declared GPU: unknown, not refused
    monkeypatch.setenv("LABCOAT_ANY_GPU_MODEL", "1")
    assert gpu_shortfall(1, "a10") is None


async def test_the_driver_outside_the_loader_cache_is_found(
    fake_gpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Kubernetes GPU node's driver sits in a folder only LD_LIBRARY_PATH names."""
    driver = tmp_path / "nvidia" / "lib64"
    tools = tmp_path / "nvidia" / "bin"
    driver.mkdir(parents=True)
    tools.mkdir()
    (driver / "libcuda.so.1").write_text("fake driver\n")
    (tools / "nvidia-smi").write_text("#!/bin/sh\necho fake nvidia-smi\n")
    (tools / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("LD_LIBRARY_PATH", f"/nowhere:{driver}")
    monkeypatch.setenv("PATH", f"{tools}:{Path(sys.executable).parent}:/usr/bin:/bin")
    with_gpu = await BwrapSession.create(BwrapConfig(gpus=1))
    without = await BwrapSession.create(BwrapConfig())
    try:
        seen = await with_gpu.exec(["sh", "-c", f"echo $LD_LIBRARY_PATH; ls {driver}; nvidia-smi"])
        assert seen.success, seen.stderr
        assert str(driver) in seen.stdout.split()[0].split(":")
        assert "libcuda.so.1" in seen.stdout and "fake nvidia-smi" in seen.stdout
        cpu = await without.exec(["sh", "-c", f"echo $LD_LIBRARY_PATH; ls {driver}"])
        assert str(driver) not in cpu.stdout.splitlines()[0] and not cpu.success
    finally:
        await with_gpu.close()
        await without.close()


def test_usage_is_sampled_from_nvidia_smi(fake_gpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gpus = machine_gpus()
    usage = GpuUsage((gpus[1], gpus[3]), interval=0.05)
    usage.start()
    time.sleep(0.3)
    usage.stop()
    record = usage.record()
    assert record["peak_memory_mib"] == 1003  # the larger of the two
    assert record["mean_utilization_pct"] == 20.0  # (10 + 30) / 2
    assert record["usage_samples"] >= 2
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no nvidia-smi: unknown, not zero
    blind = GpuUsage((gpus[0],), interval=0.05)
    blind.start()
    blind.stop()
    assert blind.record() == {
        "peak_memory_mib": None,
        "mean_utilization_pct": None,
        "usage_samples": 0,
    }


def _fake_driver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    driver = tmp_path / "nvidia" / "lib64"
    driver.mkdir(parents=True)
    (driver / "libcuda.so.1").write_text("fake driver\n")
    (driver / "libnvidia-ml.so.1").write_text("fake nvml\n")
    (driver / "libc.so.6").write_text("not the driver's\n")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(driver))
    return driver


def test_a_root_file_system_gets_the_drivers_files_not_the_hosts_libraries(
    fake_gpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labcoat.sandbox._command import SYSTEM_PYTHON, _gpu_mounts, base_environment

    driver = _fake_driver(tmp_path, monkeypatch)
    gpus = machine_gpus()[:1]
    args = _gpu_mounts(gpus, system_root=True)
    binds = {args[i + 2]: args[i + 1] for i, a in enumerate(args) if a == "--ro-bind"}
    assert binds["/opt/labcoat/driver/libcuda.so.1"] == str(driver / "libcuda.so.1")
    assert "/opt/labcoat/driver/libnvidia-ml.so.1" in binds
    assert "/opt/labcoat/driver/nvidia-smi" in binds  # the fake one on PATH
    assert not any(target.endswith("libc.so.6") for target in binds)
    assert str(driver) not in binds  # never the folder: it may hold the host's libc
    env = base_environment(BwrapConfig(gpus=1), SYSTEM_PYTHON, None, gpus)
    assert env["LD_LIBRARY_PATH"] == "/opt/labcoat/driver"
    assert "/opt/labcoat/driver" in env["PATH"].split(":")


@pytest.mark.slow
async def test_a_sample_on_a_built_root_file_system_uses_its_gpu(
    fake_gpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labcoat.sandbox import SystemSpec, built_system

    system = built_system(SystemSpec())
    if system is None:
        pytest.skip("no Debian root file system built here (tests/rebench/test_system_image.py)")
    _fake_driver(tmp_path, monkeypatch)
    session = await BwrapSession.create(BwrapConfig(gpus=1, system_root=str(system.tree)))
    try:
        seen = await session.exec(
            ["sh", "-c", "cat /etc/debian_version; ls /opt/labcoat/driver; nvidia-smi"]
        )
        assert seen.success, seen.stderr
        assert "libcuda.so.1" in seen.stdout and "GPU-fake-" in seen.stdout
        (gpu,) = session.gpus
        assert (await session.exec(["cat", f"/dev/nvidia{gpu.minor}"])).success
    finally:
        await session.close()


def test_a_folder_this_user_cannot_enter_on_path_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`su` keeps root's PATH (say /root/.cargo/bin): a non-root run must not stop there."""
    from labcoat.sandbox._gpus import driver_tool_dirs

    shut = tmp_path / "shut"
    tools = tmp_path / "tools"
    (shut / "inner").mkdir(parents=True)
    tools.mkdir()
    (tools / "nvidia-smi").write_text("#!/bin/sh\n")

    def refuse(path: Path, *args: object, **kwargs: object) -> bool:
        if str(path).startswith(str(shut)):
            raise PermissionError(13, "Permission denied", str(path))
        return original(path, *args, **kwargs)

    original = Path.is_dir
    monkeypatch.setattr(Path, "is_dir", refuse)
    monkeypatch.setenv("PATH", f"{shut / 'inner'}:{tools}:/usr/bin")
    assert driver_tool_dirs() == [str(tools)]
