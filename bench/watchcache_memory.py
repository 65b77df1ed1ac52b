"""How much of the operator's memory its watch cache takes at scale (no cluster).

    .venv/bin/python bench/watchcache_memory.py [--agents 1000]

Renders the children of N AgentDeployments with three ToolBindings each (the workload of
bench/operator_scale.py), shapes them as a watch reports them (uid, resourceVersion, an owner,
a Deployment's status), and measures with tracemalloc what
:class:`sleuth.operator.loop.watchcache.WatchCache` holds once it has seen every child and kept
every ToolBinding. Prints MiB; compare with the operator's peak RSS in docs/performance.md.
"""

from __future__ import annotations

import argparse
import copy
import gc
import tracemalloc
import uuid
from typing import Any

from scale_kit import agent_objects, rendered_children

from sleuth.operator.loop.watchcache import WatchCache
from sleuth.operator.render.meta import RenderSettings


def as_watched(child: dict[str, Any]) -> dict[str, Any]:
    meta = child["metadata"]
    meta["uid"] = str(uuid.uuid4())
    meta["resourceVersion"] = "1234567"
    meta.setdefault(
        "ownerReferences", [{"uid": str(uuid.uuid4()), "kind": "AgentDeployment", "name": "a"}]
    )
    if child["kind"] == "Deployment":
        child["status"] = {
            "observedGeneration": 1,
            "replicas": 1,
            "readyReplicas": 1,
            "availableReplicas": 1,
            "updatedReplicas": 1,
            "conditions": [
                {
                    "type": "Available",
                    "status": "True",
                    "reason": "MinimumReplicasAvailable",
                    "message": "Deployment has minimum availability.",
                    "lastTransitionTime": "2026-12-02T18:00:00Z",
                    "lastUpdateTime": "2026-12-02T18:00:00Z",
                }
            ],
        }
    return child


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    args = parser.parse_args()
    workload = agent_objects("scale-op", args.agents)
    children = [as_watched(c) for c in rendered_children(workload, RenderSettings())]
    bindings = [b for _, tools in workload for b in tools]
    gc.collect()
    tracemalloc.start()
    cache = WatchCache()
    for child in children:  # each as a watch event parses it: a fresh object
        cache.seen_child(copy.deepcopy(child))
    gc.collect()
    held_children = tracemalloc.get_traced_memory()[0]
    for index, binding in enumerate(bindings):
        binding["metadata"]["resourceVersion"] = str(index + 1)
        cache.keep("ToolBinding", copy.deepcopy(binding), deleted=False)
    gc.collect()
    held = tracemalloc.get_traced_memory()[0]
    mib = 2**20
    print(f"{len(children)} children seen: {held_children / mib:.2f} MiB")
    print(f"{len(bindings)} ToolBindings kept: {(held - held_children) / mib:.2f} MiB")
    print(f"the watch cache in all: {held / mib:.2f} MiB")


if __name__ == "__main__":
    main()
