"""Evaluations: tool selection accuracy, RAGAS metrics, golden datasets and reports."""
