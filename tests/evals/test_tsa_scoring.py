"""TSA scoring with BFCL semantics, on hand-made cases and the shipped set."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from sleuth.core.errors import DatasetError
from sleuth.core.tools import DEFAULT_SPECS
from sleuth.evals.splits import split_for
from sleuth.evals.tsa.cases import ExpectedCall, TsaCase, load_cases, shipped_cases_path
from sleuth.evals.tsa.matching import check_arguments, values_equal
from sleuth.evals.tsa.scoring import ActualCall, CaseResult, score_case, summarise

pytestmark = pytest.mark.unit


def case(expected: list[dict[str, object]], cid: str = "c1") -> TsaCase:
    return TsaCase.model_validate({"id": cid, "query": "q", "expected": expected, "split": "dev"})


def call(name: str, **arguments: object) -> ActualCall:
    return ActualCall(name=name, arguments=dict(arguments))


SQL = {
    "name": "sql_query",
    "arguments": {
        "query": [{"$regex": r"count\s*\(.*contracts"}],
        "params": [[100000, 2025, "EU"]],
    },
}
VEC = {"name": "vector_search", "arguments": {"query": [{"$any": True}], "top_k": ["", 5]}}


def test_right_tool_and_arguments_pass() -> None:
    c = case([SQL])
    r = score_case(
        c,
        [
            call(
                "sql_query",
                query="SELECT COUNT(*)\nFROM contracts WHERE amount > $1",
                params=[100000.0, 2025, "eu"],
            )
        ],
        dict(DEFAULT_SPECS),
    )
    assert r.passed, r.reasons
    assert r.tool_correct
    assert r.args_correct


def test_wrong_tool_fails_selection_with_a_reason() -> None:
    r = score_case(case([SQL]), [call("vector_search", query="contracts")])
    assert not r.tool_correct
    assert not r.passed
    assert r.predicted_label == "vector_search"
    assert r.reasons == ["expected sql_query, got vector_search"]


def test_literal_in_sql_instead_of_params_fails_arguments_only() -> None:
    r = score_case(
        case([SQL]),
        [call("sql_query", query="SELECT count(*) FROM contracts WHERE amount > 100000")],
    )
    assert r.tool_correct
    assert r.args_correct is False
    assert "sql_query: argument 'params' missing" in r.reasons


def test_unexpected_argument_is_refused() -> None:
    r = score_case(case([VEC]), [call("vector_search", query="x", filters={"a": 1})])
    assert r.tool_correct
    assert not r.args_correct
    assert any("unexpected argument 'filters'" in x for x in r.reasons)


def test_optional_argument_may_be_omitted_but_must_match_when_given() -> None:
    assert score_case(case([VEC]), [call("vector_search", query="x")]).passed
    assert score_case(case([VEC]), [call("vector_search", query="x", top_k=5.0)]).passed
    assert not score_case(case([VEC]), [call("vector_search", query="x", top_k=7)]).passed


def test_required_argument_from_the_tool_schema() -> None:
    loose = {"name": "vector_search", "arguments": {"query": ["", {"$any": True}]}}
    r = score_case(case([loose]), [call("vector_search")], dict(DEFAULT_SPECS))
    assert not r.passed
    assert "vector_search: required argument 'query' missing" in r.reasons


def test_parallel_calls_match_in_any_order() -> None:
    c = case([SQL, VEC])
    calls = [
        call("vector_search", query="clauses"),
        call("sql_query", query="select count(*) from contracts", params=[100000, 2025, "EU"]),
    ]
    r = score_case(c, calls)
    assert r.passed
    assert r.predicted_label == "sql_query+vector_search"
    assert not score_case(c, calls[:1]).tool_correct


def test_irrelevance_passes_only_without_a_call() -> None:
    c = case([])
    assert score_case(c, []).passed
    r = score_case(c, [call("web_search", query="hello")])
    assert not r.passed
    assert r.reasons == ["expected no tool call, got web_search"]


def test_unparsable_arguments_fail_arguments() -> None:
    bad = ActualCall.from_openai({"function": {"name": "vector_search", "arguments": '{"query": '}})
    r = score_case(case([VEC]), [bad])
    assert r.tool_correct
    assert not r.args_correct
    assert r.reasons == ["vector_search: arguments are not a JSON object"]


def test_normalisation_respects_json_types() -> None:
    assert values_equal("  Hello   World ", "hello world")
    assert values_equal(5, 5.0)
    assert not values_equal("5", 5)
    assert not values_equal(True, 1)
    assert check_arguments({"q": "x"}, {"q": [{"$contains": ["Y"]}]}) == [
        "argument 'q': 'x' is not an acceptable value"
    ]


def test_summary_counts_per_tool_confusion_and_threshold() -> None:
    cases = [case([SQL], "a"), case([SQL], "b"), case([VEC], "c"), case([], "d")]
    good_sql = call(
        "sql_query", query="select count(*) from contracts", params=[100000, 2025, "EU"]
    )
    results = [
        score_case(cases[0], [good_sql]),
        score_case(cases[1], [call("vector_search", query="x")]),
        score_case(cases[2], [call("vector_search", query="x")]),
        score_case(cases[3], []),
    ]
    s = summarise(results)
    assert s.tsa == 0.75
    assert s.below_threshold
    assert s.tsa_tool_turns == pytest.approx(2 / 3)
    assert s.per_tool["sql_query"] == {"cases": 2, "tool_correct": 1, "tsa": 0.5}
    assert s.per_tool["none"]["tsa"] == 1.0
    assert s.confusion["sql_query"] == {"sql_query": 1, "vector_search": 1}
    assert s.argument_accuracy == 1.0


def test_shipped_set_is_valid_and_covers_every_tool() -> None:
    cases = load_cases(shipped_cases_path())
    labels = Counter(c.expected_label for c in cases)
    assert len(cases) >= 40
    for tool in ("sql_query", "vector_search", "web_search", "none"):
        assert labels[tool] >= 8, labels
    queries = {c.query for c in cases}
    for seed in (
        "How many orders in March?",
        "What does the returns policy say?",
        "What is the price of copper today?",
        "Sum the Q3 contracts",
    ):
        assert seed in queries
    assert {c.split for c in cases} == {"dev", "test"}
    assert all(c.split == split_for(c.query) for c in cases)
    for c in cases:  # every expected call names a real tool and only its arguments
        for e in c.expected:
            props = DEFAULT_SPECS[e.name].parameters["properties"]
            assert set(e.arguments) <= set(props), (c.id, e.name)


def test_invalid_case_names_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "cases.jsonl"
    p.write_text(
        '{"id": "a", "query": "q", "expected": [], "split": "dev"}\n'
        '{"id": "b", "query": "q", "expected": [{"name": "sql_query", '
        '"arguments": {"query": []}}], "split": "dev"}\n'
    )
    with pytest.raises(DatasetError, match=r"cases.jsonl:2: field 'expected\[0\].arguments'"):
        load_cases(p)
    p.write_text('{"id": "a", "query": "q", "expected": [], "split": "train"}\n')
    with pytest.raises(DatasetError, match=r":1: field 'split'"):
        load_cases(p)


async def test_in_process_chat_model_first_decision_is_scored() -> None:
    from sleuth.core.llm import ModelTurn, ToolCallRequest
    from sleuth.evals.tsa.runner import run_with_chat_model

    class Model:
        name = "test-model"

        async def complete(
            self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
        ) -> ModelTurn:
            assert [t["function"]["name"] for t in tools] == ["vector_search"]
            query = messages[-1]["content"]
            if query == "boom":
                raise RuntimeError("model down")
            return ModelTurn(
                content=None,
                tool_calls=(
                    ToolCallRequest(id="1", name="vector_search", arguments_text='{"query": "x"}'),
                ),
            )

    cases = [
        TsaCase.model_validate({"id": "a", "query": "q", "expected": [VEC], "split": "dev"}),
        TsaCase.model_validate({"id": "b", "query": "boom", "expected": [VEC], "split": "dev"}),
    ]
    run = await run_with_chat_model(cases, [DEFAULT_SPECS["vector_search"]], Model())
    assert [r.passed for r in run.results] == [True, False]
    assert run.results[1].error == "RuntimeError: model down"
    assert summarise(run.results).errors == 1


def test_shipped_set_has_every_stratum() -> None:
    cases = load_cases(shipped_cases_path())
    strata = Counter(c.stratum for c in cases)
    assert set(strata) == {"single", "sequential", "parallel", "none", "adversarial"}
    assert strata["sequential"] >= 5
    assert strata["adversarial"] >= 6
    # sequential cases expect the first tool alone: both at once would be a wrong plan
    assert all(len(c.expected) == 1 for c in cases if c.stratum == "sequential")


def test_stratum_is_derived_when_omitted_and_checked_when_given() -> None:
    def case(expected: list[dict[str, object]], stratum: str | None = None) -> TsaCase:
        data: dict[str, object] = {"id": "c", "query": "q", "expected": expected, "split": "dev"}
        if stratum:
            data["stratum"] = stratum
        return TsaCase.model_validate(data)

    one = [{"name": "sql_query"}]
    assert case([]).stratum == "none"
    assert case(one).stratum == "single"
    assert case(one * 2).stratum == "parallel"
    assert case(one, "sequential").stratum == "sequential"
    assert case([], "adversarial").stratum == "adversarial"
    with pytest.raises(ValueError, match="stratum 'parallel' expects 2-64 calls"):
        case(one, "parallel")
    with pytest.raises(ValueError, match="stratum 'none'"):
        case(one, "none")


def test_summary_reports_per_stratum_malformed_text_calls_and_seconds() -> None:
    cases = [
        TsaCase(id="a", query="q1", expected=[ExpectedCall(name="sql_query")], split="dev"),
        TsaCase(id="b", query="q2", expected=[], split="dev", stratum="adversarial"),
        TsaCase(id="c", query="q3", expected=[], split="dev"),
    ]
    results = [
        score_case(cases[0], [ActualCall("sql_query", {"query": "x"})]),
        score_case(cases[1], [ActualCall("web_search", None, "{")]),
        score_case(cases[2], []),
    ]
    results[1].malformed = True
    results[2].text_call = True
    for r, seconds in zip(results, (1.0, 2.0, 6.0), strict=True):
        r.seconds = seconds
    s = summarise(results)
    assert s.per_stratum["single"]["tsa"] == 1.0
    assert s.per_stratum["adversarial"] == {
        "cases": 1,
        "tool_correct": 0,
        "tsa": 0.0,
        "passed": 0,
        "full_accuracy": 0.0,
    }
    assert s.per_stratum["none"]["tool_correct"] == 1
    assert list(s.per_stratum) == ["single", "none", "adversarial"]
    assert (s.malformed_replies, s.text_calls, s.seconds_per_case) == (1, 1, 3.0)
    back = [CaseResult.from_json(r.to_json()) for r in results]  # shards merge per stratum too
    assert summarise(back).per_stratum == s.per_stratum


def test_a_call_written_as_text_is_recognised() -> None:
    from sleuth.evals.tsa.runner import written_call

    tools = ["sql_query", "vector_search"]
    assert written_call('```json\n{"name": "vector_search", "arguments": {}}\n```', tools)
    assert written_call('<tool_call>\n{"name": "x"}\n</tool_call>', tools)
    assert not written_call("The vector_search tool could help.", tools)
    assert not written_call(None, tools)
