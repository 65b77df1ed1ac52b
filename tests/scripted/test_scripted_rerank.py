"""The scripted server's rerank routes: text-embeddings-inference's form and the Cohere/Jina form
vLLM serves, over real HTTP."""

from __future__ import annotations

import httpx
import pytest

from sleuth.scripted import Scenario
from sleuth.scripted.runner import ScriptedServer
from sleuth.scripted.scenario import RerankScript

pytestmark = pytest.mark.integration

DOCS = ["the cat sat", "penalty for late delivery", "late trains"]


def test_tei_form_answers_index_and_score_best_first() -> None:
    with ScriptedServer() as server:
        r = httpx.post(
            f"{server.base_url}/rerank",
            json={"query": "late delivery penalty", "texts": DOCS, "raw_scores": False},
        )
        assert r.status_code == 200
        assert r.json() == [
            {"index": 1, "score": 1.0},
            {"index": 2, "score": 0.3333},
            {"index": 0, "score": 0.0},
        ]
        missing = httpx.post(f"{server.base_url}/rerank", json={"query": "q"})
        assert missing.status_code == 400
        assert missing.json()["error"]["param"] == "texts"


@pytest.mark.parametrize("path", ["/v1/rerank", "/v2/rerank", "/rerank"])
def test_cohere_form_honours_top_n_and_scripted_scores(path: str) -> None:
    scenario = Scenario(rerank=RerankScript(scores={"cat": 0.9}))
    with ScriptedServer(scenario) as server:
        r = httpx.post(
            f"{server.base_url}{path}",
            json={"model": "bge", "query": "late delivery", "documents": DOCS, "top_n": 2},
        )
        body = r.json()
        assert body["model"] == "bge"
        assert [(x["index"], x["relevance_score"]) for x in body["results"]] == [
            (1, 1.0),
            (0, 0.9),
        ]
        assert body["results"][0]["document"] == {"text": DOCS[1]}
        logged = httpx.get(f"{server.base_url}/_scripted/requests?kind=rerank").json()
        assert [entry["path"] for entry in logged] == [path]


def test_scripted_failures() -> None:
    with ScriptedServer(Scenario(rerank=RerankScript(status=503))) as server:
        r = httpx.post(f"{server.base_url}/v1/rerank", json={"query": "q", "documents": ["d"]})
        assert r.status_code == 503
    with ScriptedServer(Scenario(rerank=RerankScript(malformed=True))) as server:
        r = httpx.post(f"{server.base_url}/rerank", json={"query": "q", "texts": ["d"]})
        assert r.json()[0]["index"] == 6
