"""The agent configuration file model: defaults, camelCase round trip, errors naming the field."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from sleuth.core.api.agent_config import AgentConfig, parse_agent_config

pytestmark = pytest.mark.unit

MINIMAL = """
model:
  endpoint: http://vllm:8000/v1
  servedModelName: llama
tools:
  - name: sql_query
    type: sql_query
    endpoint: http://tool-sql:8080
"""


def test_minimal_file_gets_documented_defaults() -> None:
    config = parse_agent_config(MINIMAL)
    assert config.max_iterations == 5
    assert config.parallel_tool_calls is True
    assert config.planner.mode == "llm"
    assert config.tools[0].timeout_seconds == 10.0
    assert str(config.model.endpoint) == "http://vllm:8000/v1"


def test_round_trip_through_camel_case_file_form() -> None:
    config = parse_agent_config(MINIMAL)
    data = config.to_file_dict()
    assert data["maxIterations"] == 5
    assert data["model"]["servedModelName"] == "llama"
    assert data["onlineEval"]["sampleRate"] == 0.05
    assert AgentConfig.model_validate(data) == config


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ("maxIterations: 11", "maxIterations"),
        ("maxIterations: 0", "maxIterations"),
        ("maxConcurrentRequests: 0", "maxConcurrentRequests"),
        ("colour: red", "colour"),
        ("onlineEval: {sampleRate: 1.5}", "onlineEval.sampleRate"),
        ("onlineEval: {queueSize: 0}", "onlineEval.queueSize"),
    ],
)
def test_bad_values_name_the_field(patch: str, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        parse_agent_config(MINIMAL + patch + "\n")
    assert field in str(info.value)


def test_duplicate_tool_names_rejected() -> None:
    text = MINIMAL + "  - name: sql_query\n    type: vector_search\n"
    with pytest.raises(ValidationError, match="duplicate tool name 'sql_query'"):
        parse_agent_config(text)


def test_tool_is_remote_or_in_process_not_both() -> None:
    text = MINIMAL.replace(
        "endpoint: http://tool-sql:8080", "endpoint: http://tool-sql:8080\n    factory: a.b:c"
    )
    with pytest.raises(ValidationError, match="exclusive"):
        parse_agent_config(text)


def test_ttl_keys_accept_both_spellings() -> None:
    upper = parse_agent_config(MINIMAL + "toolCacheTTLSeconds: 7\n")
    lower = parse_agent_config(MINIMAL + "toolCacheTtlSeconds: 7\n")
    assert upper.tool_cache_ttl_seconds == lower.tool_cache_ttl_seconds == 7
    assert upper.to_file_dict()["toolCacheTtlSeconds"] == 7


def test_online_eval_defaults_to_five_percent_judged_by_the_agents_model() -> None:
    online = parse_agent_config(MINIMAL).online_eval
    assert online.sample_rate == 0.05
    assert online.judge is None
    assert online.embeddings.source == "judge"
    assert online.queue_size == 100


def test_online_eval_embeddings_endpoint_goes_with_its_source() -> None:
    with pytest.raises(ValidationError, match=r"embeddings\.endpoint"):
        parse_agent_config(MINIMAL + "onlineEval: {embeddings: {source: endpoint}}\n")
    with pytest.raises(ValidationError, match=r"embeddings\.endpoint"):
        parse_agent_config(MINIMAL + "onlineEval: {embeddings: {endpoint: 'http://tei:80/v1'}}\n")
    text = MINIMAL + "onlineEval: {embeddings: {source: endpoint, endpoint: 'http://tei:80/v1'}}\n"
    assert str(parse_agent_config(text).online_eval.embeddings.endpoint) == "http://tei/v1"


def test_online_eval_embeddings_key_comes_from_its_own_env(monkeypatch: pytest.MonkeyPatch) -> None:
    from sleuth.agent.onlineeval import judge_config

    text = MINIMAL + (
        "onlineEval: {embeddings: {source: endpoint, endpoint: 'http://tei:8080/v1', "
        "model: bge-m3, apiKeyEnv: TEI_KEY}}\n"
    )
    config = parse_agent_config(text)
    assert config.online_eval.embeddings.api_key_env == "TEI_KEY"
    assert config.to_file_dict()["onlineEval"]["embeddings"]["apiKeyEnv"] == "TEI_KEY"
    monkeypatch.setenv("TEI_KEY", "tei-secret")
    judge = judge_config(config)
    assert (judge.embeddings_base_url, judge.embeddings_api_key) == (
        "http://tei:8080/v1",
        "tei-secret",
    )
    monkeypatch.delenv("TEI_KEY")
    assert judge_config(config).embeddings_api_key is None  # then the judge's key is sent
