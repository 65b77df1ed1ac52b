"""Prometheus text exposition of a run's scores, labelled by agent, dataset and split.

Written to a file (node-exporter textfile collector) or pushed to a Pushgateway; PrometheusRules
such as ``RAGFaithfulnessLow`` alert on these names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, generate_latest, push_to_gateway

from sleuth.core.names import AGENT_LABEL, RAG_GAUGES, TSA_GAUGE

LABELS = (AGENT_LABEL, "dataset", "split")

# Retrieval measured without a judge (``sleuth eval retrieval``): relevance by id or evidence.
# Only this module exports them and nothing in the chart queries them, so they live here.
RETRIEVAL_PRECISION_SCORE = "rag_retrieval_context_precision_score"
RETRIEVAL_RECALL_SCORE = "rag_retrieval_context_recall_score"
RETRIEVAL_MRR = "rag_retrieval_mrr"
RETRIEVAL_NDCG = "rag_retrieval_ndcg"
RETRIEVAL_LATENCY_SECONDS = "rag_retrieval_latency_seconds"
QUANTILE_LABEL = "quantile"
RETRIEVAL_GAUGES: dict[str, tuple[str, str]] = {
    # value name -> (metric name, help)
    "context_precision_id": (
        RETRIEVAL_PRECISION_SCORE,
        "Share of retrieved passages that are relevant, by id or evidence (no judge).",
    ),
    "context_recall_id": (
        RETRIEVAL_RECALL_SCORE,
        "Share of the relevant items that were retrieved, by id or evidence (no judge).",
    ),
    "mrr": (RETRIEVAL_MRR, "Mean reciprocal rank of the first relevant passage."),
    "ndcg": (RETRIEVAL_NDCG, "Normalised discounted cumulative gain at K."),
}


def build_registry(docs: Iterable[Mapping[str, Any]]) -> CollectorRegistry:
    registry = CollectorRegistry()
    gauges: dict[str, Gauge] = {}

    def gauge(name: str, doc: str, extra: tuple[str, ...] = ()) -> Gauge:
        if name not in gauges:
            gauges[name] = Gauge(name, doc, [*LABELS, *extra], registry=registry)
        return gauges[name]

    for d in docs:
        base = {k: str(d.get(k, "")) for k in LABELS}
        if d["kind"] == "ragas":
            for value_name, (metric, help_text, extra) in RAG_GAUGES.items():
                entry = d["metrics"].get(value_name)
                if entry is None or entry["value"] is None:
                    continue
                g = gauge(metric, help_text, tuple(extra))
                labels = {**base, **extra}
                g.labels(**labels).set(entry["value"])
            failed = gauge(
                "sleuth_eval_failed_rows",
                "Rows a metric could not score in the last run (never averaged).",
                ("metric",),
            )
            for value_name, entry in d["metrics"].items():
                failed.labels(**base, metric=value_name).set(entry["failed_rows"])
        elif d["kind"] == "retrieval":
            for value_name, (metric, help_text) in RETRIEVAL_GAUGES.items():
                entry = d["metrics"].get(value_name)
                if entry is not None and entry["value"] is not None:
                    gauge(metric, help_text).labels(**base).set(entry["value"])
            latency = d.get("latency") or {}
            seconds = gauge(
                RETRIEVAL_LATENCY_SECONDS,
                "Latency of one retrieval call in the last run, by quantile.",
                (QUANTILE_LABEL,),
            )
            for quantile, key in (("0.5", "p50_seconds"), ("0.99", "p99_seconds")):
                if latency.get(key) is not None:
                    seconds.labels(**base, quantile=quantile).set(latency[key])
            failed = gauge(
                "sleuth_eval_failed_rows",
                "Rows a metric could not score in the last run (never averaged).",
                ("metric",),
            )
            failed.labels(**base, metric="retrieval").set(len(d["failures"]))
        else:
            entry = d["metrics"]["tool_selection_accuracy"]
            if entry["value"] is not None:
                gauge(*TSA_GAUGE).labels(**base).set(entry["value"])
            by_tool = gauge(
                "agent_tool_selection_accuracy_by_tool",
                "Tool selection accuracy over the cases expecting this tool.",
                ("tool",),
            )
            for tool, t in d["summary"]["per_tool"].items():
                if t["tsa"] is not None:
                    by_tool.labels(**base, tool=tool).set(t["tsa"])
            by_stratum = gauge(
                "agent_tool_selection_accuracy_by_stratum",
                "Tool selection accuracy over the cases of one stratum (single, sequential, "
                "parallel, none, adversarial).",
                ("stratum",),
            )
            for stratum, t in d["summary"].get("per_stratum", {}).items():
                if t["tsa"] is not None:
                    by_stratum.labels(**base, stratum=stratum).set(t["tsa"])
            arg = d["metrics"]["argument_accuracy"]["value"]
            if arg is not None:
                gauge(
                    "agent_tool_argument_accuracy",
                    "Share of right-tool cases whose arguments were acceptable.",
                ).labels(**base).set(arg)
            gauge(
                "sleuth_eval_failed_rows",
                "Rows a metric could not score in the last run (never averaged).",
                ("metric",),
            ).labels(**base, metric="tool_selection_accuracy").set(d["summary"]["errors"])
        usage = d.get("usage") or {}
        gauge(
            "sleuth_eval_tokens", "Judge or model tokens used by the last run.", ("kind",)
        ).labels(**base, kind=d["kind"]).set(float(usage.get("total_tokens", 0)))
        gauge(
            "sleuth_eval_gate_passed", "1 when the last run met every threshold, else 0.", ("kind",)
        ).labels(**base, kind=d["kind"]).set(1.0 if d["gate"]["passed"] else 0.0)
    return registry


def exposition(docs: Iterable[Mapping[str, Any]]) -> str:
    return generate_latest(build_registry(docs)).decode("utf-8")


def push(docs: Iterable[Mapping[str, Any]], gateway: str, job: str = "sleuth-eval") -> None:
    push_to_gateway(gateway, job=job, registry=build_registry(docs), timeout=10)
