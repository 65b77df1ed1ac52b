"""Retrieval measured without a judge: metrics by id, the runner, A/B comparison."""
