"""labcoat inside a container started with exactly the least privilege that
docs/containers.md's measured table gives each isolation mode, and no more: `labcoat
validate mini` passes there, and so do the isolation, grading and integrity tests that
scripts/test-as-users.sh runs as ordinary users (its TESTS list: the sandbox tests, the
cheat corpus's sandbox cases, the graders' protections).

The checkout under test is copied into the container (its `src` first on the path, so
the code tested is this checkout's, not the image's wheel); the image gives the Python,
bwrap, the id-mapping helpers and the offline wheels. Needs a Docker engine and the
image (`containers/engine.sh start`, `containers/build-offline.sh`); skips with that
reason where there is none. Minutes per mode on 2 cores.
"""

from __future__ import annotations

import re
import shlex

import pytest
from docker_engine import (
    EXPECTED_MODE,
    IMAGE,
    MODES,
    REPO,
    docker,
    documented_least,
    unavailable,
)

WHY_NOT = unavailable()
# minutes to an hour on 2 cores: `./test -m slow tests/containers` (deselected otherwise)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))]

USERS_SCRIPT = REPO / "scripts" / "test-as-users.sh"
# the checkout without what is built or kept here (venvs, logs, git's objects)
COPY = (
    "mkdir -p /tmp/checkout && tar -C /repo --exclude=./.venv --exclude=./.git "
    "--exclude=./logs --exclude=./test-artifacts -cf - . | tar -C /tmp/checkout -xf - "
    "&& cd /tmp/checkout"
)


def users_tests() -> list[str]:
    """scripts/test-as-users.sh's TESTS: what it runs as each ordinary user."""
    text = USERS_SCRIPT.read_text()
    found = re.search(r"^TESTS=\(\n(.*?)^\)", text, re.M | re.S)
    assert found, f"{USERS_SCRIPT}: no TESTS=( ... ) list"
    return shlex.split(found[1], comments=True)


def in_container(
    user: str, script: str, timeout: float, network: str = "none", env: tuple[str, ...] = ()
) -> tuple[int, str]:
    """(exit code, output) of `script` as `user` in a fresh container of the image,
    started with the documented least privilege of the user's mode."""
    mode = next(m for m, u in MODES.items() if u == user)
    options = documented_least(mode)
    assert options is not None, f"docs/containers.md: no options start {mode}"
    done = docker(
        "run", "--rm", "--network", network, "--user", user, *options,
        *(arg for variable in env for arg in ("-e", variable)),
        "-e", f"LABCOAT_EXPECT_MODE={EXPECTED_MODE[user]}",
        "-e", "PYTHONPATH=/tmp/checkout/src",
        "-v", f"{REPO}:/repo:ro", IMAGE, "sh", "-c", f"{COPY} && {script}",
        timeout=timeout,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("user", list(MODES.values()))
def test_validate_mini_passes_with_the_least_privilege(user: str) -> None:
    code, output = in_container(
        user,
        "labcoat check && labcoat validate mini --log-dir /tmp/checkout/logs/validate",
        timeout=3600,
    )
    assert code == 0, output[-6000:]
    # the mode the docs measured, not a weaker one labcoat fell back to
    assert f"isolation {EXPECTED_MODE[user]};" in output, output[-3000:]


@pytest.mark.parametrize("user", list(MODES.values()))
def test_isolation_and_integrity_tests_pass_with_the_least_privilege(user: str) -> None:
    tests = " ".join(shlex.quote(t) for t in users_tests())
    code, output = in_container(
        user,
        f"python -m pytest -q -rs -p no:cacheprovider -n 2 {tests}",
        timeout=3600,
        # the network tests and the cheat corpus need a LAN address (Docker's bridge), and
        # root here is root's mode only (not the tests' one-user stand-in for root)
        network="bridge",
        env=("LABCOAT_UNSAFE_ROOT_ONE_USER=0",),
    )
    assert code == 0, output[-6000:]
    assert re.search(r"\d+ passed", output), output[-3000:]
