"""Search providers. :class:`SearxNG` speaks SearxNG's JSON API (``/search?format=json``).

A provider returns :class:`WebResult` items (title, URL, snippet) or raises
:class:`ToolUnavailable` when the provider is down, slow or answers with an error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import httpx

from sleuth.tools.base import ToolUnavailable

DEFAULT_TIMEOUT_SECONDS = 5.0


@dataclass(frozen=True)
class WebResult:
    title: str
    url: str
    snippet: str


class SearchProvider(Protocol):
    """A public web search backend."""

    @property
    def name(self) -> str: ...

    async def search(self, query: str, max_results: int) -> list[WebResult]: ...


class SearxNG:
    """A SearxNG instance (self-hostable metasearch) through its JSON API."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._url = base_url.rstrip("/") + "/search"
        self._timeout = timeout_seconds
        headers = {"Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = client or httpx.AsyncClient(timeout=timeout_seconds, headers=headers)
        self._owns_client = client is None

    @property
    def name(self) -> str:
        return "searxng"

    async def search(self, query: str, max_results: int) -> list[WebResult]:
        try:
            response = await self._client.get(
                self._url,
                params={"q": query, "format": "json", "safesearch": 1},
                timeout=self._timeout,
            )
        except httpx.TimeoutException:
            raise ToolUnavailable(
                f"web search timed out after {self._timeout:g} s", tool="web_search"
            ) from None
        except httpx.HTTPError as err:
            raise ToolUnavailable(
                f"web search provider unreachable: {type(err).__name__}", tool="web_search"
            ) from None
        if response.status_code != 200:
            raise ToolUnavailable(
                f"web search provider answered HTTP {response.status_code}", tool="web_search"
            )
        try:
            items = response.json().get("results", [])
        except ValueError:
            raise ToolUnavailable(
                "web search provider sent invalid JSON", tool="web_search"
            ) from None
        results: list[WebResult] = []
        for item in items:
            url = str(item.get("url") or "")
            if not url.startswith(("http://", "https://")):
                continue
            results.append(
                WebResult(
                    title=str(item.get("title") or url)[:300],
                    url=url,
                    snippet=str(item.get("content") or "")[:1000],
                )
            )
            if len(results) >= max_results:
                break
        return results

    async def ready(self) -> bool:
        try:
            response = await self._client.get(
                self._url, params={"q": "ping", "format": "json"}, timeout=self._timeout
            )
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()
