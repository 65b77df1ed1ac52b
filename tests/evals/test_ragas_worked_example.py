"""The seed article's worked example through ragas, a scripted judge and scripted embeddings.

These pin our integration with ragas: if ragas changes its prompts or output models, the
scripted judge stops recognising them (HTTP 500) and these numbers fail loudly.
"""

from __future__ import annotations

import json

import pytest

from sleuth.evals.rag.runner import RagRun, run_metrics
from sleuth.scoring.judge import JudgeConfig, build_judge
from sleuth.scoring.metrics import ALL_METRICS
from sleuth.scoring.samples import RagSample
from sleuth.scripted import ScriptedServer
from tests.evals.evals_judge_script import WorkedExampleJudge

pytestmark = pytest.mark.integration


async def run(
    server: ScriptedServer, rows: list[RagSample], metrics: list[str] | None = None, **cfg: object
) -> RagRun:
    bundle = build_judge(
        JudgeConfig(base_url=server.url, model="judge", embeddings_model="embedder", **cfg)
    )  # type: ignore[arg-type]
    try:
        return await run_metrics(rows, metrics or list(ALL_METRICS), bundle)
    finally:
        await bundle.aclose()


@pytest.mark.parametrize("client", ["direct", "instructor"])
async def test_seed_worked_example(
    judge_server: ScriptedServer, worked_example: RagSample, client: str
) -> None:
    result = await run(judge_server, [worked_example], client=client)
    scores = result.rows[0]["scores"]
    assert result.failures == []
    assert scores["faithfulness"] == 0.75  # 3 of 4 claims supported
    assert scores["context_precision_simple"] == 0.60  # C1, C2, C4 of 5
    # ragas' rank-weighted form: verdicts 1,1,0,1,0 -> (1/1 + 2/2 + 3/4) / 3
    assert result.rows[0]["details"]["context_precision"]["verdicts"] == [1, 1, 0, 1, 0]
    assert scores["context_precision"] == pytest.approx((1 + 1 + 0.75) / 3)
    assert round(scores["context_precision"], 4) == 0.9167
    assert scores["context_recall"] == 1.0
    assert scores["answer_relevancy"] == pytest.approx((0.91 + 0.74 + 0.52) / 3)
    assert round(scores["answer_relevancy"], 2) == 0.72
    # ragas' noise sensitivity: the wrong claim (JSON) is backed by no relevant chunk
    assert scores["noise_sensitivity"] == 0.0
    assert result.usage["judge_requests"] == 24
    assert result.usage["total_tokens"] > 0
    assert result.usage["embedding_requests"] == 2


async def test_judge_requests_are_json_mode_with_our_budget(
    judge_server: ScriptedServer, worked_example: RagSample
) -> None:
    await run(judge_server, [worked_example], ["faithfulness"], max_tokens=3000)
    bodies = judge_server.requests()
    assert len(bodies) == 2
    for body in bodies:
        assert body["response_format"] == {"type": "json_object"}
        assert body["max_tokens"] == 3000
        assert body["temperature"] == 0
        system = body["messages"][0]
        assert system["role"] == "system"
        # the response model's JSON Schema travels in the system prompt
        assert '"title": "StatementGeneratorOutput"' in system["content"] or (
            '"title": "NLIStatementOutput"' in system["content"]
        )


async def test_one_retry_on_unparsable_output(
    judge_server: ScriptedServer, worked_judge: WorkedExampleJudge, worked_example: RagSample
) -> None:
    worked_judge.malformed["nli"] = 1
    result = await run(judge_server, [worked_example], ["faithfulness"])
    assert result.failures == []
    assert result.rows[0]["scores"]["faithfulness"] == 0.75
    assert worked_judge.seen["nli"] == 2


async def test_row_still_unparsable_is_counted_not_averaged(
    judge_server: ScriptedServer, worked_judge: WorkedExampleJudge, worked_example: RagSample
) -> None:
    # both first answers unparsable, then one of the two retries too: exactly one row fails
    worked_judge.malformed["recall"] = 3
    second = worked_example.model_copy(update={"id": "second"})
    result = await run(judge_server, [worked_example, second], ["context_recall"])
    assert len(result.failures) == 1
    failure = result.failures[0]
    assert failure.metric == "context_recall"
    assert failure.reason == "unparsable"
    scored = [r for r in result.rows if "context_recall" in r["scores"]]
    assert len(scored) == 1
    assert scored[0]["scores"]["context_recall"] == 1.0
    json.dumps([f.to_json() for f in result.failures])  # reportable as is


async def test_timeout_is_a_counted_failure(
    judge_server: ScriptedServer, worked_example: RagSample
) -> None:
    from sleuth.scripted import Scenario, ScriptedResponse

    judge_server.set_scenario(Scenario(turns=[ScriptedResponse(content="{}", delay_ms=3000)]))
    judge_server.state.responder = None
    result = await run(judge_server, [worked_example], ["context_recall"], timeout_s=0.3)
    assert [(f.metric, f.reason) for f in result.failures] == [("context_recall", "timeout")]
    assert result.rows[0]["scores"] == {}


async def test_answer_relevancy_with_the_local_embedding_model(
    judge_server: ScriptedServer, worked_judge: WorkedExampleJudge, worked_example: RagSample
) -> None:
    """Real all-MiniLM-L6-v2 vectors: the question itself scores 1, other questions less."""
    from sleuth.core.minilm import ModelNotInstalled, find_model_dir

    try:
        find_model_dir()
    except ModelNotInstalled as exc:
        pytest.skip(f"local embedding model not installed: {exc}")
    worked_judge.questions = [worked_example.question]
    same = await run(
        judge_server, [worked_example], ["answer_relevancy"], embeddings_base_url="local"
    )
    worked_judge.questions = ["Which JSON modules does Redis include?"]
    other = await run(
        judge_server, [worked_example], ["answer_relevancy"], embeddings_base_url="local"
    )
    assert same.failures == []
    assert same.rows[0]["scores"]["answer_relevancy"] == pytest.approx(1.0, abs=1e-5)
    assert 0.0 < other.rows[0]["scores"]["answer_relevancy"] < 0.9
    assert same.usage["embedding_requests"] == 0  # nothing went over HTTP


def test_ragas_telemetry_is_off() -> None:
    """ragas posts usage events to the internet unless told not to; sleuth tells it."""
    from ragas._analytics import do_not_track

    import sleuth.evals.rag  # noqa: F401

    assert do_not_track() is True
