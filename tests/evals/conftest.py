"""Fixtures for the evals' tests: the scripted judge (the agent's scripted model server)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from evals_judge_script import WorkedExampleJudge, embedding_vectors

from sleuth.evals.data import worked_example_path
from sleuth.scoring.samples import RagSample, load_samples
from sleuth.scripted import EmbeddingScript, Scenario, ScriptedServer


@pytest.fixture
def worked_example() -> RagSample:
    return load_samples(worked_example_path())[0]


@pytest.fixture
def worked_judge(worked_example: RagSample) -> WorkedExampleJudge:
    return WorkedExampleJudge(worked_example.reference or "", worked_example.answer)


@pytest.fixture
def judge_server(worked_judge: WorkedExampleJudge) -> Iterator[ScriptedServer]:
    scenario = Scenario(embeddings=EmbeddingScript(dimensions=4, vectors=embedding_vectors()))
    with ScriptedServer(scenario, responder=worked_judge) as server:
        yield server
