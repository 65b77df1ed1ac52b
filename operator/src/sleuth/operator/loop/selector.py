"""Label selectors evaluated against the labels the watches reported, so a list by selector is
served from :class:`~sleuth.operator.loop.watchcache.WatchCache` without asking the API server;
a selector of another form answers None and the caller asks the API server."""

from __future__ import annotations


def matches(selector: str, labels: dict[str, str]) -> bool | None:
    """Whether ``labels`` satisfy a label selector of equality (``k=v``, ``k!=v``), set
    (``k in (a,b)``, ``k notin (a,b)``) and existence (``k``, ``!k``) requirements; None when
    the selector has another form."""
    for term in _terms(selector):
        if " notin " in term or " in " in term:
            key, op, rest = term.partition(" notin " if " notin " in term else " in ")
            if not (rest.startswith("(") and rest.endswith(")")):
                return None
            values = {v.strip() for v in rest[1:-1].split(",")}
            found = labels.get(key.strip())
            if (found in values) != (op == " in "):
                return False
        elif "!=" in term:
            key, _, value = term.partition("!=")
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, _, value = term.partition("=")
            if labels.get(key.strip()) != value.lstrip("=").strip():
                return False
        elif any(c in term for c in "()<> "):
            return None
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _terms(selector: str) -> list[str]:
    """The comma-separated requirements of a selector (commas inside parentheses kept)."""
    terms, depth, start = [], 0, 0
    for index, char in enumerate(selector):
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            terms.append(selector[start:index].strip())
            start = index + 1
    terms.append(selector[start:].strip())
    return [t for t in terms if t]
