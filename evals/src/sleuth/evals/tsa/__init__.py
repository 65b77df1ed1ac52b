"""Tool selection accuracy: cases, BFCL-style scoring, a runner against a model endpoint."""
