"""The seccomp filter every sandbox runs under: what sandboxed code may not ask the
kernel for, because it is shared between samples (or with the host) and no namespace
separates it.

- The kernel's keyrings: every process of one uid shares that uid's user keyring, so two
  sandboxes running agent code as the same uid could pass data through it, and a sample
  could read a key that a host process of that uid stored. `add_key`, `request_key` and
  `keyctl` fail with EPERM, as in Docker's default profile.
- File notifications: inotify, fanotify and dnotify (`fcntl(F_NOTIFY)`) report opens
  and reads of files that other samples share (the task's environment, the system tree):
  one sample learns what another opens, a channel between them. inotify fails with ENOSYS
  (as on a kernel built without it: tools such as `tail -f` and GLib fall back to
  polling), fanotify with EPERM (as for an unprivileged caller), F_NOTIFY with EINVAL
  (as on a kernel without dnotify).
- Leases (`fcntl(F_SETLEASE)`): a write lease is refused while anyone else has the file
  open, so it senses another sample's opens; it fails with EINVAL, as where the sysctl
  `fs.leases-enable` is 0.
- `ioctl(TIOCSTI)`: pushing bytes into a terminal's input, as if typed. Under `--agent
  human` a program could type into the person's shell commands that labcoat's terminal
  server never saw (its record is what was typed); EPERM, as where the sysctl
  `dev.tty.legacy_tiocsti` is 0 (Linux 6.2 on) for a caller without CAP_SYS_ADMIN.
- `cachestat` (Linux 6.5): how much of a file the page cache holds, which another sample
  sets by reading; ENOSYS, as on older kernels (the page cache is still shared:
  docs/sandbox.md, "What samples share").

The filter is a classic BPF program handed to bwrap's `--seccomp`; it covers every ABI
the kernel might accept (x86-64 and its i386 and x32 entry points, arm64 and its arm32
entry point), whatever the host is.
"""

from __future__ import annotations

import errno
import os
import struct
from dataclasses import dataclass

# classic BPF, as <linux/filter.h> and <linux/seccomp.h> define it
_LOAD_WORD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_ERRNO = 0x00050000  # SECCOMP_RET_ERRNO | the errno
_NUMBER_AT = 0  # struct seccomp_data: int nr; u32 arch; u64 ip; u64 args[6]
_ARCH_AT = 4
_SECOND_ARGUMENT_AT = 24  # args[1]'s low word (every ABI here is little-endian)
_X32_BIT = 0x40000000  # x32 system calls are x86-64 numbers with this bit set
F_SETLEASE, F_NOTIFY = 1024, 1026
TIOCSTI = 0x5412  # one number on every ABI here
CACHESTAT = 451  # one number on every ABI (Linux 6.5 on)


@dataclass(frozen=True)
class Abi:
    """One entry point's numbers for the calls the filter refuses."""

    keyring: tuple[int, ...]  # add_key, request_key, keyctl
    inotify: tuple[int, ...]  # inotify_init (where it exists), inotify_init1, add_watch
    fanotify: tuple[int, ...]  # fanotify_init, fanotify_mark
    fcntl: tuple[int, ...]  # fcntl (and fcntl64)
    ioctl: int


# AUDIT_ARCH_* -> that entry point's numbers (x32 is refused whole, below)
ABIS: dict[int, Abi] = {
    0xC000003E: Abi((248, 249, 250), (253, 294, 254), (300, 301), (72,), 16),  # x86-64
    0x40000003: Abi((286, 287, 288), (291, 332, 292), (338, 339), (55, 221), 54),  # i386
    0xC00000B7: Abi((217, 218, 219), (26, 27), (262, 263), (25,), 29),  # arm64
    0x40000028: Abi((309, 310, 311), (316, 360, 317), (367, 368), (55, 221), 54),  # arm
}
KEYRING_CALLS = {arch: abi.keyring for arch, abi in ABIS.items()}
_X86_64 = 0xC000003E

Step = tuple[int, int, str | int, str | int]  # code, k, jump if true, jump if false


def _instruction(code: int, k: int, true: int = 0, false: int = 0) -> bytes:
    return struct.pack("=HBBI", code, true, false, k)


def _block(arch: int, abi: Abi) -> list[Step]:
    """One ABI's checks of the call's number; fcntl and ioctl go on to their command."""
    block: list[Step] = [(_LOAD_WORD_ABS, _NUMBER_AT, 0, 0)]
    if arch == _X86_64:
        block.append((_JUMP_AT_LEAST, _X32_BIT, "eperm", 0))
    refusals = (
        (abi.keyring, "eperm"),
        (abi.inotify, "enosys"),
        (abi.fanotify, "eperm"),
        ((CACHESTAT,), "enosys"),
        (abi.fcntl, "fcntl"),
        ((abi.ioctl,), "ioctl"),
    )
    for numbers, target in refusals:
        block += [(_JUMP_EQUAL, number, target, 0) for number in numbers]
    block.append((_RETURN, _ALLOW, 0, 0))
    return block


def sandbox_filter() -> bytes:
    """The BPF program: per ABI, refuse the calls above; allow everything else."""
    dispatch: list[Step] = [(_LOAD_WORD_ABS, _ARCH_AT, 0, 0)]
    dispatch += [(_JUMP_EQUAL, arch, f"arch{arch}", 0) for arch in ABIS]
    dispatch.append((_RETURN, _ALLOW, 0, 0))  # an ABI this kernel cannot have
    program = list(dispatch)
    labels: dict[str, int] = {}
    for arch, abi in ABIS.items():
        labels[f"arch{arch}"] = len(program)
        program += _block(arch, abi)
    labels["fcntl"] = len(program)
    program += [
        (_LOAD_WORD_ABS, _SECOND_ARGUMENT_AT, 0, 0),
        (_JUMP_EQUAL, F_NOTIFY, "einval", 0),
        (_JUMP_EQUAL, F_SETLEASE, "einval", 0),
        (_RETURN, _ALLOW, 0, 0),
    ]
    labels["ioctl"] = len(program)
    program += [
        (_LOAD_WORD_ABS, _SECOND_ARGUMENT_AT, 0, 0),  # the request: an unsigned int
        (_JUMP_EQUAL, TIOCSTI, "eperm", 0),
        (_RETURN, _ALLOW, 0, 0),
    ]
    for name, number in (("eperm", errno.EPERM), ("enosys", errno.ENOSYS)):
        labels[name] = len(program)
        program.append((_RETURN, _ERRNO | number, 0, 0))
    labels["einval"] = len(program)
    program.append((_RETURN, _ERRNO | errno.EINVAL, 0, 0))

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
    os.write(fd, sandbox_filter())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
