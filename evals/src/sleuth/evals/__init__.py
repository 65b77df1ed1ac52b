"""Evaluations: tool selection accuracy, RAGAS metrics, golden datasets and reports.

- :mod:`sleuth.evals.tsa` — TSA cases, BFCL-style scoring, the runner against a model endpoint.
- :mod:`sleuth.evals.rag` — RAG rows, the guarded judge (direct or ragas' ``llm_factory``), the
  metrics, the runner, and collecting rows from the agent.
- :mod:`sleuth.evals.golden` — corpus loading, the builder, human review, the frozen manifest.
- :mod:`sleuth.evals.report` — JSON results and the gate, Prometheus exposition, HTML, merging.
- :mod:`sleuth.evals.traces` — the one reader of the agent's trace format.
- :mod:`sleuth.evals.cli` — the parsers of ``sleuth eval tsa|ragas|build-golden|report``;
  :mod:`sleuth.evals.runs` — what those subcommands do.

Shipped data: :mod:`sleuth.evals.data` (TSA cases, the seed's worked example, a golden set).
"""
