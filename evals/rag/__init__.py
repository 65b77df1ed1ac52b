"""RAGAS metrics with an on-premises judge: samples, the guarded judge, metrics and the runner."""
