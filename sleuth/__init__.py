"""sleuth: Kubernetes-native, tool-augmented retrieval agents.

The distribution maps the repository's top-level folders to subpackages:
``agent/`` → :mod:`sleuth.agent`, ``operator/`` → :mod:`sleuth.operator`,
``evals/`` → :mod:`sleuth.evals`. Nothing shadows the standard library's ``operator``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sleuth")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
