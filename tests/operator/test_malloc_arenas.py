"""The operator keeps glibc's malloc to two heaps (sleuth.operator.cli.few_malloc_arenas)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

CHILD = textwrap.dedent(
    """
    import ctypes, sys, threading
    from sleuth.operator.cli import few_malloc_arenas
    if sys.argv[1] == "limited":
        assert few_malloc_arenas()
    held, ready = [], threading.Barrier(9)
    def work():
        held.append([bytes(4096) for _ in range(256)])  # malloc'd, not pymalloc's
        ready.wait()
    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    ready.wait()
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    out = libc.fopen(sys.argv[2].encode(), b"w")
    libc.malloc_info(0, ctypes.c_void_p(out))
    libc.fclose(ctypes.c_void_p(out))
    for t in threads:
        t.join()
    """
)


def _heaps(tmp_path: Path, mode: str) -> int:
    report = tmp_path / f"{mode}.xml"
    subprocess.run([sys.executable, "-c", CHILD, mode, str(report)], check=True, timeout=60)
    return report.read_text().count("<heap nr=")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_threads_share_two_heaps_instead_of_one_each(tmp_path: Path) -> None:
    assert _heaps(tmp_path, "default") > 2  # what the limit is for: a heap per thread
    assert _heaps(tmp_path, "limited") <= 2
