"""Scoring a model's first decision step against a TSA case, and the run summary.

Per case (BFCL semantics): the tool choice is right when the multiset of called tool names equals
the expected one (parallel calls in any order; an irrelevance case only with no call). The
arguments are right when the calls can be paired one to one with expected calls of the same
name whose argument checks all pass. A case whose endpoint call failed is an *error*: it counts
as not passing in every accuracy and is listed, never dropped.
"""

from __future__ import annotations

import itertools
import json
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from sleuth.core.tools import ToolSpec
from sleuth.evals.tsa.cases import NONE_LABEL, STRATA, ExpectedCall, TsaCase, label_for
from sleuth.evals.tsa.matching import check_arguments

ERROR_LABEL = "error"
SEED_THRESHOLD = 0.85


@dataclass(frozen=True)
class ActualCall:
    """One tool call the model made; ``arguments`` is None when its JSON did not parse."""

    name: str
    arguments: dict[str, Any] | None
    raw_arguments: str = ""

    @classmethod
    def from_openai(cls, call: dict[str, Any]) -> ActualCall:
        fn = call.get("function") or {}
        name = str(fn.get("name", ""))
        raw = fn.get("arguments", "")
        if isinstance(raw, dict):
            return cls(name=name, arguments=raw, raw_arguments=json.dumps(raw))
        raw_text = str(raw or "")
        try:
            parsed = json.loads(raw_text) if raw_text.strip() else {}
        except json.JSONDecodeError:
            return cls(name=name, arguments=None, raw_arguments=raw_text)
        if not isinstance(parsed, dict):
            return cls(name=name, arguments=None, raw_arguments=raw_text)
        return cls(name=name, arguments=parsed, raw_arguments=raw_text)


