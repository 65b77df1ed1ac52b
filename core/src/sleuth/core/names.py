"""One home for every name more than one package types: metric series, their labels, headers.

The agent exports some series, the eval run others, the operator re-exports the eval scores from
status and renders the PrometheusRules that alert on them, and the chart's dashboard and alerts
query them; all of them take the names from here. A series only one package exports and nothing
else queries keeps its name where it is defined. The chart's YAML and JSON cannot import, so
``tests/charts/test_chart_names.py`` fails when they query a series or label value not named here.
"""

from __future__ import annotations

# -- Labels ---------------------------------------------------------------------------------------

AGENT_LABEL = "agent"
"""Every agent and eval series: the AgentDeployment's name (``SLEUTH_AGENT_NAME``)."""
SCHEDULE_LABELS = ("namespace", AGENT_LABEL, "eval_schedule")
"""The series the operator exports per EvalSchedule, and what its rules select on."""
SOURCE_LABEL = "source"
"""Who computed a score."""
SOURCE_ONLINE = "online"
"""``source`` of the scores the agent computes on sampled live traffic."""
SOURCE_EVAL = "eval"
"""``source`` of the scores of scheduled eval runs, which the operator exports from status."""
FORM_LABEL = "form"
"""Which context precision: ``rank_weighted`` (RAGAS) or ``simple`` (relevant/K)."""
FORM_RANK_WEIGHTED = "rank_weighted"
FORM_SIMPLE = "simple"

# -- Scores: eval run (report), operator (from status), agent (online), rules, dashboard ----------

FAITHFULNESS_SCORE = "rag_faithfulness_score"
ANSWER_RELEVANCY_SCORE = "rag_answer_relevancy_score"
CONTEXT_PRECISION_SCORE = "rag_context_precision_score"
CONTEXT_RECALL_SCORE = "rag_context_recall_score"
NOISE_SENSITIVITY_SCORE = "rag_noise_sensitivity_score"
TOOL_SELECTION_ACCURACY = "agent_tool_selection_accuracy"

_PRECISION_HELP = "Context precision; form=rank_weighted (RAGAS) or simple (relevant/K)."
RAG_GAUGES: dict[str, tuple[str, str, dict[str, str]]] = {
    # value name -> (metric name, help, extra labels)
    "faithfulness": (
        FAITHFULNESS_SCORE,
        "Share of answer claims supported by the retrieved context (RAGAS).",
        {},
    ),
    "answer_relevancy": (
        ANSWER_RELEVANCY_SCORE,
        "Mean cosine of generated questions to the question (RAGAS).",
        {},
    ),
    "context_precision": (
        CONTEXT_PRECISION_SCORE,
        _PRECISION_HELP,
        {FORM_LABEL: FORM_RANK_WEIGHTED},
    ),
    "context_precision_simple": (
        CONTEXT_PRECISION_SCORE,
        _PRECISION_HELP,
        {FORM_LABEL: FORM_SIMPLE},
    ),
    "context_recall": (
        CONTEXT_RECALL_SCORE,
        "Share of reference claims attributable to the context (RAGAS).",
        {},
    ),
    "noise_sensitivity": (
        NOISE_SENSITIVITY_SCORE,
        "Share of incorrect answer claims (RAGAS, mode=relevant); lower is better.",
        {},
    ),
}


TSA_GAUGE: tuple[str, str] = (
    TOOL_SELECTION_ACCURACY,
    "Share of cases whose first decision chose the expected tools (or none).",
)

# -- Eval run health: the operator exports them from status, rules and dashboard watch them -------

LAST_RUN_TIMESTAMP = "sleuth_eval_last_run_timestamp_seconds"
LAST_SUCCESS_TIMESTAMP = "sleuth_eval_last_success_timestamp_seconds"
LAST_RUN_FAILED = "sleuth_eval_last_run_failed"
LAST_RUN_ROWS = "sleuth_eval_last_run_rows"
LAST_RUN_FAILED_ROWS = "sleuth_eval_last_run_failed_rows"

# -- Agent series the chart's dashboard (or a CRD description) names ------------------------------

