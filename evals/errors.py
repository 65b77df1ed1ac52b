"""Errors of the evals package.

Errors::

    EvalError                   base: anything the evals refuse or cannot do
    ├── DatasetError            a dataset file is invalid (the message names file, line and field)
    ├── SplitGuardError         a tuning command was pointed at the frozen test split
    ├── ManifestError           a split manifest is missing, corrupt or does not match the data
    ├── EndpointError           the model / generator endpoint failed (HTTP error, timeout, body)
    └── JudgeError              a judge or embeddings call failed for good, with a reason
                                (sleuth.evals.rag.errors)
"""

from __future__ import annotations


class EvalError(Exception):
    """Base of every error raised by :mod:`sleuth.evals`."""


class DatasetError(EvalError):
    """A dataset record is invalid; ``path``, ``line`` and ``field`` say where."""

    def __init__(self, message: str, *, path: str = "", line: int = 0, field: str = "") -> None:
        where = path or "<data>"
        if line:
            where += f":{line}"
        if field:
            where += f": field {field!r}"
        super().__init__(f"{where}: {message}")
        self.path = path
        self.line = line
        self.field = field


class SplitGuardError(EvalError):
    """``--split test`` was asked of a command that tunes or compares configurations."""


class ManifestError(EvalError):
    """The split manifest is missing, corrupt, or disagrees with the dataset."""


class EndpointError(EvalError):
    """The model or judge endpoint failed; ``retryable`` tells whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
