"""``sleuth eval synth-corpus``, ``sleuth ingest``, ``sleuth eval retrieval`` and ``sleuth eval
compare`` as processes, on a small generated corpus embedded by the real local model."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.paths import SLEUTH

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _sleuth(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SLEUTH), *args], capture_output=True, text=True, check=False, timeout=600
    )


def _binding(path: Path, **knobs: Any) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "sleuth.dev/v1alpha1",
                "kind": "ToolBinding",
                "metadata": {"name": "clauses"},
                "spec": {
                    "agentRef": {"name": "contracts"},
                    "type": "vector_search",
                    "vectorSearch": {
                        "embedded": {"claimName": "qdrant"},
                        "collection": "contracts",
                        "topK": 5,
                        "chunking": {"size": 600, "overlap": 100},
                        **knobs,
                    },
                },
            }
        ),
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("synth")
    made = _sleuth(
        "eval", "synth-corpus", "--out", str(work), "--documents", "40", "--questions", "40"
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["cases"] == 40
    binding = _binding(work / "dense.yaml")
    ingested = _sleuth(
        "ingest",
        str(work / "docs"),
        "--binding",
        str(binding),
        "--qdrant-path",
        str(work / "qdrant"),
        "--quiet",
    )
    assert ingested.returncode == 0, ingested.stderr
    assert "into contracts" in ingested.stdout
    return work


def _retrieval(
    corpus: Path, name: str, *extra: str, **knobs: Any
) -> subprocess.CompletedProcess[str]:
    binding = _binding(corpus / f"{name}.yaml", **knobs)
    return _sleuth(
        "eval",
        "retrieval",
        "--binding",
        str(binding),
        "--golden",
        str(corpus / "golden.jsonl"),
        "--qdrant-path",
        str(corpus / "qdrant"),
        "--no-progress",
        "--split",
        "all",
        "--final-report",
        "--out",
        str(corpus / f"{name}.json"),
        *extra,
    )


def test_retrieval_run_reports_like_the_other_evals(corpus: Path) -> None:
    run = _retrieval(
        corpus, "dense", "--prom", str(corpus / "dense.prom"), "--html", str(corpus / "d.html")
    )
    assert run.returncode in (0, 1), run.stderr
    doc = json.loads((corpus / "dense.json").read_text())
    assert doc["kind"] == "retrieval"
    assert doc["config"]["k"] == 5
    assert doc["config"]["vectorSearch"]["chunking"] == {"size": 600, "overlap": 100}
    rows = doc["metrics"]["mrr"]["rows"]
    assert rows + len(doc["skipped"]) == 40  # unanswerable cases are listed, not scored
    assert 0 < doc["metrics"]["context_recall_id"]["value"] <= 1
    assert doc["latency"]["calls"] == rows
    assert "latency per call: p50" in run.stdout
    prom = (corpus / "dense.prom").read_text()
    for series in (
        "rag_retrieval_context_precision_score",
        "rag_retrieval_mrr",
        'rag_retrieval_latency_seconds{agent="default",dataset="golden",quantile="0.99"',
    ):
        assert series in prom
    assert "Latency per call" in (corpus / "d.html").read_text()
    again = _sleuth("eval", "report", str(corpus / "dense.json"), "--prom", str(corpus / "r.prom"))
    assert again.returncode == (0 if doc["gate"]["passed"] else 1)
    assert (corpus / "r.prom").read_text() == prom


def test_compare_pairs_two_configurations(corpus: Path) -> None:
    assert _retrieval(corpus, "dense").returncode in (0, 1)
    assert _retrieval(corpus, "hybrid", hybrid={"fusion": "rrf"}).returncode in (0, 1)
    out = _sleuth(
        "eval",
        "compare",
        str(corpus / "dense.json"),
        str(corpus / "hybrid.json"),
        "--out",
        str(corpus / "cmp.json"),
        "--html",
        str(corpus / "cmp.html"),
    )
    assert out.returncode == 0, out.stderr
    assert "tunes on the test split" in out.stdout  # --split all includes the frozen split
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("B − A on ")]
    assert [ln.split(":")[0] for ln in lines] == [
        "B − A on context_precision_id",
        "B − A on context_recall_id",
        "B − A on mrr",
        "B − A on ndcg",
        "B − A on latency_seconds",
    ]
    assert all(", p = " in ln and ", n = " in ln for ln in lines)
    cmp = json.loads((corpus / "cmp.json").read_text())
    assert cmp["b"]["config"]["vectorSearch"]["hybrid"] == {"fusion": "rrf"}
    assert "<svg" in (corpus / "cmp.html").read_text()


def test_compare_refuses_a_run_of_another_split(corpus: Path) -> None:
    assert _retrieval(corpus, "dense").returncode in (0, 1)
    dev = _binding(corpus / "dev.yaml")
    run = _sleuth(
        "eval",
        "retrieval",
        "--binding",
        str(dev),
        "--golden",
        str(corpus / "golden.jsonl"),
        "--qdrant-path",
        str(corpus / "qdrant"),
        "--no-progress",
        "--out",
        str(corpus / "dev.json"),
    )
    assert run.returncode in (0, 1), run.stderr
    refused = _sleuth("eval", "compare", str(corpus / "dense.json"), str(corpus / "dev.json"))
    assert refused.returncode == 2
    assert "different split" in refused.stderr


def test_a_binding_whose_chunking_differs_from_the_collection_fails_every_row(
    corpus: Path,
) -> None:
    run = _retrieval(corpus, "rechunked", chunking={"size": 800, "overlap": 150})
    assert run.returncode == 1
    doc = json.loads((corpus / "rechunked.json").read_text())
    assert doc["failures"]
    assert "re-ingest it with `sleuth ingest --binding`" in doc["failures"][0]["detail"]
