"""PostgreSQL in a pod, from the ``pgserver`` wheel's binaries (the testkit image carries it).

Run as the image's uid 65532 with ``PGDATA`` on an emptyDir: initdb, listen on all addresses
with scram-sha-256 for remote clients, create the ``contracts`` database holding the sample
tables (:func:`sleuth.tools.sample.contracts.load_postgres`), apply docs/sql/readonly-role.sql
(mounted at ``/sql/readonly-role.sql``) and give ``sleuth_reader`` the password of
``$READER_PASSWORD``. ``/tmp/loaded`` marks the end of loading (the readiness probe); then the
server runs in the foreground until the pod stops.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import asyncpg

from sleuth.tools.sample.contracts import load_postgres

# The wheel's binaries, found without importing pgserver (its import wants a runtime folder).
_SPEC = importlib.util.find_spec("pgserver")
assert _SPEC is not None
assert _SPEC.origin is not None
BIN = Path(_SPEC.origin).parent / "pginstall" / "bin"
DATA = Path(os.environ.get("PGDATA", "/var/lib/postgresql/data"))
SOCKET = "/tmp"


async def load() -> None:
    admin = await asyncpg.connect(host=SOCKET, port=5432, user="postgres", database="postgres")
    await admin.execute("CREATE DATABASE contracts")
    await admin.close()
    conn = await asyncpg.connect(host=SOCKET, port=5432, user="postgres", database="contracts")
    await load_postgres(conn)
    await conn.execute(Path("/sql/readonly-role.sql").read_text())  # noqa: ASYNC240  (once)
    password = os.environ["READER_PASSWORD"].replace("'", "''")
    await conn.execute(f"ALTER ROLE sleuth_reader PASSWORD '{password}'")
    await conn.close()


def main() -> int:
    subprocess.run(
        [
            str(BIN / "initdb"),
            "-D",
            str(DATA),
            "-U",
            "postgres",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "-E",
            "UTF8",
            "--no-instructions",
        ],
        check=True,
    )
    with (DATA / "pg_hba.conf").open("a") as hba:
        hba.write("host all all 0.0.0.0/0 scram-sha-256\n")
    server = subprocess.Popen(
        [str(BIN / "postgres"), "-D", str(DATA), "-h", "0.0.0.0", "-p", "5432", "-k", SOCKET]
    )
    signal.signal(signal.SIGTERM, lambda *_: server.send_signal(signal.SIGINT))
    for _ in range(120):
        if subprocess.run([str(BIN / "pg_isready"), "-h", SOCKET, "-p", "5432"]).returncode == 0:
            break
        time.sleep(0.5)
    asyncio.run(load())
    Path("/tmp/loaded").touch()
    print("contracts database loaded", flush=True)
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
