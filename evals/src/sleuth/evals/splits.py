"""Deterministic dev/test assignment by content hash.

A record's split is a function of its normalised content only, so it never moves when records
are added, removed or reordered, and anyone can recompute it. ``test_percent`` of the hash space
(by the first 8 bytes of SHA-256) goes to ``test``.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

Split = Literal["dev", "test"]
DEFAULT_TEST_PERCENT = 30


def content_key(text: str) -> str:
    """Whitespace-collapsed, case-folded text: the hashed form."""
    return re.sub(r"\s+", " ", text).strip().casefold()


def content_hash(text: str) -> str:
    return hashlib.sha256(content_key(text).encode("utf-8")).hexdigest()


def split_for(text: str, test_percent: int = DEFAULT_TEST_PERCENT) -> Split:
    """``test`` for ``test_percent`` % of contents, ``dev`` for the rest."""
    if not 0 <= test_percent <= 100:
        raise ValueError(f"test_percent must be within 0..100, got {test_percent}")
    bucket = int(content_hash(text)[:16], 16) % 100
    return "test" if bucket < test_percent else "dev"


def parse_shard(text: str) -> tuple[int, int]:
    """``"K/N"`` → (K, N) with 0 <= K < N."""
    k, sep, n = text.partition("/")
    try:
        index, count = int(k), int(n)
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected INDEX/COUNT, e.g. 0/4") from None
    if not sep or count < 1 or not 0 <= index < count:
        raise ValueError(f"--shard {text!r}: need 0 <= INDEX < COUNT")
    return index, count


def in_shard(key: str, index: int, count: int) -> bool:
    """Whether the record with ``key`` (its id) belongs to shard ``index`` of ``count``.

    By hash, so shards are stable however the dataset is ordered, and every record lands in
    exactly one shard.
    """
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()
    return int(digest[:16], 16) % count == index
