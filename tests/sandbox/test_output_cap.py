"""Past the sandbox's output cap a command's stream keeps a true head and tail and says
how long it really was."""

from __future__ import annotations

from labcoat.agents.research._tools._output import SANDBOX_CUT
from labcoat.sandbox._server import HeadTailBuffer

BIG = 50_000_000


async def test_long_output_keeps_head_and_tail_and_its_real_size(make_session) -> None:
    s = await make_session()
    program = (
        "import sys; w = sys.stdout.write; w('FIRST LINE\\n'); "
        f"w('x' * {BIG - 22}); w('\\nLAST LINE\\n')"
    )
    result = await s.exec(["python3", "-c", program])
    assert result.success
    out = result.stdout
    assert out.startswith("FIRST LINE\nxxx") and out.endswith("xxx\nLAST LINE\n")
    assert len(out) <= 10 * 1024 * 1024  # within Inspect's per-stream cap
    [marker] = SANDBOX_CUT.findall(out)  # the line the research agent's tools read
    kept = len(out) - len(SANDBOX_CUT.search(out)[0])
    assert marker == (f"{BIG - kept:,}", f"{BIG:,}")


async def test_short_output_is_untouched(make_session) -> None:
    s = await make_session()
    result = await s.exec(["sh", "-c", "seq 1 1000; seq 1 5 >&2"])
    assert result.stdout == "".join(f"{i}\n" for i in range(1, 1001))
    assert result.stderr == "1\n2\n3\n4\n5\n"


def test_buffer_at_and_past_its_limit() -> None:
    exact = HeadTailBuffer(1000)
    room = exact.head_limit + exact.tail_limit
    for i in range(0, room, 7):
        exact.feed(bytes([65 + i % 26]) * min(7, room - i))
    assert not exact.truncated and len(exact.value()) == room
    over = HeadTailBuffer(1000)
    over.feed(b"H" * 600)
    over.feed(b"M" * 5000)
    over.feed(b"T" * 600)
    value = over.value()
    assert value.startswith(b"H" * over.head_limit) and value.endswith(b"T" * over.tail_limit)
    assert b"the stream was 6,200 bytes" in value and len(value) <= 1000
