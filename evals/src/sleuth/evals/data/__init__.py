"""Datasets shipped with sleuth: the TSA cases and the seed's RAGAS worked example (JSONL)."""
