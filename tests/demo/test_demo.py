"""`make demo` (`sleuth demo`) and `sleuth ask` on embedded defaults: the newcomer's first command.

Real parts throughout: PostgreSQL from the pgserver wheel, Qdrant local mode, the MiniLM model in
numpy, a loopback web fixture, and the router as planner (no model server here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SLEUTH = str(Path(sys.executable).parent / "sleuth")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_output() -> str:
    # Literally the README's first command.
    proc = subprocess.run(
        ["make", "-s", "demo"], cwd=ROOT, capture_output=True, text=True, timeout=600, env=_env()
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.pop("SLEUTH_LLM_URL", None)
    return env


def _section(output: str, number: int) -> str:
    start = output.index(f"=== {number}. ")
    end = output.find("\n=== ", start + 1)
    return output[start : end if end > 0 else None]


def test_demo_answers_the_seed_question_like_the_article(demo_output: str) -> None:
    seed = _section(demo_output, 1)
    assert "Planner:  router (deterministic planner, no LLM)" in seed
    assert (
        'Action: contracts_summary {"min_amount": 100000.0, "year": 2025, "region": "EU"}' in seed
    )
    assert seed.index("Iteration 1") < seed.index("contracts_summary") < seed.index("Iteration 2")
    assert "Action: vector_search" in seed.split("Iteration 2")[1]
    answer = seed.split("Answer (2 iterations")[1]
    assert "num_contracts = 47" in answer
    assert "8.3 M€" in answer
    assert "clause 8.3 — Late-delivery penalty" in answer
    assert "Provider A" in answer
    assert "Provider B" in answer
    assert "clause 7.1 — Price revision" in answer
    assert "CPI" in answer
    assert "[contract-provider-a-2025#0]" in answer
    assert "Citations:" in answer
    assert "[sql:contracts]" in answer


def test_demo_shows_parallel_web_down_and_not_enough_evidence(demo_output: str) -> None:
    single = _section(demo_output, 2)
    assert single.count("Action:") == 1
    assert "clause 8.3" in single
    parallel = _section(demo_output, 3)
    assert "(2 calls in parallel" in parallel
    assert "LOCAL FIXTURE, not the internet" in parallel
    down = _section(demo_output, 4)
    assert "[unavailable" in down
    assert "Real-time data is not accessible at this moment" in down
    assert "clause 7.1 — Price revision" in down
    nothing = _section(demo_output, 5)
    assert "I do not have enough information" in nothing
    assert "Action:" not in nothing


def test_demo_prints_the_router_tsa_table(demo_output: str) -> None:
    table = demo_output.split("=== Tool selection accuracy")[1]
    for tool in ("sql_query", "vector_search", "web_search", "none", "overall"):
        assert f"  {tool}" in table
    assert "the seed's 0.85 threshold" in table


def test_demo_prints_the_command_for_a_real_model(demo_output: str) -> None:
    tail = demo_output.split("=== Tool selection accuracy")[1]
    assert "make local-model && .venv/bin/sleuth ask --planner local" in tail


def test_ask_help_offers_the_planner_and_its_timeouts() -> None:
    proc = subprocess.run([SLEUTH, "ask", "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    for flag in ("--planner {router,local}", "--local-model", "--tool-calling {native,guided}"):
        assert flag in text
    assert "--model-timeout SECONDS" in text
    assert "default 300" in text
    assert "default 900" in text


def test_ask_answers_one_question_as_json() -> None:
    proc = subprocess.run(
        [SLEUTH, "ask", "--json", "What late-delivery penalty applies to Provider A?"],
        capture_output=True,
        text=True,
        timeout=300,
        env=_env(),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    body = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "2% per month" in body["answer"]
    assert body["trace"]["stopReason"] == "answered"
    assert any(c["id"].startswith("contract-provider-a") for c in body["citations"])
