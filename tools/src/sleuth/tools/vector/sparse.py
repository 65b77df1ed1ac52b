"""BM25-style sparse vectors, computed locally: the keyword side of hybrid retrieval.

Nothing is downloaded: the vocabulary is the text itself. A term's index is the first four bytes
of its BLAKE2b digest (31 bits), so the same word gets the same index in every process, at ingest
and at query time, without a stored vocabulary (two words sharing an index is possible and rare:
about one pair in 2^31).

A passage's value for a term is BM25's term-frequency part::

    tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average_length))

with ``k1 = 1.2``, ``b = 0.75`` and ``average_length`` a fixed 100 terms (a passage of the default
800 characters holds about that many after stop words). A query's value is 1 per distinct term.
The collection's sparse vector is declared with Qdrant's ``IDF`` modifier, so Qdrant multiplies
each term by its inverse document frequency over the collection at query time: the dot product
is then the BM25 score. Terms are lower-cased Unicode words, without a short list of English stop
words, with a light plural strip (``penalties`` → ``penalty``, ``clauses`` → ``clause``).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

K1 = 1.2
B = 0.75
AVERAGE_LENGTH = 100.0

_WORD = re.compile(r"\w+", re.UNICODE)
_STOP_WORDS_TEXT = """
    a about above after again all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has
    have having he her here hers him his how i if in into is it its itself just me more most my
    no nor not now of off on once only or other our ours out over own same she should so some
    such than that the their theirs them then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you your
    yours
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


@dataclass(frozen=True)
class SparseVector:
    """Sorted term indices and their values (Qdrant's sparse vector)."""

    indices: list[int]
    values: list[float]


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def terms(text: str) -> list[str]:
    """The text's terms, in order (stop words out, plurals folded)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return [_stem(w) for w in _WORD.findall(folded) if w not in STOP_WORDS and w != "_"]


def term_index(term: str) -> int:
    digest = hashlib.blake2b(term.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") & 0x7FFFFFFF


def _vector(weights: dict[int, float]) -> SparseVector:
    indices = sorted(weights)
    return SparseVector(indices=indices, values=[weights[i] for i in indices])


def encode_passage(text: str) -> SparseVector:
    """A passage's BM25 term-frequency vector."""
    found = terms(text)
    counts = Counter(term_index(t) for t in found)
    norm = K1 * (1 - B + B * len(found) / AVERAGE_LENGTH)
    return _vector({i: tf * (K1 + 1) / (tf + norm) for i, tf in counts.items()})


def encode_query(text: str) -> SparseVector:
    """A query's vector: 1 per distinct term (Qdrant's IDF modifier weighs them)."""
    return _vector({term_index(t): 1.0 for t in terms(text)})