@dataclass
class CaseResult:
    case_id: str
    split: str
    expected_label: str
    predicted_label: str
    tool_correct: bool
    args_correct: bool | None
    passed: bool
    reasons: list[str] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    stratum: str = "single"
    seconds: float | None = None
    malformed: bool = False
    text_call: bool = False
    trace_id: str | None = None
    """The agent request's trace, for a case scored from a recorded run (``--traces``)."""
    thought: str | None = None
    """What the model said the question needed before it decided (a guided reply's thought)."""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CaseResult:
        """The inverse of :meth:`to_json` (merging shard results)."""
        return cls(
            case_id=d["id"],
            split=d["split"],
            expected_label=d["expected"],
            predicted_label=d["predicted"],
            tool_correct=d["tool_correct"],
            args_correct=d["args_correct"],
            passed=d["passed"],
            reasons=list(d["reasons"]),
            calls=list(d["calls"]),
            error=d["error"],
            stratum=d.get("stratum", "single"),
            seconds=d.get("seconds"),
            malformed=bool(d.get("malformed", False)),
            text_call=bool(d.get("text_call", False)),
            trace_id=d.get("traceId"),
            thought=d.get("thought"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.case_id,
            "split": self.split,
            "expected": self.expected_label,
            "predicted": self.predicted_label,
            "tool_correct": self.tool_correct,
            "args_correct": self.args_correct,
            "passed": self.passed,
            "reasons": self.reasons,
            "calls": self.calls,
            "error": self.error,
            "stratum": self.stratum,
            "seconds": self.seconds,
            "malformed": self.malformed,
            "text_call": self.text_call,
            "traceId": self.trace_id,
            "thought": self.thought,
        }


def _required(specs: dict[str, ToolSpec], name: str) -> frozenset[str]:
    spec = specs.get(name)
    if spec is None:
        return frozenset()
    return frozenset(str(r) for r in spec.parameters.get("required", []))


def _pair_reasons(
    calls: list[ActualCall], expected: list[ExpectedCall], specs: dict[str, ToolSpec]
) -> list[str]:
    """Empty when some one-to-one pairing of calls and expected calls passes every check."""
    best: list[str] | None = None
    for order in itertools.permutations(range(len(expected))):
        reasons: list[str] = []
        for call, idx in zip(calls, order, strict=True):
            exp = expected[idx]
            if call.name != exp.name:
                reasons = ["names do not pair"]
                break
            if call.arguments is None:
                reasons.append(f"{call.name}: arguments are not a JSON object")
                continue
            for r in check_arguments(call.arguments, exp.arguments, _required(specs, call.name)):
                reasons.append(f"{call.name}: {r}")
        if not reasons:
            return []
        if best is None or (reasons != ["names do not pair"] and len(reasons) < len(best)):
            best = reasons
    return best or ["no pairing of calls"]


def score_case(
    case: TsaCase, calls: list[ActualCall], specs: dict[str, ToolSpec] | None = None
) -> CaseResult:
    """Score one case from the calls of the model's first decision step."""
    specs = specs or {}
    predicted = label_for([c.name for c in calls])
    shown = [{"name": c.name, "arguments": c.arguments, "raw": c.raw_arguments} for c in calls]
    expected_names = Counter(c.name for c in case.expected)
    tool_correct = Counter(c.name for c in calls) == expected_names
    reasons: list[str] = []
    if not tool_correct:
        if not case.expected:
            reasons.append(f"expected no tool call, got {predicted}")
        else:
            reasons.append(f"expected {case.expected_label}, got {predicted}")
        return CaseResult(
            case.id,
            case.split,
            case.expected_label,
            predicted,
            False,
            None,
            False,
            reasons,
            shown,
            stratum=case.stratum_label,
        )
    if not case.expected:
        return CaseResult(
            case.id,
            case.split,
            NONE_LABEL,
            predicted,
            True,
            None,
            True,
            [],
            shown,
            stratum=case.stratum_label,
        )
    reasons = _pair_reasons(calls, case.expected, specs)
    ok = not reasons
    return CaseResult(
        case.id,
        case.split,
        case.expected_label,
        predicted,
        True,
        ok,
        ok,
        reasons,
        shown,
        stratum=case.stratum_label,
    )


def error_result(case: TsaCase, message: str) -> CaseResult:
    """The result of a case whose endpoint call failed: counted, never dropped."""
    return CaseResult(
        case.id,
        case.split,
        case.expected_label,
        ERROR_LABEL,
        False,
        None,
        False,
        [message],
        [],
        error=message,
        stratum=case.stratum_label,
    )


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


SMALL_STRATUM = 10
"""Fewer cases than this and an interval is wide whatever the rate: reports say so."""


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float] | None:
    """The Wilson score interval of a rate (95 % for the default ``z``); None for no cases.

    Unlike the normal approximation it stays inside [0, 1] and is honest at 0/n and n/n, which
    small strata hit: 0 of 8 is [0.00, 0.32], 3 of 3 is [0.44, 1.00].
    """
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class TsaSummary:
    """Aggregates of one run. Ratios are None when their denominator is empty."""

    cases: int
    errors: int
    tsa: float | None
    tsa_tool_turns: float | None
    irrelevance_accuracy: float | None
    argument_accuracy: float | None
    full_accuracy: float | None
    per_tool: dict[str, dict[str, Any]]
    per_stratum: dict[str, dict[str, Any]]
    confusion: dict[str, dict[str, int]]
    threshold: float
    below_threshold: bool
    malformed_replies: int = 0
    text_calls: int = 0
    seconds_per_case: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def summarise(results: list[CaseResult], threshold: float = SEED_THRESHOLD) -> TsaSummary:
    n = len(results)
    tool_ok = sum(r.tool_correct for r in results)
    with_tool = [r for r in results if r.expected_label != NONE_LABEL]
    irrelevant = [r for r in results if r.expected_label == NONE_LABEL]
    arg_scored = [r for r in with_tool if r.tool_correct]
    per_tool: dict[str, dict[str, Any]] = {}
    tools = sorted({t for r in results for t in r.expected_label.split("+")})
    for tool in tools:
        rows = [r for r in results if tool in r.expected_label.split("+")]
        correct = sum(r.tool_correct for r in rows)
        per_tool[tool] = {
            "cases": len(rows),
            "tool_correct": correct,
            "tsa": _ratio(correct, len(rows)),
        }
    per_stratum: dict[str, dict[str, Any]] = {}
    for stratum in [s for s in STRATA if any(r.stratum == s for r in results)]:
        rows = [r for r in results if r.stratum == stratum]
        correct = sum(r.tool_correct for r in rows)
        per_stratum[stratum] = {
            "cases": len(rows),
            "tool_correct": correct,
            "tsa": _ratio(correct, len(rows)),
            "passed": sum(r.passed for r in rows),
            "full_accuracy": _ratio(sum(r.passed for r in rows), len(rows)),
        }
    confusion: dict[str, dict[str, int]] = {}
    for r in results:
        row = confusion.setdefault(r.expected_label, {})
        row[r.predicted_label] = row.get(r.predicted_label, 0) + 1
    tsa = _ratio(tool_ok, n)
    timed = [r.seconds for r in results if r.seconds is not None]
    return TsaSummary(
        cases=n,
        errors=sum(r.error is not None for r in results),
        tsa=tsa,
        tsa_tool_turns=_ratio(sum(r.tool_correct for r in with_tool), len(with_tool)),
        irrelevance_accuracy=_ratio(sum(r.tool_correct for r in irrelevant), len(irrelevant)),
        argument_accuracy=_ratio(sum(bool(r.args_correct) for r in arg_scored), len(arg_scored)),
        full_accuracy=_ratio(sum(r.passed for r in results), n),
        per_tool=per_tool,
        per_stratum=per_stratum,
        confusion=confusion,
        threshold=threshold,
        below_threshold=tsa is None or tsa < threshold,
        malformed_replies=sum(r.malformed for r in results),
        text_calls=sum(r.text_call for r in results),
        seconds_per_case=sum(timed) / len(timed) if timed else None,
    )
