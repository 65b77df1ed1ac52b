"""The kopf operator: thin handlers, pure renderers (spec → manifests) and status logic."""
