"""The operator starts as a uid that has no passwd entry (the image's 65532 in a pod).

In a pod, neither USER nor LOGNAME is set and uid 65532 has no passwd entry, so
``getpass.getuser()`` raises ``KeyError: 'getpwuid(): uid not found'``; kopf's default peering
identity calls it, which crash-looped the operator on a real node. The operator names itself
(pod name or host name) instead. Here the process runs with that same condition: USER and
LOGNAME removed and ``pwd.getpwuid`` raising exactly as it does for an unknown uid.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sleuth.core.process import free_port, stop_process, wait_healthy

pytestmark = pytest.mark.cluster

NO_PASSWD_ENTRY = (
    "import pwd, sys\n"
    "def _unknown(uid):\n"
    "    raise KeyError(f'getpwuid(): uid not found: {uid}')\n"
    "pwd.getpwuid = _unknown\n"
    "from sleuth.core.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def test_operator_runs_without_a_passwd_entry(
    kube: Any, crds: None, namespace: str, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if k not in {"USER", "LOGNAME", "LNAME", "USERNAME"}}
    port = free_port()
    log = tmp_path / "operator.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                NO_PASSWD_ENTRY,
                "operator",
                "--kubeconfig",
                str(kube.kubeconfig),
                "--namespace",
                namespace,
                "--liveness",
                f"http://127.0.0.1:{port}/healthz",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        wait_healthy(
            f"http://127.0.0.1:{port}/healthz",
            proc,
            timeout=90,
            interval=0.5,
            name="operator",
            output=lambda: log.read_text()[-2000:],
        )
        assert "getpwuid" not in log.read_text()
    finally:
        stop_process(proc, timeout=30)
