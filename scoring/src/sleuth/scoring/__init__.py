"""sleuth.scoring: the judge and the RAG metric functions, one floor below the agent and evals.

The agent's online evaluation and the scheduled evaluation score answers with the same code:
:mod:`sleuth.scoring.judge` builds the judge (ragas' JSON-mode LLM, or the direct client of
:mod:`sleuth.scoring.direct`) and the embeddings; :mod:`sleuth.scoring.metrics` holds the metric
functions; :mod:`sleuth.scoring.samples` the sample they score; :mod:`sleuth.scoring.retrieval`
the judge-free retrieval metrics (relevance by id, MRR, nDCG; pure, no ragas).
"""
