"""Judge-free retrieval metrics and the A/B comparison's statistics (unit)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from sleuth.evals.compare import compare, compare_metric
from sleuth.evals.errors import EvalError
from sleuth.evals.synth.corpus import generate
from sleuth.scoring.retrieval import Retrieved, items_from, percentile, score_row

pytestmark = pytest.mark.unit


def _p(chunk: str, text: str = "") -> Retrieved:
    return Retrieved(id=chunk, document_id=chunk.rsplit("#", 1)[0], text=text)


def test_metrics_by_chunk_id_follow_their_definitions() -> None:
    items = items_from(["a#1", "b#0"])
    row = score_row([_p("x#0"), _p("a#1"), _p("y#2"), _p("b#0")], items, k=4)
    assert row["context_precision_id"] == 0.5
    assert row["context_recall_id"] == 1.0
    assert row["mrr"] == 0.5
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    assert row["ndcg"] == pytest.approx(dcg / (1 + 1 / math.log2(3)))


def test_document_ids_match_any_chunk_and_duplicates_gain_once() -> None:
    row = score_row([_p("a#0"), _p("a#3"), _p("z#1")], items_from(["a"]), k=3)
    assert row["context_precision_id"] == pytest.approx(2 / 3)  # both chunks of a are relevant
    assert row["context_recall_id"] == 1.0
    assert row["ndcg"] == 1.0  # the second chunk of the same document adds nothing


def test_evidence_matches_text_inside_the_document_whatever_the_chunking() -> None:
    items = items_from([], [("doc", "penalty of  2% per\nmonth")])
    hit = _p("doc#5", "... the Provider pays a Penalty of 2% per month of delay ...")
    wrong_doc = _p("other#0", "a penalty of 2% per month")
    cut = _p("doc#4", "the Provider pays a penalty of 2%")  # the evidence cut by a boundary
    row = score_row([wrong_doc, cut, hit], items, k=3)
    assert row["context_precision_id"] == pytest.approx(1 / 3)
    assert row["mrr"] == pytest.approx(1 / 3)
    assert score_row([], items, k=5) == {
        "context_precision_id": 0.0,
        "context_recall_id": 0.0,
        "mrr": 0.0,
        "ndcg": 0.0,
    }


def test_percentile_interpolates() -> None:
    assert percentile([], 50) is None
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile([float(i) for i in range(101)], 99) == 99.0


def _doc(scores: dict[str, list[float]], **over: Any) -> dict[str, Any]:
    n = len(next(iter(scores.values())))
    rows = [{"id": f"r{i}", "scores": {m: v[i] for m, v in scores.items()}} for i in range(n)]
    base = {"kind": "retrieval", "dataset": "d", "dataset_sha256": "x", "split": "dev"}
    return {**base, "metrics": {m: {} for m in scores}, "rows": rows, **over}


def test_a_clear_improvement_is_significant_and_no_change_is_not() -> None:
    a = _doc({"mrr": [0.0, 0.5, 1.0, 0.0] * 25})
    b = _doc({"mrr": [1.0, 0.5, 1.0, 0.5] * 25})
    c = compare_metric(a, b, "mrr", resamples=2000)
    assert c.n == 100
    assert c.difference == pytest.approx(0.375)
    assert c.low is not None
    assert c.high is not None
    assert 0 < c.low < 0.375 < c.high
    assert c.p_value is not None
    assert c.p_value < 0.001
    same = compare_metric(a, a, "mrr", resamples=2000)
    assert (same.difference, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert c.line().startswith("B − A on mrr: +0.375 [")
    assert c.line().endswith(", n = 100")


def test_small_samples_get_the_exact_permutation_p_value() -> None:
    a = _doc({"mrr": [0.0, 0.0, 0.0, 0.0]})
    b = _doc({"mrr": [1.0, 1.0, 1.0, 1.0]})
    # 16 sign patterns, two as extreme as the observed (all + and all -)
    assert compare_metric(a, b, "mrr").p_value == pytest.approx(2 / 16)


def test_rows_are_paired_by_id_and_only_when_both_scored() -> None:
    a = _doc({"mrr": [0.0, 1.0, 0.0]})
    b = _doc({"mrr": [1.0, 1.0, 1.0]})
    b["rows"] = [b["rows"][2], b["rows"][0]]  # reordered, one row missing
    c = compare_metric(a, b, "mrr")
    assert c.n == 2
    assert c.difference == 1.0


def test_compare_refuses_other_datasets_and_splits_and_warns_on_test() -> None:
    a = _doc({"mrr": [0.0, 1.0]})
    for key, value in (("dataset", "other"), ("dataset_sha256", "y"), ("split", "test")):
        with pytest.raises(EvalError, match=f"different {key}"):
            compare(a, _doc({"mrr": [0.0, 1.0]}, **{key: value}))
    with pytest.raises(EvalError, match="compare takes retrieval or ragas"):
        compare(_doc({"mrr": [0.0]}, kind="tsa"), _doc({"mrr": [0.0]}, kind="tsa"))
    on_test = compare(_doc({"mrr": [0.0, 1.0]}, split="test"), _doc({"mrr": [1, 1]}, split="test"))
    assert "tunes on the test split" in on_test["warnings"][0]


def test_generated_corpus_is_deterministic_and_known_by_construction() -> None:
    docs, cases = generate(documents=60, questions=40, seed=3)
    again, cases_again = generate(documents=60, questions=40, seed=3)
    assert [d.markdown() for d in docs] == [d.markdown() for d in again]
    assert cases == cases_again
    assert len(docs) == 60
    by_id = {d.id: d.markdown() for d in docs}
    strata = {c.stratum for c in cases}
    assert strata == {"easy", "multi-hop", "adversarial"}
    for case in cases:
        for evidence in case.reference_evidence:
            assert evidence.text in by_id[evidence.document_id]
        assert case.reference_context_ids == sorted(
            {e.document_id for e in case.reference_evidence}
        )
    assert any(not c.reference_evidence for c in cases if c.stratum == "adversarial")


def test_recorded_rows_are_scored_by_their_ids() -> None:
    from sleuth.evals.retrieval.runner import score_rows
    from sleuth.scoring.samples import RagSample

    rows = [
        RagSample(
            id="r1",
            question="q",
            answer="a",
            contexts=["x", "y"],
            context_ids=["other#0", "contract-a#2"],
            reference_context_ids=["contract-a"],
        ),
        RagSample(id="r2", question="q", answer="I do not know", stratum="adversarial"),
    ]
    run = score_rows(rows)
    [row] = run.rows
    assert row["scores"]["context_precision_id"] == 0.5
    assert row["scores"]["mrr"] == 0.5
    assert row["retrieved"] == ["other#0", "contract-a#2"]
    assert [f.row_id for f in run.skipped] == ["r2"]
