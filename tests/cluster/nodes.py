"""Print a kubectl-applicable List of simulated nodes for kwok.

    python tests/cluster/nodes.py --h100 4 --cpu 2 | kubectl apply -f -

H100 nodes carry the GPU product label, 8 allocatable ``nvidia.com/gpu`` and the
``nvidia.com/gpu=present:NoSchedule`` taint, as the NVIDIA GPU operator sets them on real nodes.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

H100_PRODUCT = "NVIDIA-H100-80GB-HBM3"


def node(name: str, *, gpus: int, cpu: str, memory: str, labels: dict[str, str]) -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "500Gi"}
    taints: list[dict[str, str]] = []
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


def nodes(h100: int, cpu: int) -> dict[str, Any]:
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
    items += [node(f"cpu-{i}", gpus=0, cpu="32", memory="128Gi", labels={}) for i in range(cpu)]
    return {"apiVersion": "v1", "kind": "List", "items": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--h100", type=int, default=4, help="number of simulated 8×H100 nodes")
    parser.add_argument("--cpu", type=int, default=2, help="number of CPU-only nodes")
    args = parser.parse_args()
    print(json.dumps(nodes(args.h100, args.cpu), indent=1))


if __name__ == "__main__":
    main()
