"""Test runs inside the grading sandbox: fresh copy, own user, limits, report, clean-up.

Not imported by labcoat: its text runs inside the paper's grading sandbox, where the
pristine paper folder (tests and `*_ref.py` included) is root-only at /root. Two modes:

- `python3 -I -S -c RUNNER once`: one run; a JSON request on stdin, the JSON result on
  stdout; the tests run in a new interpreter (`python3 -c TEST_MAIN`).
- `python3 -c RUNNER serve DIR MODULES SLOT`: the preloaded interpreter ("zygote") of
  one run slot. It imports the modules the paper's tests need from outside the paper
  (numpy, torch, ...) once, as the slot's user and with the slot's HOME and thread
  counts, then serves requests on the unix socket DIR/sock, forking a child per run
  that runs the test script as a fresh `__main__`. Modules the zygote imported that a
  file of the paper would shadow are dropped in the child, and random generators are
  reseeded, so a run sees what a fresh `python paper2code_test.py` would.

A slot is one of the runs that may be in flight at once: its own user (uid 2000 + slot,
where the sandbox has root), its own HOME (reset before every run to what it held after
the zygote's imports, so caches the imports placed there are valid and private), and a
share of the CPUs (thread-count variables, `torch.set_num_threads`).

Every run gets a private copy of the paper folder, a CPU-time limit (the test's own
work, whatever else loads the machine) and a wall-clock limit that leaves out the time
it waited for a CPU (a run that waits without working), and its outcome from the test
process's report (see `_test_main.py`), never from what it prints. Afterwards every
process of the run is killed: the runner is a child subreaper, so a process that left
the run's session and lost its parent is still found and killed.

With one shared user (no root in the sandbox) runs cannot be kept apart by uid, so the
host grades one run at a time per paper sandbox (`GradingPool`).
"""

import sys

FRESH_MODULES = set(sys.modules)  # what a fresh interpreter has loaded (serve mode)

import contextlib  # noqa: E402 - after FRESH_MODULES on purpose
import json  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

CUT = b"\n[... %d bytes cut by labcoat ...]\n"
ZYGOTE_FAILED = 70  # exit code of a forked child that could not start the run
CHANNEL_LIMIT = 1 << 20  # bytes read from a run's result channel


# --- shared by both modes --------------------------------------------------------------


def _chown_tree(path, uid):
    os.lchown(path, uid, uid)
    for parent, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(parent, name), uid, uid)


