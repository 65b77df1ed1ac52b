"""A running test control plane as the tests see it: its kubeconfig, the cached binaries
(kubectl, helm) run against it, and a Python API client. The session fixtures that start one
are in tests/conftest.py (the simulated cluster) and tests/cluster/realnode_kit.py (the real
node, which extends this class)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class KubeCluster:
    """A running control plane: kubeconfig, the cached binaries, and a Python API client."""

    kubeconfig: Path
    bin_dir: Path
    _api: Any = field(default=None, repr=False)

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": f"{self.bin_dir}:{os.environ['PATH']}",
        }

    def tool_path(self, tool: str) -> Path:
        """The binary ``run`` starts: the cached one."""
        return self.bin_dir / tool

    def run(
        self,
        tool: str,
        *args: str,
        check: bool = True,
        input: str | None = None,
        timeout: float = 120,
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(self.tool_path(tool)), *args],
            env=self.env,
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{tool} {' '.join(args)} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
        return proc

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return self.run("kubectl", *args, check=check, input=input, timeout=timeout)

    def helm(
        self, *args: str, check: bool = True, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return self.run("helm", *args, check=check, timeout=timeout)

    @property
    def api(self) -> Any:
        """A ``kubernetes.client.ApiClient`` bound to this cluster."""
        if self._api is None:
            from kubernetes import config

            self._api = config.new_client_from_config(config_file=str(self.kubeconfig))
        return self._api
