"""Kubernetes resource quantities (``500m``, ``2Gi``, ``1e3``) and container resource names.

Enough of the apiserver's rules to refuse at admission what it would refuse on the Pod template
later: a value that is not a quantity (``cpu: banana``), a resource name that is neither standard
nor domain-qualified (``gpux``), a request above its limit.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_QUANTITY = re.compile(
    r"^([+-]?[0-9]+(?:\.[0-9]*)?|[+-]?\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
# Names a container may request: the standard ones, hugepages-<size>, or domain/name (extended).
RESOURCE_NAME = (
    r"^(cpu|memory|ephemeral-storage|hugepages-[0-9A-Za-z]+|"
    r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$"
)
_RESOURCE_NAME = re.compile(RESOURCE_NAME)


def parse_quantity(value: str | int) -> Decimal:
    """The value of a quantity; ValueError naming it when it is not one."""
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if match is None:
        raise ValueError(f"{value!r} is not a quantity (e.g. 500m, 2Gi, 1.5)")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        amount = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the pattern admits only numbers
        raise ValueError(f"{value!r} is not a quantity") from None
    if suffix in _BINARY:
        return amount * (Decimal(1024) ** _BINARY[suffix])
    if suffix in _DECIMAL:
        return amount.scaleb(_DECIMAL[suffix])
    if suffix:
        return amount.scaleb(int(suffix[1:]))
    return amount


def valid_resource_name(name: str) -> bool:
    """Whether a container may name this resource."""
    return _RESOURCE_NAME.match(name) is not None


__all__ = ["RESOURCE_NAME", "STANDARD_RESOURCES", "parse_quantity", "valid_resource_name"]
