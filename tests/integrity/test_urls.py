"""Canonical URLs: every spelling of a blocked page is blocked."""

from __future__ import annotations

import pytest

from labcoat.integrity import Blocklist, canonical_host, canonical_url, extract_urls

BLOCKLIST = Blocklist(
    urls=("arxiv.org/abs/1909.01520", "github.com/some_one/paper-code", "example.org:8080/x"),
    patterns=("*1909.01520*",),
)


@pytest.mark.parametrize(
    ("host", "canonical"),
    [
        ("ArXiv.ORG.", "arxiv.org"),
        ("www.arxiv.org", "arxiv.org"),
        ("arxiv%2Eorg", "arxiv.org"),
        ("2130706433", "127.0.0.1"),
        ("0x7f000001", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("[::ffff:127.0.0.1]", "127.0.0.1"),
        ("[::ffff:7f00:1]", "127.0.0.1"),
        ("[0:0:0:0:0:0:0:1]", "::1"),
        ("bücher.example", "xn--bcher-kva.example"),
        ("cafe.be", "cafe.be"),
    ],
)
def test_canonical_host(host: str, canonical: str) -> None:
    assert canonical_host(host) == canonical


@pytest.mark.parametrize(
    "url",
    [
        "https://arxiv.org/abs/1909.01520",
        "https://arxiv.org./abs/1909.01520",
        "https://arxiv.org/abs/1909%2E01520",
        "https://arxiv.org/abs/1909%252E01520",
        "HTTPS://ARXIV.ORG:443/ABS/1909.01520v2",
        "http://arxiv.org:80/abs/./x/../1909.01520",
        "http://arxiv.org//abs//1909.01520",
        "https://user:pw@export.arxiv.org/abs/1909.01520",
        "https:\\\\arxiv.org\\abs\\1909.01520",
        "https://github.com/some%5Fone/paper-code/archive/main.zip",
        "https://github.com/some%5fone/paper-code",
        "http://example.org:8080/x/y",
        "https://scholar.example/?q=1909%2E01520",
    ],
)
def test_every_spelling_is_blocked(url: str) -> None:
    assert BLOCKLIST.blocks(url), canonical_url(url)


@pytest.mark.parametrize(
    "url",
    [
        "https://arxiv.org/abs/1909.0152",
        "https://github.com/some_one/other",
        "http://example.org:8081/x",  # the entry names port 8080
        "https://notarxiv.org/abs/1909.01",
    ],
)
def test_other_pages_are_not(url: str) -> None:
    assert not BLOCKLIST.blocks(url)


def test_scan_finds_encoded_and_trailing_dot_urls() -> None:
    text = (
        "curl -s 'https://arxiv.org./abs/1909%2E01520' ; wget arxiv.org./abs/1909.01520 "
        '{"url": "https:\\/\\/github.com\\/some%5Fone\\/paper-code"}'
    )
    found = extract_urls(text)
    assert [u for u in found if BLOCKLIST.blocks(u)] == found and len(found) == 3
    assert len(BLOCKLIST.hits_in_text(text)) == 3
