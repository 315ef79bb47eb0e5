"""A seccomp filter that closes the kernel keyring to sandboxed code.

The kernel's keyrings are not a namespace of their own: every process of one uid shares
that uid's user keyring, so two sandboxes running agent code as the same uid (root mode,
and userns mode on kernels without per-namespace keyrings) could pass data through it,
and a sample could read a key that a host process of that uid stored. Sandboxed code has
no use for keyrings, so `add_key`, `request_key` and `keyctl` fail with EPERM, as in
Docker's default profile. The filter is a classic BPF program handed to bwrap's
`--seccomp`; it covers every ABI the kernel might accept (x86-64 and its i386 and x32
entry points, arm64 and its arm32 entry point), whatever the host is.
"""

from __future__ import annotations

import errno
import os
import struct

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it
_LOAD_WORD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_FAIL = 0x00050000 | errno.EPERM  # SECCOMP_RET_ERRNO
_NUMBER_AT = 0  # struct seccomp_data: int nr; u32 arch; ...
_ARCH_AT = 4
_X32_BIT = 0x40000000  # x32 system calls are x86-64 numbers with this bit set

# AUDIT_ARCH_* -> the numbers of add_key, request_key and keyctl on that entry point
KEYRING_CALLS: dict[int, tuple[int, ...]] = {
    0xC000003E: (248, 249, 250),  # x86-64 (x32 is refused whole, below)
    0x40000003: (286, 287, 288),  # i386
    0xC00000B7: (217, 218, 219),  # arm64
    0x40000028: (309, 310, 311),  # arm (EABI)
}
_X86_64 = 0xC000003E


def _instruction(code: int, k: int, true: int = 0, false: int = 0) -> bytes:
    return struct.pack("=HBBI", code, true, false, k)


def keyring_filter() -> bytes:
    """The BPF program: per ABI, refuse the keyring calls; allow everything else."""
    blocks: list[list[tuple[int, int, str | int, str | int]]] = []
    dispatch: list[tuple[int, int, str | int, str | int]] = [(_LOAD_WORD_ABS, _ARCH_AT, 0, 0)]
    for arch, numbers in KEYRING_CALLS.items():
        dispatch.append((_JUMP_EQUAL, arch, f"arch{arch}", 0))
        block: list[tuple[int, int, str | int, str | int]] = [(_LOAD_WORD_ABS, _NUMBER_AT, 0, 0)]
        if arch == _X86_64:
            block.append((_JUMP_AT_LEAST, _X32_BIT, "fail", 0))
        block += [(_JUMP_EQUAL, number, "fail", 0) for number in numbers]
        block.append((_RETURN, _ALLOW, 0, 0))
        blocks.append(block)
    dispatch.append((_RETURN, _ALLOW, 0, 0))  # an ABI this kernel cannot have
    program = list(dispatch)
    labels: dict[str, int] = {}
    for arch, block in zip(KEYRING_CALLS, blocks, strict=True):
        labels[f"arch{arch}"] = len(program)
        program += block
    labels["fail"] = len(program)
    program.append((_RETURN, _FAIL, 0, 0))

    def offset(target: str | int, at: int) -> int:
        # a jump counts from the instruction after it
        return labels[target] - at - 1 if isinstance(target, str) else target

    return b"".join(
        _instruction(code, k, offset(true, at), offset(false, at))
        for at, (code, k, true, false) in enumerate(program)
    )


def filter_fd() -> int:
    """A file descriptor holding the filter, at offset 0, for bwrap's `--seccomp FD`
    (the caller passes it to bwrap and closes it once bwrap has started)."""
    fd = os.memfd_create("labcoat-seccomp", 0)  # not close-on-exec: bwrap reads it
    os.write(fd, keyring_filter())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
