"""Split a document into overlapping chunks on paragraph, sentence and word boundaries.

Chunks are at most ``size`` characters; each chunk after the first starts with the last
``overlap`` characters (snapped to a word boundary) of the previous one, so a sentence cut at a
boundary is still whole in one of the two chunks. The result depends only on the text and the
two numbers, which makes the chunk ids built from it stable across runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class ChunkSettings:
    size: int = 800
    overlap: int = 150

    def __post_init__(self) -> None:
        if self.size < 50:
            raise ValueError("chunk size must be at least 50 characters")
        if not 0 <= self.overlap < self.size // 2:
            raise ValueError("overlap must be between 0 and half the chunk size")


def _pieces(text: str, size: int) -> list[str]:
    """Paragraphs, then sentences, then words, each at most ``size`` characters."""
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        if len(paragraph) <= size:
            pieces.append(paragraph)
            continue
        for sentence in _SENTENCE_END.split(paragraph):
            while len(sentence) > size:
                cut = sentence.rfind(" ", 0, size)
                cut = cut if cut > 0 else size
                pieces.append(sentence[:cut].strip())
                sentence = sentence[cut:].strip()
            if sentence:
                pieces.append(sentence)
    return pieces


def _tail(text: str, overlap: int) -> str:
    if overlap == 0 or len(text) <= overlap:
        return text if overlap else ""
    tail = text[-overlap:]
    space = tail.find(" ")
    return tail[space + 1 :] if space >= 0 else tail


def chunk_text(text: str, settings: ChunkSettings | None = None) -> list[str]:
    """The chunks of ``text`` (empty list for blank text)."""
    cfg = settings or ChunkSettings()
    chunks: list[str] = []
    current = ""
    for piece in _pieces(text, cfg.size - cfg.overlap):
        candidate = f"{current}\n\n{piece}" if current else piece
        if len(candidate) <= cfg.size:
            current = candidate
            continue
        chunks.append(current)
        carry = _tail(current, cfg.overlap)
        current = f"{carry} {piece}" if carry else piece
    if current:
        chunks.append(current)
    return chunks
