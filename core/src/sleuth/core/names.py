"""One home for every name more than one package types: metric series, their labels, headers.

The agent exports some series, the eval run others, the operator re-exports the eval scores from
status and renders the PrometheusRules that alert on them; all of them take the names from here.
"""

from __future__ import annotations

RAG_GAUGES: dict[str, tuple[str, str, dict[str, str]]] = {
    # value name -> (metric name, help, extra labels)
    "faithfulness": (
        "rag_faithfulness_score",
        "Share of answer claims supported by the retrieved context (RAGAS).",
        {},
    ),
    "answer_relevancy": (
        "rag_answer_relevancy_score",
        "Mean cosine of generated questions to the question (RAGAS).",
        {},
    ),
    "context_precision": (
        "rag_context_precision_score",
        "Context precision; form=rank_weighted (RAGAS) or simple (relevant/K).",
        {"form": "rank_weighted"},
    ),
    "context_precision_simple": (
        "rag_context_precision_score",
        "Context precision; form=rank_weighted (RAGAS) or simple (relevant/K).",
        {"form": "simple"},
    ),
    "context_recall": (
        "rag_context_recall_score",
        "Share of reference claims attributable to the context (RAGAS).",
        {},
    ),
    "noise_sensitivity": (
        "rag_noise_sensitivity_score",
        "Share of incorrect answer claims (RAGAS, mode=relevant); lower is better.",
        {},
    ),
}


TSA_GAUGE: tuple[str, str] = (
    "agent_tool_selection_accuracy",
    "Share of cases whose first decision chose the expected tools (or none).",
)


# Requests the scheduled evaluation sends to an agent carry this header, and the agent does not
# sample them for its online evaluation (their scores would count twice).
EVAL_HEADER = "X-Sleuth-Eval"
