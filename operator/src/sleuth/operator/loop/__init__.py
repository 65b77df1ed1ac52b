"""The control loop: how the operator runs, knowing nothing of what it reconciles.

Everything here would serve any operator built on kopf; what sleuth reconciles (its kinds,
their reconcilers, renderers and conditions) lives one room over, in :mod:`sleuth.operator`,
and is handed in (:mod:`sleuth.operator.controller`). Imports run one way: the domain uses the
loop, the loop imports no ``sleuth.operator`` module outside this package
(``tests/operator/test_loop_layout.py``).

- :mod:`.runtime`: the one :class:`~.runtime.Loop` object: workers draining the work queue into
  one reconcile per key, the periodic resync and its relists, a bounded stop.
- :mod:`.workqueue`: the keyed work queue (one key never runs twice at once, per-key back-off).
- :mod:`.watchcache`: what the watches reported: object keys and bodies, child fingerprints.
- :mod:`.applier`: the API client that skips writes that would change nothing, and counts them.
- :mod:`.rollout`: how a Deployment's rollout reads (serving, complete, stalled).
- :mod:`.metrics`: the loop's Prometheus series and their endpoint.
- :mod:`.leader`: leader election on a Lease.
- :mod:`.login`, :mod:`.scope`: kopf's connection and its namespace-scoped mode.
"""
