"""Errors of the evals package, under :class:`sleuth.core.errors.SleuthError`.

Errors::

    EvalError                   base: anything the evals refuse or cannot do (a SleuthError)
    ├── SplitGuardError         a tuning command was pointed at the frozen test split
    ├── ManifestError           a split manifest is missing, corrupt or does not match the data
    └── EndpointError           the model / generator endpoint failed (HTTP error, timeout, body)

A dataset file that is invalid raises :class:`sleuth.core.errors.DatasetError`; a judge call that
failed for good :class:`sleuth.scoring.errors.JudgeError`.
"""

from __future__ import annotations

from sleuth.core.errors import SleuthError


class EvalError(SleuthError):
    """Base of every error raised by :mod:`sleuth.evals`."""


class SplitGuardError(EvalError):
    """``--split test`` was asked of a command that tunes or compares configurations."""


class ManifestError(EvalError):
    """The split manifest is missing, corrupt, or disagrees with the dataset."""


class EndpointError(EvalError):
    """The model or judge endpoint failed; ``retryable`` tells whether trying again may help."""

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable
