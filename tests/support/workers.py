"""How the suite is spread over pytest-xdist's workers (docs/testing.md, "Parallel workers").

``tests/run.py`` (what ``make test`` and CI run) starts pytest with ``-n 4``; the pytest
configuration adds ``--dist loadgroup --no-loadscope-reorder``, so ``pytest -n N`` by hand
schedules the same way. Every test is a unit of its own, handed to whichever worker is free,
except the tests of a group (pytest-xdist's ``xdist_group`` marker): a group runs on one worker,
in collection order. :func:`mark_groups` puts a test in a group when

- it uses the real node (the ``real_node`` fixture or the ``realnode`` marker): there is one per
  machine, and its session fixture holds the machine-wide lock until that worker's session ends,
  so a second worker would wait for the first one's whole session. :data:`REAL_NODE_GROUP` keeps
  them on one worker, and never has a test of this suite wait on that lock; the fixture fails
  (:func:`scattered_real_node_tests`) when they are not grouped. Tests that build
  images with ``tests/cluster/image.sh`` join it too (``pytestmark``), since the image cache's
  lock would otherwise make them wait, inside their timeouts, for the platform test's builds;
- it uses a fixture of module or class scope (a served model, a built image, the demo's output):
  its module is a group, so that fixture is built once, as in a serial run.

Session fixtures (``kube``'s control plane, ``postgres``, ``jaeger``, the tool services) are per
worker: each worker that needs one starts its own, on ports it claims, which keeps tests that
change cluster-wide state (``test_cluster_refusals.py`` fills the Service range) apart.

In a worker the queue is ordered longest first: the real-node group, the other groups (largest
first), then the single tests — control-plane tests, then other process-level ones, then the
rest — so the last minutes are spent on short tests, not waiting on one long one.
"""

from __future__ import annotations

import pytest

REAL_NODE_GROUP = "real-node"

# Fixture scopes whose value the tests of one module share.
_SHARED_SCOPES = {"module", "class"}


def _group(item: pytest.Item) -> str | None:
    marked = item.get_closest_marker("xdist_group")
    if marked is not None:
        return str(marked.args[0] if marked.args else marked.kwargs.get("name", "default"))
    if "real_node" in getattr(item, "fixturenames", ()) or item.get_closest_marker("realnode"):
        return REAL_NODE_GROUP
    info = getattr(item, "_fixtureinfo", None)
    for defs in getattr(info, "name2fixturedefs", {}).values():
        if defs and defs[-1].scope in _SHARED_SCOPES:
            return item.path.stem  # test module names are unique in the suite
    return None


def _rank(item: pytest.Item) -> int:
    """Single tests: control plane first, then other real processes, then the rest."""
    if item.get_closest_marker("cluster"):
        return 0
    if item.get_closest_marker("integration") or item.get_closest_marker("slow"):
        return 1
    return 2


def _carries(item: pytest.Item, name: str) -> bool:
    """Whether xdist put the group into the node id, which is how its scheduler reads it."""
    return item.nodeid.endswith(f"@{name}")


def scattered_real_node_tests(session: pytest.Session) -> list[str]:
    """In an xdist worker, the real-node tests that are not in the real-node group's unit.

    Empty unless pytest-xdist runs without ``--dist loadgroup``, or lost the groups (it hands a
    group to its scheduler in the node id, which pytest 9.2 no longer reads: pytest-xdist issue
    1386). The ``real_node`` fixture fails with them rather than wait on the machine's lock for
    another worker's whole session.
    """
    if not hasattr(session.config, "workerinput"):
        return []
    return [
        item.nodeid
        for item in session.items
        if _group(item) == REAL_NODE_GROUP and not _carries(item, REAL_NODE_GROUP)
    ]


def mark_groups(items: list[pytest.Item]) -> None:
    """Give each test that belongs to a group its ``xdist_group`` marker (before xdist reads it)."""
    for item in items:
        name = _group(item)
        if name is not None and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(name))


def order_for_workers(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``, order a worker's queue longest first (a serial run keeps
    pytest's order).

    The order must be the same in every worker (xdist compares their collections), so it depends
    on the collected items only.
    """
    # xdist's own flag in a worker for --dist loadgroup; without it the groups mean nothing
    if not hasattr(config, "workerinput") or not getattr(config.option, "loadgroup", False):
        return
    groups: dict[str, list[pytest.Item]] = {}
    singles: list[pytest.Item] = []
    for item in items:
        name = _group(item)
        if name is None:
            singles.append(item)
        else:
            groups.setdefault(name, []).append(item)
    ordered = sorted(groups.items(), key=lambda kv: (kv[0] != REAL_NODE_GROUP, -len(kv[1])))
    items[:] = [
        *(item for _, members in ordered for item in members),
        *sorted(singles, key=_rank),
    ]