def _read_capped(path, limit):
    """The file's text; a long one keeps its head and its (more telling) tail."""
    if not os.path.exists(path):
        return ""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        if size <= limit:
            return f.read().decode("utf-8", "replace")
        head = f.read(limit // 8)
        f.seek(size - (limit - limit // 8))
        tail = f.read()
    return (head + CUT % (size - len(head) - len(tail)) + tail).decode("utf-8", "replace")


def _kill_user(uid):
    """SIGKILL every process of `uid` in this sandbox (kill -1 as that user)."""
    for _ in range(2):
        pid = os.fork()
        if pid == 0:
            with contextlib.suppress(OSError):
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            os._exit(0)
        os.waitpid(pid, 0)


def _become_subreaper():
    """Whatever a run leaves behind when its parent dies (a double fork, a session of its
    own) is re-parented to this process instead of the sandbox's init, so `_cleanup`
    finds it: with one shared user there is no uid to kill by."""
    import ctypes

    pr_set_child_subreaper = 36
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _children():
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(b")", 1)[1].split()[1]) == me:
            found.append(int(name))
    return found


def _kill_children(keep):
    """SIGKILL every child of this process but `keep` (runs in flight), then theirs as they
    are re-parented here, until none is left."""
    for _ in range(10_000):
        children = [pid for pid in _children() if pid not in keep]
        if not children:
            return
        for pid in children:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        for pid in children:  # reap them: a zombie would still count as a child
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(pid, os.WNOHANG)[0]:
                        break
                except ChildProcessError:
                    break
                time.sleep(0.001)


def _cleanup(pid, uid, keep=()):
    """Kill whatever the run left running: its process group, its user's processes and
    every process re-parented to this one (all but the runs in `keep`)."""
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    if uid is not None:
        _kill_user(uid)
    _kill_children(set(keep))


def _slot_environment(slot):
    env = {
        "HOME": slot["home"],
        "USER": "grader",
        "LOGNAME": "grader",
        "PYTHONDONTWRITEBYTECODE": "1",
        "MPLBACKEND": "Agg",
    }
    # the host's `labcoat.sandbox.thread_environment`: one list of thread-count variables
    env.update(slot["thread_env"])
    return env


def _fresh_home(slot, template=None):
    """The slot's HOME as the run gets it: a copy of `template`, or empty; the slot's."""
    home = slot["home"]
    shutil.rmtree(home, ignore_errors=True)
    if template and os.path.isdir(template):
        shutil.copytree(template, home, symlinks=True)
    else:
        os.makedirs(home)
    os.chmod(home, 0o700)
    if slot["uid"] is not None:
        _chown_tree(home, slot["uid"])


def _prepare(req, work):
    """Copy the paper folder to WORK/paper, write the files; returns the run folder."""
    run_dir = os.path.join(work, "paper")
    shutil.copytree(req["source"], run_dir, symlinks=True)
    for rel, text in req["files"].items():
        with open(os.path.join(run_dir, rel), "w", encoding="utf-8") as f:
            f.write(text)
    uid = req["slot"]["uid"]
    if uid is not None:
        _chown_tree(run_dir, uid)
        os.chmod(run_dir, 0o700)
        os.chmod(work, 0o711)  # the run may pass through to its folder, not list ours
    return run_dir


def _test_config(req, run_dir, nonce_r, report_w):
    return {
        "script": req["script"],
        "run_dir": run_dir,
        "watch": req.get("watch"),
        "nonce_fd": nonce_r,
        "report_fd": report_w,
        "cpu_seconds": req["cpu_seconds"],
        "threads": req["slot"]["threads"],
        "modules": req.get("modules") or [],
        "protect": req.get("protect") or [],
    }


class _Run:
    """A run in flight, seen from the runner: its process, limits and result channel."""

    def __init__(self, req, work, pid, report_r, nonce):
        self.req, self.work, self.pid = req, work, pid
        self.report_r, self.nonce = report_r, nonce
        self.start = time.monotonic()
        self.timed_out = None  # "wall" when the runner stopped it
        self.channel = bytearray()

    def over_time(self):
        """Past the wall-clock limit, not counting time spent waiting for a CPU.

        The kernel counts how long the process waited, runnable, for a CPU
        (/proc/PID/schedstat): on a loaded machine that time is not the run's. What is
        left is the time it ran or waited by itself (sleeping, blocked).
        """
        elapsed = time.monotonic() - self.start
        if elapsed <= self.req["wall_seconds"]:
            return False
        try:
            with open(f"/proc/{self.pid}/schedstat") as f:
                waited = int(f.read().split()[1]) / 1e9
        except (OSError, ValueError, IndexError):
            waited = 0.0
        return elapsed - waited > self.req["wall_seconds"]

    def read_channel(self):
        """Read what the test process wrote; False once the channel is closed."""
        try:
            chunk = os.read(self.report_r, 65536)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            return False
        if len(self.channel) < CHANNEL_LIMIT:
            self.channel += chunk
        return True

    def result(self, status, rusage):
        seconds = time.monotonic() - self.start
        code = os.waitstatus_to_exitcode(status)
        cpu = rusage.ru_utime + rusage.ru_stime if rusage is not None else None
        limit = self.timed_out
        stopped = code in (-signal.SIGXCPU, -signal.SIGKILL)
        if limit is None and stopped and cpu is not None and cpu >= self.req["cpu_seconds"] - 0.5:
            limit = "cpu"
        report, flags, network, problems = None, [], [], []
        for raw in bytes(self.channel).decode("utf-8", "replace").splitlines():
            kind, _, rest = raw.partition(" ")
            nonce, _, text = rest.partition(" ")
            if nonce != self.nonce or kind not in ("REPORT", "FLAG", "NETWORK"):
                problems.append("wrote to labcoat's result channel")
            elif kind == "FLAG":
                flags.append(text)
            elif kind == "NETWORK":
                network.append(text)
            elif report is None:
                try:
                    report = json.loads(text)
                except ValueError:
                    problems.append("sent an unreadable report")
            else:
                problems.append("sent a second report")
        limit_bytes = self.req["output_limit"]
        return {
            "exit_code": code,
            "timed_out": limit is not None,
            "limit": limit,
            "seconds": seconds,
            "cpu_seconds": cpu,
            "stdout": _read_capped(os.path.join(self.work, "stdout"), limit_bytes),
            "stderr": _read_capped(os.path.join(self.work, "stderr"), limit_bytes),
            "report": report,
            "runtime_flags": list(dict.fromkeys(flags + problems)),
            "network": network,
        }


def _nonce_pipe():
    """(read end for the test process, write end): filled after the process exists."""
    return os.pipe()


def _send_nonce(write_end):
    nonce = os.urandom(16).hex()
    os.write(write_end, nonce.encode())
    os.close(write_end)
    return nonce


# --- once: one run, the tests in a new interpreter ---------------------------------------

_BOOT = """
import sys
fresh = set(sys.modules)
del sys.path[0]  # the run's folder: labcoat's imports must not take the paper's files
import json, os
cfg = json.loads(sys.argv[1])
ns = {"__name__": "_labcoat_test"}
exec(compile(cfg.pop("test_main"), "<labcoat test main>", "exec"), ns)
code = ns["_labcoat_run"](cfg, fresh)
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except Exception:
        pass
os._exit(code)
"""


def once():
    _become_subreaper()
    req = json.load(sys.stdin)
    slot = req["slot"]
    uid = slot["uid"]
    work = tempfile.mkdtemp(prefix="rcb-", dir="/tmp")  # 0700, ours
    try:
        run_dir = _prepare(req, work)
        _fresh_home(slot)
        nonce_r, nonce_w = _nonce_pipe()
        report_r, report_w = os.pipe()
        cfg = _test_config(req, run_dir, nonce_r, report_w)
        cfg["test_main"] = req["test_main"]
        env = dict(os.environ, **_slot_environment(slot))
        as_user = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
        with (
            open(os.path.join(work, "stdout"), "wb") as out,
            open(os.path.join(work, "stderr"), "wb") as err,
        ):
            proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, json.dumps(cfg)],
                cwd=run_dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                pass_fds=(nonce_r, report_w),
                start_new_session=True,
                **as_user,
            )
        os.close(nonce_r)
        os.close(report_w)
        run = _Run(req, work, proc.pid, report_r, _send_nonce(nonce_w))
        os.set_blocking(report_r, False)
        import select

        status = rusage = None
        while status is None:
            pid, st, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status, rusage = st, ru
                break
            if run.timed_out is None and run.over_time():
                run.timed_out = "wall"
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
            ready, _, _ = select.select([report_r], [], [], 0.05)
            if ready:
                run.read_channel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        while run.read_channel():
            pass
        _cleanup(proc.pid, uid)  # whatever it left running
        while run.read_channel():
            pass
        os.close(report_r)
        result = run.result(status, rusage)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    sys.stdout.write(json.dumps(result))


