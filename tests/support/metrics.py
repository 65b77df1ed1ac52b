"""A Prometheus text page (``/metrics``) as samples: ``(name, labels) -> value``."""

from __future__ import annotations

import urllib.error
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

from sleuth.core.process import LOOPBACK

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def parse_samples(text: str) -> Samples:
    """Every sample of a Prometheus text page, keyed by (name, labels)."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def scrape(port: int) -> Samples:
    """Every sample on ``/metrics`` of this host's ``port`` ({} while nothing answers there)."""
    try:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{port}/metrics", timeout=10) as response:
            text = response.read().decode()
    except (urllib.error.URLError, ConnectionError):
        return {}
    return parse_samples(text)
