"""Endpoints and images with the verdict the allowlists must give, shared by the operator's
Python rules (tests/core/test_allowlists.py) and the chart's admission policies evaluated by the
real apiserver (tests/charts/test_chart_admission.py): the same table, the same answers."""

from __future__ import annotations

from sleuth.core.api.v1alpha1.allowlists import Allowlists

# What the tests configure: one external host, one wildcard, one mirror prefix.
ALLOWED_HOSTS = ("https://search.example.com", "https://*.trusted.example")
IMAGE_REPOSITORIES = ("vllm/vllm-openai", "docker.io/vllm/vllm-openai", "registry.example.com/ml/*")
SLEUTH_REPOSITORY = "ghcr.io/sleuth-dev/sleuth"

ALLOWLISTS = Allowlists(
    hosts=ALLOWED_HOSTS, repositories=IMAGE_REPOSITORIES, always=(SLEUTH_REPOSITORY,)
)

# (url, allowed)
ENDPOINTS: tuple[tuple[str, bool], ...] = (
    ("http://searxng.search.svc:8080", True),
    ("http://searxng.search.svc.cluster.local:8080/search", True),
    ("https://qdrant.data.svc/", True),
    ("https://search.example.com", True),
    ("https://search.example.com:8443/api?q=1", True),
    ("https://api.trusted.example/v1", True),
    ("http://collector.attacker.example", False),  # the exfiltration target
    ("http://search.example.com", False),  # listed for https only
    ("https://evil-search.example.com", False),
    ("https://trusted.example", False),  # *.suffix is below the suffix only
    ("http://qdrant:6333", False),  # search lists may leave the cluster
    ("http://vllm.models:8000/v1", False),
    ("http://x.y.svc.evil.com", False),
    ("http://x.y.svc.cluster.local.evil.com/", False),
    ("http://169.254.169.254/latest", False),
    ("https://user@search.example.com", False),
)

# (image, allowed)
IMAGES: tuple[tuple[str, bool], ...] = (
    ("vllm/vllm-openai:v0.11.1", True),
    ("docker.io/vllm/vllm-openai@sha256:" + "a" * 64, True),
    ("registry.example.com/ml/vllm:1.0", True),
    ("ghcr.io/sleuth-dev/sleuth:0.2.0", True),
    ("docker.io/attacker/miner:latest", False),
    ("vllm/vllm-openai-evil:1", False),
    ("registry.example.com/mlx/vllm:1", False),
    ("registry.example.com/ml:1", False),
)
