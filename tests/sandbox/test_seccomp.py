"""The sandbox's filter program, run by a small classic-BPF interpreter: on every ABI the
keyring, inotify, fanotify and cachestat calls fail, and fcntl fails for F_NOTIFY and
F_SETLEASE alone; x32 fails whole; everything else passes."""

from __future__ import annotations

import errno
import fcntl
import struct

import pytest

from labcoat.sandbox._seccomp import ABIS, CACHESTAT, KEYRING_CALLS, TIOCSTI, sandbox_filter

ALLOW = 0x7FFF0000
EPERM, ENOSYS, EINVAL = (0x00050000 | e for e in (errno.EPERM, errno.ENOSYS, errno.EINVAL))
X86_64, I386, ARM64 = 0xC000003E, 0x40000003, 0xC00000B7


def run(program: bytes, number: int, arch: int, second: int = 0) -> int:
    """What the filter returns for one system call (the subset of BPF it uses)."""
    # struct seccomp_data: nr, arch, instruction pointer, six arguments
    data = struct.pack("=iIQ6Q", number, arch, 0, 0, second, 0, 0, 0, 0)
    code = [struct.unpack_from("=HBBI", program, at) for at in range(0, len(program), 8)]
    accumulator, pc = 0, 0
    while True:
        op, true, false, k = code[pc]
        if op == 0x20:
            accumulator = struct.unpack_from("=I", data, k)[0]
        elif op in (0x15, 0x35):
            hit = accumulator == k if op == 0x15 else accumulator >= k
            pc += true if hit else false
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected BPF op {op:#x}")
        pc += 1


@pytest.mark.parametrize("arch", sorted(ABIS))
def test_refused_calls_fail_on_every_abi(arch: int) -> None:
    program, abi = sandbox_filter(), ABIS[arch]
    for numbers, answer in (
        (abi.keyring, EPERM),
        (abi.inotify, ENOSYS),
        (abi.fanotify, EPERM),
        ((CACHESTAT,), ENOSYS),
    ):
        for number in numbers:
            assert run(program, number, arch) == answer, number
    refused = {*abi.keyring, *abi.inotify, *abi.fanotify, *abi.fcntl, CACHESTAT}
    for number in (0, 1, 59, 231, max(abi.keyring) + 1, min(abi.keyring) - 1):
        if number not in refused:
            assert run(program, number, arch) == ALLOW, number


@pytest.mark.parametrize("arch", sorted(ABIS))
def test_fcntl_fails_for_notifications_and_leases_alone(arch: int) -> None:
    program = sandbox_filter()
    for number in ABIS[arch].fcntl:
        assert run(program, number, arch, fcntl.F_NOTIFY) == EINVAL
        assert run(program, number, arch, fcntl.F_SETLEASE) == EINVAL
        # locks (kept private by each sample's own overlays), leases read, the rest
        for command in (fcntl.F_GETFD, fcntl.F_SETFL, fcntl.F_SETLK, fcntl.F_SETLKW,
                        fcntl.F_GETLK, 36, 37, 38, fcntl.F_GETLEASE):  # fmt: skip
            assert run(program, number, arch, command) == ALLOW, command
        # the command is an int: a high word does not make F_NOTIFY another command
        assert run(program, number, arch, (1 << 32) | fcntl.F_NOTIFY) == EINVAL


@pytest.mark.parametrize("arch", sorted(ABIS))
def test_ioctl_fails_for_pushing_terminal_input_alone(arch: int) -> None:
    program, number = sandbox_filter(), ABIS[arch].ioctl
    assert run(program, number, arch, TIOCSTI) == EPERM
    assert run(program, number, arch, (1 << 32) | TIOCSTI) == EPERM  # an unsigned int
    for request in (0x5401, 0x5413, 0x541B, 0x5414, 0x80045430):  # TCGETS, TIOCGWINSZ, ...
        assert run(program, number, arch, request) == ALLOW, hex(request)


def test_x32_is_refused_and_unknown_abis_pass() -> None:
    program = sandbox_filter()
    assert run(program, 0x40000000 + 1, X86_64) == EPERM  # x32 write
    assert run(program, 250, 0x12345678) == ALLOW
    assert run(program, 250, I386) == ALLOW  # i386's 250 is not a keyring call
    assert run(program, 248, ARM64) == ALLOW
    assert KEYRING_CALLS[X86_64] == (248, 249, 250)