AGENT_REQUEST_SECONDS = "sleuth_agent_request_seconds"
AGENT_ONLINE_SCORE = "sleuth_agent_online_score"
"""Histogram of every online score (label ``metric``), each observation with an exemplar
``{trace_id}`` when its request was traced: the dashboard's way from a low score to the trace."""
AGENT_ITERATIONS = "sleuth_agent_iterations"
AGENT_TOOL_CALLS = "sleuth_agent_tool_calls_total"
AGENT_MODEL_TTFT_SECONDS = "sleuth_agent_model_ttft_seconds"
AGENT_TOKENS = "sleuth_agent_tokens_total"
AGENT_ONLINE_EVAL_DROPPED = "sleuth_agent_online_eval_dropped_total"
"""Named by the AgentDeployment CRD's description of ``onlineEval.queueSize``."""
AGENT_IN_FLIGHT = "sleuth_agent_requests_in_flight"
"""Requests an agent replica serves now: what its autoscaler (``spec.agent.autoscaling``)
scales on."""
AGENT_WAITING_FOR_MODEL = "sleuth_agent_requests_waiting_for_model"
"""Requests that found the model server asleep (scaled to zero, or not ready) and wait for it: the
signal that wakes it (``spec.model.autoscaling``)."""
TRACE_SPANS_DROPPED = "sleuth_trace_spans_dropped_total"
"""Spans the agent or a tool service never exported (label ``reason``: queue_full,
export_failed, shutdown): the collector is down or too slow (:mod:`sleuth.core.spanexport`)."""

# -- The model server's series (vLLM's own names; the scripted model server exports them too) ----

VLLM_REQUESTS_WAITING = "vllm:num_requests_waiting"
"""Requests queued in a vLLM server: what the model server's autoscaler scales on."""
VLLM_REQUESTS_RUNNING = "vllm:num_requests_running"
"""Requests a vLLM server is generating for: they keep it awake."""

# -- Operator series the chart's dashboard and PrometheusRule query -------------------------------

OPERATOR_RECONCILES = "sleuth_operator_reconcile_total"
OPERATOR_RECONCILE_SECONDS = "sleuth_operator_reconcile_duration_seconds"
OPERATOR_READY = "sleuth_operator_ready"

SERIES: frozenset[str] = frozenset(
    {
        FAITHFULNESS_SCORE,
        ANSWER_RELEVANCY_SCORE,
        CONTEXT_PRECISION_SCORE,
        CONTEXT_RECALL_SCORE,
        NOISE_SENSITIVITY_SCORE,
        TOOL_SELECTION_ACCURACY,
        LAST_RUN_TIMESTAMP,
        LAST_SUCCESS_TIMESTAMP,
        LAST_RUN_FAILED,
        LAST_RUN_ROWS,
        LAST_RUN_FAILED_ROWS,
        AGENT_REQUEST_SECONDS,
        AGENT_ONLINE_SCORE,
        AGENT_ITERATIONS,
        AGENT_TOOL_CALLS,
        AGENT_MODEL_TTFT_SECONDS,
        AGENT_TOKENS,
        AGENT_ONLINE_EVAL_DROPPED,
        AGENT_IN_FLIGHT,
        AGENT_WAITING_FOR_MODEL,
        TRACE_SPANS_DROPPED,
        OPERATOR_RECONCILES,
        OPERATOR_RECONCILE_SECONDS,
        OPERATOR_READY,
    }
)
"""Every series name above (as queried: counters with ``_total``, histograms without suffix)."""
LABEL_VALUES: dict[str, frozenset[str]] = {
    SOURCE_LABEL: frozenset({SOURCE_ONLINE, SOURCE_EVAL}),
    FORM_LABEL: frozenset({FORM_RANK_WEIGHTED, FORM_SIMPLE}),
}
"""The values of the labels whose values are named here."""

# -- Headers --------------------------------------------------------------------------------------

# Requests the scheduled evaluation sends to an agent carry this header, and the agent does not
# sample them for its online evaluation (their scores would count twice).
EVAL_HEADER = "X-Sleuth-Eval"
# The agent's answer to a traced request carries its trace id (32 lowercase hex) in this header,
# and in the body's ``sleuth`` part as ``traceId``; absent when tracing is off or not sampled.
TRACE_ID_HEADER = "X-Sleuth-Trace-Id"
