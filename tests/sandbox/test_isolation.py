"""Each isolation property of the bwrap sandbox, proven by trying to break it."""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import threading
import time
import uuid
from pathlib import Path

import anyio
import pytest
from sandbox_probe import host_processes_with

from labcoat.sandbox import specifiers

pytestmark = pytest.mark.anyio


async def test_host_secret_files_are_invisible(make_session, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-42")
    home_secret = Path.home() / f".labcoat-test-secret-{uuid.uuid4().hex}"
    home_secret.write_text("TOP-SECRET-43")
    try:
        s = await make_session()
        for path in (secret, home_secret, Path(__file__)):
            result = await s.exec(["cat", str(path)])
            assert not result.success, f"{path} is readable in the sandbox"
            assert "TOP-SECRET" not in result.stdout
        listing = await s.exec(["sh", "-c", "ls -a /root /home /work /opt 2>&1; true"])
        assert home_secret.name not in listing.stdout
        assert "main" not in listing.stdout.split()  # no host checkout under /work
        # only the agent's home under /home, nothing else of the host
        homes = await s.exec(["ls", "/home"])
        assert homes.stdout.split() == ["agent"]
    finally:
        home_secret.unlink()


async def test_writes_outside_the_workspace_fail(make_session) -> None:
    s = await make_session(environment=specifiers("numpy"))
    for target in (
        "/usr/evil",
        "/etc/evil",
        "/opt/labcoat/env/evil",
        "/opt/labcoat/bin/evil",
        "/evil",
    ):
        result = await s.exec(["sh", "-c", f"echo x > {target}"])
        assert not result.success, f"wrote {target}"
    as_root = (
        await s.exec(["sh", "-c", "echo x > /usr/evil"], user="root") if s.privileged else None
    )
    if as_root is not None:
        assert not as_root.success, "root wrote into the read-only system tree"
    ok = await s.exec(["sh", "-c", "echo inside > note.txt"])
    assert ok.success
    assert (s.host_path("note.txt") or Path("/nonexistent")).read_text() == "inside\n"


async def test_no_network_not_even_the_hosts_loopback(make_session) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[object] = []

    def accept() -> None:
        server.settimeout(3)
        with contextlib.suppress(OSError):
            accepted.append(server.accept())

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        s = await make_session()
        probe = (
            "import socket\n"
            f"for host, port in [('127.0.0.1', {port}), ('1.1.1.1', 53), ('8.8.8.8', 443)]:\n"
            "    try:\n"
            "        socket.create_connection((host, port), timeout=2)\n"
            "        print('CONNECTED', host)\n"
            "    except OSError as ex:\n"
            "        print('refused', host, ex)\n"
        )
        result = await s.exec(["python3", "-c", probe])
        assert "CONNECTED" not in result.stdout, result.stdout
        assert [line.split()[0] for line in result.stdout.splitlines()] == ["refused"] * 3
    finally:
        thread.join()
        server.close()
    assert not accepted


async def test_network_modes(make_session) -> None:
    host = await make_session(network=True, network_mode="host")
    links = await host.exec(["cat", "/proc/net/dev"])
    assert len(links.stdout.splitlines()) > 3  # the host's interfaces, not just lo
    proxied = await make_session(network=True)
    links = await proxied.exec(["cat", "/proc/net/dev"])
    assert len(links.stdout.splitlines()) == 3  # loopback only: the proxy is the way out
    env = (await proxied.exec(["env"])).stdout
    assert "HTTPS_PROXY=http://127.0.0.1:3128" in env


async def test_background_processes_die_with_the_sample(make_session) -> None:
    marker = f"{time.time_ns() % 10**6}.25"  # a unique sleep length to find on the host
    s = await make_session()
    await s.exec(["sh", "-c", f"nohup sleep {marker} >/dev/null 2>&1 &"])
    await s.exec(["sh", "-c", f"setsid sh -c 'sleep {marker} & sleep {marker}' >/dev/null 2>&1 &"])
    daemonize = (
        "import os, subprocess\n"
        f"if os.fork() == 0:\n    os.setsid()\n    subprocess.Popen(['sleep', '{marker}'])"
    )
    await s.exec(["python3", "-c", daemonize])
    await anyio.sleep(0.3)
    assert len(host_processes_with(f"sleep {marker}")) >= 4
    # while the sample lives, background processes persist between calls
    still = await s.exec(["sh", "-c", f"ps -eo args | grep -c '^sleep {marker}'"])
    assert int(still.stdout.strip()) >= 4
    await s.close()
    await anyio.sleep(0.2)
    assert host_processes_with(f"sleep {marker}") == []


async def test_memory_exhaustion_is_contained(make_session) -> None:
    s = await make_session(memory_mb=256)
    hog = "x = bytearray(1024 * 1024 * 1024); x[::4096] = b'1' * len(x[::4096]); print('ALLOCATED')"
    result = await s.exec(["python3", "-c", hog], timeout=60)
    assert not result.success
    assert "ALLOCATED" not in result.stdout
    # the sandbox survives (or comes back) and the host is fine
    after = await s.exec(["echo", "alive"])
    assert after.stdout == "alive\n"


async def test_memory_limit_without_cgroups_uses_rlimits(make_session, monkeypatch) -> None:
    monkeypatch.setenv("LABCOAT_SANDBOX_CGROUPS", "0")
    s = await make_session(memory_mb=256)
    assert s.limit_mechanism.startswith("rlimit")
    result = await s.exec(["python3", "-c", "bytearray(1024 * 1024 * 1024)"])
    assert not result.success and "MemoryError" in result.stderr


FORK_UNTIL_REFUSED = """
import os, time
started = 0
for _ in range(300):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    started += 1
print(started)
"""


async def test_process_count_is_capped(make_session) -> None:
    s = await make_session(pids=40)
    if s.cgroup is None and s.isolation == "root":  # rootless, the agent is the caller
        pytest.skip("this host offers no writable cgroup, and root ignores RLIMIT_NPROC")
    result = await s.exec(["python3", "-c", FORK_UNTIL_REFUSED], timeout=60)
    started = int(result.stdout.split()[-1])
    assert started < 40, f"{started} processes started under a cap of 40"


async def test_file_size_is_capped(make_session) -> None:
    s = await make_session(file_size_mb=1)
    result = await s.exec(["sh", "-c", "head -c 3000000 /dev/zero > big; wc -c < big"])
    assert int(result.stdout.strip() or 0) <= 1024 * 1024


async def test_timeout_kills_the_whole_tree(make_session) -> None:
    marker = f"{time.time_ns() % 10**6}.5"
    s = await make_session()
    with pytest.raises(TimeoutError):
        await s.exec(["bash", "-c", f"sleep {marker} & sleep {marker}; echo never"], timeout=1)
    await anyio.sleep(0.2)
    assert host_processes_with(f"sleep {marker}") == []
    assert (await s.exec(["true"])).success  # still usable


async def test_cancelled_call_kills_its_command(make_session) -> None:
    marker = f"{time.time_ns() % 10**6}.75"
    s = await make_session()
    with anyio.move_on_after(0.5):
        await s.exec(["sleep", marker])
    await anyio.sleep(0.3)
    assert host_processes_with(f"sleep {marker}") == []


async def test_host_environment_never_enters(make_session, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret-123")
    monkeypatch.setenv("LABCOAT_ALLOWED", "visible")
    s = await make_session(pass_env=("LABCOAT_ALLOWED",))
    env = (await s.exec(["env"])).stdout
    assert "sk-host-secret-123" not in env
    assert "OPENAI_API_KEY" not in env
    assert "LABCOAT_ALLOWED=visible" in env
    environ = await s.exec(["sh", "-c", "cat /proc/1/environ /proc/*/environ 2>/dev/null"])
    assert "sk-host-secret-123" not in environ.stdout


async def test_samples_cannot_see_each_other(make_session) -> None:
    a = await make_session()
    b = await make_session()
    await a.write_file("mine.txt", "sample A")
    host_a = a.host_path("mine.txt")
    assert host_a is not None and host_a.exists()
    for path in (str(host_a), "/home/agent/work/mine.txt", str(a.dirs.root)):
        result = await b.exec(["cat", path])
        assert not result.success
    ps = await b.exec(["ps", "-e", "-o", "pid="])
    assert len(ps.stdout.split()) < 10  # B sees only its own few processes


async def test_agent_cannot_reach_root_owned_files(make_session, sandbox_mode) -> None:
    s = await make_session()
    if not s.privileged:
        pytest.skip("one-user mode has a single user: no file is root-only (see its own tests)")
    await s.exec(
        ["sh", "-c", "mkdir -p /root/protected && echo key > /root/protected/answer"], user="root"
    )
    result = await s.exec(["cat", "/root/protected/answer"])
    assert not result.success
    assert "Permission denied" in result.stderr


def test_labcoat_installed_in_a_system_path_is_covered(monkeypatch) -> None:
    from pathlib import Path

    from labcoat.sandbox import _command

    python = _command.PythonLayout(
        Path("/opt/py"), "/opt/labcoat/python", "/opt/labcoat/python/bin/python3", None
    )
    monkeypatch.setattr(_command.site, "getsitepackages", lambda prefixes=None: [])
    monkeypatch.setattr(
        _command, "__file__", "/usr/lib/python3/dist-packages/labcoat/sandbox/_command.py"
    )
    assert _command.hidden_paths(python) == ["/usr/lib/python3/dist-packages/labcoat"]
    monkeypatch.setattr(
        _command, "__file__", "/opt/py/lib/python3.11/site-packages/labcoat/sandbox/_command.py"
    )
    assert _command.hidden_paths(python) == [
        "/opt/labcoat/python/lib/python3.11/site-packages/labcoat"
    ]
    monkeypatch.setattr(_command, "__file__", "/work/checkout/src/labcoat/sandbox/_command.py")
    assert _command.hidden_paths(python) == []


BUSY_FOR_ONE_SECOND = """
import time
start = time.monotonic()
while time.monotonic() - start < 1.0:
    pass
print(time.process_time())
"""


async def test_cpu_share_is_capped(make_session) -> None:
    s = await make_session(cpus=0.5)
    env = (await s.exec(["env"])).stdout
    assert "OMP_NUM_THREADS=1" in env and "OPENBLAS_NUM_THREADS=1" in env
    if s.cgroup is None or not s.cgroup.caps_cpu:
        pytest.skip("this host gives labcoat no cgroup CPU controller; only thread counts apply")
    cpu_seconds = float((await s.exec(["python3", "-c", BUSY_FOR_ONE_SECOND])).stdout)
    assert cpu_seconds < 0.75, f"{cpu_seconds:.2f} CPU-seconds in one second under a 0.5 CPU cap"


KEYRING_PROBE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
ADD_KEY, KEYCTL, USER_KEYRING, KEYCTL_READ, KEYCTL_SEARCH = 248, 250, -4, 11, 10
if sys.argv[1] == "store":
    r = libc.syscall(ADD_KEY, b"user", b"crosstalk", b"from-sample-a", 13, USER_KEYRING)
else:
    r = libc.syscall(KEYCTL, KEYCTL_SEARCH, USER_KEYRING, b"user", b"crosstalk", 0)
print(r, ctypes.get_errno())
"""


async def test_the_kernel_keyring_is_closed(make_session) -> None:
    """Keyrings are per uid, not per namespace: two samples of one uid could share one."""
    if os.uname().machine != "x86_64":
        pytest.skip("the probe calls keyctl by its x86-64 number")
    a = await make_session()
    b = await make_session()
    for session in (a, b):
        await session.write_file("probe.py", KEYRING_PROBE)
    stored = await a.exec(["python3", "probe.py", "store"])
    found = await b.exec(["python3", "probe.py", "find"])
    for result in (stored, found):
        assert result.success, result.stderr
        assert result.stdout.split() == ["-1", str(errno.EPERM)], result.stdout


TIOCSTI_PROBE = """
import fcntl, os, pty, sys, termios
pid, leader = pty.fork()
if pid == 0:  # the pty is this process's controlling terminal, as a shell's is
    try:
        fcntl.ioctl(0, termios.TIOCSTI, b"x")
        sys.stderr.write("pushed\\n")
    except OSError as ex:
        sys.stderr.write(f"refused {ex.errno}\\n")
    os._exit(0)
out = b""
while True:
    try:
        chunk = os.read(leader, 1024)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
os.waitpid(pid, 0)
text = out.decode(errors="replace")
print(f"refused {text.split('refused ')[1].split()[0]}" if "refused " in text else "pushed")
"""


async def test_no_program_can_type_into_a_terminal(make_session) -> None:
    """TIOCSTI pushes bytes into a terminal's input as if typed: under `--agent human` a
    program could run commands in the person's shell that the terminal server never saw."""
    session = await make_session()
    await session.write_file("probe.py", TIOCSTI_PROBE)
    result = await session.exec(["python3", "probe.py"])
    assert result.success, result.stderr
    assert result.stdout.split() == ["refused", str(errno.EPERM)], result.stdout
