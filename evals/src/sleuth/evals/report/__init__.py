"""Results: JSON documents, thresholds, Prometheus text exposition, the HTML report."""
