"""A generated contracts corpus with a golden set known by construction."""
