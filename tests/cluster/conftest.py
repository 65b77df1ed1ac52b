"""tests/cluster fixtures: ``real_node`` and ``node_namespace`` (see realnode_kit.py)."""

from realnode_kit import node_namespace, real_node

__all__ = ["node_namespace", "real_node"]