# --- serve: the preloaded interpreter of one slot ----------------------------------------


def _child(req, work, keep_fds, nonce_r, report_w):
    """In the forked child: become the run, run the tests as __main__, exit."""
    code = ZYGOTE_FAILED
    try:
        os.setsid()
        run_dir = _prepare(req, work)
        out = os.open(os.path.join(work, "stdout"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(os.path.join(work, "stderr"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (devnull, out, err, *keep_fds):  # the zygote's sockets must not leak
            with contextlib.suppress(OSError):
                os.close(fd)
        os.chdir(run_dir)
        uid = req["slot"]["uid"]
        if uid is not None:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        sys.dont_write_bytecode = True
        ns = {"__name__": "_labcoat_test"}
        exec(compile(req["test_main"], "<labcoat test main>", "exec"), ns)
        cfg = _test_config(req, run_dir, nonce_r, report_w)
        del req
        code = ns["_labcoat_run"](cfg, FRESH_MODULES)
    except BaseException:
        with contextlib.suppress(BaseException):
            import traceback

            traceback.print_exc()
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve(folder, modules, slot):
    import selectors
    import socket

    uid = slot["uid"]
    _become_subreaper()
    _fresh_home(slot)
    os.environ.update(_slot_environment(slot))
    os.chdir(slot["home"])
    if uid is not None:  # imports run as the slot's user: what they cache is the runs'
        os.setegid(uid)
        os.seteuid(uid)
    for name in modules:  # what the tests import from outside the paper
        with contextlib.suppress(BaseException):
            __import__(name)
    if uid is not None:
        os.seteuid(0)
        os.setegid(0)
    os.chdir("/tmp")
    template = os.path.join(folder, "home")
    shutil.copytree(slot["home"], template, symlinks=True)
    sys.stdout.flush()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    temp = os.path.join(folder, "sock.tmp")
    listener.bind(temp)
    os.chmod(temp, 0o600)
    owner = os.stat(folder)
    os.chown(temp, owner.st_uid, owner.st_gid)  # the harness's side owns the folder
    listener.listen(64)
    os.rename(temp, os.path.join(folder, "sock"))  # appears once it accepts
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    pending = {}  # connection -> bytes read so far
    runs = {}  # child pid -> (_Run, connection)

    def forget(conn):
        with contextlib.suppress(KeyError, ValueError, OSError):
            selector.unregister(conn)

    def reply(conn, data):
        forget(conn)
        with contextlib.suppress(OSError):
            conn.setblocking(True)
            conn.sendall(json.dumps(data).encode() + b"\n")
        conn.close()

    def start(conn, req):
        req["slot"] = slot
        _fresh_home(slot, template)
        work = tempfile.mkdtemp(prefix="rcb-", dir="/tmp")
        nonce_r, nonce_w = _nonce_pipe()
        report_r, report_w = os.pipe()
        keep = [listener.fileno(), selector.fileno(), conn.fileno(), nonce_w, report_r]
        keep += [c.fileno() for c in pending] + [r.conn.fileno() for r in runs.values()]
        keep += [r.report_r for r in runs.values()]
        pid = os.fork()
        if pid == 0:
            _child(req, work, keep, nonce_r, report_w)
        os.close(nonce_r)
        os.close(report_w)
        run = _Run(req, work, pid, report_r, _send_nonce(nonce_w))
        run.conn = conn
        os.set_blocking(report_r, False)
        selector.register(report_r, selectors.EVENT_READ, data=pid)
        runs[pid] = run

    def finish(pid, status, rusage):
        run = runs.pop(pid)
        _cleanup(pid, uid, keep=runs)
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(run.report_r)
        while run.read_channel():
            pass
        os.close(run.report_r)
        try:
            data = run.result(status, rusage)
        except Exception as exc:
            data = {"error": f"reading the run's output: {exc!r}"}
        reply(run.conn, data)
        shutil.rmtree(run.work, ignore_errors=True)

    while True:
        for key, _ in selector.select(timeout=0.01 if runs else 1.0):
            if key.data is not None:  # a run's result channel
                run = runs.get(key.data)
                if run is not None and not run.read_channel():
                    forget(key.fileobj)
                continue
            conn = key.fileobj
            if conn is listener:
                new, _ = listener.accept()
                new.setblocking(False)
                pending[new] = b""
                selector.register(new, selectors.EVENT_READ)
                continue
            try:
                chunk = conn.recv(1 << 20)
            except OSError:
                chunk = b""
            owner = next((pid for pid, r in runs.items() if r.conn is conn), None)
            if owner is not None:  # the host gave up on a run in flight: end it
                if not chunk:
                    forget(conn)
                    _cleanup(owner, uid, keep=runs)  # the owner is reaped below: finish()
                continue
            if not chunk:
                pending.pop(conn, None)
                forget(conn)
                conn.close()
                continue
            pending[conn] += chunk
            if b"\n" in pending[conn]:
                raw = pending.pop(conn)
                try:
                    start(conn, json.loads(raw))
                except Exception as exc:
                    reply(conn, {"error": f"starting the run: {exc!r}"})
        while runs:
            try:
                pid, status, rusage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if pid in runs:
                finish(pid, status, rusage)
        for pid, run in runs.items():
            if run.timed_out is None and run.over_time():
                run.timed_out = "wall"
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)


if __name__ == "__main__":  # `python -c` runs it as __main__
    if sys.argv[1] == "once":
        once()
    else:
        serve(sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4]))
