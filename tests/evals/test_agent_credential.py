"""The eval's credential towards the agent: a token file read for every question (a projected
ServiceAccount token rotates), or an API key from the environment; asked of ``sleuth agent`` as
a process that admits only that caller."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sleuth.evals.errors import EvalError
from sleuth.evals.golden.cases import GoldenCase
from sleuth.evals.rag.agentauth import AgentCredential
from sleuth.evals.rag.collect import collect
from sleuth.scripted import Scenario, ScriptedServer
from tests.agent.access_kit import audit_records, key_directory, new_key
from tests.agent.agent_doubles import SEED_QUESTION, seed_tools, seed_turns
from tests.agent.agent_process import AgentProcess

pytestmark = pytest.mark.integration


def test_the_token_file_is_read_for_each_question_and_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = new_key(), new_key()
    directory = key_directory(tmp_path / "keys", "eval", first, second)
    access = {"callers": [{"name": "eval", "apiKeyDirectory": str(directory), "grants": ["trace"]}]}
    case = GoldenCase(id="q", question=SEED_QUESTION, reference="-", stratum="easy", split="test")
    token = tmp_path / "token"
    with ScriptedServer(Scenario(turns=seed_turns())) as model:
        config = {
            "model": {"endpoint": model.url, "servedModelName": "scripted"},
            "tools": seed_tools(),
            "access": access,
        }
        with AgentProcess(config, tmp_path, name="evaluated") as agent:
            token.write_text(first)
            rows = asyncio.run(collect([case], agent.url, credential=AgentCredential(token)))
            assert rows.rows
            assert not rows.failures
            token.write_text(second)  # rotated by the kubelet: the next question sends it
            rows = asyncio.run(collect([case], agent.url, credential=AgentCredential(token)))
            assert rows.rows
            assert rows.rows[0].contexts
            refused = asyncio.run(collect([case], agent.url))
            assert [f.reason for f in refused.failures] == ["agent_http_401"]
            keyed = AgentCredential(None, first)
            assert first not in repr(keyed)
            assert asyncio.run(collect([case], agent.url, credential=keyed)).rows
            log = agent.log.read_text()
    subjects = [r["subject"] for r in audit_records(log) if r["outcome"] == "answered"]
    assert subjects == ["key-0", "key-1", "key-0"]
    assert first not in log
    assert second not in log


def test_an_unreadable_token_file_stops_the_run_naming_the_flag(tmp_path: Path) -> None:
    with pytest.raises(EvalError, match=r"--agent-token-file .*cannot read it"):
        AgentCredential(tmp_path / "absent").headers()
    (tmp_path / "empty").write_text("")
    with pytest.raises(EvalError, match="the file is empty"):
        AgentCredential(tmp_path / "empty").headers()
