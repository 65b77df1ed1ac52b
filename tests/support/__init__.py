"""Helpers shared by more than one test folder, imported by name.

* :mod:`tests.support.paths`: the repository's folders and the ``sleuth`` command of this venv.
* :mod:`tests.support.polling`: ``eventually``, the one way a test waits for a condition.
* :mod:`tests.support.metrics`: reading a Prometheus text page into samples.
* :mod:`tests.support.asgi`: an ASGI app served by uvicorn in a thread, on a free port.
* :mod:`tests.support.jaeger`: a real Jaeger (the trace backend) and reading traces back.

Free ports, waiting for a child's health URL and stopping a child are product needs too (the
scripted server's process runner, the demo, the benchmarks): they live in
:mod:`sleuth.core.process`, and the tests import them from there.
"""
