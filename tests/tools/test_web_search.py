"""web_search against a local SearxNG-compatible HTTP server: success, timeout, down, opt-in."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sleuth.core.process import free_port
from sleuth.tools.base import ToolArgumentError, ToolUnavailable
from sleuth.tools.web.searxng import SearxNG
from sleuth.tools.web.tool import WebSearchDisabled, WebSearchTool, WebToolConfig
from tests.tools.searx_server import SearxServer

pytestmark = pytest.mark.integration

ON = WebToolConfig(allow_external=True)


@pytest.fixture
def searx() -> Iterator[SearxServer]:
    server = SearxServer().start()
    try:
        yield server
    finally:
        server.stop()


async def test_success_returns_title_url_snippet(searx: SearxServer) -> None:
    provider = SearxNG(searx.url)
    try:
        out = await WebSearchTool(provider, ON).call({"query": "copper price", "max_results": 3})
    finally:
        await provider.aclose()
    results = out.content["results"]
    assert [r["url"] for r in results] == [
        f"https://news.example.org/copper/{i}" for i in (1, 2, 3)
    ]
    assert results[0]["title"] == "Copper price today (1)"
    assert "9,100 USD per tonne" in results[0]["snippet"]
    assert [c.id for c in out.citations] == [r["url"] for r in results]
    assert searx.queries == ["copper price"]


async def test_non_http_urls_are_dropped(searx: SearxServer) -> None:
    provider = SearxNG(searx.url)
    try:
        out = await WebSearchTool(provider, ON).call({"query": "copper", "max_results": 10})
    finally:
        await provider.aclose()
    assert len(out.content["results"]) == 7
    assert all(r["url"].startswith("https://") for r in out.content["results"])


async def test_timeout_says_real_time_data_unavailable(searx: SearxServer) -> None:
    searx.mode, searx.delay = "slow", 2.0
    provider = SearxNG(searx.url, timeout_seconds=0.3)
    try:
        with pytest.raises(ToolUnavailable, match=r"timed out after 0.3 s; real-time web data"):
            await WebSearchTool(provider, ON).call({"query": "copper"})
    finally:
        await provider.aclose()


async def test_down_provider_is_unavailable() -> None:
    provider = SearxNG(f"http://127.0.0.1:{free_port()}")
    try:
        with pytest.raises(ToolUnavailable, match="unreachable: ConnectError; real-time web data"):
            await WebSearchTool(provider, ON).call({"query": "copper"})
        assert await WebSearchTool(provider, ON).ready() is False
    finally:
        await provider.aclose()


async def test_provider_error_is_unavailable(searx: SearxServer) -> None:
    searx.mode = "error"
    provider = SearxNG(searx.url)
    try:
        with pytest.raises(ToolUnavailable, match="HTTP 500"):
            await WebSearchTool(provider, ON).call({"query": "copper"})
    finally:
        await provider.aclose()


def test_off_unless_opted_in(searx: SearxServer) -> None:
    with pytest.raises(WebSearchDisabled, match="allowExternal"):
        WebSearchTool(SearxNG(searx.url), WebToolConfig())
    assert searx.queries == []


async def test_default_timeout_is_five_seconds_and_args_checked(searx: SearxServer) -> None:
    provider = SearxNG(searx.url)
    assert provider._timeout == 5.0
    try:
        with pytest.raises(ToolArgumentError, match="max_results"):
            await WebSearchTool(provider, ON).call({"query": "x", "max_results": 50})
    finally:
        await provider.aclose()
