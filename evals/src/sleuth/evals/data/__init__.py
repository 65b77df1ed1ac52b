"""Datasets shipped with sleuth: the TSA cases and the seed's RAGAS worked example (JSONL)."""

from pathlib import Path


def worked_example_path() -> Path:
    """The seed article's worked example (Redis latency) as one RAGAS row."""
    return Path(__file__).resolve().parent / "rag_worked_example.jsonl"
