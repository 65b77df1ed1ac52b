"""RAGAS metrics with an on-premises judge: samples, the guarded judge, metrics and the runner.

Importing this package switches ragas' usage telemetry off (``RAGAS_DO_NOT_TRACK=true``, unless
the environment already says otherwise): it would post to the internet from every judge call.
"""

import os

os.environ.setdefault("RAGAS_DO_NOT_TRACK", "true")
