"""The keyring filter's program, run by a small classic-BPF interpreter: every ABI's
keyring calls fail, x32 fails whole, everything else passes."""

from __future__ import annotations

import errno
import struct

import pytest

from labcoat.sandbox._seccomp import KEYRING_CALLS, keyring_filter

ALLOW = 0x7FFF0000
FAIL = 0x00050000 | errno.EPERM
X86_64, I386, ARM64 = 0xC000003E, 0x40000003, 0xC00000B7


def run(program: bytes, number: int, arch: int) -> int:
    """What the filter returns for one system call (the subset of BPF it uses)."""
    data = struct.pack("=iI", number, arch)
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


@pytest.mark.parametrize("arch", sorted(KEYRING_CALLS))
def test_keyring_calls_fail_on_every_abi(arch: int) -> None:
    program = keyring_filter()
    for number in KEYRING_CALLS[arch]:
        assert run(program, number, arch) == FAIL
    for number in (0, 1, 59, 231, max(KEYRING_CALLS[arch]) + 1, min(KEYRING_CALLS[arch]) - 1):
        assert run(program, number, arch) == ALLOW


def test_x32_is_refused_and_unknown_abis_pass() -> None:
    program = keyring_filter()
    assert run(program, 0x40000000 + 1, X86_64) == FAIL  # x32 write
    assert run(program, 250, 0x12345678) == ALLOW
    assert run(program, 250, I386) == ALLOW  # i386's 250 is not a keyring call
    assert run(program, 248, ARM64) == ALLOW
