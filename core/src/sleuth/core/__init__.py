"""sleuth.core: the ground floor every other sleuth package stands on.

It holds what more than one deployable shares, and imports nothing above itself: the API models
(:mod:`sleuth.core.api`, from which the CRDs are generated), the names of metric series, labels
and headers (:mod:`sleuth.core.names`), the error root (:mod:`sleuth.core.errors`), the model
client (:mod:`sleuth.core.llm`), the Kubernetes client (:mod:`sleuth.core.kube`) and small shared
helpers. docs/layout.md draws the floors.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("sleuth-core")
except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = ["__version__"]
