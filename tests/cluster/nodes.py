"""Print a kubectl-applicable List of simulated nodes for kwok.

    python tests/cluster/nodes.py --h100 4 --cpu 2 | kubectl apply -f -

H100 nodes carry the GPU product label, 8 allocatable ``nvidia.com/gpu`` and the
``nvidia.com/gpu=present:NoSchedule`` taint, as the NVIDIA GPU operator sets them on real nodes.

``--taint-cpu`` (used by ``up.sh --real-node``) also gives the simulated CPU nodes the taint
``kwok.x-k8s.io/node=fake:NoSchedule``, so that a CPU pod which does not tolerate it runs on the
real node instead of being faked Ready by kwok.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

H100_PRODUCT = "NVIDIA-H100-80GB-HBM3"
FAKE_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}


def node(
    name: str,
    *,
    gpus: int,
    cpu: str,
    memory: str,
    labels: dict[str, str],
    taints: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "500Gi"}
    taints = list(taints or [])
    if gpus:
        capacity["nvidia.com/gpu"] = str(gpus)
        taints.append({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "type": "kwok",
                **labels,
            },
        },
        "spec": {"taints": taints} if taints else {},
        "status": {
            "capacity": capacity,
            "allocatable": capacity,
        },
    }


def nodes(h100: int, cpu: int, *, taint_cpu: bool = False) -> dict[str, Any]:
    items = [
        node(
            f"gpu-h100-{i}",
            gpus=8,
            cpu="208",
            memory="2Ti",
            labels={
                "nvidia.com/gpu.product": H100_PRODUCT,
                "nvidia.com/gpu.count": "8",
                "nvidia.com/gpu.present": "true",
            },
        )
        for i in range(h100)
    ]
    cpu_taints = [FAKE_TAINT] if taint_cpu else []
    items += [
        node(f"cpu-{i}", gpus=0, cpu="32", memory="128Gi", labels={}, taints=cpu_taints)
        for i in range(cpu)
    ]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h100", type=int, default=4, help="number of simulated 8×H100 nodes")
    parser.add_argument("--cpu", type=int, default=2, help="number of CPU-only nodes")
    parser.add_argument(
        "--taint-cpu",
        action="store_true",
        help="taint the CPU nodes kwok.x-k8s.io/node=fake:NoSchedule (a real node is present)",
    )
    args = parser.parse_args()
    print(json.dumps(nodes(args.h100, args.cpu, taint_cpu=args.taint_cpu), indent=1))


if __name__ == "__main__":
    main()
