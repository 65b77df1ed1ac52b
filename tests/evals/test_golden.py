"""Golden dataset: generation from a folder through a scripted LLM, review, frozen split."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from sleuth.core.cli import main
from sleuth.core.errors import DatasetError
from sleuth.core.jsonl import dump_jsonl
from sleuth.evals.errors import ManifestError
from sleuth.evals.golden.builder import stratified_sample
from sleuth.evals.golden.cases import NOT_ENOUGH_INFORMATION, load_golden
from sleuth.evals.golden.corpus import Chunk, load_folder
from sleuth.evals.golden.manifest import freeze, verify
from sleuth.evals.golden.review import import_verdicts
from sleuth.scripted import ScriptedResponse, ScriptedServer

pytestmark = pytest.mark.integration

DOCS = {
    "runbooks/redis.md": "# Latency\n\n"
    + "Redis GET stays below 1 ms on the LAN. " * 4
    + "\n\n# Failover\n\n"
    + "Sentinel promotes a replica within 30 seconds. " * 4,
    "policies/returns.md": "# Returns\n\n"
    + "Customers may return goods within 30 days. " * 4
    + "\n\n# Refunds\n\n"
    + "Refunds are paid within 14 days of receipt. " * 4,
}


def generator(body: dict[str, Any]) -> ScriptedResponse:
    prompt = body["messages"][-1]["content"]
    frag = prompt.rsplit("Fragment: ", 1)[-1][:30] if "Fragment: " in prompt else ""
    if "generate 2 specific questions" in prompt:
        out: dict[str, Any] = {
            "questions": [f"What does it say about {frag}?", f"Which limit applies to {frag}?"]
        }
    elif "Answer the question using ONLY" in prompt:
        out = {"answer": "From the fragment: " + prompt.split("Question: ", 1)[1][:40]}
    elif "related documentation fragments" in prompt:
        out = {"question": "Combine: " + prompt[-60:], "answer": "Both fragments say so."}
    elif "false premise" in prompt:
        out = {"question": f"Why was {frag} removed in 2019?"}
    else:
        return ScriptedResponse(status=500, error_message="unknown prompt")
    return ScriptedResponse(content=json.dumps(out))


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    for rel, text in DOCS.items():
        p = tmp_path / "corpus" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return tmp_path / "corpus"


def test_folder_chunks_carry_source_and_section(corpus: Path) -> None:
    chunks = load_folder(corpus)
    assert {(c.source, c.section) for c in chunks} == {
        ("runbooks/redis.md", "Latency"),
        ("runbooks/redis.md", "Failover"),
        ("policies/returns.md", "Returns"),
        ("policies/returns.md", "Refunds"),
    }


def test_stratified_sample_spreads_over_sources() -> None:
    chunks = [Chunk(id=f"a{i}", text="x", source="a") for i in range(10)]
    chunks += [Chunk(id=f"b{i}", text="x", source="b") for i in range(2)]
    picked = stratified_sample(chunks, 4, seed=1)
    assert sorted(c.source for c in picked) == ["a", "a", "b", "b"]


def test_generate_review_freeze(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "golden.jsonl"
    with ScriptedServer(responder=generator) as server:
        code = main(
            [
                "eval",
                "build-golden",
                "generate",
                "--folder",
                str(corpus),
                "--endpoint",
                server.url,
                "--model",
                "gen",
                "--seeds",
                "4",
                "--multi-hop",
                "2",
                "--adversarial",
                "2",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        requests = server.requests()
    assert code == 0
    cases = load_golden(out)
    strata = [c.stratum for c in cases]
    assert strata.count("easy") == 8
    assert strata.count("multi-hop") == 2
    assert strata.count("adversarial") == 2
    assert all(c.reference == NOT_ENOUGH_INFORMATION for c in cases if c.stratum == "adversarial")
    assert all(2 <= len(c.reference_context_ids) <= 4 for c in cases if c.stratum == "multi-hop")
    assert all(r["response_format"] == {"type": "json_object"} for r in requests)

    review = tmp_path / "review.csv"
    assert main(["eval", "build-golden", "review-export", str(out), "--out", str(review)]) == 0
    rows = list(csv.DictReader(review.open()))
    assert 1 <= len(rows) <= len(cases) // 2
    rows[0]["verdict"] = "reject"
    for r in rows[1:]:
        r["verdict"] = "accept"
    with review.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert main(["eval", "build-golden", "review-import", str(out), "--verdicts", str(review)]) == 0
    kept = load_golden(out)
    assert len(kept) == len(cases) - 1
    assert rows[0]["id"] not in {c.id for c in kept}

    freeze(kept, out)
    verify(kept, out)
    assert main(["eval", "build-golden", "verify", str(out)]) == 0
    test_case = next(c for c in kept if c.split == "test")  # content hash put one there
    edited = [
        c.model_copy(update={"reference": "changed"}) if c.id == test_case.id else c for c in kept
    ]
    with pytest.raises(ManifestError, match="test case content changed"):
        verify(edited, out)
    moved = [
        kept[0].model_copy(update={"split": "test" if kept[0].split == "dev" else "dev"}),
        *kept[1:],
    ]
    with pytest.raises(ManifestError, match="split changed"):
        verify(moved, out)


def test_bad_verdict_names_the_csv_line(tmp_path: Path) -> None:
    from sleuth.evals.golden.cases import GoldenCase

    cases = [GoldenCase(id="g1", question="q", reference="r", stratum="easy", split="dev")]
    dump_jsonl(cases, tmp_path / "g.jsonl")
    (tmp_path / "v.csv").write_text("id,verdict\ng1,maybe\n")
    with pytest.raises(DatasetError, match=r"v.csv:2: field 'verdict'"):
        import_verdicts(cases, tmp_path / "v.csv")


def test_shipped_golden_set_is_frozen_and_grounded_in_the_sample_corpus() -> None:
    from sleuth.evals.golden.cases import shipped_golden_path
    from sleuth.tools.sample import DOCUMENTS

    path = shipped_golden_path()
    cases = load_golden(path)
    verify(cases, path)  # matches its checked-in manifest
    assert {c.stratum for c in cases} == {"easy", "multi-hop", "adversarial"}
    assert {c.split for c in cases} == {"dev", "test"}
    ids = {d.id for d in DOCUMENTS}
    for c in cases:
        assert set(c.reference_context_ids) <= ids, c.id
        if c.stratum == "multi-hop":
            assert 2 <= len(c.reference_context_ids) <= 4
        if c.stratum == "adversarial":
            assert c.reference == NOT_ENOUGH_INFORMATION


def test_chunks_from_a_qdrant_collection(tmp_path: Path) -> None:
    from qdrant_client import QdrantClient, models

    from sleuth.evals.golden.corpus import load_qdrant

    client = QdrantClient(path=str(tmp_path / "qdrant"))
    client.create_collection(
        "docs", vectors_config=models.VectorParams(size=2, distance=models.Distance.COSINE)
    )
    client.upsert(
        "docs",
        points=[
            models.PointStruct(
                id=i,
                vector=[1.0, float(i)],
                payload={
                    "document_id": "contract-a",
                    "chunk_index": i,
                    "source": "contracts/a.md",
                    "title": "Provider A agreement",
                    "text": f"Clause {i}: text.",
                    "metadata": {"year": "2025"},
                },
            )
            for i in range(3)
        ],
    )
    client.close()
    chunks = load_qdrant(str(tmp_path / "qdrant"), "docs")
    assert [c.id for c in chunks] == ["contract-a#0", "contract-a#1", "contract-a#2"]
    assert {(c.source, c.section, c.date) for c in chunks} == {
        ("contracts/a.md", "Provider A agreement", "2025")
    }
