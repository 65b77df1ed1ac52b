"""API keys from mounted Secrets: one directory per caller, every file in it one valid key.

A Kubernetes Secret mounted as a volume (no ``subPath``) is a directory whose files the kubelet
replaces when the Secret changes; :class:`KeyRing` reads every directory again each
``keyReloadSeconds``, so a key added to the Secret is valid, and a key removed from it refused,
within that period plus the kubelet's sync — no restart. Several files make several keys valid at
once: rotate by adding the new key, moving the clients, then removing the old one.

Only SHA-256 digests of the keys are kept; a presented key is hashed once and compared with every
digest with :func:`hmac.compare_digest`, all of them, whatever matches, so the time taken says
nothing about which key (or how much of one) was right. A file that cannot be read, or a key
shorter than :data:`~sleuth.core.api.access_config.MIN_API_KEY_CHARS`, admits no one and is
logged by its path — never its content. A directory that disappears takes its keys with it.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from sleuth.core.api.access_config import MIN_API_KEY_CHARS

log = logging.getLogger("sleuth.agent.access")


@dataclass(frozen=True, slots=True)
class KeyMatch:
    """The caller a key belongs to and the key's id (its file name: safe to log)."""

    caller: str
    key_id: str


@dataclass(slots=True)
class KeyRing:
    """The keys of every caller's directory, as digests."""

    directories: dict[str, Path]  # caller -> directory
    _digests: list[tuple[bytes, KeyMatch]] = field(default_factory=list)
    problems: dict[str, str] = field(default_factory=dict)  # caller -> why it has no keys
    skipped: dict[str, str] = field(default_factory=dict)  # caller -> files ignored

    def reload(self) -> None:
        """Read every directory again; what cannot be read admits no one (and is logged once
        per change of its problem)."""
        digests: list[tuple[bytes, KeyMatch]] = []
        problems: dict[str, str] = {}
        skipped: dict[str, str] = {}
        for caller, directory in self.directories.items():
            found, problem, ignored = _read_directory(caller, directory)
            digests.extend(found)
            if problem is not None:
                problems[caller] = problem
            if ignored:
                skipped[caller] = ignored
                if self.skipped.get(caller) != ignored:
                    log.warning("access: caller %s: ignored %s", caller, ignored)
        for caller, problem in problems.items():
            if self.problems.get(caller) != problem:
                log.error("access: caller %s has no usable API key: %s", caller, problem)
        for caller in self.problems.keys() - problems.keys():
            log.info("access: caller %s has usable API keys again", caller)
        self._digests = digests
        self.problems = problems
        self.skipped = skipped

    def match(self, presented: str) -> KeyMatch | None:
        """The key's owner, or None; compares with every key, in constant time each."""
        digest = hashlib.sha256(presented.encode("utf-8", "surrogateescape")).digest()
        found: KeyMatch | None = None
        for known, owner in self._digests:
            if hmac.compare_digest(digest, known) and found is None:
                found = owner
        return found

    def count(self, caller: str) -> int:
        return sum(1 for _, owner in self._digests if owner.caller == caller)


def _read_directory(
    caller: str, directory: Path
) -> tuple[list[tuple[bytes, KeyMatch]], str | None, str]:
    """(digests, why there are none, which files were ignored)."""
    try:
        names = sorted(n for n in os.listdir(directory) if not n.startswith("."))
    except OSError as err:
        return [], f"{directory}: {err.strerror or type(err).__name__}", ""
    found: list[tuple[bytes, KeyMatch]] = []
    skipped: list[str] = []
    for name in names:
        path = directory / name
        try:
            if not path.is_file():
                continue
            key = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as err:
            skipped.append(f"{path} unreadable ({type(err).__name__})")
            continue
        if len(key) < MIN_API_KEY_CHARS:
            skipped.append(f"{path} shorter than {MIN_API_KEY_CHARS} characters")
            continue
        found.append((hashlib.sha256(key.encode()).digest(), KeyMatch(caller, name)))
    ignored = "; ".join(skipped)
    if not found:
        why = f"{directory}: no key file (of at least {MIN_API_KEY_CHARS} characters)"
        return [], why, ignored
    return found, None, ignored


__all__ = ["KeyMatch", "KeyRing"]
