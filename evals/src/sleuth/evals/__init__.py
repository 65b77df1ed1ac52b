"""Evaluations: tool selection accuracy, RAGAS metrics, golden datasets and reports.

- :mod:`sleuth.evals.tsa` — TSA cases, BFCL-style scoring, the runner against a model endpoint.
- :mod:`sleuth.evals.rag` — RAG rows, the guarded judge (direct or ragas' ``llm_factory``), the
  metrics, the runner, and collecting rows from the agent.
- :mod:`sleuth.evals.golden` — corpus loading, the builder, human review, the frozen manifest.
- :mod:`sleuth.evals.report` — JSON results and the gate, Prometheus exposition, HTML, merging.
- :mod:`sleuth.evals.traces` — the one reader of the agent's trace format.
- :mod:`sleuth.evals.retrieval` — a vector_search binding's retrieval, scored without a judge.
- :mod:`sleuth.evals.cli` — the parsers of ``sleuth eval ...`` and the typed options built from
  them; :mod:`sleuth.evals.commands` — what each command does with its options.

Floors inside: the commands above everything; ``retrieval`` above ``report``, which reads the
run records of ``tsa`` and ``rag`` (tests/evals/test_eval_layers.py).

Shipped data: :mod:`sleuth.evals.data` (TSA cases, the seed's worked example, a golden set).
"""
