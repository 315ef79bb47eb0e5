"""web_search: only when the task allows the network and the user configured a provider.

Providers (the run's `--search-provider`, default LABCOAT_SEARCH_PROVIDER; read in the
harness, never in the sandbox):
- `searxng:<base url>` — a SearXNG instance's JSON API (`/search?q=...&format=json`);
- `tavily` — Tavily's API with TAVILY_API_KEY.
Results whose URL the task's blocklist blocks are dropped; every attempt is recorded.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import httpx
from inspect_ai.log import transcript
from inspect_ai.tool import Tool, ToolError, tool
from inspect_ai.util import store
from pydantic import JsonValue

from labcoat._errors import LabcoatError
from labcoat._util.run_choices import SEARCH_PROVIDER_ENV, current_choices
from labcoat.integrity import Blocklist

PROVIDER_ENV = SEARCH_PROVIDER_ENV
ATTEMPTS_KEY = "labcoat:web_search"


@dataclass(frozen=True)
class SearchResult:
    title: str
    url: str
    snippet: str


@dataclass(frozen=True)
class SearchProvider:
    kind: str
    base_url: str | None = None

    @classmethod
    def of_run(cls) -> SearchProvider | None:
        """The run's provider (`--search-provider`; see `labcoat._util.run_choices`)."""
        return cls.parse(current_choices().search_provider or "")

    @classmethod
    def parse(cls, spec: str, where: str = PROVIDER_ENV) -> SearchProvider | None:
        """`searxng:URL` or `tavily` (empty: none); `where` names the value in an error."""
        spec = spec.strip()
        if not spec:
            return None
        kind, _, rest = spec.partition(":")
        if kind == "searxng" and rest:
            return cls("searxng", rest.rstrip("/"))
        if kind == "tavily":
            return cls("tavily")
        raise LabcoatError(f"{where}={spec!r}: expected 'searxng:<url>' or 'tavily'")

    async def search(self, query: str, count: int) -> list[SearchResult]:
        async with httpx.AsyncClient(timeout=30) as client:
            if self.kind == "searxng":
                response = await client.get(
                    f"{self.base_url}/search", params={"q": query, "format": "json"}
                )
                response.raise_for_status()
                items: list[dict[str, Any]] = response.json().get("results", [])
                return [
                    SearchResult(i.get("title", ""), i.get("url", ""), i.get("content", ""))
                    for i in items[:count]
                ]
            key = os.environ.get("TAVILY_API_KEY")
            if not key:
                raise ToolError("web search is configured for Tavily but TAVILY_API_KEY is unset")
            response = await client.post(
                "https://api.tavily.com/search",
                json={"api_key": key, "query": query, "max_results": count},
            )
            response.raise_for_status()
            return [
                SearchResult(i.get("title", ""), i.get("url", ""), i.get("content", ""))
                for i in response.json().get("results", [])
            ]


@tool
def web_search(provider: SearchProvider, blocklist: Blocklist) -> Tool:
    async def execute(query: str, max_results: int = 5) -> str:
        """Search the web. Results from sources this task forbids are withheld.

        Args:
            query: What to search for.
            max_results: How many results to return (default 5, at most 10).
        """
        try:
            found = await provider.search(query, min(max(1, max_results), 10) + 5)
        except httpx.HTTPError as ex:
            raise ToolError(f"search failed: {ex}") from None
        allowed = [r for r in found if not blocklist.blocks(r.url)]
        blocked: list[JsonValue] = [r.url for r in found if blocklist.blocks(r.url)]
        attempt: dict[str, JsonValue] = {
            "query": query,
            "returned": [r.url for r in allowed[:max_results]],
            "blocked": blocked,
        }
        store().set(ATTEMPTS_KEY, [*store().get(ATTEMPTS_KEY, []), attempt])
        if blocked:
            transcript().info({"blocked_search_results": attempt}, source="labcoat.blocklist")
        if not allowed:
            return "no results" + (
                " (results from forbidden sources were withheld)" if blocked else ""
            )
        return "\n\n".join(f"{r.title}\n{r.url}\n{r.snippet}" for r in allowed[:max_results])

    return execute
