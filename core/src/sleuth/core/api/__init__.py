"""Shared specification models (group ``sleuth.dev``), imported by operator, agent and evals.

The CRD schemas in ``crds/`` are generated from these models.
"""
